"""Every item's full conditional at a fixed partition, without moving it.

The per-draw terms of the conditional (discrete Stein) check (:mod:`pymc_partition.conditional_check`).

For item ``i`` the candidates are the clusters of the other items (sizes ``m_k`` without ``i``)
and a new one, with the Gibbs sweep's weights (:func:`.gibbs.gibbs_sweep`); ``p`` their
normalised probabilities and ``o`` the candidate holding ``i`` now. Item ``i``'s Stein terms
``(A_i f)(c) = sum_k p_k f(c^{i->k}) - f(c)`` for the test functions of :data:`CHECK_NAMES`:

``n_clusters``   ``p_new - [i alone]``
``cluster_size`` ``sum_k p_k m_k - m_o``  (``f = sum_c n_c^2 / 2``, which moves by ``m_k``)
``partner``      ``p_{c(j)} - [c(i) = c(j)]`` for a fixed partner item ``j != i``
``log_post``     ``sum_k p_k log p_k - log p_o``  (``f = log pi(c)``)

Item ``i`` is taken out of its cluster exactly as the sweep does and put back where it was, so
the cost per item is about the sweep's; :func:`conditional_terms` evaluates all items or one
random item of each stratum of consecutive items (an unbiased estimate of their mean).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...predictive._types import address_of
from .slots import activate, deactivate, move_to_end, put, take
from .state import NJIT, build_state, form_functions, init_slot, state_log_posterior

__all__ = ["CHECK_NAMES", "conditional_terms", "check_function_values"]

#: the test functions, in the order of the kernel's output columns
CHECK_NAMES = ("n_clusters", "cluster_size", "partner", "log_post")


@numba.njit(**NJIT, inline="always")
def _item_terms(m, s, w, pred, remove, add, active_addr, cand_addr, i, j):
    """Item ``i``'s four Stein terms (partner ``j``, none if negative); the state is unchanged.

    (The form's functions and the addresses are made once per draw, not per item.)
    """
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
    mx = -np.inf
    for a in range(C):
        cnt = counts[active[a]]
        logw[a] = log_h[cnt + 1] - log_h[cnt] + cand[a]
        mx = max(mx, logw[a])
    if C > 0:
        logw[C] = log_g[C + 1] - log_g[C] + log_h[1] + item_lm[i]
    else:
        logw[C] = 0.0
    mx = max(mx, logw[C])
    # one pass: the normaliser, sum_k p_k log p_k and sum_k p_k m_k (unnormalised; cand is
    # free now, own is kept)
    tot = 0.0
    ent = 0.0
    size = 0.0
    for a in range(C + 1):
        e = math.exp(logw[a] - mx)
        cand[a] = e
        if e > 0.0:  # a candidate the prior forbids has logw = -inf
            tot += e
            ent += e * logw[a]
            if a < C:
                size += e * counts[active[a]]
    t_new = cand[C] / tot - (1.0 if alone else 0.0)
    t_size = size / tot - (0 if alone else counts[k])
    t_partner = 0.0
    if j >= 0:
        # j's cluster is active (j is in it); i shares it now unless alone
        t_partner = cand[pos[z[j]]] / tot - (1.0 if (not alone and z[j] == k) else 0.0)
    t_post = ent / tot - logw[o]
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
    return t_new, t_size, t_partner, t_post


@numba.njit(**NJIT)
def conditional_terms(labels, bounds, u, partners, m, s, w, out):
    """Stein terms of each label vector, averaged over the items (or a stratified random subset).

    The items are split into the strata ``[bounds[r], bounds[r + 1])``; each label vector's term
    is ``sum_r (size_r / n) (A_i f)(c)`` over one item ``i`` per stratum, drawn uniformly by
    ``u``: an unbiased estimate of the mean over all items (exactly that mean with strata of
    one item each).

    Parameters
    ----------
    labels : ndarray (S, n) of int64
        Label vectors with labels in ``[0, n)``.
    bounds : ndarray (R + 1,) of int64
        Increasing stratum boundaries from 0 to ``n``.
    u : ndarray (S, R) of float64
        Uniforms in ``[0, 1)`` choosing each stratum's item for each label vector (shape
        ``(S, 0)`` when every stratum holds one item).
    partners : ndarray (n,) of int64
        Partner item of each item (different from it; negative: none).
    m, s, w : Model, State, Work
        The engine's bundles (:class:`~pymc_partition.engine.PartitionKernel.bundles`); the
        state is rebuilt from each label vector.
    out : ndarray (S, 4)
        Overwritten with the terms of the test functions of :data:`CHECK_NAMES`.
    """
    n = labels.shape[1]
    R = bounds.shape[0] - 1
    pred, remove, add = form_functions(m)
    active_addr, cand_addr = (
        address_of(s.active),
        address_of(w.cand),
    )
    draw = u.shape[1] > 0
    for t in range(labels.shape[0]):
        build_state(labels[t], m, s)
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        for r in range(R):
            lo = bounds[r]
            size = bounds[r + 1] - lo
            i = lo + min(int(u[t, r] * size), size - 1) if draw else lo
            t0, t1, t2, t3 = _item_terms(m, s, w, pred, remove, add, active_addr, cand_addr, i, partners[i])
            a0 += size * t0
            a1 += size * t1
            a2 += size * t2
            a3 += size * t3
        out[t, 0] = a0 / n
        out[t, 1] = a1 / n
        out[t, 2] = a2 / n
        out[t, 3] = a3 / n


@numba.njit(**NJIT)
def check_function_values(labels, partners, m, s, out):
    """Evaluate the test functions of :data:`CHECK_NAMES` at each label vector (not their Stein terms).

    Each check's terms carry a slow part that follows its own test function while their own
    autocorrelations hardly show it; the test's batches must cover these functions' times
    (``docs/maths/conditional_check.md``). Per row: the number of clusters, the sum of squared
    cluster sizes over two, the number of items sharing their partner's cluster, and the
    unnormalised log posterior (``log_g[C] + sum_c (log_h[n_c] + log marginal_c)``).

    Parameters
    ----------
    labels : ndarray (S, n) of int64
        Label vectors with labels in ``[0, n)``.
    partners : ndarray (n,) of int64
        Partner item of each item (negative: none).
    m, s : Model, State
        The engine's bundles; the state is rebuilt from each label vector.
    out : ndarray (S, 4)
        Overwritten with the values.
    """
    n = labels.shape[1]
    for t in range(labels.shape[0]):
        build_state(labels[t], m, s)
        C = s.meta[0]
        sq = 0.0
        for a in range(C):
            c = s.counts[s.active[a]]
            sq += c * c
        same = 0
        for i in range(n):
            j = partners[i]
            if j >= 0 and labels[t, i] == labels[t, j]:
                same += 1
        out[t, 0] = C
        out[t, 1] = sq / 2.0
        out[t, 2] = same
        out[t, 3] = state_log_posterior(m, s)
