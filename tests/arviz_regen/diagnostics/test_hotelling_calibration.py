"""Calibration, power and coverage of arviz_regen by simulation from a known target.

Each chain is a replicate (one InferenceData with many chains keeps the tests fast). Fixed seeds;
thresholds follow from the Monte-Carlo error: Kolmogorov–Smirnov p-values > 0.01 for uniformity,
binomial tolerance (3 standard deviations) for the coverage of 95% intervals.
"""

import warnings

import numpy as np
import pytest
from scipy import stats

import arviz_regen
from arviz_regen.testing import iid_chain, make_idata, metropolis_chain, random_partitions, zipf_probs

N_ITEMS = 6


@pytest.fixture(scope="module")
def universe():
    rng = np.random.default_rng(2019)
    states = random_partitions(8, N_ITEMS, rng)
    probs = np.array([0.3, 0.2, 0.15, 0.12, 0.09, 0.07, 0.04, 0.03])
    return states, probs


def _ks_uniform(p):
    p = np.asarray(p).ravel()
    assert np.all(np.isfinite(p))
    return stats.kstest(p, "uniform").pvalue


def test_iid_draws_give_uniform_p_values(universe):
    states, probs = universe
    idx = iid_chain(probs, 300, 2000, np.random.default_rng(1))
    # unnormalized: the test only uses ratios of exp(partition_logp)
    idata = make_idata(states, idx, np.log(probs), logp_shift=-57.0)
    ds = arviz_regen.hotelling_rs(idata, k=[2, 3, 5], method="chi2", n_bootstrap=99)
    assert (ds.df.values == np.array([1, 2, 4])).all()
    for K in (2, 3, 5):
        assert _ks_uniform(ds.p_value.sel(k=K).values) > 0.01
    # the normalizing constant estimate: true log Z = 0 - 57 (probs sum to one)
    np.testing.assert_allclose(np.median(ds.log_z.values), -57.0, atol=0.01)


def test_sticky_reversible_chain_gives_uniform_p_values(universe):
    states, probs = universe
    idx = metropolis_chain(probs, 150, 20_000, np.random.default_rng(2), stay=0.8, max_step=2)
    # sticky: the lag-1 autocorrelation of the state indicator of the top state is large
    top = (idx == 0).astype(float)
    ac = np.mean([np.corrcoef(row[:-1], row[1:])[0, 1] for row in top[:20]])
    assert ac > 0.5
    idata = make_idata(states, idx, np.log(probs))
    ds = arviz_regen.hotelling_rs(idata, k=[3, 5], method="chi2", n_bootstrap=99)
    for K in (3, 5):
        assert _ks_uniform(ds.p_value.sel(k=K).values) > 0.01


def test_wrong_relative_frequencies_give_tiny_p_values(universe):
    states, probs = universe
    wrong = probs.copy()
    wrong[[1, 2]] = wrong[[2, 1]]  # the chain visits states 1 and 2 in swapped proportions
    idx = iid_chain(wrong, 4, 5000, np.random.default_rng(3))
    idata = make_idata(states, idx, np.log(probs))
    # K = 8 is every state: counts add up to the tour length, one state is dependent (warned)
    with pytest.warns(UserWarning, match="singular"):
        ds = arviz_regen.hotelling_rs(idata, k=[3, 5, 8], method="chi2", n_bootstrap=99)
    assert np.all(ds.df.sel(k=8).values == 6)
    # power, not calibration: T² of 37-167 on 6 degrees of freedom (a correct chain reaches
    # p < 1e-5 with probability 1e-5)
    assert np.all(ds.p_value.values < 1e-5)
    # and a sticky chain that has not mixed: started in a low-probability state, short run
    idx = metropolis_chain(probs, 4, 400, np.random.default_rng(4), stay=0.97, max_step=1, start=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds2 = arviz_regen.hotelling_rs(make_idata(states, idx, np.log(probs)), k=3, method="chi2", n_bootstrap=99)
    assert np.nanmax(ds2.p_value.values) < 0.05 or np.all(ds2.df.values < 2)


def test_power_grows_along_iterations(universe):
    states, probs = universe
    wrong = probs.copy()
    wrong[[0, 3]] = wrong[[0, 3]] * np.array([0.8, 1.6])
    idx = iid_chain(wrong / wrong.sum(), 2, 20_000, np.random.default_rng(5))
    ds = arviz_regen.hotelling_rs(
        make_idata(states, idx, np.log(probs)), k=5, cumulative="lookahead", method="chi2", n_bootstrap=99
    )
    early = ds.p_value.isel(draw=200).values
    late = ds.p_value.isel(draw=-1).values
    assert np.all(late < 1e-6) and np.all(late <= early)


def _coverage_tolerance(n):
    return 3 * np.sqrt(0.95 * 0.05 / n)


def test_rs_standard_errors_cover_true_value(universe):
    states, probs = universe
    n_rep = 400
    idx = metropolis_chain(probs, n_rep, 4000, np.random.default_rng(6), stay=0.6, max_step=2)
    idata = make_idata(states, idx, np.log(probs))
    # a function of the state: number of clusters
    nclus = states.max(axis=1) + 1
    truth = probs @ nclus
    ds = arviz_regen.rs_estimate(idata, lambda lab: lab.max(axis=-1) + 1)
    covered = np.abs(ds.estimate.values - truth) <= 1.96 * ds.se.values
    assert abs(covered.mean() - 0.95) < _coverage_tolerance(n_rep)
    # co-clustering probabilities: coverage of two pairs with ρ away from 0 and 1
    same = (states[:, :, None] == states[:, None, :]).astype(float)
    rho = np.einsum("s,sij->ij", probs, same)
    iu, ju = np.triu_indices(N_ITEMS, 1)
    pairs = np.argsort(np.abs(rho[iu, ju] - 0.5))[:2]
    cc = arviz_regen.coclustering(idata)
    for p in pairs:
        i, j = iu[p], ju[p]
        est = cc.rho.values[:, i, j]
        se = cc.se.values[:, i, j]
        covered = np.abs(est - rho[i, j]) <= 1.96 * se
        assert abs(covered.mean() - 0.95) < _coverage_tolerance(n_rep)


def test_top_state_probabilities_cover_truth(universe):
    states, probs = universe
    idx = iid_chain(probs, 300, 1500, np.random.default_rng(7))
    ds = arviz_regen.top_states(make_idata(states, idx, np.log(probs) + 3.0), k=4)
    np.testing.assert_array_equal(ds.labels.values, states[:4])
    covered = np.abs(ds.probability.values - probs[:4]) <= 1.96 * ds.se.values
    assert abs(covered.mean() - 0.95) < _coverage_tolerance(covered.size)
    np.testing.assert_allclose(ds.logp_probability.values, probs[:4], rtol=0.02)


def test_large_state_space_uses_zipf_universe():
    rng = np.random.default_rng(8)
    states = random_partitions(60, 14, rng)
    probs = zipf_probs(60, 1.3)
    idx = metropolis_chain(probs, 60, 10_000, rng, stay=0.5, max_step=4)
    ds = arviz_regen.hotelling_rs(make_idata(states, idx, np.log(probs)), k=[2, 10], method="chi2", n_bootstrap=99)
    assert _ks_uniform(ds.p_value.values) > 0.01
