"""Co-clustering counts of item pairs along a chain of partitions (numba kernels).

For the pairs (i, j > i) of a block of item rows i0 … i1 − 1 (in ``numpy.triu_indices``
order), :func:`count_until` brings ``C[p]``, the number of draws so far in which the two items
of pair p share a cluster, up to any draw. Two ways, chosen per chain by :func:`use_clock`:

- direct: each run of identical consecutive states adds its length to the pairs it clusters
  together, found from the items grouped by cluster (:func:`add_pairs`): O(pairs together) per
  run, whatever the previous state was;
- clock: a pair's count is acc + (t − last)·1{together now}; when the state changes only the
  pairs that flip are touched. Matching the clusters of consecutive states (:func:`moved_items`)
  finds the items whose cluster changed; only pairs with such an item can flip, so a change costs
  O(n + moved × n), far less than a state's pairs when a sampler moves a few items per draw.
  Reading all counts costs O(pairs) (once per tour or batch boundary).

Both give the same integers. Memory: O(pairs of the block), never pairs × states.
"""

from __future__ import annotations

import numpy as np

from ._numba import lazy_njit

__all__ = ["group", "add_pairs", "moved_items", "new_work", "start_counts", "count_until", "use_clock"]


@lazy_njit(cache=True)
def group(labels_u, order, cstart, pos):
    """Counting sort of the items by label: cluster l holds ``order[cstart[l]:cstart[l + 1]]``
    (ascending); ``pos[i]`` is the place of item i in ``order``. Labels must lie in 0 … n − 1."""
    n = labels_u.shape[0]
    n_l = 0
    for i in range(n):
        if labels_u[i] + 1 > n_l:
            n_l = labels_u[i] + 1
    cstart[: n_l + 1] = 0
    for i in range(n):
        cstart[labels_u[i] + 1] += 1
    for lab in range(n_l):
        cstart[lab + 1] += cstart[lab]
        pos[lab] = cstart[lab]  # pos doubles as the fill pointer of each cluster
    for i in range(n):
        lab = labels_u[i]
        order[pos[lab]] = i
        pos[lab] += 1
    for q in range(n):
        pos[order[q]] = q


@lazy_njit(cache=True)
def add_pairs(acc, lab, w, i0, i1, order, cstart, pos):
    """Add ``w`` to every pair of rows i0 … i1 − 1 that ``lab`` clusters together."""
    group(lab, order, cstart, pos)
    n = lab.shape[0]
    p0 = 0
    for i in range(i0, i1):
        base = p0 - i - 1
        for q in range(pos[i] + 1, cstart[lab[i] + 1]):
            acc[base + order[q]] += w
        p0 += n - i - 1


@lazy_njit(cache=True)
def new_work(n):
    """Scratch arrays: order, cstart, pos, scratch, best, owner, owner_n, moved."""
    return (
        np.empty(n, dtype=np.int64),
        np.empty(n + 1, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.int64),
        np.empty(n, dtype=np.bool_),
    )


@lazy_njit(cache=True)
def moved_items(lu, lv, work):
    """Items whose cluster changes from partition ``lu`` to ``lv``; returns how many.

    Each cluster of ``lv`` is matched with the cluster of ``lu`` it overlaps most, one-to-one
    (a cluster of ``lu`` goes to the ``lv`` cluster that overlaps it most): an item is moved
    unless its two clusters are matched. Two unmoved items are together in ``lv`` iff they are in
    ``lu``, so only pairs with a moved item can change. O(n).
    """
    order, cstart, pos, scratch, best, owner, owner_n, moved = work
    n = lu.shape[0]
    group(lv, order, cstart, pos)
    n_l = 0
    for i in range(n):
        if lv[i] + 1 > n_l:
            n_l = lv[i] + 1
    for k in range(n):
        owner[k] = -1
        owner_n[k] = 0
    for lab in range(n_l):
        top, top_n = -1, 0
        for q in range(cstart[lab], cstart[lab + 1]):
            k = lu[order[q]]
            scratch[k] += 1
            if scratch[k] > top_n:
                top, top_n = k, scratch[k]
        for q in range(cstart[lab], cstart[lab + 1]):
            scratch[lu[order[q]]] = 0
        best[lab] = top
        if top_n > owner_n[top]:
            owner[top] = lab
            owner_n[top] = top_n
    count = 0
    for i in range(n):
        moved[i] = owner[lu[i]] != lv[i]
        count += moved[i]
    return count


@lazy_njit(cache=True)
def _pairs_together(lab, i0, i1, cstart, pos):
    """Pairs of rows i0 … i1 − 1 clustered together (after ``group(lab, ...)``)."""
    total = 0
    for i in range(i0, i1):
        total += cstart[lab[i] + 1] - pos[i] - 1
    return total


@lazy_njit(cache=True)
def _moved_cost(moved, i0, i1):
    """Pairs of rows i0 … i1 − 1 with a moved item: what the moved-items update visits."""
    n = moved.shape[0]
    cost = 0
    for i in range(n):
        if moved[i]:
            if i0 <= i < i1:
                cost += n - i - 1
            cost += max(0, min(i, i1) - i0)
    return cost


@lazy_njit(cache=True)
def _flip(acc, last, p, was_together, t):
    """Pair p changes state at draw t: close its time together, or open one."""
    if was_together:
        acc[p] += t - last[p]
    else:
        last[p] = t


@lazy_njit(cache=True)
def _rebase(acc, last, lu, lv, t, i0, i1, work):
    """Change of state at draw t through both states' pairs together (when many items move)."""
    order, cstart, pos = work[0], work[1], work[2]
    n = lu.shape[0]
    for lab, closing in ((lu, True), (lv, False)):
        group(lab, order, cstart, pos)
        p0 = 0
        for i in range(i0, i1):
            base = p0 - i - 1
            for q in range(pos[i] + 1, cstart[lab[i] + 1]):
                p = base + order[q]
                if closing:
                    acc[p] += t - last[p]
                else:
                    last[p] = t
            p0 += n - i - 1


@lazy_njit(cache=True)
def _move(acc, last, lu, lv, t, i0, i1, work):
    """The state changes from ``lu`` to ``lv`` at draw t: update the pairs that flip."""
    moved = work[7]
    n = lu.shape[0]
    n_moved = moved_items(lu, lv, work)
    if n_moved == 0:
        return
    # visiting the moved items' pairs touches scattered entries: ~4 times the cost per pair of
    # the sequential walk over both states' pairs together
    scattered = 4 * _moved_cost(moved, i0, i1)
    order, cstart, pos = work[0], work[1], work[2]
    group(lu, order, cstart, pos)
    together = _pairs_together(lu, i0, i1, cstart, pos)
    group(lv, order, cstart, pos)
    together += _pairs_together(lv, i0, i1, cstart, pos)
    if scattered > together:
        _rebase(acc, last, lu, lv, t, i0, i1, work)
        return
    for i in range(n):
        if not moved[i]:
            continue
        if i0 <= i < i1:  # row i: pairs (i, j > i), moved j included (handled by the smaller item)
            base = (i - i0) * (2 * n - i0 - i - 1) // 2 - i - 1
            for j in range(i + 1, n):
                was = lu[i] == lu[j]
                if was != (lv[i] == lv[j]):
                    _flip(acc, last, base + j, was, t)
        for j in range(i0, min(i, i1)):  # column i: pairs (j < i, i) of unmoved j in the rows
            if moved[j]:
                continue
            was = lu[j] == lu[i]
            if was != (lv[j] == lv[i]):
                _flip(acc, last, (j - i0) * (2 * n - i0 - j - 1) // 2 + i - j - 1, was, t)


@lazy_njit(cache=True)
def use_clock(idx, ulabels, start, stop, i0, i1, work):
    """Whether following the changes of state (clock) is cheaper than adding runs (direct).

    Direct: Σ over runs of the pairs together; clock: Σ over changes of the cheaper update
    (moved items' pairs, or both states' pairs together) plus one pass over all pairs per change
    it saves nothing on. Estimated in one O(n) pass per change of state.
    """
    direct = 0.0
    clock = 0.0
    order, cstart, pos = work[0], work[1], work[2]
    cur = -1
    for t in range(start, stop):
        v = idx[t]
        if v == cur:
            continue
        group(ulabels[v], order, cstart, pos)
        pv = float(_pairs_together(ulabels[v], i0, i1, cstart, pos))
        direct += pv
        if cur >= 0:
            moved_items(ulabels[cur], ulabels[v], work)
            group(ulabels[cur], order, cstart, pos)
            pu = float(_pairs_together(ulabels[cur], i0, i1, cstart, pos))
            clock += min(4.0 * _moved_cost(work[7], i0, i1), pu + pv)
        cur = v
    return clock < 0.7 * direct


@lazy_njit(cache=True)
def start_counts(C, acc, last, t):
    """All counts zero at draw t."""
    C[:] = 0.0
    acc[:] = 0.0
    last[:] = t


@lazy_njit(cache=True)
def count_until(clock, C, acc, last, idx, ulabels, cur, t, stop, i0, i1, work):
    """Bring ``C`` from draw t to ``stop`` (C[p]: draws < stop with pair p together).

    ``cur`` is the state at draw t − 1 (−1 before the first draw); returns the state at draw
    stop − 1. ``clock``: follow the changes of state (``acc``, ``last``), else add the runs.
    """
    if not clock:
        order, cstart, pos = work[0], work[1], work[2]
        while t < stop:
            u = idx[t]
            w = 1
            while t + w < stop and idx[t + w] == u:
                w += 1
            add_pairs(C, ulabels[u], w, i0, i1, order, cstart, pos)
            t += w
            cur = u
        return cur
    for s in range(t, stop):
        v = idx[s]
        if v != cur:
            if cur < 0:
                group(ulabels[v], work[0], work[1], work[2])  # first draw: pairs start together
                _rebase_open(last, ulabels[v], float(s), i0, i1, work)
            else:
                _move(acc, last, ulabels[cur], ulabels[v], float(s), i0, i1, work)
            cur = v
    if cur < 0:
        return cur
    C[:] = acc
    lab = ulabels[cur]
    order, cstart, pos = work[0], work[1], work[2]
    group(lab, order, cstart, pos)
    n = lab.shape[0]
    p0 = 0
    for i in range(i0, i1):  # the pairs together now add their current time together
        base = p0 - i - 1
        for q in range(pos[i] + 1, cstart[lab[i] + 1]):
            p = base + order[q]
            C[p] += stop - last[p]
        p0 += n - i - 1
    return cur


@lazy_njit(cache=True)
def _rebase_open(last, lab, t, i0, i1, work):
    """The pairs ``lab`` clusters together start their time together at draw t."""
    order, cstart, pos = work[0], work[1], work[2]
    n = lab.shape[0]
    p0 = 0
    for i in range(i0, i1):
        base = p0 - i - 1
        for q in range(pos[i] + 1, cstart[lab[i] + 1]):
            last[base + order[q]] = t
        p0 += n - i - 1
