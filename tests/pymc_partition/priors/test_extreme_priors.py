"""Every partition prior at extreme but legal parameters (1e-300 ... 1e300 where the domain
allows): every log prior probability finite or -inf (probability 0), at most 0, summing to one
over all partitions, equal in its numbers, its pytensor graph and the compiled kernels, or the
prior refused with a message naming the parameter and its range."""

import math
import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy.special import logsumexp

import pymc_partition as pmp
from arviz_regen.base.state import all_partitions
from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.model_spec import partition_spec

EXT = [1e-300, 1e-100, 1e-8, 1.0, 1e8, 1e100, 1e300]
N = 7
STATES = all_partitions(N)  # all B(7) = 877 partitions
#: rounding of a log probability built from sums of terms up to N log(1e300) ~ 5e3 in size
TOL = 1e-9


def _priors():
    out = [pmp.UniformMultinomialDirichlet(), pmp.UniformPartition()]
    out += [pmp.DirichletProcess(a) for a in EXT]
    for d in (0.0, 1e-300, 0.5, 1 - 1e-16):
        # alpha just above -d (a relative step of 1e-12), and the extremes above it
        out += [pmp.PitmanYor(a, d) for a in [-d * (1 - 1e-12) if d else 1e-300, *EXT]]
    out += [pmp.MixtureOfFiniteMixtures("uniform", gamma=g) for g in EXT]
    out += [pmp.MixtureOfFiniteMixtures("poisson", gamma=g, k_param=r) for g in (1e-8, 1.0, 1e300)
            for r in (1e-300, 1.0, 1e3)]  # fmt: skip
    out += [pmp.MixtureOfFiniteMixtures("geometric", gamma=g, k_param=q) for g in (1e-8, 1.0, 1e300)
            for q in (1e-3, 0.5, 1.0)]  # fmt: skip
    return out


@pytest.mark.parametrize("prior", _priors(), ids=repr)
def test_every_prior_at_extreme_parameters_is_a_probability(prior):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warning on the way either
        log_g, log_h = prior.tables(N)
        logp = prior.logp(STATES)
    assert not np.isnan(log_g).any() and not np.isnan(log_h).any()
    assert np.all(logp < np.inf) and np.all(logp <= TOL), logp.max()
    # by enumeration, independent of the normalizer the tables were divided by
    assert logsumexp(logp) == pytest.approx(0.0, abs=TOL)


def test_dirichlet_process_at_huge_alpha_is_the_all_singletons_limit():
    """The log posterior of the all-singletons partition of 10 items was -42.7 at alpha = 1e16
    (limit: its log marginal likelihood, the prior of all singletons tending to 1), +433 at 1e20
    and NaN at 1e308. Now it is the exact log prior, -sum_i log1p(i / alpha), plus the limit."""
    y = np.random.default_rng(0).normal(size=10)
    family = pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0)
    singletons = family.log_marginal_numpy(family.item_stats(y)).sum()
    alphas = (1.0, 1e8, 1e16, 1e20, 1e100, 1e308)
    with pm.Model() as model:  # alpha as pm.Data: one compiled logp for every value
        alpha = pm.Data("alpha", 1.0)
        z = pmp.Partition("z", n_items=10, prior=pmp.DirichletProcess(alpha))
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=y)
    logp = model.compile_logp()
    for value in alphas:
        with model:
            pm.set_data({"alpha": value})
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = logp({"z": np.arange(10)})
            fixed = pmp.DirichletProcess(value).tables(10)[0][10]  # the numbers of a fixed alpha
        log_prior = -math.fsum(math.log1p(i / value) for i in range(10))  # alpha^N / rising(alpha, N)
        assert got == pytest.approx(singletons + log_prior, abs=1e-9), value
        assert fixed == pytest.approx(log_prior, abs=1e-12), value


@pytest.mark.parametrize(
    "make, match",
    [(lambda: pmp.MixtureOfFiniteMixtures("poisson", gamma=1.0, k_param=1e300),
      r"`k_param` = 1e\+300, the Poisson rate of K - 1.*must stay below about"),
     (lambda: pmp.MixtureOfFiniteMixtures("geometric", gamma=1.0, k_param=1e-300),
      r"`k_param` = 1e-300, the geometric success probability.*must stay above about"),
     (lambda: pmp.MixtureOfFiniteMixtures("geometric", gamma=1e-300, k_param=1e-3),
      r"`gamma` = 1e-300 is so small.*gamma of at least about")],
)  # fmt: skip
def test_mixture_of_finite_mixtures_refuses_what_its_series_cannot_reach_quickly(make, match):
    """p(K) out of reach of the series for V_N(t): refused within a few seconds, naming the
    parameter and its range (the series doubled up to 16 million terms, up to 20 s, and then
    named nothing)."""
    with pytest.raises(ValueError, match=match):  # its speed: benchmarks, not a wall-clock assertion
        make().tables(N)


def _default_rewrites_mode():
    """PyTensor's default mode; on PyMC 5 with the Python linker in place of the C one.

    The graph a model's logp reads is the default mode's rewritten graph: FAST_COMPILE skips
    PyTensor's stabilising rewrites, and on PyTensor 2.38 the MFM series at gamma = 1e100 then
    gives -inf. The rewrites are kept; only PyTensor 2's C linker is swapped for the Python one,
    which evaluates the same rewritten graph op by op: the C linker spent about 20 s of gcc from an
    empty compile folder on these three graphs, evaluated 35 times, and both linkers gave the same
    tables to 5e-13 (no infinity differing). PyMC 6's default (numba) linker is kept.
    """
    from pytensor.compile.mode import Mode, get_default_mode
    from pytensor.link.vm import VMLinker

    mode = get_default_mode()
    if isinstance(mode.linker, VMLinker) and mode.linker.c_thunks:
        return Mode(linker="py", optimizer=mode.optimizer)
    return mode


@pytest.mark.default_backend  # the default mode's rewrites (see _default_rewrites_mode)
def test_random_parameters_give_the_same_tables_at_the_extremes():
    """The pytensor graph of each prior (its parameters PyMC variables) at the extreme values
    equals the numbers, so the model's logp and the samplers read the same prior there."""
    a, d = pt.dscalar("a"), pt.dscalar("d")
    graphs = {
        "dp": (pmp.DirichletProcess(a), lambda x: pmp.DirichletProcess(x), [a]),
        "py": (pmp.PitmanYor(a, d), lambda x, y: pmp.PitmanYor(x, y), [a, d]),
        "mfm": (pmp.MixtureOfFiniteMixtures("uniform", gamma=a), lambda x: pmp.MixtureOfFiniteMixtures(gamma=x), [a]),
    }  # fmt: skip
    values = {"dp": [(x,) for x in EXT], "py": [(x, y) for x in EXT for y in (0.0, 0.5, 1 - 1e-16)],
              "mfm": [(x,) for x in EXT]}  # fmt: skip
    for name, (prior, fixed, inputs) in graphs.items():
        fn = pytensor.function(inputs, prior.tables_graph(N), mode=_default_rewrites_mode())
        for vals in values[name]:
            got_g, got_h = fn(*vals)
            want_g, want_h = fixed(*vals).tables(N)
            np.testing.assert_allclose(got_g, want_g, rtol=1e-12, atol=TOL, err_msg=f"{name} {vals}")
            np.testing.assert_allclose(got_h, want_h, rtol=1e-12, atol=TOL, err_msg=f"{name} {vals}")


@pytest.mark.default_backend
@pytest.mark.parametrize(
    "prior, clusters",
    [(pmp.DirichletProcess(1e-300), 1), (pmp.PitmanYor(1e300, 0.5), 6),
     (pmp.MixtureOfFiniteMixtures(gamma=1e300), None)],
    ids=repr,
)  # fmt: skip
def test_compiled_kernels_at_extreme_priors(prior, clusters):
    """The numba paths read the same tables: the exact posterior's log Z equals the enumeration,
    prior draws sit where the prior puts its mass, and the Gibbs kernel's partition_logp is the
    exact log posterior of its state."""
    n = 6
    y = np.random.default_rng(1).normal(size=n)
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=prior)
        pmp.MarginalLikelihood("y", partition=z, family=pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), observed=y)
    spec = partition_spec(model)
    states = all_partitions(n)
    exact = pmp.exact_posterior(model, progressbar=False)
    assert exact.log_z == pytest.approx(logsumexp(spec.log_posterior(states)), abs=1e-9)
    draws = pm.draw(pmp.Partition.dist(n_items=n, prior=prior), draws=20, random_seed=2)
    assert np.array_equal(pmp.canonicalize(draws), draws)
    if clusters is not None:  # every other number of clusters has prior probability below 1e-280
        assert np.all(draws.max(axis=1) + 1 == clusters)
    kernel = PartitionKernel.from_spec(
        spec, MoveMix(n_gibbs=1, n_split_merge=0, n_scans=0, gibbs_probability=0.0, thin=1)
    )
    state, rng = kernel.init(np.zeros(n, dtype=int)), np.random.default_rng(3)
    for _ in range(30):
        state, result = kernel.step(state, rng)
        assert result.partition_logp == pytest.approx(spec.log_posterior(state[None])[0], abs=1e-9)
