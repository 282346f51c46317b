"""The sequentially allocated merge-split move (Dahl 2003; Dahl & Newcomb 2022, conjugate case).

A proposal picks two distinct items ``i, j`` uniformly at random and lets ``S`` be the other items
of their clusters. If ``i`` and ``j`` share a cluster it proposes a split: ``{i}`` and ``{j}``
start two clusters (the spare slots ``n`` and ``n + 1`` of the :class:`~.state.State`) and the
members of ``S``, in a uniformly random order, join one of them in turn, each drawn from its
conditional given the items placed so far (:func:`sequential_allocation`). Otherwise it proposes
to merge the two clusters; the reverse split's probability is that of allocating ``S``, in a fresh
uniformly random order, exactly as the current split has it.

The order is an auxiliary variable drawn afresh for each proposal, independently of the state,
and both directions use the same order, so for each order (and pair) the move is a
Metropolis-Hastings update with the exact proposal probability; their mixture leaves the
posterior invariant. :func:`sams_log_q` gives the proposal probability for a given order, with
which the tests build the exact transition matrix.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .slots import put
from .split_merge import current_sides, propose_merge, propose_split, start_proposal
from .state import NJIT, form_functions, init_slot

__all__ = ["sams_log_q", "sams_move", "sequential_allocation"]


@numba.njit(**NJIT)
def _start(m, s, c, a):
    """Slot ``c`` holds item ``a`` alone."""
    for v in range(m.X.shape[1]):
        s.stats[c, v] = m.X[a, v]
    s.counts[c] = 1
    init_slot(m, c)
    s.clm[c] = m.item_lm[a]


@numba.njit(**NJIT)
def sequential_allocation(m, s, w, i, j, n_members, force):
    """Allocate ``w.members[:n_members]`` in turn to the clusters started by ``i`` and ``j``.

    ``i`` starts slot ``n``, ``j`` slot ``n + 1``; returns the log probability of the sides chosen.

    Member ``k`` joins a side with probability proportional to
    ``exp(log_h[n_c + 1] - log_h[n_c] + log p(x_k | side))`` given the members placed before it
    (the prior's ``log_g`` is the same for both). With ``force`` empty the side is drawn, else
    member ``q`` goes to side ``force[q]`` (0 = with ``i``). ``w.side[q]`` records the sides.
    """
    X, log_h, ctx = m.X, m.log_h, m.ctx
    counts, stats, clm = s.counts, s.stats, s.clm
    members, side, out = w.members, w.side, w.cand
    pred, _, add = form_functions(m)
    n = X.shape[0]
    _start(m, s, n, i)
    _start(m, s, n + 1, j)
    pair = np.empty(2, np.int64)
    pair[0] = n
    pair[1] = n + 1
    pair_addr, out_addr = np.int64(pair.ctypes.data), np.int64(out.ctypes.data)
    forced = force.shape[0] > 0
    log_q = 0.0
    for q in range(n_members):
        k = members[q]
        pred(ctx, pair_addr, 2, k, out_addr)
        lw0 = log_h[counts[n] + 1] - log_h[counts[n]] + out[0]
        lw1 = log_h[counts[n + 1] + 1] - log_h[counts[n + 1]] + out[1]
        mx = max(lw0, lw1)
        lse = mx + math.log(math.exp(lw0 - mx) + math.exp(lw1 - mx))
        if forced:
            sd = force[q]
        else:
            sd = 0 if np.random.random() < math.exp(lw0 - lse) else 1
        log_q += (lw0 if sd == 0 else lw1) - lse
        put(add, ctx, X, stats, counts, clm, n + sd, k, out[sd])
        side[q] = sd
    return log_q


@numba.njit(**NJIT)
def _shuffle(a, k):
    """Uniformly random permutation of ``a[:k]`` in place (Fisher-Yates)."""
    for t in range(k - 1, 0, -1):
        u = np.random.randint(t + 1)
        a[t], a[u] = a[u], a[t]


@numba.njit(**NJIT)
def sams_move(m, s, w):
    """One sequentially allocated merge-split proposal.

    Returns ``(kind, accepted)`` with kind 1 = split, 2 = merge (0 = nothing to propose).
    """
    n = m.X.shape[0]
    if n < 2:
        return 0, False
    i, j, ci, cj, n_members = start_proposal(s, w, n)
    _shuffle(w.members, n_members)
    if ci == cj:
        log_q = sequential_allocation(m, s, w, i, j, n_members, w.side[:0])
        return 1, propose_split(m, s, w, ci, j, n_members, log_q)
    log_q = sequential_allocation(m, s, w, i, j, n_members, current_sides(s, w, ci, n_members))
    return 2, propose_merge(m, s, w, ci, cj, j, n_members, log_q)


@numba.njit(**NJIT)
def sams_log_q(labels_to, i, j, order, m, s, w):
    """Return the log probability that the sequential allocation gives the split of ``labels_to``.

    The allocation is that of ``order`` from the anchors ``i`` and ``j``.

    ``order`` lists the items of ``S`` (the items other than ``i, j`` of the cluster(s) to split or
    merge) in allocation order; ``labels_to`` puts each with ``i`` or with ``j``. Used by tests to
    build the exact transition matrix by enumerating the orders (only the spare slots of ``s`` are
    touched).
    """
    k = order.shape[0]
    target = np.empty(k, dtype=np.int64)
    for q in range(k):
        w.members[q] = order[q]
        target[q] = 0 if labels_to[order[q]] == labels_to[i] else 1
    return sequential_allocation(m, s, w, i, j, k, target)
