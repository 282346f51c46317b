"""Categorical data with a Dirichlet prior on each variable's category probabilities.

Per variable ``v`` and cluster ``c``, independently across variables::

    y ~ Categorical(pi_v),  pi_v ~ Dirichlet(alpha_1, ..., alpha_K),

with ``y`` coded as integers ``0, ..., K-1``. Every data row of a cluster (all replicate rows of all
its items) is one draw. The per-item statistics row holds the category counts
``[c_i[0, 0], ..., c_i[0, K-1], c_i[1, 0], ..., c_i[V-1, K-1]]`` (``V*K`` columns, variable-major:
column ``v*K + k`` counts rows with ``y_v = k``); the row count is implied.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from .._special import log_rising_tensor
from .base import (
    ConjugateFamily,
    _length,
    check_positive,
    group_sums,
    group_sums_graph,
    scalar_or_vector_param,
)
from .numba_draws import draw_dirichlet_categorical

__all__ = ["DirichletCategorical"]


class DirichletCategorical(ConjugateFamily):
    r"""Categorical data with a Dirichlet prior on each variable's category probabilities.

    Parameters
    ----------
    alpha : float or array_like (K,)
        Dirichlet concentration: a scalar (symmetric prior) or one value per category, > 0. The
        same prior is used for every variable.
    n_categories : int, optional
        Number of categories ``K`` (every variable is coded ``0, ..., K-1``). Defaults to
        ``len(alpha)`` for a vector ``alpha``; for a scalar ``alpha`` it is otherwise inferred
        as ``max(observed) + 1`` the first time :meth:`item_stats` is called, and then fixed.
        Give it explicitly when some categories may be absent from the data, since a symmetric
        Dirichlet's marginal depends on ``K``.

    Notes
    -----
    For one variable of a cluster with category counts ``c_1, ..., c_K`` (``n = \sum_k c_k``) and
    ``A = \sum_k \alpha_k``:

    .. math::

        \log p(y) = \log\Gamma(A) - \log\Gamma(A + n)
        + \sum_k \big[\log\Gamma(\alpha_k + c_k) - \log\Gamma(\alpha_k)\big].

    Variables are independent given the partition, so the cluster log marginal sums over them.
    The observed values must be integer codes in ``0, ..., K-1``.
    """

    _param_names = ("alpha", "n_categories")
    _param_domains = {"alpha": "positive"}

    def __init__(self, alpha=1.0, n_categories=None):
        self.alpha = scalar_or_vector_param("alpha", alpha, check_positive, what="category")
        if n_categories is not None:
            if isinstance(n_categories, bool) or not isinstance(n_categories, (int, np.integer)):
                raise TypeError(f"`n_categories` must be an integer, got {type(n_categories).__name__}.")
            if n_categories < 1:
                raise ValueError(f"`n_categories` must be at least 1, got {n_categories}.")
            n_categories = int(n_categories)
        if getattr(self.alpha, "ndim", np.ndim(self.alpha)) == 1:
            k = _length(self.alpha)
            if k is None:
                raise ValueError(
                    "`alpha` is a vector variable of unknown length: give it a shape, e.g. "
                    "pm.Gamma('alpha', 1, 1, shape=K)."
                )
            if n_categories is not None and n_categories != k:
                raise ValueError(f"`alpha` has {k} values but `n_categories` is {n_categories}.")
            n_categories = k
        self.n_categories = n_categories

    def _check_values(self, values):
        bad = (values != np.round(values)) | (values < 0)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ValueError(
                "`observed` must hold integer category codes 0, 1, ... for DirichletCategorical; "
                f"got {values[r, c]!r} at row {r}, column {c} ({int(bad.sum())} bad value(s))."
            )
        top = int(values.max())
        if self.n_categories is None:
            self.n_categories = top + 1
            self.__dict__.pop("_np_fn", None)
        elif top >= self.n_categories:
            r, c = np.argwhere(values >= self.n_categories)[0]
            raise ValueError(
                f"`observed` holds category code {int(values[r, c])} (row {r}, column {c}) but "
                f"`n_categories` is {self.n_categories} (codes 0..{self.n_categories - 1})."
            )

    def _item_stats(self, values, item_index, n_items):
        n_rows, n_vars = values.shape
        k = self.n_categories
        onehot = np.zeros((n_rows, n_vars * k))
        cols = np.arange(n_vars) * k + values.astype(np.int64)
        onehot[np.arange(n_rows)[:, None], cols] = 1.0
        return group_sums(onehot, item_index, n_items)

    _draw_kernel = staticmethod(draw_dirichlet_categorical)

    def _draw_kernel_shapes(self, n_vars):
        if self.n_categories is None:
            raise ValueError("DirichletCategorical needs `n_categories` to draw data.")
        return (("alpha", (self.n_categories,)),)

    def _draw_cluster(self, rng, item_index, n_vars):
        if self.n_categories is None:
            raise ValueError("DirichletCategorical needs `n_categories` to draw data.")
        alpha = np.broadcast_to(self._param("alpha"), (self.n_categories,))
        out = np.empty((item_index.size, n_vars))
        for v in range(n_vars):
            out[:, v] = rng.choice(self.n_categories, size=item_index.size, p=rng.dirichlet(alpha))
        return out

    def _item_stats_graph(self, values, item_index, n_items):
        if self.n_categories is None:
            raise ValueError(
                "DirichletCategorical with data given as a variable needs `n_categories` (or a vector `alpha`)."
            )
        k = self.n_categories
        onehot = pt.eq(values[:, :, None], np.arange(k)).astype("float64")
        onehot = onehot.reshape((values.shape[0], values.shape[1] * k))
        return group_sums_graph(onehot, item_index, n_items)

    def predictive_form(self, item_stats):
        """Specialised log predictive for the samplers (:mod:`pymc_partition.predictive.dirichlet_categorical`)."""
        from ..predictive.dirichlet_categorical import dirichlet_categorical_form

        return dirichlet_categorical_form(self, item_stats)

    def log_marginal(self, stats):
        if self.n_categories is None:
            raise ValueError(
                "DirichletCategorical does not know the number of categories yet: pass "
                "`n_categories` (or a vector `alpha`), or call `item_stats` on the data first."
            )
        k = self.n_categories
        stats = pt.as_tensor_variable(stats)
        lead = tuple(stats.shape[i] for i in range(stats.ndim - 1))
        counts = pt.reshape(stats, (*lead, -1, k))  # (..., V, K)
        alpha = pt.broadcast_to(self._param("alpha"), (k,))
        a_sum = pt.sum(alpha)
        n = pt.sum(counts, axis=-1)
        # log rising factorials: exact for any alpha (a difference of log-gammas is not)
        per_var = pt.sum(log_rising_tensor(alpha, counts), axis=-1) - log_rising_tensor(a_sum, n)
        return pt.sum(per_var, axis=-1)
