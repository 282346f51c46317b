"""Predictive form of :class:`~pymc_partition.SpikeSlabNormal` (the paper's model).

A cluster's log marginal from summed ``const, A, B_v`` is

    lm = const + V log(1 - p) + sum_v log(1 + exp(x_v)),
    x_v = logit(p) - log(1 + s A)/2 + s B_v^2 / (2 (1 + s A)),   s = sigma2_theta,

the graph's ``logaddexp(log(1-p), log p + slab_v)`` rearranged. The sum of logarithms is taken as
the logarithm of a running product (flushed before it could overflow; terms with ``x_v > 30``
added as ``x_v + exp(-x_v)``), so a cluster costs one exponential per variable and a few
logarithms instead of an exponential and a logarithm per variable. The cache of a cluster is its
log marginal; a candidate evaluates ``lm(S + x_i)`` from the sums without building them.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._shared import pred_slots, replace_cached
from ._types import ADD_SIG, INIT_SIG, PRED_SIG, REMOVE_SIG, unpack
from .form import PredictiveForm

__all__ = ["spike_slab_form"]

_NJIT = dict(nogil=True, cache=True)
_FLUSH = 1e250


@numba.njit(nogil=True, cache=True)
def _lm(params, stats, c, aux, i, with_item):
    """``lm`` of ``stats[c]`` (plus item ``i``'s row of ``aux`` if ``with_item``)."""
    s, logit_p, const_v = params[0], params[1], params[2]
    V = stats.shape[1] - 2
    const = stats[c, 0]
    A = stats[c, 1]
    if with_item:
        const += aux[i, 0]
        A += aux[i, 1]
    one_plus = 1.0 + s * A
    h = logit_p - 0.5 * math.log(one_plus)
    g = 0.5 * s / one_plus
    acc = 0.0
    prod = 1.0
    for v in range(V):
        b = stats[c, 2 + v] + aux[i, 2 + v] if with_item else stats[c, 2 + v]
        x = h + g * b * b
        if x > 30.0:
            acc += x + math.exp(-x)
        else:
            prod *= 1.0 + math.exp(x)
            if prod > _FLUSH:
                acc += math.log(prod)
                prod = 1.0
    return const + const_v + acc + math.log(prod)


@numba.njit(nogil=True, cache=True, inline="always")
def _pred_one(params, stats, cache, c, aux, i):
    return _lm(params, stats, c, aux, i, True) - cache[c, 0]


@numba.njit(PRED_SIG, **_NJIT)
def _pred(ctx, slots_addr, m, i, out_addr):
    pred_slots(_pred_one, ctx, slots_addr, m, i, out_addr)


@numba.njit(REMOVE_SIG, **_NJIT)
def _remove(ctx, c, i):
    params, stats, cache, aux = unpack(ctx)
    return replace_cached(cache, c, _lm(params, stats, c, aux, i, False))


@numba.njit(ADD_SIG, **_NJIT)
def _add(ctx, c, i, lp):
    params, stats, cache, aux = unpack(ctx)
    cache[c, 0] += lp


@numba.njit(INIT_SIG, **_NJIT)
def _init(ctx, c):
    params, stats, cache, aux = unpack(ctx)
    cache[c, 0] = _lm(params, stats, c, aux, 0, False)


def spike_slab_form(family, item_stats):
    """The :class:`PredictiveForm` of a :class:`~pymc_partition.SpikeSlabNormal` family."""
    X = np.asarray(item_stats, dtype=np.float64)
    V = X.shape[1] - 2
    p = float(family.p)
    params = np.array([float(family.sigma2_theta), math.log(p) - math.log1p(-p), V * math.log1p(-p)])
    return PredictiveForm("SpikeSlabNormal", params, X, 1, _pred, _remove, _add, _init)
