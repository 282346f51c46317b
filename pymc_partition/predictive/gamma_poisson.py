"""Predictive form of :class:`~pymc_partition.GammaPoisson`.

For a cluster of ``n`` rows with sums ``S_v``, an item with ``r`` rows, sums ``s_v`` and
``L = sum log y!`` gives

    lm(S + x) - lm(S) = sum_v [lgamma(a_v + S_v + s_v) - (a_v + S_v + s_v) log(b_v + n + r)
                               - lgamma(a_v + S_v) + (a_v + S_v) log(b_v + n)] - L.

A cluster caches the last two terms and ``log(b_v + n + r)`` for the most common item row count
``r``: a candidate costs one log-gamma per variable (items with another row count compute the
logarithm too).

Cache of a cluster: ``[(a_v + S_v) log(b_v + n) - lgamma(a_v + S_v), log(b_v + n + r)] per v``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._shared import add_then_pred, pred_slots
from ._types import unpack
from .form import PredictiveForm

__all__ = ["gamma_poisson_form"]

_NJIT = dict(nogil=True, cache=True)
_HEAD = 2  # params: [V, r, a (V), b (V)]


@numba.njit(**_NJIT)
def _init(ctx, c):
    params, stats, cache, aux = unpack(ctx)
    V = int(params[0])
    n = stats[c, 0]
    lm = 0.0
    for v in range(V):
        a, b = params[_HEAD + v], params[_HEAD + V + v]
        aS = a + stats[c, 1 + v]
        cache[c, 2 * v] = aS * math.log(b + n) - math.lgamma(aS)
        cache[c, 2 * v + 1] = math.log(b + n + params[1])
        lm += a * math.log(b) - math.lgamma(a) - cache[c, 2 * v] - stats[c, 1 + V + v]
    return lm


@numba.njit(nogil=True, cache=True, inline="always")
def _pred_one(params, stats, cache, c, aux, i):
    V = int(params[0])
    r = aux[i, 0]
    same = r == params[1]
    n = stats[c, 0]
    tot = -aux[i, 1 + V]
    for v in range(V):
        aS1 = params[_HEAD + v] + stats[c, 1 + v] + aux[i, 1 + v]
        if same:
            log_b1 = cache[c, 2 * v + 1]
        else:
            log_b1 = math.log(params[_HEAD + V + v] + n + r)
        tot += math.lgamma(aS1) - aS1 * log_b1 + cache[c, 2 * v]
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


def gamma_poisson_form(family, item_stats):
    """The :class:`PredictiveForm` of a :class:`~pymc_partition.GammaPoisson` family."""
    X = np.asarray(item_stats, dtype=np.float64)
    V = (X.shape[1] - 1) // 2
    a = np.broadcast_to(np.asarray(family.a, dtype=float), (V,))
    b = np.broadcast_to(np.asarray(family.b, dtype=float), (V,))
    rows = X[:, 0]
    values, counts = np.unique(rows, return_counts=True)
    r = float(values[np.argmax(counts)])
    params = np.concatenate([[V, r], a, b])
    aux = np.column_stack([rows, X[:, 1 : 1 + V], X[:, 1 + V : 1 + 2 * V].sum(axis=1)])
    return PredictiveForm("GammaPoisson", params, aux, 2 * V, _pred, _remove, _add, _init)
