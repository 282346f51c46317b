"""Read a clustering model back out of a PyMC model: prior tables, family, per-item statistics.

The samplers and the exact posterior do not evaluate the PyMC graph per state; they work on the
numbers a :class:`PartitionSpec` gathers once: the prior's ``log_g``/``log_h`` tables and, for each
:class:`~pymc_partition.MarginalLikelihood` attached to the partition, its family and per-item
statistics. The family's pytensor ``log_marginal`` stays the single formula they all evaluate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.traversal import ancestors

from .distribution import PartitionRV
from .families.base import ConjugateFamily
from .likelihood import MarginalLikelihoodRV

__all__ = [
    "PartitionSpec",
    "LikelihoodTerm",
    "partition_spec",
    "find_partition_vars",
    "RandomHyperparameterError",
]


@dataclass(frozen=True)
class LikelihoodTerm:
    """One ``MarginalLikelihood`` attached to the partition."""

    name: str
    family: object
    item_stats: np.ndarray  # (n_items, n_stats)


@dataclass(frozen=True)
class PartitionSpec:
    """Everything needed to score partitions of one ``Partition`` variable of a model.

    ``log_posterior(z) = log_g[C] + sum_c (log_h[n_c] + sum_terms log_marginal(stats_c))`` is the
    exact unnormalized log posterior, equal to ``model.compile_logp()`` when the partition and its
    likelihoods are the whole model.
    """

    name: str
    n_items: int
    log_g: np.ndarray
    log_h: np.ndarray
    terms: tuple = field(default_factory=tuple)
    prior: object = None

    @cached_property
    def family(self):
        """One family scoring all likelihood terms at once (stats side by side, logs summed)."""
        if len(self.terms) == 1:
            return self.terms[0].family
        return StackedFamily([t.family for t in self.terms], [t.item_stats.shape[1] for t in self.terms])

    @cached_property
    def item_stats(self):
        """Per-item statistics of all terms side by side, ``(n_items, n_stats)``; matches :attr:`family`."""
        if len(self.terms) == 1:
            return self.terms[0].item_stats
        return np.ascontiguousarray(np.concatenate([t.item_stats for t in self.terms], axis=1))

    def log_posterior(self, labels):
        """Exact unnormalized log posterior of canonical label vector(s) ``(..., n_items)``."""
        from .state import canonicalize

        labels = canonicalize(labels)
        flat = labels.reshape(-1, self.n_items)
        out = np.empty(flat.shape[0])
        for r, z in enumerate(flat):
            sizes = np.bincount(z)
            val = self.log_g[sizes.size] + self.log_h[sizes].sum()
            cs = np.zeros((sizes.size, self.item_stats.shape[1]))
            np.add.at(cs, z, self.item_stats)
            val += self.family.log_marginal_numpy(cs).sum()
            out[r] = val
        return out.reshape(labels.shape[:-1]) if labels.ndim > 1 else out[0]


class StackedFamily(ConjugateFamily):
    """Several likelihood terms on the same partition seen as one family."""

    def __init__(self, families, widths):
        self.families = list(families)
        self.widths = [int(w) for w in widths]

    def log_marginal(self, stats):
        stats = pt.as_tensor_variable(stats)
        total, start = 0.0, 0
        for fam, w in zip(self.families, self.widths):
            total = total + fam.log_marginal(stats[..., start : start + w])
            start += w
        return total

    def __repr__(self):
        return f"StackedFamily({self.families!r})"


def find_partition_vars(model):
    """The free random variables of ``model`` that are :class:`Partition` variables."""
    return [rv for rv in model.free_RVs if isinstance(rv.owner.op, PartitionRV)]


def _resolve_var(model, var):
    parts = find_partition_vars(model)
    if var is None:
        if len(parts) != 1:
            raise ValueError(
                f"The model has {len(parts)} Partition variables; name the one to use."
                if parts
                else "The model has no pmp.Partition variable."
            )
        return parts[0]
    if isinstance(var, str):
        var = model[var]
    value_to_rv = {model.rvs_to_values[rv]: rv for rv in model.free_RVs}
    var = value_to_rv.get(var, var)
    if var not in parts:
        raise TypeError(
            f"{getattr(var, 'name', var)!r} is not a pmp.Partition variable of the model."
        )
    return var


def _evaluate_at(model, graphs, point):
    """Evaluate graphs of the model's random variables at ``point`` (value-variable values)."""
    import pytensor

    outs = model.replace_rvs_by_values(list(graphs))
    used = set(ancestors(outs))
    inputs = [v for v in model.value_vars if v in used]
    missing = [v.name for v in inputs if v.name not in point]
    if missing:
        raise KeyError(f"`point` has no value for {missing}; start from model.initial_point().")
    fn = pytensor.function(inputs, outs, mode="FAST_COMPILE", on_unused_input="ignore")
    return fn(*(point[v.name] for v in inputs))


class RandomHyperparameterError(NotImplementedError):
    """The partition's prior or likelihood depends on other free variables of the model."""


def _numbers(model, rv, graphs, point):
    """Numeric values of ``graphs``: constants as they are; graphs of ``pm.Data`` at their current
    values; graphs of the model's random variables at ``point``."""
    from pytensor.graph.basic import Constant

    if all(isinstance(g, Constant) for g in graphs):
        return [np.asarray(g.data, dtype=float) for g in graphs]
    free = sorted({a.name for a in ancestors(graphs) if a in set(model.free_RVs) and a is not rv})
    if free and point is None:
        raise RandomHyperparameterError(
            f"The prior or likelihood of the partition {rv.name!r} depends on the random "
            f"variable(s) {free}: its numbers depend on their current values. Pass `point=` "
            "(a dict of the model's value variables, e.g. model.initial_point()) to evaluate "
            "them there."
        )
    out = [np.asarray(v, dtype=float) for v in _evaluate_at(model, graphs, point or {})]
    if any(np.isnan(v).any() for v in out):
        raise ValueError(
            f"The prior tables or likelihood statistics of {rv.name!r} are NaN"
            + (f" at the given point: is a parameter among {free} outside its domain?" if free else ":")
            + " Check the data given through pm.Data (pm.set_data) for NaN or infinite values."
        )
    return out


def partition_spec(model=None, var=None, require_likelihood=True, point=None):
    """Gather the prior tables and likelihood terms of a ``Partition`` variable.

    Parameters
    ----------
    model : pymc.Model, optional
        Defaults to the model on the context stack.
    var : str or TensorVariable, optional
        The partition variable (or its value variable); required when the model has several.
    require_likelihood : bool
        Raise if no ``MarginalLikelihood`` depends on the partition.
    point : dict, optional
        Values of the model's value variables (as in ``model.initial_point()``), needed when the
        prior's parameters are random variables: the spec then holds the tables at that point.

    Returns
    -------
    PartitionSpec

    Raises
    ------
    RandomHyperparameterError
        If the prior depends on random variables and no ``point`` is given.
    """
    model = pm.modelcontext(model)
    rv = _resolve_var(model, var)
    log_g, log_h = _numbers(model, rv, rv.owner.inputs[2:4], point)
    n_items = log_g.shape[0] - 1
    terms = []
    for obs in model.observed_RVs:
        op = obs.owner.op
        if isinstance(op, MarginalLikelihoodRV) and obs.owner.inputs[2] is rv:
            stats, *params = _numbers(model, rv, obs.owner.inputs[3:-1], point)  # [-1]: item index
            if not np.all(np.isfinite(stats)):
                raise ValueError(
                    f"The statistics of {obs.name!r} are not finite: check the data given "
                    "through pm.Data (pm.set_data) for NaN or infinite values."
                )
            family = op.family
            if op.param_names:
                family = family.with_values(**dict(zip(op.param_names, params)))
            terms.append(LikelihoodTerm(obs.name, family, np.ascontiguousarray(stats)))
    # other terms may sit in the model, but none may depend on the partition: the samplers
    # and the exact posterior score partitions from the prior tables and the terms alone
    others = [
        v.name
        for v in model.free_RVs + model.observed_RVs + list(model.potentials)
        if v is not rv
        and not isinstance(v.owner.op, MarginalLikelihoodRV)
        and rv in set(ancestors([v]))
    ]
    if others:
        raise NotImplementedError(
            f"{others} depend on the partition {rv.name!r} but are not pmp.MarginalLikelihood "
            "terms; partition samplers and the exact posterior only handle conjugate "
            "likelihood terms."
        )
    if require_likelihood and not terms:
        raise ValueError(
            f"No pmp.MarginalLikelihood depends on the partition {rv.name!r}; add one, e.g. "
            f"pmp.MarginalLikelihood('y', partition={rv.name}, family=..., observed=...)."
        )
    prior = getattr(rv.tag, "partition_prior", None)
    if prior is not None and prior.is_random:
        values = {k: getattr(prior, k) for k in prior.random_params}
        numbers = _evaluate_at(model, list(values.values()), point)
        prior = prior.with_values(**{k: float(v) for k, v in zip(values, numbers)})
    return PartitionSpec(rv.name, n_items, log_g, log_h, tuple(terms), prior)
