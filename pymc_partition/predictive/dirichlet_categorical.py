"""Predictive form of :class:`~pymc_partition.DirichletCategorical` (items with one row each).

For a cluster of ``n`` rows with counts ``c_vk``, an item with one row (category ``k_v`` in
variable ``v``) gives

    lm(S + y) - lm(S) = sum_v [log(alpha_{k_v} + c_{v k_v}) - log(A + n)],   A = sum_k alpha_k,

so with the logarithms cached per cluster a candidate costs ``V`` table reads and additions; moving
an item refreshes the ``V`` entries it touched. Items with several rows are declined (the samplers
then use the compiled graph).

Cache of a cluster: ``[-V log(A + n), log(alpha_k + c_vk) (V*K, variable-major)]``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._special import log_rising_scalar as _lr
from ._shared import add_then_pred, pred_slots
from ._types import unpack
from .form import PredictiveForm

__all__ = ["dirichlet_categorical_form"]

_NJIT = dict(nogil=True, cache=True)
_HEAD = 3  # params: [V, K, A, alpha (K)]


@numba.njit(nogil=True, cache=True, inline="always")
def _normaliser(params, stats, cache, c):
    """``cache[c, 0] = -V log(A + n)`` (``n``: the rows of slot ``c``, counted in variable 0)."""
    V, K = int(params[0]), int(params[1])
    n = 0.0
    for k in range(K):
        n += stats[c, k]
    cache[c, 0] = -V * math.log(params[2] + n)


@numba.njit(**_NJIT)
def _init(ctx, c):
    params, stats, cache, aux = unpack(ctx)
    V, K = int(params[0]), int(params[1])
    _normaliser(params, stats, cache, c)
    A = params[2]
    n = 0.0
    for k in range(K):
        n += stats[c, k]
    lm = -V * _lr(A, n)  # log rising factorials: exact for any alpha
    for v in range(V):
        for k in range(K):
            alpha, count = params[_HEAD + k], stats[c, v * K + k]
            cache[c, 1 + v * K + k] = math.log(alpha + count)
            lm += _lr(alpha, count)
    return lm


@numba.njit(nogil=True, cache=True, inline="always")
def _pred_one(params, stats, cache, c, aux, i):
    V, K = int(params[0]), int(params[1])
    tot = cache[c, 0]
    for v in range(V):
        tot += cache[c, 1 + v * K + int(aux[i, v])]
    return tot


@numba.njit(**_NJIT)
def _pred(ctx, slots_addr, m, i, out_addr):
    pred_slots(_pred_one, ctx, slots_addr, m, i, out_addr)


@numba.njit(**_NJIT)
def _add(ctx, c, i, lp):
    """Refresh the normaliser and the ``V`` cached logarithms item ``i``'s move changed."""
    params, stats, cache, aux = unpack(ctx)
    V, K = int(params[0]), int(params[1])
    _normaliser(params, stats, cache, c)
    for v in range(V):
        k = int(aux[i, v])
        cache[c, 1 + v * K + k] = math.log(params[_HEAD + k] + stats[c, v * K + k])


@numba.njit(**_NJIT)
def _remove(ctx, c, i):
    return add_then_pred(_add, _pred_one, ctx, c, i)


def dirichlet_categorical_form(family, item_stats):
    """Return the :class:`PredictiveForm` of a :class:`~pymc_partition.DirichletCategorical` family.

    Or ``None`` when some item has several rows.
    """
    X = np.asarray(item_stats, dtype=np.float64)
    K = family.n_categories
    if K is None or X.shape[1] % K:
        return None
    V = X.shape[1] // K
    counts = X.reshape(X.shape[0], V, K)
    if not np.all(counts.sum(axis=2) == 1.0):
        return None
    alpha = np.broadcast_to(np.asarray(family.alpha, dtype=float), (K,))
    params = np.concatenate([[V, K, alpha.sum()], alpha])
    aux = np.argmax(counts, axis=2).astype(np.float64)
    return PredictiveForm("DirichletCategorical", params, aux, 1 + V * K, _pred, _remove, _add, _init)
