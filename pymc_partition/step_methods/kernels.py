"""Compiled (numba) sweeps of the partition samplers.

State of a partition during a step, all preallocated by the step method and updated in place:

``z (n,)``          cluster slot of each item
``counts (n,)``     size of each slot's cluster (0 for a free slot)
``cstats (n, d)``   summed additive statistics of each slot's cluster
``clm (n,)``        cached log marginal likelihood of each slot's cluster
``active (n,)``     the slots in use (first ``meta[0]`` entries), ``pos`` their positions
``free (n,)``       a stack of free slots (first ``meta[1]`` entries)

Every kernel takes ``lm``, a numba dispatcher computing the family's cluster log marginal from a
statistics vector (compiled from the family's pytensor graph, see :mod:`.compile`); it is called
as ``lm(stats)``. An item update costs ``C`` calls of ``lm`` (one per existing cluster,
the item's own cluster after removal included; the new-cluster term uses the item's cached
singleton log marginal): ``O(C d)`` per item.

Prior terms come from the exchangeable prior's tables, ``log pi(z) = log_g[C] + sum_c log_h[n_c]``.

Random numbers come from numba's own generator, seeded once per step from the step's numpy
``Generator`` (``np.random.seed`` inside the kernel), so a PyMC ``random_seed`` fixes the draws.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = [
    "run_step",
    "build_state",
    "gibbs_sweep",
    "split_merge_move",
    "restricted_update",
    "split_merge_log_q",
]

_NJIT = dict(nogil=True, cache=True)

# Types of the compiled entry points. ``lm`` is a first-class function (numba ``FunctionType``):
# every family's compiled log marginal has the same type, so the kernels compile once and are
# cached on disk instead of being specialized (and recompiled) per family.
f8 = numba.float64
i8 = numba.int64
F1 = numba.types.Array(f8, 1, "C")
F2 = numba.types.Array(f8, 2, "C")
I1 = numba.types.Array(i8, 1, "C")
LM_SIG = f8(F1)
LM_TYPE = numba.types.FunctionType(LM_SIG)
RUN_STEP_SIG = numba.types.Tuple((f8, i8, i8, numba.boolean, i8, i8))(
    i8, I1, numba.boolean, F2, F1, F1, F1, I1, i8, i8, i8, f8,
    I1, I1, F2, F1, I1, I1, I1, I1, F1, F1, F1, I1, I1, I1, F2, I1, F1, I1,
)  # fmt: skip
ITEM_LM_SIG = F1(F2, I1)
LOG_Q_SIG = f8(I1, I1, i8, i8, I1, F2, I1, F1)


@intrinsic
def _lm_from_addresses(typingctx, c_addr, jit_addr):
    """Build the first-class function ``lm`` from its cfunc-wrapper and jit addresses.

    Passing a dispatcher as an argument makes numba look its addresses up on *every* call of the
    kernel (tens of microseconds); the step computes them once (:mod:`.compile`) and passes two
    integers instead. The addresses are only valid in the process that computed them.
    """
    sig = LM_TYPE(c_addr, jit_addr)

    def codegen(context, builder, signature, args):
        sfunc = cgutils.create_struct_proxy(LM_TYPE)(context, builder)
        voidptr = context.get_value_type(numba.types.voidptr)
        sfunc.c_addr = builder.inttoptr(args[0], voidptr)
        sfunc.py_addr = ir.Constant(voidptr, None)
        sfunc.jit_addr = builder.inttoptr(args[1], voidptr)
        return sfunc._getvalue()

    return sig, codegen


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
def build_state(labels, X, lm, z, counts, cstats, clm, active, pos, free, meta):
    """Rebuild the cluster state from scratch from labels in ``[0, n)`` (exact sums, no drift)."""
    n, d = X.shape
    for c in range(n):
        counts[c] = 0
        for v in range(d):
            cstats[c, v] = 0.0
    for i in range(n):
        c = labels[i]
        z[i] = c
        counts[c] += 1
        for v in range(d):
            cstats[c, v] += X[i, v]
    meta[0] = 0
    meta[1] = 0
    for c in range(n):
        if counts[c] > 0:
            active[meta[0]] = c
            pos[c] = meta[0]
            meta[0] += 1
            clm[c] = lm(cstats[c])
        else:
            clm[c] = 0.0
    # free stack: smallest free slot on top
    for c in range(n - 1, -1, -1):
        if counts[c] == 0:
            free[meta[1]] = c
            meta[1] += 1


@numba.njit(nogil=True, cache=True)
def state_log_posterior(log_g, log_h, counts, clm, active, meta):
    """``log_g[C] + sum_c (log_h[n_c] + log marginal_c)`` over the active clusters, in slot order."""
    C = meta[0]
    tot = log_g[C]
    for a in range(C):
        c = active[a]
        tot += log_h[counts[c]] + clm[c]
    return tot


# ----------------------------------------------------------------------------- Gibbs
@numba.njit(**_NJIT)
def gibbs_sweep(X, item_lm, log_g, log_h, lm, z, counts, cstats, clm, active, pos, free, meta,
                tmp, cand, logw, order):
    """One collapsed Gibbs sweep over all items in a random order.

    Item ``i``'s full conditional over every existing cluster ``c`` (sizes without ``i``) and a
    new one:  ``log_h[n_c+1] - log_h[n_c] + lm(S_c + x_i) - lm(S_c)`` and
    ``log_g[C+1] - log_g[C] + log_h[1] + lm(x_i)``.
    """
    n, d = X.shape
    for t in range(n):
        order[t] = t
    np.random.shuffle(order)
    for t in range(n):
        i = order[t]
        k = z[i]
        old = clm[k]
        counts[k] -= 1
        if counts[k] == 0:
            _deactivate(k, active, pos, free, meta)
            for v in range(d):
                cstats[k, v] = 0.0
        else:
            for v in range(d):
                cstats[k, v] -= X[i, v]
            clm[k] = lm(cstats[k])
        C = meta[0]
        for a in range(C):
            c = active[a]
            if c == k:
                cl = old  # lm(S_k - x_i + x_i): the value before removal
            else:
                for v in range(d):
                    tmp[v] = cstats[c, v] + X[i, v]
                cl = lm(tmp)
            cand[a] = cl
            logw[a] = log_h[counts[c] + 1] - log_h[counts[c]] + cl - clm[c]
        if C > 0:
            logw[C] = log_g[C + 1] - log_g[C] + log_h[1] + item_lm[i]
        else:
            logw[C] = 0.0
        a = _sample_log_weights(logw, C + 1)
        if a == C:
            c = _activate(active, pos, free, meta)
            for v in range(d):
                cstats[c, v] = X[i, v]
            counts[c] = 1
            clm[c] = item_lm[i]
        else:
            c = active[a]
            for v in range(d):
                cstats[c, v] += X[i, v]
            counts[c] += 1
            clm[c] = cand[a]
        z[i] = c


# ----------------------------------------------------------------------------- split-merge
@numba.njit(**_NJIT)
def restricted_update(q, k, X, lm, log_h, side, cs, cn, clms, tmp, force):
    """Restricted Gibbs update of item ``k`` (``q``-th member) between the two launch components.

    ``cs (2, d)``, ``cn (2,)``, ``clms (2,)`` hold the components' statistics, sizes and log
    marginals (component 0 holds the anchor ``i``, 1 the anchor ``j``, so neither empties).
    With ``force < 0`` the new side is drawn from the restricted conditional; otherwise the item
    is put on side ``force``. Returns the log conditional probability of the side chosen.
    """
    d = X.shape[1]
    s = side[q]
    o = 1 - s
    old = clms[s]
    for v in range(d):
        cs[s, v] -= X[k, v]
    cn[s] -= 1
    lm_s_without = lm(cs[s])
    for v in range(d):
        tmp[v] = cs[o, v] + X[k, v]
    lm_o_with = lm(tmp)
    lw_s = log_h[cn[s] + 1] - log_h[cn[s]] + old - lm_s_without
    lw_o = log_h[cn[o] + 1] - log_h[cn[o]] + lm_o_with - clms[o]
    mx = max(lw_s, lw_o)
    lse = mx + math.log(math.exp(lw_s - mx) + math.exp(lw_o - mx))
    lp_s = lw_s - lse
    lp_o = lw_o - lse
    if force >= 0:
        stay = force == s
    else:
        stay = np.random.random() < math.exp(lp_s)
    if stay:
        for v in range(d):
            cs[s, v] += X[k, v]
        cn[s] += 1
        clms[s] = old
        return lp_s
    for v in range(d):
        cs[o, v] = tmp[v]
    cn[o] += 1
    clms[s] = lm_s_without
    clms[o] = lm_o_with
    side[q] = o
    return lp_o


@numba.njit(**_NJIT)
def _launch(i, j, m, members, X, lm, log_h, n_scans, side, cs, cn, clms, tmp):
    """Jain & Neal's launch state: uniform random split of ``S`` then ``n_scans`` restricted scans."""
    d = X.shape[1]
    for v in range(d):
        cs[0, v] = X[i, v]
        cs[1, v] = X[j, v]
    cn[0] = 1
    cn[1] = 1
    for q in range(m):
        k = members[q]
        s = 0 if np.random.random() < 0.5 else 1
        side[q] = s
        cn[s] += 1
        for v in range(d):
            cs[s, v] += X[k, v]
    clms[0] = lm(cs[0])
    clms[1] = lm(cs[1])
    for _ in range(n_scans):
        for q in range(m):
            restricted_update(q, members[q], X, lm, log_h, side, cs, cn, clms, tmp, -1)


@numba.njit(**_NJIT)
def split_merge_move(X, log_g, log_h, lm, n_scans, z, counts, cstats, clm, active, pos, free,
                     meta, members, side, cs, cn, clms, tmp):
    """One restricted-Gibbs split-merge proposal (Jain & Neal 2004, conjugate case).

    Returns ``(kind, accepted)`` with kind 1 = split, 2 = merge (0 = nothing to propose).
    """
    n, d = X.shape
    if n < 2:
        return 0, False
    i = np.random.randint(n)
    j = np.random.randint(n - 1)
    if j >= i:
        j += 1
    ci = z[i]
    cj = z[j]
    m = 0
    for k in range(n):
        if k != i and k != j and (z[k] == ci or z[k] == cj):
            members[m] = k
            m += 1
    _launch(i, j, m, members, X, lm, log_h, n_scans, side, cs, cn, clms, tmp)
    C = meta[0]
    if ci == cj:
        # split: a final restricted scan from the launch state is the proposal
        log_q = 0.0
        for q in range(m):
            log_q += restricted_update(q, members[q], X, lm, log_h, side, cs, cn, clms, tmp, -1)
        log_acc = (
            log_g[C + 1] - log_g[C]
            + log_h[cn[0]] + log_h[cn[1]] - log_h[counts[ci]]
            + clms[0] + clms[1] - clm[ci]
            - log_q
        )
        accept = math.log(np.random.random()) < log_acc
        if accept:
            cnew = _activate(active, pos, free, meta)
            for v in range(d):
                cstats[ci, v] = cs[0, v]
                cstats[cnew, v] = cs[1, v]
            counts[ci] = cn[0]
            counts[cnew] = cn[1]
            clm[ci] = clms[0]
            clm[cnew] = clms[1]
            z[j] = cnew
            for q in range(m):
                if side[q] == 1:
                    z[members[q]] = cnew
        return 1, accept
    # merge: probability that the final restricted scan from the launch state gives the current split
    log_q = 0.0
    for q in range(m):
        tgt = 0 if z[members[q]] == ci else 1
        log_q += restricted_update(q, members[q], X, lm, log_h, side, cs, cn, clms, tmp, tgt)
    for v in range(d):
        tmp[v] = cstats[ci, v] + cstats[cj, v]
    lm_merged = lm(tmp)
    n_i = counts[ci]
    n_j = counts[cj]
    log_acc = (
        log_g[C - 1] - log_g[C]
        + log_h[n_i + n_j] - log_h[n_i] - log_h[n_j]
        + lm_merged - clm[ci] - clm[cj]
        + log_q
    )
    accept = math.log(np.random.random()) < log_acc
    if accept:
        for v in range(d):
            cstats[ci, v] = tmp[v]
            cstats[cj, v] = 0.0
        counts[ci] = n_i + n_j
        counts[cj] = 0
        clm[ci] = lm_merged
        clm[cj] = 0.0
        z[j] = ci
        for q in range(m):
            z[members[q]] = ci
        _deactivate(cj, active, pos, free, meta)
    return 2, accept


@numba.njit(LOG_Q_SIG, **_NJIT)
def split_merge_log_q(labels_from, labels_to, i, j, launch_sides, X, lm_addr, log_h):
    """Log probability that one restricted Gibbs scan moves the launch state to ``labels_to``.

    ``S`` is the set of items other than ``i, j`` in the clusters of ``i`` and ``j`` under
    ``labels_from``, in item order; ``launch_sides[q]`` (0 = with ``i``, 1 = with ``j``) is the
    launch side of its ``q``-th member. Used by tests to build the exact split-merge transition
    matrix by enumerating the launch states.
    """
    lm = _lm_from_addresses(lm_addr[0], lm_addr[1])
    n, d = X.shape
    members = np.empty(n, dtype=np.int64)
    m = 0
    for k in range(n):
        if k != i and k != j and (labels_from[k] == labels_from[i] or labels_from[k] == labels_from[j]):
            members[m] = k
            m += 1
    side = np.empty(n, dtype=np.int64)
    cs = np.zeros((2, d))
    cn = np.zeros(2, dtype=np.int64)
    clms = np.zeros(2)
    tmp = np.zeros(d)
    for v in range(d):
        cs[0, v] = X[i, v]
        cs[1, v] = X[j, v]
    cn[0] = 1
    cn[1] = 1
    for q in range(m):
        s = launch_sides[q]
        side[q] = s
        cn[s] += 1
        for v in range(d):
            cs[s, v] += X[members[q], v]
    clms[0] = lm(cs[0])
    clms[1] = lm(cs[1])
    log_q = 0.0
    for q in range(m):
        k = members[q]
        tgt = 0 if labels_to[k] == labels_to[i] else 1
        log_q += restricted_update(q, k, X, lm, log_h, side, cs, cn, clms, tmp, tgt)
    return log_q


# ----------------------------------------------------------------------------- one PyMC step
@numba.njit(RUN_STEP_SIG, **_NJIT)
def run_step(seed, labels, reuse, X, item_lm, log_g, log_h, lm_addr, n_gibbs, n_split_merge, n_scans,
             gibbs_probability, z, counts, cstats, clm, active, pos, free, meta, tmp, cand, logw,
             order, members, side, cs, cn, clms, out_labels):
    """One step: ``n_split_merge`` split-merge proposals, then ``n_gibbs`` Gibbs sweeps (plus one
    more with probability ``gibbs_probability``). Writes canonical labels to ``out_labels``,
    rebuilds the cluster state from them exactly and returns
    ``(log posterior, n_clusters, last proposal kind, last accepted, n accepted, n Gibbs sweeps)``.
    """
    lm = _lm_from_addresses(lm_addr[0], lm_addr[1])
    np.random.seed(seed)
    if not reuse:
        build_state(labels, X, lm, z, counts, cstats, clm, active, pos, free, meta)
    kind = 0
    accepted = False
    n_acc = 0
    for _ in range(n_split_merge):
        kind, accepted = split_merge_move(X, log_g, log_h, lm, n_scans, z, counts, cstats, clm,
                                          active, pos, free, meta, members, side, cs, cn, clms,
                                          tmp)
        if accepted:
            n_acc += 1
    ng = n_gibbs
    if gibbs_probability > 0.0:
        if np.random.random() < gibbs_probability:
            ng += 1
    for _ in range(ng):
        gibbs_sweep(X, item_lm, log_g, log_h, lm, z, counts, cstats, clm, active, pos, free, meta,
                    tmp, cand, logw, order)
    canonical_relabel(z, out_labels)
    build_state(out_labels, X, lm, z, counts, cstats, clm, active, pos, free, meta)
    logp = state_log_posterior(log_g, log_h, counts, clm, active, meta)
    return logp, meta[0], kind, accepted, n_acc, ng


@numba.njit(ITEM_LM_SIG, **_NJIT)
def item_log_marginals(X, lm_addr):
    """Singleton log marginal of every item, ``lm(x_i)``."""
    lm = _lm_from_addresses(lm_addr[0], lm_addr[1])
    n = X.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = lm(X[i])
    return out
