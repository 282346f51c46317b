"""Clusters followed along chains of partitions: tracks, epochs and item segments.

A *track* is a cluster followed from draw to draw (matched to the cluster of the next draw that
overlaps it most, :mod:`arviz_regen.base.cluster_match`); it ends when its cluster is not matched and
starts with a cluster that matches none of the previous draw. An *epoch* is a stretch of draws
over which a track's members do not change, weighted by its draws' weights. An item's *segment*
is a stretch of consecutive epochs of one track over which the item is a member; an item has one
segment per chain plus one per move (a change of track), far fewer than draws when a sampler
moves a few items per draw.

Every sum over the draws of a function of the cluster of an item i (say of how many members of
a fixed set that cluster holds) is a sum over i's segments of sums over epochs; the SALSO search
(:mod:`arviz_regen.base.salso`) keeps those as running sums along each track, so scoring an item costs
O(its segments) instead of O(draws).

The epochs of a track are numbered consecutively in time order (``epoch_start[τ]`` …
``epoch_start[τ + 1]``); a segment covers the epochs g1 … g2 − 1.
"""

from __future__ import annotations

from collections import namedtuple
from typing import NamedTuple

import numpy as np

from .cluster_match import WORK_ROWS, group_and_match, load_labels
from .lazy_jit import lazy_njit

__all__ = ["Tracks", "build_tracks"]


class Tracks(NamedTuple):
    """Epochs and segments of chains of partitions (see the module docstring)."""

    epoch_weight: np.ndarray  # (E,) float64: the weights of its draws
    epoch_track: np.ndarray  # (E,) int64
    epoch_start: np.ndarray  # (n_tracks + 1,) int64: first epoch of each track
    seg_ptr: np.ndarray  # (n + 1,) int64: the segments of item i are seg_ptr[i] … seg_ptr[i + 1] − 1
    seg_track: np.ndarray  # (n_seg,) int64
    seg_g1: np.ndarray  # (n_seg,) int64: first epoch
    seg_g2: np.ndarray  # (n_seg,) int64: one past the last epoch


#: the draws :func:`_scan` reads: ``seq`` the state of every draw, chains one after the other
#: (``first``: 1 at a chain's first draw), ``w`` the draws' weights, ``ulabels`` the states'
#: labels, ``ident`` 0 … n − 1
_Draws = namedtuple("_Draws", "seq first w ulabels ident")
#: what :func:`_scan` records (``fill``): each epoch's track and weight, each segment's item,
#: track and first and last epochs (ids in creation order)
_Records = namedtuple("_Records", "ep_track ep_w seg_item seg_track seg_e1 seg_e2")
#: :func:`_scan`'s scratch: each cluster's track (current and next draw), each track's current
#: epoch and the draw that last started one, each item's current segment, the matching's rows
_Scratch = namedtuple("_Scratch", "cl_track cl_new tr_epoch stamp item_seg work")


@lazy_njit(cache=True, no_cfunc_wrapper=True)
def _scan(draws, fill, records, scratch):
    """One pass over the draws: count (``fill`` False) or record the epochs and segments.

    Returns the numbers of epochs, segments and tracks.
    """
    seq, first, w, ulabels, ident = draws
    ep_track, ep_w, seg_item, seg_track, seg_e1, seg_e2 = records
    cl_track, cl_new, tr_epoch, stamp, item_seg, work = scratch
    n = ulabels.shape[1]
    T = seq.shape[0]
    ne = 0
    ns = 0
    nt = 0
    n_u = np.int64(0)
    cur = -1
    lu = work[0]
    lv = work[1]
    owner = work[8]
    moved = work[10]
    for i in range(n + 1):
        work[7, i] = 0
    for t in range(T + 1):
        if t == T or first[t] == 1 or cur < 0:
            if cur >= 0 and fill:  # the chain ends: so do its segments
                for i in range(n):
                    seg_e2[item_seg[i]] = tr_epoch[cl_track[lu[i]]]
            if t == T:
                break
            cur = seq[t]
            n_u = load_labels(ulabels[cur], ident, lu)
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
            n_v = load_labels(ulabels[cur], ident, lv)
            group_and_match(n_u, n_v, n_u >= 0, work)  # (a bool value, not a literal: one compilation)
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
    return ne, ns, nt


def build_tracks(ulabels, seq, first, weights):
    """:class:`Tracks` of chains of partitions.

    Parameters
    ----------
    ulabels : int64 (n_states, n)
        Labels of the states (each row in 0 … n − 1).
    seq : int64 (T,)
        State of every draw, the chains one after the other.
    first : array_like of bool (T,)
        True at the first draw of each chain.
    weights : float64 (T,)
        Weight of each draw.
    """
    ulabels = np.ascontiguousarray(ulabels, dtype=np.int64)
    seq = np.ascontiguousarray(seq, dtype=np.int64)
    first = np.ascontiguousarray(first, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if first.all():
        return _separate_tracks(ulabels[seq], weights)
    return _scanned_tracks(ulabels, seq, first, weights)


def _separate_tracks(labels, weights):
    """Build the :class:`Tracks` of draws that are each a chain of their own (nothing to match or scan).

    Every cluster of draw t is a track of one epoch (weight w_t), every item has one segment per
    draw; as :func:`_scan` numbers them, without compiling it.
    """
    T, n = labels.shape
    n_cl = labels.max(axis=1) + 1
    off = np.zeros(T, dtype=np.int64)
    np.cumsum(n_cl[:-1], out=off[1:])
    E = int(n_cl.sum())
    seg_track = np.ascontiguousarray((labels + off[:, None]).T).ravel()  # item by item, draws in order
    return Tracks(
        epoch_weight=np.repeat(weights, n_cl),
        epoch_track=np.arange(E, dtype=np.int64),
        epoch_start=np.arange(E + 1, dtype=np.int64),
        seg_ptr=np.arange(n + 1, dtype=np.int64) * T,
        seg_track=seg_track,
        seg_g1=seg_track.copy(),
        seg_g2=seg_track + 1,
    )


def _scanned_tracks(ulabels, seq, first, weights):
    """Build the :class:`Tracks` by two passes of :func:`_scan` (count, then record)."""
    n = ulabels.shape[1]
    bound = int((ulabels.max(axis=1) + 1)[seq].sum()) + 1  # epochs, tracks ≤ clusters summed over draws
    work = np.empty((WORK_ROWS, n + 1), dtype=np.int64)
    cl_track = np.empty(n + 1, dtype=np.int64)
    cl_new = np.empty(n + 1, dtype=np.int64)
    tr_epoch = np.empty(bound, dtype=np.int64)
    stamp = np.empty(bound, dtype=np.int64)
    item_seg = np.empty(n, dtype=np.int64)
    z_i = np.zeros(1, dtype=np.int64)
    ident = np.arange(n, dtype=np.int64)
    z_f = np.zeros(1)
    draws = _Draws(seq, first, weights, ulabels, ident)
    scratch = _Scratch(cl_track, cl_new, tr_epoch, stamp, item_seg, work)
    _, n_seg, _ = _scan(draws, False, _Records(z_i, z_f, z_i, z_i, z_i, z_i), scratch)
    ep_track = np.empty(bound, dtype=np.int64)
    ep_w = np.zeros(bound)
    seg = np.empty((4, n_seg), dtype=np.int64)
    n_ep, n_seg, n_tr = _scan(draws, True, _Records(ep_track, ep_w, seg[0], seg[1], seg[2], seg[3]), scratch)
    ep_track = ep_track[:n_ep]
    # epochs numbered by track, in time order within a track (creation order is time order)
    order = np.argsort(ep_track, kind="stable")
    new_id = np.empty(n_ep, dtype=np.int64)
    new_id[order] = np.arange(n_ep)
    epoch_start = np.zeros(n_tr + 1, dtype=np.int64)
    np.cumsum(np.bincount(ep_track, minlength=n_tr), out=epoch_start[1:])
    by_item = np.argsort(seg[0], kind="stable")  # an item's segments in time order
    seg_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(seg[0], minlength=n), out=seg_ptr[1:])
    return Tracks(
        epoch_weight=np.ascontiguousarray(ep_w[:n_ep][order]),
        epoch_track=np.ascontiguousarray(ep_track[order]),
        epoch_start=epoch_start,
        seg_ptr=seg_ptr,
        seg_track=np.ascontiguousarray(seg[1][by_item]),
        seg_g1=np.ascontiguousarray(new_id[seg[2][by_item]]),
        seg_g2=np.ascontiguousarray(new_id[seg[3][by_item]] + 1),
    )
