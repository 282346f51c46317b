"""Empirical Bayes for the :class:`~pymc_partition.SpikeSlabNormal` hyperparameters.

The hyperparameters ``(mu, sigma2, sigma2_eta, sigma2_theta, p)`` maximize the marginal likelihood
of the *all-singletons* allocation (every item its own cluster), as in the paper (section 4.1) and
the R package bclust. The log-likelihood is built as a pytensor graph from the family's own
formula (:func:`~pymc_partition.families.spike_slab.item_terms` and
:func:`~pymc_partition.families.spike_slab.cluster_log_marginal` with symbolic scalar
hyperparameters), so the sampler's model and the fit cannot drift apart. It is maximized on the
unconstrained scale ``(mu, log sigma2, log sigma2_eta, log sigma2_theta, logit p)`` with exact
gradient and Hessian; standard errors come from the observed information (inverse Hessian of the
negative log-likelihood at the optimum, transformed scale) and the delta method.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
import pytensor
import pytensor.tensor as pt

from ._maximize import Objective, maximize
from ._pytensor_modes import python_function
from .families.base import check_data
from .families.spike_slab import SpikeSlabNormal, cluster_log_marginal, item_terms, replicate_summaries

__all__ = [
    "SpikeSlabFit",
    "fit_spike_slab",
    "spike_slab_eb_loglik",
]

PARAM_NAMES = ("mu", "sigma2", "sigma2_eta", "sigma2_theta", "p")
_TRANSFORMED_NAMES = ("mu", "log_sigma2", "log_sigma2_eta", "log_sigma2_theta", "logit_p")

# --------------------------------------------------------------------------------------------
# the log-likelihood graph
# --------------------------------------------------------------------------------------------


def _natural(x):
    """Map the transformed vector to the natural-scale dict."""
    mu, ls2, lse, lst, lp = (float(v) for v in x)
    return {
        "mu": mu,
        "sigma2": math.exp(ls2),
        "sigma2_eta": math.exp(lse),
        "sigma2_theta": math.exp(lst),
        "p": 1.0 / (1.0 + math.exp(-lp)) if lp > -700 else 0.0,
    }


def _data_centre(values):
    """Return the mean of all the data (the midrange where its sum would overflow)."""
    with np.errstate(over="ignore", invalid="ignore"):
        centre = float(values.mean())
    return centre if math.isfinite(centre) else 0.5 * float(values.min()) + 0.5 * float(values.max())


def _uncentred(x, centre):
    """Return the transformed vector ``x`` of data less ``centre``, for the data themselves."""
    x = np.array(x, dtype=float)
    x[0] += centre
    return x


def _jacobian_diag(est):
    """Return d natural / d transformed (diagonal) at ``est``."""
    return np.array([1.0, est["sigma2"], est["sigma2_eta"], est["sigma2_theta"], est["p"] * (1.0 - est["p"])])


def _loglik_graph(r, m, s, theta):
    """Symbolic all-singletons log-likelihood; ``theta`` are the 5 transformed scalars."""
    mu, log_s2, log_se, log_st, logit_p = theta
    const, A, B = item_terms(r, m, s, mu, pt.exp(log_s2), pt.exp(log_se), xp=pt)
    # each item is its own cluster: the cluster sums are the item rows themselves
    return pt.sum(cluster_log_marginal(const, A, B, pt.exp(log_st), pt.sigmoid(logit_p), xp=pt))


@functools.lru_cache(maxsize=1)
def _compiled():
    """Compile once per process: (loglik, gradient) of the transformed parameters.

    The data summaries are inputs, so one function serves every data set. A fit evaluates it a
    few dozen times, so it is run by pytensor's Python linker
    (:func:`~pymc_partition._pytensor_modes.python_function`, quick to build) rather than
    compiled with numba (seconds in a fresh environment). The exact symbolic Hessian (gradient
    of each gradient component) costs seconds to rewrite and compile on every run, so the
    Hessian is differentiated numerically from this exact gradient instead
    (:func:`_hessian_from_gradient`, accurate to about 1e-10).
    """
    theta = [pt.dscalar(n) for n in _TRANSFORMED_NAMES]
    r, m, s = pt.dvector("r"), pt.dmatrix("m"), pt.dmatrix("s")
    ll = _loglik_graph(r, m, s, theta)
    grad = pytensor.gradient.grad(ll, theta)
    return python_function([r, m, s, *theta], [ll, pt.stack(grad)])


class _Objective(Objective):
    """The all-singletons spike-and-slab objective of the data summaries ``r, m, s``."""

    def __init__(self, r, m, s):
        fn = _compiled()
        super().__init__(lambda x: fn(r, m, s, *x))
        self.args = (r, m, s)


def spike_slab_eb_loglik(values, item_index, *, mu, sigma2, sigma2_eta, sigma2_theta, p):
    """All-singletons log marginal likelihood at given hyperparameters (natural scale).

    The quantity :func:`fit_spike_slab` maximizes, evaluated through the same compiled graph.
    """
    values, item_index, n_items = check_data(values, item_index)
    centre = _data_centre(values)  # as fit_spike_slab: about the data mean
    r, m, s = replicate_summaries(values - centre, item_index, n_items)
    x = [mu - centre, math.log(sigma2), math.log(sigma2_eta), math.log(sigma2_theta), math.log(p / (1 - p))]
    return float(_compiled()(r, m, s, *x)[0])


# --------------------------------------------------------------------------------------------
# the fit
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SpikeSlabFit:
    """Result of :func:`fit_spike_slab`.

    Attributes
    ----------
    estimates, std_errors : dict
        Keyed ``mu, sigma2, sigma2_eta, sigma2_theta, p`` (the :class:`SpikeSlabNormal`
        arguments), plain floats. Standard errors are observed-information ones carried to the
        natural scale by the delta method (NaN, with a warning, when the Hessian is not
        positive definite).
    log_likelihood : float
        Maximized all-singletons log marginal likelihood.
    converged : bool
        Whether the optimizer converged to a point with ~zero gradient and a positive definite
        Hessian.
    n_iter : int
        Optimizer iterations (including the Newton polish).
    transformed : dict
        Optimum on the optimization scale ``mu, log_sigma2, log_sigma2_eta, log_sigma2_theta,
        logit_p``.
    gradient, hessian : ndarray
        Gradient ``(5,)`` and Hessian ``(5, 5)`` of the log-likelihood at the optimum, on the
        transformed scale (order as ``transformed``).
    covariance : ndarray
        Inverse observed information on the transformed scale ``(5, 5)``.
    n_items, n_rows, n_vars : int
        Size of the data.
    message : str
        The optimizer's message.
    """

    estimates: dict
    std_errors: dict
    log_likelihood: float
    converged: bool
    n_iter: int
    transformed: dict = field(repr=False)
    gradient: np.ndarray = field(repr=False)
    hessian: np.ndarray = field(repr=False)
    covariance: np.ndarray = field(repr=False)
    n_items: int = 0
    n_rows: int = 0
    n_vars: int = 0
    message: str = ""

    def family(self) -> SpikeSlabNormal:
        """Return the fitted model: ``SpikeSlabNormal(**estimates)``."""
        return SpikeSlabNormal(**self.estimates)

    def table(self) -> str:
        """Return a readable table of estimates and standard errors."""
        lines = [
            f"Spike-and-slab empirical Bayes fit ({self.n_items} items, {self.n_rows} rows, {self.n_vars} variables)",
            f"{'parameter':<14}{'estimate':>12}{'std. error':>13}",
        ]
        for k in PARAM_NAMES:
            lines.append(f"{k:<14}{self.estimates[k]:>12.4g}{self.std_errors[k]:>13.3g}")
        lines.append(f"log-likelihood {self.log_likelihood:.4f}; converged={self.converged}; iterations={self.n_iter}")
        return "\n".join(lines)

    def __repr__(self):
        return self.table()

    def __str__(self):
        return self.table()


def _start_values(r, m, s):
    """Moment estimates (transformed scale) used as the default starting point."""
    n_items, n_vars = m.shape
    df_within = float(np.sum(r - 1)) * n_vars
    sigma2 = float(s.sum() / df_within)
    mu = float(m.mean())
    # between-item variance of item means, per variable, minus the replicate-noise share
    noise = sigma2 * float(np.mean(1.0 / r))
    per_var = m.var(axis=0, ddof=1) - noise if n_items > 1 else np.full(n_vars, sigma2)
    pos = np.maximum(per_var, 1e-3 * sigma2)
    sigma2_eta = float(np.median(pos))  # robust to the few variables with a slab shift
    p = 0.1
    excess = float(np.mean(np.maximum(per_var - sigma2_eta, 0.0)))
    sigma2_theta = max(excess / p, sigma2_eta, 1e-3)
    return np.array([mu, math.log(sigma2), math.log(sigma2_eta), math.log(sigma2_theta), math.log(p / (1 - p))])


def _parse_start(start, default):
    if start is None:
        return default
    if not isinstance(start, dict):
        raise TypeError(
            "`start` must be a dict keyed by some of mu, sigma2, sigma2_eta, sigma2_theta, p "
            f"(natural scale), got {type(start).__name__}."
        )
    unknown = set(start) - set(PARAM_NAMES)
    if unknown:
        raise ValueError(f"`start` has unknown key(s) {sorted(unknown)}; allowed: {list(PARAM_NAMES)}.")
    x = default.copy()
    for k, v in start.items():
        try:
            v = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"`start[{k!r}]` must be a number, got {v!r}.") from None
        if not math.isfinite(v):
            raise ValueError(f"`start[{k!r}]` must be finite, got {v!r}.")
        if k == "mu":
            x[0] = v
        elif k == "p":
            if not 0 < v < 1:
                raise ValueError(f"`start['p']` must lie strictly inside (0, 1), got {v!r}.")
            x[4] = math.log(v / (1 - v))
        else:
            if v <= 0:
                raise ValueError(f"`start[{k!r}]` must be strictly positive, got {v!r}.")
            x[PARAM_NAMES.index(k)] = math.log(v)
    return x


def fit_spike_slab(values, item_index=None, *, start=None, gtol=1e-6, maxiter=200) -> SpikeSlabFit:
    """Empirical-Bayes estimates of the :class:`SpikeSlabNormal` hyperparameters.

    Maximizes the log marginal likelihood of the all-singletons allocation (each item its own
    cluster) over ``(mu, log sigma2, log sigma2_eta, log sigma2_theta, logit p)`` with exact
    pytensor gradient (``scipy.optimize.minimize``, trust-exact, then a Newton polish; see
    :func:`pymc_partition._maximize.maximize`). The generic :func:`fit_hyperparameters` fits any
    family; this is its special case for the paper's model, with moment-based starting values and
    the checks of identifiability that model needs.

    Parameters
    ----------
    values : array_like, shape (n_rows, n_vars)
        Observations, one row per replicate.
    item_index : array_like of int, shape (n_rows,), optional
        Item of each row (``None``: one row per item; then ``sigma2`` and ``sigma2_eta`` are not
        separately identified and a ValueError is raised).
    start : dict, optional
        Starting values on the natural scale for some of ``mu, sigma2, sigma2_eta,
        sigma2_theta, p``; the rest come from moment estimates.
    gtol : float
        Gradient tolerance (trust-exact) on the transformed scale.
    maxiter : int
        Maximum optimizer iterations.

    Returns
    -------
    SpikeSlabFit

    Raises
    ------
    ValueError
        On invalid data (NaN, wrong ``item_index`` length, ...) or data without replicates.
    RuntimeError
        If the optimizer fails to reach a finite optimum.

    Warns
    -----
    RuntimeWarning
        If the Hessian at the optimum is not positive definite (standard errors are NaN).


    Examples
    --------
    Data simulated from the paper's fitted model (``sigma2 = 0.2``, ``sigma2_eta = 0.4``): 14
    items in 4 replicates of 43 variables.

    >>> import pymc_partition as pmp
    >>> data = pmp.datasets.simulate_spike_slab(random_seed=1)
    >>> eb = pmp.fit_spike_slab(data.values, data.item_index)
    >>> eb.converged, sorted(eb.estimates)
    (True, ['mu', 'p', 'sigma2', 'sigma2_eta', 'sigma2_theta'])
    >>> est, se = eb.estimates, eb.std_errors
    >>> bool(abs(est["sigma2"] - 0.2) < 3 * se["sigma2"] and abs(est["sigma2_eta"] - 0.4) < 3 * se["sigma2_eta"])
    True
    >>> family = pmp.SpikeSlabNormal(**eb.estimates)   # the family at the estimates
    """
    values, item_index, n_items = check_data(values, item_index)
    # fitted about the data mean: far from zero the item means keep the spread's digits and
    # the optimizer's steps in mu are not rounded away (at 1e12 spreads it stopped unconverged)
    centre = _data_centre(values)
    r, m, s = replicate_summaries(values - centre, item_index, n_items)
    if n_items < 2:
        raise ValueError("Empirical Bayes needs at least 2 items; got 1.")
    if np.all(r < 2):
        raise ValueError(
            "No item has replicate rows (every item has one row): the between-replicate variance "
            "sigma2 and the between-item variance sigma2_eta are not separately identified."
        )
    if np.sum(s) <= 0:
        raise ValueError("The replicate rows are identical within every item: sigma2 would be 0.")
    x0 = _parse_start(start, _start_values(r, m, s))
    if start is not None and "mu" in start:
        x0[0] -= centre
    try:
        opt = maximize(_Objective(r, m, s), x0, gtol=gtol, maxiter=maxiter,
                       describe=lambda x: _natural(_uncentred(x, centre)))  # fmt: skip
    except RuntimeError as err:
        raise RuntimeError(f"Empirical-Bayes optimization: {err}") from None
    x, ll, g, H, cov = _uncentred(opt.x, centre), opt.loglik, opt.gradient, opt.hessian, opt.covariance
    extreme = np.abs(x[1:]) > 25  # variance ratios ~1e11 or p ~1e-11: a boundary solution
    if extreme.any():
        names = [_TRANSFORMED_NAMES[1 + i] for i in np.flatnonzero(extreme)]
        raise RuntimeError(
            f"Empirical-Bayes optimization ran off to the boundary of the parameter space "
            f"({', '.join(names)} = {x[1:][extreme].round(1).tolist()}): the data do not identify "
            "the spike-and-slab hyperparameters (e.g. no variable shows a slab shift). Estimates "
            f"at the last point: {_natural(x)}."
        )
    est = _natural(x)
    se = np.sqrt(np.diag(cov)) * _jacobian_diag(est)
    n_iter = opt.n_iter
    return SpikeSlabFit(
        estimates=est,
        std_errors={k: float(v) for k, v in zip(PARAM_NAMES, se)},
        log_likelihood=float(ll),
        converged=opt.converged,
        n_iter=n_iter,
        transformed={k: float(v) for k, v in zip(_TRANSFORMED_NAMES, x)},
        gradient=np.asarray(g, dtype=float),
        hessian=np.asarray(H, dtype=float),
        covariance=cov,
        n_items=int(n_items),
        n_rows=int(values.shape[0]),
        n_vars=int(values.shape[1]),
        message=opt.message,
    )
