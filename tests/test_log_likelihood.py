"""Pointwise log-likelihood per item: exact leave-one-out identity by enumeration, and az.loo."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy.special import logsumexp

import pymc_partition as pmp
from pymc_partition.log_likelihood import item_log_predictive
from pymc_partition.model_spec import partition_spec

from arviz_regen._containers import arviz_major, from_dict, group_names
from test_priors import all_partitions


def _loo_pointwise(idata):
    """Pointwise PSIS-LOO elpd: ``loo_i`` on ArviZ 0.x, ``elpd_i`` on ArviZ 1.x (arviz-stats)."""
    if arviz_major() >= 1:
        # arviz-stats refuses to fit the Pareto tail when its largest importance ratios are
        # exactly tied, which a small discrete posterior (few states, each drawn often) can
        # produce; ArviZ 0.x smoothed such tails. Known upstream limitation: an expected failure
        # when it happens, and the exactness checks run on ArviZ 1 whenever it does not.
        try:
            loo = az.loo(idata, pointwise=True)
        except ValueError as err:
            if "All tail values are the same" not in str(err):
                raise
            pytest.xfail("arviz-stats' PSIS refuses tied tails (small discrete posteriors)")
        return np.asarray(loo["elpd_i"])
    return np.asarray(az.loo(idata, pointwise=True)["loo_i"])


def _model(prior, family, data):
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=data.shape[0], prior=prior)
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=data)
    return model


def _log_evidence(spec, states, drop=None):
    """log p(y) (or log p(y_{-drop})) by enumeration; a cluster without data contributes 0."""
    stats = spec.item_stats.copy()
    out = np.empty(len(states))
    for r, z in enumerate(states):
        sizes = np.bincount(z)
        total = spec.log_g[sizes.size] + spec.log_h[sizes].sum()
        for c in range(sizes.size):
            members = [i for i in np.flatnonzero(z == c) if i != drop]
            if members:
                total += spec.family.log_marginal_numpy(stats[members].sum(axis=0))
        out[r] = total
    return logsumexp(out)


CASES = [
    (pmp.DirichletProcess(0.8), pmp.BetaBernoulli(1.0, 2.0),
     np.array([[1, 0, 1], [1, 1, 1], [0, 0, 1], [0, 1, 0], [1, 1, 0]], dtype=float)),
    (pmp.UniformMultinomialDirichlet(), pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0),
     np.array([0.1, 2.2, -0.3, 2.5, 0.0, 4.1])),
]  # fmt: skip


@pytest.mark.parametrize("prior, family, data", CASES)
def test_leave_one_out_identity_is_exact(prior, family, data):
    """E[1 / p(y_i | z, y_{c(i) - i}) | y] = 1 / p(y_i | y_{-i}) = p(y_{-i}) / p(y), by enumeration."""
    model = _model(prior, family, data)
    spec = partition_spec(model)
    states = all_partitions(spec.n_items)
    log_post = spec.log_posterior(states)
    log_post -= logsumexp(log_post)
    pointwise = item_log_predictive(states, spec.item_stats, spec.family.log_marginal_numpy)
    log_z = _log_evidence(spec, states)
    for i in range(spec.n_items):
        lhs = logsumexp(log_post - pointwise[:, i])
        rhs = _log_evidence(spec, states, drop=i) - log_z
        assert lhs == pytest.approx(rhs, abs=1e-10)


def test_compute_log_likelihood_feeds_az_loo():
    prior, family, data = CASES[0]
    model = _model(prior, family, data)
    with model:
        idata = pm.sample(draws=2000, tune=0, chains=2, cores=1, step=pmp.GibbsPartition([model["z"]]),
                          random_seed=4, progressbar=False, compute_convergence_checks=False)  # fmt: skip
    pmp.compute_log_likelihood(idata, model=model)
    ll = idata["log_likelihood"]["y"]
    assert ll.dims == ("chain", "draw", "z_dim_0") and ll.shape == (2, 2000, 5)
    assert np.isfinite(ll.values).all()
    assert _loo_pointwise(idata).shape == (5,)
    with pytest.raises(ValueError, match="not pmp.MarginalLikelihood"):
        pmp.compute_log_likelihood(idata, model=model, var_names=["nope"])


def test_psis_loo_matches_exact_leave_one_out():
    """iid draws from the exact posterior: PSIS-LOO within 5 Monte Carlo standard errors of the
    exact log p(y_i | y_{-i}); the standard error of log mean(1/p) is sd(w) / (mean(w) sqrt(n))."""
    prior, family, data = CASES[0]
    model = _model(prior, family, data)
    spec = partition_spec(model)
    states = all_partitions(spec.n_items)
    log_post = spec.log_posterior(states)
    prob = np.exp(log_post - logsumexp(log_post))
    n = 8000
    draws = states[np.random.default_rng(11).choice(len(states), size=n, p=prob)]
    idata = from_dict({"posterior": {"z": draws.reshape(2, n // 2, -1)}})
    pmp.compute_log_likelihood(idata, model=model)
    loo_i = _loo_pointwise(idata)
    pointwise = item_log_predictive(states, spec.item_stats, spec.family.log_marginal_numpy)
    log_z = _log_evidence(spec, states)
    for i in range(spec.n_items):
        exact = log_z - _log_evidence(spec, states, drop=i)
        w = np.exp(-pointwise[:, i])
        mean = prob @ w
        se = np.sqrt(prob @ (w - mean) ** 2) / mean / np.sqrt(n)
        assert abs(loo_i[i] - exact) < 5 * se + 1e-3, (i, loo_i[i], exact, se)


def test_loglik_refuses_posterior_with_other_item_count():
    """Draws of 14 items against a 10-item model: refused (a reshape to 10 columns would mix
    draws and return a log-likelihood of the wrong shape without a word)."""
    rng = np.random.default_rng(0)
    model = _model(pmp.DirichletProcess(1.0), pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), rng.normal(size=10))
    draws = rng.integers(0, 3, size=(2, 50, 14))
    idata = from_dict({"posterior": {"z": draws}})
    with pytest.raises(ValueError, match="has 14 items, the model's 10"):
        pmp.compute_log_likelihood(idata, model=model)
    assert "log_likelihood" not in group_names(idata)
