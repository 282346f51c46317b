"""Tests of the top states' relative frequencies calibrated by the chains' own tours (numpy cores).

Per chain, the test is Hotelling's T² of the visits per tour against their known means with a
bootstrap-t reference (:mod:`arviz_regen.base.tour_t2`). Pearson's X² of the pooled visit counts with
a renewal-bootstrap reference, used here per chain before, rejected 9-17% of correct chains at
α = 0.05 when the top states are reached only through a few long excursions; it is kept for the
pooled fit below, where the tours of all chains are pooled and calibration held.

All chains (:func:`all_chains_test`). All chains regenerate at the same state, so under
convergence all their tours come from one distribution. Three statistics:

- *pooled*: X² of the counts pooled over chains (the per-chain test on all tours at once),
  referred to pseudo-chains of each chain's length drawn from the pooled tours with a
  stationary start;
- *agreement*: Pearson's homogeneity X² across chains of how each chain's whole-tour draws split
  into the K top states and the other states, referred to random reassignments of the pooled
  tours to the chains (each keeping its number of tours): a permutation test, exact under
  exchangeability whatever the tails of the tour distribution;
- *recurrence*: homogeneity across chains of the number of tours per draw, i.e. of the mass on
  the regeneration state (a chain trapped away from it has few or no tours), referred to the
  same pseudo-chains as the pooled fit.

``p_value_all`` is Simes' combination of the three. (A renewal-bootstrap agreement statistic
that also counted the draws outside whole tours was tried first: it rejected 15% of four
correct slow chains at α = 0.05, because the pooled tours under-represent the rare long
excursions that set how much of a chain lies outside whole tours; the permutation test does not
depend on them.)

Replicates are drawn in batches until the answer is clear (:func:`sequential_p_values`).
"""

from __future__ import annotations

import numpy as np

from .tour_bootstrap import pearson_statistic, permuted_sums, renewal_sums, tour_types

__all__ = ["all_chains_test", "sequential_p_values", "simes"]


#: Exceedances after which sampling replicates stops (Besag & Clifford 1991); see
#: :func:`sequential_p_values`.
STOP_AFTER = 20
#: Replicates drawn between two checks of the stopping rule.
BATCH = 50


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


def _level_scale(x, q, ks, total):
    """Scale turning Σ (x − c q)²/q into Σ (O − E)²/E: total / c_K with c_K = Σ_{≤K} x / Σ_{≤K} q."""
    cx = np.cumsum(x, axis=-1)
    cq = np.cumsum(q)
    idx = np.asarray(ks) - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(total, dtype=float)[..., None] / (cx[..., idx] / cq[idx])


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
    """Simes' combination of p-values along the first axis (valid under positive dependence)."""
    p = np.sort(np.asarray(p_values, dtype=float), axis=0)
    m = p.shape[0]
    return np.min(p * m / np.arange(1, m + 1).reshape((m,) + (1,) * (p.ndim - 1)), axis=0)


def all_chains_test(counts, lengths, n_draw, q, ks, *, n_rep=999, seed=0):
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
    n_rep : int
        Most replicates (sequential stopping, :func:`sequential_p_values`).
    seed : int

    Returns
    -------
    dict of numpy.ndarray, shape (len(ks),)
        ``p_value_all`` (Simes' combination of the three below; the pooled p-value with one
        chain), ``p_value_pooled``, ``p_value_agreement``, ``p_value_recurrence`` (NaN with one
        chain), ``x2_pooled``, ``x2_agreement``.
    """
    ks = np.asarray(ks, dtype=np.int64)
    n_draw = np.asarray(n_draw, dtype=float)
    C = n_draw.size
    kmax = q.size
    counts = [np.asarray(c, dtype=float).reshape(-1, kmax) for c in counts]
    lengths = [np.asarray(n, dtype=np.int64) for n in lengths]
    names = ("p_value_all", "p_value_pooled", "p_value_agreement", "p_value_recurrence", "x2_pooled", "x2_agreement")
    out = {name: np.full(ks.size, np.nan) for name in names}
    all_counts = np.concatenate(counts, axis=0)
    all_lengths = np.concatenate(lengths)
    total = float(all_lengths.sum())
    if total == 0:
        return out
    types = tour_types(all_counts, all_lengths)
    top = np.stack([c.sum(axis=0) for c in counts])  # (C, Kmax)
    whole = np.array([n.sum() for n in lengths], dtype=float)
    n_tours = np.array([n.size for n in lengths], dtype=np.int64)
    seeds = np.random.SeedSequence(int(seed)).generate_state(2, dtype=np.uint32)

    x = top.sum(axis=0) / total
    scale = _level_scale(x, q, ks, total)
    out["x2_pooled"] = pearson_statistic(x, q, 1.0)[ks] * scale

    def pooled(i, size):
        """Pseudo-chains of each chain's length from the pooled tours, stationary start."""
        rep_top, rep_whole = renewal_sums(
            types, n_draw.astype(np.int64), size, _batch_seed(seeds[0], i), residual_start=True
        )
        with np.errstate(invalid="ignore", divide="ignore"):
            dev = rep_top.sum(axis=1) / rep_whole.sum(axis=1)[:, None] - x
        return pearson_statistic(dev, q, 1.0)[ks] * scale[:, None], rep_top

    if C < 2:
        out["p_value_pooled"] = sequential_p_values(out["x2_pooled"], lambda i, size: pooled(i, size)[0], n_rep)[0]
        out["p_value_all"] = out["p_value_pooled"].copy()
        return out
    out["x2_agreement"] = np.array([_homogeneity(_categories(top, whole, K), whole) for K in ks])
    x2r = _recurrence(n_tours.astype(float), n_draw)
    observed = np.concatenate([out["x2_pooled"], out["x2_agreement"], [x2r]])

    def draw(i, size):
        rep_p, rep_top = pooled(i, size)
        rep_r = _recurrence(rep_top[..., 0], n_draw)[None, :]
        # agreement on the top states: tours reassigned to chains at random (exact under exchangeability)
        perm_top, perm_whole = permuted_sums(types, n_tours, size, _batch_seed(seeds[1], i))
        rep_a = np.stack([_homogeneity(_categories(perm_top, perm_whole, K), perm_whole) for K in ks])
        return np.concatenate([rep_p, rep_a, rep_r], axis=0)

    p, _ = sequential_p_values(observed, draw, n_rep)
    nK = ks.size
    out["p_value_pooled"] = p[:nK]
    out["p_value_agreement"] = p[nK : 2 * nK]
    out["p_value_recurrence"] = np.full(nK, p[-1])
    out["p_value_all"] = simes([out["p_value_pooled"], out["p_value_agreement"], out["p_value_recurrence"]])
    return out
