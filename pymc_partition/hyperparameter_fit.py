"""Empirical Bayes for any family: maximize the marginal likelihood of an allocation.

Over the family's hyperparameters, with standard errors from the observed information.

The objective is the family's own pytensor graph (``log_marginal`` of the clusters' summed
statistics, the statistics themselves a graph when they depend on a fitted hyperparameter), with
its exact gradient; positive hyperparameters are fitted on the log scale, probabilities on the
logit scale, ``nu0`` of the Normal-inverse-Wishart as ``log(nu0 - (V - 1))``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytensor
import pytensor.tensor as pt

from ._maximize import Objective, maximize
from ._pytensor_modes import python_function
from .families.base import ConjugateFamily, check_data
from .identifiability import check_identifiable

__all__ = ["fit_hyperparameters", "HyperparameterFit"]


@dataclass(frozen=True, eq=False)
class HyperparameterFit:
    """Result of :func:`fit_hyperparameters`.

    Attributes
    ----------
    estimates, std_errors : dict
        Per fitted hyperparameter (floats, or arrays for vector hyperparameters); standard errors
        from the observed information, carried to the natural scale by the delta method.
    family : ConjugateFamily
        The family at the estimates (the hyperparameters not fitted as given).
    log_likelihood : float
        Log marginal likelihood of the allocation at the estimates.
    converged : bool
        Gradient near zero and observed information positive definite.
    covariance : ndarray
        Covariance of the estimates on the fitting (unconstrained) scale.
    """

    estimates: dict
    std_errors: dict
    family: ConjugateFamily
    log_likelihood: float
    converged: bool
    n_iter: int
    covariance: np.ndarray = field(repr=False)
    message: str = ""


def _transform(family, name, value):
    """``(natural(u), u0, d natural / du (at u0))`` for one hyperparameter."""
    domain = family._param_domains.get(name, "finite")
    if name == "nu0" and hasattr(family, "n_vars"):  # NIW: nu0 > V - 1
        low = family.n_vars - 1.0
        return (lambda u: low + pt.exp(u)), np.log(np.asarray(value) - low), lambda v: v - low
    if domain == "positive":
        return pt.exp, np.log(np.asarray(value, dtype=float)), lambda v: v
    if domain == "probability":
        return pt.sigmoid, np.log(np.asarray(value) / (1 - np.asarray(value))), lambda v: v * (1 - v)
    return (lambda u: u), np.asarray(value, dtype=float), lambda v: np.ones_like(v)


def fit_hyperparameters(family, observed, item_index=None, *, labels=None, fit=None, gtol=1e-6,
                        maxiter=200) -> HyperparameterFit:  # fmt: skip
    """Empirical-Bayes estimates of a family's hyperparameters.

    Maximizes the log marginal likelihood of the data under a fixed allocation (each item its
    own cluster by default, as the paper does) over the hyperparameters named in ``fit``, with
    the exact gradient of the family's pytensor graph; standard errors come from the observed
    information (the Hessian, differentiated numerically from the exact gradient).

    Parameters
    ----------
    family : ConjugateFamily
        The family, with numbers for every hyperparameter: those fitted are the starting values.
    observed : array_like, shape (n_rows,) or (n_rows, n_vars)
    item_index : array_like of int, optional
        Item of each row (default one row per item).
    labels : array_like of int, shape (n_items,), optional
        The allocation whose marginal likelihood is maximized (default: singletons).
    fit : list of str, optional
        Hyperparameters to fit (default: all scalar and vector ones; matrices such as the
        Normal-inverse-Wishart ``psi0`` are kept as given).

    Returns
    -------
    HyperparameterFit

    Raises
    ------
    TypeError, ValueError
        For a family with random or unknown hyperparameters, bad data or labels.
    UnidentifiedHyperparametersError
        (a ValueError) Before optimizing, when the allocation cannot identify what ``fit`` names:
        with one data row per cluster (the default with one row per item) the likelihood is that
        of i.i.d. draws of one row's prior predictive, which leaves e.g. ``kappa0`` and
        ``beta0`` of the Normal-inverse-gamma on a flat ridge, and ``kappa0`` and ``nu0`` of the
        Normal-inverse-Wishart told apart only by the tails of the pooled data (the cases and
        their mathematics: :mod:`pymc_partition.identifiability`).
    RuntimeError
        When no finite optimum is reached (e.g. data that do not identify a hyperparameter).

    Warns
    -----
    IdentifiabilityWarning
        A spread hyperparameter fitted alone with one row per cluster: identified, but only as
        the spread of one row about the prior mean, not the spread of a cluster.

    See Also
    --------
    NormalInverseWishart.from_data, NormalInverseGamma.from_data : hyperparameters that need no
        fit: mclust's data-scaled default prior.


    Examples
    --------
    Binary data in 10 replicates of each of 40 items, whose success probabilities are drawn from
    Beta(2, 5): the fit recovers the prior mean ``2 / 7`` well (``a`` and ``b`` themselves less
    well: see ``fit.std_errors``).

    >>> import numpy as np, pymc_partition as pmp
    >>> rng = np.random.default_rng(1)
    >>> p = rng.beta(2.0, 5.0, size=40)
    >>> y = (rng.random((40, 10)) < p[:, None]).astype(float).reshape(-1, 1)
    >>> item_index = np.repeat(np.arange(40), 10)
    >>> fit = pmp.fit_hyperparameters(pmp.BetaBernoulli(a=1.0, b=1.0), y, item_index)
    >>> a, b = float(fit.estimates["a"]), float(fit.estimates["b"])
    >>> fit.converged, bool(abs(a / (a + b) - 2 / 7) < 0.1)
    (True, True)
    """
    if not isinstance(family, ConjugateFamily):
        raise TypeError(f"`family` must be a conjugate family, got {type(family).__name__}.")
    if family.is_random:
        raise TypeError(f"Give numbers (starting values) for {list(family.random_params)}.")
    values, item_index, n_items = check_data(observed, item_index)
    family._check_values(values)
    candidates = [k for k in family._param_names if k in family._param_domains
                  and np.ndim(getattr(family, k)) <= 1]  # fmt: skip
    fit = candidates if fit is None else list(fit)
    unknown = sorted(set(fit) - set(candidates))
    if unknown:
        raise ValueError(f"{unknown} cannot be fitted; choose among {candidates}.")
    if not fit:
        raise ValueError("Nothing to fit.")
    labels = np.arange(n_items) if labels is None else np.asarray(labels)
    if labels.shape != (n_items,) or not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0:
        raise ValueError(f"`labels` must be {n_items} non-negative integers (one per item).")
    _, labels = np.unique(labels, return_inverse=True)
    check_identifiable(family, fit, np.bincount(item_index, minlength=n_items), labels)
    member = (labels[None, :] == np.arange(labels.max() + 1)[:, None]).astype(float)  # (C, n)

    u = pt.dvector("u")
    sizes = [int(np.size(getattr(family, k))) for k in fit]
    natural, u0, jac = {}, [], []
    start = 0
    for k, size in zip(fit, sizes):
        to_nat, uk, dk = _transform(family, k, getattr(family, k))
        part = u[start : start + size]
        natural[k] = to_nat(part if np.ndim(getattr(family, k)) == 1 else part[0])
        u0.append(np.atleast_1d(uk))
        jac.append(dk)
        start += size
    model = family.replace_params(natural)
    if set(fit) & set(family._stats_params):
        stats = model.item_stats_graph(pt.constant(values), item_index, n_items)
    else:
        stats = pt.constant(family.item_stats(values, item_index, n_items))
    loglik = pt.sum(model.log_marginal(pt.dot(member, stats)))
    # evaluated a few hundred times: the Python linker (see _pytensor_modes) costs less than compiling
    fn = python_function([u], [loglik, pytensor.gradient.grad(loglik, u)])
    opt = maximize(Objective(lambda x: fn(x)), np.concatenate(u0), gtol=gtol, maxiter=maxiter,
                   describe=lambda x: dict(zip(fit, np.split(x, np.cumsum(sizes)[:-1]))))  # fmt: skip
    bounded = np.concatenate([
        np.full(size, family._param_domains.get(k) in ("positive", "probability") or k == "nu0")
        for k, size in zip(fit, sizes)
    ])  # fmt: skip
    se_u = np.sqrt(np.diag(opt.covariance))
    # off to the boundary (variances ~1e11, probabilities ~1e-11) or a flat likelihood there
    # (a standard error of 5 on the log scale is a factor of 150): not identified
    runaway = bounded & ((np.abs(opt.x) > 25) | ~(se_u < 5))
    if runaway.any():
        names = sorted({str(name) for name, r in zip(np.repeat(fit, sizes), runaway) if r})
        raise RuntimeError(
            f"The fit ran off to the boundary of the parameter space, or the likelihood is flat "
            f"there, for {names} (estimates on the fitting scale {np.round(opt.x[runaway], 1).tolist()}, "
            f"standard errors {np.round(se_u[runaway], 1).tolist()}): the data under "
            "this allocation do not identify them (e.g. too few clusters of several rows). Fix "
            "them (leave them out of `fit`) or give an allocation with more clusters of several "
            "rows (`labels=`) or replicate rows."
        )
    at = python_function([u], list(natural.values()))(opt.x)
    estimates, std_errors = {}, {}
    start = 0
    for k, size, value, dk in zip(fit, sizes, at, jac):
        value = np.asarray(value, dtype=float)
        se = se_u[start : start + size] * np.atleast_1d(dk(value))
        estimates[k] = value if value.ndim else float(value)
        std_errors[k] = se if value.ndim else float(se[0])
        start += size
    return HyperparameterFit(
        estimates=estimates, std_errors=std_errors, family=family.with_values(**estimates),
        log_likelihood=opt.loglik, converged=opt.converged, n_iter=opt.n_iter,
        covariance=opt.covariance, message=opt.message,
    )  # fmt: skip
