"""Slot bookkeeping: the active list and free stack of cluster slots, and items moving between slots.

The items' statistics, form cache and log marginal are kept up to date.

A slot is a row of the :class:`~.state.State` arrays. ``active[:meta[0]]`` lists the slots in
use (``pos[c]`` is slot ``c``'s index there), ``free[:meta[1]]`` is a stack of empty slots.
"""

from __future__ import annotations

import numba

from .state import NJIT

__all__ = ["activate", "deactivate", "move_to_end", "take", "put", "copy_slot"]


@numba.njit(**NJIT)
def deactivate(k, active, pos, free, meta):
    """Take slot ``k`` off the active list and push it on the free stack."""
    a = pos[k]
    last = active[meta[0] - 1]
    active[a] = last
    pos[last] = a
    meta[0] -= 1
    free[meta[1]] = k
    meta[1] += 1


@numba.njit(**NJIT)
def move_to_end(k, active, pos, meta):
    """Swap active slot ``k`` to the end of the active list."""
    a = pos[k]
    last = active[meta[0] - 1]
    active[a] = last
    pos[last] = a
    active[meta[0] - 1] = k
    pos[k] = meta[0] - 1


@numba.njit(**NJIT)
def activate(active, pos, free, meta):
    """Pop a slot off the free stack onto the end of the active list; returns it."""
    meta[1] -= 1
    c = free[meta[1]]
    active[meta[0]] = c
    pos[c] = meta[0]
    meta[0] += 1
    return c


@numba.njit(**NJIT, inline="always")
def take(remove, ctx, X, stats, counts, clm, c, i):
    """Take item ``i`` out of slot ``c`` (which keeps at least one item).

    Returns the log predictive of ``i`` joining what is left.
    """
    for v in range(X.shape[1]):
        stats[c, v] -= X[i, v]
    counts[c] -= 1
    lp = remove(ctx, c, i)
    clm[c] -= lp
    return lp


@numba.njit(**NJIT, inline="always")
def put(add, ctx, X, stats, counts, clm, c, i, lp):
    """Put item ``i`` into the non-empty slot ``c``; ``lp`` is its log predictive there."""
    for v in range(X.shape[1]):
        stats[c, v] += X[i, v]
    counts[c] += 1
    clm[c] += lp
    add(ctx, c, i, lp)


@numba.njit(**NJIT)
def copy_slot(s, src, dst):
    """Copy slot ``src``'s statistics, form cache, size and log marginal to slot ``dst``."""
    for v in range(s.stats.shape[1]):
        s.stats[dst, v] = s.stats[src, v]
    for v in range(s.cache.shape[1]):
        s.cache[dst, v] = s.cache[src, v]
    s.counts[dst] = s.counts[src]
    s.clm[dst] = s.clm[src]
