"""Binary data with a Beta prior on each variable's success probability (Beta--Bernoulli).

Per variable ``v`` and cluster ``c``, independently across variables::

    y ~ Bernoulli(theta_v),  theta_v ~ Beta(a, b).

Every data row of a cluster (all replicate rows of all its items) is one draw. The per-item
statistics row is ``[n_i, sum_y_i1, ..., sum_y_iV]`` (``1 + V`` columns): row count and number of
ones per variable.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from .._special import log_rising_tensor
from .base import (
    ConjugateFamily,
    check_param_length,
    check_positive,
    check_same_length,
    group_sums,
    group_sums_graph,
    scalar_or_vector_param,
)
from .numba_draws import draw_beta_bernoulli

__all__ = ["BetaBernoulli"]


class BetaBernoulli(ConjugateFamily):
    r"""Binary (0/1) data with a Beta prior on each variable's success probability.

    Parameters
    ----------
    a : float or array_like (V,)
        First Beta shape parameter (prior pseudo-count of ones), > 0.
    b : float or array_like (V,)
        Second Beta shape parameter (prior pseudo-count of zeros), > 0.

    Notes
    -----
    Statistics per item: ``[n, S (V)]`` with ``n`` the item's row count and ``S = \sum y``. For one
    variable of a cluster with summed ``n, S``:

    .. math::

        \log p(y) = \log B(a + S, b + n - S) - \log B(a, b).

    Variables are independent given the partition, so the cluster log marginal sums over them.
    The observed values must be exactly 0 or 1.


    Examples
    --------
    A cluster of two items, one 1 and one 0, under a uniform prior: ``B(2, 2) / B(1, 1) = 1/6``.

    >>> import numpy as np, pymc_partition as pmp
    >>> family = pmp.BetaBernoulli(a=1.0, b=1.0)
    >>> stats = family.item_stats([[1.0], [0.0]])   # one row per item: [n, sum]
    >>> bool(np.isclose(family.log_marginal_numpy(stats.sum(axis=0)), np.log(1 / 6)))
    True
    """

    _param_names = ("a", "b")
    _param_domains = {"a": "positive", "b": "positive"}

    def __init__(self, a=1.0, b=1.0):
        self.a = scalar_or_vector_param("a", a, check_positive)
        self.b = scalar_or_vector_param("b", b, check_positive)
        check_same_length(a=self.a, b=self.b)

    def _check_values(self, values):
        bad = (values != 0) & (values != 1)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise ValueError(
                f"`observed` must hold only 0 and 1 for BetaBernoulli; got {values[r, c]!r} at row "
                f"{r}, column {c} ({int(bad.sum())} bad value(s))."
            )
        check_param_length("a", self.a, values.shape[1])
        check_param_length("b", self.b, values.shape[1])

    def _item_stats(self, values, item_index, n_items):
        n = np.bincount(item_index, minlength=n_items).astype(float)
        return np.column_stack([n, group_sums(values, item_index, n_items)])

    _draw_kernel = staticmethod(draw_beta_bernoulli)

    def _draw_cluster(self, rng, item_index, n_vars):
        theta = rng.beta(np.broadcast_to(self._param("a"), (n_vars,)), np.broadcast_to(self._param("b"), (n_vars,)))
        return (rng.random((item_index.size, n_vars)) < theta).astype(float)

    def _item_stats_graph(self, values, item_index, n_items):
        n = np.bincount(item_index, minlength=n_items).astype(float)[:, None]
        return pt.concatenate([pt.as_tensor_variable(n), group_sums_graph(values, item_index, n_items)], axis=1)

    def predictive_form(self, item_stats):
        """Specialised log predictive for the samplers (:mod:`pymc_partition.predictive.beta_bernoulli`)."""
        from ..predictive.beta_bernoulli import beta_bernoulli_form

        return beta_bernoulli_form(self, item_stats)

    def log_marginal(self, stats):
        stats = pt.as_tensor_variable(stats)
        a, b = self._param("a"), self._param("b")
        n = stats[..., 0][..., None]
        s = stats[..., 1:]
        # log B(a + s, b + n - s) - log B(a, b) as log rising factorials: exact for any a, b
        per_var = log_rising_tensor(a, s) + log_rising_tensor(b, n - s) - log_rising_tensor(a + b, n)
        return pt.sum(per_var, axis=-1)
