"""Predictive form of :class:`~pymc_partition.NormalInverseWishart` (items with one row each).

For a cluster of ``n`` rows with ``kappa = kappa0 + n``, ``nu = nu0 + n``, mean ``mu_n`` and scale
``Psi_n``, adding one row ``y`` gives ``Psi_{n+1} = Psi_n + rho r r^T`` with ``r = y - mu_n`` and
``rho = kappa / (kappa + 1)``, so (matrix determinant lemma)

    lm(S + y) - lm(S) = T[n] - log|Psi_n| / 2 - (nu + 1)/2 log(1 + rho r^T Psi_n^{-1} r),

where ``T[n]`` holds the terms that depend on ``n`` only (multivariate gamma functions, the
``kappa`` ratio, ``pi``), tabulated once. A cluster caches the Cholesky factor ``L`` of ``Psi_n``:
a candidate costs one triangular solve (``V^2/2`` multiply-adds) and one logarithm, and moving an
item is a rank-one Cholesky update or downdate (``O(V^2)``) with the log-determinant carried along;
nothing is refactored per candidate. The factor is rebuilt from the summed statistics every
``REFRESH`` rank-one changes (and whenever a downdate loses positive definiteness), so rounding
cannot accumulate.

Items with several rows (replicates) would need a rank-``r`` change: the form declines them and the
samplers use the compiled graph.

Cache of a cluster: ``[base, (nu+1)/2, rho, log|Psi_n|, updates since rebuild, mu_n (V),
1/diag(L) (V), L (V*V, row-major lower triangle)]``. The log marginal itself is
``M[n] - (nu0 + n)/2 log|Psi_n|`` with ``M`` tabulated too.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from .._special import log_rising
from ..priors._ops import NUMPY
from ._shared import pred_slots, singles_from_empty
from ._types import unpack
from .form import PredictiveForm

__all__ = ["normal_inverse_wishart_form", "REFRESH"]

_NJIT = dict(nogil=True, cache=True)
# params: [V, kappa0, nu0, refresh, N + 1, mu0 (V), psi0 (V*V), T (N + 1), M (N + 1)]
_HEAD = 5
_MU = 5  # cache offsets
REFRESH = 32  #: rank-one changes of a cluster's factor between rebuilds from its statistics


@numba.njit(nogil=True, cache=True, inline="always")
def _set_scalars(params, cache, c, n, logdet):
    V = int(params[0])
    kap = params[1] + n
    cache[c, 0] = params[_HEAD + V + V * V + int(n + 0.5)] - 0.5 * logdet
    cache[c, 1] = 0.5 * (params[2] + n + 1.0)
    cache[c, 2] = kap / (kap + 1.0)
    cache[c, 3] = logdet


@numba.njit(**_NJIT)
def _init(ctx, c):
    params, stats, cache, aux = unpack(ctx)
    V = int(params[0])
    n = stats[c, 0]
    kap = params[1] + n
    iD = _MU + V
    iL = _MU + 2 * V
    for a in range(V):
        cache[c, _MU + a] = params[_HEAD + a] + (stats[c, 1 + a] - n * params[_HEAD + a]) / kap
    # Psi_n = Psi0 + Q - d d^T / kappa (lower triangle), then its Cholesky factor in place
    for a in range(V):
        m_a = params[_HEAD + a]
        s_a = stats[c, 1 + a]
        d_a = s_a - n * m_a
        for b in range(a + 1):
            m_b = params[_HEAD + b]
            s_b = stats[c, 1 + b]
            q = stats[c, 1 + V + a * V + b] - m_a * s_b - s_a * m_b + n * m_a * m_b
            cache[c, iL + a * V + b] = params[_HEAD + V + a * V + b] + q - d_a * (s_b - n * m_b) / kap
    logdet = 0.0
    for j in range(V):
        s = cache[c, iL + j * V + j]
        for k in range(j):
            s -= cache[c, iL + j * V + k] ** 2
        if not s > 0.0:  # not positive definite to working precision (the graph gives NaN too)
            logdet = np.nan
            s = np.nan
        ljj = math.sqrt(s)
        cache[c, iL + j * V + j] = ljj
        cache[c, iD + j] = 1.0 / ljj
        logdet += 2.0 * math.log(ljj)
        for i in range(j + 1, V):
            s = cache[c, iL + i * V + j]
            for k in range(j):
                s -= cache[c, iL + i * V + k] * cache[c, iL + j * V + k]
            cache[c, iL + i * V + j] = s / ljj
    _set_scalars(params, cache, c, n, logdet)
    cache[c, 4] = 0.0
    nt = int(params[4])
    return params[_HEAD + V + V * V + nt + int(n + 0.5)] - 0.5 * (params[2] + n) * logdet


@numba.njit(nogil=True, cache=True, inline="always")
def _pred_one(params, stats, cache, c, aux, i):
    V = int(params[0])
    iD = _MU + V
    iL = _MU + 2 * V
    w = cache.shape[0] - 1  # scratch row holds L^{-1} r
    q = 0.0
    for a in range(V):
        t = aux[i, a] - cache[c, _MU + a]
        for b in range(a):
            t -= cache[c, iL + a * V + b] * cache[w, b]
        t *= cache[c, iD + a]
        cache[w, a] = t
        q += t * t
    return cache[c, 0] - cache[c, 1] * math.log1p(cache[c, 2] * q)


@numba.njit(**_NJIT)
def _pred(ctx, slots_addr, m, i, out_addr):
    pred_slots(_pred_one, ctx, slots_addr, m, i, out_addr)


@numba.njit(nogil=True, cache=True)
def _rank_one(cache, c, V, w, sign):
    """``L L^T + sign * x x^T`` in place (``x`` in scratch row ``w``, destroyed).

    Returns ``log(det ratio)``, or NaN if a downdate loses positive definiteness.
    """
    iD = _MU + V
    iL = _MU + 2 * V
    prod = 1.0
    for k in range(V):
        lkk = cache[c, iL + k * V + k]
        xk = cache[w, k]
        r2 = lkk * lkk + sign * xk * xk
        if not r2 > 1e-12 * lkk * lkk:
            return np.nan
        r = math.sqrt(r2)
        cc = r / lkk
        ss = xk / lkk
        prod *= cc * cc
        cache[c, iL + k * V + k] = r
        cache[c, iD + k] = 1.0 / r
        for j in range(k + 1, V):
            ljk = (cache[c, iL + j * V + k] + sign * ss * cache[w, j]) / cc
            cache[c, iL + j * V + k] = ljk
            cache[w, j] = cc * cache[w, j] - ss * ljk
    return math.log(prod)


@numba.njit(**_NJIT)
def _add(ctx, c, i, lp):
    params, stats, cache, aux = unpack(ctx)
    V = int(params[0])
    n = stats[c, 0] - 1.0  # rows before the item joined
    if cache[c, 4] + 1.0 >= params[3]:
        _init(ctx, c)
        return
    kap = params[1] + n
    w = cache.shape[0] - 1
    scale = math.sqrt(kap / (kap + 1.0))
    for a in range(V):
        r = aux[i, a] - cache[c, _MU + a]
        cache[w, a] = scale * r
        cache[c, _MU + a] += r / (kap + 1.0)
    dl = _rank_one(cache, c, V, w, 1.0)
    _set_scalars(params, cache, c, n + 1.0, cache[c, 3] + dl)
    cache[c, 4] += 1.0


@numba.njit(**_NJIT)
def _remove(ctx, c, i):
    params, stats, cache, aux = unpack(ctx)
    V = int(params[0])
    n = stats[c, 0]  # rows left
    if cache[c, 4] + 1.0 < params[3]:
        kap = params[1] + n
        w = cache.shape[0] - 1
        scale = math.sqrt(kap / (kap + 1.0))
        for a in range(V):  # r = y - mu_n from the mean with the item, mu_{n+1}
            cache[w, a] = scale * (aux[i, a] - cache[c, _MU + a]) * (kap + 1.0) / kap
        logdet_with = cache[c, 3]
        dl = _rank_one(cache, c, V, w, -1.0)
        if dl == dl:  # not NaN
            for a in range(V):
                cache[c, _MU + a] = ((kap + 1.0) * cache[c, _MU + a] - aux[i, a]) / kap
            _set_scalars(params, cache, c, n, logdet_with + dl)
            cache[c, 4] += 1.0
            return cache[c, 0] + cache[c, 1] * dl
    _init(ctx, c)
    return _pred_one(params, stats, cache, c, aux, i)


def normal_inverse_wishart_form(family, item_stats):
    """Return the :class:`PredictiveForm` of a :class:`~pymc_partition.NormalInverseWishart` family.

    Or ``None`` when some item has several rows.
    """
    X = np.asarray(item_stats, dtype=np.float64)
    V = int(family.n_vars)
    if X.shape[1] != 1 + V + V * V or not np.all(X[:, 0] == 1.0):
        return None
    reparam = functools.partial(_params, n_vars=V, n_items=int(X.shape[0]))
    aux = np.ascontiguousarray(X[:, 1 : 1 + V])
    return PredictiveForm(
        f"NormalInverseWishart(V={V})", reparam(family), aux, _MU + 2 * V + V * V,
        _pred, _remove, _add, _init, reparam=reparam,
        singles=_singles,
    )  # fmt: skip


@numba.njit(**_NJIT)
def _singles(ctx, c, out):
    return singles_from_empty(_init, _pred_one, ctx, c, out)


def _params(family, n_vars, n_items):
    """Return the form's ``params`` at ``family``'s hyperparameters (``n_vars`` variables, ``n_items`` items).

    At new hyperparameters on the same statistics only this vector changes.
    """
    V = n_vars
    k0, nu0 = float(family.kappa0), float(family.nu0)
    n = np.arange(n_items + 1, dtype=float)
    j = np.arange(1, V + 1)
    # ratios of multivariate gamma functions as log rising factorials: exact for any nu0
    half = 0.5 * (nu0 + n)[:, None] + (1 - j) / 2.0
    log_gamma_ratio = np.sum(log_rising(half, 0.5, NUMPY), axis=1)
    T = -0.5 * V * math.log(math.pi) + log_gamma_ratio - 0.5 * V * np.log1p(1.0 / (k0 + n))
    # the log marginal is M[n] - (nu0 + n)/2 log|Psi_n|
    M = (
        -0.5 * n * V * math.log(math.pi)
        + np.sum(log_rising(0.5 * nu0 + (1 - j) / 2.0, 0.5 * n[:, None], NUMPY), axis=1)
        + 0.5 * nu0 * family._logdet_psi0
        - 0.5 * V * np.log1p(n / k0)
    )  # fmt: skip
    return np.concatenate([[V, k0, nu0, REFRESH, n.shape[0]], family.mu0 - family.centre, family.psi0.ravel(), T, M])
