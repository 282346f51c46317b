"""Every family at extreme but legal hyperparameters (1e-300 ... 1e300 where the domain allows):
cluster log marginals finite, at most 0 and exact where they are probabilities (the discrete
families), the samplers' predictive forms agreeing with them, or the hyperparameters refused
with a message naming the parameter (and, for location parameters, the range)."""

import itertools
import math

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

import pymc_partition as pmp
from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.predictive import check_form
from pymc_partition.spec import PartitionSpec

EXT = [1e-300, 1e-100, 1e-8, 1.0, 1e8, 1e100, 1e300]
RNG = np.random.default_rng(0)
BINARY = (RNG.random((8, 3)) < 0.4).astype(float)
CODES = RNG.integers(0, 3, (8, 2)).astype(float)
COUNTS = RNG.poisson(3.0, (8, 2)).astype(float)
NORMAL = RNG.normal(size=(8, 2))


def _clusters(stats):
    """Summed statistics of a few clusters: one item, two, four, all eight."""
    return np.stack([stats[0], stats[:2].sum(0), stats[:4].sum(0), stats.sum(0)])


def _rising(x, k):
    """log(x (x+1) ... (x+k-1)) for an integer count k: correctly rounded sum (the reference)."""
    return math.fsum(math.log(x + i) for i in range(int(k)))


def _beta_bernoulli(S, a, b):
    n = S[0]
    return sum(_rising(a, s) + _rising(b, n - s) - _rising(a + b, n) for s in S[1:])


def _dirichlet_categorical(S, alpha):
    out = 0.0
    for counts in S.reshape(-1, 3):
        out += sum(_rising(alpha, c) for c in counts) - _rising(3 * alpha, counts.sum())
    return out


def _gamma_poisson(S, a, b):
    n, V = S[0], 2
    return sum(_rising(a, s) - a * math.log1p(n / b) - s * math.log(b + n) - lf
               for s, lf in zip(S[1 : 1 + V], S[1 + V :]))  # fmt: skip


DISCRETE = {
    # family of named scalar variables, data, reference log marginal, grids of values
    "beta_bernoulli": (lambda a, b: pmp.BetaBernoulli(a, b), BINARY, _beta_bernoulli, [EXT, EXT]),
    "dirichlet_categorical": (lambda a: pmp.DirichletCategorical(a, n_categories=3), CODES, _dirichlet_categorical,
                              [EXT]),
    "gamma_poisson": (lambda a, b: pmp.GammaPoisson(a, b), COUNTS, _gamma_poisson, [EXT, EXT]),
}  # fmt: skip


class _Graph:
    """The family's log marginal compiled once with its hyperparameters as inputs, at fixed
    values: what :func:`check_form` compares a predictive form with."""

    addresses = np.zeros(2, dtype=np.int64)  # the forms never call the graph

    def __init__(self, fn, values):
        self.fn, self.values = fn, values

    def __call__(self, stats):
        return float(self.fn(np.atleast_2d(stats), *self.values)[0])


def _compiled(make, n_params):
    params = [pt.dscalar(f"p{i}") for i in range(n_params)]
    stats = pt.dmatrix("stats")
    return pytensor.function([stats, *params], make(*params).log_marginal(stats))


@pytest.mark.parametrize("name", list(DISCRETE))
def test_discrete_families_are_exact_probabilities_at_every_extreme(name):
    """Log probabilities of the data, at most 0 and equal to the exact sums of logarithms for
    every combination (BetaBernoulli(1e-300, 1e100) gave +0.69, and (1e-300, 1e-300) +inf: a
    difference of log-gammas, and PyTensor rewriting b + (n - s) as (b + n) - s); the samplers'
    predictive forms agree with them."""
    make, data, reference, grids = DISCRETE[name]
    fn = _compiled(make, len(grids))
    stats = make(*[1.0] * len(grids)).item_stats(data)
    clusters = _clusters(stats)
    for values in itertools.product(*grids):
        got = fn(clusters, *values)
        for S, value in zip(clusters, got):
            want = reference(S, *values)
            scale = 1.0 + abs(want)
            assert abs(value - want) <= 1e-12 * scale, (values, S, value, want)
            assert value <= 1e-12 * scale, (values, value)
    for values in itertools.product(*[(g[0], g[3], g[-1]) for g in grids]):  # the corners
        family = make(*values)
        check_form(family.predictive_form(stats), _Graph(fn, values), stats, rtol=1e-10)


def test_normal_inverse_gamma_is_finite_and_its_form_agrees_at_every_extreme():
    """Finite for every kappa0, alpha0, beta0 in 1e-300 ... 1e300 and mu0 within +-1e150 (the
    raw moments and log-gamma differences lost everything there); mu0 beyond is refused."""
    make = lambda m, k, a, b: pmp.NormalInverseGamma(m, k, a, b)  # noqa: E731
    fn = _compiled(make, 4)
    stats = make(0.0, 1.0, 1.0, 1.0).item_stats(NORMAL)
    clusters = _clusters(stats)
    grids = [[0.0, -1e150, 1e150], EXT, EXT, EXT]
    for values in itertools.product(*grids):
        assert np.all(np.isfinite(fn(clusters, *values))), values
    base = make(0.0, 1.0, 1.0, 1.0)  # the statistics are sums about its centre, 0, as the graph's
    for values in itertools.product(*[(g[0], g[-1]) for g in grids]):
        family = base.with_values(**dict(zip(base._param_names, values)))
        check_form(family.predictive_form(stats), _Graph(fn, values), stats, rtol=1e-10)
    with pytest.raises(ValueError, match=r"`mu0` must lie within \+-1e\+150"):
        pmp.NormalInverseGamma(1e300, 1.0, 1.0, 1.0)


def _kernel(prior_family, data):
    spec = PartitionSpec.from_data(pmp.DirichletProcess(1.0), prior_family, data)
    return PartitionKernel.from_spec(
        spec, MoveMix(n_gibbs=1, n_split_merge=0, n_scans=0, gibbs_probability=0.0, thin=1)
    )


def test_continuous_families_are_finite_or_refused_naming_the_parameter():
    """NormalInverseWishart and SpikeSlabNormal: where a combination of extreme hyperparameters
    and these data leaves floating point (a tiny psi0 makes Psi_n numerically singular; variances
    of 1e-300 against unit data), the samplers refuse the family when they are built, naming
    the hyperparameter whose moderate value makes it finite, instead of scoring NaN."""
    niw = lambda m, k, nu, s: pmp.NormalInverseWishart(pt.stack([m, m]), k, nu, s * pt.eye(2))  # noqa: E731
    fn = _compiled(niw, 4)
    stats = pmp.NormalInverseWishart(np.zeros(2), 1.0, 3.0, np.eye(2)).item_stats(NORMAL)
    failing = [v for v in itertools.product([0.0, 1e150], EXT, [1 + 1e-8, 2.0, 1e8, 1e300], EXT)
               if not np.all(np.isfinite(fn(_clusters(stats), *v)))]  # fmt: skip
    # finite wherever psi0 is not far below the data's scale and mu0, kappa0 are moderate
    assert all(v[3] < 1e-8 or v[0] != 0.0 or v[1] < 1e-8 for v in failing), failing[:5]
    with pytest.raises(ValueError, match=r"(?s)it is finite with psi0 at a moderate value.*Rescale"):
        _kernel(pmp.NormalInverseWishart(np.zeros(2), 1.0, 3.0, 1e-300 * np.eye(2)), NORMAL)
    with pytest.raises(ValueError, match=r"`mu0` must lie within \+-1e\+150"):
        pmp.NormalInverseWishart(np.full(2, 1e300), 1.0, 3.0, np.eye(2))
    # the spike-and-slab: every extreme of the slab and p, with the data's own scale
    spike = lambda st, p: pmp.SpikeSlabNormal(0.0, 1.0, 0.3, st, p)  # noqa: E731
    fn = _compiled(spike, 2)
    stats = pmp.SpikeSlabNormal(0.0, 1.0, 0.3, 1.0, 0.5).item_stats(NORMAL)
    for values in itertools.product(EXT, [1e-300, 1e-8, 0.5, 1 - 1e-16]):
        assert np.all(np.isfinite(fn(_clusters(stats), *values))), values
    with pytest.raises(
        ValueError, match=r"(?s)cannot be evaluated on these data.*their combination|not finite although"
    ):
        _kernel(pmp.SpikeSlabNormal(0.0, 1e-300, 1e-300, 1e100, 0.5), NORMAL[:, :1] * 1e10)
