"""Sums of the co-clustering indicators of item pairs along a chain (one numba kernel).

For a chain of partitions and the pairs (i, j > i) of the item rows i0 … i1 − 1,
:func:`pair_interval_sums` accumulates per pair the draws together in total and, for each
*slot* (a cutting of the draws into consecutive intervals: the batches of batch means, or the
tours between visits to the regeneration state), Σ_r B_r, Σ_r B_r² and Σ_r N_r B_r over the
whole intervals r (B_r: draws together in interval r, N_r its length), and copies chosen sums
at chosen draws (estimates along the chain).

A sampler moves a few items per draw, so a pair's indicator stays constant for long stretches.
Each pair keeps the draw of its last change; the stretch since then is settled (constant
indicator: the whole intervals in between add N_r and N_r² from running sums, in O(1)) only when
the pair changes again, or at the end. The work is O(changes of pairs + pairs), not
O(pairs × intervals). The pairs that change between consecutive draws are those of an item whose
cluster changed, found by matching the clusters of the two partitions (each new cluster to the
old one it overlaps most, one-to-one); only that item's old and new cluster mates are visited.

Memory access decides the speed: a change touches the state of one pair (a few words) in a
large array. Two things keep it local. The items are numbered by the clusters of a reference
partition (``perm``; the pair axis follows that numbering), so a moved item's mates are
neighbours; and changes are appended to a buffer per bucket of 2^14 consecutive pairs and
settled bucket by bucket when a buffer fills (a pair's changes stay in draw order), so each
settling pass works in a small part of the state.

All arithmetic is on integers: the sums are exact whatever the order of the work. The kernel
allocates nothing; the caller passes every array (few compiled functions, quick to compile).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .cluster_match import WORK_ROWS, group_and_match, load_labels
from .lazy_jit import lazy_njit
from .pair_counts import add_pairs

__all__ = [
    "pair_interval_sums", "pair_run_sums", "cheaper_by_runs", "sampled_changes", "PairSums", "BUCKET_SHIFT",
    "BUCKET_EVENTS", "Chain", "PairBlock", "Intervals", "ChangeState", "IntervalEnds", "RunState",
]  # fmt: skip

#: log2 of the pairs per bucket (hard-coded in the kernels: 14 bits of the change code)
BUCKET_SHIFT = 14

#: changes buffered per bucket before they are settled
BUCKET_EVENTS = 1 << 14

# the kernels' arguments, grouped (numba reads a named tuple's fields at no cost)
Chain = namedtuple("Chain", "idx ulabels")
Chain.__doc__ = """One chain: ``idx`` int64 (m,) the state of each draw, a row of ``ulabels`` int64
(n_states, n) (labels in 0 … n − 1)."""
PairBlock = namedtuple("PairBlock", "perm i0 i1")
PairBlock.__doc__ = """The pairs summed: ``perm`` int64 (n,) the item at each position; the pairs
of positions (i, j > i), i0 ≤ i < i1, in ``numpy.triu_indices`` order restricted to those rows
(P of them)."""
Intervals = namedtuple("Intervals", "slots binv tours")
Intervals.__doc__ = """The cuttings of the draws (see :func:`pair_interval_sums`)."""
ChangeState = namedtuple("ChangeState", "st buf fill work")
ChangeState.__doc__ = """The per-pair sums and scratch of :func:`pair_interval_sums`."""
IntervalEnds = namedtuple("IntervalEnds", "ev_t ev_q ev_n")
IntervalEnds.__doc__ = """The interval ends of all slots sorted by draw (see :func:`pair_run_sums`)."""
RunState = namedtuple("RunState", "st count work")
RunState.__doc__ = """The per-pair sums, counts and scratch of :func:`pair_run_sums`."""


@lazy_njit(cache=True)
def _drain(state, k, intervals):
    """Settle the buffered changes of bucket k in draw order.

    A change code holds the draw t at which the pair's indicator changed (bits 21 …), its place
    in the bucket (bits 1 … 14) and its indicator before t (bit 0): the pair had that indicator
    over the draws st[p, 0] … t − 1.
    """
    st, buf, fill, _ = state
    slots, binv, tours = intervals
    base = k << 14
    for e in range(fill[k]):
        code = buf[k, e]
        t = code >> 21
        p = base + ((code >> 1) & 0x3FFF)
        x = code & 1
        s = st[p, 0]
        if s >= t:
            continue
        st[p, 0] = t
        st[p, 1] += x * (t - s)
        for q in range(slots.shape[0]):
            b = slots[q, 0]
            n_iv = slots[q, 1]
            c = slots[q, 2]
            if b > 0:  # batches of b draws: 0 … a − 1 whole; a: the draws after them
                rs = np.int64(s * binv[q])
                while (rs + 1) * b <= s:
                    rs += 1
                while rs * b > s:
                    rs -= 1
                re = np.int64(t * binv[q])
                while (re + 1) * b <= t:
                    re += 1
                while re * b > t:
                    re -= 1
                rs = min(rs, n_iv)
                re = min(re, n_iv)
                start_s = rs * b
                start_e = re * b
                end_s = start_s + b
            else:  # tours: tours[0, t] = −1 before the first, R from the end of the last
                rs = tours[0, s]
                re = tours[0, t]
                start_s = tours[1, max(rs, 0)]
                start_e = tours[1, min(re, n_iv)]
                end_s = tours[1, rs + 1]
            if rs == re:
                if 0 <= rs < n_iv:
                    st[p, c] += x * (t - s)
                continue
            lo = rs + 1
            if rs >= 0:  # interval rs ends: add its sums
                bb = st[p, c] + x * (end_s - s)
                st[p, c + 1] += bb
                st[p, c + 2] += bb * bb
                if b == 0:
                    st[p, c + 3] += (end_s - start_s) * bb
            else:
                lo = 0
            if x:  # whole intervals lo … re − 1 in between
                if b > 0:
                    st[p, c + 1] += (re - lo) * b
                    st[p, c + 2] += (re - lo) * b * b
                else:
                    st[p, c + 1] += tours[2, re] - tours[2, lo]
                    st[p, c + 2] += tours[3, re] - tours[3, lo]
                    st[p, c + 3] += tours[3, re] - tours[3, lo]
            st[p, c] = x * (t - start_e) if re < n_iv else 0
    fill[k] = 0


@lazy_njit(cache=True)
def pair_interval_sums(chain, block, intervals, state, t0, t1, cur):
    """Bring the per-pair sums of one chain from draw t0 to draw t1 (see the module docstring).

    Parameters
    ----------
    chain : Chain
        ``idx`` int64 (m,): the state of each draw, a row of ``ulabels`` (labels in 0 … n − 1).
    block : PairBlock
        ``perm`` int64 (n,): the item at each position; the pairs are those of positions
        (i, j > i), i0 ≤ i < i1, in ``numpy.triu_indices`` order restricted to those rows; P of
        them.
    intervals : Intervals
        ``slots``, ``binv``, ``tours`` below.
    state : ChangeState
        ``st``, ``buf``, ``fill``, ``work`` below.
    t0, t1, cur : int
        Draws t0 … t1 − 1 are added; ``cur`` is the state of draw t0 − 1 (−1 when t0 = 0).
    slots : int64 (n_slots, 3)
        Per slot: batch size b (0: the tour slot), number of whole intervals (a batches, or R
        tours) and the first of its state columns (partial B, Σ B, Σ B², and for tours Σ N B).
    binv : float64 (n_slots,)
        1 / b for batch slots.
    tours : int64 (4, ≥ m + 1)
        Tour slot: row 0 the tour of each draw 0 … m (−1 before τ_0, R from τ_R on); rows 1 …
        3 τ_0 … τ_R and the running sums of N_r and N_r² (first R + 1 entries).
    st : int64 (P, n_cols)
        Column 0: draw of the last change; 1: draws together; then the slots'. Zeros at t0 = 0.
    buf, fill : int64 (n_buckets, cap), int64 (n_buckets,) zeros
        Change buffers, n_buckets = ⌈P / 2^14⌉.
    work : int64 (WORK_ROWS, n + 1)
        Scratch.

    Returns
    -------
    int
        The state of draw t1 − 1. Every pair is settled up to t1: ``st`` holds the sums over
        the draws 0 … t1 − 1.
    """
    idx, ulabels = chain
    perm, i0, i1 = block
    _, buf, fill, work = state
    n = ulabels.shape[1]
    cap = buf.shape[1]
    lu = work[0]
    lv = work[1]
    ou = work[2]
    cu = work[3]
    ov = work[4]
    cv = work[5]
    moved = work[10]
    for i in range(n + 1):
        work[7, i] = 0  # overlap counts of the matching
    u_cur = -1  # state whose grouping lu, ou, cu hold
    n_u = np.int64(0)
    for t in range(t0, t1 + 1):
        if t == t1:
            # settle every pair up to t1 with the state of draw t1 − 1 (as changes at t1)
            if cur < 0:
                break
            load_labels(ulabels[cur], perm, lv)
            p = 0
            for i in range(i0, i1):
                for j in range(i + 1, n):
                    k = p >> 14
                    buf[k, fill[k]] = (t << 21) | ((p & 0x3FFF) << 1) | (1 if lv[i] == lv[j] else 0)
                    fill[k] += 1
                    if fill[k] == cap:
                        _drain(state, k, intervals)
                    p += 1
            for k in range(buf.shape[0]):
                _drain(state, k, intervals)
            break
        v = idx[t]
        if cur < 0 or v == cur:
            cur = v
            continue
        # both partitions, by position, grouped by cluster (positions ascending in a cluster),
        # and matched; the old one was grouped as the new one of the previous change
        n_v = load_labels(ulabels[v], perm, lv)
        if u_cur != cur:
            n_u = load_labels(ulabels[cur], perm, lu)
        group_and_match(n_u, n_v, u_cur != cur, work)
        # pairs of a moved item that change: its old mates now apart (x = 1 before), its new
        # mates (x = 0 before); a pair of two moved items is visited from the first
        for i in range(i0, n):
            if moved[i] == 0:
                continue
            hi = i1 if i >= i1 else n  # partner j: the pair's row min(i, j) is a block row
            for side in range(2):
                cs = cu if side == 0 else cv
                order = ou if side == 0 else ov
                lab_i = lu[i] if side == 0 else lv[i]
                lo = cs[lab_i]
                up = cs[lab_i + 1]
                while lo < up:  # first mate at a position ≥ i0 (mates are in position order)
                    mid = (lo + up) >> 1
                    if order[mid] < i0:
                        lo = mid + 1
                    else:
                        up = mid
                for q in range(lo, cs[lab_i + 1]):
                    j = order[q]
                    if j >= hi:
                        break
                    if j == i or (moved[j] == 1 and j < i):
                        continue
                    if (lv[j] == lv[i]) if side == 0 else (lu[j] == lu[i]):
                        continue
                    r = i if i < j else j
                    p = (r - i0) * (2 * n - i0 - r - 1) // 2 + (j if i < j else i) - r - 1
                    k = p >> 14
                    buf[k, fill[k]] = (t << 21) | ((p & 0x3FFF) << 1) | (1 - side)
                    fill[k] += 1
                    if fill[k] == cap:
                        _drain(state, k, intervals)
        for i in range(n):
            lu[i] = lv[i]
            ou[i] = ov[i]
        for q in range(n_v + 1):
            cu[q] = cv[q]
        n_u = n_v
        u_cur = v
        cur = v
    return cur


@lazy_njit(cache=True)
def pair_run_sums(chain, block, ends, slots, state, t0, t1):
    """Bring the same sums up to date by runs of identical states, for chains whose pairs change a lot per draw.

    Each run of identical states adds its length to the pairs it clusters together (O(pairs
    together)); at each interval end every pair's count since the slot's last end is its B
    (O(pairs)). ``ev_t, ev_q, ev_n``: the interval ends of all slots sorted by draw (the draw
    that starts the next interval), their slot and the interval's length (−1: the start of the
    first tour). ``count``: int64 (P,) draws together so far; ``st`` as for
    :func:`pair_interval_sums`, the slot's first column holding the count at its last end.
    Adds the draws t0 … t1 − 1 and the ends at draws t0 < t ≤ t1 (``chain``, ``block``: as for
    :func:`pair_interval_sums`; ``ends``: :class:`IntervalEnds`, ``state``: :class:`RunState`).
    """
    idx, ulabels = chain
    perm, i0, i1 = block
    ev_t, ev_q, ev_n = ends
    st, count, work = state
    n = ulabels.shape[1]
    lab = work[0]
    order = work[2]
    cstart = work[3]
    pos = work[4]
    lo = 0
    up = ev_t.shape[0]
    while lo < up:  # first end after t0
        mid = (lo + up) >> 1
        if ev_t[mid] <= t0:
            lo = mid + 1
        else:
            up = mid
    e = lo
    t = t0
    while t < t1:
        u = idx[t]
        stop = t1 if e == ev_t.shape[0] else min(t1, ev_t[e])
        w = 1
        while t + w < stop and idx[t + w] == u:
            w += 1
        load_labels(ulabels[u], perm, lab)
        add_pairs(count, lab[:n], w, i0, i1, order, cstart, pos)
        t += w
        while e < ev_t.shape[0] and ev_t[e] == t:
            c = slots[ev_q[e], 2]
            length = ev_n[e]
            tour = slots[ev_q[e], 0] == 0
            if length >= 0:
                for p in range(count.shape[0]):
                    d = count[p] - st[p, c]
                    st[p, c + 1] += d
                    st[p, c + 2] += d * d
                    if tour:
                        st[p, c + 3] += length * d
            for p in range(count.shape[0]):
                st[p, c] = count[p]
            e += 1
    for p in range(count.shape[0]):
        st[p, 1] = count[p]


#: cost of settling one pair's change, of adding one pair of a run, and of reading one pair at
#: an interval end, relative (their measured times: docs/performance.md, "Figures behind the code")
COST_CHANGE, COST_RUN_PAIR, COST_END_PAIR = 30.0, 1.5, 3.0


def _together(*labels):
    """Pairs clustered together in each row of ``labels`` ``(m, n)`` (several: by all of them at once).

    One bincount over all rows (each row's joint keys offset by the key range) while that range is
    compact, as with canonical labels; else one bincount per row.
    """
    key = labels[0].astype(np.int64, copy=False)  # one partition: its labels are the keys (no copy of int64)
    for lab in labels[1:]:
        key = key * (int(lab.max(initial=0)) + 1) + lab  # canonical labels: small, no overflow
    m, K = key.shape[0], int(key.max(initial=0)) + 1
    if m * K > 4 * key.size + 1024:
        return np.array([float((c * (c - 1) // 2).sum()) for c in map(np.bincount, key)])
    c = np.bincount((key + K * np.arange(m)[:, None]).ravel(), minlength=m * K).reshape(m, K)
    return (c * (c - 1) // 2).sum(axis=1).astype(np.float64)


def sampled_changes(idx, ulabels, n_sample=64):
    """Count a chain's changes of state and estimate what they flip, from up to ``n_sample`` of them.

    Returns (changes, flips, together): the draws whose state differs from the previous one, the
    mean pairs whose indicator flips at such a draw, T_u + T_v − 2 Σ_kl C(n_kl, 2) (T: pairs
    together, n_kl: the contingency table of the two partitions), and the mean pairs together
    after it (0, 0.0, 0.0 without a change).
    """
    idx = np.asarray(idx)
    change = np.flatnonzero(idx[1:] != idx[:-1]) + 1
    if change.size == 0:
        return 0, 0.0, 0.0
    pick = change[np.linspace(0, change.size - 1, min(n_sample, change.size)).astype(np.int64)]
    before, after = np.asarray(ulabels[idx[pick - 1]]), np.asarray(ulabels[idx[pick]])
    t_after = _together(after)
    flips = np.mean(_together(before) + t_after - 2 * _together(before, after))
    return int(change.size), float(flips), float(np.mean(t_after))


def cheaper_by_runs(idx, ulabels, n_ends, share, n_sample=64):
    """Whether counting by runs beats following the changes for this chain (a cost estimate).

    Changes: the pairs whose indicator flips (:func:`sampled_changes`, from up to ``n_sample``
    changes); runs: the pairs together of each run plus every pair at each of the ``n_ends``
    interval ends. ``share``: the block's fraction of all pairs.
    """
    n = ulabels.shape[1]
    n_changes, flips, per_run = sampled_changes(idx, ulabels, n_sample)
    if n_changes == 0:
        return False
    n_pairs = n * (n - 1) / 2
    by_changes = COST_CHANGE * flips * n_changes * share
    by_runs = COST_RUN_PAIR * per_run * (n_changes + 1) * share + COST_END_PAIR * n_ends * n_pairs * share
    return by_runs < by_changes


class PairSums:
    """Scratch and calls of :func:`pair_interval_sums` for the pairs of one block of rows.

    Parameters
    ----------
    n : int
        Items.
    rows : (i0, i1)
        Positions whose pairs (i, j > i) are summed.
    perm : int64 (n,)
        Item at each position (see :func:`pair_interval_sums`).
    """

    def __init__(self, n, rows, perm):
        self.n = int(n)
        self.i0, self.i1 = int(rows[0]), int(rows[1])
        self.P = (self.i1 - self.i0) * (2 * self.n - self.i0 - self.i1 - 1) // 2
        self.perm = np.ascontiguousarray(perm, dtype=np.int64)
        n_buckets = max(1, -(-self.P // (1 << BUCKET_SHIFT)))
        self.buf = np.empty((n_buckets, BUCKET_EVENTS), dtype=np.int64)
        self.fill = np.zeros(n_buckets, dtype=np.int64)
        self.work = np.empty((WORK_ROWS, self.n + 1), dtype=np.int64)

    def run(self, idx, ulabels, slots, binv, tours, n_cols, snap_t=(), snap_cols=(), method="auto"):
        """Run the chain; return its final state and the snapshots.

        State (P, n_cols) at the end of the chain and the snapshots (E, len(snap_cols), P): the columns ``snap_cols``
        after the draws 0 … snap_t[e] − 1 (snap_t sorted).

        ``method``: "changes" (:func:`pair_interval_sums`), "runs" (:func:`pair_run_sums`) or
        "auto", the cheaper for this chain by :func:`cheaper_by_runs`. Both give the same sums.
        """
        idx = np.ascontiguousarray(idx, dtype=np.int64)
        slots = np.ascontiguousarray(slots, dtype=np.int64).reshape(-1, 3)
        tours = np.ascontiguousarray(tours, dtype=np.int64)
        snap_t = np.asarray(snap_t, dtype=np.int64).reshape(-1)
        snap_cols = np.asarray(snap_cols, dtype=np.int64).reshape(-1)
        out = np.zeros((snap_t.size, snap_cols.size, self.P), dtype=np.int64)
        ends = self._ends(slots, tours, idx.size)
        chain, block = Chain(idx, ulabels), PairBlock(self.perm, self.i0, self.i1)
        if method == "auto":
            share = self.P / max(1.0, self.n * (self.n - 1) / 2)
            method = "runs" if cheaper_by_runs(idx, ulabels, ends[0].size, share) else "changes"
        if method == "runs":
            # column by column (Fortran order): the passes over all pairs at interval ends stream
            st = np.zeros((n_cols, self.P), dtype=np.int64).T
            count = np.zeros(self.P, dtype=np.int64)
            run_ends, state = IntervalEnds(*ends), RunState(st, count, self.work)

            def step(t, stop, cur):
                pair_run_sums(chain, block, run_ends, slots, state, t, stop)
                return cur

        else:
            st = np.zeros((self.P, n_cols), dtype=np.int64)  # a pair's state in one place
            binv = np.ascontiguousarray(binv, dtype=np.float64)
            self.fill[:] = 0

            intervals = Intervals(slots, binv, tours)
            state = ChangeState(st, self.buf, self.fill, self.work)

            def step(t, stop, cur):
                return pair_interval_sums(chain, block, intervals, state, t, stop, cur)

        t, cur = 0, -1
        for e, stop in enumerate(snap_t):
            if stop > t:
                cur = step(t, stop, cur)
                t = stop
            out[e] = st[:, snap_cols].T
        if idx.size > t:
            step(t, idx.size, cur)
        return st, out

    @staticmethod
    def _ends(slots, tours, m):
        """Interval ends of all slots sorted by draw: (draw, slot, length; −1 the first tour's start)."""
        t, q, length = [], [], []
        for k, (b, count, _) in enumerate(slots):
            if b > 0:
                t.append(b * np.arange(1, count + 1))
                length.append(np.full(count, b))
            else:
                tau = tours[1, : count + 1] if count else tours[1, :0]
                t.append(tau)
                length.append(np.concatenate([[-1], np.diff(tau)]) if tau.size else tau)
            q.append(np.full(t[-1].size, k))
        t, q, length = (
            np.concatenate(v).astype(np.int64) if v else np.zeros(0, dtype=np.int64) for v in (t, q, length)
        )
        order = np.argsort(t, kind="stable")
        return t[order], q[order], length[order]
