"""The compiled kernels of the SALSO search (:mod:`arviz_regen.base.salso`).

One run of the search (:func:`run`, the C callback :func:`_run` called through ``ctypes``) calls
its route's function (:func:`_psm_op`, :func:`_track_op`, C callbacks compiled by
:func:`route_op`) at its address: one search kernel serves both routes, and its machine code
holds no copy of the route function (a kernel called directly is linked into its caller, then
optimised and compiled to machine code a second time there). All three take scalars only, so
none has a Python entry point to compile (unboxing named tuples and arrays), and a call by
address lowers to one indirect call (a numba first-class function also lowers a fallback
through Python at every call site).

The kernels read their arrays through plain pointers, indexed by hand (no array views to build,
unpack or reference-count): one int64 array ``meta``, whose address they receive, describes them
with four entries per array, its address and up to three dimensions (:func:`describe`), in the
order of :data:`BUFFERS` then the route's own (:data:`PSM_ARRAYS`, :data:`TRACK_ARRAYS`); a run's
own arrays (:data:`RUN_ARRAYS`) are described the same way. The caller keeps the arrays alive.
:func:`describe` (:mod:`arviz_regen.base.addresses`, the one place addresses are taken) checks
each array's dtype, dimensions and layout.

All are compiled through :class:`arviz_regen.base.kernel_compiler.Compiler` (numba's pipeline
less the passes such kernels never need).

Imported by the search's first run (this module imports numba: ``import arviz_regen`` does not).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types

from .addresses import caller, describe
from .addresses import float64_at as _float64_at
from .addresses import int32_at as _int32_at
from .addresses import int64_at as _int64_at
from .addresses import uint64_at as _uint64_at
from .kernel_compiler import INNER as _INNER
from .kernel_compiler import compile_cfunc
from .salso import RunStats

__all__ = [
    "SIGNATURE", "RUN_SIGNATURE", "BUFFERS", "PSM_ARRAYS", "TRACK_ARRAYS", "RUN_ARRAYS", "describe", "route_op",
    "run_op", "run",
]  # fmt: skip

#: (what, meta address, i, k1, k2, K, a, scale, truth_term) -> float64: see :func:`_track_op`
SIGNATURE = types.float64(
    types.int64, types.int64, types.int64, types.int64, types.int64, types.int64,
    types.float64, types.float64, types.float64,
)  # fmt: skip

#: the run's buffers and G table (:class:`arviz_regen.base.salso.RunBuffers`), then up to seven
#: arrays of the route: (name, dtype, ndim) each
BUFFERS = (
    ("lab", np.int64, 1), ("size", np.int64, 1), ("acc", np.float64, 1), ("imap", np.int64, 1),
    ("work", np.int64, 2), ("G", np.float64, 1),
)  # fmt: skip
PSM_ARRAYS = (("psm", np.float64, 2), ("S", np.float64, 3))
TRACK_ARRAYS = (
    ("ptr", np.int64, 1), ("seg", np.int32, 2), ("w", np.float64, 1), ("tab", np.float64, 2),
    ("cnt", np.int32, 3), ("QQ", np.float64, 3), ("dirty", np.int64, 3),
)  # fmt: skip

# where each array's address sits in ``meta`` (its dimensions follow it): the buffers, then the
# route's arrays from _ROUTE on
_LAB, _SIZE, _ACC, _IMAP, _WORK, _G = (4 * s for s in range(len(BUFFERS)))
_ROUTE = 4 * len(BUFFERS)
_PSM, _S = (_ROUTE + 4 * s for s in range(len(PSM_ARRAYS)))
_PTR, _SEG, _W, _TAB, _CNT, _QQ, _DIRTY = (_ROUTE + 4 * s for s in range(len(TRACK_ARRAYS)))

# what the route functions are asked to do (argument ``what``)
_SCORE, _MOVE, _CLEAR, _RELABEL, _RESET, _SAVE, _RESTORE, _LOSS = range(8)

#: (op address, meta address, a, scale, truth_term, kcap, k_random, max_scans, max_zealous, init,
#: start, rng and stats addresses) -> ok: see :func:`run`
RUN_SIGNATURE = types.int64(
    types.int64, types.int64, types.float64, types.float64, types.float64, types.int64, types.int64,
    types.int64, types.int64, types.int64, types.int64, types.int64, types.int64,
)  # fmt: skip

#: a run's own arrays: the start labels, the random stream's state, the run's statistics
RUN_ARRAYS = (("start", np.int64, 1), ("rng", np.uint64, 1), ("stats", np.float64, 1))

#: calls a route function (a callback of :data:`SIGNATURE`) at its address
_call_route = caller(SIGNATURE)

#: the compiled callbacks, by name ("psm", "tracks", "run"): each compiled (or read from disk) on first request
_COMPILED = {}


def route_op(route):
    """Return the callback of ``route`` ("psm" or "tracks"), compiled (or read from disk) on first use."""
    op = _COMPILED.get(route)
    if op is None:
        op = _COMPILED[route] = compile_cfunc(SIGNATURE, _psm_op if route == "psm" else _track_op)
    return op


def run_op():
    """Return the search's callback (:func:`_run`), compiled (or read from disk) on first use."""
    op = _COMPILED.get("run")
    if op is None:
        op = _COMPILED["run"] = compile_cfunc(RUN_SIGNATURE, _run)
    return op


def run(op, cfg, init, start, rng):
    """One SALSO run (``cfg`` a :class:`~arviz_regen.base.salso.RunSettings`): a ``RunStats``.

    ``op`` is the route's callback (:func:`route_op`), called by the search through its address;
    the buffers are those ``cfg.meta`` describes. init 0: sequential allocation of the items in
    random order; 1: uniformly random labels over ``k_random`` clusters; else: the labels
    ``start`` (int64, one per item). The random numbers come from the stream ``rng`` (one
    uint64, advanced: :func:`_randint`), drawn in the order of the published algorithm.
    """
    stats = np.zeros(4)
    where = describe((start, rng, stats), RUN_ARRAYS)  # checked, and referenced here during the run
    ok = run_op().ctypes(
        op.address, cfg.meta, cfg.a, cfg.scale, cfg.truth_term, cfg.kcap, cfg.k_random, cfg.max_scans,
        cfg.max_zealous, int(init), where[0], where[4], where[8],
    )  # fmt: skip
    return RunStats(float(stats[0]), int(stats[1]), int(stats[2]), int(stats[3]), int(ok))


def _psm_op(what, meta, i, k1, k2, K, a, scale, truth_term):
    """Compute the "psm" route: scores and losses from the co-clustering matrix ρ.

    The arrays (:data:`PSM_ARRAYS`) are ρ and S, with S[0, j, k] = Σ_{l ∈ k} ρ_jl kept up to
    date by the moves (O(n) a move, O(K) a score instead of O(n)), S[1] a copy (zealous
    updates); ``truth_term`` Σ_{i<j} ρ_ij.
    _SCORE: acc[k] = 2 Σ_{j ∈ k, j ≠ i} ρ_ij + 1 (k1: the cluster of i, −1: none); _LOSS: the
    expected Binder loss. The other requests as for :func:`_track_op`.
    """
    m = _int64_at(meta)
    n = m[_LAB + 1]  # lab, size, acc, imap, ρ (n, n), S (2, n, ka): flat, indexed by hand
    lab, size, acc, imap = _int64_at(m[_LAB]), _int64_at(m[_SIZE]), _float64_at(m[_ACC]), _int64_at(m[_IMAP])
    psm = _float64_at(m[_PSM])
    S = _float64_at(m[_S])
    ka = m[_S + 3]
    saved = n * ka  # S[1]
    if what == 0:
        for k in range(K):
            acc[k] = S[i * ka + k]
        if k1 >= 0:
            acc[k1] -= psm[i * n + i]
        for k in range(K):
            acc[k] = 2.0 * acc[k] + 1.0
    elif what == 1:
        for j in range(n):
            if k1 >= 0:
                S[j * ka + k1] -= psm[i * n + j]
            if k2 >= 0:
                S[j * ka + k2] += psm[i * n + j]
    elif what == 2 or what == 3:
        for j in range(n):
            S[j * ka + k1] = S[j * ka + k2] if what == 3 else 0.0
            if what == 3:
                S[j * ka + k2] = 0.0
    elif what == 4 or what == 6:
        k_top = ka if what == 4 else (K if K >= k1 else k1)
        for j in range(n):
            for k in range(k_top):
                S[j * ka + k] = 0.0
            if what == 6:
                for k in range(K):
                    S[j * ka + imap[k]] = S[saved + j * ka + k]
    elif what == 5:
        for j in range(n):
            for k in range(K):
                S[saved + j * ka + k] = S[j * ka + k]
    elif what == 7:
        # a Σ ρ over all pairs, corrected on the pairs together: (2 − a)(1 − ρ) − a ρ each
        together = 0.0
        inside = 0.0
        for k in range(K):
            together += 0.5 * size[k] * (size[k] - 1)
        for j in range(n):
            inside += S[j * ka + lab[j]] - psm[j * n + j]
        return a * truth_term + (2.0 - a) * together - inside
    return 0.0


def _track_op(what, meta, i, k1, k2, K, a, scale, truth_term):
    """Compute the "draws" route on tracks (:mod:`arviz_regen.base.cluster_tracks`).

    The arrays (:data:`TRACK_ARRAYS`) are ptr, seg, w, tab, cnt, QQ and dirty: ptr
    the segments of each item (seg_ptr, n + 1) then the first epoch of each track (epoch_start);
    seg the track, first and past-the-last epoch of each segment; w the epochs' weights; tab the
    tables G, G(· − 1) and F; cnt[0] the items of each estimate cluster per epoch, cnt[1] a copy
    (zealous updates); QQ[0], QQ[1] running sums along each track of w G(cnt) and w G(cnt − 1)
    (track τ's at rows epoch_start[τ] + τ … epoch_start[τ + 1] + τ); dirty[0], dirty[1], per track
    and cluster, the first epoch whose running sums QQ[0], QQ[1] are stale (−1: none); QQ[1] is
    read only for an item's own cluster, so it is brought up to date separately.

    _SCORE: acc[k] = Σ_t w_t G(n_{t,k,l_t(i)}) over the draws with i taken out of its cluster k1
    (−1: unallocated); _MOVE: i from cluster k1 to k2 (−1: none); _CLEAR: cluster k1 empty;
    _RELABEL: cluster k2 becomes k1; _RESET: no item allocated; _SAVE / _RESTORE: copy the
    counts of K clusters / put them back under labels imap[k] (k1: the clusters before);
    _LOSS: the expected loss. Columns of cnt from K on are zero, their running sums stale.
    """
    m = _int64_at(meta)
    n = m[_LAB + 1]  # the arrays flat, indexed by hand: cnt[c, g, k] at (c E + g) ka + k, and so on
    size, acc, imap = _int64_at(m[_SIZE]), _float64_at(m[_ACC]), _int64_at(m[_IMAP])
    ptr = _int64_at(m[_PTR])  # seg_ptr: ptr[i], epoch_start: ptr[n + 1 + τ]
    seg = _int32_at(m[_SEG])
    w = _float64_at(m[_W])
    tab = _float64_at(m[_TAB])
    T = m[_TAB + 2]
    F = 2 * T  # tab[2]
    cnt = _int32_at(m[_CNT])
    E = m[_CNT + 2]
    k_alloc = m[_CNT + 3]
    saved = E * k_alloc  # cnt[1]
    QQ = _float64_at(m[_QQ])
    H = m[_QQ + 2]
    dirty = _int64_at(m[_DIRTY])
    n_tracks = m[_DIRTY + 2]
    if what == 0:
        for k in range(K):
            acc[k] = 0.0
        own = 0.0  # i's own cluster, summed apart (QQ[1]) and written last
        for s in range(ptr[i], ptr[i + 1]):
            tr = seg[3 * s]
            h1 = seg[3 * s + 1] + tr
            h2 = seg[3 * s + 2] + tr
            stale = -1  # whether any running sum of QQ[0] is stale (a loop without branches)
            for k in range(K):
                d = dirty[tr * k_alloc + k]
                if d > stale:  # max(): a compare and select, no other function to compile
                    stale = d
            # stale sums brought up to date: QQ[1] for i's cluster, then QQ[0] for all if any
            for q in range(K + 1 if stale >= 0 else 1):
                mm = 1 if q == 0 else 0
                k = k1 if q == 0 else q - 1
                g0 = dirty[(mm * n_tracks + tr) * k_alloc + k] if k >= 0 else -1
                if g0 >= 0:  # running sums of this track and cluster from epoch g0 on
                    run = QQ[(mm * H + g0 + tr) * k_alloc + k]
                    for g in range(g0, ptr[n + 2 + tr]):
                        run += w[g] * tab[mm * T + cnt[g * k_alloc + k]]
                        QQ[(mm * H + g + tr + 1) * k_alloc + k] = run
                    dirty[(mm * n_tracks + tr) * k_alloc + k] = -1
            for k in range(K):  # no branch: a loop the compiler vectorises
                acc[k] += QQ[h2 * k_alloc + k] - QQ[h1 * k_alloc + k]
            if k1 >= 0:
                own += QQ[(H + h2) * k_alloc + k1] - QQ[(H + h1) * k_alloc + k1]
        if k1 >= 0:
            acc[k1] = own
    elif what == 1:
        for s in range(ptr[i], ptr[i + 1]):
            tr = seg[3 * s]
            g1 = seg[3 * s + 1]
            for k, step in ((k1, -1), (k2, 1)):
                if k < 0:
                    continue
                for g in range(g1, seg[3 * s + 2]):
                    cnt[g * k_alloc + k] += step
                for mm in range(2):
                    at = (mm * n_tracks + tr) * k_alloc + k
                    if dirty[at] < 0 or g1 < dirty[at]:
                        dirty[at] = g1
    elif what == 2:
        for g in range(E):
            cnt[g * k_alloc + k1] = 0
        for mm in range(2):
            for tr in range(n_tracks):
                dirty[(mm * n_tracks + tr) * k_alloc + k1] = ptr[n + 1 + tr]
    elif what == 3:
        for g in range(E):
            cnt[g * k_alloc + k1] = cnt[g * k_alloc + k2]
            cnt[g * k_alloc + k2] = 0
        for mm in range(2):
            for h in range(H):
                QQ[(mm * H + h) * k_alloc + k1] = QQ[(mm * H + h) * k_alloc + k2]
            for tr in range(n_tracks):
                at = (mm * n_tracks + tr) * k_alloc
                dirty[at + k1] = dirty[at + k2]
                dirty[at + k2] = ptr[n + 1 + tr]
    elif what == 4 or what == 6:
        # columns from max(K, k1) on are zero already (k1: the clusters before a restore)
        k_top = k_alloc if what == 4 else (K if K >= k1 else k1)
        for g in range(E):
            for k in range(k_top):
                cnt[g * k_alloc + k] = 0
            if what == 6:
                for k in range(K):
                    cnt[g * k_alloc + imap[k]] = cnt[saved + g * k_alloc + k]
        for mm in range(2):
            for tr in range(n_tracks):
                for k in range(k_top):
                    dirty[(mm * n_tracks + tr) * k_alloc + k] = ptr[n + 1 + tr]
    elif what == 5:
        for g in range(E):
            for k in range(K):
                cnt[saved + g * k_alloc + k] = cnt[g * k_alloc + k]
    elif what == 7:
        est = 0.0
        for k in range(K):
            est += tab[F + size[k]]
        cross = 0.0
        for g in range(E):
            row = 0.0
            for k in range(K):
                row += tab[F + cnt[g * k_alloc + k]]
            cross += w[g] * row
        return scale * (a * truth_term + (2.0 - a) * est - 2.0 * cross)
    return 0.0


@numba.njit(**_INNER)
def _randint(state, hi):
    """Return a uniform integer in 0 … hi − 1 from the splitmix64 stream ``state`` (one uint64, advanced).

    A few integer operations, not ``numpy.random.Generator.integers``, whose compilation would
    dominate a search's first call; the modulo's bias, below hi / 2**64, is immaterial here.
    """
    z = state[0] + np.uint64(0x9E3779B97F4A7C15)
    state[0] = z
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.int64(z % np.uint64(hi))


@numba.njit(**_INNER)
def _shuffle(x, m, rng):
    """Shuffle x[0 … m − 1] in place (Fisher-Yates) with the random stream ``rng`` (:func:`_randint`)."""
    i = m - 1
    while i > 0:
        j = _randint(rng, i + 1)
        tmp = x[i]
        x[i] = x[j]
        x[j] = tmp
        i -= 1


@numba.njit(**_INNER)
def _take_label(lab, size, c, last, n):
    """Cluster c is empty: cluster ``last`` takes its label (labels stay 0 … last − 1)."""
    if c != last:
        size[c] = size[last]
        size[last] = 0
        for j in range(n):
            if lab[j] == last:
                lab[j] = c
    return last


def _run(op, meta, a, scale, truth_term, kcap, k_random, max_scans, max_zealous, init, start, rng, stats):
    """One SALSO run (see :func:`run`); ``op``, ``start``, ``rng``, ``stats`` addresses. Returns ``ok``.

    The run's loss, scans, zealous attempts and accepts go to ``stats`` (4 float64).
    """
    m = _int64_at(meta)
    n = m[_LAB + 1]
    k_alloc = m[_SIZE + 1]
    lab, size, acc, imap, G = (
        _int64_at(m[_LAB]),
        _int64_at(m[_SIZE]),
        _float64_at(m[_ACC]),
        _int64_at(m[_IMAP]),
        _float64_at(m[_G]),
    )
    order = _int64_at(m[_WORK])  # the rows of work
    pend = _int64_at(m[_WORK] + 8 * n)
    reps = _int64_at(m[_WORK] + 16 * n)
    saved = _int64_at(m[_WORK] + 24 * n)
    start = _int64_at(start)
    rng = _uint64_at(rng)
    out = _float64_at(stats)
    new_k = -a * G[0]  # score of a new cluster
    K = np.int64(0)
    loss = 0.0
    n_scans = 0
    attempts = 0
    accepts = 0
    n_reps = 0
    q_rep = 0
    n_pend = 0
    attempt = -1
    while True:
        if attempt < 0:  # the start of the run
            for j in range(n):
                lab[j] = -1
            for k in range(k_alloc):
                size[k] = 0
            K = np.int64(0)
            _call_route(op, _RESET, meta, 0, -1, -1, K, a, scale, truth_term)
            if init == 0:
                for j in range(n):
                    pend[j] = j
                n_pend = n
            else:
                for j in range(n):
                    order[j] = _randint(rng, k_random) if init == 1 else start[j]
                for k in range(n):
                    imap[k] = -1
                for j in range(n):  # clusters numbered by first appearance
                    if imap[order[j]] < 0:
                        imap[order[j]] = K
                        if K == k_alloc:
                            return 0
                        K += 1
                    k = imap[order[j]]
                    _call_route(op, _MOVE, meta, j, -1, k, K, a, scale, truth_term)
                    lab[j] = k
                    size[k] += 1
                n_pend = 0
        else:  # a zealous update: destroy the cluster of the next representative
            c = -1
            while q_rep < n_reps:
                c = lab[reps[q_rep]]
                q_rep += 1
                if size[c] > 1:
                    break
                c = -1
            if c < 0 or attempts >= max_zealous:
                break
            attempts += 1
            for j in range(n):
                saved[j] = lab[j]
            _call_route(op, _SAVE, meta, 0, -1, -1, K, a, scale, truth_term)
            n_pend = 0
            for j in range(n):
                if lab[j] == c:
                    pend[n_pend] = j
                    n_pend += 1
                    lab[j] = -1
            _call_route(op, _CLEAR, meta, 0, c, -1, K, a, scale, truth_term)
            size[c] = 0
            if c != K - 1:  # the last cluster takes the label of the empty one
                _call_route(op, _RELABEL, meta, 0, c, K - 1, K, a, scale, truth_term)
            K = _take_label(lab, size, c, K - 1, n)
        # shuffled for a zealous update; in random order at the start
        if attempt >= 0 or init == 0:
            _shuffle(pend, n_pend, rng)
        for q in range(n_pend):  # sequential allocation
            i = pend[q]
            _call_route(op, _SCORE, meta, i, -1, -1, K, a, scale, truth_term)
            best = -1
            best_s = np.inf
            for k in range(K):
                acc[k] = (2.0 - a) * G[size[k]] - 2.0 * acc[k]
                if acc[k] < best_s:
                    best_s = acc[k]
                    best = k
            if K < kcap and new_k < best_s:
                best = K
            if best >= k_alloc:
                return 0
            _call_route(op, _MOVE, meta, i, -1, best, K, a, scale, truth_term)
            lab[i] = best
            size[best] += 1
            if best == K:
                K += 1
        scans = 0
        while scans < max_scans:  # sweetening
            scans += 1
            for j in range(n):
                order[j] = j
            _shuffle(order, n, rng)
            changed = False
            for q in range(n):
                i = order[q]
                c = lab[i]
                lab[i] = -1
                size[c] -= 1
                _call_route(op, _SCORE, meta, i, c, -1, K, a, scale, truth_term)
                emptied = size[c] == 0
                for k in range(K):
                    acc[k] = (2.0 - a) * G[size[k]] - 2.0 * acc[k]
                best = c
                best_s = acc[c]
                for k in range(K):
                    if acc[k] < best_s:
                        best_s = acc[k]
                        best = k
                if not emptied and K < kcap and new_k < best_s:
                    best_s = new_k
                    best = K
                # rounding: only a real improvement moves an item (no cycling between ties)
                if best != c and best_s >= acc[c] - 1e-10 * (1.0 + abs(acc[c])):
                    best = c
                if best >= k_alloc:
                    return 0
                if best != c:
                    _call_route(op, _MOVE, meta, i, c, best, K, a, scale, truth_term)
                    changed = True
                lab[i] = best
                size[best] += 1
                if best == K:
                    K += 1
                if best != c and emptied:  # the last cluster takes the label of the empty one
                    if c != K - 1:
                        _call_route(op, _RELABEL, meta, 0, c, K - 1, K, a, scale, truth_term)
                    K = _take_label(lab, size, c, K - 1, n)
            if not changed:
                break
        n_scans += scans
        cand = _call_route(op, _LOSS, meta, 0, -1, -1, K, a, scale, truth_term)
        if attempt < 0:
            loss = cand
            # zealous updates: one representative item per cluster, clusters in random order
            for j in range(n):
                order[j] = j
            _shuffle(order, n, rng)
            for k in range(k_alloc):
                imap[k] = 0
            for q in range(n):
                if imap[lab[order[q]]] == 0:
                    imap[lab[order[q]]] = 1
                    reps[n_reps] = order[q]
                    n_reps += 1
        elif cand < loss - 1e-12 * (1.0 + abs(loss)):
            loss = cand
            accepts += 1
        else:  # back to the saved partition, its clusters numbered by first appearance
            for k in range(n):
                imap[k] = -1
            K_saved = np.int64(0)
            for j in range(n):
                if imap[saved[j]] < 0:
                    imap[saved[j]] = K_saved
                    K_saved += 1
            for k in range(k_alloc):
                size[k] = 0
            for j in range(n):
                lab[j] = imap[saved[j]]
                size[lab[j]] += 1
            _call_route(op, _RESTORE, meta, 0, K, -1, K_saved, a, scale, truth_term)
            K = K_saved
        attempt += 1
    out[0] = loss
    out[1] = n_scans
    out[2] = attempts
    out[3] = accepts
    return 1
