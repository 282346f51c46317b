"""Particle Gibbs split-merge (Bouchard-Côté, Doucet & Roth 2017): SAMS with ``K`` particles.

The sequentially allocated merge-split move (:mod:`.sams`) proposes a split by one pass of
sequential allocation; its acceptance ratio is ``pi(split) / (pi(merged) q(split))``, an
importance estimate, from one draw, of the posterior mass of all the splits of the union
``U = S + {i, j}`` against the merged cluster. When many items are ambiguous that estimate is
noisy (``q`` is tiny for every split) and good splits are rejected; the reverse merge likewise.
Here ``K`` particles allocate ``S`` together (the same order), each item joining a side of each
particle with its sequential-allocation probability, and the particles are resampled before each
item by the weight of their last step (the normaliser of that item's two side weights: a fully
adapted filter). The product over items of the mean weights, ``Z^``, is an unbiased estimate of
the splits' total mass relative to the two anchors alone (``K = 1``: SAMS's ``1 / q`` factor).

- *split* (``i, j`` in one cluster): the filter runs, a particle is drawn by its final weight,
  and the split it holds is accepted with probability ``min(1, Z^ c / pi(merged))``;
- *merge*: a conditional filter runs in which particle 0 follows the current split (never
  resampled away, its sides forced), the others as above; the merge is accepted with
  probability ``min(1, pi(merged) / (Z^ c))``.

``c`` collects the factors common to every split (the prior's ``log_g`` step and the anchors'
singleton terms). This is a Metropolis-Hastings move on the space extended by the particles:
the merged state holds a filter's particles and the drawn index, the split state holds the
conditional filter's (Andrieu, Doucet & Holenstein 2010), and the two are exchanged by an
involution, so the ratio above is exact for every ``K``, pair and order. The pair and the
order are drawn as for SAMS (uniform or balanced pairs, random or informed order); with
balanced pairs the probability of drawing the pair in each particle's split enters its final
weight.

Screening (delayed acceptance, Christen & Fox 2005): the ratio is split as ``r = r1 r2`` with
``r1 = exp(phi(log pi(proposed) - log pi(current)))`` and ``phi(d) = sign(d) max(0, |d| - SCREEN)``
odd, so ``r1`` of a move and of its reverse are inverse; accepting with ``min(1, r1) min(1, r2)``
keeps detailed balance. ``r1`` of a merge is known before any filter runs: a merge whose
posterior ratio is far below ``e^-SCREEN`` is rejected for the price of one log marginal, as
SAMS rejects hopeless merges.

The particles live in the spare rows ``n + 3 ...`` of the :class:`~.state.State` (two buffers of
``K`` particles x 2 sides, :data:`PARTICLE_ROWS` rows): resampling copies a particle's two
slots to the other buffer.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...predictive._types import address_of
from .rng import randint, shuffle, uniform
from .sams import _start, draw_proposal, informed_order, pair_log_ratio
from .slots import activate, copy_slot, put
from .split_merge import apply_merge, current_sides, merge_log_ratio, proposal_members
from .state import NJIT, PARTICLE_ROWS, form_functions

__all__ = ["MAX_PARTICLES", "PARTICLE_ROWS", "SCREEN", "particle_filter", "particle_move", "particle_resplit"]

#: most particles a move may use (the spare rows hold two buffers of them, two sides each)
MAX_PARTICLES = PARTICLE_ROWS // 4
#: width (nats) of the screen's free band: posterior ratios within e^+-SCREEN are not screened
SCREEN = 20.0


@numba.njit(**NJIT, inline="always")
def _log_mean_exp(v, k):
    mx = -np.inf
    for a in range(k):
        if v[a] > mx:
            mx = v[a]
    if mx == -np.inf:
        return mx
    tot = 0.0
    for a in range(k):
        tot += math.exp(v[a] - mx)
    return mx + math.log(tot / k)


@numba.njit(**NJIT, inline="always")
def _draw(rng, cum, k):
    """Draw an index with probability proportional to the increments of the cumulative ``cum[:k]``."""
    u = uniform(rng) * cum[k - 1]
    for a in range(k):
        if u < cum[a]:
            return a
    return k - 1


@numba.njit(**NJIT, inline="always")
def _cumulate(logw, cum, k):
    """Cumulative sums of ``exp(logw[:k] - max)`` into ``cum`` (the resampling weights)."""
    mx = logw.max()
    acc = 0.0
    for a in range(k):
        acc += math.exp(logw[a] - mx)
        cum[a] = acc


@numba.njit(**NJIT, inline="always")
def _trace_back(sides, ancestors, kk, n_members, sides_out):
    """Write particle ``kk``'s sides, traced back through its ancestors, to ``sides_out``."""
    p = kk
    for t in range(n_members - 1, -1, -1):
        sides_out[t] = sides[t, p]
        p = ancestors[t, p]


@numba.njit(**NJIT, inline="always")
def _changed(sides, force, n_members):
    """Whether the drawn ``sides`` differ from the current ``force`` for any of the members."""
    for q in range(n_members):
        if sides[q] != force[q]:
            return True
    return False


@numba.njit(**NJIT, inline="always")
def _screen(d):
    """Return the screen's log ratio ``phi(d)``, odd in ``d``."""
    if d > SCREEN:
        return d - SCREEN
    if d < -SCREEN:
        return d + SCREEN
    return 0.0


@numba.njit(**NJIT)
def particle_filter(rng, m, s, w, i, j, n_members, n_particles, force, n_total, split_probability, sides_out,
                    select=False, pair_w=np.empty(0), pair_total=0.0):  # fmt: skip
    """Allocate ``w.members[:n_members]`` with ``n_particles`` particles anchored at ``i`` and ``j``.

    Returns ``(log_z, k, g_k, r0, r1)``: the log of the estimate ``Z^`` (with the pair's
    probability ratio in the final weights, ``log P(pair | split) - log P(pair | merged)``), the
    index of the particle drawn by its final weight (0 if conditional, unless ``select``), that particle's
    ``log gamma_T - log gamma_0`` (the sum of its chosen sides' log weights) and the two slot
    rows holding its clusters (``i``'s, ``j``'s). The drawn particle's sides go to ``sides_out``
    (0 = with ``i``). With ``force`` not empty the filter is conditional: particle 0 takes the
    sides ``force`` and keeps its own path. ``n_total`` is the number of items. With ``pair_w``
    not empty, ``j`` was drawn with probability ``pair_w[j] / (pair_total - sum of pair_w over
    the other items on i's side)`` (:func:`near_partner`), which the final weights use instead.
    """
    X, log_h, ctx = m.X, m.log_h, m.ctx
    counts, stats, clm = s.counts, s.stats, s.clm
    members = w.members
    pred, _, add = form_functions(m)
    n = X.shape[0]
    K = n_particles
    base = n + 3
    conditional = force.shape[0] > 0
    slots = np.empty(2 * K, np.int64)
    out = np.empty(2 * K)
    logw = np.zeros(K)  # last step's incremental log weights
    g = np.zeros(K)  # cumulative log weight of each particle's own path
    near = pair_w.shape[0] > 0
    w0 = np.zeros(K)  # near pairs: pair_w summed over each particle's members with i
    w0_next = np.empty(K)
    g_next = np.empty(K)
    cum = np.empty(K)
    anc = np.empty(K, np.int64)
    sides = np.empty((max(n_members, 1), K), np.int64)
    ancestors = np.empty((max(n_members, 1), K), np.int64)
    buf = 0
    for p in range(K):
        slots[2 * p] = base + 2 * p
        slots[2 * p + 1] = base + 2 * p + 1
        _start(m, s, slots[2 * p], i)
        _start(m, s, slots[2 * p + 1], j)
    slots_addr, out_addr = address_of(slots), address_of(out)
    log_z = 0.0
    for t in range(n_members):
        k = members[t]
        if t > 0:
            # resample by the last step's weights; particle 0 of a conditional filter keeps its path
            log_z += _log_mean_exp(logw, K)
            _cumulate(logw, cum, K)
            nb = 1 - buf
            for p in range(K):
                a = 0 if (conditional and p == 0) else _draw(rng, cum, K)
                anc[p] = a
                ancestors[t, p] = a
                copy_slot(s, base + 2 * K * buf + 2 * a, base + 2 * K * nb + 2 * p)
                copy_slot(s, base + 2 * K * buf + 2 * a + 1, base + 2 * K * nb + 2 * p + 1)
                g_next[p] = g[anc[p]]
                w0_next[p] = w0[anc[p]]
            buf = nb
            for p in range(K):
                g[p] = g_next[p]
                w0[p] = w0_next[p]
                slots[2 * p] = base + 2 * K * buf + 2 * p
                slots[2 * p + 1] = base + 2 * K * buf + 2 * p + 1
        else:
            for p in range(K):
                ancestors[t, p] = p
        pred(ctx, slots_addr, 2 * K, k, out_addr)
        for p in range(K):
            r0 = slots[2 * p]
            r1 = slots[2 * p + 1]
            lw0 = log_h[counts[r0] + 1] - log_h[counts[r0]] + out[2 * p]
            lw1 = log_h[counts[r1] + 1] - log_h[counts[r1]] + out[2 * p + 1]
            mx = max(lw0, lw1)
            lse = mx + math.log(math.exp(lw0 - mx) + math.exp(lw1 - mx))
            logw[p] = lse
            if conditional and p == 0:
                sd = force[t]
            else:
                sd = 0 if uniform(rng) < math.exp(lw0 - lse) else 1
            g[p] += lw0 if sd == 0 else lw1
            if near and sd == 0:
                w0[p] += pair_w[k]
            sides[t, p] = sd
            put(add, ctx, X, stats, counts, clm, slots[2 * p + sd], k, out[2 * p + sd])
    # final weights: the last step's, times the pair's probability ratio in each particle's split
    n_union = n_members + 2
    for p in range(K):
        if near:
            logw[p] -= math.log(pair_total - w0[p])
        else:
            logw[p] -= pair_log_ratio(n_total, n_union, counts[slots[2 * p]], split_probability)
    log_z += _log_mean_exp(logw, K)
    if conditional and not select:
        kk = 0
    else:
        _cumulate(logw, cum, K)
        kk = _draw(rng, cum, K)
    _trace_back(sides, ancestors, kk, n_members, sides_out)
    return log_z, kk, g[kk], slots[2 * kk], slots[2 * kk + 1]


@numba.njit(**NJIT)
def particle_move(rng, m, s, w, n_particles, split_probability, informed, resplit_probability=0.0):
    """One particle Gibbs split-merge proposal; returns ``(kind, accepted)`` (1 split, 2 merge, 3 re-split, 0 none).

    The pair and the order as :func:`.sams.sams_move` (``split_probability``, ``informed``);
    ``n_particles`` particles (module docstring). ``rng`` is the generator state (:mod:`.rng`).
    With probability ``resplit_probability`` the proposal is a re-split instead: ``i`` uniformly,
    ``j`` among the items outside its cluster, the better the more ``i`` predicts it
    (:func:`near_weights`), and the two clusters re-split by
    :func:`particle_resplit` (``accepted``: the split changed). Either kind is reversible by
    itself (a split's reverse merge is always of the first kind), so their mixture is.
    """
    if n_particles < 1 or n_particles > MAX_PARTICLES:
        raise ValueError("n_particles must lie in [1, MAX_PARTICLES]")
    n = m.X.shape[0]
    if resplit_probability > 0.0 and n >= 2 and uniform(rng) < resplit_probability:
        i = randint(rng, n)
        if s.counts[s.z[i]] == n:
            return 0, False
        pair_w = np.empty(n)
        pair_total = near_weights(m, s, w, i, pair_w)
        j = near_partner(rng, s, i, pair_w)
        ci, cj = s.z[i], s.z[j]
        n_members = proposal_members(s.z, i, j, w.members)
        if not informed:
            shuffle(rng, w.members, n_members)
        return 3, particle_resplit(rng, m, s, w, i, j, ci, cj, n_members, n_particles, informed, pair_w, pair_total)
    i, j, ci, cj, n_members = draw_proposal(rng, s, w, n, split_probability, informed)
    if j < 0:
        return 0, False
    log_g, log_h, item_lm = m.log_g, m.log_h, m.item_lm
    anchors = 2.0 * log_h[1] + item_lm[i] + item_lm[j]
    if ci == cj:
        if informed:
            informed_order(m, s, w, i, j, n_members)
        C = s.meta[0]
        # log pi(split) - log pi(merged) = common + (log gamma_T - log gamma_0) for every split
        common = log_g[C + 1] - log_g[C] + anchors - log_h[s.counts[ci]] - s.clm[ci]
        # every argument passed (here and below): an omitted default compiles a second signature
        no_sides = w.side[:0]
        log_z, _, g_k, r0, r1 = particle_filter(
            rng, m, s, w, i, j, n_members, n_particles, no_sides, n, split_probability, w.side, False, np.empty(0), 0.0
        )
        log_r = log_z + common
        log_r1 = _screen(common + g_k)
        if not (math.log(uniform(rng)) < min(0.0, log_r1) and math.log(uniform(rng)) < log_r - log_r1):
            return 1, False
        cnew = activate(s.active, s.pos, s.free, s.meta)
        copy_slot(s, r0, ci)
        copy_slot(s, r1, cnew)
        s.z[j] = cnew
        for q in range(n_members):
            if w.side[q] == 1:
                s.z[w.members[q]] = cnew
        return 1, True
    # merge: the screen first (known before any filter), then the conditional filter
    delta = merge_log_ratio(m, s, ci, cj)
    log_r1 = _screen(delta)
    if not math.log(uniform(rng)) < min(0.0, log_r1):
        return 2, False
    if informed:
        informed_order(m, s, w, i, j, n_members)
    force = current_sides(s, w, ci, n_members)
    log_z, _, g_ref, _, _ = particle_filter(
        rng, m, s, w, i, j, n_members, n_particles, force, n, split_probability, w.side, False, np.empty(0), 0.0
    )
    log_r = delta + g_ref - log_z
    accept = math.log(uniform(rng)) < log_r - log_r1
    if accept:
        apply_merge(m, s, w, ci, cj, j, n_members)
    return 2, accept


@numba.njit(**NJIT)
def particle_resplit(rng, m, s, w, i, j, ci, cj, n_members, n_particles, informed, pair_w, pair_total):
    """Particle Gibbs update of how clusters ``ci`` (holding ``i``) and ``cj`` (holding ``j``) share their items.

    The conditional filter runs from the current split, then a particle drawn by its final weight
    is the new split (Andrieu, Doucet & Holenstein 2010's particle Gibbs): it leaves invariant the
    posterior restricted to the splits of the two clusters' union that separate ``i`` and ``j``,
    times the probability of drawing the pair (:func:`near_partner`, in the final weights), so
    with the pair drawn from the state the move is reversible for the posterior. Returns whether
    the split changed.
    """
    if informed:
        informed_order(m, s, w, i, j, n_members)
    force = current_sides(s, w, ci, n_members)
    _, _, _, r0, r1 = particle_filter(
        rng, m, s, w, i, j, n_members, n_particles, force, m.X.shape[0], 0.5, w.side, True, pair_w, pair_total
    )
    if not _changed(w.side, force, n_members):
        return False
    copy_slot(s, r0, ci)
    copy_slot(s, r1, cj)
    for q in range(n_members):
        s.z[w.members[q]] = ci if w.side[q] == 0 else cj
    return True


@numba.njit(**NJIT)
def near_weights(m, s, w, i, out):
    """Write the pair weights of ``i``'s partners to ``out``; returns their sum over ``k != i``.

    ``out[k] = exp(lift_k - max lift)``, floored at ``exp(-30)`` so that every item keeps a
    chance; ``lift_k = log p(x_k | x_i) - log p(x_k)`` says how much ``i`` predicts ``k``. A function of
    the data and ``i`` alone (slot ``n`` holds ``i``), so the same in a state and its re-split.
    """
    n = m.X.shape[0]
    pred = form_functions(m)[0]
    _start(m, s, n, i)
    one = np.empty(1, np.int64)
    one[0] = n
    val = np.empty(1)
    one_addr, val_addr = address_of(one), address_of(val)
    mx = -np.inf
    for k in range(n):
        if k == i:
            out[k] = -np.inf
            continue
        pred(m.ctx, one_addr, 1, k, val_addr)
        out[k] = val[0] - m.item_lm[k]
        if out[k] > mx:
            mx = out[k]
    total = 0.0
    for k in range(n):
        if k == i:
            out[k] = 0.0
            continue
        out[k] = math.exp(max(out[k] - mx, -30.0))
        total += out[k]
    return total


@numba.njit(**NJIT)
def near_partner(rng, s, i, pair_w):
    """Draw ``j`` outside ``i``'s cluster with probability proportional to ``pair_w[j]``."""
    ci = s.z[i]
    tot = 0.0
    for k in range(pair_w.shape[0]):
        if s.z[k] != ci:
            tot += pair_w[k]
    u = uniform(rng) * tot
    last = -1
    for k in range(pair_w.shape[0]):
        if s.z[k] != ci:
            last = k
            u -= pair_w[k]
            if u < 0.0:
                return k
    return last
