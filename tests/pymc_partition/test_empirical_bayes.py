"""Tests of pymc_partition.empirical_bayes (SPEC section 3, paper section 4.1)."""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from pymc_partition.datasets import simulate_spike_slab
from pymc_partition.empirical_bayes import SpikeSlabFit, fit_spike_slab, spike_slab_eb_loglik
from pymc_partition.families.spike_slab import SpikeSlabNormal
from pymc_partition.paper.comparison import compare_eb
from pymc_partition.paper.constants import EB_HYPERPARAMETERS, EB_TABLE

NAMES = ("mu", "sigma2", "sigma2_eta", "sigma2_theta", "p")


@pytest.fixture(scope="module")
def fit(arabidopsis):
    return fit_spike_slab(arabidopsis.values, arabidopsis.item_index)


def brute_force_loglik(values, item_index, mu, sigma2, sigma2_eta, sigma2_theta, p):
    """All-singletons log-likelihood: per item and variable, the replicate rows are a two-component
    multivariate normal mixture (slab off / on), summed over items and variables."""
    total = 0.0
    for i in np.unique(item_index):
        y = values[item_index == i]  # (r, V)
        r = y.shape[0]
        J = np.ones((r, r))
        cov0 = sigma2 * np.eye(r) + sigma2_eta * J
        cov1 = cov0 + sigma2_theta * J
        mean = np.full(r, mu)
        for v in range(y.shape[1]):
            total += logsumexp(
                [
                    np.log1p(-p) + multivariate_normal.logpdf(y[:, v], mean, cov0),
                    np.log(p) + multivariate_normal.logpdf(y[:, v], mean, cov1),
                ]
            )
    return total


# ---------------------------------------------------------------------- the paper's table


@pytest.mark.parametrize("name", NAMES)
def test_agrees_with_paper_to_printed_digits(fit, name):
    paper_est, paper_se = EB_TABLE[name]
    dec = lambda s: len(s.split(".")[1])  # noqa: E731
    assert round(fit.estimates[name], dec(paper_est)) == pytest.approx(float(paper_est), abs=1e-12)
    assert round(fit.std_errors[name], dec(paper_se)) == pytest.approx(float(paper_se), abs=1e-12)


def test_compare_with_paper(fit):
    cmp = compare_eb(fit)
    assert cmp.all_agree
    text = str(cmp)
    for name in NAMES:
        assert name in text
    assert "0.083 (0.03)" in text and "5.1 (2.7)" in text
    assert "NO" not in text


def test_fit_object(fit):
    assert isinstance(fit, SpikeSlabFit)
    assert fit.converged
    assert set(fit.estimates) == set(NAMES) == set(fit.std_errors)
    assert all(type(v) is float for v in fit.estimates.values())
    assert all(type(v) is float for v in fit.std_errors.values())
    fam = fit.family()
    assert isinstance(fam, SpikeSlabNormal)
    assert fam.sigma2_theta == fit.estimates["sigma2_theta"]
    text = repr(fit)
    assert "sigma2_eta" in text and "log-likelihood" in text and text == fit.table()
    assert (fit.n_items, fit.n_rows, fit.n_vars) == (14, 55, 43)
    with pytest.raises(AttributeError):
        fit.converged = False  # frozen


# ---------------------------------------------------------------------- a true optimum


def test_true_optimum(fit, arabidopsis):
    assert np.max(np.abs(fit.gradient)) < 1e-6
    eig = np.linalg.eigvalsh(-fit.hessian)
    assert np.all(eig > 0)
    # nearby points on the transformed scale are worse
    x = np.array(list(fit.transformed.values()))
    rng = np.random.default_rng(0)
    for _ in range(5):
        y = x + 1e-2 * rng.standard_normal(5)
        pt = dict(
            mu=y[0], sigma2=np.exp(y[1]), sigma2_eta=np.exp(y[2]), sigma2_theta=np.exp(y[3]), p=1 / (1 + np.exp(-y[4]))
        )
        assert fit.log_likelihood > spike_slab_eb_loglik(arabidopsis.values, arabidopsis.item_index, **pt)


def test_standard_errors_delta_method(fit):
    cov = fit.covariance
    np.testing.assert_allclose(cov, np.linalg.inv(-fit.hessian))
    sd = np.sqrt(np.diag(cov))
    e = fit.estimates
    np.testing.assert_allclose(
        [fit.std_errors[k] for k in NAMES],
        [sd[0], sd[1] * e["sigma2"], sd[2] * e["sigma2_eta"], sd[3] * e["sigma2_theta"], sd[4] * e["p"] * (1 - e["p"])],
    )


def test_hessian_matches_finite_differences(fit, arabidopsis):
    x = np.array(list(fit.transformed.values()))

    def ll(y):
        return spike_slab_eb_loglik(
            arabidopsis.values,
            arabidopsis.item_index,
            mu=y[0],
            sigma2=np.exp(y[1]),
            sigma2_eta=np.exp(y[2]),
            sigma2_theta=np.exp(y[3]),
            p=1 / (1 + np.exp(-y[4])),
        )

    h = 1e-3
    H = np.empty((5, 5))
    for i in range(5):
        for j in range(5):
            ei, ej = np.eye(5)[i] * h, np.eye(5)[j] * h
            H[i, j] = (ll(x + ei + ej) - ll(x + ei - ej) - ll(x - ei + ej) + ll(x - ei - ej)) / (4 * h * h)
    np.testing.assert_allclose(H, fit.hessian, rtol=1e-3, atol=1e-2)


def test_loglik_matches_brute_force(fit, arabidopsis):
    d = arabidopsis
    bf = brute_force_loglik(d.values, d.item_index, **fit.estimates)
    assert fit.log_likelihood == pytest.approx(bf, rel=1e-10)
    other = dict(mu=-0.2, sigma2=0.3, sigma2_eta=0.1, sigma2_theta=1.5, p=0.4)
    assert spike_slab_eb_loglik(d.values, d.item_index, **other) == pytest.approx(
        brute_force_loglik(d.values, d.item_index, **other), rel=1e-10
    )


def test_other_start_same_optimum(fit, arabidopsis):
    other = fit_spike_slab(
        arabidopsis.values,
        arabidopsis.item_index,
        start=dict(mu=0.0, sigma2=1.0, sigma2_eta=1.0, sigma2_theta=1.0, p=0.3),
    )
    for k in NAMES:
        assert other.estimates[k] == pytest.approx(fit.estimates[k], rel=1e-6, abs=1e-9)
    assert other.log_likelihood == pytest.approx(fit.log_likelihood, rel=1e-12)


# ---------------------------------------------------------------------- simulation recovery


def test_simulation_recovery():
    truth = dict(EB_HYPERPARAMETERS, p=0.2)
    # all singletons: the EB likelihood is then the exact model and its SEs are valid
    sim = simulate_spike_slab(
        n_items=60, n_vars=80, n_replicates=3, labels=np.arange(60), random_seed=20240601, **truth
    )
    res = fit_spike_slab(sim.values, sim.item_index)
    assert res.converged
    for k in NAMES:
        z = (res.estimates[k] - truth[k]) / res.std_errors[k]
        assert abs(z) < 4, (k, res.estimates[k], truth[k], res.std_errors[k])


def test_unequal_replicates_and_one_row_items():
    sim = simulate_spike_slab(
        n_items=20, n_vars=30, n_replicates=[1, 2, 3, 4] * 5, p=0.3, labels=np.arange(20), random_seed=5
    )
    res = fit_spike_slab(sim.values, sim.item_index)
    assert res.converged
    bf = brute_force_loglik(sim.values, sim.item_index, **res.estimates)
    assert res.log_likelihood == pytest.approx(bf, rel=1e-10)


# ---------------------------------------------------------------------- bad input


def test_bad_input(arabidopsis):
    y, idx = arabidopsis.values, arabidopsis.item_index
    bad = y.copy()
    bad[3, 5] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit_spike_slab(bad, idx)
    with pytest.raises(ValueError, match="item_index"):
        fit_spike_slab(y, idx[:-1])
    with pytest.raises(TypeError, match="item_index"):
        fit_spike_slab(y, idx.astype(float))
    with pytest.raises(ValueError, match="replicate"):
        fit_spike_slab(y)  # one row per item: sigma2 and sigma2_eta not identified
    with pytest.raises(ValueError, match="at least 2 items"):
        fit_spike_slab(y[:3], np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="identical"):
        fit_spike_slab(np.repeat(y[:5], 2, axis=0), np.repeat(np.arange(5), 2))
    with pytest.raises(TypeError, match="start"):
        fit_spike_slab(y, idx, start=[0, 1, 1, 1, 0.5])
    with pytest.raises(ValueError, match="unknown"):
        fit_spike_slab(y, idx, start=dict(sigma=1.0))
    with pytest.raises(ValueError, match="p"):
        fit_spike_slab(y, idx, start=dict(p=1.0))
    with pytest.raises(ValueError, match="sigma2"):
        fit_spike_slab(y, idx, start=dict(sigma2=-1.0))


def test_unidentified_data_warns_or_raises():
    # no slab shift anywhere (p = 0): the spike-and-slab hyperparameters are not identified;
    # the fit must not return silent garbage: either a warning with NaN SEs or a clear error
    scales = {k: v for k, v in EB_HYPERPARAMETERS.items() if k != "p"}  # the seeds below were chosen with them
    sim = simulate_spike_slab(
        n_items=10, n_vars=5, n_replicates=3, p=0.0, labels=np.arange(10), random_seed=0, **scales
    )
    with pytest.warns(RuntimeWarning, match="not negative definite"):
        res = fit_spike_slab(sim.values, sim.item_index)
    assert not res.converged
    assert all(np.isnan(v) for v in res.std_errors.values())
    sim = simulate_spike_slab(
        n_items=10, n_vars=5, n_replicates=3, p=0.0, labels=np.arange(10), random_seed=1, **scales
    )
    with pytest.raises(RuntimeError, match="boundary"):
        fit_spike_slab(sim.values, sim.item_index)


def test_optimizer_failure_is_an_error(arabidopsis, monkeypatch):
    import scipy.optimize

    class Bad:
        x = np.full(5, np.nan)
        fun = np.nan
        nit = 0
        message = "boom"

    monkeypatch.setattr(scipy.optimize, "minimize", lambda *a, **k: Bad())
    with pytest.raises(RuntimeError, match="failed"):
        fit_spike_slab(arabidopsis.values, arabidopsis.item_index)


def test_numerical_hessian_equals_the_symbolic_one():
    """The Hessian is differentiated numerically from the exact gradient (compiling the symbolic
    Hessian cost 8-9 s per run): it matches the symbolic Hessian to 1e-8 at random points."""
    import pytensor
    import pytensor.tensor as pt

    from pymc_partition import empirical_bayes as ebm
    from pymc_partition.families.spike_slab import replicate_summaries

    theta = [pt.dscalar(n) for n in ebm._TRANSFORMED_NAMES]
    r, m, s = pt.dvector("r"), pt.dmatrix("m"), pt.dmatrix("s")
    ll = ebm._loglik_graph(r, m, s, theta)
    grad = pytensor.gradient.grad(ll, theta)
    hess = pt.stack([pt.stack(pytensor.gradient.grad(g, theta)) for g in grad])
    exact = pytensor.function([r, m, s, *theta], hess, mode="FAST_COMPILE")
    from pymc_partition.datasets import simulate_spike_slab

    data = simulate_spike_slab(random_seed=4)
    summaries = replicate_summaries(data.values, data.item_index, data.n_items)
    obj = ebm._Objective(*summaries)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.normal([0.0, -1.5, -1.0, 1.5, -3.0], 0.5)
        np.testing.assert_allclose(-obj.hess(x), exact(*summaries, *x), rtol=1e-8, atol=1e-7)


# ---------------------------------------------------------------------- location (issue 26)


def test_a_shift_of_the_data_shifts_mu_and_changes_nothing_else():
    """Data 1e8 and 1e12 spreads from zero: the same fit (mu shifted) and the same partition
    posterior. Fitted about 0, mu's steps were rounded away at 1e12 (not converged) and the
    variances moved by 1e-5 standard errors at 1e8."""
    from pymc_partition import DirichletProcess, ExactPosterior
    from pymc_partition.spec import PartitionSpec

    sim = simulate_spike_slab(n_items=8, n_vars=40, n_replicates=3, labels=np.repeat([0, 1], 4), random_seed=3,
                              mu=0.0, sigma2=1.0, sigma2_eta=0.5, sigma2_theta=4.0, p=0.3)  # fmt: skip

    def fit_and_posterior(values):
        res = fit_spike_slab(values, sim.item_index)
        spec = PartitionSpec.from_data(DirichletProcess(1.0), res.family(), values, sim.item_index)
        return res, ExactPosterior(spec, progressbar=False).coclustering

    ref, ref_cc = fit_and_posterior(sim.values)
    spread = float(sim.values.std())
    for k in (1e8, 1e12):
        res, cc = fit_and_posterior(sim.values + k * spread)
        assert res.converged, k
        # the shifted data keep about 1e-16 k of the spread: estimates move by 1e-8 (k = 1e8) and
        # 1e-5 (k = 1e12) standard errors, co-clustering probabilities by 1e-9 and 1e-5
        for name in NAMES:
            moved = res.estimates[name] - ref.estimates[name] - (k * spread if name == "mu" else 0.0)
            assert abs(moved) <= (1e-9 + 1e-15 * k) * ref.std_errors[name] + (
                1e-16 * k * spread if name == "mu" else 0.0
            ), (k, name)
        assert res.log_likelihood == pytest.approx(ref.log_likelihood, rel=1e-13 * k)
        np.testing.assert_allclose(cc, ref_cc, rtol=0, atol=1e-9 + 1e-14 * k, err_msg=f"{k:g} spreads")
