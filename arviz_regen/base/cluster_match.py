"""Matching the clusters of two consecutive partitions of a chain (numba helper).

Each cluster of the new partition goes to the cluster of the old one it overlaps most, one to
one (an old cluster goes to the new cluster that takes most of it); an item is *moved* unless
its old and new clusters are matched. Two unmoved items are together in the new partition iff
they were in the old one, so whatever changes between the two partitions involves a moved item:
a sampler that moves a few items per draw moves few items here, whatever the labels (canonical
labels of all clusters after a new one shift by one).
"""

from __future__ import annotations

import numpy as np

from .lazy_jit import lazy_njit

__all__ = ["group_and_match", "match_rows", "load_labels", "WORK_ROWS"]

#: rows of the integer scratch array (n_items + 1 columns): 0 old labels, 1 new labels, 2/3 the
#: old partition's positions by cluster and cluster starts, 4/5 the new one's, 6 fill pointers,
#: 7 overlap counts (zero between calls), 8 matched new cluster of each old cluster (−1: none),
#: 9 its overlap, 10 moved flags
WORK_ROWS = 11


# called from compiled code only: no Python or C entry points to compile
@lazy_njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def load_labels(labels, perm, out):
    """out[i] = labels[perm[i]] for the n positions; returns the number of clusters."""
    n_l = np.int64(0)
    for i in range(perm.shape[0]):
        out[i] = labels[perm[i]]
        if out[i] >= n_l:
            n_l = out[i] + 1
    return n_l


@lazy_njit(cache=True, no_cfunc_wrapper=True)
def group_and_match(n_u, n_v, regroup_u, work):
    """Group the positions of both partitions by cluster, match clusters, flag moved positions.

    Parameters
    ----------
    n_u, n_v : int
        Clusters of the old (``work[0]``) and new (``work[1]``) labels, each in 0 … n − 1.
    regroup_u : bool
        Group the old partition too (else ``work[2], work[3]`` already hold its grouping).
    work : int64 (WORK_ROWS, n + 1)

    Returns
    -------
    int
        Moved positions (flagged 1 in ``work[10]``); ``work[8]`` the matching.
    """
    n = work.shape[1] - 1
    w = work
    return match_rows(n_u, n_v, regroup_u, n, w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10])


# the rows as arrays (group_and_match) or as pointers (the scan of arviz_regen.base.track_scan):
# one algorithm, compiled for each
@lazy_njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def match_rows(n_u, n_v, regroup_u, n, lu, lv, ou, cu, ov, cv, fp, overlap, owner, owner_n, moved):
    """:func:`group_and_match` on the rows of ``work`` given one by one (:data:`WORK_ROWS`)."""
    for side in range(2):
        if side == 0 and not regroup_u:
            continue
        lab = lu if side == 0 else lv
        order = ou if side == 0 else ov
        cs = cu if side == 0 else cv
        n_l = n_u if side == 0 else n_v
        for q in range(n_l + 1):
            cs[q] = 0
        for i in range(n):
            cs[lab[i] + 1] += 1
        for q in range(n_l):
            cs[q + 1] += cs[q]
            fp[q] = cs[q]
        for i in range(n):
            order[fp[lab[i]]] = i
            fp[lab[i]] += 1
    for q in range(n_u):
        owner[q] = -1
        owner_n[q] = 0
    for lab_v in range(n_v):
        top = -1
        top_n = 0
        for q in range(cv[lab_v], cv[lab_v + 1]):
            k = lu[ov[q]]
            overlap[k] += 1
            if overlap[k] > top_n:
                top = k
                top_n = overlap[k]
        for q in range(cv[lab_v], cv[lab_v + 1]):
            overlap[lu[ov[q]]] = 0
        if top_n > owner_n[top]:
            owner[top] = lab_v
            owner_n[top] = top_n
    count = 0
    for i in range(n):
        moved[i] = 1 if owner[lu[i]] != lv[i] else 0
        count += moved[i]
    return count
