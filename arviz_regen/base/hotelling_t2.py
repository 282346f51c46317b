"""Hotelling's T² of the paper (SPEC section 4, steps 3-5) and its χ² p-value: the array core.

Numerics. With h_i(x) = 1{x = S_i} (visit counts, exact integers) and D = diag(q), g = D⁻¹h, so
T² = R (h̄ − c q)' Σ̂_h⁻¹ (h̄ − c q) with c the GLS weight: the same number, computed on counts.
Σ̂ is scaled to a correlation matrix and factored by a pivoted Cholesky; ``c`` estimates
π_max / Z, so log Ẑ = max logp − log c comes for free.

Singular Σ̂ (documented rule). Σ_r (s_r − N_r ḡ) = 0, so Σ̂ has rank ≤ R − 1, and a top state
that a chain never visits has a zero row. The pivoted Cholesky keeps a maximal set of states
whose tour sums are linearly independent (greedily, largest residual variance first, relative
tolerance ``tol`` on the correlation scale; states never visited are dropped first). The
statistic is the Hotelling-RS statistic of the kept states, with df = (number kept) − 1. With
fewer than two kept states (e.g. fewer than three whole tours) there is no test: ``t2`` and
``p_value`` are NaN and ``df`` is 0.

Along the tours. The centred cross-product matrix is updated tour by tour (a Welford-type
re-centring, O(K²) per tour: no recomputation from scratch and no cancellation from expanding
Σ s s' − 2ḡ Σ N s' + ḡḡ' Σ N²), and the statistic can be evaluated after any number of tours
(the paper's look-ahead trace of Figure 2c).
"""

from __future__ import annotations

import numpy as np

from .lazy_jit import lazy_njit
from .lazy_jit import scipy_stats as stats

__all__ = ["t2_core", "DEFAULT_TOL"]

#: relative tolerance on residual variance (correlation scale) of the pivoted Cholesky
DEFAULT_TOL = 1e-10


@lazy_njit(cache=True)
def _statistic(M, sdiag, xbar, q, K, total, tol, kept):
    """T²/… of the leading K states from the centred cross-product matrix M = Σ e e'.

    Returns (t2, c, m): the statistic, the GLS level c (h̄ ≈ c q) and the number m of kept
    states; ``kept`` (length ≥ K) receives the kept mask.
    """
    d = np.zeros(K)
    for i in range(K):
        kept[i] = False
        # zero variance: exactly zero for an unvisited state; relative test against Σ s² for
        # states whose tour sums are exactly proportional to the tour lengths
        if M[i, i] > 1e-12 * sdiag[i] and M[i, i] > 0.0:
            d[i] = np.sqrt(M[i, i])
    # working residual matrix on the correlation scale
    G = np.zeros((K, K))
    for i in range(K):
        for j in range(K):
            if d[i] > 0.0 and d[j] > 0.0:
                G[i, j] = M[i, j] / (d[i] * d[j])
    # an exact unit diagonal: the first pivot is then the first state, not one picked by rounding
    # (when the states are linearly dependent, which one is dropped changes T²)
    for i in range(K):
        if d[i] > 0.0:
            G[i, i] = 1.0
    Lcol = np.zeros((K, K))  # Lcol[m, i]: m-th Cholesky column, indexed by state
    piv = np.empty(K, dtype=np.int64)
    chosen = np.zeros(K, dtype=np.bool_)
    m = 0
    for step in range(K):
        best = -1
        bestval = tol
        for j in range(K):
            if not chosen[j] and G[j, j] > bestval:
                best = j
                bestval = G[j, j]
        if best < 0:
            break
        piv[m] = best
        chosen[best] = True
        root = np.sqrt(G[best, best])
        for i in range(K):
            if not chosen[i]:
                Lcol[m, i] = G[i, best] / root
            else:
                Lcol[m, i] = 0.0
        Lcol[m, best] = root
        for i in range(K):
            if chosen[i]:
                continue
            li = Lcol[m, i]
            for j in range(K):
                if not chosen[j]:
                    G[i, j] -= li * Lcol[m, j]
        m += 1
    if m < 2:
        for a in range(m):
            kept[piv[a]] = True
        return np.nan, np.nan, m
    # forward solves L a = x_S / d_S, L b = q_S / d_S in pivot order
    a = np.zeros(m)
    b = np.zeros(m)
    for r in range(m):
        i = piv[r]
        ua = xbar[i] / d[i]
        ub = q[i] / d[i]
        for c in range(r):
            ua -= Lcol[c, i] * a[c]
            ub -= Lcol[c, i] * b[c]
        a[r] = ua / Lcol[r, i]
        b[r] = ub / Lcol[r, i]
        kept[i] = True
    aa = 0.0
    ab = 0.0
    bb = 0.0
    for r in range(m):
        aa += a[r] * a[r]
        ab += a[r] * b[r]
        bb += b[r] * b[r]
    # T² = R (x − c q)' Σ̂⁻¹ (x − c q) with Σ̂ = M R / (Σ N)²  =>  T² = (Σ N)² (a·a − (a·b)²/(b·b))
    t2 = total * total * max(aa - ab * ab / bb, 0.0)
    return t2, ab / bb, m


@lazy_njit(cache=True)
def _hotelling_kernel(counts, n, q, ks, eval_r, tol):
    """Hotelling-RS after the first ``eval_r[e]`` tours, for each K in ``ks``.

    counts : (R, Kmax) visit counts of the top states per tour; n : (R,) tour lengths;
    q : (Kmax,) relative probabilities; eval_r : sorted numbers of tours (1 … R).
    """
    R, Kmax = counts.shape
    nK = ks.shape[0]
    E = eval_r.shape[0]
    t2 = np.full((nK, E), np.nan)
    cc = np.full((nK, E), np.nan)
    kept = np.zeros((nK, E, Kmax), dtype=np.bool_)
    M = np.zeros((Kmax, Kmax))
    v = np.zeros(Kmax)  # Σ N_i e_i with e_i = s_i − N_i ḡ
    ssum = np.zeros(Kmax)
    sdiag = np.zeros(Kmax)  # Σ s_i², the raw scale of M's diagonal
    gbar = np.zeros(Kmax)
    delta = np.zeros(Kmax)
    e_new = np.zeros(Kmax)
    sn = 0.0
    snn = 0.0
    e = 0
    for r in range(R):
        nr = n[r]
        sn += nr
        for i in range(Kmax):
            ssum[i] += counts[r, i]
            sdiag[i] += counts[r, i] * counts[r, i]
            g_new = ssum[i] / sn
            delta[i] = g_new - gbar[i]
            gbar[i] = g_new
        # re-centre the old tours at the new mean, then add the new tour
        for i in range(Kmax):
            for j in range(Kmax):
                M[i, j] += -delta[i] * v[j] - v[i] * delta[j] + snn * delta[i] * delta[j]
        for i in range(Kmax):
            v[i] -= snn * delta[i]
            e_new[i] = counts[r, i] - nr * gbar[i]
        for i in range(Kmax):
            for j in range(Kmax):
                M[i, j] += e_new[i] * e_new[j]
            v[i] += nr * e_new[i]
        snn += nr * nr
        while e < E and eval_r[e] == r + 1:
            for kk in range(nK):
                K = ks[kk]
                res = _statistic(M, sdiag, gbar, q, K, sn, tol, kept[kk, e])
                t2[kk, e] = res[0]
                cc[kk, e] = res[1]
            e += 1
    return t2, cc, kept


def _statistic_numpy(M, sdiag, xbar, q, K, total, tol):
    """:func:`_statistic` in numpy, for one evaluation (no compilation on a first call).

    Returns (t2, c, kept) with ``kept`` a boolean mask of length K; the same pivoted Cholesky,
    step for step.
    """
    Md = np.diagonal(M)[:K]
    ok = (Md > 1e-12 * sdiag[:K]) & (Md > 0.0)
    d = np.where(ok, np.sqrt(np.where(ok, Md, 1.0)), 0.0)
    both = ok[:, None] & ok[None, :]
    dd = np.where(both, np.outer(d, d), 1.0)
    G = np.where(both, M[:K, :K] / dd, 0.0)
    G[np.diag_indices(K)] = np.where(ok, 1.0, 0.0)  # as the compiled loop: an exact unit diagonal
    L = np.zeros((K, K))
    piv = []
    chosen = np.zeros(K, dtype=bool)
    for _ in range(K):
        diag = np.where(chosen, -np.inf, np.diagonal(G))
        best = int(np.argmax(diag))  # first of the largest, as the compiled loop
        if not diag[best] > tol:
            break
        root = np.sqrt(G[best, best])
        col = np.where(chosen, 0.0, G[:, best] / root)
        col[best] = root
        L[len(piv)] = col
        piv.append(best)
        chosen[best] = True
        free = ~chosen
        G[np.ix_(free, free)] -= np.outer(col[free], col[free])
    m = len(piv)
    kept = np.zeros(K, dtype=bool)
    kept[piv] = True
    if m < 2:
        return np.nan, np.nan, kept
    a = np.zeros(m)
    b = np.zeros(m)
    for r, i in enumerate(piv):
        a[r] = (xbar[i] / d[i] - L[:r, i] @ a[:r]) / L[r, i]
        b[r] = (q[i] / d[i] - L[:r, i] @ b[:r]) / L[r, i]
    aa, ab, bb = a @ a, a @ b, b @ b
    return total * total * max(aa - ab * ab / bb, 0.0), ab / bb, kept


def _t2_at_end(counts, n, q, ks, tol):
    """:func:`_hotelling_kernel` evaluated after all R tours only, in numpy (two-pass centring)."""
    R, Kmax = counts.shape
    nK = ks.shape[0]
    t2 = np.full((nK, 1), np.nan)
    cc = np.full((nK, 1), np.nan)
    kept = np.zeros((nK, 1, Kmax), dtype=bool)
    sn = n.sum()
    gbar = counts.sum(axis=0) / sn
    e = counts - n[:, None] * gbar
    M = e.T @ e
    sdiag = np.einsum("ri,ri->i", counts, counts)
    for kk, K in enumerate(ks):
        t2[kk, 0], cc[kk, 0], kept[kk, 0, :K] = _statistic_numpy(M, sdiag, gbar, q, int(K), sn, tol)
    return t2, cc, kept


def t2_core(counts, lengths, q, ks, eval_r=None, tol=DEFAULT_TOL):
    """Hotelling-RS T², its χ² p-value and log Ẑ after given numbers of whole tours.

    Parameters
    ----------
    counts : numpy.ndarray, shape (R, Kmax)
        Visits to the ranked top states per tour (rank 0: the regeneration state).
    lengths : numpy.ndarray, shape (R,)
    q : numpy.ndarray, shape (Kmax,)
        exp(logp_i − logp_1) of the ranked states.
    ks : array_like of int
        Numbers of states K ≤ Kmax.
    eval_r : array_like of int, optional
        Sorted numbers of tours (1 … R) after which to evaluate; default only after all R.

    Returns
    -------
    dict
        ``t2``, ``p_value``, ``df`` (int), ``log_c`` (log of the GLS level c: log Ẑ = logp_1 −
        log c), each (len(ks), E); ``kept`` (len(ks), E, Kmax) mask of the states used.
    """
    counts = np.ascontiguousarray(counts, dtype=float)
    lengths = np.ascontiguousarray(lengths, dtype=float)
    ks = np.asarray(ks, dtype=np.int64)
    R = lengths.size
    if eval_r is None:
        eval_r = np.array([R] if R else [], dtype=np.int64)
    eval_r = np.asarray(eval_r, dtype=np.int64)
    q = np.asarray(q, dtype=float)
    if eval_r.size == 1 and eval_r[0] == R and R > 0:  # the usual call: no kernel to compile
        t2, c, kept = _t2_at_end(counts, lengths, q, ks, tol)
    else:
        t2, c, kept = _hotelling_kernel(counts, lengths, q, ks, eval_r, tol)
    df = np.maximum(kept.sum(axis=-1).astype(np.int64) - 1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        t2 = np.where(df >= 1, t2, np.nan)
        p = np.where(df >= 1, stats.chi2.sf(t2, np.maximum(df, 1)), np.nan)
        log_c = np.where(df >= 1, np.log(c), np.nan)
    return {"t2": t2, "p_value": p, "df": df, "log_c": log_c, "kept": kept}
