"""Regeneration tours and regenerative-sampling (RS) estimates: pure numpy, numpy in, numpy out.

A chain regenerates at every visit to a fixed state δ. With visits τ_0 < τ_1 < … < τ_R, tour r
covers draws τ_{r−1} … τ_r − 1 (length N_r) and has sum s_r of a function g. Draws before τ_0 and
from τ_R on are not used: whole tours are iid, which is what the RS central limit theorem needs.

RS mean and variance (Hobert et al. 2002; the paper's eq. regvar):

    ḡ = Σ_r s_r / Σ_r N_r,      Σ̂ = Σ_r (s_r − N_r ḡ)(s_r − N_r ḡ)ᵀ / (R N̄²),

and √R (ḡ − μ) → N(0, Σ), so the standard error of ḡ is √(Σ̂_jj / R) = √Σ_r (s_rj − N_r ḡ_j)² / Σ_r N_r.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "regeneration_times",
    "tour_sums",
    "rs_mean_cov",
    "rs_mean_se",
    "cumulative_rs_mean_se",
    "completed_tours",
    "prefix_sums",
    "rs_from_sums",
    "tour_visit_counts",
]


def regeneration_times(is_regen):
    """Draw indices τ_0 < … < τ_R of the visits to the regeneration state.

    Parameters
    ----------
    is_regen : array_like of bool, shape (n_draw,)

    Returns
    -------
    numpy.ndarray of int64, shape (R + 1,)
    """
    is_regen = np.asarray(is_regen)
    if is_regen.ndim != 1:
        raise ValueError(f"`is_regen` must be one-dimensional, got shape {is_regen.shape}.")
    return np.flatnonzero(is_regen).astype(np.int64)


def tour_sums(values, tau):
    """Return the sums of per-draw values over whole tours and the tour lengths.

    Parameters
    ----------
    values : array_like, shape (n_draw, ...)
        Function values g(X_t), one row per draw.
    tau : array_like of int, shape (R + 1,)
        Regeneration times from :func:`regeneration_times`.

    Returns
    -------
    s : numpy.ndarray, shape (R, ...)
    n : numpy.ndarray of int64, shape (R,)
    """
    values = np.asarray(values)
    tau = np.asarray(tau, dtype=np.int64)
    n_tours = max(tau.size - 1, 0)
    if n_tours == 0:
        return np.zeros((0,) + values.shape[1:], dtype=np.result_type(values, float)), np.zeros(0, np.int64)
    seg = values[tau[0] : tau[-1]]
    # reduceat sums each tour in one vectorized call: no Python loop over draws or tours
    s = np.add.reduceat(seg, tau[:-1] - tau[0], axis=0).astype(np.result_type(values, float))
    return s, np.diff(tau)


def _check_tours(s, n):
    s = np.asarray(s, dtype=float)
    n = np.asarray(n, dtype=float)
    if n.ndim != 1 or s.shape[:1] != n.shape:
        raise ValueError(f"`s` {s.shape} and `n` {n.shape} must have the same number of tours.")
    return s, n


def rs_mean_cov(s, n):
    """RS mean ḡ and covariance Σ̂ (eq. regvar) from tour sums.

    Parameters
    ----------
    s : array_like, shape (R, K)
        Tour sums of a K-vector function.
    n : array_like, shape (R,)
        Tour lengths.

    Returns
    -------
    gbar : numpy.ndarray, shape (K,)
    sigma : numpy.ndarray, shape (K, K)
        Σ̂ = Σ_r (s_r − N_r ḡ)(s_r − N_r ḡ)ᵀ / (R N̄²); the asymptotic covariance of √R ḡ.
    """
    s, n = _check_tours(s, n)
    if s.ndim != 2:
        raise ValueError(f"`s` must be 2-D (tours, functions), got shape {s.shape}.")
    n_tours = n.size
    if n_tours < 1:
        raise ValueError("RS estimates need at least one whole tour.")
    total = n.sum()
    gbar = s.sum(axis=0) / total
    resid = s - n[:, None] * gbar
    nbar = total / n_tours
    return gbar, resid.T @ resid / (n_tours * nbar**2)


def rs_mean_se(s, n):
    """RS mean and its standard error for each column of tour sums (univariate eq. regvar).

    Parameters
    ----------
    s : array_like, shape (R, ...)
    n : array_like, shape (R,)

    Returns
    -------
    mean, se : numpy.ndarray, shape s.shape[1:]
        ``se`` is NaN when R < 2 (a variance needs two tours).
    """
    s, n = _check_tours(s, n)
    if n.size < 1:
        nan = np.full(s.shape[1:], np.nan)
        return nan, nan.copy()
    total = n.sum()
    mean = s.sum(axis=0) / total
    resid = s - np.expand_dims(n, tuple(range(1, s.ndim))) * mean
    # se = sqrt(Σ̂ / R) with Σ̂ = Σ resid² / (R N̄²)  =>  se = sqrt(Σ resid²) / Σ N
    se = np.sqrt((resid**2).sum(axis=0)) / total
    if n.size < 2:
        se = np.full_like(se, np.nan)
    return mean, se


def cumulative_rs_mean_se(s, n):
    """RS mean and standard error after each number of whole tours, in one pass.

    Uses running sums of s, s², N s, N and N²: Σ_r (s_r − N_r ḡ)² = Σs² − 2ḡΣNs + ḡ²ΣN², so
    every prefix costs O(1) per function instead of a recomputation.

    Returns
    -------
    mean, se : numpy.ndarray, shape (R,) + s.shape[1:]
        Row r uses tours 1 … r + 1; ``se`` is NaN on the first row (one tour).
    """
    s, n = _check_tours(s, n)
    nb = np.expand_dims(n, tuple(range(1, s.ndim)))
    s1 = np.cumsum(s, axis=0)
    s2 = np.cumsum(s * s, axis=0)
    sns = np.cumsum(nb * s, axis=0)
    sn = np.cumsum(nb, axis=0)
    snn = np.cumsum(nb * nb, axis=0)
    mean = s1 / sn
    ss = np.maximum(s2 - 2.0 * mean * sns + mean**2 * snn, 0.0)  # clip rounding below zero
    se = np.sqrt(ss) / sn
    if se.shape[0]:
        se[0] = np.nan
    return mean, se


def completed_tours(is_regen):
    """Return the number of whole tours completed at each draw (tours ending at or before that draw).

    A tour r is complete at the draw τ_r that starts the next one, so the count at draw t is
    (number of visits to δ at draws ≤ t) − 1, floored at 0.
    """
    return np.maximum(np.cumsum(np.asarray(is_regen, dtype=np.int64)) - 1, 0)


def prefix_sums(s, n):
    """Return the running sums after 0, 1, …, R tours: Σs, Σs², ΣNs (shape (R+1,) + s.shape[1:]), ΣN, ΣN².

    Row r holds the sums over the first r tours (row 0 is zero), so that sums at any draw are a
    lookup by :func:`completed_tours`, and sums of several chains simply add up.
    """
    s, n = _check_tours(s, n)
    nb = np.expand_dims(n, tuple(range(1, s.ndim)))

    def cum(a):
        return np.concatenate([np.zeros((1,) + a.shape[1:]), np.cumsum(a, axis=0)], axis=0)

    return cum(s), cum(s * s), cum(nb * s), cum(n), cum(n * n)


def rs_from_sums(s1, s2, sns, sn, snn, n_tours):
    """RS mean and standard error from the five running sums of :func:`prefix_sums`.

    Σ_r (s_r − N_r ḡ)² = Σs² − 2ḡΣNs + ḡ²ΣN²; with integer-valued s (counts, indicators) the
    sums are exact in float64 and the rounding left after the subtraction is far below the
    standard error. ``mean`` is NaN without tours and ``se`` NaN with fewer than two tours
    (documented: a variance needs two tours).
    """
    s1 = np.asarray(s1, dtype=float)
    extra = tuple(range(np.ndim(sn), s1.ndim))
    sn_b = np.expand_dims(np.asarray(sn, dtype=float), extra)
    snn_b = np.expand_dims(np.asarray(snn, dtype=float), extra)
    r_b = np.expand_dims(np.asarray(n_tours), extra)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(r_b >= 1, s1 / sn_b, np.nan)
        ss = np.maximum(s2 - 2.0 * mean * sns + mean**2 * snn_b, 0.0)
        se = np.where(r_b >= 2, np.sqrt(ss) / sn_b, np.nan)
    return mean, se


def tour_visit_counts(rank_draw, tau, k):
    """Visits of each of k ranked states per whole tour, and the tour lengths (one chain).

    Parameters
    ----------
    rank_draw : array_like of int, shape (n_draw,)
        Rank 0 … k − 1 of each draw's state among the ranked states, −1 for other states.
    tau : array_like of int, shape (R + 1,)
        Regeneration times (:func:`regeneration_times`).
    k : int

    Returns
    -------
    counts : numpy.ndarray of float, shape (R, k)
        counts[r, i] = number of draws of tour r in the state of rank i (exact integers).
    lengths : numpy.ndarray of float, shape (R,)
    """
    rank_draw = np.asarray(rank_draw)
    tau = np.asarray(tau, dtype=np.int64)
    n_tours = max(tau.size - 1, 0)
    if n_tours == 0:
        return np.zeros((0, k)), np.zeros(0)
    seg = rank_draw[tau[0] : tau[-1]]
    starts = np.zeros(seg.size, dtype=np.int64)
    starts[tau[:-1] - tau[0]] = 1
    tour_id = np.cumsum(starts) - 1
    top = seg >= 0
    flat = np.bincount(tour_id[top] * k + seg[top], minlength=n_tours * k)
    return flat.reshape(n_tours, k).astype(float), np.diff(tau).astype(float)
