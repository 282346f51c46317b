"""The conditional (discrete Stein) check's test on per-draw Stein terms (numpy core, no xarray).

Chain means of the terms against zero, with batch-means standard errors.

The terms (:mod:`pymc_partition.conditional_check` computes them; the maths is in
``docs/maths/conditional_check.md``) have mean zero under the target whatever sampler produced
the draws. Given ``T`` of shape ``(M chains, N draws, p checks)``:

* the grand mean ``m`` over all draws estimates ``E T``;
* its covariance is ``Sigma / (M N)`` with ``Sigma`` the long-run covariance, estimated by
  replicated batch means (batches of ``b`` draws of every chain compared with the grand mean;
  chains whose means differ inflate it). ``b`` is at least ``floor(sqrt(N))`` and twelve
  integrated autocorrelation times of the terms; batches of several autocorrelation times take
  the place of the lugsail correction (Vats & Flegal 2022), whose extra noise the references
  below do not account for;
* a check's terms carry a slow part that follows its own test function ``f`` (and, with
  hyperparameters sampled alongside, the hyperparameters), which their own autocorrelations do
  not show: given ``check_tau`` (each ``f``'s integrated time) and ``state_tau`` (the sampled
  state's), check ``j``'s batches are also at least :data:`CHECK_TAU_FACTOR` ``check_tau[j]``
  and :data:`STATE_TAU_FACTOR` ``state_tau`` long, at most ``N //`` :data:`MIN_BATCHES` (enough
  batches for a usable reference);
* per check ``t = m / se`` against Student's t with ``nu = A - 1`` degrees of freedom (``A``
  batches in all); all checks together: with one batch length for all (no ``check_tau``)
  Hotelling's ``T^2 = M N m' Sigma^+ m`` on the rank ``r`` of ``Sigma``,
  ``T^2 (nu - r + 1) / (r nu)`` against ``F(r, nu - r + 1)``; with ``check_tau`` Hotelling at the
  longest batch when that leaves at least :data:`HOTELLING_MIN_DF` degrees of freedom, else
  Bonferroni over the per-check tests (Hotelling on few batches loses most of its power);
* the adjusted combination (``adjusted``, ``raw``): check ``a`` less its regression on the
  others, ``T_a - beta' T_o`` (``beta`` from the batch-means covariance at ``floor(sqrt(N))``
  draws), has mean zero under the target and sees a shift of correlated checks' means that no
  check alone shows; its t test uses the longest per-check batch, ``A - 1 - q`` degrees of
  freedom and its variance times ``(A - 1) / (A - 1 - q)`` (``q`` regressors); all checks
  together are Bonferroni's combination of it and the ``raw`` checks' own t tests.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["ConditionalTest", "batch_lengths", "batch_means_cov", "conditional_test"]

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
#: batches at least this many times each check's ``check_tau`` long (:func:`batch_lengths`): the
#: same bias bound as :data:`STATE_TAU_FACTOR`; chosen on 2,000-item right-model and alpha x 1.1
#: runs scored by candidate rules (``docs/maths/conditional_check.md``, "Fixed hyperparameters")
CHECK_TAU_FACTOR = 4.0
#: slow-time batches are at most ``N // MIN_BATCHES`` long, so that ``M`` chains leave at least
#: ``MIN_BATCHES * M - 1`` degrees of freedom (15 with 4 chains)
MIN_BATCHES = 4
#: with ``check_tau``, Hotelling's combination at the longest batch needs this many degrees of
#: freedom; with fewer, Bonferroni over the per-check t tests (more power on few batches)
HOTELLING_MIN_DF = 100


class ConditionalTest(NamedTuple):
    """Result of :func:`conditional_test` (arrays over the checks, scalars for all together).

    Attributes
    ----------
    mean, mcse : ndarray (p,)
        Grand mean of each check's terms and its Monte Carlo standard error.
    t, p_value : ndarray (p,)
        ``mean / mcse`` and its two-sided p-value (Student's t, ``df`` degrees of freedom).
    t2 : float
        Hotelling's statistic of all checks together (NaN with Bonferroni's combination).
    rank : int
        Rank of the long-run covariance (the checks' effective number).
    df : int
        Degrees of freedom of the combined test (batches in all less one; with Bonferroni's
        combination the smallest of ``df_each``).
    p_value_all : float
        p-value of all checks together: of ``t2`` (``F(rank, df - rank + 1)``; NaN with fewer
        batches than checks), or Bonferroni's ``min(1, p min_j p_value[j])`` (``combination``).
    n_draws : int
        Draws in all.
    df_each : ndarray (p,) or None
        Degrees of freedom of each check's t test (None: ``df`` for all).
    batch : ndarray (p,) or None
        Batch length of each check.
    combination : str
        ``"hotelling"``, ``"bonferroni"`` or ``"adjusted"`` (the checks ``raw`` as they are and
        the check ``adjusted`` less its regression on the others, by Bonferroni).
    adjusted : int or None
        Index of the check tested after its regression on the others (``"adjusted"`` only).
    raw : tuple of int or None
        Indices of the checks tested as they are beside it (``"adjusted"`` only).
    beta : ndarray (p - 1,) or None
        Regression coefficients of the adjusted check on the others, in their order.
    adjusted_mean, adjusted_t, adjusted_p_value : float
        The residual's grand mean, its t statistic and two-sided p-value (NaN unless
        ``"adjusted"``).
    adjusted_df : int
        Degrees of freedom of ``adjusted_t`` (batches less one, less the regressors' rank).
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
    df_each: np.ndarray | None = None
    batch: np.ndarray | None = None
    combination: str = "hotelling"
    adjusted: int | None = None
    raw: tuple | None = None
    beta: np.ndarray | None = None
    adjusted_mean: float = np.nan
    adjusted_t: float = np.nan
    adjusted_p_value: float = np.nan
    adjusted_df: int = 0


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


def batch_lengths(x, state_tau=None, check_tau=None, min_batches=None):
    """Return each check's batch length for ``x (M, N, p)`` given its test function's time.

    ``max(b0, min(ceil(CHECK_TAU_FACTOR * check_tau[j]), ceil(STATE_TAU_FACTOR * state_tau),
    N // min_batches))`` per check (the inner maximum over the given times; ``min_batches``
    default :data:`MIN_BATCHES`), with ``b0`` the terms' own :func:`batch_length`. A NaN
    ``check_tau[j]`` (a constant test function) adds nothing.

    Returns
    -------
    ndarray (p,) of int
    """
    _M, N, p = x.shape
    b0 = batch_length(x)
    slow = np.zeros(p)
    if check_tau is not None:
        tau = np.asarray(check_tau, dtype=float)
        slow = np.where(np.isnan(tau), 0.0, CHECK_TAU_FACTOR * tau)
    if state_tau is not None and np.isfinite(state_tau):
        slow = np.maximum(slow, STATE_TAU_FACTOR * float(state_tau))
    cap = max(N // (MIN_BATCHES if min_batches is None else int(min_batches)), 1)
    slow = np.ceil(np.minimum(slow, cap)).astype(int)
    return np.maximum(slow, b0)


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


def _check_tau_argument(check_tau, p):
    """Validate ``check_tau`` against ``p`` checks: ``(p,)`` floats, positive or NaN."""
    if check_tau is None:
        return None
    try:
        tau = np.asarray(check_tau, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"`check_tau` must be {p} numbers, got {check_tau!r}.") from None
    if tau.shape != (p,):
        raise ValueError(f"`check_tau` must hold one time per check ({p}), got shape {tau.shape}.")
    if np.any(tau[~np.isnan(tau)] <= 0) or np.any(np.isinf(tau)):
        raise ValueError(f"`check_tau` must be positive (or NaN for a constant test function), got {tau}.")
    return tau


def _per_check(x, mean, b, tol):
    """Each check's MCSE, t, p-value and df with its own batch length ``b[j]``."""
    from scipy import stats

    M, N, p = x.shape
    n = M * N
    mcse, t, pv, df = (np.empty(p) for _ in range(4))
    for j in range(p):
        cov, A = _batch_cov(x[:, :, j : j + 1], int(b[j]), mean[j : j + 1])
        var = cov[0, 0] if abs(cov[0, 0]) > tol * tol else 0.0
        mcse[j] = np.sqrt(max(var, 0.0) / n)
        with np.errstate(divide="ignore", invalid="ignore"):
            t[j] = mean[j] / mcse[j] if mcse[j] > 0 else (0.0 if mean[j] == 0 else np.inf * np.sign(mean[j]))
        df[j] = A - 1
        pv[j] = 2.0 * stats.t.sf(abs(t[j]), A - 1) if A >= 2 else np.nan
    return mcse, t, pv, df.astype(int)


def _combination_argument(adjusted, raw, min_batches, p):
    """Validate the adjusted combination's arguments against ``p`` checks."""

    def index(j, what):
        if isinstance(j, (bool, np.bool_)) or not isinstance(j, (int, np.integer)) or not 0 <= j < p:
            raise ValueError(f"`{what}` must hold check indices in [0, {p}), got {j!r}.")
        return int(j)

    if min_batches is not None and (
        isinstance(min_batches, (bool, np.bool_)) or not isinstance(min_batches, (int, np.integer)) or min_batches < 2
    ):
        raise ValueError(f"`min_batches` must be an integer >= 2, got {min_batches!r}.")
    if adjusted is None:
        if raw is not None:
            raise ValueError("`raw` names the checks tested beside an `adjusted` one: give `adjusted` too.")
        return None, None
    adjusted = index(adjusted, "adjusted")
    if p < 2:
        raise ValueError(f"An `adjusted` check needs other checks to regress on; the terms have {p}.")
    raw = () if raw is None else tuple(index(j, "raw") for j in np.atleast_1d(np.asarray(raw, dtype=object)))
    if adjusted in raw or len(set(raw)) != len(raw):
        raise ValueError(f"`raw` ({list(raw)}) must be distinct checks other than `adjusted` ({adjusted}).")
    return adjusted, raw


def conditional_test(terms, state_tau=None, check_tau=None, *, adjusted=None, raw=None, min_batches=None):
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
    check_tau : array_like (p,), optional
        Integrated autocorrelation time of each check's test function (NaN: constant); check
        ``j``'s batches are at least :data:`CHECK_TAU_FACTOR` times as long, and all checks are
        combined by Hotelling at the longest batch or by Bonferroni (module docstring). Default:
        one batch length for all checks and Hotelling's combination.
    adjusted : int, optional
        Index of a check tested after subtracting its regression on all the other checks
        (``docs/maths/conditional_check.md``, "The adjusted combination"): the residual
        ``T_a - beta' T_o`` has mean zero under the target and a smaller variance when the checks
        are correlated, and it sees a shift of the checks' means along a direction that no check
        alone shows. ``beta`` comes from the batch-means covariance at batches of
        ``floor(sqrt(N))`` draws; the residual's t test uses the longest of the checks' batch
        lengths, ``A - 1 - q`` degrees of freedom and its variance times ``(A - 1) / (A - 1 - q)``
        (``q`` the regressors' rank). All checks together are then Bonferroni's combination of
        that test and the ``raw`` checks' own t tests (``combination == "adjusted"``, whatever
        the number of batches). Default: the combination of the module docstring.
    raw : sequence of int, optional
        Indices of the checks tested as they are beside ``adjusted`` (default: none). Needs
        ``adjusted``.
    min_batches : int, optional
        Slow-time batches are at most ``N // min_batches`` long (default :data:`MIN_BATCHES`).

    Returns
    -------
    ConditionalTest

    Raises
    ------
    ValueError
        If ``terms`` is not a finite non-empty ``(M, N, p)`` array, a time is not positive, or
        ``adjusted`` / ``raw`` / ``min_batches`` are not valid check indices / an integer >= 2.
    """
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
    check_tau = _check_tau_argument(check_tau, p)
    adjusted, raw = _combination_argument(adjusted, raw, min_batches, p)
    if adjusted is not None:
        return _test_adjusted(x, mean, state_tau, check_tau, adjusted, raw, min_batches)
    if check_tau is not None:
        return _test_per_check(x, mean, state_tau, check_tau, min_batches)
    return _hotelling(x, mean, batch_length(x, state_tau=state_tau))


def _adjusted_t(x, mean, adjusted, b, tol):
    """Return ``beta``, mean, t, p-value and df of check ``adjusted`` less its regression on the others."""
    from scipy import stats

    M, N, p = x.shape
    others = [j for j in range(p) if j != adjusted]
    # the regression from many short batches: beta's own noise stays small beside the residual's
    short, _ = _batch_cov(x, max(int(np.sqrt(N)), 1), mean)
    short = np.where(np.abs(short) > tol * tol, short, 0.0)
    if not np.all(np.isfinite(short)):
        return np.full(p - 1, np.nan), np.nan, np.nan, np.nan, 0
    beta, _, q, _ = np.linalg.lstsq(short[np.ix_(others, others)], short[others, adjusted], rcond=None)
    r = x[:, :, adjusted] - x[:, :, others] @ beta
    r_mean = float(r.mean())
    cov, A = _batch_cov(r[:, :, None], b, np.array([r_mean]))
    df = A - 1 - int(q)
    if df < 1:
        return beta, r_mean, np.nan, np.nan, max(df, 0)
    # the regressors' rank q costs degrees of freedom, as a regression fitted on the A batch means would
    var = cov[0, 0] * (A - 1) / df
    # rounding errors of the adjusted check's scale: a residual that small is zero (collinear checks)
    r_tol = 1e-8 * max(np.abs(x[:, :, adjusted]).max(), 1e-300)
    if not var > r_tol * r_tol:
        t = 0.0 if abs(r_mean) <= r_tol else np.inf * np.sign(r_mean)
    else:
        t = r_mean / np.sqrt(var / (M * N))
    return beta, r_mean, float(t), float(2.0 * stats.t.sf(abs(t), df)), int(df)


def _test_adjusted(x, mean, state_tau, check_tau, adjusted, raw, min_batches):
    """:func:`conditional_test` with the ``adjusted`` combination."""
    M, N, p = x.shape
    tol = 1e-8 * max(np.abs(x).max(), 1e-300)
    b = batch_lengths(x, state_tau, check_tau, min_batches)
    mcse, t, p_value, df_each = _per_check(x, mean, b, tol)
    beta, r_mean, r_t, r_p, r_df = _adjusted_t(x, mean, adjusted, int(b.max()), tol)
    tests = np.r_[p_value[list(raw)], r_p]
    dfs = np.r_[df_each[list(raw)], r_df]
    finite = np.isfinite(tests)
    if finite.any():
        p_all, df = float(min(1.0, tests[finite].min() * tests.size)), int(dfs[finite].min())
    else:
        p_all, df = np.nan, int(dfs.max())
    rank = int((mcse > 0).sum())
    return ConditionalTest(mean, mcse, t, p_value, np.nan, rank, df, p_all, M * N, df_each, b, "adjusted",
                           adjusted, raw, beta, r_mean, r_t, r_p, r_df)  # fmt: skip


def _test_per_check(x, mean, state_tau, check_tau, min_batches=None):
    """:func:`conditional_test` with each check's own batch length (``check_tau`` given)."""
    M, N, p = x.shape
    n = M * N
    tol = 1e-8 * max(np.abs(x).max(), 1e-300)
    b = batch_lengths(x, state_tau, check_tau, min_batches)
    mcse, t, p_value, df_each = _per_check(x, mean, b, tol)
    longest = int(b.max())
    df_all = M * (N // longest) - 1
    if df_all >= HOTELLING_MIN_DF:
        res = _hotelling(x, mean, longest)
        return res._replace(mcse=mcse, t=t, p_value=p_value, df_each=df_each, batch=b)
    finite = np.isfinite(p_value)
    if not finite.any():
        p_all, df = np.nan, int(df_each.max())
    else:
        p_all, df = float(min(1.0, p_value[finite].min() * p)), int(df_each[finite].min())
    rank = int((mcse > 0).sum())
    return ConditionalTest(mean, mcse, t, p_value, np.nan, rank, df, p_all, n, df_each, b, "bonferroni")


def _hotelling(x, mean, b):
    """:func:`conditional_test` with one batch length ``b`` for all checks (Hotelling's combination)."""
    from scipy import stats

    M, N, p = x.shape
    cov, A = batch_means_cov(x, b=b)
    df = A - 1
    n = M * N
    nan = np.full(p, np.nan)
    if df < 1:
        return ConditionalTest(mean, nan, nan, nan, np.nan, 0, max(df, 0), np.nan, n, batch=np.full(p, b))
    # variances at the level of rounding errors of the terms are zero (a stuck chain)
    tol = 1e-8 * max(np.abs(x).max(), 1e-300)
    cov = np.where(np.abs(cov) > tol * tol, cov, 0.0)
    mcse = np.sqrt(np.maximum(np.diag(cov), 0.0) / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(mcse > 0, mean / mcse, np.where(mean == 0, 0.0, np.inf * np.sign(mean)))
    p_value = 2.0 * stats.t.sf(np.abs(t), df)
    if df < p:  # too few batches for a covariance of full rank
        return ConditionalTest(mean, mcse, t, p_value, np.nan, 0, df, np.nan, n, batch=np.full(p, b))
    # all checks together, on the covariance's range (the checks may be collinear)
    lam, U = np.linalg.eigh(cov)
    keep = lam > max(1e-10 * lam.max(), tol * tol)
    rank = int(keep.sum())
    proj = U.T @ mean
    if rank == 0 or np.any(np.abs(proj[~keep]) > tol):
        # a mean off the covariance's range: a constant nonzero term, no sampler of the target
        t2 = 0.0 if not np.any(mean) else np.inf
        p_all = 1.0 if t2 == 0.0 else 0.0
        return ConditionalTest(mean, mcse, t, p_value, t2, rank, df, p_all, n, batch=np.full(p, b))
    t2 = float(n * np.sum(proj[keep] ** 2 / lam[keep]))
    d2 = df - rank + 1
    p_all = float(stats.f.sf(t2 * d2 / (rank * df), rank, d2)) if d2 >= 1 else np.nan
    return ConditionalTest(mean, mcse, t, p_value, t2, rank, df, p_all, n, batch=np.full(p, b))
