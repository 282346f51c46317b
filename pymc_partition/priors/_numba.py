"""The tables of priors with random parameters, as numba routines for the samplers' per-draw reads.

A partition step with random prior parameters needs the prior's tables at new values at every
draw. Through the compiled PyTensor graph of :meth:`~.base.PartitionPrior.tables_graph` that is a
few dozen nodes, each one an array allocation on PyTensor 2's numba backend (a third of a 14-item
Gibbs sweep); here it is one loop. Each routine is the prior's ``_formula`` with the same
operations in the same order (the log rising factorial by :func:`~.._special.log_rising_scalar`),
normalized as :meth:`~.base.PartitionPrior.tables_graph` normalizes it (``log_g[0] = -inf``,
``log_h[0] = 0``), and checks the same conditions.

A routine takes ``params`` (float64, the prior's ``_param_names`` in order) and writes ``log_g``
and, if ``with_h``, ``log_h`` (float64, ``n_items + 1`` each: a caller whose ``log_h`` does not
depend on the random parameters writes it once); it returns 0, 1 when a condition on the
parameters fails (the tables are then left unwritten), or 2 when ``log_g`` has NaN entries.
"""

from __future__ import annotations

import math

import numba

from .._special import log_rising_scalar

__all__ = ["dirichlet_process_tables", "pitman_yor_tables", "CONDITIONS"]

#: the conditions each routine checks, as the prior's graph words them
CONDITIONS = {"dirichlet_process_tables": "alpha > 0", "pitman_yor_tables": "0 <= d, d < 1, alpha > -d"}


@numba.njit(cache=True, nogil=True)
def dirichlet_process_tables(params, log_g, log_h, with_h):
    """:class:`~.classic.DirichletProcess`'s tables at ``params = [alpha]``."""
    a = params[0]
    if not a > 0.0:
        return 1
    n = log_g.shape[0] - 1
    log_a = math.log(a)
    rising = log_rising_scalar(a, float(n))
    log_g[0] = -math.inf
    for c in range(1, n + 1):
        log_g[c] = float(c) * log_a - rising
    if with_h:
        log_h[0] = 0.0
        for k in range(1, n + 1):
            log_h[k] = math.lgamma(float(k))
    return _nan_status(log_g)


@numba.njit(cache=True, nogil=True)
def pitman_yor_tables(params, log_g, log_h, with_h):
    """:class:`~.classic.PitmanYor`'s tables at ``params = [alpha, d]``."""
    a, d = params[0], params[1]
    if not (d >= 0.0 and d < 1.0 and a + d > 0.0):
        return 1
    n = log_g.shape[0] - 1
    rising = log_rising_scalar(a + 1.0, float(n - 1))
    log_g[0] = -math.inf
    log_g[1] = 0.0 - rising
    total = 0.0
    for k in range(1, n):
        total += math.log(float(k) * d + a)
        log_g[k + 1] = total - rising
    if with_h:
        log_h[0] = 0.0
        for k in range(1, n + 1):
            log_h[k] = log_rising_scalar(1.0 - d, float(k - 1))
    return _nan_status(log_g)


@numba.njit(cache=True, nogil=True, inline="always")
def _nan_status(log_g):
    for c in range(log_g.shape[0]):
        if log_g[c] != log_g[c]:
            return 2
    return 0
