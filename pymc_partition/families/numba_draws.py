"""Numba kernels drawing data given a partition, one per family: what PyTensor's numba backend runs.

Each kernel ``draw_<family>(rng, labels, item_index, out, *params)`` fills ``out (n_rows, n_vars)``
with a draw from ``p(y | z, hyperparameters)``: every cluster's parameters from their prior, then
its rows (the same distribution as the family's numpy ``_draw_cluster``, the reference that
``MarginalLikelihoodRV.rng_fn`` uses). ``rng`` is a ``numpy.random.Generator``, advanced in place.
The parameters come broadcast to the shapes of the family's ``_draw_kernel_shapes`` (per-variable
vectors, per-category vectors, scalars, a matrix); :mod:`pymc_partition.numba_random` passes them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "draw_normal_inverse_gamma",
    "draw_normal_inverse_wishart",
    "draw_spike_slab",
    "draw_beta_bernoulli",
    "draw_dirichlet_categorical",
    "draw_gamma_poisson",
]


@njit(cache=True)
def _row_clusters(labels, item_index):
    """Cluster of every row, numbered ``0 .. C-1`` in label order, and ``C``."""
    n_labels = labels.max() + 1
    dense = np.full(n_labels, -1, dtype=np.int64)
    for i in range(labels.shape[0]):
        dense[labels[i]] = 0
    n_clusters = 0
    for c in range(n_labels):
        if dense[c] == 0:
            dense[c] = n_clusters
            n_clusters += 1
    rows = np.empty(item_index.shape[0], dtype=np.int64)
    for r in range(item_index.shape[0]):
        rows[r] = dense[labels[item_index[r]]]
    return rows, n_clusters


@njit(cache=True)
def _check_positive(x):
    if not np.all(x > 0.0):  # also catches NaN
        raise ValueError("A hyperparameter that must be positive is not; check its prior.")


@njit(cache=True)
def draw_normal_inverse_gamma(rng, labels, item_index, out, mu0, kappa0, alpha0, beta0):
    """``sigma2_v ~ InvGamma(alpha0, beta0)``, ``mu_v ~ N(mu0, sigma2_v / kappa0)``, rows ``N(mu, sigma2)``."""
    _check_positive(kappa0)
    _check_positive(alpha0)
    _check_positive(beta0)
    cluster, n_clusters = _row_clusters(labels, item_index)
    n_vars = out.shape[1]
    mean = np.empty((n_clusters, n_vars))
    sd = np.empty((n_clusters, n_vars))
    for c in range(n_clusters):
        for v in range(n_vars):
            sigma2 = beta0[v] / rng.gamma(alpha0[v], 1.0)
            mean[c, v] = mu0[v] + math.sqrt(sigma2 / kappa0[v]) * rng.standard_normal()
            sd[c, v] = math.sqrt(sigma2)
    for r in range(out.shape[0]):
        for v in range(n_vars):
            out[r, v] = mean[cluster[r], v] + sd[cluster[r], v] * rng.standard_normal()


@njit(cache=True)
def _cholesky(m):
    """Lower Cholesky factor of a small symmetric positive definite matrix."""
    n = m.shape[0]
    chol = np.zeros((n, n))
    for j in range(n):
        d = m[j, j] - np.sum(chol[j, :j] ** 2)
        if not d > 0.0:
            raise ValueError("psi0 is not positive definite; check its prior.")
        chol[j, j] = math.sqrt(d)
        for i in range(j + 1, n):
            chol[i, j] = (m[i, j] - np.sum(chol[i, :j] * chol[j, :j])) / chol[j, j]
    return chol


@njit(cache=True)
def _inverse_wishart_factor(rng, chol_psi, nu):
    """``L`` with ``L L^T ~ InvWishart(nu, psi)``, ``psi = chol_psi chol_psi^T`` (Bartlett).

    ``A A^T ~ Wishart(nu, I)`` for ``A`` lower triangular with ``A_ii^2 ~ chi2(nu - i)`` and
    standard normal ``A_ij`` below the diagonal, so ``chol_psi^{-T} A A^T chol_psi^{-1}`` is
    ``Wishart(nu, psi^{-1})`` and its inverse ``(chol_psi A^{-T}) (chol_psi A^{-T})^T`` is the draw.
    """
    n = chol_psi.shape[0]
    a = np.zeros((n, n))
    for i in range(n):
        a[i, i] = math.sqrt(2.0 * rng.gamma(0.5 * (nu - i), 1.0))
        for j in range(i):
            a[i, j] = rng.standard_normal()
    a_inv = np.zeros((n, n))  # forward substitution, column by column
    for j in range(n):
        a_inv[j, j] = 1.0 / a[j, j]
        for i in range(j + 1, n):
            a_inv[i, j] = -np.sum(a[i, j:i] * a_inv[j:i, j]) / a[i, i]
    factor = np.zeros((n, n))  # chol_psi a_inv^T, both triangular; loops: no BLAS to link
    for i in range(n):
        for j in range(n):
            for k in range(min(i, j) + 1):
                factor[i, j] += chol_psi[i, k] * a_inv[j, k]
    return factor


@njit(cache=True)
def _add_normal(rng, mean, factor, out):
    """``out = mean + factor z``, ``z`` standard normal."""
    n = mean.shape[0]
    z = np.empty(n)
    for k in range(n):
        z[k] = rng.standard_normal()
    for i in range(n):
        out[i] = mean[i] + np.sum(factor[i] * z)


@njit(cache=True)
def draw_normal_inverse_wishart(rng, labels, item_index, out, mu0, kappa0, nu0, psi0):
    """``Sigma ~ InvWishart(nu0, psi0)``, ``mu ~ N(mu0, Sigma / kappa0)``, rows ``N(mu, Sigma)``."""
    n_vars = out.shape[1]
    if not (kappa0 > 0.0 and nu0 > n_vars - 1):
        raise ValueError("kappa0 must be positive and nu0 > V - 1; check their priors.")
    chol_psi = _cholesky(psi0)
    cluster, n_clusters = _row_clusters(labels, item_index)
    mean = np.empty((n_clusters, n_vars))
    factor = np.empty((n_clusters, n_vars, n_vars))
    for c in range(n_clusters):
        factor[c] = _inverse_wishart_factor(rng, chol_psi, nu0)
        _add_normal(rng, mu0, factor[c] / math.sqrt(kappa0), mean[c])
    for r in range(out.shape[0]):
        _add_normal(rng, mean[cluster[r]], factor[cluster[r]], out[r])


@njit(cache=True)
def draw_spike_slab(rng, labels, item_index, out, mu, sigma2, sigma2_eta, sigma2_theta, p):
    """Draw ``y = mu + gamma theta + eta_item + eps`` from the spike-and-slab model.

    ``gamma ~ Bernoulli(p)``, ``theta ~ N(0, sigma2_theta)`` per cluster and variable, ``eta ~ N(0, sigma2_eta)`` per
    item and variable, ``eps ~ N(0, sigma2)``.
    """
    _check_positive(sigma2)
    _check_positive(sigma2_eta)
    _check_positive(sigma2_theta)
    _check_positive(p)
    _check_positive(1.0 - p)
    cluster, n_clusters = _row_clusters(labels, item_index)
    n_vars = out.shape[1]
    shift = np.zeros((n_clusters, n_vars))
    for c in range(n_clusters):
        for v in range(n_vars):
            if rng.random() < p[v]:
                shift[c, v] = math.sqrt(sigma2_theta[v]) * rng.standard_normal()
    eta = np.empty((labels.shape[0], n_vars))
    for i in range(labels.shape[0]):
        for v in range(n_vars):
            eta[i, v] = math.sqrt(sigma2_eta[v]) * rng.standard_normal()
    for r in range(out.shape[0]):
        for v in range(n_vars):
            eps = math.sqrt(sigma2[v]) * rng.standard_normal()
            out[r, v] = mu[v] + shift[cluster[r], v] + eta[item_index[r], v] + eps


@njit(cache=True)
def _draw_one_latent(rng, labels, item_index, out, a, b, poisson):
    """Draw Beta--Bernoulli (``poisson=False``) or Gamma--Poisson data.

    One latent per cluster and variable, ``theta ~ Beta(a, b)`` or ``lambda ~ Gamma(a, rate=b)``, then rows
    ``Bernoulli(theta)`` or ``Poisson(lambda)``.
    """
    _check_positive(a)
    _check_positive(b)
    cluster, n_clusters = _row_clusters(labels, item_index)
    n_vars = out.shape[1]
    latent = np.empty((n_clusters, n_vars))
    for c in range(n_clusters):
        for v in range(n_vars):
            latent[c, v] = rng.gamma(a[v], 1.0 / b[v]) if poisson else rng.beta(a[v], b[v])
    for r in range(out.shape[0]):
        for v in range(n_vars):
            x = latent[cluster[r], v]
            out[r, v] = rng.poisson(x) if poisson else (1.0 if rng.random() < x else 0.0)


@njit(cache=True)
def draw_beta_bernoulli(rng, labels, item_index, out, a, b):
    """``theta_v ~ Beta(a, b)`` per cluster, rows ``Bernoulli(theta)``."""
    _draw_one_latent(rng, labels, item_index, out, a, b, False)


@njit(cache=True)
def _log_gamma_variate(rng, shape):
    """``log G``, ``G ~ Gamma(shape, 1)``, without underflow for small shapes.

    ``G = G' U^(1/shape)`` with ``G' ~ Gamma(shape + 1, 1)``.
    """
    if shape >= 1.0:
        return math.log(rng.gamma(shape, 1.0))
    return math.log(rng.gamma(shape + 1.0, 1.0)) + math.log(rng.random()) / shape


@njit(cache=True)
def draw_dirichlet_categorical(rng, labels, item_index, out, alpha):
    """``pi_v ~ Dirichlet(alpha)`` per cluster, rows ``Categorical(pi)`` coded ``0 .. K-1``."""
    _check_positive(alpha)
    cluster, n_clusters = _row_clusters(labels, item_index)
    n_vars = out.shape[1]
    k = alpha.shape[0]
    cdf = np.empty((n_clusters, n_vars, k))
    log_w = np.empty(k)
    for c in range(n_clusters):
        for v in range(n_vars):
            for j in range(k):  # normalized in log space: tiny alpha makes every G underflow
                log_w[j] = _log_gamma_variate(rng, alpha[j])
            w = np.exp(log_w - np.max(log_w))
            cdf[c, v] = np.cumsum(w) / np.sum(w)
    for r in range(out.shape[0]):
        for v in range(n_vars):
            u = rng.random()
            row_cdf = cdf[cluster[r], v]
            j = 0
            while j < k - 1 and u >= row_cdf[j]:
                j += 1
            out[r, v] = j


@njit(cache=True)
def draw_gamma_poisson(rng, labels, item_index, out, a, b):
    """``lambda_v ~ Gamma(a, rate=b)`` per cluster, rows ``Poisson(lambda)``."""
    _draw_one_latent(rng, labels, item_index, out, a, b, True)
