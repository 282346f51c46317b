"""Draws in which each pair of items is clustered together, along chains (one lean numba kernel).

What :func:`~arviz_regen.base.pair_kernels.chain_frequencies` needs for Binder's loss and the
co-clustering plot: totals only, no batches or tours, so no per-pair state beyond one number.
A pair together over the draws s … e − 1 adds e − s: its count is Σ (draws where it parts) −
Σ (draws where it joins), plus the chain's length if it ends together. Those terms add up in any
order, so a change is written to whichever of the pair's two cells is in the row of the moved
item (rows stay in cache) and the two halves are summed at the end; the work is O(changes of
pairs + pairs together at the ends), as in :mod:`~arviz_regen.base.pair_sums`, from a kernel
that compiles several times faster (no change buffers, slots or tours).

The pairs that change between consecutive draws involve an item whose cluster changed: each old
cluster goes to the new cluster holding most of it (a majority vote, then one to one; any
one-to-one map is exact, a good one keeps the moved items few), and an item is *moved* unless
its new cluster is its old cluster's match. All counts are integers below 2⁵³, exact in float64.
"""

from __future__ import annotations

from .lazy_jit import lazy_njit
from .pair_counts import group

__all__ = ["together_counts", "TOGETHER_WORK_ROWS"]

#: rows of the integer scratch (n_items + 1 columns): 0/1 the old partition's items by cluster
#: and its cluster starts, 2/3 the new one's, 4 scratch of the grouping, 5/6 each old cluster's vote
#: (candidate, count), 7 each new cluster's matched old cluster, 8 moved flags
TOGETHER_WORK_ROWS = 9


@lazy_njit(cache=True, _nrt=False)
def together_counts(index, ulabels, acc, work):
    """Add to ``acc`` the draws of the chains in which each pair is together, split between its two cells.

    Parameters
    ----------
    index : int64 (n_chain, n_draw)
        State of every draw (a row of ``ulabels``).
    ulabels : int64 (n_states, n)
        Labels in 0 … n − 1.
    acc : float64 (n, n)
        Receives the counts: the draws with i, j together are acc[i, j] + acc[j, i] (i ≠ j).
    work : int64 (TOGETHER_WORK_ROWS, n + 1)
        Scratch.
    """
    n = ulabels.shape[1]
    ou, cu, ov, cv = work[0], work[1], work[2], work[3]
    fill, cand, votes, match, moved = work[4], work[5], work[6], work[7], work[8]
    m = index.shape[1]
    for c in range(index.shape[0]):
        u = index[c, 0]
        lu = ulabels[u]
        n_u = group(lu, ou, cu, fill)
        for t in range(1, m):
            v = index[c, t]
            if v == u:
                continue
            lv = ulabels[v]
            n_v = group(lv, ov, cv, fill)
            for a in range(n_u):
                votes[a] = 0
            for i in range(n):  # each old cluster's majority new cluster (Boyer-Moore vote)
                a = lu[i]
                if votes[a] == 0:
                    cand[a] = lv[i]
                    votes[a] = 1
                elif cand[a] == lv[i]:
                    votes[a] += 1
                else:
                    votes[a] -= 1
            for b in range(n_v):
                match[b] = -1
            for a in range(n_u):  # one to one: a new cluster keeps its strongest voter
                if votes[a] > 0:
                    b = cand[a]
                    if match[b] < 0 or votes[a] > votes[match[b]]:
                        match[b] = a
            for i in range(n):
                a = lu[i]
                moved[i] = 0 if votes[a] > 0 and lv[i] == cand[a] and match[cand[a]] == a else 1
            # a moved item's old mates now apart part at t, its new mates join at t; a pair of
            # two moved items is written once, from the first
            for i in range(n):
                if moved[i] == 0:
                    continue
                a = lu[i]
                for q in range(cu[a], cu[a + 1]):
                    j = ou[q]
                    if j != i and (moved[j] == 0 or j > i) and lv[j] != lv[i]:
                        acc[i, j] += t
                b = lv[i]
                for q in range(cv[b], cv[b + 1]):
                    j = ov[q]
                    if j != i and (moved[j] == 0 or j > i) and lu[j] != lu[i]:
                        acc[i, j] -= t
            ou, ov = ov, ou
            cu, cv = cv, cu
            lu = lv
            n_u = n_v
            u = v
        for a in range(n_u):  # pairs together at the end of the chain
            for q in range(cu[a], cu[a + 1]):
                i = ou[q]
                for r in range(q + 1, cu[a + 1]):
                    acc[i, ou[r]] += m
