"""Bodies shared by the forms' compiled functions (inlined; each form passes its own pieces).

A form module defines ``_pred_one(params, stats, cache, c, aux, i)`` (the log predictive of item
``i`` for slot ``c``) and its cache updates, and wraps them with the signatures of
:mod:`._types` through these helpers. (A factory returning closures would not be cached on disk.)
"""

from __future__ import annotations

import numba

from ._types import float_view, int_view, unpack

__all__ = ["pred_slots", "add_then_pred", "replace_cached", "singles_from_empty"]


@numba.njit(nogil=True, cache=True, inline="always")
def pred_slots(pred_one, ctx, slots_addr, m, i, out_addr):
    """``out[a] = pred_one(..., slots[a], ..., i)`` for the ``m`` slots listed at ``slots_addr``."""
    params, stats, cache, aux = unpack(ctx)
    slots, out = int_view(slots_addr, m), float_view(out_addr, m)
    for a in range(m):
        out[a] = pred_one(params, stats, cache, slots[a], aux, i)


@numba.njit(nogil=True, cache=True, inline="always")
def add_then_pred(add, pred_one, ctx, c, i):
    """``remove`` of a form whose ``add`` just refreshes the cache from the statistics.

    The refresh, then the log predictive of item ``i`` for what is left.
    """
    add(ctx, c, i, 0.0)
    params, stats, cache, aux = unpack(ctx)
    return pred_one(params, stats, cache, c, aux, i)


@numba.njit(nogil=True, cache=True, inline="always")
def replace_cached(cache, c, new):
    """Store ``new`` and return the log predictive of the item that left, old minus new.

    For forms whose cache is the cluster's log marginal: ``new`` is the log marginal after an item left.
    """
    lp = cache[c, 0] - new
    cache[c, 0] = new
    return lp


@numba.njit(nogil=True, cache=True, inline="always")
def singles_from_empty(init, pred_one, ctx, c, out):
    """``out[i]``: item ``i``'s log marginal alone, for every item.

    The empty cluster's log marginal (``init`` of slot ``c``, its statistics zeroed) plus the item's log predictive of
    joining it: one pass of the form's arithmetic over the items. Slot ``c``'s statistics and cache are overwritten.
    Returns their sum (finite when they all are: the caller's check, without another pass from Python).
    """
    params, stats, cache, aux = unpack(ctx)
    for v in range(stats.shape[1]):
        stats[c, v] = 0.0
    empty = init(ctx, c)
    total = 0.0
    for i in range(out.shape[0]):
        out[i] = empty + pred_one(params, stats, cache, c, aux, i)
        total += out[i]
    return total
