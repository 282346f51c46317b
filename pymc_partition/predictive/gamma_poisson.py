"""Predictive form of :class:`~pymc_partition.GammaPoisson`.

For a cluster of ``n`` rows with sums ``S_v``, an item with ``r`` rows, sums ``s_v`` and
``L = sum log y!`` gives, with ``a'_v = a_v + S_v``,

    lm(S + x) - lm(S) = sum_v [log Gamma(a'_v + s_v) - log Gamma(a'_v)
                               - a'_v log1p(r / (b_v + n)) - s_v log(b_v + n + r)] - L,

the form without the cancellations of ``a log b - (a + S) log(b + n)`` and of the log-gamma
difference at large ``a`` and ``b`` (:mod:`pymc_partition._special`). A cluster caches
``log Gamma(a'_v)`` and, for the most common item row count ``r``, ``log1p(r / (b_v + n))`` and
``log(b_v + n + r)``: a candidate costs one log-gamma per variable (below ``a'_v = 30``, Stirling's
series above; items with another row count compute the two logarithms too).

Cache of a cluster: ``[log Gamma(a'_v), log1p(r / (b_v + n)), log(b_v + n + r)] per v``.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from .._special import STIRLING_FROM
from .._special import log_rising_scalar as _lr
from ._shared import add_then_pred, pred_slots, singles_from_empty
from ._types import unpack
from .form import PredictiveForm

__all__ = ["gamma_poisson_form"]

_NJIT = dict(nogil=True, cache=True)
_HEAD = 2  # params: [V, r, a (V), b (V)]


@numba.njit(**_NJIT)
def _init(ctx, c):
    params, stats, cache, aux = unpack(ctx)
    V = int(params[0])
    r = params[1]
    n = stats[c, 0]
    lm = 0.0
    for v in range(V):
        a, b, S = params[_HEAD + v], params[_HEAD + V + v], stats[c, 1 + v]
        aS = a + S
        cache[c, 3 * v] = math.lgamma(aS) if aS < STIRLING_FROM else 0.0
        cache[c, 3 * v + 1] = math.log1p(r / (b + n))
        cache[c, 3 * v + 2] = math.log(b + n + r)
        lm += _lr(a, S) - a * math.log1p(n / b) - S * math.log(b + n) - stats[c, 1 + V + v]
    return lm


@numba.njit(nogil=True, cache=True, inline="always")
def _pred_one(params, stats, cache, c, aux, i):
    V = int(params[0])
    r = aux[i, 0]
    same = r == params[1]
    n = stats[c, 0]
    tot = -aux[i, 1 + V]
    for v in range(V):
        aS = params[_HEAD + v] + stats[c, 1 + v]
        s = aux[i, 1 + v]
        if s == 0.0:
            rising = 0.0
        elif aS < STIRLING_FROM:
            rising = math.lgamma(aS + s) - cache[c, 3 * v]
        else:
            rising = _lr(aS, s)
        if same:
            log1p_r, log_b1 = cache[c, 3 * v + 1], cache[c, 3 * v + 2]
        else:
            b_n = params[_HEAD + V + v] + n
            log1p_r, log_b1 = math.log1p(r / b_n), math.log(b_n + r)
        tot += rising - aS * log1p_r - s * log_b1
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


@numba.njit(**_NJIT)
def _singles(ctx, c, out):
    return singles_from_empty(_init, _pred_one, ctx, c, out)


def _params(family, n_vars, r):
    """Return the form's ``params`` at ``family``'s hyperparameters (``r``: the tabulated item row count)."""
    a = np.broadcast_to(np.asarray(family.a, dtype=float), (n_vars,))
    b = np.broadcast_to(np.asarray(family.b, dtype=float), (n_vars,))
    return np.concatenate([[n_vars, r], a, b])


def gamma_poisson_form(family, item_stats):
    """Return the :class:`PredictiveForm` of a :class:`~pymc_partition.GammaPoisson` family."""
    X = np.asarray(item_stats, dtype=np.float64)
    V = (X.shape[1] - 1) // 2
    rows = X[:, 0]
    values, counts = np.unique(rows, return_counts=True)
    reparam = functools.partial(_params, n_vars=V, r=float(values[np.argmax(counts)]))
    aux = np.column_stack([rows, X[:, 1 : 1 + V], X[:, 1 + V : 1 + 2 * V].sum(axis=1)])
    return PredictiveForm(
        "GammaPoisson", reparam(family), aux, 3 * V, _pred, _remove, _add, _init, reparam=reparam, singles=_singles
    )
