"""The compiled pass of :mod:`arviz_regen.base.cluster_tracks` over the draws (epochs and segments).

:func:`scan` runs :func:`_scan_op`, a C callback compiled once (and cached on disk) that reads
its arrays through plain pointers described by one int64 ``meta`` array
(:func:`arviz_regen.base.addresses.describe`), as the SALSO route functions do
(:mod:`arviz_regen.base.salso_ops`): no Python entry point unboxing a dozen arrays, no array
views to reference-count; the matching of consecutive partitions
(:func:`arviz_regen.base.cluster_match.match_rows`) is compiled for pointers. Both go through
:class:`arviz_regen.base.kernel_compiler.Compiler`.

Imported by the first scan (this module imports numba: ``import arviz_regen`` does not).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types

from .addresses import describe
from .addresses import float64_at as _float64_at
from .addresses import int64_at as _int64_at
from .cluster_match import WORK_ROWS, match_rows
from .kernel_compiler import INNER as _INNER
from .kernel_compiler import compile_cfunc

__all__ = ["SCAN_ARRAYS", "scan"]

#: the arrays of a scan, (name, dtype, ndim) each: the state of every draw (chains one after the
#: other), 1 at a chain's first draw, the draws' weights, the states' labels; what it records
#: (each epoch's track and weight; each segment's item, track, first and last epoch); scratch
#: (each cluster's track for the current and next draw and each item's current segment; each
#: track's current epoch and the draw that last started one; the matching's rows); the counts
#: of epochs, segments and tracks
SCAN_ARRAYS = (
    ("seq", np.int64, 1), ("first", np.int64, 1), ("w", np.float64, 1), ("ulabels", np.int64, 2),
    ("ep_track", np.int64, 1), ("ep_w", np.float64, 1), ("seg", np.int64, 2),
    ("cl", np.int64, 2), ("tr", np.int64, 2), ("work", np.int64, 2), ("out", np.int64, 1),
)  # fmt: skip

_SEQ, _FIRST, _W, _UL, _EPT, _EPW, _SEG, _CL, _TR, _WORK, _OUT = (4 * s for s in range(len(SCAN_ARRAYS)))

_COMPILED = {}

#: the matching of consecutive partitions, compiled for pointers like the scan (the array
#: version, :func:`~arviz_regen.base.cluster_match.group_and_match`, compiles it for arrays)
_match_rows = numba.njit(**_INNER)(match_rows.py_func)


@numba.njit(**_INNER)
def _load(src, dst, n):
    """dst[i] = src[i] for the n positions (addresses); returns the number of clusters."""
    s = _int64_at(src)
    d = _int64_at(dst)
    n_l = np.int64(0)
    for i in range(n):
        d[i] = s[i]
        if d[i] >= n_l:
            n_l = d[i] + 1
    return n_l


def _scan_op(meta, fill):
    """One pass over the draws: count (``fill`` 0) or record the epochs and segments.

    Writes the numbers of epochs, segments and tracks to ``out``; returns 0.
    """
    m = _int64_at(meta)
    seq = _int64_at(m[_SEQ])
    T = m[_SEQ + 1]
    first = _int64_at(m[_FIRST])
    w = _float64_at(m[_W])
    n = m[_UL + 2]
    ep_track = _int64_at(m[_EPT])
    ep_w = _float64_at(m[_EPW])
    n_rec = m[_SEG + 2]  # seg rows: item, track, first epoch, last epoch
    seg_item = _int64_at(m[_SEG])
    seg_track = _int64_at(m[_SEG] + 8 * n_rec)
    seg_e1 = _int64_at(m[_SEG] + 16 * n_rec)
    seg_e2 = _int64_at(m[_SEG] + 24 * n_rec)
    cl_track = _int64_at(m[_CL])  # cl rows (n + 1 columns): cl_track, cl_new, item_seg
    cl_new = _int64_at(m[_CL] + 8 * (n + 1))
    item_seg = _int64_at(m[_CL] + 16 * (n + 1))
    bound = m[_TR + 2]  # tr rows: each track's current epoch, the draw that last started one
    tr_epoch = _int64_at(m[_TR])
    stamp = _int64_at(m[_TR] + 8 * bound)
    wk = m[_WORK]
    row = 8 * (n + 1)
    lu, lv, ou, cu = _int64_at(wk), _int64_at(wk + row), _int64_at(wk + 2 * row), _int64_at(wk + 3 * row)
    ov, cv, fp = _int64_at(wk + 4 * row), _int64_at(wk + 5 * row), _int64_at(wk + 6 * row)
    overlap, owner = _int64_at(wk + 7 * row), _int64_at(wk + 8 * row)
    owner_n, moved = _int64_at(wk + 9 * row), _int64_at(wk + 10 * row)
    ne = 0
    ns = 0
    nt = 0
    n_u = np.int64(0)
    cur = -1
    for i in range(n + 1):
        overlap[i] = 0
    for t in range(T + 1):
        if t == T or first[t] == 1 or cur < 0:
            if cur >= 0 and fill:  # the chain ends: so do its segments
                for i in range(n):
                    seg_e2[item_seg[i]] = tr_epoch[cl_track[lu[i]]]
            if t == T:
                break
            cur = seq[t]
            n_u = _load(m[_UL] + 8 * n * cur, wk, n)
            for q in range(n_u):  # every cluster starts a track
                cl_track[q] = nt
                tr_epoch[nt] = ne
                stamp[nt] = -1
                if fill:
                    ep_track[ne] = nt
                nt += 1
                ne += 1
            for i in range(n):
                if fill:
                    seg_item[ns] = i
                    seg_track[ns] = cl_track[lu[i]]
                    seg_e1[ns] = tr_epoch[cl_track[lu[i]]]
                item_seg[i] = ns
                ns += 1
        elif seq[t] != cur:
            cur = seq[t]
            n_v = _load(m[_UL] + 8 * n * cur, wk + row, n)
            _match_rows(n_u, n_v, True, n, lu, lv, ou, cu, ov, cv, fp, overlap, owner, owner_n, moved)
            for q in range(n_v):
                cl_new[q] = -1
            for q in range(n_u):
                if owner[q] >= 0:
                    cl_new[owner[q]] = cl_track[q]
            for q in range(n_v):
                if cl_new[q] < 0:  # a cluster matching none of the previous draw: a new track
                    cl_new[q] = nt
                    stamp[nt] = -1
                    tr_epoch[nt] = -1
                    nt += 1
            for i in range(n):  # a moved item's segment ends with its track's current epoch
                if moved[i] == 1 and fill:
                    seg_e2[item_seg[i]] = tr_epoch[cl_track[lu[i]]]
            for i in range(n):  # tracks an item leaves or enters start an epoch at t
                if moved[i] == 1:
                    for side in range(2):
                        tr = cl_track[lu[i]] if side == 0 else cl_new[lv[i]]
                        if side == 0 and owner[lu[i]] < 0:
                            continue  # the old track ends here
                        if stamp[tr] != t:
                            stamp[tr] = t
                            tr_epoch[tr] = ne
                            if fill:
                                ep_track[ne] = tr
                            ne += 1
            for i in range(n):
                if moved[i] == 1:
                    tr = cl_new[lv[i]]
                    if fill:
                        seg_item[ns] = i
                        seg_track[ns] = tr
                        seg_e1[ns] = tr_epoch[tr]
                    item_seg[i] = ns
                    ns += 1
            for i in range(n):
                lu[i] = lv[i]
            for q in range(n_v):
                cl_track[q] = cl_new[q]
            n_u = n_v
        if fill:  # the draw's weight goes to the current epoch of each of its clusters
            for q in range(n_u):
                ep_w[tr_epoch[cl_track[q]]] += w[t]
    out = _int64_at(m[_OUT])
    out[0] = ne
    out[1] = ns
    out[2] = nt
    return 0


def _compiled():
    op = _COMPILED.get("scan")
    if op is None:
        op = _COMPILED["scan"] = compile_cfunc(types.int64(types.int64, types.int64), _scan_op)
    return op


def scan(arrays, fill):
    """Run one pass of the scan over ``arrays`` (laid out as :data:`SCAN_ARRAYS`): (epochs, segments, tracks).

    The arrays are checked (:func:`~arviz_regen.base.addresses.describe`) and stay referenced
    here for the whole call. ``cl`` needs 3 rows and ``work`` :data:`WORK_ROWS` rows of n + 1
    columns, ``tr`` 2 rows as long as the tracks and ``ep_track``, ``ep_w`` as long as the
    epochs (when ``fill``), ``seg`` 4 rows as long as the segments (when ``fill``), ``out`` 3.
    """
    meta = describe(arrays, SCAN_ARRAYS)
    n = arrays[3].shape[1]
    cl, work, out = arrays[7], arrays[9], arrays[10]
    if cl.shape != (3, n + 1) or work.shape != (WORK_ROWS, n + 1) or arrays[6].shape[0] != 4 or out.size < 3:
        raise ValueError("scan: scratch arrays of the wrong shape.")
    _compiled().ctypes(meta.ctypes.data, 1 if fill else 0)
    return int(out[0]), int(out[1]), int(out[2])
