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

from typing import NamedTuple

import numpy as np

from .cluster_match import WORK_ROWS

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
    draw; as the scan (:mod:`arviz_regen.base.track_scan`) numbers them, without compiling it.
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
    """Build the :class:`Tracks` by two passes of the scan (count, then record)."""
    from .track_scan import scan  # imports numba: on the first scan, not with the package

    n = ulabels.shape[1]
    bound = int((ulabels.max(axis=1) + 1)[seq].sum()) + 1  # epochs, tracks ≤ clusters summed over draws
    cl = np.empty((3, n + 1), dtype=np.int64)
    tr = np.empty((2, bound), dtype=np.int64)
    work = np.empty((WORK_ROWS, n + 1), dtype=np.int64)
    out = np.zeros(3, dtype=np.int64)
    draws = (seq, first, weights, ulabels)
    scratch = (cl, tr, work, out)
    nothing = (np.zeros(1, dtype=np.int64), np.zeros(1), np.zeros((4, 1), dtype=np.int64))  # the count records nothing
    _, n_seg, _ = scan((*draws, *nothing, *scratch), False)
    ep_track = np.empty(bound, dtype=np.int64)
    ep_w = np.zeros(bound)
    seg = np.empty((4, n_seg), dtype=np.int64)
    n_ep, n_seg, n_tr = scan((*draws, ep_track, ep_w, seg, *scratch), True)
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
