"""The restricted-Gibbs split-merge move (Jain & Neal 2004, conjugate case).

A proposal picks two items ``i, j``; :func:`launch` builds the launch state of the other items
``S`` of their clusters in the two spare slots ``n`` (with ``i``) and ``n + 1`` (with ``j``) of
the :class:`~.state.State`; :func:`restricted_scan` moves the members of ``S`` between them;
:func:`split_merge_move` proposes and accepts or rejects; :func:`split_merge_log_q` is the
proposal probability the tests use to build the exact transition matrix. Cluster log marginals
(``clm``, needed by the acceptance ratio) are carried along by adding the log predictives of
the moves.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...predictive._types import address_of
from .rng import randint, uniform
from .slots import activate, copy_slot, deactivate, put, take
from .state import NJIT, form_functions, init_slot

__all__ = [
    "apply_merge",
    "current_sides",
    "launch",
    "merge_log_ratio",
    "proposal_members",
    "propose_merge",
    "propose_split",
    "restricted_scan",
    "split_merge_log_q",
    "split_merge_move",
    "start_proposal",
]


@numba.njit(**NJIT)
def restricted_scan(rng, m, s, w, n_members, force):
    """Run a restricted Gibbs scan of the members of a split-merge proposal between the launch components.

    Returns the log probability of the sides chosen.

    The components live in slots ``n`` (anchor ``i``) and ``n + 1`` (anchor ``j``), so neither
    empties; ``w.side[q]`` is the ``q``-th member's component. With ``force`` empty each member's
    side is drawn from its restricted conditional (generator state ``rng``, :mod:`.rng`); otherwise
    member ``q`` is put on side ``force[q]``.
    """
    X, log_h, ctx = m.X, m.log_h, m.ctx
    counts, stats, clm = s.counts, s.stats, s.clm
    members, side, slot, out = w.members, w.side, w.slot, w.cand
    pred, remove, add = form_functions(m)
    slot_addr, out_addr = address_of(slot), address_of(out)
    n = X.shape[0]
    forced = force.shape[0] > 0
    log_q = 0.0
    for q in range(n_members):
        k = members[q]
        sd = side[q]
        a = n + sd
        b = n + 1 - sd
        clm_a = clm[a]
        lp_a = take(remove, ctx, X, stats, counts, clm, a, k)
        slot[0] = b
        pred(ctx, slot_addr, 1, k, out_addr)
        lp_b = out[0]
        lw_a = log_h[counts[a] + 1] - log_h[counts[a]] + lp_a
        lw_b = log_h[counts[b] + 1] - log_h[counts[b]] + lp_b
        mx = max(lw_a, lw_b)
        lse = mx + math.log(math.exp(lw_a - mx) + math.exp(lw_b - mx))
        if forced:
            stay = force[q] == sd
        else:
            stay = uniform(rng) < math.exp(lw_a - lse)
        if stay:
            put(add, ctx, X, stats, counts, clm, a, k, lp_a)
            clm[a] = clm_a  # exactly as before the item left
            log_q += lw_a - lse
        else:
            put(add, ctx, X, stats, counts, clm, b, k, lp_b)
            side[q] = 1 - sd
            log_q += lw_b - lse
    return log_q


@numba.njit(**NJIT)
def launch(rng, m, s, w, i, j, n_members, n_scans, launch_sides):
    """Make Jain & Neal's launch state.

    ``S`` split uniformly at random (or as ``launch_sides`` says, if it is not empty), then ``n_scans`` restricted
    scans.
    """
    n, d = m.X.shape
    for v in range(d):
        s.stats[n, v] = m.X[i, v]
        s.stats[n + 1, v] = m.X[j, v]
    s.counts[n] = 1
    s.counts[n + 1] = 1
    for q in range(n_members):
        k = w.members[q]
        if launch_sides.shape[0] > 0:
            sd = launch_sides[q]
        else:
            sd = 0 if uniform(rng) < 0.5 else 1
        w.side[q] = sd
        s.counts[n + sd] += 1
        for v in range(d):
            s.stats[n + sd, v] += m.X[k, v]
    for c in (n, n + 1):
        s.clm[c] = init_slot(m, c)
    for _ in range(n_scans):
        restricted_scan(rng, m, s, w, n_members, launch_sides[:0])


@numba.njit(**NJIT)
def proposal_members(z, i, j, members):
    """Items other than ``i, j`` in the clusters of ``i`` and ``j`` (in item order)."""
    m = 0
    for k in range(z.shape[0]):
        if k != i and k != j and (z[k] == z[i] or z[k] == z[j]):
            members[m] = k
            m += 1
    return m


@numba.njit(**NJIT)
def start_proposal(rng, s, w, n):
    """Draw an ordered pair ``i, j`` of distinct items uniformly (``n >= 2``).

    Also their clusters ``ci, cj`` and the number of the other items of those clusters, listed in ``w.members``.
    """
    i = randint(rng, n)
    j = randint(rng, n - 1)
    if j >= i:
        j += 1
    return i, j, s.z[i], s.z[j], proposal_members(s.z, i, j, w.members)


@numba.njit(**NJIT)
def current_sides(s, w, ci, n_members):
    """Each member's side in the current split (0 = in cluster ``ci``), in ``w.order``.

    ``w.order`` is free during a merge-split move; the sides are its first ``n_members`` entries.
    """
    for q in range(n_members):
        w.order[q] = 0 if s.z[w.members[q]] == ci else 1
    return w.order[:n_members]


@numba.njit(**NJIT)
def split_merge_move(rng, m, s, w, n_scans):
    """One restricted-Gibbs split-merge proposal (Jain & Neal 2004, conjugate case).

    Returns ``(kind, accepted)`` with kind 1 = split, 2 = merge (0 = nothing to propose);
    ``rng`` is the generator state (:mod:`.rng`, advanced in place).
    """
    n = m.X.shape[0]
    if n < 2:
        return 0, False
    i, j, ci, cj, n_members = start_proposal(rng, s, w, n)
    no_sides = w.side[:0]
    launch(rng, m, s, w, i, j, n_members, n_scans, no_sides)
    if ci == cj:
        # split: a final restricted scan from the launch state is the proposal
        log_q = restricted_scan(rng, m, s, w, n_members, no_sides)
        return 1, propose_split(rng, m, s, w, ci, j, n_members, log_q, 1.0)
    # merge: probability that the final restricted scan from the launch state gives the current split
    log_q = restricted_scan(rng, m, s, w, n_members, current_sides(s, w, ci, n_members))
    return 2, propose_merge(rng, m, s, w, ci, cj, j, n_members, log_q)


@numba.njit(**NJIT)
def propose_split(rng, m, s, w, ci, j, n_members, log_q, beta=1.0):
    """Accept or reject the split of cluster ``ci`` held in the spare slots ``n`` and ``n + 1``.

    Slot ``n`` holds the anchor ``i``, ``n + 1`` holds ``j``; ``w.side[q]`` is the side of ``w.members[q]``. The split
    is proposed with log probability ``log_q`` (the reverse merge is certain); applies it if accepted.
    ``beta``: the target's likelihood power (1 but in a tempered copy).
    """
    n, C = m.X.shape[0], s.meta[0]
    log_g, log_h = m.log_g, m.log_h
    log_acc = (
        log_g[C + 1] - log_g[C]
        + log_h[s.counts[n]] + log_h[s.counts[n + 1]] - log_h[s.counts[ci]]
        + beta * (s.clm[n] + s.clm[n + 1] - s.clm[ci])
        - log_q
    )  # fmt: skip
    accept = math.log(uniform(rng)) < log_acc
    if accept:
        cnew = activate(s.active, s.pos, s.free, s.meta)
        copy_slot(s, n, ci)
        copy_slot(s, n + 1, cnew)
        s.z[j] = cnew
        for q in range(n_members):
            if w.side[q] == 1:
                s.z[w.members[q]] = cnew
    return accept


@numba.njit(**NJIT)
def propose_merge(rng, m, s, w, ci, cj, j, n_members, log_q):
    """Accept or reject the merge of clusters ``ci`` and ``cj``.

    ``j`` is in ``cj``, the other members in ``w.members[:n_members]``; the reverse split has log probability ``log_q``;
    applies it if accepted. The merged cluster is scored in the scratch slot ``n + 2``.
    """
    log_acc = merge_log_ratio(m, s, ci, cj) + log_q
    accept = math.log(uniform(rng)) < log_acc
    if accept:
        apply_merge(m, s, w, ci, cj, j, n_members)
    return accept


@numba.njit(**NJIT)
def merge_log_ratio(m, s, ci, cj, beta=1.0):
    """Log posterior ratio of merging clusters ``ci`` and ``cj``; the merged cluster is scored in slot ``n + 2``.

    ``beta``: the likelihood's power in the target (1 but in a tempered copy).
    """
    n, d = m.X.shape
    C = s.meta[0]
    log_g, log_h = m.log_g, m.log_h
    r = n + 2
    for v in range(d):
        s.stats[r, v] = s.stats[ci, v] + s.stats[cj, v]
    lm_merged = init_slot(m, r)
    n_i = s.counts[ci]
    n_j = s.counts[cj]
    return (
        log_g[C - 1] - log_g[C]
        + log_h[n_i + n_j] - log_h[n_i] - log_h[n_j]
        + beta * (lm_merged - s.clm[ci] - s.clm[cj])
    )  # fmt: skip


@numba.njit(**NJIT)
def apply_merge(m, s, w, ci, cj, j, n_members):
    """Merge cluster ``cj`` into ``ci`` (``j`` and ``w.members[:n_members]`` now in ``ci``).

    (Not from the scratch slot ``n + 2``: the forms' functions may overwrite it in between.)
    """
    for v in range(m.X.shape[1]):
        s.stats[ci, v] += s.stats[cj, v]
        s.stats[cj, v] = 0.0
    s.counts[ci] += s.counts[cj]
    s.counts[cj] = 0
    s.clm[cj] = 0.0
    s.clm[ci] = init_slot(m, ci)
    s.z[j] = ci
    for q in range(n_members):
        s.z[w.members[q]] = ci
    deactivate(cj, s.active, s.pos, s.free, s.meta)


@numba.njit(**NJIT)
def split_merge_log_q(labels_from, labels_to, i, j, launch_sides, m, s, w):
    """Log probability that one restricted Gibbs scan moves the launch state to ``labels_to``.

    ``S`` is the set of items other than ``i, j`` in the clusters of ``i`` and ``j`` under
    ``labels_from``, in item order; ``launch_sides[q]`` (0 = with ``i``, 1 = with ``j``) is the
    launch side of its ``q``-th member. Used by tests to build the exact split-merge transition
    matrix by enumerating the launch states (only the launch slots of ``s`` are touched).
    """
    n_members = proposal_members(labels_from, i, j, w.members)
    rng = np.ones(4, np.uint64)  # not drawn from: the launch and the scan are forced
    launch(rng, m, s, w, i, j, n_members, 0, launch_sides)
    target = np.empty(n_members, dtype=np.int64)
    for q in range(n_members):
        target[q] = 0 if labels_to[w.members[q]] == labels_to[i] else 1
    return restricted_scan(rng, m, s, w, n_members, target)
