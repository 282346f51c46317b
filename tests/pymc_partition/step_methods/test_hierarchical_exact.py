"""Compound sampling (NUTS for a hyperparameter, given explicitly, and a partition step for the
labels) against the exact joint posterior: enumeration of all partitions times quadrature over
the hyperparameter. (``pm.sample()`` without ``step=`` assigns ``PartitionHyperparameters`` to
these hyperparameters instead: ``test_hierarchical_hyper.py``.)

For each case the exact posterior gives E[theta | y], three quantiles of theta and the pmf of the
number of clusters; ``pm.sample`` (NUTS with GibbsPartition assigned by PyMC, SplitMerge or
SequentialMergeSplit)
must agree within five Monte Carlo standard errors (``az.mcse``, which accounts for
autocorrelation), a threshold a correct sampler crosses with probability below 1e-5 per check.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import xarray as xr
from scipy.special import logsumexp
from test_priors import all_partitions

import pymc_partition as pmp
from pymc_partition.likelihood import MarginalLikelihoodRV

N = 5
RNG = np.random.default_rng(7)
BINARY = (RNG.random((N, 4)) < np.array([0.2, 0.8, 0.5, 0.3])).astype(float)
BINARY[:2] = 1 - BINARY[:2]
NORMAL = np.concatenate([RNG.normal(-1.0, 0.4, (3, 2)), RNG.normal(1.5, 0.4, (2, 2))])
# NUTS's 16,000 draws of gradients: compiled they cost less than in FAST_COMPILE (tests/pymc_partition/conftest.py)
pytestmark = pytest.mark.default_backend

CASES = {
    # name: (model builder, hyperparameter name, log prior density of theta, grid of theta)
    "dp_alpha": (
        lambda: _build(lambda t: pmp.DirichletProcess(alpha=t), lambda t: pmp.BetaBernoulli(1.0, 1.0),
                       lambda: pm.Gamma("theta", 2.0, 1.0), BINARY),
        lambda t: np.log(t) - t, np.exp(np.linspace(-9, 4, 3001)),
    ),
    "nig_mu0": (
        lambda: _build(lambda t: pmp.DirichletProcess(1.0), lambda t: pmp.NormalInverseGamma(t, 0.5, 2.0, 0.5),
                       lambda: pm.Normal("theta", 0.0, 2.0), NORMAL),
        lambda t: -t**2 / 8, np.linspace(-12, 12, 3001),
    ),
    "beta_bernoulli_a": (
        lambda: _build(lambda t: pmp.UniformMultinomialDirichlet(), lambda t: pmp.BetaBernoulli(t, 1.0),
                       lambda: pm.Gamma("theta", 2.0, 2.0), BINARY),
        lambda t: np.log(t) - 2 * t, np.exp(np.linspace(-9, 3.5, 3001)),
    ),
}  # fmt: skip


def _build(prior, family, hyper, data):
    with pm.Model() as model:
        theta = hyper()
        z = pmp.Partition("z", n_items=N, prior=prior(theta))
        pmp.MarginalLikelihood("y", partition=z, family=family(theta), observed=data)
    return model


def _exact(model, log_prior, grid):
    """Posterior of theta on ``grid`` (trapezoid weights) and p(z | theta, y) for all z."""
    states = all_partitions(N)
    n_clusters = states.max(axis=1) + 1
    z = model["z"]
    obs = next(o for o in model.observed_RVs if isinstance(o.owner.op, MarginalLikelihoodRV))
    op = obs.owner.op
    theta = pt.dscalar("theta")
    # prior tables, statistics and family as functions of theta (the model's own graphs)
    graphs = [z.owner.inputs[2], z.owner.inputs[3], obs.owner.inputs[3], *obs.owner.inputs[4:-1]]
    graphs = pytensor.graph.replace.graph_replace(graphs, {model["theta"]: theta}, strict=False)
    numbers = pytensor.function([theta], graphs, on_unused_input="ignore")
    S = pt.matrix("S")
    params = [theta] if op.param_names else []
    lm = pytensor.function([S, theta], op.family_at(params).log_marginal(S), on_unused_input="ignore")
    onehot = (states[:, :, None] == np.arange(N)).astype(float)  # (state, item, cluster)
    log_joint = np.empty((grid.size, len(states)))
    for g, t in enumerate(grid):
        log_g, log_h, stats, *_ = numbers(t)
        sizes = onehot.sum(axis=1)  # (state, cluster)
        cluster_stats = np.einsum("sic,ik->sck", onehot, stats)
        lms = np.asarray(lm(cluster_stats.reshape(-1, stats.shape[1]), t)).reshape(len(states), N)
        occupied = sizes > 0
        log_joint[g] = (
            log_g[n_clusters] + np.where(occupied, log_h[sizes.astype(int)] + lms, 0.0).sum(axis=1) + log_prior(t)
        )
    log_marg = logsumexp(log_joint, axis=1)  # log p(theta, y) up to a constant
    w = np.exp(log_marg - log_marg.max()) * np.gradient(grid)
    w /= w.sum()
    p_z_given = np.exp(log_joint - log_marg[:, None])
    pmf_c = np.array([(w[:, None] * p_z_given[:, n_clusters == c]).sum() for c in range(1, N + 1)])
    cdf = np.cumsum(w)
    quantiles = {q: float(np.interp(q, cdf, grid)) for q in (0.1, 0.5, 0.9)}
    return float(w @ grid), quantiles, pmf_c


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
    build, log_prior, grid = CASES[case]
    model = build()
    mean, quantiles, pmf_c = _exact(model, log_prior, grid)
    assert pmf_c.sum() == pytest.approx(1.0, abs=1e-9)
    with model:
        steps = [pm.NUTS([model["theta"]])]  # NUTS asked for: pm.sample() would not choose it
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
