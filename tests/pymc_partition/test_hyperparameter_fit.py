"""Empirical Bayes for every family (pmp.fit_hyperparameters)."""

from __future__ import annotations

import numpy as np
import pytest

import pymc_partition as pmp
from pymc_partition.datasets import simulate_spike_slab

RNG = np.random.default_rng(0)


def test_spike_slab_is_the_special_case():
    data = simulate_spike_slab(random_seed=1)
    ref = pmp.fit_spike_slab(data.values, data.item_index)
    start = dict(mu=0.0, sigma2=0.5, sigma2_eta=0.5, sigma2_theta=2.0, p=0.2)
    got = pmp.fit_hyperparameters(pmp.SpikeSlabNormal(**start), data.values, data.item_index)
    assert got.converged and got.log_likelihood == pytest.approx(ref.log_likelihood, rel=1e-12)
    for k, v in ref.estimates.items():
        assert got.estimates[k] == pytest.approx(v, rel=1e-7)
        assert got.std_errors[k] == pytest.approx(ref.std_errors[k], rel=1e-6)


def _brute_loglik(family, values, item_index, labels):
    stats = family.item_stats(values, item_index, labels.size)
    return sum(family.log_marginal_numpy(stats[labels == c].sum(axis=0)) for c in np.unique(labels))


TWO_GROUPS = np.concatenate([RNG.normal(-2, 1, (40, 2)), RNG.normal(2, 0.7, (40, 2))])
LABELS = np.repeat([0, 1], 20)
ITEMS = np.repeat(np.arange(40), 2)
CASES = {
    "nig": (pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), TWO_GROUPS, ITEMS, LABELS, None),
    "beta_bernoulli": (pmp.BetaBernoulli(1.0, 1.0),
                       (RNG.random((60, 3)) < RNG.beta(2, 5, (30, 1)).repeat(2, 0)).astype(float),
                       np.repeat(np.arange(30), 2), None, None),
    "gamma_poisson": (pmp.GammaPoisson(1.0, 1.0),
                      RNG.poisson(RNG.gamma(3.0, 1.0, (30, 1)).repeat(3, 0), (90, 2)).astype(float),
                      np.repeat(np.arange(30), 3), None, None),
    "dirichlet": (pmp.DirichletCategorical(np.ones(3)),
                  np.concatenate([RNG.choice(3, size=(6, 2), p=RNG.dirichlet([2.0, 1.0, 0.5]))
                                  for _ in range(30)]).astype(float),
                  np.repeat(np.arange(30), 6), None, None),
    "niw": (pmp.NormalInverseWishart(np.zeros(2), 1.0, 4.0, np.eye(2)), TWO_GROUPS[::2], None,
            np.repeat([0, 1], 20), ["mu0", "kappa0", "nu0"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_fit_is_a_maximum_with_observed_information_errors(case):
    family, values, item_index, labels, fit = CASES[case]
    res = pmp.fit_hyperparameters(family, values, item_index, labels=labels, fit=fit)
    assert res.converged
    n_items = int(np.max(item_index)) + 1 if item_index is not None else values.shape[0]
    labels = np.arange(n_items) if labels is None else labels
    item_index = np.arange(values.shape[0]) if item_index is None else item_index
    best = _brute_loglik(res.family, values, item_index, labels)
    assert best == pytest.approx(res.log_likelihood, rel=1e-10)
    # every coordinate: moving away lowers the log-likelihood, and the curvature there matches
    # the standard error (a 1-d check of the observed information, brute force)
    for k, est in res.estimates.items():
        est = np.atleast_1d(est)
        for e in range(est.size):
            h = 1e-3 * max(abs(est[e]), 1e-3)
            vals = []
            for sign in (-1, 1):
                moved = est.copy()
                moved[e] += sign * h
                vals.append(_brute_loglik(res.family.with_values(**{k: moved if moved.size > 1 else moved[0]}),
                                          values, item_index, labels))  # fmt: skip
            assert max(vals) <= best + 1e-9 * abs(best)
            curvature = (vals[0] + vals[1] - 2 * best) / h**2
            se = np.atleast_1d(res.std_errors[k])[e]
            # the marginal curvature bounds the conditional information: se >= 1/sqrt(-curvature)
            assert se >= (1 - 1e-4) / np.sqrt(-curvature)


def test_unidentified_and_bad_inputs():
    # refused before optimizing (tests/pymc_partition/test_identifiability.py): one row per singleton cluster
    with pytest.raises(pmp.UnidentifiedHyperparametersError, match="flat ridge"):
        pmp.fit_hyperparameters(pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), TWO_GROUPS)
    # found after it: one cluster draws its means once (here about equal for both variables),
    # so mu0 sits on them and kappa0 runs to infinity
    with pytest.raises(RuntimeError, match=r"boundary .* for \['kappa0'\]"):
        pmp.fit_hyperparameters(pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), TWO_GROUPS,
                                labels=np.zeros(80, dtype=int), fit=["mu0", "kappa0"])  # fmt: skip
    with pytest.raises(ValueError, match="cannot be fitted"):
        pmp.fit_hyperparameters(pmp.NormalInverseGamma(), TWO_GROUPS, fit=["sigma"])
    with pytest.raises(ValueError, match="labels"):
        pmp.fit_hyperparameters(pmp.NormalInverseGamma(), TWO_GROUPS, labels=[0, 1])
    with pytest.raises(TypeError, match="conjugate family"):
        pmp.fit_hyperparameters("NIG", TWO_GROUPS)
