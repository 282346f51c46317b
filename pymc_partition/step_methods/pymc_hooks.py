"""Two hooks into ``pm.sample`` for Partition variables (PyMC has no extension point for them).

- A step method that is not a partition step, given a Partition (``pm.Metropolis([z])``), is
  refused with a message naming the partition steps. Generic steps propose label vectors that
  are not canonical, so every proposal is rejected and the chain sits in its initial partition
  while reporting nothing wrong.
- PyMC's default convergence checks (R-hat and ESS of every free variable, after
  ``pm.sample``) skip Partition variables: a label coordinate ``z[i]`` is not a parameter (its
  R-hat is undefined for ``z[0]``, always 0, and meaningless for the others), so the checks warned
  on every run. The partition's own diagnostics are ``arviz_regen.hotelling_rs`` and the R-hat of
  the ``n_clusters`` and ``partition_logp`` stats.

Both wrap PyMC functions once, at import, and keep their behaviour for every other variable.
"""

from __future__ import annotations

import functools

import pymc.sampling.mcmc as _mcmc
from pymc.step_methods.compound import BlockedStep, CompoundStep

__all__ = ["install"]

_INSTALLED = {}


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
        from .base import PartitionStep

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
        from ..model_spec import find_partition_vars

        names = [rv.name for rv in find_partition_vars(model)]
        posterior = getattr(idata, "posterior", None)
        if not names or posterior is None:
            return original(idata, model)
        keep = [v for v in posterior.data_vars if v not in names]
        if not keep:  # only partitions: divergence and tree-depth checks still apply
            from pymc.stats.convergence import warn_divergences, warn_treedepth

            return warn_divergences(idata) + warn_treedepth(idata)
        view = idata.copy()
        view.posterior = posterior[keep]
        return original(view, model)

    return run_convergence_checks


def install():
    """Wrap ``BlockedStep.__new__`` and PyMC's convergence checks (idempotent)."""
    if _INSTALLED:
        return
    _INSTALLED["new"] = BlockedStep.__new__
    BlockedStep.__new__ = _checked_new(BlockedStep.__new__)
    _INSTALLED["checks"] = _mcmc.run_convergence_checks
    _mcmc.run_convergence_checks = _without_partitions(_mcmc.run_convergence_checks)
