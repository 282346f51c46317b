"""Particle Gibbs re-cut of several neighbouring clusters at once (:func:`.particle.particle_resplit` for more).

A re-cut of ``M`` clusters draws ``M`` anchor items in distinct clusters: ``a_0`` uniformly,
then each next anchor among the items outside the clusters already chosen, with probability
proportional to a weight ``v_k`` of how much ``a_0`` predicts item ``k`` (:func:`.particle.near_weights`:
``exp(log p(x_k | x_{a_0}) - log p(x_k))`` relative to the largest, floored at ``e^-30``), so
mostly clusters near ``a_0``'s. ``U``, the union of the anchors' clusters, is then re-cut into
``M`` clusters, each holding its anchor, by particle Gibbs (Andrieu, Doucet & Holenstein 2010):
a conditional particle filter over the other items of ``U`` (in a uniformly random order), in
which particle 0 follows the current cut and the others allocate each item to one of their ``M``
clusters by its sequential-allocation probability (fully adapted: resampled by each step's
normaliser), and a particle drawn by its final weight becomes the new cut.

The target of the filter is the posterior restricted to the cuts of ``U`` into ``M`` clusters
that separate the anchors (the other clusters fixed), times the probability of having drawn the
same anchors from that cut,
``P(a | z) = (1/n) prod_{r >= 1} v_{a_r} / (V - sum_{k in c(a_0), ..., c(a_{r-1})} v_k)``
(``V = sum_{k != a_0} v_k``). The cut's own prior and likelihood terms are the filter's product
of sequential weights (the number of clusters is the same for every cut); the anchors'
probability enters the final weights. So the move is a Gibbs update of the cut given the
anchors on the space extended by the anchors (``pi(z) P(a | z)``): the anchors drawn from
``P(a | z)``, then the cut updated by a kernel invariant for its conditional (particle Gibbs is,
for every number of particles). It never changes the number of clusters, and leaves the
posterior invariant; it is reversible (the conditional filter with a particle drawn by final
weight is).

The particles live in the spare rows ``n + 3 ...`` of the :class:`~.state.State`: two buffers of
``K`` particles x ``M`` clusters, ``2 K M <= PARTICLE_ROWS``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...predictive._types import address_of
from .gibbs import sample_log_weights
from .particle import _changed, _cumulate, _draw, _trace_back, near_weights
from .rng import randint, shuffle, uniform
from .sams import _start
from .slots import copy_slot, put
from .state import NJIT, PARTICLE_ROWS, form_functions, init_slot

__all__ = ["MAX_RECUT_CLUSTERS", "recut_filter", "recut_move", "recut_log_anchor_terms"]

#: most clusters a re-cut may take (with at least 2 particles)
MAX_RECUT_CLUSTERS = PARTICLE_ROWS // 4


@numba.njit(**NJIT, inline="always")
def _which(c, chosen, r):
    """Index of cluster ``c`` among ``chosen[:r]``, or -1."""
    for q in range(r):
        if c == chosen[q]:
            return q
    return -1


@numba.njit(**NJIT)
def _anchors(rng, s, a0, n_clusters, pair_w, anchors, chosen):
    """Draw the anchors after ``a0`` (module docstring); returns False if fewer than ``n_clusters`` clusters.

    ``chosen[:n_clusters]`` receives the anchors' clusters.
    """
    z = s.z
    n = z.shape[0]
    anchors[0] = a0
    chosen[0] = z[a0]
    for r in range(1, n_clusters):
        tot = 0.0
        for k in range(n):
            if _which(z[k], chosen, r) < 0:
                tot += pair_w[k]
        if tot <= 0.0:
            return False
        u = uniform(rng) * tot
        pick = -1
        for k in range(n):
            if _which(z[k], chosen, r) < 0:
                pick = k
                u -= pair_w[k]
                if u < 0.0:
                    break
        anchors[r] = pick
        chosen[r] = z[pick]
    return True


@numba.njit(**NJIT)
def recut_log_anchor_terms(side_w, pair_total, n_clusters):
    """``-sum_{r >= 1} log(V - sum_{q < r} side_w[q])``: the part of ``log P(a | z)`` that depends on the cut.

    ``side_w[q]`` is ``v`` summed over anchor ``q``'s cluster (its anchor included; ``v`` of ``a_0`` is 0).
    """
    acc = 0.0
    out = 0.0
    for r in range(1, n_clusters):
        acc += side_w[r - 1]
        out -= math.log(pair_total - acc)
    return out


@numba.njit(**NJIT)
def _joined_log_ratio(m, s, slots, p, M, fut, fut_n):
    """``log gamma_T - log gamma_t`` of particle ``p``'s clusters joined with the reference's future items.

    ``fut[r]``, ``fut_n[r]``: the statistics and number of the items still to come on side ``r``
    in the reference; each joined cluster is scored in the scratch slot ``n + 2``.
    """
    log_h = m.log_h
    n, d = m.X.shape
    tmp = n + 2
    out = 0.0
    for r in range(M):
        if fut_n[r] == 0:
            continue
        c = slots[p * M + r]
        for v in range(d):
            s.stats[tmp, v] = s.stats[c, v] + fut[r, v]
        s.counts[tmp] = s.counts[c] + fut_n[r]
        out += log_h[s.counts[tmp]] + init_slot(m, tmp) - log_h[s.counts[c]] - s.clm[c]
    return out


@numba.njit(**NJIT)
def recut_filter(rng, m, s, w, anchors, n_clusters, n_members, n_particles, force, pair_w, pair_total, sides_out,
                 ancestor_sampling=True):  # fmt: skip
    """Conditional particle filter of a re-cut; returns the drawn particle's index and writes its sides.

    ``w.members[:n_members]`` are the items to allocate, in order; anchor ``r`` starts cluster
    ``r`` of every particle; particle 0 takes the sides ``force`` (the current cut) and, with
    ``ancestor_sampling``, draws an ancestor before each item (:func:`_reference_ancestor`),
    else keeps its own path. The final weights include :func:`recut_log_anchor_terms` of each particle's cut
    (``pair_w`` the anchor weights, ``pair_total`` their sum). The drawn particle's sides (0 ..
    ``n_clusters - 1``) go to ``sides_out``; its clusters' rows are ``n + 3 + ((b K + k) M + r)``
    for the returned buffer ``b``, index ``k`` and ``r < M``.
    """
    X, log_h, ctx = m.X, m.log_h, m.ctx
    counts, stats, clm = s.counts, s.stats, s.clm
    members = w.members
    pred, _, add = form_functions(m)
    n = X.shape[0]
    K, M = n_particles, n_clusters
    base = n + 3
    slots = np.empty(K * M, np.int64)
    out = np.empty(K * M)
    lw = np.empty(M)
    logw = np.zeros(K)
    side_w = np.zeros((K, M))
    side_w_next = np.empty((K, M))
    cum = np.empty(K)
    sides = np.empty((max(n_members, 1), K), np.int64)
    ancestors = np.empty((max(n_members, 1), K), np.int64)
    buf = 0
    for p in range(K):
        for r in range(M):
            slots[p * M + r] = base + p * M + r
            _start(m, s, slots[p * M + r], anchors[r])
            side_w[p, r] = pair_w[anchors[r]] if r > 0 else 0.0
    slots_addr, out_addr = address_of(slots), address_of(out)
    # the reference's future: statistics, sizes and anchor weights of each side's items from t on
    d = X.shape[1]
    fut = np.zeros((n_members + 1, M, d))
    fut_n = np.zeros((n_members + 1, M), np.int64)
    fut_w = np.zeros((n_members + 1, M))
    for t in range(n_members - 1, -1, -1):
        fut[t] = fut[t + 1]
        fut_n[t] = fut_n[t + 1]
        fut_w[t] = fut_w[t + 1]
        for v in range(d):
            fut[t, force[t], v] += X[members[t], v]
        fut_n[t, force[t]] += 1
        fut_w[t, force[t]] += pair_w[members[t]]
    la = np.empty(K)
    tmp_w = np.empty(M)
    for t in range(n_members):
        k = members[t]
        if t > 0:
            _cumulate(logw, cum, K)
            a0 = 0
            if ancestor_sampling:
                for p in range(K):
                    la[p] = logw[p] + _joined_log_ratio(m, s, slots, p, M, fut[t], fut_n[t])
                    for r in range(M):
                        tmp_w[r] = side_w[p, r] + fut_w[t, r]
                    la[p] += recut_log_anchor_terms(tmp_w, pair_total, M)
                a0 = sample_log_weights(rng, la, K)  # overwrites la
            nb = 1 - buf
            for p in range(K):
                a = a0 if p == 0 else _draw(rng, cum, K)
                ancestors[t, p] = a
                for r in range(M):
                    copy_slot(s, base + (buf * K + a) * M + r, base + (nb * K + p) * M + r)
                    side_w_next[p, r] = side_w[a, r]
            buf = nb
            for p in range(K):
                for r in range(M):
                    side_w[p, r] = side_w_next[p, r]
                    slots[p * M + r] = base + (buf * K + p) * M + r
        else:
            for p in range(K):
                ancestors[t, p] = p
        pred(ctx, slots_addr, K * M, k, out_addr)
        for p in range(K):
            mx = -np.inf
            for r in range(M):
                c = slots[p * M + r]
                lw[r] = log_h[counts[c] + 1] - log_h[counts[c]] + out[p * M + r]
                if lw[r] > mx:
                    mx = lw[r]
            tot = 0.0
            for r in range(M):
                tot += math.exp(lw[r] - mx)
            logw[p] = mx + math.log(tot)
            if p == 0:
                sd = force[t]
            else:
                u = uniform(rng) * tot
                sd = M - 1
                for r in range(M):
                    u -= math.exp(lw[r] - mx)
                    if u < 0.0:
                        sd = r
                        break
            side_w[p, sd] += pair_w[k]
            sides[t, p] = sd
            put(add, ctx, X, stats, counts, clm, slots[p * M + sd], k, out[p * M + sd])
    # final weights: the last step's (none if no member), times the anchors' probability in each cut
    for p in range(K):
        if n_members == 0:
            logw[p] = 0.0
        logw[p] += recut_log_anchor_terms(side_w[p], pair_total, M)
    _cumulate(logw, cum, K)
    kk = _draw(rng, cum, K)
    _trace_back(sides, ancestors, kk, n_members, sides_out)
    return buf, kk


@numba.njit(**NJIT)
def recut_move(rng, m, s, w, n_clusters, n_particles, ancestor_sampling=True):
    """One particle Gibbs re-cut of ``n_clusters`` clusters (module docstring); returns ``(kind, changed)``.

    ``kind`` is 3 (a re-cut, as :func:`.particle.particle_resplit`'s) or 0 when there are fewer
    than ``n_clusters`` clusters; ``changed`` says whether the cut changed.
    """
    M, K = n_clusters, n_particles
    if M < 2 or M > MAX_RECUT_CLUSTERS or K < 1 or 2 * K * M > PARTICLE_ROWS:
        raise ValueError("a re-cut needs 2 <= n_clusters and 2 n_particles n_clusters <= PARTICLE_ROWS")
    n = m.X.shape[0]
    if s.meta[0] < M:
        return 0, False
    a0 = randint(rng, n)
    pair_w = np.empty(n)
    pair_total = near_weights(m, s, w, a0, pair_w)
    anchors = np.empty(M, np.int64)
    chosen = np.empty(M, np.int64)
    if not _anchors(rng, s, a0, M, pair_w, anchors, chosen):
        return 0, False
    # the other items of the anchors' clusters, their current sides, a uniformly random order
    members, force = w.members, w.order
    n_members = 0
    for k in range(n):
        r = _which(s.z[k], chosen, M)
        if r >= 0 and k != anchors[r]:
            members[n_members] = k
            n_members += 1
    shuffle(rng, members, n_members)
    for q in range(n_members):
        force[q] = _which(s.z[members[q]], chosen, M)
    buf, kk = recut_filter(
        rng, m, s, w, anchors, M, n_members, K, force[:n_members], pair_w, pair_total, w.side, ancestor_sampling
    )
    if not _changed(w.side, force, n_members):
        return 3, False
    base = n + 3
    for r in range(M):
        copy_slot(s, base + (buf * K + kk) * M + r, chosen[r])
    for q in range(n_members):
        s.z[members[q]] = chosen[w.side[q]]
    return 3, True
