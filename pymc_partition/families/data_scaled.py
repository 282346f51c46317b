r"""Data-scaled default hyperparameters of the Gaussian families (Fraley & Raftery 2007).

Model-based clustering packages do not ask for a prior on the cluster means and covariances:
mclust's ``priorControl()`` / ``defaultPrior(data, G, modelName)`` (Fraley & Raftery 2007,
section 3; mclust 6.1's ``R/mclust.R``) derives it from the data and the number of mixture
components ``G``. For ``d`` variables:

- prior mean of the cluster means ``mu_P``: the column means of the data;
- shrinkage (``kappa_P``, our ``kappa0``): 0.01, so the means are barely shrunk towards it;
- degrees of freedom ``nu_P = d + 2`` (``3`` for one variable), the smallest integer for which
  the inverse-Wishart prior of a covariance has a mean;
- scale ``Lambda_P = var(data) / G^(2/d)``: the data's covariance matrix (when there are more
  rows than variables, else its diagonal) divided by ``G^(2/d)``.

The last rule is a volume argument: ``G`` clusters share the data's volume, so one cluster's
covariance has ``1/G^2`` of the data covariance's determinant, ``G^(-2/d)`` times the data
covariance if it has the same shape. With ``nu_P = d + 2`` the prior mean of a cluster's
covariance is exactly that: ``E[Sigma] = Lambda_P / (nu_P - d - 1) = var(data) / G^(2/d)``.

mclust's M-step with this prior (Fortran ``msvvvp``) adds ``Lambda_P`` to a cluster's scatter and
divides by ``nu_P + n_k + d + 2``: the posterior mode of ``Sigma`` under the inverse-Wishart
``IW(nu_P, Lambda_P)`` with density ``propto |Sigma|^{-(nu_P + d + 1)/2}
exp(-tr(Lambda_P Sigma^{-1})/2)``, which is :class:`NormalInverseWishart`'s ``(nu0, psi0)``. So
``NormalInverseWishart.from_data`` gives mclust's prior term by term. In one variable mclust's
``sigma^2 ~ InvGamma(nu_P/2, varsigma_P^2/2)`` with ``nu_P = 3`` and ``varsigma_P^2 = var/G^2``
(its univariate M-step ``ms1vp`` divides by ``nu_P + n_k + 3``, the joint posterior mode) is
:class:`NormalInverseGamma`'s ``alpha0 = 3/2``, ``beta0 = var / (2 G^2)``;
``NormalInverseGamma.from_data`` applies it to each variable, with the volume factor ``G^(2/V)``
of the ``V`` variables, so that ``E[sigma_v^2] = beta0 / (alpha0 - 1) = var_v / G^(2/V)``, the
diagonal of the Normal-inverse-Wishart choice.

References
----------
C. Fraley and A. E. Raftery (2007). Bayesian regularization for normal mixture estimation and
model-based clustering. *Journal of Classification* 24:155-181.
"""

from __future__ import annotations

import numpy as np

from .._symbolic import is_symbolic
from .base import check_data, check_finite, check_positive

__all__ = ["DEFAULT_KAPPA0", "data_scale", "data_scaled"]

#: mclust's ``shrinkage`` (Fraley & Raftery 2007)
DEFAULT_KAPPA0 = 0.01


def _check_n_clusters(n_clusters, n_items):
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, (int, np.integer, float, np.floating)):
        raise TypeError(f"`n_clusters` must be a number, got {type(n_clusters).__name__}.")
    if not np.isfinite(n_clusters) or not 1 <= n_clusters <= n_items:
        raise ValueError(
            f"`n_clusters` must lie in [1, {n_items}] (the number of clusters you expect, at most "
            f"the number of rows), got {n_clusters!r}."
        )
    return float(n_clusters)


def data_scale(observed, n_clusters, *, full=True):
    """Return the data's mean and a cluster's share of its spread.

    Parameters
    ----------
    observed : array_like, shape (n_rows,) or (n_rows, n_vars)
        The data rows (every replicate row counts, as every row is a draw of its cluster).
    n_clusters : float
        ``G``, the number of clusters expected (need not be exact: it enters as ``G^(-2/V)``).
    full : bool
        The covariance matrix (``True``) or the variances only.

    Returns
    -------
    mean : ndarray (V,)
    spread : ndarray (V, V) or (V,)
        ``var(data) / G^(2/V)``: the covariance matrix when ``full`` and there are more rows than
        variables (else its diagonal, as mclust), the variances otherwise.

    Raises
    ------
    ValueError
        A constant variable (no spread to scale by), or fewer than 2 rows.
    """
    values, _, _ = check_data(observed)
    n_rows, n_vars = values.shape
    if n_rows < 2:
        raise ValueError("Data-scaled hyperparameters need at least 2 rows (a variance).")
    g = _check_n_clusters(n_clusters, n_rows)
    mean = values.mean(axis=0)
    constant = np.flatnonzero(~(np.ptp(values, axis=0) > 0))
    if constant.size:
        raise ValueError(
            f"Variable(s) {constant[:10].tolist()} are constant: a data-scaled prior has no "
            "spread to scale by. Drop them (they cannot separate clusters)."
        )
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        var = values.var(axis=0, ddof=1)
    # spreads beyond about 1e+-154 have a variance float64 cannot hold (overflow, or underflow to
    # 0 or a subnormal with a few digits): the prior's (co)variances would be too
    tiny = np.finfo(float).tiny
    bad = np.flatnonzero(~(np.isfinite(var) & (var >= tiny / np.finfo(float).eps)))
    if bad.size:
        spread = np.ptp(values[:, bad[:10]], axis=0)
        raise ValueError(
            f"The variance of variable(s) {bad[:10].tolist()} (ranges {spread.tolist()}) is not "
            "representable in float64: a data-scaled prior needs it. Rescale the data (e.g. "
            "standardise each variable) and build the prior on the rescaled data."
        )
    factor = g ** (-2.0 / n_vars)
    if full and n_rows > n_vars:
        spread = np.atleast_2d(np.cov(values, rowvar=False))
        spread = 0.5 * (spread + spread.T)
        # judged on the correlations (free of units); the cut-off leaves room for rounding
        # of exactly dependent variables, about 1e-15 relative
        sd = np.sqrt(np.diag(spread))
        if np.linalg.eigvalsh(spread / np.outer(sd, sd))[0] < 1e-10:
            raise ValueError(
                "The data's covariance matrix is singular (some variables are linear combinations "
                "of others): drop the redundant variables, or use NormalInverseGamma.from_data."
            )
    else:
        spread = np.diag(var) if full else var
    return mean, factor * spread


def data_scaled(observed, n_clusters, *, full, shape, minimum, scale):
    """Return ``(mu0, shape, spread parameter)`` scaled to the data.

    For a family whose prior mean of a cluster's (co)variance is ``spread parameter / (shape - minimum)``: scaled to
    ``scale * var(data) / G^(2/V)``.

    ``shape`` is the family's degrees of freedom (``(name, value)``: ``nu0`` with
    ``minimum = V + 1``, ``alpha0`` with ``minimum = 1``; ``value`` may be a callable of ``V``
    for its default), which must exceed ``minimum`` for the prior mean to exist.
    """
    mean, spread = data_scale(observed, n_clusters, full=full)
    name, value = shape
    value = check_finite(name, value(mean.size) if callable(value) else value)
    low = minimum(mean.size) if callable(minimum) else minimum
    if is_symbolic(value) or np.ndim(value) or not value > low:
        raise ValueError(
            f"`{name}` must be a number above {low:g} (the prior (co)variance then has a mean, "
            f"which the data set), got {value!r}; for a hyperprior use `scale`."
        )
    scale = check_positive("scale", scale)
    if np.ndim(scale):
        raise ValueError(f"`scale` must be a scalar, got {scale!r}.")
    return mean, value, scale * ((value - low) * spread)
