"""Items grouped by cluster, and the pairs a partition clusters together (numba helpers).

:func:`group` sorts the items by label (a counting sort); :func:`add_pairs` adds a weight to
every pair of a block of item rows that a partition clusters together, in O(those pairs), for
the sums by runs of identical states (:func:`arviz_regen.base.pair_sums.pair_run_sums`).
"""

from __future__ import annotations

from .lazy_jit import lazy_njit

__all__ = ["group", "add_pairs"]


# called from compiled code only: no Python or C entry points to compile
@lazy_njit(cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def group(labels_u, order, cstart, pos):
    """Sort the items by label (counting sort).

    Cluster l holds ``order[cstart[l]:cstart[l + 1]]`` (ascending); ``pos[i]`` is the place of item i in ``order``.
    Labels must lie in 0 … n − 1. Returns the number of labels (the largest + 1).
    """
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
    return n_l


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
