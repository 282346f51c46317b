"""The predictive form of any family: its compiled pytensor graph, called per candidate.

Every candidate costs one call of the compiled graph (about a microsecond for small graphs: the
generated code allocates its intermediate arrays). Used for families without a specialised form,
for forms that decline the data, and when the samplers are built with ``specialize=False``.
The cache of a cluster is its log marginal ``lm(S)``; the per-item terms are the statistics.
"""

from __future__ import annotations

import numba
import numpy as np

from ._shared import replace_cached
from ._types import float_view, int_view, lm_of, unpack
from .form import PredictiveForm

__all__ = ["graph_form"]

_NJIT = dict(nogil=True, cache=True)


@numba.njit(**_NJIT)
def _pred(ctx, slots_addr, m, i, out_addr):
    params, stats, cache, aux = unpack(ctx)
    slots, out = int_view(slots_addr, m), float_view(out_addr, m)
    lm = lm_of(ctx)
    r = stats.shape[0] - 1  # scratch row
    for a in range(m):
        c = slots[a]
        for v in range(stats.shape[1]):
            stats[r, v] = stats[c, v] + aux[i, v]
        out[a] = lm(stats[r]) - cache[c, 0]


@numba.njit(**_NJIT)
def _remove(ctx, c, i):
    params, stats, cache, aux = unpack(ctx)
    return replace_cached(cache, c, lm_of(ctx)(stats[c]))


@numba.njit(**_NJIT)
def _add(ctx, c, i, lp):
    params, stats, cache, aux = unpack(ctx)
    cache[c, 0] += lp


@numba.njit(**_NJIT)
def _init(ctx, c):
    params, stats, cache, aux = unpack(ctx)
    cache[c, 0] = lm_of(ctx)(stats[c])
    return cache[c, 0]


def graph_form(item_stats):
    """Return the form that evaluates the compiled graph per candidate (``aux`` = the statistics)."""
    return PredictiveForm("graph", np.zeros(1), item_stats, 1, _pred, _remove, _add, _init)
