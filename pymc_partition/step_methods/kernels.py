"""Compiled (numba) sweeps of the partition samplers.

A kernel sees three bundles (named tuples of preallocated arrays, built by the step method):

:class:`Model` (read only)
    ``X (n, k)`` per-item statistics; ``item_lm (n,)`` each item's singleton log marginal;
    ``log_g``, ``log_h`` the prior's tables (``log pi(z) = log_g[C] + sum_c log_h[n_c]``);
    ``lm_addr`` and ``form_addr`` the compiled log marginal (for ``item_log_marginals``) and the
    predictive form's four functions, as addresses; ``ctx`` the form's context (its constants
    and per-item terms, and the state's ``stats`` and ``cache``;
    :mod:`pymc_partition.predictive._types`).
:class:`State` (updated in place; ``n + 3`` slot rows)
    ``z (n,)`` cluster slot of each item; ``counts``, ``stats (., k)``, ``clm`` and
    ``cache (., w)`` size, summed statistics, log marginal and form cache of each slot;
    ``active`` (first ``meta[0]`` entries) and ``pos`` the slots in use, ``free`` (first
    ``meta[1]`` entries) a stack of free slots. Rows ``n`` and ``n + 1`` hold the two components
    of a split-merge launch state, row ``n + 2`` is scratch.
:class:`Work`
    ``cand``, ``logw`` (``n + 1``) candidate values, ``order`` the visiting order, ``members`` and
    ``side`` the items of a split-merge proposal, ``slot`` a one-slot list.

An item's candidate clusters cost one call of the form's ``pred`` (:mod:`pymc_partition.
predictive`) for all of them: for the specialised forms a few arithmetic operations and a
logarithm per variable and candidate, for the graph form one call of the family's compiled
pytensor graph per candidate. Cluster log marginals (``clm``, needed by split-merge's acceptance
ratio) are carried along by adding the log predictives of the moves, and recomputed by the form's
``init`` from exact sums at the end of each step.

Random numbers come from numba's own generator, seeded once per step from the step's numpy
``Generator`` (``np.random.seed`` inside the kernel), so a PyMC ``random_seed`` fixes the draws.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numba
import numpy as np

from ..predictive._types import (
    ITEM_LM_SIG,
    add_from_addresses,
    init_from_addresses,
    lm_from_addresses,
    pred_from_addresses,
    remove_from_addresses,
)

__all__ = [
    "Model",
    "State",
    "Work",
    "allocate",
    "compiled_entry",
    "run_step",
    "build_state",
    "gibbs_sweep",
    "split_merge_move",
    "restricted_scan",
    "split_merge_log_q",
    "item_log_marginals",
]

_NJIT = dict(nogil=True, cache=True)

Model = namedtuple("Model", "X item_lm log_g log_h lm_addr form_addr ctx")
State = namedtuple("State", "z counts stats clm cache active pos free meta")
Work = namedtuple("Work", "cand logw order members side slot")


def compiled_entry(dispatcher, args):
    """The compiled entry point of ``dispatcher`` for the types of ``args``, or the dispatcher.

    Calling it skips numba's typing of the arguments on every call (about 3 us for the named
    tuples of :func:`run_step`, a tenth of a Gibbs sweep of the paper's 14 items). The caller
    must keep passing arguments of the same types.
    """
    sig = tuple(numba.typeof(a) for a in args)
    cres = dispatcher.overloads.get(sig)
    return getattr(cres, "entry_point", None) or dispatcher


def allocate(n_items, n_stats, cache_width):
    """Zeroed :class:`State` and :class:`Work` bundles for ``n_items`` items."""
    n, i64 = n_items, np.int64
    slots = n + 3
    state = State(
        z=np.zeros(n, i64), counts=np.zeros(slots, i64), stats=np.zeros((slots, n_stats)),
        clm=np.zeros(slots), cache=np.zeros((slots, cache_width)), active=np.zeros(n, i64),
        pos=np.zeros(n, i64), free=np.zeros(n, i64), meta=np.zeros(2, i64),
    )  # fmt: skip
    work = Work(
        cand=np.zeros(n + 1), logw=np.zeros(n + 1), order=np.zeros(n, i64),
        members=np.zeros(n, i64), side=np.zeros(n, i64), slot=np.zeros(1, i64),
    )  # fmt: skip
    return state, work


# ----------------------------------------------------------------------------- form calls
# Hot loops read the bundles' fields once, into locals, and pass arrays explicitly: reading a
# named-tuple field inside a loop costs a reference-count increment and decrement each time.
@numba.njit(nogil=True, cache=True, inline="always")
def _init(m, c):
    """Rebuild slot ``c``'s form cache from its statistics; returns its log marginal."""
    return init_from_addresses(m.form_addr[6], m.form_addr[7])(m.ctx, c)


@numba.njit(nogil=True, cache=True, inline="always")
def _form(m):
    """The form's ``pred``, ``remove`` and ``add`` as first-class functions."""
    a = m.form_addr
    return (
        pred_from_addresses(a[0], a[1]),
        remove_from_addresses(a[2], a[3]),
        add_from_addresses(a[4], a[5]),
    )


@numba.njit(nogil=True, cache=True, inline="always")
def _take(remove, ctx, X, stats, counts, clm, c, i):
    """Take item ``i`` out of slot ``c`` (which keeps at least one item); returns the log
    predictive of ``i`` joining what is left."""
    for v in range(X.shape[1]):
        stats[c, v] -= X[i, v]
    counts[c] -= 1
    lp = remove(ctx, c, i)
    clm[c] -= lp
    return lp


@numba.njit(nogil=True, cache=True, inline="always")
def _put(add, ctx, X, stats, counts, clm, c, i, lp):
    """Put item ``i`` into the non-empty slot ``c``; ``lp`` is its log predictive there."""
    for v in range(X.shape[1]):
        stats[c, v] += X[i, v]
    counts[c] += 1
    clm[c] += lp
    add(ctx, c, i, lp)


@numba.njit(nogil=True, cache=True)
def _copy_slot(s, src, dst):
    for v in range(s.stats.shape[1]):
        s.stats[dst, v] = s.stats[src, v]
    for v in range(s.cache.shape[1]):
        s.cache[dst, v] = s.cache[src, v]
    s.counts[dst] = s.counts[src]
    s.clm[dst] = s.clm[src]


# ----------------------------------------------------------------------------- slot bookkeeping
@numba.njit(nogil=True, cache=True)
def _deactivate(k, active, pos, free, meta):
    a = pos[k]
    last = active[meta[0] - 1]
    active[a] = last
    pos[last] = a
    meta[0] -= 1
    free[meta[1]] = k
    meta[1] += 1


@numba.njit(nogil=True, cache=True)
def _move_to_end(k, active, pos, meta):
    """Swap active slot ``k`` to the end of the active list."""
    a = pos[k]
    last = active[meta[0] - 1]
    active[a] = last
    pos[last] = a
    active[meta[0] - 1] = k
    pos[k] = meta[0] - 1


@numba.njit(nogil=True, cache=True)
def _activate(active, pos, free, meta):
    meta[1] -= 1
    c = free[meta[1]]
    active[meta[0]] = c
    pos[c] = meta[0]
    meta[0] += 1
    return c


@numba.njit(nogil=True, cache=True)
def _sample_log_weights(logw, m):
    """Index drawn with probability proportional to ``exp(logw[:m])`` (overwrites ``logw``)."""
    mx = -np.inf
    for a in range(m):
        if logw[a] > mx:
            mx = logw[a]
    tot = 0.0
    for a in range(m):
        w = math.exp(logw[a] - mx)
        logw[a] = w
        tot += w
    u = np.random.random() * tot
    acc = 0.0
    last = 0
    for a in range(m):
        if logw[a] > 0.0:
            last = a
            acc += logw[a]
            if u < acc:
                return a
    return last


#: items per block of the Gibbs sweep's visiting order (see :func:`visiting_order`)
BLOCK = 64


@numba.njit(nogil=True, cache=True)
def visiting_order(n, block, order):
    """Fill ``order`` with a random order of the ``n`` items for one Gibbs sweep.

    Up to ``block`` items: a uniformly random permutation. More: the blocks of ``block``
    consecutive items in a uniformly random order, the items of a block one after the other.
    Either is chosen independently of the state, so the sweep leaves the posterior invariant.
    The blocked order streams through consecutive rows of the data and cluster labels: with a
    uniformly random permutation every item is a cache miss once the data outgrow the cache,
    which doubled the cost of a sweep at 20,000 items.
    """
    if n <= block:
        for t in range(n):
            order[t] = t
        np.random.shuffle(order)
        return
    n_blocks = (n + block - 1) // block
    blocks = np.random.permutation(n_blocks)
    t = 0
    for b in blocks:
        for i in range(b * block, min(n, (b + 1) * block)):
            order[t] = i
            t += 1


@numba.njit(nogil=True, cache=True)
def canonical_relabel(z, out):
    """Canonical labels (restricted growth string) of slot assignment ``z`` into ``out``."""
    n = z.shape[0]
    mp = np.full(n, -1, dtype=np.int64)
    nxt = 0
    for i in range(n):
        c = z[i]
        if mp[c] < 0:
            mp[c] = nxt
            nxt += 1
        out[i] = mp[c]
    return nxt


# ----------------------------------------------------------------------------- state
@numba.njit(**_NJIT)
def build_state(labels, m, s):
    """Rebuild the cluster state from scratch from labels in ``[0, n)`` (exact sums, no drift)."""
    n, d = m.X.shape
    for c in range(n):
        s.counts[c] = 0
        for v in range(d):
            s.stats[c, v] = 0.0
    for i in range(n):
        c = labels[i]
        s.z[i] = c
        s.counts[c] += 1
        for v in range(d):
            s.stats[c, v] += m.X[i, v]
    s.meta[0] = 0
    s.meta[1] = 0
    for c in range(n):
        if s.counts[c] > 0:
            s.active[s.meta[0]] = c
            s.pos[c] = s.meta[0]
            s.meta[0] += 1
            s.clm[c] = _init(m, c)
        else:
            s.clm[c] = 0.0
    # free stack: smallest free slot on top
    for c in range(n - 1, -1, -1):
        if s.counts[c] == 0:
            s.free[s.meta[1]] = c
            s.meta[1] += 1


@numba.njit(nogil=True, cache=True)
def state_log_posterior(m, s):
    """``log_g[C] + sum_c (log_h[n_c] + log marginal_c)`` over the active clusters, in slot order."""
    C = s.meta[0]
    tot = m.log_g[C]
    for a in range(C):
        c = s.active[a]
        tot += m.log_h[s.counts[c]] + s.clm[c]
    return tot


# ----------------------------------------------------------------------------- Gibbs
@numba.njit(**_NJIT)
def gibbs_sweep(m, s, w, block):
    """One collapsed Gibbs sweep over all items in a random order (:func:`visiting_order`).

    Item ``i``'s full conditional over every existing cluster ``c`` (sizes without ``i``) and a
    new one: ``log_h[n_c+1] - log_h[n_c] + pred(c, i)`` and
    ``log_g[C+1] - log_g[C] + log_h[1] + lm(x_i)``.
    """
    X, item_lm, log_g, log_h, ctx = m.X, m.item_lm, m.log_g, m.log_h, m.ctx
    z, counts, stats, clm = s.z, s.counts, s.stats, s.clm
    active, pos, free, meta = s.active, s.pos, s.free, s.meta
    cand, logw, order = w.cand, w.logw, w.order
    pred, remove, add = _form(m)
    active_addr, cand_addr = np.int64(active.ctypes.data), np.int64(cand.ctypes.data)
    n, d = X.shape
    visiting_order(n, block, order)
    for t in range(n):
        i = order[t]
        k = z[i]
        own = 0.0
        if counts[k] == 1:
            counts[k] = 0
            _deactivate(k, active, pos, free, meta)
            for v in range(d):
                stats[k, v] = 0.0
            clm[k] = 0.0
            C = meta[0]
            pred(ctx, active_addr, C, i, cand_addr)
        else:
            own = _take(remove, ctx, X, stats, counts, clm, k, i)
            _move_to_end(k, active, pos, meta)  # the others first: one call of pred for them all
            C = meta[0]
            pred(ctx, active_addr, C - 1, i, cand_addr)
            cand[C - 1] = own
        for a in range(C):
            c = active[a]
            logw[a] = log_h[counts[c] + 1] - log_h[counts[c]] + cand[a]
        if C > 0:
            logw[C] = log_g[C + 1] - log_g[C] + log_h[1] + item_lm[i]
        else:
            logw[C] = 0.0
        a = _sample_log_weights(logw, C + 1)
        if a == C:
            c = _activate(active, pos, free, meta)
            for v in range(d):
                stats[c, v] = X[i, v]
            counts[c] = 1
            _init(m, c)
            clm[c] = item_lm[i]
        else:
            c = active[a]
            _put(add, ctx, X, stats, counts, clm, c, i, cand[a])
        z[i] = c


# ----------------------------------------------------------------------------- split-merge
@numba.njit(**_NJIT)
def restricted_scan(m, s, w, n_members, force):
    """Restricted Gibbs scan of the members of a split-merge proposal between the two launch
    components; returns the log probability of the sides chosen.

    The components live in slots ``n`` (anchor ``i``) and ``n + 1`` (anchor ``j``), so neither
    empties; ``w.side[q]`` is the ``q``-th member's component. With ``force`` empty each member's
    side is drawn from its restricted conditional; otherwise member ``q`` is put on side
    ``force[q]``.
    """
    X, log_h, ctx = m.X, m.log_h, m.ctx
    counts, stats, clm = s.counts, s.stats, s.clm
    members, side, slot, out = w.members, w.side, w.slot, w.cand
    pred, remove, add = _form(m)
    slot_addr, out_addr = np.int64(slot.ctypes.data), np.int64(out.ctypes.data)
    n = X.shape[0]
    forced = force.shape[0] > 0
    log_q = 0.0
    for q in range(n_members):
        k = members[q]
        sd = side[q]
        a = n + sd
        b = n + 1 - sd
        clm_a = clm[a]
        lp_a = _take(remove, ctx, X, stats, counts, clm, a, k)
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
            stay = np.random.random() < math.exp(lw_a - lse)
        if stay:
            _put(add, ctx, X, stats, counts, clm, a, k, lp_a)
            clm[a] = clm_a  # exactly as before the item left
            log_q += lw_a - lse
        else:
            _put(add, ctx, X, stats, counts, clm, b, k, lp_b)
            side[q] = 1 - sd
            log_q += lw_b - lse
    return log_q


@numba.njit(**_NJIT)
def _launch(m, s, w, i, j, n_members, n_scans, launch_sides):
    """Jain & Neal's launch state: ``S`` split uniformly at random (or as ``launch_sides`` says,
    if it is not empty), then ``n_scans`` restricted scans."""
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
            sd = 0 if np.random.random() < 0.5 else 1
        w.side[q] = sd
        s.counts[n + sd] += 1
        for v in range(d):
            s.stats[n + sd, v] += m.X[k, v]
    for c in (n, n + 1):
        s.clm[c] = _init(m, c)
    for _ in range(n_scans):
        restricted_scan(m, s, w, n_members, launch_sides[:0])


@numba.njit(nogil=True, cache=True)
def _members(z, i, j, members):
    """Items other than ``i, j`` in the clusters of ``i`` and ``j`` (in item order)."""
    m = 0
    for k in range(z.shape[0]):
        if k != i and k != j and (z[k] == z[i] or z[k] == z[j]):
            members[m] = k
            m += 1
    return m


@numba.njit(**_NJIT)
def split_merge_move(m, s, w, n_scans):
    """One restricted-Gibbs split-merge proposal (Jain & Neal 2004, conjugate case).

    Returns ``(kind, accepted)`` with kind 1 = split, 2 = merge (0 = nothing to propose).
    """
    n, d = m.X.shape
    if n < 2:
        return 0, False
    log_g, log_h = m.log_g, m.log_h
    i = np.random.randint(n)
    j = np.random.randint(n - 1)
    if j >= i:
        j += 1
    ci = s.z[i]
    cj = s.z[j]
    n_members = _members(s.z, i, j, w.members)
    no_sides = w.side[:0]
    _launch(m, s, w, i, j, n_members, n_scans, no_sides)
    C = s.meta[0]
    if ci == cj:
        # split: a final restricted scan from the launch state is the proposal
        log_q = restricted_scan(m, s, w, n_members, no_sides)
        log_acc = (
            log_g[C + 1] - log_g[C]
            + log_h[s.counts[n]] + log_h[s.counts[n + 1]] - log_h[s.counts[ci]]
            + s.clm[n] + s.clm[n + 1] - s.clm[ci]
            - log_q
        )  # fmt: skip
        accept = math.log(np.random.random()) < log_acc
        if accept:
            cnew = _activate(s.active, s.pos, s.free, s.meta)
            _copy_slot(s, n, ci)
            _copy_slot(s, n + 1, cnew)
            s.z[j] = cnew
            for q in range(n_members):
                if w.side[q] == 1:
                    s.z[w.members[q]] = cnew
        return 1, accept
    # merge: probability that the final restricted scan from the launch state gives the current split
    target = w.order  # free during a split-merge move
    for q in range(n_members):
        target[q] = 0 if s.z[w.members[q]] == ci else 1
    log_q = restricted_scan(m, s, w, n_members, target[:n_members])
    r = n + 2  # scratch slot: the merged cluster
    for v in range(d):
        s.stats[r, v] = s.stats[ci, v] + s.stats[cj, v]
    lm_merged = _init(m, r)
    n_i = s.counts[ci]
    n_j = s.counts[cj]
    log_acc = (
        log_g[C - 1] - log_g[C]
        + log_h[n_i + n_j] - log_h[n_i] - log_h[n_j]
        + lm_merged - s.clm[ci] - s.clm[cj]
        + log_q
    )  # fmt: skip
    accept = math.log(np.random.random()) < log_acc
    if accept:
        for v in range(d):
            s.stats[ci, v] = s.stats[r, v]
            s.stats[cj, v] = 0.0
        s.counts[ci] = n_i + n_j
        s.counts[cj] = 0
        s.clm[cj] = 0.0
        s.clm[ci] = _init(m, ci)
        s.z[j] = ci
        for q in range(n_members):
            s.z[w.members[q]] = ci
        _deactivate(cj, s.active, s.pos, s.free, s.meta)
    return 2, accept


@numba.njit(**_NJIT)
def split_merge_log_q(labels_from, labels_to, i, j, launch_sides, m, s, w):
    """Log probability that one restricted Gibbs scan moves the launch state to ``labels_to``.

    ``S`` is the set of items other than ``i, j`` in the clusters of ``i`` and ``j`` under
    ``labels_from``, in item order; ``launch_sides[q]`` (0 = with ``i``, 1 = with ``j``) is the
    launch side of its ``q``-th member. Used by tests to build the exact split-merge transition
    matrix by enumerating the launch states (only the launch slots of ``s`` are touched).
    """
    n_members = _members(labels_from, i, j, w.members)
    _launch(m, s, w, i, j, n_members, 0, launch_sides)
    target = np.empty(n_members, dtype=np.int64)
    for q in range(n_members):
        target[q] = 0 if labels_to[w.members[q]] == labels_to[i] else 1
    return restricted_scan(m, s, w, n_members, target)


# ----------------------------------------------------------------------------- one PyMC step
@numba.njit(**_NJIT)
def run_step(seed, labels, reuse, m, s, w, n_gibbs, n_split_merge, n_scans, gibbs_probability,
             thin, block, out_labels):
    """One step: ``thin`` times over, ``n_split_merge`` split-merge proposals then ``n_gibbs``
    Gibbs sweeps (plus one more with probability ``gibbs_probability``). Writes canonical labels
    to ``out_labels``, rebuilds the cluster state from them exactly and returns ``(log posterior,
    n_clusters, last proposal kind, last accepted, n accepted, n proposals, n Gibbs sweeps)``.
    """
    np.random.seed(seed)
    if not reuse:
        build_state(labels, m, s)
    kind = 0
    accepted = False
    n_acc = 0
    n_prop = 0
    n_sweeps = 0
    for _ in range(thin):
        for _ in range(n_split_merge):
            kind, accepted = split_merge_move(m, s, w, n_scans)
            if kind > 0:
                n_prop += 1
            if accepted:
                n_acc += 1
        ng = n_gibbs
        if gibbs_probability > 0.0:
            if np.random.random() < gibbs_probability:
                ng += 1
        for _ in range(ng):
            gibbs_sweep(m, s, w, block)
        n_sweeps += ng
    canonical_relabel(s.z, out_labels)
    build_state(out_labels, m, s)
    logp = state_log_posterior(m, s)
    return logp, s.meta[0], kind, accepted, n_acc, n_prop, n_sweeps


@numba.njit(ITEM_LM_SIG, **_NJIT)
def item_log_marginals(X, lm_addr):
    """Singleton log marginal of every item, ``lm(x_i)``."""
    lm = lm_from_addresses(lm_addr[0], lm_addr[1])
    n = X.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = lm(X[i])
    return out
