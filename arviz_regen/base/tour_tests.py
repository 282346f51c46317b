"""Tests of the top states' relative frequencies calibrated by the chains' own tours (numpy cores).

Per chain, the test is Hotelling's T² of the visits per tour against their known means with a
bootstrap-t reference (:mod:`arviz_regen.base.tour_t2`). Pearson's X² of the pooled visit counts with
a renewal-bootstrap reference, used here per chain before, rejected 9-17% of correct chains at
α = 0.05 when the top states are reached only through a few long excursions; it is kept for the
pooled fit below, where the tours of all chains are pooled and calibration held.

All chains (:func:`all_chains_test`). All chains regenerate at the same state, so under
convergence all their tours come from one distribution. Three statistics:

- *pooled*: Hotelling's T² of the visits per tour to the top states against their known means,
  over the whole tours of all chains plus, per chain, the draws outside whole tours (the
  unfinished last tour joined to the draws before the first visit to δ: one more tour-like
  unit), with the bootstrap-t reference of :mod:`arviz_regen.base.tour_t2`. Every draw is counted,
  so under a stationary start Σ (visits_i − q_i · visits_δ) has mean exactly zero whatever the
  chain length; whole tours alone do not: a tour must end inside the window to be whole, and
  long tours (an excursion to a region the chain reaches rarely) are cut off more often than
  short ones. That length bias, and a renewal bootstrap that could only resample the few long
  tours seen, made the previous pooled statistic (Pearson's X² of the whole-tour counts against
  a renewal bootstrap) reject 16-35 % of correct chains that switch rarely between two basins
  (4-40 crossings per 10,000 draws) at α = 0.05; studentized by the units' own spread and
  counting every draw, it stays at or below the level there (``benchmarks/bench_verdict_calibration.py``);
- *agreement*: Pearson's homogeneity X² across chains of how each chain's whole-tour draws split
  into the K top states and the other states, referred to random reassignments of the pooled
  tours to the chains (each keeping its number of tours): a permutation test, exact under
  exchangeability whatever the tails of the tour distribution;
- *recurrence*: homogeneity across chains of the number of tours per draw, i.e. of the mass on
  the regeneration state (a chain trapped away from it has few or no tours), referred to
  pseudo-chains of each chain's length drawn from the pooled whole tours with a stationary start.

``p_value_all`` is Simes' combination of the three. (A renewal-bootstrap agreement statistic
that also counted the draws outside whole tours was tried first: it rejected 15% of four
correct slow chains at α = 0.05, because the pooled tours under-represent the rare long
excursions that set how much of a chain lies outside whole tours; the permutation test does not
depend on them.)

Rare switching. The agreement and recurrence references need the tour-length distribution to
be represented by the tours seen. When the longest :data:`N_LONGEST` whole tours hold more than
:data:`RARE_SWITCH_SHARE` of all whole-tour draws *and* some tour (whole, or a chain's draws
outside whole tours) spans more than :data:`LONG_TOUR_FRACTION` of a chain, the chains move
between regions of the state space so rarely that a chain's share of the regeneration state is
set by a handful of excursions; both references then reject correct chains far too often (10-40 % at α = 0.05 with
about 5 crossings per chain), so those two tests are not run (NaN, ``rare_switching`` set) and
``p_value_all`` is the pooled test alone. Chains trapped in one region are then left to the
chain-agreement test and R-hat beside the verdict.

Replicates are drawn in batches until the answer is clear (:func:`sequential_p_values`).
"""

from __future__ import annotations

import numpy as np

from .tour_bootstrap import permuted_sums, renewal_sums, tour_types

__all__ = ["all_chains_test", "sequential_p_values", "simes", "stitched_units", "rare_switching"]


#: Exceedances after which sampling replicates stops (Besag & Clifford 1991); see
#: :func:`sequential_p_values`.
STOP_AFTER = 20
#: Replicates drawn between two checks of the stopping rule.
BATCH = 50
#: The longest tours that decide "rare switching" (module notes).
N_LONGEST = 5
#: Share of the whole-tour draws held by the :data:`N_LONGEST` longest whole tours above which
#: (with :data:`LONG_TOUR_FRACTION`) the agreement and recurrence tests are not run (module
#: notes): at most 0.10 in 95 % of runs of four sticky Metropolis chains of 5,000 draws (tours of
#: tens of draws), at least 0.13 in 95 % of runs with two basins crossed about 5 times per chain
#: in 10,000 draws.
RARE_SWITCH_SHARE = 0.10
#: Fraction of a chain's draws that the longest tour must span, besides the share above: the
#: longest whole tour is above 0.2 of the chain in 88 % of those two-basin runs, in 7 % of runs of
#: three sticky Metropolis chains of 3,000 draws and in none of the four chains of 5,000.
LONG_TOUR_FRACTION = 0.2


def sequential_p_values(observed, draw, n_rep, *, stop_after=STOP_AFTER, batch=BATCH):
    """Monte Carlo p-values that stop sampling once the answer is clearly not small.

    Besag & Clifford (1991): replicates are drawn until ``stop_after`` of them reach the observed
    statistic (then p = stop_after / replicates used) or ``n_rep`` are drawn (then
    p = (1 + exceedances) / (1 + n_rep), the usual Monte Carlo p-value). Both are valid p-values;
    a chain that has converged typically stops after a few dozen replicates instead of n_rep,
    and small p-values keep their full resolution.

    Parameters
    ----------
    observed : numpy.ndarray, shape (m,)
        Observed statistics (NaN: no test, p-value NaN).
    draw : callable
        ``draw(i, size)`` -> replicates (m, size) of batch ``i``; non-finite replicates count as
        exceeding.
    n_rep : int
        Most replicates drawn.

    Returns
    -------
    p_value : numpy.ndarray, shape (m,)
    n_used : int
        Replicates drawn.
    """
    observed = np.asarray(observed, dtype=float)
    m = observed.size
    exceed = np.zeros(m, dtype=np.int64)
    stopped_at = np.zeros(m, dtype=np.int64)  # replicate count at which row reached stop_after
    used = 0
    i = 0
    live = ~np.isnan(observed)
    while used < n_rep and live.any():
        size = min(batch, n_rep - used)
        rep = np.asarray(draw(i, size), dtype=float).reshape(m, size)
        with np.errstate(invalid="ignore"):
            hit = ~np.isfinite(rep) | (rep >= observed[:, None])
        run = exceed[:, None] + np.cumsum(hit, axis=1)
        for j in np.flatnonzero(live):
            reached = np.flatnonzero(run[j] >= stop_after)
            if reached.size:
                stopped_at[j] = used + reached[0] + 1
                live[j] = False
        exceed = run[:, -1]
        used += size
        i += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(stopped_at > 0, stop_after / np.maximum(stopped_at, 1), (1.0 + exceed) / (1.0 + n_rep))
    return np.where(np.isnan(observed), np.nan, p), used


def _batch_seed(seed, i):
    return int(np.random.SeedSequence([int(seed), i]).generate_state(1, dtype=np.uint32)[0])


def _homogeneity(cat, exposure):
    """Pearson homogeneity X² across chains: ``cat`` (..., C, J) counts with row totals ``exposure`` (..., C)."""
    total = exposure.sum(axis=-1)[..., None, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        pbar = cat.sum(axis=-2, keepdims=True) / total
        expected = exposure[..., None] * pbar
        terms = np.where(expected > 0, (cat - expected) ** 2 / expected, 0.0)
    return terms.sum(axis=(-2, -1))


def _categories(top, whole, K):
    """Split of each chain's whole-tour draws: the K top states, and all other states."""
    head = top[..., :K]
    return np.concatenate([head, (whole - head.sum(axis=-1))[..., None]], axis=-1)


def _recurrence(n_tours, n_draw):
    """Homogeneity X² of the tour counts per draw across chains (the mass of the regeneration state)."""
    rbar = n_tours.sum(axis=-1, keepdims=True) / n_draw.sum()
    expected = n_draw * rbar
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(expected > 0, (n_tours - expected) ** 2 / (expected * (1 - rbar)), 0.0).sum(axis=-1)


def simes(p_values):
    """Simes' combination of p-values along the first axis (valid under positive dependence).

    NaN entries (tests not run) are left out; NaN where none was run.
    """
    p = np.asarray(p_values, dtype=float)
    m = np.sum(~np.isnan(p), axis=0)
    srt = np.sort(p, axis=0)  # NaN last
    rank = np.arange(1, p.shape[0] + 1).reshape((p.shape[0],) + (1,) * (p.ndim - 1))
    with np.errstate(invalid="ignore"):
        combined = np.min(np.where(rank <= m, srt * m / rank, np.inf), axis=0)
    return np.where(m > 0, combined, np.nan)


def stitched_units(counts, partial):
    """Whole tours of all chains plus one unit per chain for its draws outside whole tours.

    Parameters
    ----------
    counts : list of numpy.ndarray
        Per chain: visits to the ranked top states per whole tour (R_c, Kmax).
    partial : numpy.ndarray, shape (C, Kmax)
        Per chain: visits to the top states outside whole tours (before the first visit to δ
        and from its last visit on). A chain that visited δ has exactly one such visit there.

    Returns
    -------
    numpy.ndarray, shape (Σ R_c + units, Kmax)
        Rows with exactly one visit to δ each. The outside draws of a chain that never visited
        δ join another chain's unit (they have no visit of their own); with no visit to δ at
        all there are no rows.
    """
    partial = np.asarray(partial, dtype=float)
    kmax = partial.shape[1]
    rows = [np.asarray(c, dtype=float).reshape(-1, kmax) for c in counts]
    with_delta = np.flatnonzero(partial[:, 0] >= 1)
    if with_delta.size == 0:
        return np.zeros((0, kmax))
    extra = partial[with_delta].copy()
    extra[0] += partial[partial[:, 0] < 1].sum(axis=0)
    return np.concatenate(rows + [extra], axis=0)


def rare_switching(lengths, n_draw):
    """Return the share of draws in the longest whole tours and whether the chains switch rarely.

    The share is that of the whole-tour draws in the :data:`N_LONGEST` longest whole tours; the chains switch rarely
    when that share is above :data:`RARE_SWITCH_SHARE` and a tour, or a chain's draws outside whole tours, is longer
    than :data:`LONG_TOUR_FRACTION` of the chain (module notes).

    Parameters
    ----------
    lengths : list of numpy.ndarray
        Whole-tour lengths per chain.
    n_draw : array_like of int, shape (C,)
        Draws of each chain.
    """
    n_draw = np.asarray(n_draw, dtype=float).reshape(-1)
    per_chain = [np.asarray(n, dtype=float).reshape(-1) for n in lengths]
    L = np.concatenate(per_chain)
    if L.size == 0 or L.sum() == 0:
        return 0.0, False
    share = float(np.sort(L)[-N_LONGEST:].sum() / L.sum())
    longest = max(max(float(n.max()) if n.size else 0.0, d - n.sum()) / d for n, d in zip(per_chain, n_draw))
    return share, bool(share > RARE_SWITCH_SHARE and longest > LONG_TOUR_FRACTION)


def all_chains_test(counts, lengths, n_draw, q, ks, *, partial=None, n_rep=999, seed=0):
    """One verdict for all chains: pooled fit, agreement between chains, equal recurrence.

    Parameters
    ----------
    counts, lengths : list of numpy.ndarray
        Per chain: visits to the ranked top states per whole tour (R_c, Kmax) and the tour
        lengths (R_c,); a chain may have no tours.
    n_draw : array_like of int, shape (C,)
        Draws of each chain.
    q : numpy.ndarray, shape (Kmax,)
        Relative probabilities exp(logp_i − logp_1) of the ranked states.
    ks : array_like of int
        Numbers of states K (2 ≤ K ≤ Kmax).
    partial : numpy.ndarray, shape (C, Kmax), optional
        Per chain: visits to the top states outside whole tours, counted by the pooled test
        (:func:`stitched_units`). Without it the pooled test uses whole tours only.
    n_rep : int
        Most replicates (sequential stopping, :func:`sequential_p_values`).
    seed : int

    Returns
    -------
    dict
        Arrays of shape (len(ks),): ``p_value_all`` (Simes' combination of those of the three
        below that were run; the pooled p-value with one chain or rare switching),
        ``p_value_pooled``, ``p_value_agreement``, ``p_value_recurrence`` (NaN with one chain or
        rare switching), ``t2_pooled``, ``x2_agreement``; floats ``longest_share`` and
        ``rare_switching`` (1.0 when agreement and recurrence were not run for it).
    """
    from .tour_t2 import tour_t2_test  # tour_t2 imports this module

    ks = np.asarray(ks, dtype=np.int64)
    n_draw = np.asarray(n_draw, dtype=float)
    C = n_draw.size
    kmax = q.size
    counts = [np.asarray(c, dtype=float).reshape(-1, kmax) for c in counts]
    lengths = [np.asarray(n, dtype=np.int64) for n in lengths]
    names = ("p_value_all", "p_value_pooled", "p_value_agreement", "p_value_recurrence", "t2_pooled", "x2_agreement")
    out = {name: np.full(ks.size, np.nan) for name in names}
    share, rare = rare_switching(lengths, n_draw)
    out["longest_share"], out["rare_switching"] = share, float(rare)
    all_counts = np.concatenate(counts, axis=0)
    all_lengths = np.concatenate(lengths)
    total = float(all_lengths.sum())
    if total == 0:
        return out
    seeds = np.random.SeedSequence(int(seed)).generate_state(3, dtype=np.uint32)
    units = all_counts if partial is None else stitched_units(counts, partial)
    t2, p_pooled, _ = tour_t2_test(units, q, ks, n_rep=n_rep, seed=int(seeds[2]))
    out["t2_pooled"], out["p_value_pooled"] = t2, p_pooled
    if C < 2 or rare:
        out["p_value_all"] = out["p_value_pooled"].copy()
        return out
    types = tour_types(all_counts, all_lengths)
    top = np.stack([c.sum(axis=0) for c in counts])  # (C, Kmax)
    whole = np.array([n.sum() for n in lengths], dtype=float)
    n_tours = np.array([n.size for n in lengths], dtype=np.int64)
    out["x2_agreement"] = np.array([_homogeneity(_categories(top, whole, K), whole) for K in ks])
    x2r = _recurrence(n_tours.astype(float), n_draw)
    observed = np.concatenate([out["x2_agreement"], [x2r]])

    def draw(i, size):
        # recurrence: pseudo-chains of each chain's length from the pooled tours, stationary start
        rep_top, _ = renewal_sums(types, n_draw.astype(np.int64), size, _batch_seed(seeds[0], i), residual_start=True)
        rep_r = _recurrence(rep_top[..., 0], n_draw)[None, :]
        # agreement on the top states: tours reassigned to chains at random (exact under exchangeability)
        perm_top, perm_whole = permuted_sums(types, n_tours, size, _batch_seed(seeds[1], i))
        rep_a = np.stack([_homogeneity(_categories(perm_top, perm_whole, K), perm_whole) for K in ks])
        return np.concatenate([rep_a, rep_r], axis=0)

    p, _ = sequential_p_values(observed, draw, n_rep)
    nK = ks.size
    out["p_value_agreement"] = p[:nK]
    out["p_value_recurrence"] = np.full(nK, p[-1])
    parts = np.stack([out["p_value_pooled"], out["p_value_agreement"], out["p_value_recurrence"]])
    out["p_value_all"] = simes(parts)
    return out
