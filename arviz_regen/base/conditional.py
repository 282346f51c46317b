"""The conditional (discrete Stein) check's test on per-draw Stein terms (numpy core, no xarray).

Chain means of the terms against zero, with multivariate batch-means standard errors.

The terms (:mod:`pymc_partition.conditional_check` computes them; the maths is in
``docs/maths/conditional_check.md``) have mean zero under the target whatever sampler produced
the draws. Given ``T`` of shape ``(M chains, N draws, p checks)``:

* the grand mean ``m`` over all draws estimates ``E T``;
* its covariance is ``Sigma / (M N)`` with ``Sigma`` the long-run covariance, estimated by
  replicated multivariate batch means (batches of ``b`` draws of every chain, ``b`` the larger
  of ``floor(sqrt(N))``, twelve integrated autocorrelation times of the slowest check and four of
  ``state_tau``, the slowest coordinate of the sampled state the terms depend on (with
  hyperparameters sampled alongside: a slow component of the terms that their own
  autocorrelations do not show), compared with the grand mean; chains whose means differ inflate
  it); batches of several
  autocorrelation times take the place of the lugsail correction (Vats & Flegal 2022), whose
  extra noise the F reference below does not account for;
* per check ``t = m / se`` against Student's t with ``nu = A - 1`` degrees of freedom (``A``
  batches in all); all checks together Hotelling's ``T^2 = M N m' Sigma^+ m`` on the rank ``r`` of
  ``Sigma``, ``T^2 (nu - r + 1) / (r nu)`` against ``F(r, nu - r + 1)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["ConditionalTest", "batch_means_cov", "conditional_test"]

#: lugsail parameter of :func:`batch_means_cov` (``2 Sigma_b - Sigma_{floor(b / r)}``; 1: plain
#: batch means, the default of the test: the lugsail estimate's extra noise made the Hotelling
#: combination liberal, 11-19 % at α = 0.05 on correct chains, 4 or 1 x 1,000 draws)
LUGSAIL_R = 1
#: batches at least this many integrated autocorrelation times long (:func:`batch_length`): batch
#: means underestimate the long-run variance by about ``1 / (2 TAU_FACTOR)`` for geometrically
#: decaying autocorrelations; six left slowly mixing correct chains rejecting about 8 % at
#: α = 0.05, twelve 4-5 % (``docs/maths/conditional_check.md``)
TAU_FACTOR = 12.0
#: batches at least this many times ``state_tau`` long (:func:`batch_length`): a slow part with a
#: share ``s`` of the long-run variance leaves a relative bias of about ``s / (2 STATE_TAU_FACTOR)``,
#: and ``state_tau``, the largest of several noisy per-chain times, runs high; twelve left 4 x
#: 1,000 draws of a hierarchical sampler seven degrees of freedom and caught a partition step at
#: alpha x 1.1 in 45 % of runs, four times in 95 % (``docs/maths/conditional_check.md``)
STATE_TAU_FACTOR = 4.0


class ConditionalTest(NamedTuple):
    """Result of :func:`conditional_test` (arrays over the checks, scalars for all together).

    Attributes
    ----------
    mean, mcse : ndarray (p,)
        Grand mean of each check's terms and its Monte Carlo standard error.
    t, p_value : ndarray (p,)
        ``mean / mcse`` and its two-sided p-value (Student's t, ``df`` degrees of freedom).
    t2 : float
        Hotelling's statistic of all checks together.
    rank : int
        Rank of the long-run covariance (the checks' effective number).
    df : int
        Degrees of freedom of the covariance (batches in all less one).
    p_value_all : float
        p-value of ``t2`` (``F(rank, df - rank + 1)``); NaN with fewer batches than checks.
    n_draws : int
        Draws in all.
    """

    mean: np.ndarray
    mcse: np.ndarray
    t: np.ndarray
    p_value: np.ndarray
    t2: float
    rank: int
    df: int
    p_value_all: float
    n_draws: int


def _batch_cov(x, b, grand):
    """Return the batch-means covariance of every chain of ``x (M, N, p)`` and the number of batches.

    ``b / (A - 1) sum (Y - grand)(Y - grand)'`` over the ``A`` batch means ``Y`` of size ``b``.
    """
    M, N, p = x.shape
    a = N // b
    Y = x[:, : a * b].reshape(M, a, b, p).mean(axis=2).reshape(M * a, p) - grand
    A = M * a
    if A < 2:
        return np.full((p, p), np.nan), A
    return b * (Y.T @ Y) / (A - 1), A


def batch_length(x, tau_factor=None, state_tau=None):
    """Return the batch length for ``x (M, N, p)``.

    ``max(floor(sqrt(N)), ceil(tau_factor * tau), ceil(STATE_TAU_FACTOR * state_tau))`` (at most
    ``N // 2``), ``tau`` the largest integrated autocorrelation time of a chain's check
    (``tau_factor`` default :data:`TAU_FACTOR`, read at each call; ``state_tau`` default none).
    """
    from .autocorrelation import integrated_time

    if tau_factor is None:
        tau_factor = TAU_FACTOR

    _M, N, _p = x.shape
    b = max(int(np.sqrt(N)), 1)
    if N >= 4:
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = integrated_time(np.moveaxis(x, 1, 2))  # (M, p)
        tau = tau[np.isfinite(tau)]
        if tau.size:
            b = max(b, int(np.ceil(tau_factor * tau.max())))
    if state_tau is not None and np.isfinite(state_tau):
        b = max(b, int(np.ceil(STATE_TAU_FACTOR * float(state_tau))))
    return int(min(b, max(N // 2, 1)))


def batch_means_cov(x, b=None, r=LUGSAIL_R, state_tau=None):
    """Long-run covariance of the rows of ``x (M, N, p)`` by replicated batch means.

    ``b`` batch length (default :func:`batch_length`, with ``state_tau``).

    Returns
    -------
    cov : ndarray (p, p)
        With ``r > 1`` the lugsail estimate where it is positive semidefinite, else plain batch
        means; NaN with
        fewer than two batches.
    n_batches : int
        Batches of size ``floor(sqrt(N))`` in all.
    """
    x = np.asarray(x, dtype=float)
    _M, _N, p = x.shape
    grand = x.reshape(-1, p).mean(axis=0)
    b = batch_length(x, state_tau=state_tau) if b is None else int(b)
    cov, A = _batch_cov(x, b, grand)
    b_r = b // r if r > 1 else 0
    if b_r >= 1 and A >= 2:
        small, _ = _batch_cov(x, b_r, grand)
        lug = 2.0 * cov - small
        if np.all(np.isfinite(lug)) and np.linalg.eigvalsh(lug).min() >= -1e-12 * max(np.abs(lug).max(), 1e-300):
            cov = lug
    return cov, A


def conditional_test(terms, state_tau=None):
    """Test that the per-draw Stein terms have mean zero (see the module docstring).

    Parameters
    ----------
    terms : array_like (M, N, p)
        Per-draw terms of ``p`` checks, ``M`` chains of ``N`` draws each (finite).
    state_tau : float, optional
        Integrated autocorrelation time (in draws) of the slowest coordinate of the sampled state
        the terms depend on besides the partition's conditionals (with hyperparameters sampled
        alongside: the hyperparameters and the number of clusters); batches are at least
        :data:`STATE_TAU_FACTOR` times as long (``docs/maths/conditional_check.md``, "Random
        hyperparameters: batch length"). Default: the terms' own times only.

    Returns
    -------
    ConditionalTest
    """
    from scipy import stats

    x = np.asarray(terms, dtype=float)
    if x.ndim != 3:
        raise ValueError(f"`terms` must have shape (chain, draw, check), got shape {x.shape}.")
    M, N, p = x.shape
    if M * N * p == 0:
        raise ValueError(f"`terms` is empty (shape {x.shape}).")
    if not np.all(np.isfinite(x)):
        raise ValueError("`terms` holds NaN or infinite values.")
    mean = x.reshape(-1, p).mean(axis=0)
    if state_tau is not None and not (np.isfinite(state_tau) and state_tau > 0):
        raise ValueError(f"`state_tau` must be a positive number, got {state_tau!r}.")
    cov, A = batch_means_cov(x, state_tau=state_tau)
    df = A - 1
    n = M * N
    nan = np.full(p, np.nan)
    if df < 1:
        return ConditionalTest(mean, nan, nan, nan, np.nan, 0, max(df, 0), np.nan, n)
    # variances at the level of rounding errors of the terms are zero (a stuck chain)
    tol = 1e-8 * max(np.abs(x).max(), 1e-300)
    cov = np.where(np.abs(cov) > tol * tol, cov, 0.0)
    mcse = np.sqrt(np.maximum(np.diag(cov), 0.0) / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(mcse > 0, mean / mcse, np.where(mean == 0, 0.0, np.inf * np.sign(mean)))
    p_value = 2.0 * stats.t.sf(np.abs(t), df)
    if df < p:  # too few batches for a covariance of full rank
        return ConditionalTest(mean, mcse, t, p_value, np.nan, 0, df, np.nan, n)
    # all checks together, on the covariance's range (the checks may be collinear)
    lam, U = np.linalg.eigh(cov)
    keep = lam > max(1e-10 * lam.max(), tol * tol)
    rank = int(keep.sum())
    proj = U.T @ mean
    if rank == 0 or np.any(np.abs(proj[~keep]) > tol):
        # a mean off the covariance's range: a constant nonzero term, no sampler of the target
        t2 = 0.0 if not np.any(mean) else np.inf
        p_all = 1.0 if t2 == 0.0 else 0.0
        return ConditionalTest(mean, mcse, t, p_value, t2, rank, df, p_all, n)
    t2 = float(n * np.sum(proj[keep] ** 2 / lam[keep]))
    d2 = df - rank + 1
    p_all = float(stats.f.sf(t2 * d2 / (rank * df), rank, d2)) if d2 >= 1 else np.nan
    return ConditionalTest(mean, mcse, t, p_value, t2, rank, df, p_all, n)
