"""Numba kernels of the exact posterior (see :mod:`pymc_partition.exact`).

Subsets of items are bit masks (item ``i`` is bit ``i``); ``w[mask]`` is the log weight of a block
(``log_h[|B|] + log marginal(B)``, with ``w[0] = 0``). All kernels only read ``w`` and the prior's
``log_g`` table, so they know nothing about families or priors.
"""

from __future__ import annotations

import types

import numba
import numpy as np
from numba import njit, prange

NEG_INF = -np.inf


# ----------------------------------------------------------------------------- sum-product DP
_SENTINEL = -(1 << 40)  # binary exponent of a zero weight
_N_POW2 = 1100  # 2**-1100 underflows to 0 in double precision


@njit(cache=True)
def _split_exp(w):
    """``exp(w[B]) = m[B] * 2**e[B]`` with ``m`` in [1, 2): weights far outside the double range."""
    N = w.shape[0]
    m = np.empty(N)
    e = np.empty(N, dtype=np.int64)
    inv_ln2 = 1.0 / np.log(2.0)
    for B in range(N):
        if w[B] == NEG_INF:
            m[B] = 0.0
            e[B] = _SENTINEL
        else:
            x = w[B] * inv_ln2
            k = np.int64(np.floor(x))
            m[B] = np.exp((x - k) * np.log(2.0))
            e[B] = k
    return m, e


@njit(parallel=True, cache=True)
def partition_function_dp(w, pc, order, level_start, n):
    """Weights of partitions of every subset, split by the number of blocks.

    ``f[S][C] = 2**E[S] * F[S, C]`` is the sum over partitions of ``S`` into ``C`` blocks of
    ``prod exp(w[B])``, by recursion on the block holding the lowest item of ``S``
    (O(3^n * n)). Each row keeps its own binary exponent ``E[S]`` and a mantissa row with
    maximum in [1, 2), so nothing overflows whatever the data; the exponent of every term is an
    integer sum, so the inner loop needs no ``exp`` (a table of powers of two) and a first cheap
    pass over the blocks finds the largest exponent. Terms more than ~1100 binary orders below
    the largest one of their subset are dropped (far below double precision of the sum).

    Subsets are processed by increasing size (``order``/``level_start``); subsets of one size
    only read smaller ones, so each level is a parallel loop.
    """
    N = 1 << n
    mB, eB = _split_exp(w)
    pow2 = np.empty(_N_POW2)
    for i in range(_N_POW2):
        pow2[i] = 2.0 ** (-i)
    F = np.zeros((N, n + 1))
    E = np.empty(N, dtype=np.int64)
    F[0, 0] = 1.0
    E[0] = 0
    for lev in range(1, n + 1):
        for idx in prange(level_start[lev], level_start[lev + 1]):
            S = order[idx]
            low = S & -S
            rest = S ^ low
            emax = _SENTINEL
            sub = rest
            while True:
                ex = eB[sub | low] + E[rest ^ sub]
                if ex > emax:
                    emax = ex
                if sub == 0:
                    break
                sub = (sub - 1) & rest
            sub = rest
            while True:
                B = sub | low
                T = rest ^ sub
                d = emax - eB[B] - E[T]
                if d < _N_POW2:
                    coef = mB[B] * pow2[d]
                    if T == 0:
                        F[S, 1] += coef
                    else:
                        for c in range(1, pc[T] + 1):
                            F[S, c + 1] += coef * F[T, c]
                if sub == 0:
                    break
                sub = (sub - 1) & rest
            # renormalize the mantissa row to a maximum in [1, 2)
            mx = 0.0
            for c in range(1, lev + 1):
                if F[S, c] > mx:
                    mx = F[S, c]
            if mx > 0.0:
                k = np.int64(np.floor(np.log2(mx)))
                scale = 2.0 ** (-k)
                for c in range(1, lev + 1):
                    F[S, c] *= scale
                E[S] = emax + k
            else:
                E[S] = _SENTINEL
    return E, F


def _serial(kernel):
    """Compile the same kernel without ``parallel=True``, under its own name.

    Under its own name it has its own numba cache entry; ``prange`` runs as ``range``. Parallel compilation costs about
    twice as long, which small problems, run on one thread anyway, should not pay.
    """
    f = kernel.py_func
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__ + "_serial", f.__defaults__,
                           f.__closure__)  # fmt: skip
    g.__qualname__ = f.__qualname__ + "_serial"
    g.__doc__ = f"Serial compilation of :func:`{f.__name__}`."
    return njit(cache=True)(g)


partition_function_dp_serial = _serial(partition_function_dp)


@njit(cache=True)
def log_scales(E):
    """Natural-log row scales ``E * log 2`` (``-inf`` for all-zero rows)."""
    out = np.empty(E.shape[0])
    ln2 = np.log(2.0)
    for i in range(E.shape[0]):
        out[i] = NEG_INF if E[i] <= _SENTINEL // 2 else E[i] * ln2
    return out


@njit(cache=True)
def _log_weighted_rows(s, F, eg, gmax, shift):
    """``log sum_C exp(log_g[C + shift]) f[S][C]`` for every subset ``S`` (``eg = exp(log_g - gmax)``)."""
    N, m = F.shape
    out = np.empty(N)
    for S in range(N):
        tot = 0.0
        for c in range(m):
            if c + shift < eg.shape[0]:
                tot += eg[c + shift] * F[S, c]
        if tot > 0.0 and s[S] > NEG_INF:
            out[S] = s[S] + gmax + np.log(tot)
        else:
            out[S] = NEG_INF
    return out


def block_probabilities(w, log_rest, log_z, n):
    """Return the block probabilities ``u[B] = P(B is a block | y)``.

    ``u[B] = exp(w[B] + log_rest[B^c] - log_z)``; ``u[0] = 0`` (numpy: one vectorised pass, nothing to compile).
    """
    N = 1 << n
    t = w + log_rest[(N - 1) ^ np.arange(N)]
    with np.errstate(under="ignore"):
        u = np.where(t > NEG_INF, np.exp(t - log_z), 0.0)
    u[0] = 0.0
    return u


@njit(cache=True)
def superset_sums(u, n):
    """Zeta transform over supersets, in place: ``u[M] <- sum_{B >= M} u[B]``."""
    N = 1 << n
    for i in range(n):
        bit = 1 << i
        for M in range(N):
            if not (M & bit):
                u[M] += u[M | bit]
    return u


# ----------------------------------------------------------------------------- max-product DP
@njit(parallel=True, cache=True)
def max_partition_dp(w, pc, order, level_start, n):
    """``M[S, C]``: best log weight of a partition of ``S`` into ``C`` blocks.

    The same recursion as :func:`partition_function_dp` with max for sum; no scaling needed in log space.
    """
    N = 1 << n
    M = np.full((N, n + 1), NEG_INF)
    M[0, 0] = 0.0
    for lev in range(1, n + 1):
        for idx in prange(level_start[lev], level_start[lev + 1]):
            S = order[idx]
            low = S & -S
            rest = S ^ low
            sub = rest
            while True:
                B = sub | low
                T = rest ^ sub
                wb = w[B]
                if T == 0:
                    if wb > M[S, 1]:
                        M[S, 1] = wb
                else:
                    for c in range(1, pc[T] + 1):
                        v = wb + M[T, c]
                        if v > M[S, c + 1]:
                            M[S, c + 1] = v
                if sub == 0:
                    break
                sub = (sub - 1) & rest
    return M


max_partition_dp_serial = _serial(max_partition_dp)


@njit(cache=True)
def trace_max_partition(w, M, C, n):
    """Canonical labels of an optimal partition of all items into ``C`` blocks, from ``M``.

    At each step the block holding the lowest remaining item is one whose score reproduces
    ``M[S, C]`` exactly (the same floating-point sum as in :func:`max_partition_dp`).
    """
    labels = np.empty(n, dtype=np.int64)
    S = (1 << n) - 1
    lab = 0
    while S != 0:
        low = S & -S
        rest = S ^ low
        target = M[S, C]
        sub = rest
        best = -1
        while True:
            B = sub | low
            T = rest ^ sub
            v = w[B] if T == 0 else w[B] + M[T, C - 1]
            if (T == 0) == (C == 1) and v == target:
                best = B
                break
            if sub == 0:
                break
            sub = (sub - 1) & rest
        if best < 0:  # cannot happen: the optimum was built from one of these terms
            best = S
        for i in range(n):
            if (best >> i) & 1:
                labels[i] = lab
        S ^= best
        C -= 1
        lab += 1
    return labels


# ----------------------------------------------------------------------------- enumeration
@njit(inline="always")
def _heap_push(hs, hk, size, k, val, key):
    """Bounded min-heap of the ``k`` best (score, key) pairs; returns the new size."""
    if size < k:
        i = size
        size += 1
        while i > 0:
            p = (i - 1) >> 1
            if hs[p] <= val:
                break
            hs[i] = hs[p]
            hk[i] = hk[p]
            i = p
        hs[i] = val
        hk[i] = key
        return size
    # full: replace the root (the k-th best) and sift down
    i = 0
    while True:
        l = 2 * i + 1
        if l >= size:
            break
        r = l + 1
        c = r if (r < size and hs[r] < hs[l]) else l
        if hs[c] >= val:
            break
        hs[i] = hs[c]
        hk[i] = hk[c]
        i = c
    hs[i] = val
    hk[i] = key
    return size


@njit(cache=True)
def _enumerate_subtree(w, log_g, n, bits, prefix, hs, hk, size, k):
    """Depth-first enumeration of all completions of one canonical prefix.

    The score (log unnormalized posterior) is updated in O(1) per node: putting item ``d`` in a
    block with mask ``m`` adds ``w[m | bit] - w[m]`` (a new block is ``m = 0``, ``w[0] = 0``);
    ``log_g[C]`` is added at the leaves. The last item is an unrolled inner loop, since leaves
    outnumber inner nodes. Returns ``(heap size, number of leaves)``.
    """
    p = prefix.shape[0]
    bm = np.zeros(n + 1, dtype=np.int64)
    choice = np.zeros(n + 1, dtype=np.int64)
    nb = np.zeros(n + 1, dtype=np.int64)
    sc = np.zeros(n + 1)
    keys = np.zeros(n + 1, dtype=np.uint64)
    C = 0
    score = 0.0
    key = np.uint64(0)
    for i in range(p):
        c = prefix[i]
        bit = np.int64(1) << i
        m = bm[c]
        score += w[m | bit] - w[m]
        bm[c] = m | bit
        if c == C:
            C += 1
        key |= np.uint64(c) << np.uint64(bits * i)
    thr = hs[0] if size == k else NEG_INF
    if p == n:
        val = score + log_g[C]
        if val > thr:
            size = _heap_push(hs, hk, size, k, val, key)
        return size, 1
    last = n - 1
    lbit = np.int64(1) << last
    lshift = np.uint64(bits * last)
    n_leaves = 0
    d = p
    sc[d] = score
    nb[d] = C
    keys[d] = key
    choice[d] = 0
    while True:
        if d == last:
            base = sc[d]
            Cd = nb[d]
            gC = log_g[Cd]
            kd = keys[d]
            for c in range(Cd):
                m = bm[c]
                val = base + w[m | lbit] - w[m] + gC
                if val > thr:
                    size = _heap_push(hs, hk, size, k, val, kd | (np.uint64(c) << lshift))
                    if size == k:
                        thr = hs[0]
            val = base + w[lbit] + log_g[Cd + 1]
            if val > thr:
                size = _heap_push(hs, hk, size, k, val, kd | (np.uint64(Cd) << lshift))
                if size == k:
                    thr = hs[0]
            n_leaves += Cd + 1
            # back to the previous item: undo it and move to its next choice
            d -= 1
            if d < p:
                break
            bm[choice[d]] ^= np.int64(1) << d
            choice[d] += 1
            continue
        c = choice[d]
        if c > nb[d]:
            d -= 1
            if d < p:
                break
            bm[choice[d]] ^= np.int64(1) << d
            choice[d] += 1
            continue
        bit = np.int64(1) << d
        m = bm[c]
        sc[d + 1] = sc[d] + w[m | bit] - w[m]
        bm[c] = m | bit
        nb[d + 1] = nb[d] + (1 if c == nb[d] else 0)
        keys[d + 1] = keys[d] | (np.uint64(c) << np.uint64(bits * d))
        d += 1
        choice[d] = 0
    return size, n_leaves


@njit(parallel=True, cache=True)
def enumerate_prefixes(w, log_g, n, bits, prefixes, start, stop, hs, hk, sizes, leaves):
    """Enumerate the subtrees below ``prefixes[start:stop]``, dynamically shared by the threads.

    Each thread keeps its own heap ``hs[t], hk[t]`` (merged by the caller).
    """
    k = hs.shape[1]
    for j in prange(start, stop):
        t = numba.get_thread_id()
        size, nl = _enumerate_subtree(w, log_g, n, bits, prefixes[j], hs[t], hk[t], sizes[t], k)
        sizes[t] = size
        leaves[t] += nl
