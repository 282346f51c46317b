"""The kernels' bundles, their allocation and the cluster state rebuilt from labels.

A kernel sees three bundles (named tuples of preallocated arrays, built by
:class:`~pymc_partition.engine.PartitionKernel`):

:class:`Model` (read only)
    ``X (n, k)`` per-item statistics; ``item_lm (n,)`` each item's singleton log marginal;
    ``log_g``, ``log_h`` the prior's tables (``log pi(z) = log_g[C] + sum_c log_h[n_c]``);
    ``form_addr`` the predictive form's four functions, as addresses; ``ctx`` the form's context (its constants
    and per-item terms, and the state's ``stats`` and ``cache``;
    :mod:`pymc_partition.predictive._types`).
:class:`State` (updated in place; ``n + 4 + PARTICLE_ROWS`` slot rows)
    ``z (n,)`` cluster slot of each item; ``counts``, ``stats (., k)``, ``clm`` and
    ``cache (., w)`` size, summed statistics, log marginal and form cache of each slot;
    ``active`` (first ``meta[0]`` entries) and ``pos`` the slots in use, ``free`` (first
    ``meta[1]`` entries) a stack of free slots (:mod:`.slots`). Rows ``n`` and ``n + 1`` hold
    the two components of a split-merge launch state, row ``n + 2`` is scratch, the
    :data:`PARTICLE_ROWS` rows after it hold the particles of :mod:`.particle` and :mod:`.recut`,
    and the last row is the predictive forms' own scratch (they write it in every ``pred`` call).
:class:`Work`
    ``cand``, ``logw`` (``n + 1``) candidate values, ``order`` the visiting order, ``members`` and
    ``side`` the items of a split-merge proposal, ``slot`` a one-slot list.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from ...predictive._types import (
    add_from_addresses,
    init_from_addresses,
    pred_from_addresses,
    remove_from_addresses,
)

__all__ = [
    "Model",
    "State",
    "Work",
    "NJIT",
    "allocate",
    "build_state",
    "state_log_posterior",
    "init_slot",
    "form_functions",
]

#: options of every kernel: no GIL, compiled once and cached on disk
NJIT = dict(nogil=True, cache=True)
#: spare slot rows after row ``n + 2`` for the particles of :mod:`.particle` (2 buffers x 32 particles x 2 sides)
PARTICLE_ROWS = 128

Model = namedtuple("Model", "X item_lm log_g log_h form_addr ctx")
State = namedtuple("State", "z counts stats clm cache active pos free meta")
Work = namedtuple("Work", "cand logw order members side slot")


def allocate(n_items, n_stats, cache_width):
    """Zeroed :class:`State` and :class:`Work` bundles for ``n_items`` items."""
    n, i64 = n_items, np.int64
    slots = n + 4 + PARTICLE_ROWS  # the last: the forms' scratch row, not a particle's
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


# Hot loops read the bundles' fields once, into locals, and pass arrays explicitly: reading a
# named-tuple field inside a loop costs a reference-count increment and decrement each time.
@numba.njit(**NJIT, inline="always")
def init_slot(m, c):
    """Rebuild slot ``c``'s form cache from its statistics; returns its log marginal."""
    return init_from_addresses(m.form_addr[6], m.form_addr[7])(m.ctx, c)


@numba.njit(**NJIT, inline="always")
def form_functions(m):
    """Return the form's ``pred``, ``remove`` and ``add`` as first-class functions."""
    a = m.form_addr
    return (
        pred_from_addresses(a[0], a[1]),
        remove_from_addresses(a[2], a[3]),
        add_from_addresses(a[4], a[5]),
    )


@numba.njit(**NJIT)
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
            s.clm[c] = init_slot(m, c)
        else:
            s.clm[c] = 0.0
    # free stack: smallest free slot on top
    for c in range(n - 1, -1, -1):
        if s.counts[c] == 0:
            s.free[s.meta[1]] = c
            s.meta[1] += 1


@numba.njit(**NJIT)
def state_log_posterior(m, s):
    """``log_g[C] + sum_c (log_h[n_c] + log marginal_c)`` over the active clusters, in slot order."""
    C = s.meta[0]
    tot = m.log_g[C]
    for a in range(C):
        c = s.active[a]
        tot += m.log_h[s.counts[c]] + s.clm[c]
    return tot
