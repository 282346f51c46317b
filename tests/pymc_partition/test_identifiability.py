"""What an allocation identifies (pymc_partition.identifiability), checked before a fit.

The module's claims are proven here first: with one row per cluster the marginal likelihood is
that of one row's prior predictive (scipy's Student t, Bernoulli, categorical), and the ridges it
names leave the likelihood unchanged; then ``fit_hyperparameters`` must refuse those fits without
optimizing (``maximize`` replaced by a function that fails the test) and warn about the rest.
"""

import warnings

import numpy as np
import pytest
from scipy import stats

import pymc_partition as pmp
from pymc_partition import hyperparameter_fit
from pymc_partition.identifiability import IdentifiabilityWarning, UnidentifiedHyperparametersError

RNG = np.random.default_rng(3)
Y = np.concatenate([RNG.normal(-2, 1, (15, 2)), RNG.normal(2, 0.7, (15, 2))])
PAIRS = np.repeat(np.arange(15), 2)  # an allocation with clusters of two rows


def _loglik(family, values, labels=None, item_index=None):
    stats_ = family.item_stats(values, item_index)
    labels = np.arange(stats_.shape[0]) if labels is None else labels
    return float(sum(family.log_marginal_numpy(stats_[labels == c].sum(0)) for c in np.unique(labels)))


def test_one_row_predictives_are_the_documented_distributions():
    mu0, kappa0, alpha0, beta0 = np.array([0.3, -0.5]), 0.7, 2.2, 1.9
    nig = pmp.NormalInverseGamma(mu0, kappa0, alpha0, beta0)
    t = stats.t(df=2 * alpha0, loc=mu0, scale=np.sqrt(beta0 * (1 + 1 / kappa0) / alpha0))
    assert _loglik(nig, Y) == pytest.approx(t.logpdf(Y).sum(), rel=1e-10)

    psi0, nu0 = np.array([[1.5, 0.4], [0.4, 0.8]]), 3.4
    niw = pmp.NormalInverseWishart(mu0, kappa0, nu0, psi0)
    dof = nu0 - 2 + 1
    mvt = stats.multivariate_t(loc=mu0, shape=psi0 * (1 + 1 / kappa0) / dof, df=dof)
    assert _loglik(niw, Y) == pytest.approx(mvt.logpdf(Y).sum(), rel=1e-10)

    bits = (Y > 0).astype(float)
    bb = pmp.BetaBernoulli(1.3, 0.6)
    assert _loglik(bb, bits) == pytest.approx(stats.bernoulli(1.3 / 1.9).logpmf(bits).sum(), rel=1e-12)

    cats = np.digitize(Y, [-1.0, 1.0]).astype(float)
    alpha = np.array([0.5, 2.0, 1.5])
    dc = pmp.DirichletCategorical(alpha)
    assert _loglik(dc, cats) == pytest.approx(np.log(alpha / alpha.sum())[cats.astype(int)].sum(), rel=1e-12)


def test_the_ridges_are_flat_with_one_row_per_cluster_and_not_with_two():
    nig = pmp.NormalInverseGamma(0.0, 0.5, 2.0, 1.0)  # beta0 (1 + 1/kappa0) = 3
    same = nig.with_values(kappa0=2.0, beta0=2.0)  # 2.0 * 1.5 = 3
    assert _loglik(same, Y) == pytest.approx(_loglik(nig, Y), rel=1e-12)
    assert abs(_loglik(same, Y, PAIRS) - _loglik(nig, Y, PAIRS)) > 1.0
    bb, bits = pmp.BetaBernoulli(1.0, 2.0), (Y > 0).astype(float)
    assert _loglik(bb.with_values(a=5.0, b=10.0), bits) == pytest.approx(_loglik(bb, bits), rel=1e-12)
    assert abs(_loglik(bb.with_values(a=5.0, b=10.0), bits, PAIRS) - _loglik(bb, bits, PAIRS)) > 0.1
    # the spike-and-slab with one row per item: only sigma2 + sigma2_eta, whatever the allocation
    ss = pmp.SpikeSlabNormal(0.0, 0.4, 0.6, 2.0, 0.3)
    moved = ss.with_values(sigma2=0.9, sigma2_eta=0.1)
    for labels in (None, PAIRS, np.zeros(30, int)):
        assert _loglik(moved, Y, labels) == pytest.approx(_loglik(ss, Y, labels), rel=1e-12)


@pytest.fixture
def no_optimizing(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the fit optimized: the check came too late")

    # the objective is compiled before the optimization: refused before both
    monkeypatch.setattr(hyperparameter_fit, "python_function", fail)
    monkeypatch.setattr(hyperparameter_fit, "maximize", fail)


REFUSED = {
    "nig ridge": (pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), Y, None, None, "flat ridge"),
    "nig tails": (pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), Y, None, ["mu0", "kappa0", "alpha0"], "tail weight"),
    "niw default": (pmp.NormalInverseWishart(np.zeros(2), 1.0, 4.0, np.eye(2)), Y, None, None, "tail weight"),
    "beta-bernoulli": (pmp.BetaBernoulli(1.0, 1.0), (Y > 0).astype(float), None, None, "flat ridge"),
    "dirichlet": (pmp.DirichletCategorical(np.ones(3)), np.digitize(Y, [-1.0, 1.0]).astype(float), None, None, "total"),
    "spike-slab": (pmp.SpikeSlabNormal(0.0, 0.4, 0.6, 2.0, 0.3), Y, None, None, "only through their sum"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_before_optimizing(case, no_optimizing):
    family, values, item_index, fit, match = REFUSED[case]
    with pytest.raises(UnidentifiedHyperparametersError, match=match):
        pmp.fit_hyperparameters(family, values, item_index, fit=fit)


def test_spread_alone_warns_and_fits():
    fam = pmp.NormalInverseGamma(0.0, 1.0, 3.0, 0.2)
    with pytest.warns(IdentifiabilityWarning, match="one cluster as wide as the data.*from_data"):
        res = pmp.fit_hyperparameters(fam, Y, fit=["kappa0"])
    assert res.converged
    # what was fitted is one row's predictive, as the warning says: the squared scale
    # beta0 (1 + 1/kappa0) / alpha0 of the Student t is scipy's maximum-likelihood scale of a
    # t (6 dof, location 0) for the pooled rows, found independently
    from scipy.optimize import minimize_scalar

    best = minimize_scalar(lambda log_s2: -stats.t.logpdf(Y, df=6.0, scale=np.exp(0.5 * log_s2)).sum(),
                           bracket=(-2.0, 2.0), tol=1e-12).x  # fmt: skip
    assert 0.2 * (1 + 1 / res.estimates["kappa0"]) / 3.0 == pytest.approx(np.exp(best), rel=1e-5)


class Reached(Exception):
    pass


@pytest.fixture
def reaching(monkeypatch):
    """The objective's compilation replaced by a function raising ``Reached``: the checks passed
    (and nothing slow runs)."""

    def reached(*args, **kwargs):
        raise Reached

    monkeypatch.setattr(hyperparameter_fit, "python_function", reached)


ACCEPTED = {
    "labels": (pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), Y, None, np.repeat([0, 1], 15), ["kappa0", "beta0"]),
    "niw labels": (pmp.NormalInverseWishart(np.zeros(2), 1.0, 4.0, np.eye(2)), Y, None, PAIRS, None),
    # replicate rows give clusters of several rows too (items = pairs of rows)
    "replicates": (pmp.BetaBernoulli(1.0, 1.0), (Y > 0).astype(float), PAIRS, None, None),
    "spike-slab replicates": (pmp.SpikeSlabNormal(0.0, 0.4, 0.6, 2.0, 0.3), Y, PAIRS, None, None),
    # the negative binomial of one count is identified: nothing to refuse
    "gamma-poisson": (pmp.GammaPoisson(1.0, 1.0), RNG.poisson(3.0, (40, 2)).astype(float), None, None, None),
    "location only": (pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), Y, None, None, ["mu0"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_identified_fits_go_ahead_without_a_warning(case, reaching):
    family, values, item_index, labels, fit = ACCEPTED[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)
        with pytest.raises(Reached):
            pmp.fit_hyperparameters(family, values, item_index, labels=labels, fit=fit)
