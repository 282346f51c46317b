"""The partition variable: a PyMC distribution over canonical label vectors.

``Partition("z", n_items, prior)`` adds an ``int64`` vector of canonical labels to the model whose
logp is the exact log prior probability of the partition (``-inf`` off the support, i.e. for a
label vector that is not a restricted growth string). The prior enters the graph only through its
normalized ``log_g``/``log_h`` tables (see :mod:`pymc_partition.priors`).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Discrete
from pytensor.tensor.random.op import RandomVariable

from ._symbolic import tag_hyperparameters
from .prior_draws import _prefix_weights, draw_prior
from .priors import PartitionPrior
from .priors import check_n_items as _check_n_items
from .priors.base import expand_prior_tables

__all__ = [
    "Partition",
    "PartitionRV",
    "PartitionParams",
    "sample_prior_labels",
    "partition_logp_graph",
]

#: the inputs of a Partition variable by name (:meth:`PartitionRV.params_of`)
PartitionParams = namedtuple("PartitionParams", "log_g log_h")


def sample_prior_labels(log_g, log_h, rng, size=()):
    """Exact draws from an exchangeable partition prior given its tables.

    The block holding the first unassigned item has size ``k`` with probability proportional to
    ``binom(m-1, k-1) h(k) V[m-k, j+1]``; its other members are a uniform subset of the rest.
    Numpy's ``rng.choice`` draws them, so that simulated data sets
    (:func:`pymc_partition.datasets.simulate_spike_slab`) keep their values; ``PartitionRV`` draws
    with :func:`pymc_partition.prior_draws.draw_prior`.
    """
    log_g = np.asarray(log_g, dtype=float)
    log_h = np.asarray(log_h, dtype=float)
    n = log_g.shape[0] - 1
    V = _prefix_weights(np.ascontiguousarray(log_g), np.ascontiguousarray(log_h))
    from scipy.special import gammaln

    size = () if size is None else tuple(np.atleast_1d(size).astype(int))
    n_draws = int(np.prod(size)) if size else 1
    out = np.empty((n_draws, n), dtype=np.int64)
    for d in range(n_draws):
        remaining = list(range(n))
        labels = np.empty(n, dtype=np.int64)
        j = 0
        while remaining:
            m = len(remaining)
            k = np.arange(1, m + 1)
            logw = gammaln(m) - gammaln(k) - gammaln(m - k + 1) + log_h[k] + V[m - k, j + 1]
            w = np.exp(logw - logw.max())
            size_k = rng.choice(k, p=w / w.sum())
            first = remaining[0]
            others = rng.choice(remaining[1:], size=size_k - 1, replace=False) if size_k > 1 else []
            block = [first, *others]
            labels[block] = j
            remaining = [i for i in remaining if i not in set(block)]
            j += 1
        # blocks were opened in order of their lowest item, so labels are already canonical
        out[d] = labels
    return out.reshape(size + (n,)) if size else out[0]


class PartitionRV(RandomVariable):
    """RandomVariable of canonical label vectors; parameters are the prior's ``log_g``, ``log_h``."""

    name = "partition"
    signature = "(m),(m)->(n)"
    dtype = "int64"
    _print_name = ("Partition", "\\operatorname{Partition}")

    @staticmethod
    def params_of(rv):
        """Return the prior tables of Partition variable ``rv``, by name (:data:`PartitionParams`).

        Graphs of the prior's parameters when they are random (the node of
        :meth:`~pymc_partition.PartitionPrior.tables_graph` expanded, so what reads them compiles the formula).
        """
        node = rv.owner
        return PartitionParams(*expand_prior_tables(node.op.dist_params(node)))

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        shape = param_shapes[0] if param_shapes is not None else dist_params[0].shape
        return (shape[-1] - 1,)

    @classmethod
    def rng_fn(cls, rng, log_g, log_h, size):
        if np.ndim(log_g) != 1 or np.ndim(log_h) != 1:
            raise NotImplementedError("Batched partition priors are not supported.")
        size = () if size is None else tuple(np.atleast_1d(size).astype(int))
        n_draws = int(np.prod(size)) if size else 1
        log_g, log_h = (np.array(t, dtype=np.float64) for t in (log_g, log_h))  # writable, C order
        draws = draw_prior(log_g, log_h, rng, n_draws)
        return draws.reshape(size + draws.shape[-1:]) if size else draws[0]


partition_rv = PartitionRV()


def _is_canonical_graph(z):
    """Symbolic restricted-growth-string check in O(n log n) (no scan)."""
    n = z.shape[0]
    order = pt.argsort(z, kind="mergesort")  # stable: equal labels keep item order
    sz = z[order]
    starts = pt.concatenate([pt.ones((1,), dtype="int64"), pt.neq(sz[1:], sz[:-1]).astype("int64")])
    first = pt.zeros((n,), dtype="int64")[order].set(starts)
    n_seen = pt.cumsum(first)
    # every label must be introduced as the next unused one, in item order
    return pt.and_(pt.all(z >= 0), pt.all(pt.eq(first * (n_seen - 1 - z), 0)))


def partition_logp_graph(z, log_g, log_h):
    """Exact log prior of canonical labels ``z`` from the prior tables, ``-inf`` off the support."""
    n = log_g.shape[0] - 1
    z = pt.as_tensor_variable(z)
    zc = pt.clip(z, 0, n - 1)
    counts = pt.bincount(zc, minlength=n)
    n_clusters = pt.sum(pt.gt(counts, 0))
    logp = log_g[n_clusters] + pt.sum(pt.switch(pt.gt(counts, 0), log_h[counts], 0.0))
    ok = pt.and_(_is_canonical_graph(z), pt.eq(z.shape[0], n))
    return pt.switch(ok, logp, -np.inf)


class Partition(Discrete):
    r"""A partition of ``n_items`` items, stored as canonical labels, with an exchangeable prior.

    Parameters
    ----------
    name : str
        Variable name (in a model context).
    n_items : int
        Number of items to partition (>= 1).
    prior : PartitionPrior
        Prior on partitions, e.g. :class:`~pymc_partition.UniformMultinomialDirichlet`,
        :class:`~pymc_partition.MixtureOfFiniteMixtures`, :class:`~pymc_partition.DirichletProcess`,
        :class:`~pymc_partition.PitmanYor` or :class:`~pymc_partition.UniformPartition`. Its
        parameters may be PyMC variables (``DirichletProcess(alpha=pm.Gamma("alpha", 2, 1))``):
        the logp is then an exact graph of them, and NUTS can sample them.

    Notes
    -----
    The value is a restricted growth string: item 0 has label 0 and each next item has a label
    already used or the next unused one, so every partition has exactly one value. The logp is
    the exact, normalized log prior probability and ``-inf`` for any other label vector. The
    initial point is the one-cluster partition (all zeros).

    Examples
    --------
    >>> import pymc as pm, pymc_partition as pmp
    >>> with pm.Model():
    ...     z = pmp.Partition("z", n_items=5, prior=pmp.DirichletProcess(alpha=1.0))
    """

    rv_type = PartitionRV
    rv_op = partition_rv

    def __new__(cls, name, n_items=None, prior=None, **kwargs):
        return super().__new__(cls, name, n_items=n_items, prior=prior, **kwargs)

    @classmethod
    def dist(cls, n_items=None, prior=None, **kwargs):
        if n_items is None:
            raise TypeError("Partition needs `n_items`, the number of items to partition.")
        n_items = _check_n_items(n_items)
        if prior is None:
            raise TypeError(
                "Partition needs a `prior`, e.g. pmp.UniformMultinomialDirichlet() or pmp.DirichletProcess(alpha=1.0)."
            )
        if not isinstance(prior, PartitionPrior):
            raise TypeError(
                f"`prior` must be a PartitionPrior (e.g. pmp.DirichletProcess()), got {type(prior).__name__}."
            )
        for bad in ("size", "shape"):
            if kwargs.get(bad) is not None:
                raise ValueError(f"Partition does not take `{bad}`; its length is `n_items` ({n_items}).")
        log_g, log_h = prior.tables_graph(n_items)
        if prior.is_random:  # fixed tables stay constants: model_spec reads their numbers
            log_g, log_h = (pt.specify_shape(t, (n_items + 1,)) for t in (log_g, log_h))
        rv = super().dist([log_g, log_h], **kwargs)
        rv.tag.partition_prior = prior
        tag_hyperparameters([getattr(prior, k) for k in prior.random_params], "cluster", owner=rv)
        return rv

    def support_point(rv, size, log_g, log_h):
        n = log_g.shape[0] - 1
        return pt.zeros((n,), dtype="int64")

    def logp(value, log_g, log_h):
        from ._pytensor_modes import untraced

        with untraced():  # creation stacks would point here (see the likelihood's logp)
            return partition_logp_graph(value, log_g, log_h)


from . import numba_random as _numba_random  # noqa: E402,F401  (PartitionRV, MarginalLikelihoodRV on numba)
