"""Predictive form of :class:`~pymc_partition.BetaBernoulli`.

For a cluster of ``n`` rows with ``S_v`` ones in variable ``v``, an item with one row ``y`` gives

    lm(S + y) - lm(S) = sum_v [y_v log(a_v + S_v) + (1 - y_v) log(b_v + n - S_v)
                               - log(a_v + b_v + n)],

so with those logarithms cached per cluster a candidate costs two multiply-adds per variable and no
transcendental function; moving an item refreshes the ``V`` cached logarithms it touched and the
normaliser. Items with several rows take the direct formula (log rising factorials,
:mod:`pymc_partition._special`).

Cache of a cluster: ``[-sum_v log(a_v + b_v + n), log(a_v + S_v) (V), log(b_v + n - S_v) (V)]``
(``n - S_v`` formed first: a tiny ``b_v`` added to ``n`` before ``S_v`` is taken away is lost).
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

__all__ = ["beta_bernoulli_form"]

_NJIT = dict(nogil=True, cache=True)


@numba.njit(nogil=True, cache=True)
def _normaliser(params, n):
    V = int(params[0])
    tot = 0.0
    for v in range(V):
        tot -= math.log(params[1 + v] + params[1 + V + v] + n)
    return tot


@numba.njit(nogil=True, cache=True)
def _fill(params, stats, cache, c):
    V = int(params[0])
    n = stats[c, 0]
    cache[c, 0] = _normaliser(params, n)
    for v in range(V):
        cache[c, 1 + v] = math.log(params[1 + v] + stats[c, 1 + v])
        cache[c, 1 + V + v] = math.log(params[1 + V + v] + (n - stats[c, 1 + v]))


@numba.njit(nogil=True, cache=True, inline="always")
def _pred_one(params, stats, cache, c, aux, i):
    V = int(params[0])
    r = aux[i, 0]
    if r == 1.0:
        tot = cache[c, 0]
        for v in range(V):
            y = aux[i, 1 + v]
            tot += y * cache[c, 1 + v] + (1.0 - y) * cache[c, 1 + V + v]
        return tot
    n = stats[c, 0]
    tot = 0.0
    for v in range(V):
        a, b = params[1 + v], params[1 + V + v]
        S, s = stats[c, 1 + v], aux[i, 1 + v]
        tot += _lr(a + S, s) + _lr(b + (n - S), r - s) - _lr(a + b + n, r)
    return tot


@numba.njit(**_NJIT)
def _pred(ctx, slots_addr, m, i, out_addr):
    pred_slots(_pred_one, ctx, slots_addr, m, i, out_addr)


@numba.njit(**_NJIT)
def _add(ctx, c, i, lp):
    """Refresh the cached logarithms item ``i``'s move changed."""
    params, stats, cache, aux = unpack(ctx)
    if aux[i, 0] != 1.0:
        _fill(params, stats, cache, c)
        return
    V = int(params[0])
    n = stats[c, 0]
    cache[c, 0] = _normaliser(params, n)
    for v in range(V):
        if aux[i, 1 + v] == 1.0:
            cache[c, 1 + v] = math.log(params[1 + v] + stats[c, 1 + v])
        else:
            cache[c, 1 + V + v] = math.log(params[1 + V + v] + (n - stats[c, 1 + v]))


@numba.njit(**_NJIT)
def _remove(ctx, c, i):
    return add_then_pred(_add, _pred_one, ctx, c, i)


@numba.njit(**_NJIT)
def _init(ctx, c):
    params, stats, cache, aux = unpack(ctx)
    _fill(params, stats, cache, c)
    V = int(params[0])
    n = stats[c, 0]
    lm = 0.0
    for v in range(V):
        a, b, S = params[1 + v], params[1 + V + v], stats[c, 1 + v]
        lm += _lr(a, S) + _lr(b, n - S) - _lr(a + b, n)  # exact for any a, b
    return lm


@numba.njit(**_NJIT)
def _singles(ctx, c, out):
    return singles_from_empty(_init, _pred_one, ctx, c, out)


def _params(family, n_vars):
    """Return the form's ``params`` at ``family``'s hyperparameters, for ``n_vars`` variables."""
    a = np.broadcast_to(np.asarray(family.a, dtype=float), (n_vars,))
    b = np.broadcast_to(np.asarray(family.b, dtype=float), (n_vars,))
    return np.concatenate([[n_vars], a, b])


def beta_bernoulli_form(family, item_stats):
    """Return the :class:`PredictiveForm` of a :class:`~pymc_partition.BetaBernoulli` family."""
    X = np.asarray(item_stats, dtype=np.float64)
    reparam = functools.partial(_params, n_vars=X.shape[1] - 1)
    return PredictiveForm("BetaBernoulli", reparam(family), X, 1 + 2 * (X.shape[1] - 1), _pred, _remove, _add,
                          _init, reparam=reparam, singles=_singles)  # fmt: skip
