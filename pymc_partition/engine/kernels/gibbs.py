"""The collapsed Gibbs sweep: every item, in a random order, drawn from its full conditional.

An item's candidate clusters cost one call of the form's ``pred`` (:mod:`pymc_partition.
predictive`) for all of them: for the specialised forms a few arithmetic operations and a
logarithm per variable and candidate, for the graph form one call of the family's compiled
pytensor graph per candidate.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ...predictive._types import address_of
from .rng import shuffle, uniform
from .slots import activate, deactivate, move_to_end, put, take
from .state import NJIT, form_functions, init_slot

__all__ = ["BLOCK", "visiting_order", "sample_log_weights", "gibbs_sweep"]

#: items per block of the Gibbs sweep's visiting order (see :func:`visiting_order`)
BLOCK = 64


@numba.njit(**NJIT)
def sample_log_weights(rng, logw, m):
    """Draw an index with probability proportional to ``exp(logw[:m])`` (overwrites ``logw``).

    ``rng`` is the generator state (:mod:`.rng`).
    """
    mx = -np.inf
    for a in range(m):
        if logw[a] > mx:
            mx = logw[a]
    tot = 0.0
    for a in range(m):
        w = math.exp(logw[a] - mx)
        logw[a] = w
        tot += w
    u = uniform(rng) * tot
    acc = 0.0
    last = 0
    for a in range(m):
        if logw[a] > 0.0:
            last = a
            acc += logw[a]
            if u < acc:
                return a
    return last


@numba.njit(**NJIT)
def visiting_order(rng, n, block, order):
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
        shuffle(rng, order, n)
        return
    n_blocks = (n + block - 1) // block
    blocks = np.arange(n_blocks)
    shuffle(rng, blocks, n_blocks)
    t = 0
    for b in blocks:
        for i in range(b * block, min(n, (b + 1) * block)):
            order[t] = i
            t += 1


@numba.njit(**NJIT)
def gibbs_sweep(rng, m, s, w, block, beta=1.0):
    """One collapsed Gibbs sweep over all items in a random order (:func:`visiting_order`).

    Item ``i``'s full conditional over every existing cluster ``c`` (sizes without ``i``) and a
    new one: ``log_h[n_c+1] - log_h[n_c] + beta pred(c, i)`` and
    ``log_g[C+1] - log_g[C] + log_h[1] + beta lm(x_i)``: the posterior with its likelihood to
    the power ``beta`` (1: the posterior; a tempered copy of replica exchange, :mod:`.tempering`,
    below 1). ``rng`` is the generator state (:mod:`.rng`, advanced in place).
    """
    X, item_lm, log_g, log_h, ctx = m.X, m.item_lm, m.log_g, m.log_h, m.ctx
    z, counts, stats, clm = s.z, s.counts, s.stats, s.clm
    active, pos, free, meta = s.active, s.pos, s.free, s.meta
    cand, logw, order = w.cand, w.logw, w.order
    pred, remove, add = form_functions(m)
    active_addr, cand_addr = address_of(active), address_of(cand)
    n, d = X.shape
    visiting_order(rng, n, block, order)
    for t in range(n):
        i = order[t]
        k = z[i]
        own = 0.0
        if counts[k] == 1:
            counts[k] = 0
            deactivate(k, active, pos, free, meta)
            for v in range(d):
                stats[k, v] = 0.0
            clm[k] = 0.0
            C = meta[0]
            pred(ctx, active_addr, C, i, cand_addr)
        else:
            own = take(remove, ctx, X, stats, counts, clm, k, i)
            move_to_end(k, active, pos, meta)  # the others first: one call of pred for them all
            C = meta[0]
            pred(ctx, active_addr, C - 1, i, cand_addr)
            cand[C - 1] = own
        for a in range(C):
            c = active[a]
            logw[a] = log_h[counts[c] + 1] - log_h[counts[c]] + beta * cand[a]
        if C > 0:
            logw[C] = log_g[C + 1] - log_g[C] + log_h[1] + beta * item_lm[i]
        else:
            logw[C] = 0.0
        a = sample_log_weights(rng, logw, C + 1)
        if a == C:
            c = activate(active, pos, free, meta)
            for v in range(d):
                stats[c, v] = X[i, v]
            counts[c] = 1
            init_slot(m, c)
            clm[c] = item_lm[i]
        else:
            c = active[a]
            put(add, ctx, X, stats, counts, clm, c, i, cand[a])
        z[i] = c
