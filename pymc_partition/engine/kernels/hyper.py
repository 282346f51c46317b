"""Compiled updates of the parameters that hang off a partition, given the partition.

Given the labels, a prior parameter (DP ``alpha``, Pitman-Yor ``(alpha, d)``, the MFM's ``gamma``)
enters the model only through the number of clusters and their sizes, and a family hyperparameter
only through the clusters' summed statistics: their conditional log density costs ``O(C)``, not
``O(N)``. :func:`run_hyper_update` sums the statistics per cluster once (``O(N k)``), then

- draws each DP concentration with a Gamma prior by Escobar & West's (1995) auxiliary-variable
  Gibbs update (exact, no log density evaluation), and
- updates every other coordinate of ``theta`` (the parameters on PyMC's transformed scale, raveled)
  by univariate slice sampling with stepping out and shrinkage (Neal 2003, figs. 3 and 5), one
  coordinate after the other, on a log density ``f(theta, rest, S, sizes)`` given as a compiled
  first-class function (its addresses): the model's terms in ``theta`` (priors, hyperpriors,
  Jacobians) plus the partition's ``O(C)`` terms.

Both leave the conditional of ``theta`` given the partition (and ``rest``, the other variables)
invariant; during tuning the slice widths adapt (twice the mean absolute move, as PyMC's
``Slice``), after tuning they are fixed so the chain is exact.

The kernel takes three named bundles: :data:`HyperModel` (what one step's kernel holds fixed:
per-item statistics, the density's addresses, the layout of ``theta``), :data:`HyperState` (the
arrays the update writes: ``theta``, the widths and their tuning sums) and the generator state
(:mod:`.rng`, advanced in place).
"""

from __future__ import annotations

import math
from collections import namedtuple

import numba
import numpy as np

from ...predictive._types import F1, I1, _from_addresses, address_of, f8, init_from_addresses, pred_from_addresses
from .rng import beta, exponential, gamma, uniform
from .state import NJIT

__all__ = ["DENSITY_SIG", "density_from_addresses", "cluster_sums", "escobar_west",
           "slice_coordinate", "run_hyper_update", "EW_COLUMNS", "HyperModel", "HyperState",
           "singleton_log_marginals"]  # fmt: skip

#: what the kernel reads and never writes: per-item statistics ``X (n, k)``, the density's
#: addresses ``f_addr (2,)``, the slice-sampled coordinates ``slice_index``, the Escobar-West
#: table ``ew`` (:data:`EW_COLUMNS`) and the stepping-out limit ``max_steps``
HyperModel = namedtuple("HyperModel", "X f_addr slice_index ew max_steps")
#: what the kernel writes: ``theta`` (updated in place), ``rest`` (the other variables the density
#: reads), the slice ``widths`` and their tuning sums ``move_sums``/``move_counts``
HyperState = namedtuple("HyperState", "theta rest widths move_sums move_counts")

F2 = numba.types.Array(f8, 2, "C")
#: ``f(theta, rest, S, sizes) -> float``: the conditional log density of the parameters (up to a
#: constant) given the cluster statistics ``S (C, k)`` and sizes ``(C,)`` of the partition
DENSITY_SIG = f8(F1, F1, F2, I1)
density_from_addresses = _from_addresses(DENSITY_SIG)

#: columns of a row of the Escobar-West table: coordinate of theta, Gamma shape, Gamma rate,
#: 1 if theta holds log(alpha) (PyMC's log transform) else 0 (alpha itself)
EW_COLUMNS = ("index", "shape", "rate", "log_scale")


@numba.njit(**NJIT)
def cluster_sums(labels, X):
    """Return the summed statistics ``S (C, k)`` and sizes ``(C,)`` of the clusters of canonical labels."""
    n, k = X.shape
    C = 0
    for i in range(n):
        if labels[i] + 1 > C:
            C = labels[i] + 1
    S = np.zeros((C, k))
    sizes = np.zeros(C, np.int64)
    for i in range(n):
        c = labels[i]
        sizes[c] += 1
        for v in range(k):
            S[c, v] += X[i, v]
    return S, sizes


@numba.njit(**NJIT)
def escobar_west(rng, alpha, shape, rate, n_clusters, n_items):
    """Draw a DP concentration from its conditional given ``n_clusters`` clusters of ``n_items`` items.

    Prior Gamma(``shape``, ``rate``) (Escobar & West 1995, section 6): ``eta ~ Beta(alpha + 1, n)``, then ``alpha`` from
    the two-component Gamma mixture with weights ``(shape + k - 1) : n (rate - log eta)``. ``rng`` is a generator state
    (:mod:`.rng`).
    """
    eta = beta(rng, alpha + 1.0, float(n_items))
    r = rate - math.log(eta)
    odds = (shape + n_clusters - 1.0) / (n_items * r)
    a = shape + n_clusters if uniform(rng) * (1.0 + odds) < odds else shape + n_clusters - 1.0
    return gamma(rng, a, 1.0 / r)


@numba.njit(**NJIT, inline="always")
def _at(f, theta, j, x, rest, S, sizes):
    theta[j] = x
    lp = f(theta, rest, S, sizes)
    return lp if lp == lp else -np.inf  # NaN: outside the support


@numba.njit(**NJIT)
def slice_coordinate(rng, f, theta, j, lp0, w, max_steps, rest, S, sizes):
    """Make one slice-sampling update of ``theta[j]``.

    Stepping out at most ``max_steps`` widths ``w`` on each side, then shrinkage; ``lp0`` is ``f`` at the current
    ``theta``, ``rng`` a generator state (:mod:`.rng`). Returns the log density at the new value (left in ``theta[j]``)
    and the number of evaluations.
    """
    x0 = theta[j]
    log_y = lp0 - exponential(rng)
    left = x0 - w * uniform(rng)
    right = left + w
    n = 0
    steps_left = int(uniform(rng) * max_steps)
    steps_right = max_steps - 1 - steps_left
    while steps_left > 0:
        n += 1
        if _at(f, theta, j, left, rest, S, sizes) <= log_y:
            break
        left -= w
        steps_left -= 1
    while steps_right > 0:
        n += 1
        if _at(f, theta, j, right, rest, S, sizes) <= log_y:
            break
        right += w
        steps_right -= 1
    while True:
        x = left + uniform(rng) * (right - left)
        n += 1
        lp = _at(f, theta, j, x, rest, S, sizes)
        if lp > log_y:
            return lp, n
        if x < x0:
            left = x
        else:
            right = x
        if not right - left > 1e-12 * (1.0 + abs(x0)):  # shrunk onto x0 (rounding): stay there
            theta[j] = x0
            return lp0, n


@numba.njit(**NJIT)
def run_hyper_update(rng, labels, model, state, tune):
    """One update of ``state.theta`` (in place) given canonical ``labels``.

    Parameters
    ----------
    rng : uint64[4]
        Generator state (:mod:`.rng`), advanced in place.
    labels : int64 (n,)
        Canonical labels of the partition.
    model : HyperModel
        ``ew`` holds one row per DP concentration drawn by :func:`escobar_west`
        (:data:`EW_COLUMNS`), ``slice_index`` the coordinates updated by
        :func:`slice_coordinate`, in order.
    state : HyperState
        ``widths`` per coordinate of ``theta``. With ``tune``, each slice coordinate's absolute
        move is added to ``move_sums``/``move_counts`` and its width set to twice their mean.
    tune : bool

    Returns
    -------
    (float, int)
        The log density at the new ``theta`` (NaN when there is no slice coordinate) and the
        number of evaluations.
    """
    theta, rest, widths = state.theta, state.rest, state.widths
    ew, slice_index = model.ew, model.slice_index
    S, sizes = cluster_sums(labels, model.X)
    C = S.shape[0]
    n_items = labels.shape[0]
    for r in range(ew.shape[0]):
        j = int(ew[r, 0])
        log_scale = ew[r, 3] > 0.5
        alpha = math.exp(theta[j]) if log_scale else theta[j]
        alpha = escobar_west(rng, alpha, ew[r, 1], ew[r, 2], C, n_items)
        theta[j] = math.log(alpha) if log_scale else alpha
    if slice_index.shape[0] == 0:
        return np.nan, 0
    f = density_from_addresses(model.f_addr[0], model.f_addr[1])
    lp = f(theta, rest, S, sizes)
    n_evals = 1
    if not lp > -np.inf:
        return lp, n_evals  # the caller says where and why
    for a in range(slice_index.shape[0]):
        j = slice_index[a]
        x0 = theta[j]
        lp, n = slice_coordinate(rng, f, theta, j, lp, widths[j], model.max_steps, rest, S, sizes)
        n_evals += n
        if tune:
            state.move_sums[j] += abs(theta[j] - x0)
            state.move_counts[j] += 1
            if state.move_sums[j] > 0.0:
                widths[j] = 2.0 * state.move_sums[j] / state.move_counts[j]
    return lp, n_evals


@numba.njit(**NJIT)
def singleton_log_marginals(stats, ctx, form_addr, slot, out):
    """Write each item's log marginal alone into ``out``, by a predictive form at its current ``params``.

    For a form without its own pass (``singles``). ``stats`` holds the cluster statistics the form's context ``ctx``
    names (a partition kernel's), ``form_addr`` the form's addresses, ``slot`` a one-entry int64 array (set to 0: this
    call empties slot 0). An item's log marginal alone is the empty cluster's (``init``) plus the item's log
    predictive of joining it (``pred``). The slot's statistics and cache are overwritten: the caller rebuilds the
    cluster state from the labels before the next move. Arrays, not the kernel's bundles: unboxing those costs more
    than the work at a few items. Returns their sum.
    """
    pred = pred_from_addresses(form_addr[0], form_addr[1])
    init = init_from_addresses(form_addr[6], form_addr[7])
    e = slot[0] = 0  # not the last row: the forms' scratch
    for v in range(stats.shape[1]):
        stats[e, v] = 0.0
    empty = init(ctx, e)
    slot_addr, out_addr = address_of(slot), address_of(out)
    for i in range(out.shape[0]):
        pred(ctx, slot_addr, 1, i, out_addr + 8 * i)
    total = 0.0
    for i in range(out.shape[0]):
        out[i] += empty
        total += out[i]
    return total
