"""The families' numba draw kernels (PyTensor's numba backend) against the closed-form predictive.

Data are drawn given the partition ``[0, 0, 1]`` of three items with four rows (item 0 has two),
through ``MarginalLikelihoodRV`` compiled for numba and, as the reference, for the Python VM
(``rng_fn``, the families' numpy draws). Both must have the closed-form means and covariances of
``p(y | z)``: rows of one item, rows of one cluster and rows of different clusters covary
differently. The tolerance is five Monte Carlo standard errors, estimated from the draws.
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.pytensorf import compile as compile_pymc
from pytensor.graph.replace import clone_replace
from scipy import stats as sps

import pymc_partition as pmp

LABELS = np.array([0, 0, 1])
ITEM_INDEX = np.array([0, 0, 1, 2])
SAME_ITEM = ITEM_INDEX[:, None] == ITEM_INDEX[None, :]
SAME_CLUSTER = LABELS[ITEM_INDEX][:, None] == LABELS[ITEM_INDEX][None, :]
MODES = ["NUMBA", "FAST_COMPILE"]  # FAST_COMPILE runs rng_fn: the reference


def _row_structure(total, same_item, same_cluster):
    """Covariance of one variable over the four rows."""
    between = np.where(SAME_ITEM, same_item, np.where(SAME_CLUSTER, same_cluster, 0.0))
    return np.where(np.eye(4, dtype=bool), total, between)


def _independent_vars(mean, total, same_item, same_cluster):
    """Flattened ``(row, variable)`` mean and covariance for variables independent given ``z``."""
    n_vars = len(mean)
    cov = np.zeros((4, n_vars, 4, n_vars))
    for v in range(n_vars):
        cov[:, v, :, v] = _row_structure(total[v], same_item[v], same_cluster[v])
    return np.tile(mean, 4), cov.reshape(4 * n_vars, 4 * n_vars)


def _nig():
    mu0, kappa0, alpha0, beta0 = np.array([0.5, -1.0]), 2.0, 4.5, np.array([1.5, 0.7])
    e_sigma2 = beta0 / (alpha0 - 1)
    family = pmp.NormalInverseGamma(mu0, kappa0, alpha0, beta0)
    return family, *_independent_vars(mu0, e_sigma2 * (1 + 1 / kappa0), e_sigma2 / kappa0, e_sigma2 / kappa0)


def _niw():
    mu0, kappa0, nu0 = np.array([1.0, -1.0]), 2.0, 9.0
    psi0 = np.array([[2.0, 0.5], [0.5, 1.0]])
    e_sigma = psi0 / (nu0 - 2 - 1)
    cov = np.kron(_row_structure(1 + 1 / kappa0, 1 / kappa0, 1 / kappa0), e_sigma)
    return pmp.NormalInverseWishart(mu0, kappa0, nu0, psi0), np.tile(mu0, 4), cov


def _spike_slab():
    mu, sigma2, sigma2_eta, sigma2_theta, p = 0.3, 0.5, 0.2, 2.0, 0.3
    slab = np.full(2, p * sigma2_theta)
    family = pmp.SpikeSlabNormal(mu, sigma2, sigma2_eta, sigma2_theta, p)
    return family, *_independent_vars(np.full(2, mu), sigma2 + sigma2_eta + slab, sigma2_eta + slab, slab)


def _beta_bernoulli():
    a, b = np.array([0.7, 2.0]), np.array([1.8, 0.5])
    m = a / (a + b)
    var_theta = a * b / ((a + b) ** 2 * (a + b + 1))
    return pmp.BetaBernoulli(a, b), *_independent_vars(m, m * (1 - m), var_theta, var_theta)


def _gamma_poisson():
    a, b = np.array([2.0, 0.5]), np.array([1.5, 0.25])
    return pmp.GammaPoisson(a, b), *_independent_vars(a / b, a / b + a / b**2, a / b**2, a / b**2)


def _dirichlet_categorical():
    alpha = np.array([0.5, 1.0, 2.0])
    total, k = alpha.sum(), np.arange(3.0)
    mean = k @ alpha / total
    cov_pi = (np.diag(alpha) * total - np.outer(alpha, alpha)) / (total**2 * (total + 1))
    var_y, var_mean = (k**2) @ alpha / total - mean**2, k @ cov_pi @ k
    family = pmp.DirichletCategorical(alpha)
    return family, *_independent_vars(*(np.full(2, x) for x in (mean, var_y, var_mean, var_mean)))


FAMILIES = {
    "normal_inverse_gamma": _nig, "normal_inverse_wishart": _niw, "spike_slab": _spike_slab,
    "beta_bernoulli": _beta_bernoulli, "gamma_poisson": _gamma_poisson,
    "dirichlet_categorical": _dirichlet_categorical,
}  # fmt: skip


def _data_graph(family, n_vars=2):
    """``y`` given ``z = LABELS``: the MarginalLikelihoodRV with the labels as a constant."""
    observed = np.zeros((ITEM_INDEX.size, n_vars))  # a valid value for every family
    z = pmp.Partition.dist(n_items=3, prior=pmp.UniformPartition())
    y = pmp.MarginalLikelihood.dist(partition=z, family=family, observed_values=observed, item_index=ITEM_INDEX)
    return clone_replace(y, {z: pt.as_tensor_variable(LABELS)})


def _draws(family, mode, n_draws, seed):
    return pm.draw(_data_graph(family), draws=n_draws, random_seed=seed, mode=mode).reshape(n_draws, -1)


#: draws per mode: the numba kernel's are cheap; the reference's cost a Python call each (and
#: for the normal-inverse-Wishart a scipy ``invwishart`` draw per cluster: 0.45 ms a draw), so
#: it draws 5,000. Both tests' tolerances are in Monte Carlo units of the sample they read (five
#: standard errors; the KS statistic's null distribution), so the false-alarm rate is unchanged;
#: what a quarter of the draws costs is resolution: the reference's moments are checked to
#: 5 sd / sqrt(5,000) = 0.071 sd instead of 0.035 sd, and the KS test's effective sample size
#: 20,000 * 5,000 / 25,000 = 4,000 (was 10,000) detects CDF gaps of about 2.2 / sqrt(4,000) =
#: 0.035 (was 0.022) at its level (1e-3 over 8 columns: sqrt(-ln(1.25e-4 / 2) / 2) = 2.2).
N_DRAWS = {"NUMBA": 20_000, "FAST_COMPILE": 5_000}


@functools.cache
def _family_draws(name, mode):
    """``N_DRAWS[mode]`` draws of one family in one mode, shared by the moment and the two-sample
    tests (each mode its own seed: the two samples are independent)."""
    return _draws(FAMILIES[name]()[0], mode, N_DRAWS[mode], seed=len(name) + 100 * MODES.index(mode))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(FAMILIES))
def test_draws_have_the_closed_form_moments(name, mode):
    _, mean, cov = FAMILIES[name]()
    y = _family_draws(name, mode)
    n = y.shape[0]
    assert np.all(np.abs(y.mean(axis=0) - mean) < 5 * np.sqrt(np.diag(cov) / n))
    centred = y - mean
    products = centred[:, :, None] * centred[:, None, :]
    se = products.std(axis=0) / np.sqrt(n)
    assert np.all(np.abs(products.mean(axis=0) - cov) < 5 * se + 1e-12), name


@pytest.mark.parametrize("name", list(FAMILIES))
def test_numba_draws_match_the_reference_draws(name):
    """Two-sample Kolmogorov-Smirnov test of every (row, variable) between the numba kernel and
    the numpy reference (conservative for the discrete families), Bonferroni over the columns,
    on the moment tests' draws."""
    fast, reference = _family_draws(name, "NUMBA"), _family_draws(name, "FAST_COMPILE")
    p_values = [sps.ks_2samp(fast[:, j], reference[:, j], method="asymp").pvalue for j in range(fast.shape[1])]
    assert min(p_values) * len(p_values) > 1e-3


def _compiled(family, inputs, seed):
    return compile_pymc(inputs, _data_graph(family), random_seed=seed, mode="NUMBA")


RANDOM = [
    ("spike_slab", {"sigma2_theta": (pt.dscalar("s"), 1.7)}),
    ("normal_inverse_gamma", {"mu0": (pt.dvector("m", shape=(2,)), [0.2, -0.4])}),
    ("normal_inverse_wishart", {"kappa0": (pt.dscalar("k"), 1.5),
                                "psi0": (pt.dmatrix("psi", shape=(2, 2)), [[1.5, 0.3], [0.3, 0.8]])}),
    ("dirichlet_categorical", {"alpha": (pt.dvector("a", shape=(3,)), [0.3, 0.6, 1.2])}),
    ("gamma_poisson", {"a": (pt.dscalar("a"), 2.0)}),  # a scalar for a vector: broadcast
]  # fmt: skip


@pytest.mark.parametrize("name, random", RANDOM, ids=[r[0] for r in RANDOM])
def test_random_hyperparameters_reach_the_kernel(name, random):
    """Hyperparameters that are graph inputs (scalars, vectors, a matrix; broadcast as the
    constants are): the same draws as the family with those numbers, from the same seed."""
    values = {k: np.asarray(v, dtype=float) for k, (_, v) in random.items()}
    fixed = FAMILIES[name]()[0].with_values(**values)
    symbolic = type(fixed)(**{k: random[k][0] if k in random else getattr(fixed, k) for k in fixed._param_names})
    got = _compiled(symbolic, [var for var, _ in random.values()], 7)
    want = _compiled(fixed, [], 7)
    for _ in range(3):
        np.testing.assert_array_equal(got(*values.values()), want())


def test_numba_draws_with_tiny_dirichlet_concentration():
    """alpha = 0.01: the cluster's category probabilities are normalized in log space (every
    gamma variate underflows to 0 otherwise); nearly all rows of a cluster share one category."""
    y = _draws(pmp.DirichletCategorical(0.01, n_categories=4), "NUMBA", 2_000, 3).reshape(-1, 4, 2)
    assert np.isin(y, [0.0, 1.0, 2.0, 3.0]).all()
    same = (y[:, 0] == y[:, 1]) & (y[:, 1] == y[:, 2])  # the three rows of cluster 0
    assert same.mean() > 0.9


def test_numba_draws_reject_hyperparameters_outside_their_domain():
    s = pt.dscalar("s")
    draw = _compiled(pmp.SpikeSlabNormal(0.0, 1.0, 1.0, s, 0.5), [s], 1)
    assert np.isfinite(draw(1.0)).all()
    with pytest.raises(ValueError, match="positive"):
        draw(-1.0)
