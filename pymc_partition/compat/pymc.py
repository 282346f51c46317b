"""PyMC: what pymc_partition changes in it, installed by one call (PyMC has no extension point for it).

:func:`install` (called when :mod:`pymc_partition.step_methods` is imported) makes three changes,
each undone by :func:`uninstall`:

- :class:`~pymc_partition.GibbsPartition` joins ``pymc.step_methods.STEP_METHODS``, so
  ``pm.sample()`` without ``step=`` picks it for a Partition variable, and
  :class:`~pymc_partition.PartitionHyperparameters` joins it *first*: PyMC gives a variable to the
  first of the most competent steps, and NUTS is as competent (``IDEAL``) for every continuous
  variable, so only ahead of NUTS does it get the parameters hanging off a partition (it is
  ``INCOMPATIBLE`` with every other variable).
- A step method that is not a partition step, given a Partition (``pm.Metropolis([z])``), is
  refused with a message naming the partition steps (wrapping ``BlockedStep.__new__``). Generic
  steps propose label vectors that are not canonical, so every proposal is rejected and the
  chain sits in its initial partition while reporting nothing wrong.
- PyMC's default convergence checks (R-hat and ESS of every free variable, after ``pm.sample``)
  skip Partition variables (wrapping ``pymc.sampling.mcmc.run_convergence_checks``): a label
  coordinate ``z[i]`` is not a parameter (its R-hat is undefined for ``z[0]``, always 0, and
  meaningless for the others), so the checks warned on every run. The partition's own
  diagnostics are ``arviz_regen.hotelling_rs`` and the R-hat of the ``n_clusters`` and
  ``partition_logp`` stats.

The wrappers keep PyMC's behaviour for every other variable. They rely on PyMC internals, checked
for PyMC 5 and 6: on another major version, or when a wrapped function's signature differs,
:func:`install` changes nothing and warns, naming the version. No upstream issue asks PyMC for
these extension points yet (a registry of step methods, a refusal hook for step methods, variables
excluded from the convergence checks); ``tests/pymc_partition/compat/test_pymc.py`` fails when a
PyMC release breaks a wrapper or makes one unnecessary.
"""

from __future__ import annotations

import copy
import functools
import inspect
import warnings

import pymc
import pymc.sampling.mcmc as _mcmc
import pymc.step_methods as _step_methods
from pymc.step_methods.compound import BlockedStep, CompoundStep

__all__ = ["install", "uninstall", "installed", "SUPPORTED_PYMC"]

#: PyMC major versions whose internals the wrappers were written against
SUPPORTED_PYMC = (5, 6)

# what install() replaced: (owner, attribute) -> (original __dict__ entry, what we put there)
_INSTALLED: dict = {}


def _partition_names(model, vars):
    from pymc.model import modelcontext
    from pymc.util import get_value_vars_from_user_vars

    from ..model_spec import find_partition_vars

    model = modelcontext(model)
    parts = find_partition_vars(model)
    if not parts:
        return []
    if vars is None:
        value_vars = model.value_vars
    else:
        try:
            value_vars = get_value_vars_from_user_vars(vars if isinstance(vars, list | tuple) else [vars], model)
        except Exception:  # PyMC raises its own, clearer error for bad vars later
            return []
    rvs = {model.values_to_rvs.get(v) for v in value_vars}
    return [rv.name for rv in parts if rv in rvs]


def _checked_new(original):
    @functools.wraps(original)
    def __new__(cls, *args, **kwargs):
        from ..step_methods.base import PartitionStep

        if not issubclass(cls, PartitionStep | CompoundStep):
            vars = kwargs.get("vars", args[0] if args else None)
            names = _partition_names(kwargs.get("model"), vars)
            if names:
                raise TypeError(
                    f"{cls.__name__} cannot sample the Partition variable(s) {names}: generic "
                    "steps propose label vectors that are not partitions and never move. Use "
                    f"pmp.GibbsPartition([{names[0]}]) or pmp.SplitMerge([{names[0]}]) for them "
                    f"(pm.sample() assigns GibbsPartition by itself), and give {cls.__name__} "
                    "the other variables only."
                )
        return original(cls, *args, **kwargs)

    return __new__


def _without_partitions(original):
    @functools.wraps(original)
    def run_convergence_checks(idata, model):
        from arviz_regen.xr.containers import add_group, get_group, group_names, is_datatree

        from ..model_spec import find_partition_vars

        names = [rv.name for rv in find_partition_vars(model)]
        if not names or "posterior" not in group_names(idata):
            return original(idata, model)
        posterior = get_group(idata, "posterior")
        keep = [v for v in posterior.data_vars if v not in names]
        if not keep:  # only partitions: divergence and tree-depth checks still apply
            from pymc.stats.convergence import warn_divergences, warn_treedepth

            return warn_divergences(idata) + warn_treedepth(idata)
        # a shallow view whose posterior lacks the partitions (the draws are not copied)
        view = idata.copy() if is_datatree(idata) else copy.copy(idata)
        add_group(view, "posterior", posterior[keep], replace=True)
        return original(view, model)

    return run_convergence_checks


def _hooks():
    """``(owner, attribute, wrapper factory, expected parameters)`` of each wrapped function."""
    return (
        (BlockedStep, "__new__", _checked_new, ["cls", "args", "kwargs"]),
        (_mcmc, "run_convergence_checks", _without_partitions, ["idata", "model"]),
    )


def _incompatibility():
    """Why the wrappers do not fit the installed PyMC, or None."""
    try:
        major = int(pymc.__version__.split(".")[0])
    except ValueError:
        major = None
    if major not in SUPPORTED_PYMC:
        return f"they support PyMC {' and '.join(map(str, SUPPORTED_PYMC))}"
    for owner, attr, _, params in _hooks():
        found = getattr(owner, attr, None)
        try:
            got = list(inspect.signature(found).parameters) if found is not None else None
        except (TypeError, ValueError):
            got = None
        if got != params:
            return f"{owner.__name__}.{attr} has parameters {got}, expected {params}"
    if not isinstance(getattr(_step_methods, "STEP_METHODS", None), list):
        return "pymc.step_methods.STEP_METHODS is not a list"
    return None


def installed():
    """Whether the changes of :func:`install` are in place."""
    return bool(_INSTALLED)


def install():
    """Make the changes listed in the module's docstring (idempotent).

    Returns
    -------
    bool
        True when they are in place; False when the installed PyMC is not one they were
        written for (a ``RuntimeWarning`` names its version and what differs).
    """
    if _INSTALLED:
        return True
    problem = _incompatibility()
    if problem is not None:
        warnings.warn(
            f"pymc_partition does not hook into PyMC {pymc.__version__}: {problem}. Generic step "
            "methods will not refuse Partition variables, PyMC's convergence checks will include "
            "them and pm.sample() will not pick GibbsPartition by itself.",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    from ..step_methods.gibbs import GibbsPartition
    from ..step_methods.hyper import PartitionHyperparameters

    for owner, attr, wrap, _ in _hooks():
        entry = owner.__dict__[attr]
        new = wrap(getattr(owner, attr))
        if attr == "__new__":
            new = staticmethod(new)  # what a class body does to __new__
        setattr(owner, attr, new)
        _INSTALLED[owner, attr] = (entry, new)
    if GibbsPartition not in _step_methods.STEP_METHODS:
        _step_methods.STEP_METHODS.append(GibbsPartition)
        _INSTALLED["step"] = GibbsPartition
    if PartitionHyperparameters not in _step_methods.STEP_METHODS:
        _step_methods.STEP_METHODS.insert(0, PartitionHyperparameters)
        _INSTALLED["hyper_step"] = PartitionHyperparameters
    return True


def uninstall():
    """Undo :func:`install` (for tests).

    A wrapper that something else has since wrapped in turn is left in place, with a ``RuntimeWarning``.
    """
    for key in ("step", "hyper_step"):
        step = _INSTALLED.pop(key, None)
        if step is not None and step in _step_methods.STEP_METHODS:
            _step_methods.STEP_METHODS.remove(step)
    for (owner, attr), (entry, new) in list(_INSTALLED.items()):
        if owner.__dict__.get(attr) is new:
            setattr(owner, attr, entry)
        else:
            warnings.warn(f"{owner.__name__}.{attr} was wrapped again after pymc_partition's "
                          "wrapper; leaving both in place.", RuntimeWarning, stacklevel=2)  # fmt: skip
        del _INSTALLED[owner, attr]
