"""``pm.sample()`` on hierarchical clustering models, the parameters hanging off the partition
sampled by ``PartitionHyperparameters`` (Escobar-West or slice, on the clusters), against the exact
joint posterior: all 52 partitions of 5 items times quadrature over the parameters.

Each case's exact posterior is written here from the formulas (the priors' tables and the
families' log marginals in closed form, independently of the package's code), on
the parameters' natural scale with trapezoid-like weights (``np.gradient``) on grids fine enough
that the quadrature error is far below the Monte Carlo error.

Thresholds: each estimate (a parameter's mean and its 10/50/90 % quantiles, and the probability
of each number of clusters) must lie within 5 Monte Carlo standard errors of the exact value
(``az.mcse``, batch means over the chains, which accounts for autocorrelation), plus 2e-3 for the
quadrature and the MCSE's own error on tiny probabilities. Under a correct sampler each estimate
is approximately normal around the exact value, so a check fails with probability
``P(|Z| > 5) = 5.7e-7``; the file makes about 100 checks, a false alarm below 1e-4. (A DP
``alpha`` with another prior is slice sampled like Pitman-Yor's: ``tests/pymc_partition/engine`` checks the
slice update itself.)
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats
from scipy.special import gammaln, logsumexp
from test_priors import all_partitions

import pymc_partition as pmp

N = 5
RNG = np.random.default_rng(7)
BINARY = (RNG.random((N, 4)) < np.array([0.2, 0.8, 0.5, 0.3])).astype(float)
BINARY[:2] = 1 - BINARY[:2]
NORMAL = np.concatenate([RNG.normal(-1.0, 0.4, (3, 2)), RNG.normal(1.5, 0.4, (2, 2))])

STATES = all_partitions(N)
N_CLUSTERS = STATES.max(axis=1) + 1
SIZES = (STATES[:, :, None] == np.arange(N)).sum(axis=1)  # (state, cluster), zeros when empty
OCCUPIED = SIZES > 0


def _cluster_sums(data):
    """Per state and cluster: sizes ``(state, cluster)``, sums and sums of squares
    ``(state, cluster, variable)``."""
    onehot = (STATES[:, :, None] == np.arange(N)).astype(float)  # (state, item, cluster)
    return (SIZES.astype(float), np.einsum("sic,iv->scv", onehot, data),
            np.einsum("sic,iv->scv", onehot, data**2))  # fmt: skip


def _log_lik_beta_bernoulli(a, b):
    """``sum_c log m(y_c)`` of every state, Beta(a, b)-Bernoulli per variable, for ``a`` of any
    shape ``(...)``: ``(..., state)``, from ``log B(a + s, b + n - s) - log B(a, b)``."""
    n, s, _ = _cluster_sums(BINARY)
    a = np.asarray(a, dtype=float)[..., None, None, None]
    n = n[..., None]
    per = (gammaln(a + s) + gammaln(b + n - s) - gammaln(a + b + n)
           - gammaln(a) - gammaln(b) + gammaln(a + b))  # fmt: skip
    return np.where(OCCUPIED[..., None], per, 0.0).sum(axis=(-1, -2))


def _log_lik_nig(mu0, kappa0, alpha0, beta0):
    """The same for the normal-inverse-gamma model per variable (closed form), ``mu0 (...)``."""
    n, s1, s2 = _cluster_sums(NORMAL)
    mu0 = np.asarray(mu0, dtype=float)[..., None, None, None]
    n = np.maximum(n, 1)[..., None]
    mean = s1 / n
    kn, an = kappa0 + n, alpha0 + n / 2
    bn = beta0 + 0.5 * (s2 - n * mean**2) + kappa0 * n * (mean - mu0) ** 2 / (2 * kn)
    per = (-n / 2 * np.log(2 * np.pi) + 0.5 * np.log(kappa0 / kn) + alpha0 * np.log(beta0)
           - an * np.log(bn) + gammaln(an) - gammaln(alpha0))  # fmt: skip
    return np.where(OCCUPIED[..., None], per, 0.0).sum(axis=(-1, -2))


def _partition_term(log_g, log_h_of_size):
    """``log_g[C] + sum_c log_h[n_c]`` of every state, from ``log_g (..., N + 1)`` and a function
    of the sizes (broadcast over the leading axes of the parameters)."""
    lh = np.where(OCCUPIED, log_h_of_size(np.maximum(SIZES, 1)), 0.0).sum(axis=-1)
    return np.take(log_g, N_CLUSTERS, axis=-1) + lh


def _log_rising(x, n):
    return gammaln(x + n) - gammaln(x)


# ------------------------------------------------------------------ exact posteriors per case
def _exact_dp():
    a = np.exp(np.linspace(-9, 4.5, 4001))
    C = np.arange(N + 1)
    log_g = C * np.log(a)[:, None] - _log_rising(a, N)[:, None]  # (grid, N + 1)
    part = _partition_term(log_g, lambda n: gammaln(n))  # (grid, state)
    log_joint = stats.gamma.logpdf(a, 2.0)[:, None] + part + _log_lik_beta_bernoulli(1.0, 1.0)
    return {"alpha": a}, log_joint


def _exact_py():
    a = np.exp(np.linspace(-8, 4, 481))[:, None, None]
    d = np.linspace(0.0005, 0.9995, 400)[None, :, None]
    k = np.arange(1, N)
    # log_g[C] = sum_{k < C} log(alpha + k d) - log (alpha + 1)_{N-1}
    steps = np.log(a + k * d)  # (A, D, N - 1)
    edge = steps.shape[:2] + (1,)
    log_g = np.concatenate([np.full(edge, -np.inf), np.zeros(edge), np.cumsum(steps, axis=-1)],
                           axis=-1) - _log_rising(a + 1, N - 1)  # fmt: skip
    # log_h[n] = log (1 - d)_{n - 1}, per size
    part = _partition_term(log_g, lambda n: _log_rising(1 - d[..., None], n - 1))
    log_prior = stats.gamma.logpdf(a, 2.0, scale=1.0)  # d ~ Uniform(0, 1)
    log_joint = log_prior + part + _log_lik_beta_bernoulli(1.0, 1.0)
    grids = {"alpha": a[:, 0, 0], "d": d[0, :, 0]}
    return grids, log_joint


def _exact_mfm():
    g = np.exp(np.linspace(-7, 4, 2001))[:, None]
    k = np.arange(1, N + 1)
    log_pk = np.full(N, -np.log(N))
    t = np.arange(1, N + 1)
    # log V_N(t) = log sum_{k >= t} k!/(k-t)! Gamma(g k)/Gamma(g k + N) p(k)
    log_falling = np.where(k >= t[:, None], gammaln(np.maximum(k - t[:, None], 0) + 1), np.inf)  # log (k-t)!
    terms = (gammaln(k + 1)[None, None, :] - log_falling[None]
             - _log_rising(g[:, :, None] * k, N) + log_pk)  # fmt: skip
    log_v = logsumexp(terms, axis=-1)  # (grid, N)
    log_g = np.concatenate([np.full((g.shape[0], 1), -np.inf), log_v], axis=1)
    part = _partition_term(log_g, lambda n: _log_rising(g[:, :, None], n))
    log_prior = stats.gamma.logpdf(g, 2.0, scale=0.5)
    log_joint = log_prior + part + _log_lik_beta_bernoulli(1.0, 1.0)
    return {"gamma": g[:, 0]}, log_joint


def _exact_nig_mu0():
    mu0 = np.linspace(-9, 9, 721)
    s2 = np.exp(np.linspace(-6, 5, 441))
    # the partition prior is a fixed DP(1): the same for every (mu0, s2)
    part = _partition_term(np.arange(N + 1) * 0.0 - _log_rising(1.0, N), lambda n: gammaln(n))
    lik = _log_lik_nig(mu0, 0.5, 2.0, 0.5)
    log_prior = (stats.invgamma.logpdf(s2, 3.0, scale=2.0)[None, :]
                 + stats.norm.logpdf(mu0[:, None], 0.0, np.sqrt(s2)[None, :]))  # fmt: skip
    log_joint = log_prior[:, :, None] + (part + lik)[:, None, :]
    return {"mu0": mu0, "s2": s2}, log_joint


def _exact_beta_bernoulli():
    a = np.exp(np.linspace(-9, 3.5, 2001))
    umd = pmp.UniformMultinomialDirichlet().tables(N)
    part = _partition_term(umd[0], lambda n: umd[1][n])
    lik = _log_lik_beta_bernoulli(a, 1.0)
    log_joint = stats.gamma.logpdf(a, 2.0, scale=0.5)[:, None] + part + lik
    return {"a": a}, log_joint


# ------------------------------------------------------------------ models
def _model(case):
    with pm.Model() as model:
        if case == "dp_alpha_gamma":
            alpha = pm.Gamma("alpha", 2.0, 1.0)
            prior, family, data = pmp.DirichletProcess(alpha=alpha), pmp.BetaBernoulli(1.0, 1.0), BINARY
        elif case == "pitman_yor":
            alpha, d = pm.Gamma("alpha", 2.0, 1.0), pm.Uniform("d", 0.0, 1.0)
            prior, family, data = pmp.PitmanYor(alpha=alpha, d=d), pmp.BetaBernoulli(1.0, 1.0), BINARY
        elif case == "mfm_gamma":
            gamma = pm.Gamma("gamma", 2.0, 2.0)
            prior = pmp.MixtureOfFiniteMixtures("uniform", gamma=gamma)  # K uniform on 1..N
            family, data = pmp.BetaBernoulli(1.0, 1.0), BINARY
        elif case == "nig_mu0":
            s2 = pm.InverseGamma("s2", 3.0, 2.0)
            mu0 = pm.Normal("mu0", 0.0, sigma=pm.math.sqrt(s2))
            prior, family, data = pmp.DirichletProcess(1.0), pmp.NormalInverseGamma(mu0, 0.5, 2.0, 0.5), NORMAL
        elif case == "beta_bernoulli_a":
            a = pm.Gamma("a", 2.0, 2.0)
            prior, family, data = pmp.UniformMultinomialDirichlet(), pmp.BetaBernoulli(a, 1.0), BINARY
        z = pmp.Partition("z", n_items=N, prior=prior)
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=data)
    return model


CASES = {
    # name: (exact posterior, the update expected for each parameter)
    "dp_alpha_gamma": (_exact_dp, {"alpha": "escobar_west"}),
    "pitman_yor": (_exact_py, {"alpha": "slice", "d": "slice"}),
    "mfm_gamma": (_exact_mfm, {"gamma": "slice"}),
    "nig_mu0": (_exact_nig_mu0, {"mu0": "slice", "s2": "slice"}),
    "beta_bernoulli_a": (_exact_beta_bernoulli, {"a": "slice"}),
}


#: parameters whose grid spans their whole (bounded) support: mass at its ends is expected
BOUNDED = {"d"}


def _marginals(grids, log_joint):
    """Per parameter its marginal weights on its grid, and the pmf of the number of clusters."""
    names = list(grids)
    w = np.exp(log_joint - log_joint.max())
    for axis, name in enumerate(names):  # quadrature weights of each grid
        shape = [1] * w.ndim
        shape[axis] = -1
        w = w * np.gradient(grids[name]).reshape(shape)
    w /= w.sum()
    state_axis = w.ndim - 1
    marg = {}
    for axis, name in enumerate(names):
        others = tuple(a for a in range(w.ndim) if a != axis)
        marg[name] = w.sum(axis=others)
    p_state = w.sum(axis=tuple(range(state_axis)))
    pmf_c = np.bincount(N_CLUSTERS - 1, weights=p_state, minlength=N)
    return marg, pmf_c


def _scalar(x):
    """A one-number result of ArviZ: a Dataset on ArviZ 0.x, a DataArray on ArviZ 1.x."""
    return float((x.to_array() if isinstance(x, xr.Dataset) else x).item())


def _check_against_exact(idata, grids, marg, pmf_c):
    for name, grid in grids.items():
        draws = idata.posterior[name]
        w = marg[name]
        mean = float(w @ grid)
        se = _scalar(az.mcse(draws))
        assert abs(float(draws.mean()) - mean) < 5 * se + 2e-3, (name, float(draws.mean()), mean, se)
        cdf = np.cumsum(w)
        for q in (0.1, 0.5, 0.9):
            exact = float(np.interp(q, cdf, grid))
            est = float(draws.quantile(q))
            se_q = _scalar(az.mcse(draws, method="quantile", prob=q))
            assert abs(est - exact) < 5 * se_q + 2e-3, (name, q, est, exact, se_q)
    n_clusters = idata.sample_stats["n_clusters"]
    for c in range(1, N + 1):
        ind = (n_clusters == c).astype(float)
        se_c = _scalar(az.mcse(ind)) if ind.std() > 0 else 0.0
        assert abs(float(ind.mean()) - pmf_c[c - 1]) < 5 * se_c + 2e-3, (c, float(ind.mean()), pmf_c[c - 1], se_c)


def _sample(model, seed=11):
    with model:
        return pm.sample(draws=1500, tune=300, chains=4, cores=1, random_seed=seed, progressbar=False,
                         compute_convergence_checks=False)  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_partition_hyperparameters_match_exact_joint_posterior(case):
    exact, updates = CASES[case]
    grids, log_joint = exact()
    marg, pmf_c = _marginals(grids, log_joint)
    assert pmf_c.sum() == pytest.approx(1.0, abs=1e-9)
    for name, w in marg.items():  # the grids hold the posterior: little mass at their ends
        if name not in BOUNDED:
            assert w[:5].sum() + w[-5:].sum() < 1e-3, name
    model = _model(case)
    # pm.sample() chose the steps: PartitionHyperparameters for exactly these variables
    from pymc.sampling.mcmc import assign_step_methods

    _, selected = assign_step_methods(model, None, pm.step_methods.STEP_METHODS)
    chosen = {type_.__name__: sorted(model.values_to_rvs[v].name for v in vs) for type_, vs in selected.items()}
    assert chosen == {"PartitionHyperparameters": sorted(updates), "GibbsPartition": ["z"]}, chosen
    step = pmp.PartitionHyperparameters([model[n] for n in updates], model=model)
    ew = {int(r[0]) for r in step.block.escobar_west}
    kinds = {}
    for rv_name in updates:
        value_name = model.rvs_to_values[model[rv_name]].name
        j = step.block.names.index(value_name)
        kinds[rv_name] = "escobar_west" if j in ew else "slice"
    assert {k: kinds[k] for k in updates} == updates
    _check_against_exact(_sample(model), grids, marg, pmf_c)


def test_harness_detects_a_wrong_update(monkeypatch):
    """Power of the checks above: Escobar-West with the Gamma prior's rate halved (a plausible
    slip: the scale read as the rate) targets the wrong conditional, and the checks fail."""
    from pymc_partition import model_spec

    original = model_spec._escobar_west_row

    def wrong(*args):
        row = original(*args)
        return None if row is None else (row[0], row[1], 0.5 * row[2], row[3])

    monkeypatch.setattr(model_spec, "_escobar_west_row", wrong)
    grids, log_joint = _exact_dp()
    marg, pmf_c = _marginals(grids, log_joint)
    with pytest.raises(AssertionError):
        _check_against_exact(_sample(_model("dp_alpha_gamma")), grids, marg, pmf_c)


def test_nuts_can_still_be_asked_for():
    """A user's explicit step wins: NUTS for alpha, GibbsPartition for z, nothing else."""
    model = _model("dp_alpha_gamma")
    with model:
        idata = pm.sample(draws=50, tune=50, chains=1, cores=1, step=[pm.NUTS([model["alpha"]])],
                          random_seed=1, progressbar=False, compute_convergence_checks=False)  # fmt: skip
    assert "hyper_n_evals" not in idata.sample_stats and "tree_depth" in idata.sample_stats
