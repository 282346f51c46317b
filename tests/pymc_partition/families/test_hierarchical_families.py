"""Family hyperparameters as PyMC variables, and data through pm.Data.

Checked: the per-item statistics graph equals the numpy statistics; the model logp with random
hyperparameters equals the logp of the fixed family at the same values, its gradient the finite
differences of it; domains give -inf; partition_spec/exact_posterior at a point; pm.set_data
changes what the model and the exact posterior see, without rebuilding the model.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from random_models import point_function, value_of
from test_priors import all_partitions

import pymc_partition as pmp
from pymc_partition.model_spec import RandomHyperparameterError, partition_spec

RNG = np.random.default_rng(0)
N = 5
ITEM_INDEX = np.repeat(np.arange(N), [2, 1, 3, 2, 2])
DATA = {
    "normal": RNG.normal(size=(ITEM_INDEX.size, 2)),
    "binary": RNG.integers(0, 2, size=(ITEM_INDEX.size, 3)).astype(float),
    "counts": RNG.poisson(2.0, size=(ITEM_INDEX.size, 2)).astype(float),
    "categories": RNG.integers(0, 3, size=(ITEM_INDEX.size, 2)).astype(float),
}

# name: (data kind, fixed family factory(values), {hyperparameter: (pm prior factory, test values)})
CASES = {
    "spike_slab": ("normal", lambda v: pmp.SpikeSlabNormal(**v), {
        "mu": (lambda: pm.Normal("mu", 0, 1), [0.2, -0.4]),
        "sigma2": (lambda: pm.HalfNormal("sigma2", 1.0), [0.5, 1.3]),
        "sigma2_theta": (lambda: pm.Gamma("sigma2_theta", 2, 1), [2.0, 0.7]),
        "p": (lambda: pm.Beta("p", 2, 5), [0.2, 0.6]),
    }, {"mu": 0.0, "sigma2": 1.0, "sigma2_eta": 0.3, "sigma2_theta": 1.0, "p": 0.3}),
    "nig": ("normal", lambda v: pmp.NormalInverseGamma(**v), {
        "mu0": (lambda: pm.Normal("mu0", 0, 1), [0.3, -1.0]),
        "kappa0": (lambda: pm.Gamma("kappa0", 2, 2), [0.5, 2.0]),
    }, {"mu0": 0.0, "kappa0": 1.0, "alpha0": 2.0, "beta0": 1.5}),
    "niw": ("normal", lambda v: pmp.NormalInverseWishart(**v), {
        "kappa0": (lambda: pm.Gamma("kappa0", 2, 2), [0.5, 2.0]),
        "nu0": (lambda: pm.Uniform("nu0", 1.5, 10.0), [3.0, 6.5]),
    }, {"mu0": np.zeros(2), "kappa0": 1.0, "nu0": 4.0, "psi0": np.eye(2)}),
    "beta_bernoulli": ("binary", lambda v: pmp.BetaBernoulli(**v), {
        "a": (lambda: pm.Gamma("a", 2, 1, shape=3), [np.array([0.5, 1.0, 2.0]), np.array([3.0, 0.2, 1.0])]),
    }, {"a": 1.0, "b": 1.0}),
    "gamma_poisson": ("counts", lambda v: pmp.GammaPoisson(**v), {
        "b": (lambda: pm.Gamma("b", 2, 1), [0.5, 2.0]),
    }, {"a": 2.0, "b": 1.0}),
    "dirichlet": ("categories", lambda v: pmp.DirichletCategorical(**v), {
        "alpha": (lambda: pm.Gamma("alpha", 2, 1, shape=3), [np.array([0.5, 1.0, 2.0]), np.array([1.0, 1.0, 1.0])]),
    }, {"alpha": np.ones(3), "n_categories": 3}),
}  # fmt: skip


def _model(case):
    kind, factory, hypers, base = CASES[case]
    with pm.Model() as model:
        params = dict(base)
        for name, (prior, _) in hypers.items():
            params[name] = prior()
        z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=factory(params), observed=DATA[kind],
                               item_index=ITEM_INDEX)  # fmt: skip
    return model


@pytest.mark.parametrize("case", list(CASES))
def test_item_stats_graph_equals_numpy(case):
    kind, factory, _, base = CASES[case]
    family = factory(base)
    ref = family.item_stats(DATA[kind], ITEM_INDEX, N)
    got = family.item_stats_graph(pt.constant(DATA[kind]), ITEM_INDEX, N).eval()
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def _point(model, values):
    point = dict(model.initial_point())
    for name, value in values.items():
        rv = model[name]
        vv = model.rvs_to_values[rv]
        tr = model.rvs_to_transforms.get(rv)
        x = pt.as_tensor(np.asarray(value, dtype=float))
        point[vv.name] = value_of(tr.forward(x, *rv.owner.inputs) if tr is not None else x)
    return point


@pytest.mark.parametrize("case", list(CASES))
def test_logp_equals_the_fixed_family_and_gradient_is_right(case):
    kind, factory, hypers, base = CASES[case]
    model = _model(case)
    logp = point_function(model, model.logp(vars=[model["y"]], jacobian=False))
    states = all_partitions(N)[::3]
    names = list(hypers)
    for j in range(2):
        values = {k: hypers[k][1][j] for k in names}
        point = _point(model, values)
        fixed = factory({**base, **values})
        spec = partition_spec(model, point=point)
        assert spec.terms[0].family.random_params == ()
        for z in states:
            point["z"] = z
            sizes = np.bincount(z)
            ref = 0.0
            stats = fixed.item_stats(DATA[kind], ITEM_INDEX, N)
            for c in range(sizes.size):
                ref += fixed.log_marginal_numpy(stats[z == c].sum(axis=0))
            assert logp(point) == pytest.approx(ref, rel=1e-10, abs=1e-10)
            # the spec at the point scores partitions the same way
            assert spec.log_posterior(z) - spec.log_g[sizes.size] - spec.log_h[sizes].sum() == pytest.approx(
                ref, rel=1e-10
            )
    # gradient of the likelihood term in the value variables, against central differences
    dlogp = point_function(model, model.dlogp(vars=[model[k] for k in names], jacobian=False))
    point = _point(model, {k: hypers[k][1][0] for k in names})
    point["z"] = np.array([0, 0, 1, 1, 2])
    full = point_function(model, model.logp(vars=[model["y"], *[model[k] for k in names]], jacobian=False))
    grad = dlogp(point)
    offset = 0
    for k in names:
        vv = model.rvs_to_values[model[k]].name
        x0 = np.atleast_1d(point[vv]).astype(float)
        for e in range(x0.size):
            h = 1e-6
            up, dn = dict(point), dict(point)
            xu, xd = x0.copy(), x0.copy()
            xu[e] += h
            xd[e] -= h
            up[vv], dn[vv] = xu.reshape(np.shape(point[vv])), xd.reshape(np.shape(point[vv]))
            fd = (full(up) - full(dn)) / (2 * h)
            assert grad[offset] == pytest.approx(fd, rel=1e-5, abs=1e-5), (k, e)
            offset += 1
    assert np.isfinite(logp(point))


def test_hyperparameters_outside_their_domain_give_minus_inf():
    with pm.Model() as model:
        # a graph of a variable that may be negative (the family's domain is a > 0; a variable
        # itself would be refused when built)
        a = pm.Normal("a", 1.0, 1.0) * 1.0
        z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(a=a, b=1.0),
                               observed=DATA["binary"], item_index=ITEM_INDEX)  # fmt: skip
    logp = model.compile_logp(vars=[model["y"]], jacobian=False)
    point = {"a": -0.5, "z": np.zeros(N, dtype=np.int64)}
    assert logp(point) == -np.inf
    point["a"] = 0.5
    assert np.isfinite(logp(point))


def test_exact_posterior_needs_the_point_for_random_family():
    model = _model("gamma_poisson")
    with pytest.raises(RandomHyperparameterError, match="'b'"):
        pmp.exact_posterior(model)
    point = _point(model, {"b": 2.0})
    exact = pmp.exact_posterior(model, point=point, progressbar=False)
    kind, factory, _, base = CASES["gamma_poisson"]
    with pm.Model() as fixed:
        z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=factory({**base, "b": 2.0}),
                               observed=DATA[kind], item_index=ITEM_INDEX)  # fmt: skip
    assert exact.log_z == pytest.approx(pmp.exact_posterior(fixed, progressbar=False).log_z, rel=1e-12)


def test_pm_data_and_set_data():
    first, second = DATA["normal"], DATA["normal"][::-1].copy()
    family = pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.5)

    def fixed(values):
        with pm.Model() as m:
            z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
            pmp.MarginalLikelihood("y", partition=z, family=family, observed=values, item_index=ITEM_INDEX)
        return pmp.exact_posterior(m, progressbar=False).log_z

    with pm.Model() as model:
        y_data = pm.Data("y_data", first)
        z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=y_data, item_index=ITEM_INDEX)
    assert pmp.exact_posterior(model, progressbar=False).log_z == pytest.approx(fixed(first), rel=1e-12)
    logp = model.compile_logp()
    before = logp({"z": np.array([0, 0, 1, 1, 0])})
    with model:
        pm.set_data({"y_data": second})
    assert pmp.exact_posterior(model, progressbar=False).log_z == pytest.approx(fixed(second), rel=1e-12)
    assert logp({"z": np.array([0, 0, 1, 1, 0])}) != pytest.approx(before)
    with model:  # the samplers see the new data too
        idata = pm.sample(draws=50, tune=0, chains=1, progressbar=False, random_seed=1,
                          compute_convergence_checks=False)  # fmt: skip
    assert idata.posterior["z"].shape == (1, 50, N)
    bad = second.copy()
    bad[3, 1] = np.inf
    with model:
        pm.set_data({"y_data": bad})
    with pytest.raises(ValueError, match="pm.set_data"):
        pmp.exact_posterior(model, progressbar=False)


def _one_row_draws(family, n_vars, n=20_000, seed=3):
    rng = np.random.default_rng(seed)
    return np.stack([family.draw_data(rng, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), n_vars)[0]
                     for _ in range(n)])  # fmt: skip


@pytest.mark.parametrize(
    "family, data_values",
    [
        (pmp.BetaBernoulli(0.7, 1.8), [0.0, 1.0]),
        (pmp.GammaPoisson(2.0, 1.5), np.arange(40.0)),
        (pmp.DirichletCategorical(np.array([0.5, 1.0, 2.0])), [0.0, 1.0, 2.0]),
    ],  # fmt: skip
)
def test_drawn_data_follow_the_marginal_likelihood_discrete(family, data_values):
    """One item, one row: the drawn values' frequencies against exp(log marginal) (chi-square)."""
    from scipy import stats as sps

    y = _one_row_draws(family, 1)[:, 0]
    values = np.asarray(data_values)
    stats = np.stack([family.item_stats(np.array([[v]]))[0] for v in values])
    pmf = np.exp(family.log_marginal_numpy(stats))
    assert pmf.sum() == pytest.approx(1.0, abs=1e-6)
    counts = np.array([(y == v).sum() for v in values])
    expected = y.size * pmf
    keep = expected >= 5
    obs, exp = np.append(counts[keep], counts[~keep].sum()), np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
    chi2 = ((obs - exp) ** 2 / exp).sum()
    assert sps.chi2.sf(chi2, obs.size - 1) > 1e-3


def test_drawn_data_follow_the_marginal_likelihood_continuous():
    """NIG, one row: Student t (KS test). The means and covariances of the other continuous
    families' draws (NIW, spike-and-slab; rows of one item, of one cluster and of different
    clusters) are checked in test_numba_draws.py, whose FAST_COMPILE cases run ``draw_data``."""
    from scipy import stats as sps

    nig = pmp.NormalInverseGamma(0.5, 2.0, 3.0, 1.5)
    y = _one_row_draws(nig, 1)[:, 0]
    t = sps.t(df=6.0, loc=0.5, scale=np.sqrt(1.5 * 3.0 / (3.0 * 2.0)))
    assert sps.kstest(y, t.cdf).pvalue > 1e-3


# FAST_COMPILE (the families' numpy draws): the compiled draws of the default backends are
# test_numba_random's (prior and posterior predictive, random hyperparameters) and test_prior_draws'
def test_prior_and_posterior_predictive_and_graphs():
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 1.0)
        z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(a=a, b=1.0),
                               observed=DATA["binary"], item_index=ITEM_INDEX)  # fmt: skip
    prior = pm.sample_prior_predictive(draws=30, model=model, random_seed=2)
    y = prior.prior_predictive["y"].values
    assert y.shape == (1, 30, ITEM_INDEX.size, 3) and set(np.unique(y)) <= {0.0, 1.0}
    source = pm.model_to_graphviz(model).source
    assert "Partition" in source and "a -> z" not in source and "a -> y" in source
    assert pm.model_to_networkx(model).number_of_nodes() == 3
    assert "Partition" in pm.model_to_mermaid(model)
    fake = prior.prior.isel(draw=slice(0, 10))
    post = pm.sample_posterior_predictive(fake, model=model, random_seed=3, progressbar=False)
    assert post.posterior_predictive["y"].shape == (1, 10, ITEM_INDEX.size, 3)


def test_family_hyperparameter_whose_distribution_leaves_its_domain_is_refused_when_built():
    with pm.Model():
        with pytest.raises(ValueError, match=r"`a` must be positive.*\(Normal\)"):
            pmp.BetaBernoulli(a=pm.Normal("a", 1.0, 1.0), b=1.0)
        with pytest.raises(ValueError, match=r"`p` must be in \(0, 1\)"):
            pmp.SpikeSlabNormal(0.0, 1.0, 0.3, 1.0, p=pm.Uniform("p", -1.0, 1.0))
        with pytest.raises(ValueError, match=r"`nu0` must be greater than V - 1 = 1"):
            pmp.NormalInverseWishart(np.zeros(2), 1.0, pm.Uniform("nu0", 0.0, 10.0), np.eye(2))
        pmp.BetaBernoulli(a=pm.Gamma("a2", 2, 1), b=pm.Uniform("b", 0.0, 5.0))  # inside: accepted


def test_data_whose_squares_overflow_are_refused_as_such():
    """Finite data of 1e300: the statistics (sums of squares) overflow; the message says so and
    does not blame NaN given through pm.Data. Constant data were accepted silently before."""
    big = DATA["normal"] * 1e300
    family = pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.5)
    with pm.Model():
        z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
        message = r"not finite although the data are \(largest \|value\| .*e\+300\).*overflow.*Rescale"
        with pytest.raises(ValueError, match=message):
            pmp.MarginalLikelihood("y", partition=z, family=family, observed=big, item_index=ITEM_INDEX)
        with pytest.raises(ValueError, match="overflow"):
            pmp.MarginalLikelihood("y", partition=z, family=family, observed=pm.Data("big", big), item_index=ITEM_INDEX)
    with pm.Model() as model:
        y_data = pm.Data("y_data", DATA["normal"])
        z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=y_data, item_index=ITEM_INDEX)
        pm.set_data({"y_data": big})
    with pytest.raises(ValueError, match=r"not finite although the data are.*overflow") as info:
        pmp.exact_posterior(model, progressbar=False)
    assert "NaN" not in str(info.value)


def test_set_data_with_another_number_of_rows_is_refused_with_the_way_out():
    """The README's pm.set_data workflow keeps the rows (tested above); other rows cannot fit the
    item index and n_items fixed when the model was built: a ValueError saying so and what to do,
    from the package's functions, pm.sample and the model's own logp (it crashed inside pytensor
    with "array is not broadcastable")."""
    with pm.Model() as model:
        y_data = pm.Data("y_data", DATA["normal"])
        z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.5),
                               observed=y_data, item_index=ITEM_INDEX)  # fmt: skip
    logp = model.compile_logp()
    more = np.vstack([DATA["normal"], DATA["normal"][:2]])
    with model:
        pm.set_data({"y_data": more})
    rows = ITEM_INDEX.size
    message = rf"'y' now have {rows + 2} rows, but it was built with {rows}.*build the model again"
    with pytest.raises(ValueError, match=message):
        pmp.exact_posterior(model, progressbar=False)
    with model, pytest.raises(ValueError, match=message):
        pm.sample(draws=10, tune=0, chains=1, progressbar=False, compute_convergence_checks=False)
    with pytest.raises(ValueError, match=rf"another number of rows, but it was built with {rows}"):
        logp({"z": np.zeros(N, dtype=np.int64)})
