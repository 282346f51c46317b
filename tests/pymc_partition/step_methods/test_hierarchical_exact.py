"""Compound sampling (NUTS for a hyperparameter, given explicitly, and a partition step for the
labels) against the exact joint posterior: enumeration of all partitions times quadrature over
the hyperparameter. (``pm.sample()`` without ``step=`` assigns ``PartitionHyperparameters`` to
these hyperparameters instead: ``test_hierarchical_hyper.py``.)

For each case the exact posterior gives E[theta | y], three quantiles of theta and the pmf of the
number of clusters; ``pm.sample`` (NUTS with GibbsPartition assigned by PyMC, SplitMerge or
SequentialMergeSplit)
must agree within five Monte Carlo standard errors (``az.mcse``, which accounts for
autocorrelation), a threshold a correct sampler crosses with probability below 1e-5 per check.

The exact posterior is written here in closed form (scipy's ``gammaln`` / ``betaln``): the prior's
pmf normalized over the 52 partitions and the conjugate log marginals, independent of the graphs the
sampler runs (and free of their C compilation); ``test_reference_equals_the_library_at_one_value``
proves it equal to the library's own numpy evaluation of the prior and the family.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy.special import betaln, gammaln, logsumexp
from test_priors import all_partitions

import pymc_partition as pmp
from pymc_partition._pytensor_modes import numba_mode

N = 5
RNG = np.random.default_rng(7)
BINARY = (RNG.random((N, 4)) < np.array([0.2, 0.8, 0.5, 0.3])).astype(float)
BINARY[:2] = 1 - BINARY[:2]
NORMAL = np.concatenate([RNG.normal(-1.0, 0.4, (3, 2)), RNG.normal(1.5, 0.4, (2, 2))])


def _dp(alpha, sizes):
    """log pmf of the Chinese restaurant process: alpha^C prod (n_c - 1)! / (alpha (alpha + 1) ... (alpha + N - 1))."""
    occupied = sizes > 0
    log_h = np.where(occupied, gammaln(np.maximum(sizes, 1)), 0.0).sum(-1)
    return occupied.sum(-1) * np.log(alpha) + gammaln(alpha) - gammaln(alpha + N) + log_h


def _umd(sizes):
    """log pmf of the uniform multinomial-Dirichlet prior, (C-1)! prod n_c! / (N+C-1)! normalized over the states."""
    c = (sizes > 0).sum(-1)
    log_pi = gammaln(c) + gammaln(sizes + 1).sum(-1) - gammaln(N + c)
    return log_pi - logsumexp(log_pi)


def _beta_bernoulli(a, b, n, s1, s2):
    """Cluster log marginal of binary data, log B(a + S, b + n - S) - log B(a, b) summed over the variables."""
    return (betaln(a + s1, b + n - s1) - betaln(a, b)).sum(-1)


def _normal_inverse_gamma(mu0, kappa0, alpha0, beta0, n, s1, s2):
    """Cluster log marginal of normal data under a Normal-Inverse-Gamma prior, summed over the variables."""
    d = s1 - n * mu0  # sum of (y - mu0)
    q = s2 - 2 * mu0 * s1 + n * mu0**2  # sum of (y - mu0)^2
    kappa_n, alpha_n = kappa0 + n, alpha0 + n / 2
    beta_n = beta0 + 0.5 * (q - d**2 / kappa_n)
    out = -n / 2 * np.log(2 * np.pi) + 0.5 * np.log(kappa0 / kappa_n) + alpha0 * np.log(beta0)
    return (out - alpha_n * np.log(beta_n) + gammaln(alpha_n) - gammaln(alpha0)).sum(-1)


CASES = {
    # name: (model's prior and family as functions of theta, its hyperprior, the data,
    #        closed forms of theta: log prior density, log pmf of a partition by its cluster sizes,
    #        cluster log marginal by its statistics n, sum y, sum y^2), grid of theta
    "dp_alpha": (
        lambda t: pmp.DirichletProcess(alpha=t), lambda t: pmp.BetaBernoulli(1.0, 1.0),
        lambda: pm.Gamma("theta", 2.0, 1.0), BINARY,
        lambda t: np.log(t) - t, _dp, lambda t, *s: _beta_bernoulli(1.0, 1.0, *s),
        np.exp(np.linspace(-9, 4, 3001)),
    ),
    "nig_mu0": (
        lambda t: pmp.DirichletProcess(1.0), lambda t: pmp.NormalInverseGamma(t, 0.5, 2.0, 0.5),
        lambda: pm.Normal("theta", 0.0, 2.0), NORMAL,
        lambda t: -t**2 / 8, lambda t, sizes: _dp(1.0, sizes),
        lambda t, *s: _normal_inverse_gamma(t, 0.5, 2.0, 0.5, *s),
        np.linspace(-12, 12, 3001),
    ),
    "beta_bernoulli_a": (
        lambda t: pmp.UniformMultinomialDirichlet(), lambda t: pmp.BetaBernoulli(t, 1.0),
        lambda: pm.Gamma("theta", 2.0, 2.0), BINARY,
        lambda t: np.log(t) - 2 * t, lambda t, sizes: _umd(sizes), lambda t, *s: _beta_bernoulli(t, 1.0, *s),
        np.exp(np.linspace(-9, 3.5, 3001)),
    ),
}  # fmt: skip
STATES = all_partitions(N)
ONEHOT = (STATES[:, :, None] == np.arange(N)).astype(float)  # (state, item, cluster)


def _build(case):
    prior, family, hyper, data = CASES[case][:4]
    with pm.Model() as model:
        theta = hyper()
        z = pmp.Partition("z", n_items=N, prior=prior(theta))
        pmp.MarginalLikelihood("y", partition=z, family=family(theta), observed=data)
    return model


def _log_partition_and_data(case, t):
    """log p(z) + log p(y | z) at theta ``t`` (shape (G, 1)) for every state: shape (G, state)."""
    data, _, log_pz, log_ml = CASES[case][3:7]
    sizes = ONEHOT.sum(axis=1)  # (state, cluster)
    s1, s2 = np.einsum("sic,iv->scv", ONEHOT, data), np.einsum("sic,iv->scv", ONEHOT, data**2)
    return log_pz(t, sizes) + log_ml(t[..., None, None], sizes[..., None], s1, s2).sum(-1)


def _exact(case):
    """Posterior mean and quantiles of theta (trapezoid weights on the grid) and the pmf of the number of clusters."""
    log_prior, grid = CASES[case][4], CASES[case][7]
    n_clusters = STATES.max(axis=1) + 1
    log_joint = log_prior(grid)[:, None] + _log_partition_and_data(case, grid[:, None])  # (grid, state)
    log_marg = logsumexp(log_joint, axis=1)  # log p(theta, y) up to a constant
    w = np.exp(log_marg - log_marg.max()) * np.gradient(grid)
    w /= w.sum()
    p_z_given = np.exp(log_joint - log_marg[:, None])
    pmf_c = np.array([(w[:, None] * p_z_given[:, n_clusters == c]).sum() for c in range(1, N + 1)])
    cdf = np.cumsum(w)
    quantiles = {q: float(np.interp(q, cdf, grid)) for q in (0.1, 0.5, 0.9)}
    return float(w @ grid), quantiles, pmf_c


@pytest.mark.parametrize("case", CASES)
def test_reference_equals_the_library_at_one_value(case):
    """The closed forms of the reference equal the library's numpy evaluation of the prior
    (``PartitionPrior.logp``) and the family (``log_marginal_numpy``) at one value of theta, on
    every partition: the reference is proven, yet independent of the graphs the sampler compiles."""
    prior, family, _, data = CASES[case][:4]
    t = 0.7
    stats = family(t).item_stats(data)
    cluster_stats = np.einsum("sic,ik->sck", ONEHOT, stats)
    library = prior(t).logp(STATES) + family(t).log_marginal_numpy(cluster_stats).sum(axis=1)
    np.testing.assert_allclose(_log_partition_and_data(case, np.array([[t]]))[0], library, rtol=1e-12, atol=1e-12)


def _scalar(x):
    """A one-number result of ArviZ: a Dataset on ArviZ 0.x, a DataArray on ArviZ 1.x."""
    return float((x.to_array() if isinstance(x, xr.Dataset) else x).item())


@pytest.mark.parametrize(
    "case, step",
    [("dp_alpha", "gibbs"), ("nig_mu0", "gibbs"), ("beta_bernoulli_a", "split_merge"), ("nig_mu0", "sams")],
)
def test_compound_sampling_matches_exact_joint_posterior(case, step):
    _check_against_exact(case, step)


def _check_against_exact(case, step, draws=3000, tune=1000):
    model = _build(case)
    mean, quantiles, pmf_c = _exact(case)
    assert pmf_c.sum() == pytest.approx(1.0, abs=1e-9)
    with model:
        # NUTS asked for (pm.sample() would not choose it), its 16,000 draws of gradients compiled by numba
        # (PyTensor 3's default backend); on PyMC 5 that compiles in a quarter of the C backend's gcc
        # time and runs faster. PyMC's other graphs run in FAST_COMPILE (tests/pymc_partition/conftest.py).
        steps = [pm.NUTS([model["theta"]], mode=numba_mode())]
        if step == "split_merge":
            steps.append(pmp.SplitMerge([model["z"]]))
        if step == "sams":
            steps.append(pmp.SequentialMergeSplit([model["z"]], n_proposals=3))
        idata = pm.sample(draws=draws, tune=tune, chains=4, cores=1, step=steps, random_seed=11,
                          progressbar=False, compute_convergence_checks=False)  # fmt: skip
    theta = idata.posterior["theta"]
    se = _scalar(az.mcse(theta))
    assert abs(float(theta.mean()) - mean) < 5 * se, (float(theta.mean()), mean, se)
    for q, value in quantiles.items():
        est = float(theta.quantile(q))
        se_q = _scalar(az.mcse(theta, method="quantile", prob=q))
        assert abs(est - value) < 5 * se_q + 1e-3, (q, est, value, se_q)
    n_clusters = idata.sample_stats["n_clusters"]
    for c in range(1, N + 1):
        ind = (n_clusters == c).astype(float)
        se_c = _scalar(az.mcse(ind)) if ind.std() > 0 else 0.0
        assert abs(float(ind.mean()) - pmf_c[c - 1]) < 5 * se_c + 2e-3, (c, float(ind.mean()), pmf_c[c - 1], se_c)


def test_harness_detects_a_step_that_ignores_the_hyperparameter(monkeypatch):
    """Power of the check above: a partition step that kept the initial alpha (never reading the
    point again) leaves the wrong conditional invariant, and the pmf of the number of clusters
    or the moments of alpha disagree with the exact posterior. A sixth of the draws suffices: there
    the stale step's P(one cluster) is 0.05 against the exact 0.13, 13-14 standard errors off on
    two seeds (the check allows 5); with more draws the gap only grows in standard errors."""
    from pymc_partition.model_spec import HyperparameterReader

    original = HyperparameterReader.read
    calls = {"n": 0}

    def stale(self, point):
        calls["n"] += 1
        return original(self, point) if calls["n"] == 1 else None

    monkeypatch.setattr(HyperparameterReader, "read", stale)
    with pytest.raises(AssertionError):
        _check_against_exact("dp_alpha", "gibbs", draws=500, tune=250)


@pytest.mark.default_backend
def test_docs_hierarchical_example_runs():
    """The hierarchical example of the documentation (docs/guides/hierarchical.md), run as written."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[3] / "docs" / "guides" / "hierarchical.md"
    cells = re.findall(r"```\{code-cell\} ipython3\n(.*?)```", page.read_text(), re.S)
    block = next(b for b in cells if "hierarchical clustering model" in b)
    namespace = {}
    exec(compile(block, str(page), "exec"), namespace)
    idata = namespace["idata"]
    assert {"alpha", "sigma2_theta", "z"} <= set(idata.posterior)
    # the steps the README says pm.sample() chose: no NUTS, the hyperparameters' own step
    assert "hyper_n_evals" in idata.sample_stats and "tree_depth" not in idata.sample_stats
    assert np.isfinite(namespace["exact"].log_z)
