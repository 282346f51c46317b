"""Hand-written, family-specialised numba Gibbs sweeps: the baselines of ``bench_sweeps.py``.

What an expert writes for one model and nothing else: a Dirichlet-process mixture of
Normal--Inverse-Gamma (independent variables, scalar hyperparameters) or Normal--Inverse-Wishart
clusters, one row per item. Written independently of ``pymc_partition`` (no import of it): the
predictive is the Student-t (NIG) or multivariate Student-t (NIW) density written out, count-only
terms are tabulated, a NIW cluster keeps the Cholesky factor of its scale matrix and moves items
by rank-one update/downdate. The sweep visits the items in the package's order (blocks of 64
consecutive items in a fresh random order: see ``pymc_partition.engine.kernels.visiting_order``),
keeps a list of the occupied slots, and draws each item's cluster from its full conditional. No
PyMC, no pytensor, no calls through function pointers: numba inlines the family's functions.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from scipy.special import gammaln

__all__ = ["ReferenceSweep", "nig_reference", "niw_reference"]


# ----------------------------------------------------------------------------- shared skeleton
def _make_sweep(predictive, new, down, up):
    """A Gibbs sweep for one family from its four specialised functions."""

    @numba.njit(nogil=True)
    def sweep(y, z, counts, sums, cache, tab, active, pos, free, meta, order, logw, item_new,
              log_alpha):  # fmt: skip
        n = y.shape[0]
        # the package's visiting order: blocks of 64 consecutive items in random order
        n_blocks = (n + 63) // 64
        for b in range(n_blocks):
            order[b] = b
        np.random.shuffle(order[:n_blocks])
        for t in range(n_blocks * 64):
            i = order[t // 64] * 64 + t % 64
            if i >= n:
                continue
            k = z[i]
            counts[k] -= 1
            if counts[k] == 0:  # the item was alone: free its slot
                a = pos[k]
                last = active[meta[0] - 1]
                active[a] = last
                pos[last] = a
                meta[0] -= 1
                free[meta[1]] = k
                meta[1] += 1
            else:
                down(y, i, k, counts, sums, cache, tab)
            C = meta[0]
            mx = -np.inf
            for a in range(C):
                c = active[a]
                lw = math.log(counts[c]) + predictive(y, i, c, counts, cache, tab)
                logw[a] = lw
                mx = max(mx, lw)
            lw = log_alpha + item_new[i]
            logw[C] = lw
            mx = max(mx, lw)
            tot = 0.0
            for a in range(C + 1):
                logw[a] = math.exp(logw[a] - mx)
                tot += logw[a]
            u = np.random.random() * tot
            pick = C
            acc = 0.0
            for a in range(C + 1):
                acc += logw[a]
                if u < acc:
                    pick = a
                    break
            if pick == C:
                meta[1] -= 1
                c = free[meta[1]]
                active[meta[0]] = c
                pos[c] = meta[0]
                meta[0] += 1
                counts[c] = 1
                new(y, i, c, counts, sums, cache, tab)
            else:
                c = active[pick]
                counts[c] += 1
                up(y, i, c, counts, sums, cache, tab)
            z[i] = c

    return sweep


class ReferenceSweep:
    """State of a hand-written kernel started from ``labels``; :meth:`sweep` runs one sweep."""

    def __init__(self, sweep, y, labels, sums, cache, tab, item_new, log_alpha):
        n = y.shape[0]
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self._sweep, self.sums, self.cache, self.tab = sweep, sums, cache, tab
        self.item_new, self.log_alpha = item_new, float(log_alpha)
        self.z = np.asarray(labels, dtype=np.int64).copy()
        self.counts = np.bincount(self.z, minlength=n).astype(np.int64)
        occupied = np.flatnonzero(self.counts)
        self.active = np.zeros(n, np.int64)
        self.active[: occupied.size] = occupied
        self.pos = np.zeros(n, np.int64)
        self.pos[occupied] = np.arange(occupied.size)
        empty = np.flatnonzero(self.counts == 0)[::-1]
        self.free = np.zeros(n, np.int64)
        self.free[: empty.size] = empty
        self.meta = np.array([occupied.size, empty.size], np.int64)
        self.order = np.zeros(n, np.int64)
        self.logw = np.zeros(n + 1)

    def sweep(self):
        self._sweep(self.y, self.z, self.counts, self.sums, self.cache, self.tab, self.active,
                    self.pos, self.free, self.meta, self.order, self.logw, self.item_new,
                    self.log_alpha)  # fmt: skip

    @property
    def n_clusters(self):
        return int(self.meta[0])


# ----------------------------------------------------------------------------- NIG (scalar hyper)
# sums of a slot: [sum y (V), sum y^2 (V)]; cache: [K, alpha_n + 1/2, (mu_v, 1/scale_v) per v]
# tab: [mu0, kappa0, alpha0, beta0, then lgamma(alpha_n + 1/2) - lgamma(alpha_n) by n]
@numba.njit(nogil=True, inline="always")
def _nig_refresh(c, n, sums, cache, tab):
    V = sums.shape[1] // 2
    mu0, k0, a0, b0 = tab[0], tab[1], tab[2], tab[3]
    kap = k0 + n
    K = V * tab[4 + n]
    for v in range(V):
        mu = (k0 * mu0 + sums[c, v]) / kap
        beta = b0 + 0.5 * (sums[c, V + v] + k0 * mu0 * mu0 - kap * mu * mu)
        scale = 2.0 * beta * (kap + 1.0) / kap
        K -= 0.5 * math.log(math.pi * scale)
        cache[c, 2 + 2 * v] = mu
        cache[c, 3 + 2 * v] = 1.0 / scale
    cache[c, 0] = K
    cache[c, 1] = a0 + 0.5 * n + 0.5


@numba.njit(nogil=True, inline="always")
def _nig_predictive(y, i, c, counts, cache, tab):
    acc = 0.0
    for v in range(y.shape[1]):
        d = y[i, v] - cache[c, 2 + 2 * v]
        acc += math.log1p(d * d * cache[c, 3 + 2 * v])
    return cache[c, 0] - cache[c, 1] * acc


@numba.njit(nogil=True, inline="always")
def _nig_move(y, i, c, counts, sums, cache, tab, sign):
    V = y.shape[1]
    for v in range(V):
        sums[c, v] += sign * y[i, v]
        sums[c, V + v] += sign * y[i, v] * y[i, v]
    _nig_refresh(c, counts[c], sums, cache, tab)


@numba.njit(nogil=True, inline="always")
def _nig_new(y, i, c, counts, sums, cache, tab):
    V = y.shape[1]
    for v in range(V):
        sums[c, v] = y[i, v]
        sums[c, V + v] = y[i, v] * y[i, v]
    _nig_refresh(c, 1, sums, cache, tab)


@numba.njit(nogil=True, inline="always")
def _nig_down(y, i, c, counts, sums, cache, tab):
    _nig_move(y, i, c, counts, sums, cache, tab, -1.0)


@numba.njit(nogil=True, inline="always")
def _nig_up(y, i, c, counts, sums, cache, tab):
    _nig_move(y, i, c, counts, sums, cache, tab, 1.0)


_SWEEPS = {}


@numba.njit(nogil=True)
def _singletons(predictive, y, empty, tab):
    """Log marginal of each item alone: its predictive under the empty cluster (slot 0)."""
    zero = np.zeros(1, np.int64)
    out = np.empty(y.shape[0])
    for i in range(y.shape[0]):
        out[i] = predictive(y, i, 0, zero, empty, tab)
    return out


def _state(kind, predictive, y, labels, sums, cache, tab, empty, alpha_dp):
    item_new = _singletons(predictive, y, empty, tab)
    return ReferenceSweep(_SWEEPS[kind], y, labels, sums, cache, tab, item_new, math.log(alpha_dp))


def nig_reference(y, labels, mu0, kappa0, alpha0, beta0, alpha_dp):
    """Hand-written NIG sweep state (data ``y (n, V)``, one row per item)."""
    if "nig" not in _SWEEPS:
        _SWEEPS["nig"] = _make_sweep(_nig_predictive, _nig_new, _nig_down, _nig_up)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n, V = y.shape
    labels = np.asarray(labels, dtype=np.int64)
    a_n = alpha0 + 0.5 * np.arange(n + 1)
    tab = np.concatenate([[mu0, kappa0, alpha0, beta0], gammaln(a_n + 0.5) - gammaln(a_n)])
    sums = np.zeros((n, 2 * V))
    np.add.at(sums, labels, np.column_stack([y, y**2]))
    cache = np.zeros((n, 2 + 2 * V))
    counts = np.bincount(labels, minlength=n)
    for c in np.flatnonzero(counts):
        _nig_refresh(c, counts[c], sums, cache, tab)
    empty = np.zeros((2, 2 + 2 * V))
    _nig_refresh(0, 0, np.zeros((1, 2 * V)), empty, tab)
    return _state("nig", _nig_predictive, y, labels, sums, cache, tab, empty, alpha_dp)


# ----------------------------------------------------------------------------- NIW
# sums of a slot: [sum y (V)] (kept for reference only); cache: [log|Psi_n|, mu_n (V),
# L (V*V) lower Cholesky factor of Psi_n]; the last cache row is scratch.
# tab: [kappa0, nu0, mu0 (V), psi0 (V*V), then the count-only terms T[n]]
@numba.njit(nogil=True)
def _niw_factor(c, cache, V):
    """Cholesky factor, in place, of the matrix held in slot ``c``'s lower triangle."""
    off = 1 + V
    logdet = 0.0
    for j in range(V):
        s = cache[c, off + j * V + j]
        for k in range(j):
            s -= cache[c, off + j * V + k] ** 2
        ljj = math.sqrt(s)
        cache[c, off + j * V + j] = ljj
        logdet += 2.0 * math.log(ljj)
        for i in range(j + 1, V):
            s = cache[c, off + i * V + j]
            for k in range(j):
                s -= cache[c, off + i * V + k] * cache[c, off + j * V + k]
            cache[c, off + i * V + j] = s / ljj
    cache[c, 0] = logdet


@numba.njit(nogil=True, inline="always")
def _niw_predictive(y, i, c, counts, cache, tab):
    V = y.shape[1]
    n = counts[c]
    kap = tab[0] + n
    w = cache.shape[0] - 1
    off = 1 + V
    q = 0.0
    for a in range(V):
        t = y[i, a] - cache[c, 1 + a]
        for b in range(a):
            t -= cache[c, off + a * V + b] * cache[w, b]
        t /= cache[c, off + a * V + a]
        cache[w, a] = t
        q += t * t
    T = tab[2 + V + V * V + n]
    return T - 0.5 * cache[c, 0] - 0.5 * (tab[1] + n + 1.0) * math.log1p(kap / (kap + 1.0) * q)


@numba.njit(nogil=True, inline="always")
def _niw_change(y, i, c, counts, sums, cache, tab, sign):
    """Rank-one update (sign +1, ``counts[c]`` includes the item) or downdate (-1, it does not)."""
    V = y.shape[1]
    n_without = counts[c] - 1 if sign > 0 else counts[c]
    kap = tab[0] + n_without
    w = cache.shape[0] - 1
    off = 1 + V
    f = math.sqrt(kap / (kap + 1.0))
    for a in range(V):
        if sign > 0:
            r = y[i, a] - cache[c, 1 + a]  # deviation from the mean without the item
            cache[c, 1 + a] += r / (kap + 1.0)
        else:
            r = (y[i, a] - cache[c, 1 + a]) * (kap + 1.0) / kap
            cache[c, 1 + a] -= r / (kap + 1.0)
        cache[w, a] = f * r
        sums[c, a] += sign * y[i, a]
    prod = 1.0
    for k in range(V):
        lkk = cache[c, off + k * V + k]
        xk = cache[w, k]
        r = math.sqrt(lkk * lkk + sign * xk * xk)
        cc = r / lkk
        ss = xk / lkk
        prod *= cc
        cache[c, off + k * V + k] = r
        for j in range(k + 1, V):
            ljk = (cache[c, off + j * V + k] + sign * ss * cache[w, j]) / cc
            cache[c, off + j * V + k] = ljk
            cache[w, j] = cc * cache[w, j] - ss * ljk
    cache[c, 0] += 2.0 * math.log(prod)


@numba.njit(nogil=True, inline="always")
def _niw_down(y, i, c, counts, sums, cache, tab):
    _niw_change(y, i, c, counts, sums, cache, tab, -1.0)


@numba.njit(nogil=True, inline="always")
def _niw_up(y, i, c, counts, sums, cache, tab):
    _niw_change(y, i, c, counts, sums, cache, tab, 1.0)


@numba.njit(nogil=True, inline="always")
def _niw_new(y, i, c, counts, sums, cache, tab):
    """Slot ``c`` now holds item ``i`` alone."""
    V = y.shape[1]
    k0 = tab[0]
    kap = k0 + 1.0
    off = 1 + V
    for a in range(V):
        sums[c, a] = y[i, a]
        cache[c, 1 + a] = tab[2 + a] + (y[i, a] - tab[2 + a]) / kap
        for b in range(a + 1):
            cache[c, off + a * V + b] = tab[2 + V + a * V + b] + (
                (y[i, a] - tab[2 + a]) * (y[i, b] - tab[2 + b]) * k0 / kap
            )
    _niw_factor(c, cache, V)


def niw_reference(y, labels, mu0, kappa0, nu0, psi0, alpha_dp):
    """Hand-written NIW sweep state (data ``y (n, V)``, one row per item)."""
    if "niw" not in _SWEEPS:
        _SWEEPS["niw"] = _make_sweep(_niw_predictive, _niw_new, _niw_down, _niw_up)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n, V = y.shape
    labels = np.asarray(labels, dtype=np.int64)
    m = np.arange(n + 1, dtype=float)
    j = np.arange(1, V + 1)
    T = (
        -0.5 * V * math.log(math.pi)
        + np.sum(gammaln(0.5 * (nu0 + m + 1)[:, None] + (1 - j) / 2.0)
                 - gammaln(0.5 * (nu0 + m)[:, None] + (1 - j) / 2.0), axis=1)
        + 0.5 * V * (np.log(kappa0 + m) - np.log(kappa0 + m + 1))
    )  # fmt: skip
    mu0 = np.broadcast_to(np.asarray(mu0, float), (V,))
    psi0 = np.asarray(psi0, float)
    tab = np.concatenate([[kappa0, nu0], mu0, psi0.ravel(), T])
    sums = np.zeros((n, V))
    np.add.at(sums, labels, y)
    cache = np.zeros((n + 1, 1 + V + V * V))
    counts = np.bincount(labels, minlength=n)
    for c in np.flatnonzero(counts):
        rows = y[labels == c]
        kap = kappa0 + rows.shape[0]
        d = rows.sum(0) - rows.shape[0] * mu0
        dev = rows - mu0
        psi = psi0 + dev.T @ dev - np.outer(d, d) / kap
        cache[c, 1 : 1 + V] = mu0 + d / kap
        cache[c, 1 + V :] = psi.ravel()
        _niw_factor(c, cache, V)
    empty = np.zeros((2, 1 + V + V * V))
    empty[0, 1 : 1 + V] = mu0
    empty[0, 1 + V :] = psi0.ravel()
    _niw_factor(0, empty, V)
    return _state("niw", _niw_predictive, y, labels, sums, cache, tab, empty, alpha_dp)
