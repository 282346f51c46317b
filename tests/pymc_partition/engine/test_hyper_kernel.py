"""The engine's updates of the parameters hanging off a partition (``engine.hyper``), without PyMC.

Each chain is checked against its exact target within 5 Monte Carlo standard errors (batch means
over 50 batches, which accounts for the autocorrelation), plus 1e-3 for the quadrature of the
target: a check a correct kernel fails with probability about 6e-7.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from pymc_partition.engine.compile import compile_density
from pymc_partition.engine.hyper import HyperparameterKernel
from pymc_partition.engine.kernels.hyper import cluster_sums

LABELS = np.array([0, 0, 1, 2, 2, 0, 1, 3], dtype=np.int64)  # 4 clusters of 8 items


def _batch_se(x, n_batches=50):
    means = np.asarray(x)[: len(x) // n_batches * n_batches].reshape(n_batches, -1).mean(axis=1)
    return means.std(ddof=1) / np.sqrt(n_batches)


def _chain(kernel, theta, n_draws, n_tune=500, rest=np.zeros(0)):
    out = np.empty((n_draws, theta.size))
    for s in range(n_tune + n_draws):
        theta, lp, _ = kernel.step(LABELS, theta, rest, s, tune=s < n_tune)
        if s >= n_tune:
            out[s - n_tune] = theta
    return out


@numba.njit
def _gaussian_and_gamma(theta, rest, S, sizes):
    """theta[1:3] ~ N(m, Sigma) with correlation 0.8 and m from the clusters' sums; theta[3] the
    log of a Gamma(C, 1) variable (C g - e^g: the density of x^(C-1) e^-x on the log scale,
    Jacobian included): a density that reads S, sizes and rest."""
    m0, m1 = S[:, 0].sum() / 8.0, rest[0]
    x, y = theta[1] - m0, theta[2] - m1
    quad = (x * x - 1.6 * x * y + y * y) / (1 - 0.64)
    g = theta[3]
    return (-0.5 * quad + sizes.shape[0] * g - np.exp(g),)


def test_slice_and_escobar_west_reach_their_exact_targets():
    X = np.arange(16, dtype=float).reshape(8, 2)
    kernel = HyperparameterKernel(compile_density(_gaussian_and_gamma), X, 4, slice_index=[1, 2, 3],
                                  escobar_west=[(0, 2.0, 1.0, 1.0)])  # fmt: skip
    draws = _chain(kernel, np.zeros(4), 20000, rest=np.array([-1.0]))
    m0 = X[:, 0].sum() / 8.0
    # slice coordinates: the Gaussian's means, variances, correlation; the Gamma's mean
    for j, mean in ((1, m0), (2, -1.0)):
        assert abs(draws[:, j].mean() - mean) < 5 * _batch_se(draws[:, j]) + 1e-3
        sq = (draws[:, j] - mean) ** 2
        assert abs(sq.mean() - 1.0) < 5 * _batch_se(sq) + 1e-3
    cross = (draws[:, 1] - m0) * (draws[:, 2] + 1.0)
    assert abs(cross.mean() - 0.8) < 5 * _batch_se(cross) + 1e-3
    g = np.exp(draws[:, 3])  # Gamma(C = 4, 1): mean 4
    assert abs(g.mean() - 4.0) < 5 * _batch_se(g) + 1e-3
    # Escobar-West: p(alpha | C = 4, n = 8) prop. to Gamma(2, 1) alpha^C Gamma(alpha)/Gamma(alpha + n)
    a = np.exp(draws[:, 0])
    grid = np.exp(np.linspace(-10, 4.5, 20001))
    logw = stats.gamma.logpdf(grid, 2.0) + 4 * np.log(grid) + gammaln(grid) - gammaln(grid + 8)
    w = np.exp(logw - logw.max()) * np.gradient(grid)
    w /= w.sum()
    assert abs(a.mean() - w @ grid) < 5 * _batch_se(a) + 1e-3
    for q in (0.1, 0.5, 0.9):
        ind = (a < np.interp(q, np.cumsum(w), grid)).astype(float)
        assert abs(ind.mean() - q) < 5 * _batch_se(ind) + 1e-3
    # the widths adapted during tuning only, away from their start
    assert not np.allclose(kernel.widths[1:], 1.0)


def test_escobar_west_on_the_natural_scale_and_without_slice_coordinates():
    kernel = HyperparameterKernel(None, np.ones((8, 1)), 1, escobar_west=[(0, 1.0, 0.5, 0.0)])
    draws = _chain(kernel, np.ones(1), 4000)[:, 0]
    assert np.all(draws > 0) and draws.std() > 0
    theta, lp, n = kernel.step(LABELS, np.ones(1), np.zeros(0), 1)
    assert np.isnan(lp) and n == 0


def test_cluster_sums_are_the_sums_per_cluster():
    X = np.random.default_rng(1).normal(size=(8, 3))
    S, sizes = cluster_sums(LABELS, X)
    assert np.array_equal(sizes, np.bincount(LABELS))
    assert np.allclose(S, np.stack([np.bincount(LABELS, weights=X[:, k]) for k in range(3)], axis=1))


def test_layout_errors_are_refused():
    with pytest.raises(ValueError, match="updated once"):
        HyperparameterKernel(None, np.ones((8, 1)), 2, slice_index=[0], escobar_west=[(0, 1.0, 1.0, 1.0)])
    with pytest.raises(ValueError, match="need a `density`"):
        HyperparameterKernel(None, np.ones((8, 1)), 2, slice_index=[1])
    with pytest.raises(ValueError, match="2-d"):
        HyperparameterKernel(None, np.ones(8), 1)


def test_slice_stays_put_when_nothing_else_has_support():
    """A density that is -inf away from the current value: the shrinkage ends on it."""

    @numba.njit
    def spike(theta, rest, S, sizes):
        return (0.0 if abs(theta[0] - 0.25) < 1e-13 else -np.inf,)

    kernel = HyperparameterKernel(compile_density(spike), np.ones((8, 1)), 1, slice_index=[0])
    theta, lp, n = kernel.step(LABELS, np.array([0.25]), np.zeros(0), 3)
    assert theta[0] == 0.25 and lp == 0.0 and n > 1
