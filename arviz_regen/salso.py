"""SALSO search for the partition minimising a posterior expected loss (numpy/numba core).

Dahl, Johnson & Müller (2022), "Search Algorithms and Loss Functions for Bayesian Clustering",
JCGS 31(4). Each run starts from a sequential allocation of the items in random order (each to
the cluster, or a new one, that minimises the expected loss of the partial partition), from
uniformly random labels, from a posterior draw (our addition: see ``prob_draw``) or from a given
start, then sweetens it (scans reassigning each item to its best cluster until a scan changes
nothing) and tries zealous updates (destroy a cluster, reallocate its items sequentially,
sweeten; kept only if the expected loss drops). The best of several runs is returned.

The expected loss is the average over the draws (weights: visit frequencies of the distinct
states), never formed as an items × items × draws array. For a loss of the form
s [a Σ_l F(m_l) + (2 − a) Σ_k F(n_k) − 2 Σ_kl F(n_kl)] (:mod:`arviz_regen.partition_loss`)
moving item i into cluster k changes it by s [(2 − a) G(n_k) − 2 Σ_t w_t G(n_{t,k,l_t(i)})]
plus terms that do not depend on k, with G(m) = F(m + 1) − F(m). The counts n_{t,k,l} (estimate
cluster k against cluster l of draw t) are kept in one matrix with a row per (draw, draw
cluster) pair and a column per estimate cluster ("confusion matrices"; O(Σ_t L_t · K) memory),
so scoring an item costs O(T·K). For Binder the sum over draws is also
Σ_t w_t G(n_{t,k,l_t(i)}) = 2 Σ_{j∈k} ρ_ij + 1 with ρ the co-clustering matrix: the "psm"
route costs O(n) per item and works for any ρ (e.g. regenerative estimates).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._numba import lazy_njit
from .partition_loss import Loss, parse_loss
from .state import canonicalize

__all__ = ["SalsoResult", "salso_search", "SEARCH_DEFAULTS", "INITS"]

#: default search settings: those of the R package salso, with a bound on the scans, and a
#: quarter of the runs started from posterior draws
SEARCH_DEFAULTS = {"n_runs": 16, "max_zealous": 10, "max_scans": 50, "prob_sequential": 0.5, "prob_draw": 0.25}

#: how a run started (``SalsoResult.init``)
INITS = ("sequential", "random", "draw", "given")

#: largest confusion-matrix memory (bytes) before asking for a smaller ``max_clusters``
MAX_CMS_BYTES = 1 << 30


class _Problem(NamedTuple):
    """What the kernels read: the draws as row indices, weights and the loss tables."""

    rows: np.ndarray  # (n, T) row of (draw t, cluster of item i in draw t); (n, 0) on the psm route
    w: np.ndarray  # (T,) weights of the draws, summing to one
    wrow: np.ndarray  # (n_rows,) weight of each row's draw
    truth_term: float  # Σ_t w_t Σ_l F(m_tl): the part of the loss the estimate does not change
    F: np.ndarray  # (n + 1,) F(m)
    G: np.ndarray  # (n,) F(m + 1) − F(m)
    psm: np.ndarray  # (n, n) co-clustering matrix on the psm route, else (0, 0)
    a: float
    scale: float
    use_psm: bool


class _State(NamedTuple):
    """The partition being improved: labels 0 … K − 1 (−1: not allocated), sizes, counts."""

    lab: np.ndarray  # (n,) int64
    size: np.ndarray  # (k_alloc,) int64
    cms: np.ndarray  # (n_rows, k_alloc) int32
    nk: np.ndarray  # (2,) int64: K, the number of clusters; 1 once a cluster beyond k_alloc was needed


@lazy_njit(cache=True)
def _add(P, S, i, k):
    if k >= S.size.shape[0]:
        S.nk[1] = 1  # out of columns: the caller reruns the run with more (same seed, same path)
        k = 0
    S.lab[i] = k
    S.size[k] += 1
    if k == S.nk[0]:
        S.nk[0] += 1
    if not P.use_psm:
        for t in range(P.rows.shape[1]):
            S.cms[P.rows[i, t], k] += 1


@lazy_njit(cache=True)
def _remove(P, S, i):
    k = S.lab[i]
    S.lab[i] = -1
    S.size[k] -= 1
    if not P.use_psm:
        for t in range(P.rows.shape[1]):
            S.cms[P.rows[i, t], k] -= 1
    return k


@lazy_njit(cache=True)
def _compact(P, S, c):
    """Remove the empty cluster ``c``: the last cluster takes its label (labels stay 0 … K − 1)."""
    last = S.nk[0] - 1
    if c != last:
        if not P.use_psm:
            for r in range(S.cms.shape[0]):
                S.cms[r, c] = S.cms[r, last]
                S.cms[r, last] = 0
        S.size[c] = S.size[last]
        S.size[last] = 0
        for j in range(S.lab.shape[0]):
            if S.lab[j] == last:
                S.lab[j] = c
    S.nk[0] = last


@lazy_njit(cache=True)
def _scores(P, S, i, acc):
    """acc[k] = change in loss (up to terms free of k, over s) of adding unallocated i to k."""
    K = S.nk[0]
    for k in range(K):
        acc[k] = 0.0
    if P.use_psm:
        for j in range(S.lab.shape[0]):
            lj = S.lab[j]
            if lj >= 0:
                acc[lj] += P.psm[i, j]
        for k in range(K):
            acc[k] = (2.0 - P.a) * P.G[S.size[k]] - 2.0 * (2.0 * acc[k] + 1.0)
    else:
        for t in range(P.rows.shape[1]):
            r = P.rows[i, t]
            wt = P.w[t]
            for k in range(K):
                acc[k] += wt * P.G[S.cms[r, k]]
        for k in range(K):
            acc[k] = (2.0 - P.a) * P.G[S.size[k]] - 2.0 * acc[k]


@lazy_njit(cache=True)
def _allocate(P, S, i, kcap, acc):
    """Put unallocated item i in its best cluster (a new one allowed while K < kcap)."""
    _scores(P, S, i, acc)
    K = S.nk[0]
    best = -1
    best_s = np.inf
    for k in range(K):
        if acc[k] < best_s:
            best_s = acc[k]
            best = k
    if K < kcap and -P.a * P.G[0] < best_s:
        best = K
    _add(P, S, i, best)


@lazy_njit(cache=True)
def _sweep(P, S, perm, kcap, acc):
    """One sweetening scan: each item to its best cluster, moved only on a strict improvement."""
    changed = False
    for q in range(perm.shape[0]):
        i = perm[q]
        c = _remove(P, S, i)
        _scores(P, S, i, acc)
        K = S.nk[0]
        emptied = S.size[c] == 0
        best = c
        best_s = acc[c]
        for k in range(K):
            if acc[k] < best_s:
                best_s = acc[k]
                best = k
        if not emptied and K < kcap and -P.a * P.G[0] < best_s:
            best_s = -P.a * P.G[0]
            best = K
        # rounding: only a real improvement moves an item (no cycling between ties)
        if best != c and best_s >= acc[c] - 1e-10 * (1.0 + abs(acc[c])):
            best = c
        _add(P, S, i, best)
        if S.nk[1]:
            return False
        if best != c:
            changed = True
            if emptied:
                _compact(P, S, c)
    return changed


@lazy_njit(cache=True)
def _sweeten(P, S, kcap, acc, max_scans):
    n_scans = 0
    while n_scans < max_scans:
        n_scans += 1
        if not _sweep(P, S, np.random.permutation(S.lab.shape[0]), kcap, acc):
            break
    return n_scans


@lazy_njit(cache=True)
def _state_loss(P, S):
    """Expected loss of the (complete) partition in the state."""
    K = S.nk[0]
    n = S.lab.shape[0]
    if P.use_psm:
        tot = 0.0
        for i in range(n):
            for j in range(i + 1, n):
                p = P.psm[i, j]
                if S.lab[i] == S.lab[j]:
                    tot += (2.0 - P.a) * (1.0 - p)
                else:
                    tot += P.a * p
        return tot
    est = 0.0
    for k in range(K):
        est += P.F[S.size[k]]
    cross = 0.0
    for r in range(S.cms.shape[0]):
        s = 0.0
        for k in range(K):
            s += P.F[S.cms[r, k]]
        cross += P.wrow[r] * s
    return P.scale * (P.a * P.truth_term + (2.0 - P.a) * est - 2.0 * cross)


@lazy_njit(cache=True)
def _clear(S):
    """No item allocated."""
    S.cms[:, :] = 0
    S.size[:] = 0
    S.nk[0] = 0
    S.nk[1] = 0
    S.lab[:] = -1


@lazy_njit(cache=True)
def _reset(P, S, labels):
    """Set the state to ``labels`` (any labels < n; renumbered by first appearance)."""
    n = S.lab.shape[0]
    _clear(S)
    relabel = np.full(n, -1, dtype=np.int64)
    for i in range(n):
        lab = labels[i]
        if relabel[lab] < 0:
            relabel[lab] = S.nk[0]
        _add(P, S, i, relabel[lab])


@lazy_njit(cache=True)
def _run(P, S, kcap, k_random, init, start, seed, max_scans, max_zealous):
    """One SALSO run from ``init``; returns (loss, scans, zealous attempts, zealous accepts, ok).

    init 0: sequential allocation of the items in random order; 1: uniformly random labels over
    ``k_random`` clusters; else: the labels ``start``. ok = 0: the run needed more cluster
    columns than allocated (rerun it with more; with the same seed it follows the same path).
    """
    np.random.seed(seed)
    n = S.lab.shape[0]
    acc = np.empty(S.size.shape[0] + 1)
    if init == 0:
        _clear(S)
        perm = np.random.permutation(n)
        for q in range(n):
            _allocate(P, S, perm[q], kcap, acc)
    elif init == 1:
        _reset(P, S, np.random.randint(0, k_random, n))
    else:
        _reset(P, S, start)
    n_scans = _sweeten(P, S, kcap, acc, max_scans)
    if S.nk[1]:
        return 0.0, 0, 0, 0, 0
    loss = _state_loss(P, S)
    # zealous updates: one representative item per cluster, clusters in random order
    seen = np.zeros(S.size.shape[0], dtype=np.bool_)
    reps = np.empty(S.nk[0], dtype=np.int64)
    n_reps = 0
    for i in np.random.permutation(n):
        if not seen[S.lab[i]]:
            seen[S.lab[i]] = True
            reps[n_reps] = i
            n_reps += 1
    attempts = 0
    accepts = 0
    members = np.empty(n, dtype=np.int64)
    for q in range(n_reps):
        c = S.lab[reps[q]]
        if S.size[c] <= 1:
            continue  # a singleton is already covered by the sweetening scans
        if attempts >= max_zealous:
            break
        attempts += 1
        saved = S.lab.copy()
        m = 0
        for j in range(n):
            if S.lab[j] == c:
                members[m] = j
                m += 1
        for q2 in range(m):
            _remove(P, S, members[q2])
        _compact(P, S, c)
        order = members[:m].copy()
        np.random.shuffle(order)
        for q2 in range(m):
            _allocate(P, S, order[q2], kcap, acc)
        n_scans += _sweeten(P, S, kcap, acc, max_scans)
        if S.nk[1]:
            return 0.0, 0, 0, 0, 0
        cand = _state_loss(P, S)
        if cand < loss - 1e-12 * (1.0 + abs(loss)):
            loss = cand
            accepts += 1
        else:
            _reset(P, S, saved)
    return loss, n_scans, attempts, accepts, 1


class SalsoResult(NamedTuple):
    """Result of :func:`salso_search`.

    ``labels`` (canonical) and ``expected_loss`` of the best run; ``run_losses`` the loss of
    each run; ``n_scans``, ``zealous_attempts``, ``zealous_accepts``, ``init`` per run (an
    index into :data:`INITS`: sequential allocation, random labels, a posterior draw, a given
    start); ``max_clusters`` the cap used; ``route`` "draws" or "psm".
    """

    labels: np.ndarray
    expected_loss: float
    run_losses: np.ndarray
    n_scans: np.ndarray
    zealous_attempts: np.ndarray
    zealous_accepts: np.ndarray
    init: np.ndarray
    max_clusters: int
    route: str


def _new_state(n, n_rows, k_alloc):
    need = n_rows * k_alloc * 4
    if need > MAX_CMS_BYTES:
        raise MemoryError(
            f"The SALSO confusion matrices would take {need / 2**30:.1f} GiB ({n_rows} draw clusters "
            f"x {k_alloc} estimate clusters): pass a smaller `max_clusters`, or thin the draws."
        )
    return _State(
        np.full(n, -1, dtype=np.int64),
        np.zeros(k_alloc, dtype=np.int64),
        np.zeros((n_rows, k_alloc), dtype=np.int32),
        np.zeros(2, dtype=np.int64),
    )


def _tables(spec, n):
    F = spec.table(n)
    return F, np.ascontiguousarray(np.diff(F))


def _draws_problem(draws, weights, spec):
    """The kernels' view of the draws: (draw, cluster) rows, their weights and sizes."""
    T, n = draws.shape
    n_l = draws.max(axis=1) + 1
    off = np.concatenate([[0], np.cumsum(n_l)[:-1]])
    n_rows = int(n_l.sum())
    dtype = np.int32 if n_rows < 2**31 else np.int64
    rows = np.ascontiguousarray((draws + off[:, None]).T, dtype=dtype)
    msize = np.bincount(rows.ravel(), minlength=n_rows)
    wrow = np.repeat(weights, n_l)
    F, G = _tables(spec, n)
    truth_term = float(wrow @ F[msize])
    return _Problem(rows, weights, wrow, truth_term, F, G, np.zeros((0, 0)), spec.a, spec.scale(n), False), n_l


def salso_search(
    draws=None,
    weights=None,
    loss="VI",
    *,
    psm=None,
    max_clusters=None,
    n_runs=SEARCH_DEFAULTS["n_runs"],
    max_zealous=SEARCH_DEFAULTS["max_zealous"],
    max_scans=SEARCH_DEFAULTS["max_scans"],
    prob_sequential=SEARCH_DEFAULTS["prob_sequential"],
    prob_draw=SEARCH_DEFAULTS["prob_draw"],
    starts=None,
    seed=None,
):
    """SALSO search minimising the expected loss over the draws (or a co-clustering matrix).

    Parameters
    ----------
    draws : numpy.ndarray of int, shape (T, n)
        Canonical label vectors (distinct states, say).
    weights : numpy.ndarray, shape (T,), optional
        Their posterior weights (normalised here); default equal.
    loss : "VI", "binder", ("VI", a), ("binder", a) or Loss
    psm : numpy.ndarray, shape (n, n), optional
        Binder only: search on this co-clustering matrix instead of the draws (e.g. the
        regenerative estimate); the loss is then Σ_{i<j} [a ρ_ij 1{apart} + (2 − a)(1 − ρ_ij)
        1{together}].
    max_clusters : int, optional
        Largest number of clusters of the estimate; default no limit.
    n_runs, max_zealous, max_scans
        Runs (random restarts), zealous updates per run, sweetening scans per sweetening phase.
    prob_sequential, prob_draw
        How a run starts: by sequential allocation with probability ``prob_sequential``, from a
        posterior draw (picked by weight; not on the psm route) with probability ``prob_draw``,
        else from random labels. Draw starts are our addition to SALSO: a loss like VI with
        a < 1 can have a cliff-edge optimum (clusters worth forming only whole, from items
        whose pairs are not worth joining one by one) that sequential allocation cannot build
        but a draw near a mode holds.
    starts : numpy.ndarray of int, shape (m, n), optional
        Extra runs starting from these label vectors (then sweetened and zealously updated).
    seed : int or numpy.random.Generator, optional

    Returns
    -------
    SalsoResult
    """
    spec = parse_loss(loss)
    rng = np.random.default_rng(seed)
    if psm is not None:
        if spec.name != "binder":
            raise ValueError("A co-clustering matrix (`psm`) determines the Binder loss only, not VI.")
        psm = np.ascontiguousarray(psm, dtype=float)
        n = psm.shape[0]
        kcap = n if max_clusters is None else int(max_clusters)
        F, G = _tables(Loss("binder", 1.0), n)
        P = _Problem(
            np.zeros((n, 0), dtype=np.int32), np.zeros(0), np.zeros(0), 0.0, F, G, psm, spec.a, 0.5, True
        )
        n_rows = 0
        k_random = int(round(np.sqrt(n)))
        route = "psm"
    else:
        draws = np.ascontiguousarray(draws, dtype=np.int64)
        T, n = draws.shape
        w = np.full(T, 1.0 / T) if weights is None else np.asarray(weights, dtype=float)
        w = np.ascontiguousarray(w / w.sum())
        P, n_l = _draws_problem(draws, w, spec)
        kcap = n if max_clusters is None else int(max_clusters)
        n_rows = P.wrow.shape[0]
        k_random = int(n_l.max())
        route = "draws"
    kcap = max(1, min(kcap, n))
    k_random = max(1, min(kcap, k_random))
    start_rows = [] if starts is None else list(np.atleast_2d(np.asarray(starts, dtype=np.int64)))
    for s in start_rows:
        if s.shape != (n,):
            raise ValueError(f"`starts` must be label vectors of length {n}, got shape {s.shape}.")
    n_total = int(n_runs) + len(start_rows)
    if n_total < 1:
        raise ValueError("`n_runs` must be positive (or give `starts`).")
    seeds = rng.integers(0, 2**31 - 1, size=n_total)
    no_start = np.zeros(max(n, 1), dtype=np.int64)
    p_draw = float(prob_draw) if route == "draws" else 0.0
    if not (0.0 <= float(prob_sequential) <= 1.0 and 0.0 <= p_draw and float(prob_sequential) + p_draw <= 1.0 + 1e-12):
        raise ValueError(
            f"`prob_sequential` ({prob_sequential!r}) and `prob_draw` ({prob_draw!r}) must be "
            "probabilities summing to at most 1."
        )
    # cluster columns grow on demand: a run that runs out is rerun (same seed, same path)
    k_alloc = min(kcap, max(2 * k_random, 8))
    S = None
    best_loss, best_labels = np.inf, None
    stats = np.zeros((n_total, 5))
    for r in range(n_total):
        start = no_start
        if r < len(start_rows):
            init = 3
            start = np.minimum(canonicalize(start_rows[r]), kcap - 1)  # clusters above the cap merged
        else:
            u = rng.random()
            init = 0 if u < prob_sequential else 2 if u < prob_sequential + p_draw else 1
            if init == 2:
                start = np.minimum(draws[rng.choice(draws.shape[0], p=P.w)], kcap - 1)
        while True:
            if S is None or S.size.shape[0] < k_alloc:
                S = _new_state(n, n_rows, k_alloc)
            out = _run(P, S, kcap, k_random, init, start, int(seeds[r]), int(max_scans), int(max_zealous))
            if out[4]:
                break
            k_alloc = min(kcap, 2 * k_alloc)
        out = out[:4] + (init,)
        stats[r] = out
        if out[0] < best_loss:
            best_loss, best_labels = out[0], S.lab.copy()
    return SalsoResult(
        labels=canonicalize(best_labels),
        expected_loss=float(best_loss),
        run_losses=stats[:, 0],
        n_scans=stats[:, 1].astype(np.int64),
        zealous_attempts=stats[:, 2].astype(np.int64),
        zealous_accepts=stats[:, 3].astype(np.int64),
        init=stats[:, 4].astype(np.int64),
        max_clusters=kcap,
        route=route,
    )
