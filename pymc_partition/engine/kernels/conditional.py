"""Every item's full conditional at a fixed partition, without moving it: the per-draw terms of
the conditional (discrete Stein) check (:mod:`pymc_partition.conditional_check`).

For item ``i`` the candidates are the clusters of the other items (sizes ``m_k`` without ``i``)
and a new one, with the Gibbs sweep's weights (:func:`.gibbs.gibbs_sweep`); ``p`` their
normalised probabilities and ``o`` the candidate holding ``i`` now. Item ``i``'s Stein terms
``(A_i f)(c) = sum_k p_k f(c^{i->k}) - f(c)`` for the test functions of :data:`CHECK_NAMES`:

``n_clusters``   ``p_new - [i alone]``
``cluster_size`` ``sum_k p_k m_k - m_o``  (``f = sum_c n_c^2 / 2``, which moves by ``m_k``)
``partner``      ``p_{c(j)} - [c(i) = c(j)]`` for a fixed partner item ``j != i``
``log_post``     ``sum_k p_k log p_k - log p_o``  (``f = log pi(c)``)

Item ``i`` is taken out of its cluster exactly as the sweep does and put back where it was, so
the cost per item is the sweep's, less the random draw.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .slots import activate, deactivate, move_to_end, put, take
from .state import NJIT, build_state, form_functions, init_slot

__all__ = ["CHECK_NAMES", "conditional_terms"]

#: the test functions, in the order of the kernel's output columns
CHECK_NAMES = ("n_clusters", "cluster_size", "partner", "log_post")


@numba.njit(**NJIT, inline="always")
def _item_terms(m, s, w, pred, remove, add, active_addr, cand_addr, i, j, out):
    """Add item ``i``'s four Stein terms (partner ``j``) to ``out``; the state is unchanged.
    (The form's functions and the addresses are made once per draw, not per item.)"""
    X, item_lm, log_g, log_h, ctx = m.X, m.item_lm, m.log_g, m.log_h, m.ctx
    z, counts, stats, clm = s.z, s.counts, s.stats, s.clm
    active, pos, free, meta = s.active, s.pos, s.free, s.meta
    cand, logw = w.cand, w.logw
    d = X.shape[1]
    k = z[i]
    own = 0.0
    alone = counts[k] == 1
    if alone:
        counts[k] = 0
        deactivate(k, active, pos, free, meta)
        for v in range(d):
            stats[k, v] = 0.0
        clm[k] = 0.0
        C = meta[0]
        pred(ctx, active_addr, C, i, cand_addr)
        o = C
    else:
        own = take(remove, ctx, X, stats, counts, clm, k, i)
        move_to_end(k, active, pos, meta)
        C = meta[0]
        pred(ctx, active_addr, C - 1, i, cand_addr)
        cand[C - 1] = own
        o = C - 1
    for a in range(C):
        c = active[a]
        logw[a] = log_h[counts[c] + 1] - log_h[counts[c]] + cand[a]
    if C > 0:
        logw[C] = log_g[C + 1] - log_g[C] + log_h[1] + item_lm[i]
    else:
        logw[C] = 0.0
    mx = -np.inf
    for a in range(C + 1):
        mx = max(mx, logw[a])
    tot = 0.0
    for a in range(
        C + 1
    ):  # cand is free now (own is kept): the unnormalised probabilities
        cand[a] = math.exp(logw[a] - mx)
        tot += cand[a]
    log_tot = mx + math.log(tot)
    ent = 0.0  # sum_k p_k log p_k
    size = 0.0  # sum_k p_k m_k
    for a in range(C + 1):
        if cand[a] > 0.0:  # a candidate the prior forbids has logw = -inf
            ent += cand[a] * logw[a]
            if a < C:
                size += cand[a] * counts[active[a]]
    ent = ent / tot - log_tot
    size /= tot
    p_new = cand[C] / tot
    mine = 0 if alone else counts[k]
    out[0] += p_new - (1.0 if alone else 0.0)
    out[1] += size - mine
    if j >= 0:
        aj = pos[z[j]]  # j's cluster is active: j is in it
        out[2] += cand[aj] / tot - (1.0 if (not alone and z[j] == k) else 0.0)
    out[3] += ent - (logw[o] - log_tot)
    # put i back where it was
    if alone:
        c = activate(active, pos, free, meta)
        for v in range(d):
            stats[c, v] = X[i, v]
        counts[c] = 1
        init_slot(m, c)
        clm[c] = item_lm[i]
        z[i] = c
    else:
        put(add, ctx, X, stats, counts, clm, k, i, own)


@numba.njit(**NJIT)
def conditional_terms(labels, items, partners, m, s, w, out):
    """Item-averaged Stein terms of each label vector.

    Parameters
    ----------
    labels : ndarray (S, n) of int64
        Label vectors with labels in ``[0, n)``.
    items : ndarray (r,) of int64
        The items evaluated (the same for every label vector).
    partners : ndarray (r,) of int64
        Partner item of each evaluated item (different from it).
    m, s, w : Model, State, Work
        The engine's bundles (:class:`~pymc_partition.engine.PartitionKernel.bundles`); the
        state is rebuilt from each label vector.
    out : ndarray (S, 4)
        Overwritten with the mean over ``items`` of each test function's term (:data:`CHECK_NAMES`).
    """
    r = items.shape[0]
    pred, remove, add = form_functions(m)
    active_addr, cand_addr = (
        np.int64(s.active.ctypes.data),
        np.int64(w.cand.ctypes.data),
    )
    for t in range(labels.shape[0]):
        build_state(labels[t], m, s)
        for q in range(out.shape[1]):
            out[t, q] = 0.0
        for a in range(r):
            _item_terms(
                m,
                s,
                w,
                pred,
                remove,
                add,
                active_addr,
                cand_addr,
                items[a],
                partners[a],
                out[t],
            )
        for q in range(out.shape[1]):
            out[t, q] /= r
