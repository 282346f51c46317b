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

Two options of the move (:class:`~.step.MoveMix`), each keeping it exact:

- *balanced pairs* (``split_probability`` p in (0, 1)): ``i`` uniformly, then with probability p
  a ``j`` uniformly among the other items of ``i``'s cluster (a split), else uniformly among the
  items outside it (a merge). Uniform pairs propose a split with probability about
  ``sum_c (n_c / n)^2``, a few per cent with tens of clusters; here the proportion is chosen. The
  pair's probability depends on the state, so the Hastings ratio includes that of choosing the
  same ordered pair in the proposed state (:func:`pair_log_ratio`).
- *informed order*: ``S`` is allocated in decreasing order of ``|log p(x_k | x_i) - log p(x_k |
  x_j)|`` (ties in item order), the items the anchors tell apart first, so that the ambiguous ones
  are allocated to clusters that already hold the clear ones. The order is a function of ``i``,
  ``j`` and the set ``S``, which a split and its reverse merge share, so for each pair the move is
  still a Metropolis-Hastings update with the exact proposal probability (:func:`informed_order`).

A merge is rejected as soon as its acceptance is out of reach: the reverse split's log
probability only decreases as ``S`` is allocated, so once the log ratio plus the part already
summed falls below ``log u`` (``u`` drawn first) the rest is not computed. Hopeless merges (most
of them, with many clusters) then cost one log marginal; the decisions are those of the full
computation.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...predictive._types import address_of
from .rng import randint, shuffle, uniform
from .slots import put
from .split_merge import (
    apply_merge,
    current_sides,
    merge_log_ratio,
    proposal_members,
    propose_split,
    start_proposal,
)
from .state import NJIT, form_functions, init_slot

__all__ = [
    "draw_proposal",
    "informed_order",
    "pair_log_ratio",
    "pick_pair",
    "pick_partner",
    "sams_informed_order",
    "sams_log_q",
    "sams_move",
    "sequential_allocation",
]


@numba.njit(**NJIT)
def _start(m, s, c, a):
    """Slot ``c`` holds item ``a`` alone."""
    for v in range(m.X.shape[1]):
        s.stats[c, v] = m.X[a, v]
    s.counts[c] = 1
    init_slot(m, c)
    s.clm[c] = m.item_lm[a]


@numba.njit(**NJIT)
def sequential_allocation(rng, m, s, w, i, j, n_members, force, stop_below, beta=1.0):
    """Allocate ``w.members[:n_members]`` in turn to the clusters started by ``i`` and ``j``.

    ``i`` starts slot ``n``, ``j`` slot ``n + 1``; returns the log probability of the sides chosen.

    Member ``k`` joins a side with probability proportional to
    ``exp(log_h[n_c + 1] - log_h[n_c] + beta log p(x_k | side))`` given the members placed before
    it (the prior's ``log_g`` is the same for both; ``beta`` the likelihood's power, 1 but in a
    tempered copy). With ``force`` empty the side is drawn (generator
    state ``rng``, :mod:`.rng`), else
    member ``q`` goes to side ``force[q]`` (0 = with ``i``). ``w.side[q]`` records the sides.
    Stops early, returning the partial sum, once it falls below ``stop_below`` (``-inf``: never).
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
    pair_addr, out_addr = address_of(pair), address_of(out)
    forced = force.shape[0] > 0
    log_q = 0.0
    for q in range(n_members):
        k = members[q]
        pred(ctx, pair_addr, 2, k, out_addr)
        lw0 = log_h[counts[n] + 1] - log_h[counts[n]] + beta * out[0]
        lw1 = log_h[counts[n + 1] + 1] - log_h[counts[n + 1]] + beta * out[1]
        mx = max(lw0, lw1)
        lse = mx + math.log(math.exp(lw0 - mx) + math.exp(lw1 - mx))
        if forced:
            sd = force[q]
        else:
            sd = 0 if uniform(rng) < math.exp(lw0 - lse) else 1
        log_q += (lw0 if sd == 0 else lw1) - lse
        if log_q < stop_below:
            return log_q
        put(add, ctx, X, stats, counts, clm, n + sd, k, out[sd])
        side[q] = sd
    return log_q


@numba.njit(**NJIT)
def informed_order(m, s, w, i, j, n_members):
    """Sort ``w.members[:n_members]`` by decreasing ``|log p(x_k | x_i) - log p(x_k | x_j)|``.

    The sort is stable (ties stay in their order). Uses the spare slots ``n`` and ``n + 1``.
    """
    ctx = m.ctx
    pred = form_functions(m)[0]
    n = m.X.shape[0]
    _start(m, s, n, i)
    _start(m, s, n + 1, j)
    pair = np.empty(2, np.int64)
    pair[0] = n
    pair[1] = n + 1
    out = w.cand
    pair_addr, out_addr = address_of(pair), address_of(out)
    key = np.empty(n_members)
    for q in range(n_members):
        pred(ctx, pair_addr, 2, w.members[q], out_addr)
        key[q] = -abs(out[0] - out[1])
    ranked = w.members[:n_members][np.argsort(key, kind="mergesort")]
    w.members[:n_members] = ranked


@numba.njit(**NJIT)
def pick_pair(rng, s, w, n, split_probability):
    """Draw the ordered pair ``i, j`` of a proposal; returns ``i, j, ci, cj, n_members`` (``j < 0``: none).

    ``split_probability`` 0: uniformly among ordered pairs of distinct items (Dahl & Newcomb);
    else balanced (module docstring). The other items of the two clusters are listed in ``w.members``.
    """
    if split_probability <= 0.0:
        return start_proposal(rng, s, w, n)
    i = randint(rng, n)
    return pick_partner(rng, s, w, n, i, uniform(rng) < split_probability)


@numba.njit(**NJIT)
def pick_partner(rng, s, w, n, i, same):
    """Draw ``j`` uniformly among the other items of ``i``'s cluster (``same``) or the items outside it.

    Returns ``i, j, ci, cj, n_members`` as :func:`pick_pair` (``j < 0``: there is none).
    """
    ci = s.z[i]
    n_i = s.counts[ci]
    pool = n_i - 1 if same else n - n_i
    if pool == 0:
        return i, -1, ci, ci, 0
    r = randint(rng, pool)
    j = -1
    for k in range(n):
        if k != i and (s.z[k] == ci) == same:
            if r == 0:
                j = k
                break
            r -= 1
    return i, j, ci, s.z[j], proposal_members(s.z, i, j, w.members)


@numba.njit(**NJIT)
def draw_proposal(rng, s, w, n, split_probability, informed):
    """Draw the pair (:func:`pick_pair`; ``j < 0``: nothing to propose) and, unless ``informed``, shuffle ``S``."""
    if n < 2:
        return 0, -1, 0, 0, 0
    i, j, ci, cj, n_members = pick_pair(rng, s, w, n, split_probability)
    if j >= 0 and not informed:
        shuffle(rng, w.members, n_members)
    return i, j, ci, cj, n_members


@numba.njit(**NJIT)
def pair_log_ratio(n, n_union, n_i_merged_side, split_probability):
    """Log of P(pair | merged state) / P(pair | split state) for balanced pairs (0 for uniform pairs).

    ``n_union`` items in the two clusters together, ``n_i_merged_side`` of them in ``i``'s cluster
    of the split state. Add it to a merge's log acceptance ratio, subtract it from a split's.
    """
    if split_probability <= 0.0:
        return 0.0
    p = split_probability
    return math.log(p) - math.log(n_union - 1) - math.log1p(-p) + math.log(n - n_i_merged_side)


@numba.njit(**NJIT)
def sams_move(rng, m, s, w, split_probability, informed, beta=1.0):
    """One sequentially allocated merge-split proposal.

    Returns ``(kind, accepted)`` with kind 1 = split, 2 = merge (0 = nothing to propose);
    ``rng`` is the generator state (:mod:`.rng`, advanced in place). ``split_probability`` and
    ``informed`` choose the pair and the order (module docstring; 0 and False: Dahl & Newcomb's
    move). ``beta``: the target's likelihood power (1 but in a tempered copy, :mod:`.tempering`);
    the informed order is the same for every power (a function of the pair and ``S`` still).
    """
    n = m.X.shape[0]
    i, j, ci, cj, n_members = draw_proposal(rng, s, w, n, split_probability, informed)
    if j < 0:
        return 0, False
    if ci == cj:
        if informed:
            informed_order(m, s, w, i, j, n_members)
        log_q = sequential_allocation(rng, m, s, w, i, j, n_members, w.side[:0], -np.inf, beta)
        log_q += pair_log_ratio(n, n_members + 2, s.counts[n], split_probability)
        return 1, propose_split(rng, m, s, w, ci, j, n_members, log_q, beta)
    # merge: u first, then the reverse split's probability only as far as it matters
    delta = merge_log_ratio(m, s, ci, cj, beta) + pair_log_ratio(n, n_members + 2, s.counts[ci], split_probability)
    log_u = math.log(uniform(rng))
    if delta < log_u:  # the reverse split's log probability is <= 0
        return 2, False
    if informed:
        informed_order(m, s, w, i, j, n_members)
    force = current_sides(s, w, ci, n_members)
    log_q = sequential_allocation(rng, m, s, w, i, j, n_members, force, log_u - delta, beta)
    accept = log_u < delta + log_q
    if accept:
        apply_merge(m, s, w, ci, cj, j, n_members)
    return 2, accept


@numba.njit(**NJIT)
def sams_log_q(labels_to, i, j, order, m, s, w, beta=1.0):
    """Return the log probability that the sequential allocation gives the split of ``labels_to``.

    The allocation is that of ``order`` from the anchors ``i`` and ``j``, at likelihood power ``beta``.

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
    rng = np.ones(4, np.uint64)  # not drawn from: the allocation is forced
    return sequential_allocation(rng, m, s, w, i, j, k, target, -np.inf, beta)


@numba.njit(**NJIT)
def sams_informed_order(i, j, members, m, s, w):
    """Return the informed allocation order of ``members`` (the set ``S``) for anchors ``i, j`` (for tests)."""
    k = members.shape[0]
    for q in range(k):
        w.members[q] = members[q]
    informed_order(m, s, w, i, j, k)
    return w.members[:k].copy()
