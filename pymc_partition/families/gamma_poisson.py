"""Count data with a Gamma prior on each variable's Poisson rate (Gamma--Poisson).

Per variable ``v`` and cluster ``c``, independently across variables::

    y ~ Poisson(lambda_v),  lambda_v ~ Gamma(a, rate=b).

Every data row of a cluster (all replicate rows of all its items) is one draw. The per-item
statistics row is ``[n_i, sum_y_i1, ..., sum_y_iV, sum_logfact_i1, ..., sum_logfact_iV]``
(``1 + 2V`` columns): row count, per-variable sums of counts and per-variable sums of
``log(y!)``, so that the marginal is exact including the ``-sum log(y!)`` term.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from scipy.special import gammaln

from .._special import log_rising_tensor
from .base import (
    ConjugateFamily,
    _length,
    check_param_length,
    check_positive,
    check_same_length,
    group_sums,
    group_sums_graph,
    scalar_or_vector_param,
)
from .numba_draws import draw_gamma_poisson

__all__ = ["GammaPoisson"]


class GammaPoisson(ConjugateFamily):
    r"""Count data with a Gamma prior on each variable's Poisson rate.

    Parameters
    ----------
    a : float or array_like (V,)
        Shape of the Gamma prior on the rate, > 0.
    b : float or array_like (V,)
        Rate (inverse scale) of the Gamma prior on the rate, > 0.

    Notes
    -----
    Statistics per item: ``[n, S (V), L (V)]`` with ``n`` the item's row count, ``S = \sum y`` and
    ``L = \sum \log y!``. For one variable of a cluster with summed ``n, S, L``:

    .. math::

        \log p(y) = a\log b - \log\Gamma(a) + \log\Gamma(a + S) - (a + S)\log(b + n) - L.

    Variables are independent given the partition, so the cluster log marginal sums over them.
    The observed values must be non-negative integers.
    """

    _param_names = ("a", "b")
    _param_domains = {"a": "positive", "b": "positive"}

    def __init__(self, a=1.0, b=1.0):
        self.a = scalar_or_vector_param("a", a, check_positive)
        self.b = scalar_or_vector_param("b", b, check_positive)
        check_same_length(a=self.a, b=self.b)
        lengths = [
            _length(x) for x in (self.a, self.b)
            if getattr(x, "ndim", np.ndim(x)) == 1 and _length(x) is not None
        ]  # fmt: skip
        self._n_vars = lengths[0] if lengths else None

    def _check_values(self, values):
        bad = (values < 0) | (values != np.round(values))
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ValueError(
                "`observed` must hold non-negative integer counts for GammaPoisson; got "
                f"{values[r, c]!r} at row {r}, column {c} ({int(bad.sum())} bad value(s))."
            )
        check_param_length("a", self.a, values.shape[1])
        check_param_length("b", self.b, values.shape[1])

    def _item_stats(self, values, item_index, n_items):
        n = np.bincount(item_index, minlength=n_items).astype(float)
        s = group_sums(values, item_index, n_items)
        logfact = group_sums(gammaln(values + 1.0), item_index, n_items)
        return np.column_stack([n, s, logfact])

    _draw_kernel = staticmethod(draw_gamma_poisson)

    def _draw_cluster(self, rng, item_index, n_vars):
        a, b = (np.broadcast_to(self._param(k), (n_vars,)) for k in ("a", "b"))
        lam = rng.gamma(a, 1.0 / b)  # rate b
        return rng.poisson(lam, size=(item_index.size, n_vars)).astype(float)

    def _item_stats_graph(self, values, item_index, n_items):
        n = np.bincount(item_index, minlength=n_items).astype(float)[:, None]
        return pt.concatenate(
            [pt.as_tensor_variable(n), group_sums_graph(values, item_index, n_items),
             group_sums_graph(pt.gammaln(values + 1.0), item_index, n_items)], axis=1,
        )  # fmt: skip

    def predictive_form(self, item_stats):
        """Specialised log predictive for the samplers (:mod:`pymc_partition.predictive.gamma_poisson`)."""
        from ..predictive.gamma_poisson import gamma_poisson_form

        return gamma_poisson_form(self, item_stats)

    def log_marginal(self, stats):
        stats = pt.as_tensor_variable(stats)
        n_vars = self._n_vars if self._n_vars is not None else (stats.shape[-1] - 1) // 2
        a, b = self._param("a"), self._param("b")
        n = stats[..., 0][..., None]
        s = stats[..., 1 : 1 + n_vars]
        logfact = stats[..., 1 + n_vars : 1 + 2 * n_vars]
        # a log b - (a + s) log(b + n) + log Gamma(a + s) - log Gamma(a), in a form without
        # the cancellations of large a and b (log1p, a log rising factorial)
        per_var = log_rising_tensor(a, s) - a * pt.log1p(n / b) - s * pt.log(b + n) - logfact
        return pt.sum(per_var, axis=-1)
