"""Tests of the top states' relative frequencies calibrated by the chains' own tours (numpy cores).

Per chain (:func:`chain_test`). The statistic is Pearson's X² of the visit counts of the K top
states against their relative probabilities q (E_i ∝ q_i, scaled to the observed total of the K
states), counted over whole tours. Its reference distribution is the renewal bootstrap of the
chain's tours (:mod:`arviz_regen.tour_bootstrap`), which carries the autocorrelation and the
few-excursion regime that the χ² limit misses. X² uses fixed weights 1/q_i rather than the
estimated Σ̂⁻¹ of Hotelling's T²: with a rare top state Σ̂ rests on a few tours, and a bootstrap
of a statistic studentized by it is itself unstable (replicates without the state make Σ̂*
singular); with fixed weights the bootstrap only has to reproduce the spread of the counts.

All chains (:func:`all_chains_test`). All chains regenerate at the same state, so under
convergence all their tours come from one distribution. Two statistics, one set of replicates:

- *pooled*: X² of the counts pooled over chains (the per-chain test on all tours at once);
- *agreement*: Pearson's homogeneity X² across chains of how each chain's draws split into
  {each top state, other states within whole tours, draws outside whole tours}. A chain that
  never reaches the regeneration state has all its draws outside whole tours, a chain trapped
  in one mode over-visits that mode's top states: both disagree with the others.

Replicates: pseudo-chains of each chain's length drawn from the pooled tours with a stationary
start, so that agreement holds by construction. The two p-values are combined by the minimum
p-value, calibrated on the same replicates (a nonparametric combination: the combined p-value
is exact for the bootstrap distribution, whatever the dependence between the two statistics).
"""

from __future__ import annotations

import numpy as np

from .tour_bootstrap import pearson_statistic, permuted_sums, renewal_sums, tour_types

__all__ = ["chain_test", "all_chains_test", "bootstrap_p_value", "simes"]


def bootstrap_p_value(observed, replicates):
    """(1 + #{replicates ≥ observed}) / (1 + B) along the last axis; NaN where ``observed`` is NaN.

    Non-finite replicates (a pseudo-chain without a whole tour) count as exceeding.
    """
    observed = np.asarray(observed, dtype=float)
    rep = np.where(np.isfinite(replicates), replicates, np.inf)
    B = rep.shape[-1]
    with np.errstate(invalid="ignore"):
        exceed = (rep >= observed[..., None]).sum(axis=-1)
    return np.where(np.isnan(observed), np.nan, (1.0 + exceed) / (1.0 + B))


def _level_scale(x, q, ks, total):
    """Scale turning Σ (x − c q)²/q into Σ (O − E)²/E: total / c_K with c_K = Σ_{≤K} x / Σ_{≤K} q."""
    cx = np.cumsum(x, axis=-1)
    cq = np.cumsum(q)
    idx = np.asarray(ks) - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(total, dtype=float)[..., None] / (cx[..., idx] / cq[idx])


def chain_test(counts, lengths, q, ks, *, n_rep=999, seed=0):
    """Pearson X² of one chain's top-state visits, with its renewal-bootstrap p-value.

    Parameters
    ----------
    counts : numpy.ndarray, shape (R, Kmax)
        Visits to the ranked top states (rank 0 the regeneration state) per whole tour.
    lengths : numpy.ndarray, shape (R,)
        Tour lengths.
    q : numpy.ndarray, shape (Kmax,)
        Relative probabilities exp(logp_i − logp_1).
    ks : array_like of int
        Numbers of states K (2 ≤ K ≤ Kmax).
    n_rep : int
        Bootstrap replicates.
    seed : int

    Returns
    -------
    x2, p_value : numpy.ndarray, shape (len(ks),)
        NaN without whole tours.
    """
    ks = np.asarray(ks, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if lengths.size == 0 or total == 0:
        nan = np.full(ks.size, np.nan)
        return nan, nan.copy()
    counts = np.asarray(counts, dtype=float)
    x = counts.sum(axis=0) / total
    scale = _level_scale(x, q, ks, total)
    x2 = pearson_statistic(x, q, 1.0)[ks] * scale
    oc, ol = renewal_sums(tour_types(counts, lengths), [total], n_rep, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        dev = oc[:, 0, :] / ol[:, 0, None] - x
    rep = pearson_statistic(dev, q, 1.0)[ks] * scale[:, None]
    return x2, bootstrap_p_value(x2, rep)


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
        Per chain, as for :func:`chain_test` (a chain may have no tours).
    n_draw : array_like of int, shape (C,)
        Draws of each chain.
    q, ks, n_rep, seed
        As for :func:`chain_test`.

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

    # pooled goodness of fit: pseudo-chains of each chain's length from the pooled tours
    rep_top, rep_whole = renewal_sums(types, n_draw.astype(np.int64), n_rep, seeds[0], residual_start=True)
    x = top.sum(axis=0) / total
    scale = _level_scale(x, q, ks, total)
    x2p = pearson_statistic(x, q, 1.0)[ks] * scale
    with np.errstate(invalid="ignore", divide="ignore"):
        dev = rep_top.sum(axis=1) / rep_whole.sum(axis=1)[:, None] - x
    out["x2_pooled"] = x2p
    out["p_value_pooled"] = bootstrap_p_value(x2p, pearson_statistic(dev, q, 1.0)[ks] * scale[:, None])
    if C < 2:
        out["p_value_all"] = out["p_value_pooled"].copy()
        return out
    # agreement on the top states: tours reassigned to chains at random (exact under exchangeability)
    perm_top, perm_whole = permuted_sums(types, n_tours, n_rep, seeds[1])
    x2a = np.array([_homogeneity(_categories(top, whole, K), whole) for K in ks])
    rep_a = np.stack([_homogeneity(_categories(perm_top, perm_whole, K), perm_whole) for K in ks])
    out["x2_agreement"] = x2a
    out["p_value_agreement"] = bootstrap_p_value(x2a, rep_a)
    # the same recurrence of the regeneration state in every chain (a trapped chain rarely returns)
    x2r = _recurrence(n_tours.astype(float), n_draw)
    rep_r = _recurrence(rep_top[..., 0], n_draw)
    out["p_value_recurrence"] = np.full(ks.size, float(bootstrap_p_value(x2r, rep_r)))
    out["p_value_all"] = simes([out["p_value_pooled"], out["p_value_agreement"], out["p_value_recurrence"]])
    return out
