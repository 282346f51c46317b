"""Renewal bootstrap of regeneration tours: the reference distribution of the default test.

Why. The chi-square limit of Hotelling-RS needs many tours *through every one of the K top
states*. A slowly mixing but correct chain visits its rarer top states in a handful of
excursions away from the regeneration state δ; Σ̂ is then estimated from a few numbers and T²
is far heavier-tailed than χ²_{K−1} (false alarms in most runs at K = 10). Whole tours, however,
are iid under convergence (that is what regeneration means), so the chain's own tours give the
sampling distribution of any statistic of them.

How. A pseudo-chain is built by drawing tours iid from the observed ones until its draw budget
is used up, as a chain observed for a fixed number of draws would be (a renewal process). Counts
of the top states over its whole tours give one bootstrap replicate of the statistic. The most
frequent tour type (in practice the one-draw tour δ → δ) is skipped over in geometric runs, so
the work per replicate is the number of *other* tours, not the number of tours.

With ``residual_start`` the pseudo-chain starts at a uniform position inside a length-biased
tour (a stationary start): the partial first tour and the unfinished last one are not whole
tours, exactly as the draws before τ_0 and after τ_R of a real chain. This is what the
all-chains agreement test needs, since the mass a chain puts on δ shows up there.
"""

from __future__ import annotations

import math

import numpy as np

from .lazy_jit import lazy_njit

__all__ = ["TourTypes", "tour_types", "renewal_sums", "permuted_sums", "pearson_statistic"]


class TourTypes:
    """Distinct tours of one or several chains: per-type counts, lengths and multiplicities.

    Attributes
    ----------
    counts : numpy.ndarray, shape (n_types, K)
        Visits to each of the K top states within a tour of that type.
    lengths : numpy.ndarray of int64, shape (n_types,)
    mult : numpy.ndarray of int64, shape (n_types,)
        How many observed tours are of that type.
    """

    __slots__ = ("counts", "lengths", "mult")

    def __init__(self, counts, lengths, mult):
        self.counts = counts
        self.lengths = lengths
        self.mult = mult

    @property
    def n_tours(self):
        return int(self.mult.sum())


def tour_types(counts, lengths):
    """Group tours with identical (counts, length) into types.

    Parameters
    ----------
    counts : array_like, shape (R, K)
        Per-tour visit counts of the top states.
    lengths : array_like, shape (R,)

    Returns
    -------
    TourTypes
    """
    counts = np.asarray(counts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if counts.shape[0] == 0:
        return TourTypes(np.zeros((0, counts.shape[1]), np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    key = np.concatenate([counts, lengths[:, None]], axis=1)
    # lexsort + run boundaries: much faster than np.unique(axis=0) on many short rows
    order = np.lexsort(key.T[::-1])
    srt = key[order]
    start = np.concatenate([[True], np.any(srt[1:] != srt[:-1], axis=1)])
    first = np.flatnonzero(start)
    mult = np.diff(np.append(first, srt.shape[0]))
    uniq = srt[first]
    return TourTypes(np.ascontiguousarray(uniq[:, :-1]), np.ascontiguousarray(uniq[:, -1]), mult.astype(np.int64))


@lazy_njit(cache=True)
def _draw(rng, cum, total):
    u = rng.random() * total
    lo = 0
    hi = cum.shape[0] - 1
    while lo < hi:  # first index with cum > u
        mid = (lo + hi) // 2
        if cum[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return lo


@lazy_njit(cache=True)
def _renewal_kernel(rng, counts, lengths, mult, budgets, residual_start, n_rep):
    U, K = counts.shape
    C = budgets.shape[0]
    out_counts = np.zeros((n_rep, C, K))
    out_len = np.zeros((n_rep, C))
    # the most frequent type is skipped over in geometric runs
    s = 0
    for u in range(U):
        if mult[u] > mult[s]:
            s = u
    total = 0.0
    for u in range(U):
        total += mult[u]
    p_s = mult[s] / total
    cum_other = np.zeros(U)  # cumulative weights of the other types (type s has weight 0)
    cum_biased = np.zeros(U)  # length-biased weights, for a stationary start
    acc = 0.0
    accb = 0.0
    for u in range(U):
        if u != s:
            acc += mult[u]
        cum_other[u] = acc
        accb += mult[u] * lengths[u]
        cum_biased[u] = accb
    n_s = lengths[s]
    for b in range(n_rep):
        for c in range(C):
            budget = budgets[c]
            pos = 0
            if residual_start:
                u0 = _draw(rng, cum_biased, accb)
                offset = rng.integers(0, lengths[u0])
                if offset == 0:  # the chain starts exactly at δ: the first tour is whole
                    if lengths[u0] <= budget:
                        pos = lengths[u0]
                        for k in range(K):
                            out_counts[b, c, k] += counts[u0, k]
                        out_len[b, c] += lengths[u0]
                    else:
                        continue
                else:
                    pos = lengths[u0] - offset
            while True:
                # a run of type-s tours before the next other tour: Geometric(1 − p_s) − 1 of them
                if p_s < 1.0:
                    g = rng.geometric(1.0 - p_s) - 1
                else:
                    g = (budget - pos) // n_s + 1
                room = (budget - pos) // n_s
                m = g if g < room else room
                if m > 0:
                    for k in range(K):
                        out_counts[b, c, k] += m * counts[s, k]
                    out_len[b, c] += m * n_s
                    pos += m * n_s
                if m < g or p_s >= 1.0:
                    break
                v = _draw(rng, cum_other, acc)
                if pos + lengths[v] > budget:
                    break
                for k in range(K):
                    out_counts[b, c, k] += counts[v, k]
                out_len[b, c] += lengths[v]
                pos += lengths[v]
    return out_counts, out_len


def renewal_sums(types, budgets, n_rep, seed, residual_start=False):
    """Whole-tour sums of pseudo-chains built from iid draws of the observed tours.

    Parameters
    ----------
    types : TourTypes
        The tours to draw from (one chain's, or all chains' pooled).
    budgets : array_like of int, shape (C,)
        Draws available to each pseudo-chain.
    n_rep : int
        Number of bootstrap replicates.
    seed : int
        Seed of the kernel's random stream (reproducible): a :class:`numpy.random.Generator` of
        it is passed to the kernel (no global numba seeding).
    residual_start : bool
        Start each pseudo-chain at a stationary position (see module notes).

    Returns
    -------
    counts : numpy.ndarray, shape (n_rep, C, K)
        Visits to the top states over the pseudo-chain's whole tours.
    lengths : numpy.ndarray, shape (n_rep, C)
        Draws covered by its whole tours.
    """
    budgets = np.ascontiguousarray(budgets, dtype=np.int64)
    if types.lengths.size == 0:
        K = types.counts.shape[1]
        return np.zeros((n_rep, budgets.size, K)), np.zeros((n_rep, budgets.size))
    return _renewal_kernel(
        np.random.default_rng(int(seed)),
        types.counts.astype(np.float64),
        types.lengths,
        types.mult,
        budgets,
        bool(residual_start),
        int(n_rep),
    )


@lazy_njit(cache=True)
def _binomial(rng, m, p):
    """Binomial(m, p) draw by inversion from the mode, alternating above and below it.

    O(standard deviation) steps, and much quicker to compile than numba's ``np.random.binomial``
    (the BTPE algorithm).
    """
    if p <= 0.0 or m == 0:
        return 0
    if p >= 1.0:
        return m
    k0 = min(int((m + 1.0) * p), m)
    r = p / (1.0 - p)
    p0 = math.exp(
        math.lgamma(m + 1.0) - math.lgamma(k0 + 1.0) - math.lgamma(m - k0 + 1.0)
        + k0 * math.log(p) + (m - k0) * math.log1p(-p)
    )  # fmt: skip
    u = rng.random() - p0
    up, pu = k0, p0
    down, pd = k0, p0
    while u >= 0.0 and (up < m or down > 0):
        if up < m:
            pu *= (m - up) / (up + 1.0) * r  # pmf(k + 1) / pmf(k)
            up += 1
            u -= pu
            if u < 0.0:
                return up
        if down > 0:
            pd *= down / ((m - down + 1.0) * r)
            down -= 1
            u -= pd
            if u < 0.0:
                return down
    return k0  # rounding left u ≥ 0 after the whole support (probability ~1e-13)


@lazy_njit(cache=True)
def _permutation_kernel(rng, counts, lengths, mult, n_tours, n_rep):
    U, K = counts.shape
    C = n_tours.shape[0]
    out_counts = np.zeros((n_rep, C, K))
    out_len = np.zeros((n_rep, C))
    room = np.empty(C, dtype=np.int64)
    n_small = 0
    for u in range(U):
        if mult[u] <= C:
            n_small += mult[u]
    owner = np.empty(n_small, dtype=np.int64)
    for b in range(n_rep):
        left = n_tours.sum()  # free places (an array sum: typed int64, not a literal)
        for c in range(C):
            room[c] = n_tours[c]
        # frequent types: a multivariate hypergeometric split over the chains' free places
        for u in range(U):
            m = mult[u]
            if m <= C:
                continue
            rest = left
            for c in range(C):
                if m == 0:
                    break
                if c == C - 1:
                    x = m
                else:
                    # hypergeometric split, drawn as a binomial kept within the places left:
                    # conservative by at most the finite-population factor of this type's share
                    # (the exact split makes the agreement test liberal; see permuted_sums)
                    x = _binomial(rng, m, room[c] / rest) if room[c] > 0 else 0
                    if x > room[c]:
                        x = room[c]
                    if x < m - (rest - room[c]):
                        x = m - (rest - room[c])
                rest -= room[c]
                if x > 0:
                    for k in range(K):
                        out_counts[b, c, k] += x * counts[u, k]
                    out_len[b, c] += x * lengths[u]
                    room[c] -= x
                    m -= x
            left -= mult[u]
        # rare types: the remaining places in random order, one tour each
        j = 0
        for c in range(C):
            for _ in range(room[c]):
                owner[j] = c
                j += 1
        rng.shuffle(owner)
        j = 0
        for u in range(U):
            if mult[u] > C:
                continue
            for _ in range(mult[u]):
                c = owner[j]
                j += 1
                for k in range(K):
                    out_counts[b, c, k] += counts[u, k]
                out_len[b, c] += lengths[u]
    return out_counts, out_len


def permuted_sums(types, n_tours, n_rep, seed):
    """Tour sums of the chains after randomly reassigning all tours to chains (each keeps its R_c).

    Under convergence the tours of all chains are exchangeable, so a test of agreement between
    chains calibrated on these reassignments is exact given the pooled tours. Tour types more
    frequent than the number of chains are split over the chains by a binomial kept within the
    free places instead of the exact hypergeometric (slightly wider, i.e. conservative). This
    is deliberate: the chains' tour counts are not fixed in advance (a chain that drew short
    tours has more of them), so exact permutations are not exact for the test, and with the
    exact split it rejected correct chains 7-12 % of the time at α = 0.05 in the excursion
    design of ``tests/arviz_regen/diagnostics/test_hotelling_excursions.py`` (0 % with the binomial).

    Parameters
    ----------
    types : TourTypes
        The pooled tours of all chains.
    n_tours : array_like of int, shape (C,)
        Whole tours of each chain (summing to ``types.n_tours``).
    n_rep : int
    seed : int
        Seed of the kernel's random stream (a :class:`numpy.random.Generator` of it).

    Returns
    -------
    counts : numpy.ndarray, shape (n_rep, C, K)
    lengths : numpy.ndarray, shape (n_rep, C)
    """
    n_tours = np.ascontiguousarray(n_tours, dtype=np.int64)
    if int(n_tours.sum()) != types.n_tours:
        raise ValueError(f"`n_tours` sums to {int(n_tours.sum())}, the pooled tours are {types.n_tours}.")
    if types.lengths.size == 0:
        K = types.counts.shape[1]
        return np.zeros((n_rep, n_tours.size, K)), np.zeros((n_rep, n_tours.size))
    return _permutation_kernel(
        np.random.default_rng(int(seed)),
        types.counts.astype(np.float64),
        types.lengths,
        types.mult,
        n_tours,
        int(n_rep),
    )


def pearson_statistic(dev, q, scale):
    """Pearson's goodness-of-fit of relative frequencies to the line c·q, for nested K.

    X²(x) = scale · Σ_i (x_i − c q_i)² / q_i with c = Σ x / Σ q: with ``x`` the visit counts per
    draw and ``scale`` the draws divided by the fitted level, this is Σ (O_i − E_i)² / E_i
    with E_i the counts expected from q and the total of the K states. It is invariant to
    adding multiples of q, so a bootstrap replicate uses ``dev`` = x* − x̂.

    Parameters
    ----------
    dev : numpy.ndarray, shape (..., Kmax)
        Relative frequencies (or their bootstrap deviations) of the ranked top states.
    q : numpy.ndarray, shape (Kmax,)
        Relative probabilities exp(logp_i − logp_1).
    scale : float or numpy.ndarray broadcasting against dev[..., 0]

    Returns
    -------
    numpy.ndarray, shape (Kmax + 1,) + dev.shape[:-1]
        Row K holds the statistic on the first K states (rows 0 and 1 are zero).
    """
    dev = np.asarray(dev, dtype=float)
    q = np.asarray(q, dtype=float)
    cd = np.cumsum(dev, axis=-1)
    cq = np.cumsum(q)
    cdd = np.cumsum(dev * dev / q, axis=-1)
    # Σ_{i≤K} (d_i − c q_i)²/q_i = Σ d²/q − (Σ d)² / Σ q, with c = Σd/Σq
    x2 = cdd - cd * cd / cq
    x2 = np.maximum(x2, 0.0) * np.asarray(scale, dtype=float)[..., None]
    x2 = np.moveaxis(x2, -1, 0)
    return np.concatenate([np.zeros((1,) + x2.shape[1:]), x2], axis=0)
