"""Predictive form of :class:`~pymc_partition.NormalInverseGamma`.

Per variable, a cluster of ``n`` rows has ``kappa = kappa0 + n``, ``alpha = alpha0 + n/2``,
posterior mean ``m = mean - kappa0/kappa (mean - mu0)`` and ``beta = beta0 + (scatter about the
cluster mean + n kappa0/kappa (mean - mu0)^2)/2``: centred, without the cancellation of raw
moments at extreme ``kappa0`` or ``mu0``. An item with ``r`` rows, mean ``ybar`` and within-item
scatter ``W`` moves ``beta`` to ``beta' = beta + W/2 + kappa r / (2 kappa') (ybar - m)^2`` with
``kappa' = kappa + r``, so

    lm(S + x) - lm(S) = T[n] - sum_v (r/2) log beta_v - sum_v alpha'_v log1p(u_v / beta_v),
    u_v = W_v/2 + kappa r/(2 kappa') (ybar_v - m_v)^2

where ``alpha' = alpha + r/2`` and ``T[n] = sum_v [-r/2 log(2 pi) + (log kappa - log kappa')/2 +
lgamma(alpha') - lgamma(alpha)]`` depends on ``n`` only and is tabulated for the most common item
row count ``r`` (log rising factorials, :mod:`pymc_partition._special`: exact for any
``alpha0``), each entry when a cluster of that size first needs it. A candidate costs one
``log1p`` per variable; items with another row count take the direct formula.

Cache of a cluster: ``[T[n] - sum_v (r/2) log beta_v, (m_v, kappa r/(2 kappa' beta_v),
1/(2 beta_v), alpha'_v) for each v]``. Per-item terms: ``[r, (ybar_v, W_v) for each v]``. The log
marginal itself is ``L[n] - sum_v [alpha0_v log(beta_v / beta0_v) + n/2 log beta_v]`` with ``L``
tabulated too (``log(beta / beta0)`` by ``log1p`` where ``beta`` is close to ``beta0``).
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from .._special import log_rising_scalar as _lr
from ._shared import add_then_pred, pred_slots, singles_from_empty
from ._types import unpack
from .form import PredictiveForm

__all__ = ["normal_inverse_gamma_form"]

_NJIT = dict(nogil=True, cache=True)
_LOG_2PI = math.log(2 * math.pi)
# params: [V, r, N + 1, mu0 (V), kappa0 (V), alpha0 (V), beta0 (V), T (N + 1), L (N + 1)]
_HEAD = 3


@numba.njit(nogil=True, cache=True, inline="always")
def _cluster(params, stats, c, v):
    """``(kappa, alpha, mu_n, beta - beta0)`` of variable ``v`` of slot ``c``.

    ``mu_n``, the posterior mean, as the cluster mean moved towards ``mu0``: no cancellation when ``mu0`` is far from
    the data.
    """
    V = int(params[0])
    n = stats[c, 0]
    mu0, kappa0 = params[_HEAD + v], params[_HEAD + V + v]
    s1 = stats[c, 1 + v]
    rows = n if n > 0.0 else 1.0
    mean = s1 / rows
    spread = max(stats[c, 1 + V + v] - s1 * mean, 0.0) if n > 1.0 else 0.0
    kap = kappa0 + n
    excess = 0.5 * (spread + n * kappa0 / kap * (mean - mu0) ** 2)
    mu_n = mean - kappa0 / kap * (mean - mu0) if n > 0.0 else mu0
    return kap, params[_HEAD + 2 * V + v] + 0.5 * n, mu_n, excess


@numba.njit(nogil=True, cache=True, inline="always")
def _log_ratio(beta0, excess):
    """``log((beta0 + excess) / beta0)``: log1p near 1, a difference of logs where it is large."""
    if excess < beta0:
        return math.log1p(excess / beta0)
    return math.log(beta0 + excess) - math.log(beta0)


@numba.njit(**_NJIT)
def _init(ctx, c):
    params, stats, cache, aux = unpack(ctx)
    V = int(params[0])
    r = params[1]
    n = int(stats[c, 0] + 0.5)
    K = params[_HEAD + 4 * V + n]
    if K != K:  # not filled yet at these hyperparameters
        _fill_tables(params, n)
        K = params[_HEAD + 4 * V + n]
    lm = params[_HEAD + 4 * V + int(params[2]) + n]
    for v in range(V):
        kap, alpha, m, excess = _cluster(params, stats, c, v)
        beta0 = params[_HEAD + 3 * V + v]
        log_ratio = _log_ratio(beta0, excess)
        beta = beta0 + excess
        log_beta = math.log(beta0) + log_ratio
        K -= 0.5 * r * log_beta
        lm -= params[_HEAD + 2 * V + v] * log_ratio + 0.5 * stats[c, 0] * log_beta
        o = 1 + 4 * v
        cache[c, o] = m
        cache[c, o + 1] = kap / (kap + r) * (0.5 * r / beta)  # kap (kap + r) beta overflows
        cache[c, o + 2] = 0.5 / beta
        cache[c, o + 3] = alpha + 0.5 * r
    cache[c, 0] = K
    return lm


@numba.njit(nogil=True, cache=True)
def _pred_any_rows(params, stats, c, aux, i):
    """Evaluate the direct formula for an item whose row count is not the tabulated one."""
    V = int(params[0])
    r = aux[i, 0]
    tot = 0.0
    for v in range(V):
        kap, alpha, m, excess = _cluster(params, stats, c, v)
        beta = params[_HEAD + 3 * V + v] + excess
        e = aux[i, 1 + 2 * v] - m
        u = 0.5 * aux[i, 2 + 2 * v] + 0.5 * kap * r / (kap + r) * e * e  # beta' - beta
        log_ratio = _log_ratio(beta, u)
        # alpha log beta - alpha' log beta' + log Gamma(alpha') - log Gamma(alpha), exact
        tot += (
            -0.5 * r * _LOG_2PI
            - 0.5 * math.log1p(r / kap)
            - alpha * log_ratio
            - 0.5 * r * (math.log(beta) + log_ratio)
            + _lr(alpha, 0.5 * r)
        )
    return tot


@numba.njit(nogil=True, cache=True, inline="always")
def _pred_one(params, stats, cache, c, aux, i):
    if aux[i, 0] != params[1]:
        return _pred_any_rows(params, stats, c, aux, i)
    tot = cache[c, 0]
    for v in range(int(params[0])):
        o = 1 + 4 * v
        e = aux[i, 1 + 2 * v] - cache[c, o]
        x = aux[i, 2 + 2 * v] * cache[c, o + 2] + cache[c, o + 1] * e * e
        tot -= cache[c, o + 3] * math.log1p(x)
    return tot


@numba.njit(**_NJIT)
def _pred(ctx, slots_addr, m, i, out_addr):
    pred_slots(_pred_one, ctx, slots_addr, m, i, out_addr)


@numba.njit(**_NJIT)
def _add(ctx, c, i, lp):
    _init(ctx, c)


@numba.njit(**_NJIT)
def _remove(ctx, c, i):
    return add_then_pred(_add, _pred_one, ctx, c, i)


@numba.njit(nogil=True, cache=True)
def _fill_tables(params, n):
    """Write ``T[n]`` and ``L[n]``, the count-only terms summed over the variables, into ``params``.

    The terms in ``kappa0`` (``-r/2 log(2 pi) - log1p(r / (kappa0 + n)) / 2`` and ``-n/2 log(2 pi) - log1p(n / kappa0)
    / 2``) plus those in ``alpha0`` (the log rising factorials ``log (alpha0 + n/2)_{r/2}`` and ``log (alpha0)_{n/2}``).
    Filled when a cluster of ``n`` rows first needs them: at new hyperparameters a chain visits a few sizes, not all
    ``n_max + 1``.
    """
    V = int(params[0])
    r = params[1]
    x = float(n)
    tk = 0.0
    lk = 0.0
    for v in range(V):
        k0 = params[_HEAD + V + v]
        tk += -0.5 * r * _LOG_2PI - 0.5 * math.log1p(r / (k0 + x))
        lk += -0.5 * x * _LOG_2PI - 0.5 * math.log1p(x / k0)
    tr = 0.0
    lr = 0.0
    for v in range(V):
        a0 = params[_HEAD + 2 * V + v]
        tr += _lr(a0 + 0.5 * x, 0.5 * r)
        lr += _lr(a0, 0.5 * x)
    params[_HEAD + 4 * V + n] = tk + tr
    params[_HEAD + 4 * V + int(params[2]) + n] = lk + lr


@numba.njit(**_NJIT)
def _singles(ctx, c, out):
    return singles_from_empty(_init, _pred_one, ctx, c, out)


def _params(family, n_vars, r, n_rows):
    """Return the form's ``params`` at ``family``'s hyperparameters, its tables not filled yet (NaN).

    ``n_vars``, ``r`` (the tabulated item row count) and ``n_rows`` (the total row count) come from the item statistics:
    at new hyperparameters on the same statistics only this vector changes.
    """
    params = np.full(_HEAD + 4 * n_vars + 2 * (n_rows + 1), np.nan)
    params[:_HEAD] = n_vars, r, n_rows + 1
    for j, key in enumerate(("mu0", "kappa0", "alpha0", "beta0")):  # scalars or one per variable
        params[_HEAD + j * n_vars : _HEAD + (j + 1) * n_vars] = getattr(family, key)
    params[_HEAD : _HEAD + n_vars] -= family.centre  # the statistics are sums about the family's centre
    return params


def normal_inverse_gamma_form(family, item_stats):
    """Return the :class:`PredictiveForm` of a :class:`~pymc_partition.NormalInverseGamma` family."""
    X = np.asarray(item_stats, dtype=np.float64)
    V = (X.shape[1] - 1) // 2
    rows = X[:, 0]
    values, counts = np.unique(rows, return_counts=True)
    r = float(values[np.argmax(counts)])
    reparam = functools.partial(_params, n_vars=V, r=r, n_rows=int(round(rows.sum())))
    s1, s2 = X[:, 1 : 1 + V], X[:, 1 + V : 1 + 2 * V]
    aux = np.empty((X.shape[0], 1 + 2 * V))
    aux[:, 0] = rows
    aux[:, 1::2] = s1 / rows[:, None]  # item mean
    aux[:, 2::2] = np.maximum(s2 - s1**2 / rows[:, None], 0.0)  # scatter about the item mean
    return PredictiveForm(
        "NormalInverseGamma",
        reparam(family),
        aux,
        1 + 4 * V,
        _pred,
        _remove,
        _add,
        _init,
        reparam=reparam,
        singles=_singles,
    )
