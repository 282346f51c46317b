"""Partition priors with random parameters: the tables as a pytensor graph of the parameters.

Checked against the numeric tables at random parameter values (same formula, two backends), the
model logp and its gradient against the closed forms, the domain checks, and prior draws of
(parameter, partition) against the exact marginal by enumeration times quadrature.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode
from random_models import point_function, value_of
from scipy import integrate
from scipy import stats as sps
from test_priors import ALPHA, all_partitions

import pymc_partition as pmp
from pymc_partition._pytensor_modes import numba_mode
from pymc_partition.model_spec import RandomHyperparameterError
from pymc_partition.state import bell_number, state_keys

# (name, factory(parameter) -> prior, parameter values to test, parameter in its domain?)
RANDOM_PRIORS = {
    "dp": lambda a: pmp.DirichletProcess(alpha=a),
    "py_alpha": lambda a: pmp.PitmanYor(alpha=a, d=0.3),
    "py_d": lambda d: pmp.PitmanYor(alpha=1.2, d=d),
    "mfm_gamma_uniform": lambda g: pmp.MixtureOfFiniteMixtures(gamma=g),
    "mfm_gamma_poisson": lambda g: pmp.MixtureOfFiniteMixtures("poisson", gamma=g, k_param=2.0),
    "mfm_rate": lambda lam: pmp.MixtureOfFiniteMixtures("poisson", gamma=0.7, k_param=lam),
    "mfm_geometric": lambda p: pmp.MixtureOfFiniteMixtures("geometric", gamma=1.3, k_param=p),
    "mfm_vector": lambda g: pmp.MixtureOfFiniteMixtures([0.1, 0.4, 0.5], gamma=g),
}
VALUES = {"py_d": [0.0, 0.1, 0.55, 0.9], "mfm_geometric": [0.05, 0.3, 1.0]}


def _values(name, rng):
    return VALUES.get(name, list(np.round(rng.gamma(1.5, 1.0, 4) + 0.05, 6)))


@pytest.mark.parametrize("name", list(RANDOM_PRIORS))
@pytest.mark.parametrize("n", [1, 4, 9, 40])
def test_tables_graph_equals_numbers(name, n):
    theta = pt.dscalar("theta")
    prior = RANDOM_PRIORS[name](theta)
    assert prior.is_random and prior.random_params
    fn = pytensor.function([theta], list(prior.tables_graph(n)))
    for value in _values(name, np.random.default_rng(n)):
        got_g, got_h = fn(value)
        ref_g, ref_h = RANDOM_PRIORS[name](value).tables(n)
        np.testing.assert_allclose(got_g, ref_g, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got_h, ref_h, rtol=1e-12, atol=1e-12)


def test_random_prior_refuses_numeric_tables_and_has_readable_repr():
    with pm.Model():
        a = pm.Gamma("alpha", 2.0, 1.0)
        prior = pmp.DirichletProcess(alpha=a)
    assert "alpha=<alpha>" in repr(prior)
    with pytest.raises(TypeError, match="random parameter"):
        prior.tables(5)
    assert prior.with_values(alpha=2.0) == pmp.DirichletProcess(2.0)
    assert prior != pmp.DirichletProcess(2.0) and prior == prior
    with pytest.raises(ValueError, match="scalar"):
        pmp.DirichletProcess(alpha=pt.dvector("a"))


def _model(factory, n, hyper):
    with pm.Model() as model:
        theta = hyper()
        pmp.Partition("z", n_items=n, prior=factory(theta))
    return model


@pytest.mark.parametrize(
    "name, hyper",
    [
        ("dp", lambda: pm.Gamma("theta", 2.0, 1.0)),
        ("py_d", lambda: pm.Beta("theta", 2.0, 3.0)),
        ("mfm_gamma_poisson", lambda: pm.Gamma("theta", 2.0, 2.0)),
        ("mfm_geometric", lambda: pm.Beta("theta", 2.0, 2.0)),
    ],
)
def test_model_logp_and_gradient_are_exact(name, hyper):
    n, factory = 5, RANDOM_PRIORS[name]
    model = _model(factory, n, hyper)
    theta_rv = model["theta"]
    value_name = model.rvs_to_values[theta_rv].name
    transform = model.rvs_to_transforms[theta_rv]
    # the model's graphs, run by the Python linker (random_models.point_function)
    logp = point_function(model, model.logp(vars=[model["z"]], jacobian=False))
    dlogp = point_function(model, model.dlogp(vars=[theta_rv], jacobian=False))
    hyper_logp = point_function(model, model.logp(vars=[theta_rv], jacobian=False))
    states = all_partitions(n)

    def forward(x):  # a float64 tensor: pytensor would make the Python float 0.25 a float32
        return float(value_of(transform.forward(pt.as_tensor(np.float64(x)), *theta_rv.owner.inputs[2:])))

    for value in [0.25, 0.6]:
        u = forward(value)
        got = np.array([logp({"z": s, value_name: u}) for s in states])
        np.testing.assert_allclose(got, factory(value).logp(states), rtol=1e-11, atol=1e-11)
        # d/du of the partition's log prior, by central differences of the closed form in theta
        s, eps = states[11], 1e-6
        du = forward(value + eps) - forward(value - eps)
        fd_prior = (factory(value + eps).logp(s) - factory(value - eps).logp(s)) / du
        h = 1e-6
        fd_hyper = (hyper_logp({"z": s, value_name: u + h}) - hyper_logp({"z": s, value_name: u - h})) / (2 * h)
        g = float(np.squeeze(dlogp({"z": s, value_name: u})))
        assert g == pytest.approx(fd_prior + fd_hyper, rel=1e-5, abs=1e-6)


def test_parameters_outside_their_domain_give_minus_inf():
    with pm.Model() as model:
        # a graph of a variable reaching d < 0 (a variable itself would be refused when built)
        d = pm.Uniform("d", -0.5, 1.0) * 1.0
        pmp.Partition("z", n_items=4, prior=pmp.PitmanYor(alpha=1.0, d=d))
    # PyMC's compilation (its domain checks give -inf) with the Python linker: nothing compiled
    logp = model.compile_logp(vars=[model["z"]], jacobian=False, mode=Mode(linker="py", optimizer="fast_run"))
    u_neg, u_pos = (np.log((x + 0.5) / (1.0 - x)) for x in (-0.2, 0.2))  # PyMC's interval transform
    z = np.array([0, 1, 0, 2])
    assert logp({"z": z, "d_interval__": u_neg}) == -np.inf
    assert np.isfinite(logp({"z": z, "d_interval__": u_pos}))


def test_mfm_truncation_is_checked_in_the_graph():
    rate = pt.dscalar("rate")
    prior = pmp.MixtureOfFiniteMixtures("poisson", gamma=1.0, k_param=rate, k_max=25)
    log_g, _ = prior.tables_graph(6)
    fn = pytensor.function([rate], log_g)
    np.testing.assert_allclose(fn(1.0), prior.with_values(k_param=1.0).tables(6)[0], rtol=1e-12)
    with pytest.raises(Exception, match="k_max"):
        fn(30.0)  # P(K > 25) is a third of the mass: the series cannot stop at 25


def _n_clusters_marginal(factory, hyper_pdf, n, lower, upper):
    """P(C = c) = int P(C = c | theta) p(theta) dtheta, by enumeration and adaptive quadrature."""
    states = all_partitions(n)
    n_clusters = states.max(axis=1) + 1

    def p_c(theta, c):
        return np.exp(factory(theta).logp(states))[n_clusters == c].sum() * hyper_pdf(theta)

    return np.array([integrate.quad(p_c, lower, upper, args=(c,), epsabs=1e-11)[0] for c in range(1, n + 1)])


@pytest.mark.default_backend
@pytest.mark.parametrize(
    "name, hyper, pdf, lower, upper, seed",
    [
        ("dp", lambda: pm.Gamma("theta", 2.0, 1.0), sps.gamma(2.0).pdf, 0.0, np.inf, 1),
        ("mfm_gamma_poisson", lambda: pm.Gamma("theta", 3.0, 3.0), sps.gamma(3.0, scale=1 / 3).pdf, 0.0, np.inf, 2),
        ("py_d", lambda: pm.Beta("theta", 2.0, 3.0), sps.beta(2.0, 3.0).pdf, 0.0, 1.0, 3),
    ],
)
def test_prior_draws_of_parameter_and_partition(name, hyper, pdf, lower, upper, seed):
    """pm.sample_prior_predictive draws theta, then z given theta: the number of clusters follows
    the exact marginal (Pearson chi-square, false alarm ALPHA)."""
    n, draws = 5, 3000
    factory = RANDOM_PRIORS[name]
    model = _model(factory, n, hyper)
    # numba (PyTensor 3's default backend) on both stacks: the partition drawn by numba_random's core; on
    # PyMC 5 it compiles in half the C backend's gcc time
    mode = {"mode": numba_mode()}
    prior = pm.sample_prior_predictive(draws=draws, model=model, random_seed=seed, compile_kwargs=mode)
    z = prior.prior["z"].values.reshape(-1, n)
    counts = np.bincount(z.max(axis=1) + 1, minlength=n + 1)[1:]
    expected = draws * _n_clusters_marginal(factory, pdf, n, lower, upper)
    assert expected.sum() == pytest.approx(draws, rel=1e-8)
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert sps.chi2.sf(chi2, n - 1) > ALPHA, (counts, expected)


def test_exact_posterior_and_steps_need_the_point():
    with pm.Model() as model:
        a = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", n_items=4, prior=pmp.DirichletProcess(alpha=a))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0),
                               observed=np.array([[1, 0], [1, 1], [0, 0], [0, 1]]))  # fmt: skip
    with pytest.raises(RandomHyperparameterError, match="alpha"):
        pmp.exact_posterior(model)
    point = model.initial_point()
    point["alpha_log__"] = np.log(2.5)
    exact = pmp.exact_posterior(model, point=point, progressbar=False)
    with pm.Model() as fixed:
        z = pmp.Partition("z", n_items=4, prior=pmp.DirichletProcess(alpha=2.5))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0),
                               observed=np.array([[1, 0], [1, 1], [0, 0], [0, 1]]))  # fmt: skip
    ref = pmp.exact_posterior(fixed, progressbar=False)
    assert exact.log_z == pytest.approx(ref.log_z, rel=1e-12)
    assert bell_number(4) == len(state_keys(all_partitions(4)))


def test_partition_steps_read_random_parameters_from_the_point():
    with pm.Model():
        a = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", n_items=4, prior=pmp.DirichletProcess(alpha=a))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0),
                               observed=np.array([[1, 0], [1, 1], [0, 0], [0, 1]]))  # fmt: skip
        step = pmp.GibbsPartition([z])
        assert step._reader is not None and step._reader.names == ["alpha_log__"]


@pytest.mark.parametrize(
    "make, match",
    [(lambda: pmp.DirichletProcess(pm.Normal("alpha", 0, 1)), r"`alpha` must be positive.*\(Normal\)"),
     (lambda: pmp.PitmanYor(1.0, d=pm.Normal("d", 0.3, 0.1)), r"`d` must be in \[0, 1\)"),
     (lambda: pmp.PitmanYor(pm.Normal("a", 2, 1), d=0.5), r"`alpha` must be greater than -d = -0.5"),
     (lambda: pmp.MixtureOfFiniteMixtures("geometric", k_param=pm.Uniform("q", 0, 2)),
      r"`k_param` must be in \(0, 1\]"),
     (lambda: pmp.MixtureOfFiniteMixtures(gamma=pm.StudentT("g", 3)), "`gamma` must be positive")],
)  # fmt: skip
def test_prior_parameter_whose_distribution_leaves_its_domain_is_refused_when_built(make, match):
    """A pm.Normal concentration reaches alpha <= 0, where the prior is undefined: refused when
    the prior is built, naming the parameter and its domain (it failed later, when the step was
    built at alpha = 0, with PyTensor's bare "ParameterValueError: alpha > 0")."""
    with pm.Model(), pytest.raises(ValueError, match=match):
        make()
    with pm.Model():  # distributions that stay inside (the interval's ends are never drawn)
        pmp.DirichletProcess(pm.Uniform("alpha", 0.0, 10.0))
        pmp.PitmanYor(pm.Gamma("a", 2, 1), d=pm.Uniform("d", 0.0, 1.0))
        pmp.MixtureOfFiniteMixtures("geometric", gamma=pm.HalfNormal("g"), k_param=pm.Beta("q", 1, 1))


def test_parameter_outside_its_domain_at_the_start_names_the_point():
    """A graph (not a variable) outside its domain at the initial point: a ValueError naming the
    point and what to do, not PyTensor's bare ParameterValueError."""
    y = np.random.default_rng(0).normal(size=6)
    with pm.Model():
        a = pm.Gamma("a", 2.0, 1.0)
        z = pmp.Partition("z", n_items=6, prior=pmp.DirichletProcess(a - 5.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), observed=y)
        with pytest.raises(ValueError, match=r"At \{'a_log__': .*outside its domain \(alpha > 0\).*initvals="):
            pmp.GibbsPartition([z])


def test_random_tables_are_one_shared_node_that_expands_to_the_formula():
    """PyMC rewrites the whole model graph for every logp it builds: the tables enter it as one inline node, shared by
    models of the same shape, and what the samplers read (``params_of``) is that node's formula, with the same numbers.
    """
    from pytensor.compile.builders import OpFromGraph
    from pytensor.graph.traversal import ancestors

    from pymc_partition.distribution import PartitionRV

    def model(n):
        with pm.Model() as m:
            a = pm.Gamma("a", 2.0, 1.0)
            d = pm.Beta("d", 1.0, 3.0)
            z = pmp.Partition("z", n_items=n, prior=pmp.PitmanYor(alpha=a, d=d))
        return m, a, d, z

    m, a, d, z = model(6)
    node = z.owner.inputs[2].owner
    assert isinstance(node.op, OpFromGraph) and node.op.is_inline and z.owner.inputs[3].owner is node
    assert model(6)[3].owner.inputs[2].owner.op is node.op  # one node (and one gradient) per prior and shape
    assert model(7)[3].owner.inputs[2].owner.op is not node.op
    expanded = list(PartitionRV.params_of(z))
    assert not any(isinstance(v.owner.op, OpFromGraph) for v in ancestors(expanded) if v.owner is not None)
    assert {a, d} <= set(ancestors(expanded))  # the model's own variables, not copies
    # a walk up the graph meets the parameters in the formula's order (PyMC seeds its generators in that order)
    order = [v for v in ancestors([z]) if v is a or v is d]
    assert order == [v for v in ancestors([pt.add(expanded[0][0], expanded[1][0])]) if v is a or v is d]
    fn_node = pytensor.function([a, d], list(z.owner.inputs[2:4]))
    fn_formula = pytensor.function([a, d], expanded)
    for alpha, dd in [(0.3, 0.0), (2.0, 0.4), (45.0, 0.9), (1e6, 0.2)]:
        for got, ref in zip(fn_node(alpha, dd), fn_formula(alpha, dd)):
            np.testing.assert_array_equal(got, ref)
        ref_g, ref_h = pmp.PitmanYor(alpha=alpha, d=dd).tables(6)
        np.testing.assert_allclose(fn_node(alpha, dd)[0], ref_g, rtol=1e-12, atol=1e-12)


def test_model_logp_and_gradient_through_the_tables_node_equal_the_formula():
    """The model's logp and gradient (NUTS's) compile the node expanded: the formula's numbers, Stirling's too."""
    from pymc_partition.distribution import PartitionRV, partition_logp_graph

    with pm.Model() as m:
        a = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", n_items=8, prior=pmp.DirichletProcess(a))
    value, zv = m.rvs_to_values[a], m.rvs_to_values[z]
    labels = np.array([0, 1, 0, 2, 1, 0, 3, 3])
    log_g, log_h = m.replace_rvs_by_values(list(PartitionRV.params_of(z)))
    direct = partition_logp_graph(zv, log_g, log_h) + m.logp(vars=[a], jacobian=True)
    model_lp = m.logp()  # through the node
    fn = pytensor.function(
        [value, zv], [model_lp, pytensor.grad(model_lp, value), direct, pytensor.grad(direct, value)]
    )
    for alpha in (0.3, 3.0, 40.0, 1e5):
        lp, dlp, ref_lp, ref_dlp = fn(np.log(alpha), labels)
        np.testing.assert_allclose(lp, ref_lp, rtol=1e-13)
        np.testing.assert_allclose(dlp, ref_dlp, rtol=1e-10)
