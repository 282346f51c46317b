"""The numbers that score partitions of one variable: prior tables, likelihood terms, statistics.

A :class:`PartitionSpec` is what the samplers' engine (:mod:`pymc_partition.engine`) and the
exact posterior (:mod:`pymc_partition.exact`) work on; neither evaluates a PyMC graph per state.
:func:`pymc_partition.partition_spec` reads one out of a PyMC model
(:mod:`pymc_partition.model_spec`); :meth:`PartitionSpec.from_data` builds one from a prior, a
family and data, without PyMC. The family's pytensor ``log_marginal`` stays the single formula
they all evaluate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt

from .families.base import ConjugateFamily

__all__ = ["PartitionSpec", "LikelihoodTerm", "StackedFamily", "HyperparameterNumbers"]


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

    @classmethod
    def from_data(cls, prior, family, values, item_index=None, name="z"):
        """Build the spec of a partition with a fixed ``prior`` and one likelihood term without a PyMC model.

        What ``Partition`` + ``MarginalLikelihood`` give.

        Parameters
        ----------
        prior : PartitionPrior
            With numbers for its parameters.
        family : ConjugateFamily
            With numbers for its hyperparameters.
        values : array_like, shape (n_rows,) or (n_rows, n_vars)
        item_index : array_like of int, shape (n_rows,), optional
            Item of each row; default one row per item.
        name : str
            Name of the partition variable.
        """
        values = np.asarray(values, dtype=float)
        if item_index is None:
            item_index = np.arange(values.shape[0])
        item_index = np.asarray(item_index)
        n_items = int(item_index.max()) + 1
        log_g, log_h = prior.tables(n_items)
        stats = np.ascontiguousarray(family.item_stats(values, item_index, n_items), dtype=float)
        term = LikelihoodTerm(f"{name}_data", family, stats)
        return cls(name, n_items, log_g, log_h, (term,), prior)

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
        X = self.item_stats
        out = np.empty(flat.shape[0])
        # every cluster of a chunk of rows in one batch: the family's graph is evaluated once
        step = max(1, (1 << 22) // (self.n_items * X.shape[1]))
        for start in range(0, flat.shape[0], step):
            z = flat[start : start + step]
            n_c = z.max(axis=1) + 1
            first = np.concatenate([[0], np.cumsum(n_c)[:-1]])
            cluster = (z + first[:, None]).ravel()  # a number for each cluster of each row
            total = int(n_c.sum())
            # summed in item order, as a loop adding rows would
            cs = np.stack([np.bincount(cluster, weights=np.tile(X[:, j], z.shape[0]), minlength=total)
                           for j in range(X.shape[1])], axis=1)  # fmt: skip
            sizes = np.bincount(cluster, minlength=total)
            terms = self.log_h[sizes] + self.family.log_marginal_numpy(cs)
            row = np.repeat(np.arange(z.shape[0]), n_c)
            out[start : start + step] = self.log_g[n_c] + np.bincount(row, weights=terms, minlength=z.shape[0])
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


class HyperparameterNumbers(NamedTuple):
    """The numbers of a spec at new values of its random hyperparameters.

    As a partition step reads them from the point (:class:`pymc_partition.model_spec.HyperparameterReader`) and hands
    them to its engine (:meth:`pymc_partition.engine.PartitionKernel.refresh`).
    """

    log_g: np.ndarray
    log_h: np.ndarray
    item_stats: np.ndarray
    family: object
    item_lm: np.ndarray | None  # each item's singleton log marginal (None: the engine computes them)
