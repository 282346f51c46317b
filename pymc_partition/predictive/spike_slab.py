"""Predictive form of :class:`~pymc_partition.SpikeSlabNormal` (the paper's model).

A cluster's log marginal from summed ``const, A, B_v`` is

    lm = const + V log(1 - p) + sum_v log(1 + exp(x_v)),
    x_v = logit(p) - log(1 + s A)/2 + s B_v^2 / (2 (1 + s A)),   s = sigma2_theta,

the graph's ``logaddexp(log(1-p), log p + slab_v)`` rearranged. With
``log(1 + e^x) = max(x, 0) + log(1 + e^-|x|)`` the sum of logarithms is the logarithm of a product
of factors in (1, 2], so a cluster costs one exponential per variable (:func:`._exp.
exp_nonpositive`, which LLVM vectorises) and one logarithm per 512 variables instead of an
exponential and a logarithm per variable. The cache of a cluster is its log marginal; a candidate
evaluates ``lm(S + x_i)`` from the sums without building them.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from ._exp import exp_nonpositive
from ._shared import pred_slots, replace_cached, singles_from_empty
from ._types import unpack
from .form import PredictiveForm

__all__ = ["spike_slab_form", "clusters_log_marginal", "DENSITY_PARAMS"]

_NJIT = dict(nogil=True, cache=True)
_BLOCK = 512
_FAST = {"reassoc", "contract", "nsz"}  # reassociation lets LLVM vectorise the sums


@numba.njit(nogil=True, cache=True, inline="always", fastmath=_FAST)
def _sum_log1p_exp(h, g, b0, b1, w):
    """``sum_v log(1 + e^x_v)`` with ``x_v = h + g (b0_v + w b1_v)^2``.

    A loop LLVM vectorises (the factors of the product lie in (1, 2]: no overflow for up to 1000 of them).
    """
    acc = 0.0
    prod = 1.0
    for v in range(b0.shape[0]):
        b = b0[v] + w * b1[v]
        x = h + g * b * b
        ax = abs(x)
        acc += 0.5 * (x + ax)  # max(x, 0)
        prod *= 1.0 + exp_nonpositive(-ax)
    return acc + math.log(prod)


@numba.njit(nogil=True, cache=True, fastmath=_FAST)
def _lm(params, stats, c, aux, i, w):
    """``lm`` of ``stats[c]`` plus ``w`` (1.0 or 0.0) times item ``i``'s row of ``aux``.

    Callers pass ``w`` and ``i`` as typed values, never as literal constants: numba compiles one
    specialisation per literal argument (``True``/``False``/``0`` would make three).
    """
    s, logit_p, const_v = params[0], params[1], params[2]
    V = stats.shape[1] - 2
    one_plus = 1.0 + s * (stats[c, 1] + w * aux[i, 1])
    h = logit_p - 0.5 * math.log(one_plus)
    g = 0.5 * s / one_plus
    b0, b1 = stats[c, 2:], aux[i, 2:]
    tot = stats[c, 0] + w * aux[i, 0] + const_v
    for start in range(0, V, _BLOCK):
        stop = min(V, start + _BLOCK)
        tot += _sum_log1p_exp(h, g, b0[start:stop], b1[start:stop], w)
    return tot


@numba.njit(nogil=True, cache=True, inline="always")
def _pred_one(params, stats, cache, c, aux, i):
    return _lm(params, stats, c, aux, i, 1.0) - cache[c, 0]


@numba.njit(**_NJIT)
def _pred(ctx, slots_addr, m, i, out_addr):
    pred_slots(_pred_one, ctx, slots_addr, m, i, out_addr)


@numba.njit(**_NJIT)
def _remove(ctx, c, i):
    params, stats, cache, aux = unpack(ctx)
    return replace_cached(cache, c, _lm(params, stats, c, aux, i, 0.0))


@numba.njit(**_NJIT)
def _add(ctx, c, i, lp):
    params, stats, cache, aux = unpack(ctx)
    cache[c, 0] += lp


@numba.njit(**_NJIT)
def _init(ctx, c):
    params, stats, cache, aux = unpack(ctx)
    cache[c, 0] = _lm(params, stats, c, aux, np.int64(0), 0.0)
    return cache[c, 0]


@numba.njit(**_NJIT)
def _singles(ctx, c, out):
    return singles_from_empty(_init, _pred_one, ctx, c, out)


#: the hyperparameters :func:`clusters_log_marginal` reads, in order (the others enter the statistics)
DENSITY_PARAMS = ("sigma2_theta", "p")


@numba.njit(nogil=True, cache=True, fastmath=_FAST)
def clusters_log_marginal(h, S):
    """``sum_c lm(S[c])`` at ``sigma2_theta = h[0]`` and ``p = h[1]``; ``-inf`` outside their domain.

    The likelihood's part of the hyperparameters' conditional density, evaluated many times per draw: the form's
    arithmetic (one exponential per variable) instead of the graph's ``logaddexp`` per variable.
    """
    s, p = h[0], h[1]
    if not (s > 0.0 and 0.0 < p < 1.0):
        return -np.inf
    logit_p = math.log(p) - math.log1p(-p)
    V = S.shape[1] - 2
    const_v = V * math.log1p(-p)
    tot = 0.0
    for c in range(S.shape[0]):  # _lm's arithmetic without an item (and no parameter vector to build per call)
        one_plus = 1.0 + s * S[c, 1]
        hc = logit_p - 0.5 * math.log(one_plus)
        g = 0.5 * s / one_plus
        b = S[c, 2:]
        lm = S[c, 0] + const_v
        for start in range(0, V, _BLOCK):
            stop = min(V, start + _BLOCK)
            lm += _sum_log1p_exp(hc, g, b[start:stop], b[start:stop], 0.0)
        tot += lm
    return tot


def _params(family, n_vars):
    """Return the form's ``params`` at ``family``'s hyperparameters, for ``n_vars`` variables."""
    p = float(family.p)
    return np.array([float(family.sigma2_theta), math.log(p) - math.log1p(-p), n_vars * math.log1p(-p)])


def spike_slab_form(family, item_stats):
    """Return the :class:`PredictiveForm` of a :class:`~pymc_partition.SpikeSlabNormal` family."""
    X = np.asarray(item_stats, dtype=np.float64)
    reparam = functools.partial(_params, n_vars=X.shape[1] - 2)
    return PredictiveForm(
        "SpikeSlabNormal", reparam(family), X, 1, _pred, _remove, _add, _init, reparam=reparam, singles=_singles
    )
