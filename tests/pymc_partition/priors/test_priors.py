"""Partition priors: normalization, closed forms, validation; the Partition variable's logp and
prior draws.

Draws are compared with the exact prior pmf by Pearson's chi-square goodness-of-fit test with a
false-alarm rate of ``ALPHA = 0.001`` per prior (fixed seeds make the outcome deterministic);
bins with an expected count below 5 are pooled.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytest
from scipy import stats as sps
from scipy.special import gammaln, logsumexp

import pymc_partition as pmp
from pymc_partition.state import bell_number, canonicalize, is_canonical, state_keys

ALPHA = 0.001


def all_partitions(n):
    rows = [[0]]
    for _ in range(n - 1):
        rows = [r + [c] for r in rows for c in range(max(r) + 2)]
    return np.array(rows, dtype=np.int64).reshape(-1, n)


PRIORS = {
    "umd": pmp.UniformMultinomialDirichlet(),
    "dp_small": pmp.DirichletProcess(alpha=0.3),
    "dp_large": pmp.DirichletProcess(alpha=2.5),
    "py": pmp.PitmanYor(alpha=1.0, d=0.3),
    "py_negative_alpha": pmp.PitmanYor(alpha=-0.2, d=0.5),
    "uniform": pmp.UniformPartition(),
    "mfm_paper": pmp.MixtureOfFiniteMixtures(),
    "mfm_poisson": pmp.MixtureOfFiniteMixtures("poisson", gamma=0.7, k_param=1.5),
    "mfm_geometric": pmp.MixtureOfFiniteMixtures("geometric", gamma=2.0, k_param=0.3),
    "mfm_vector": pmp.MixtureOfFiniteMixtures([0.2, 0.0, 0.5, 0.3], gamma=0.5),
}


def _sizes(z):
    return np.bincount(z)


def closed_form(name, z):
    """The printed formula of each prior (the paper's prior only up to a constant)."""
    N = len(z)
    n = _sizes(z)
    C = len(n)
    if name == "umd":
        return math.lgamma(C) + sum(math.lgamma(k + 1) for k in n) - math.log(N) - math.lgamma(N + C)
    if name.startswith("dp"):
        a = PRIORS[name].alpha
        return C * math.log(a) + sum(math.lgamma(k) for k in n) - (math.lgamma(a + N) - math.lgamma(a))
    if name.startswith("py"):
        a, d = PRIORS[name].alpha, PRIORS[name].d
        return (
            sum(math.log(a + k * d) for k in range(1, C))
            - (math.lgamma(a + N) - math.lgamma(a + 1))
            + sum(math.lgamma(k - d) - math.lgamma(1 - d) for k in n)
        )
    if name == "uniform":
        return -math.log(bell_number(N))
    if name.startswith("mfm"):
        return _mfm_closed_form(PRIORS[name], N, n)
    raise KeyError(name)


def _mfm_pk(prior, k, N):
    """P(K = k) written out from the definitions (scipy-free)."""
    if prior.k_prior == "uniform":
        return 1.0 / N if k <= N else 0.0
    if prior.k_prior == "poisson":
        lam = prior.k_param
        return math.exp(-lam + (k - 1) * math.log(lam) - math.lgamma(k))
    if prior.k_prior == "geometric":
        return (1 - prior.k_param) ** (k - 1) * prior.k_param
    return prior.k_prior[k - 1] if k <= len(prior.k_prior) else 0.0


def _mfm_closed_form(prior, N, sizes):
    """Miller & Harrison (2018), eq. (3.2)-(3.3): V_N(t) by a plain sum to K = 400."""
    g, t = prior.gamma, len(sizes)
    v = sum(
        _mfm_pk(prior, k, N) * math.exp(math.lgamma(k + 1) - math.lgamma(k - t + 1)
                                        + math.lgamma(g * k) - math.lgamma(g * k + N))
        for k in range(t, 400)
    )  # fmt: skip
    if v == 0:  # more blocks than p(K) allows
        return -math.inf
    return math.log(v) + sum(math.lgamma(g + m) - math.lgamma(g) for m in sizes)


EXACT_CLOSED_FORM = {
    "dp_small", "dp_large", "py", "py_negative_alpha", "uniform",
    "mfm_paper", "mfm_poisson", "mfm_geometric", "mfm_vector",
}  # fmt: skip


@pytest.mark.parametrize("name", list(PRIORS))
@pytest.mark.parametrize("n", range(1, 9))
def test_prior_sums_to_one_and_matches_closed_form(name, n):
    prior = PRIORS[name]
    states = all_partitions(n)
    lp = prior.logp(states)
    assert lp.shape == (bell_number(n),)
    assert logsumexp(lp) == pytest.approx(0.0, abs=1e-10)
    ref = np.array([closed_form(name, z) for z in states])
    if name in EXACT_CLOSED_FORM:
        np.testing.assert_allclose(lp, ref, rtol=1e-12, atol=1e-10)
    else:  # printed up to a constant: the difference is the same for every state
        diff = lp - ref
        np.testing.assert_allclose(diff, diff[0], atol=1e-10)
    # the tables reproduce logp: log_g[C] + sum_c log_h[n_c]
    log_g, log_h = prior.tables(n)
    z = states[-1]
    assert log_g[z.max() + 1] + log_h[_sizes(z)].sum() == pytest.approx(lp[-1])


def test_prior_large_n_still_normalized():
    # the per-C masses sum to one (closed-form or recursive normalizer) also at 60 items
    from pymc_partition.priors import _log_stirling_weighted

    for prior in PRIORS.values():
        log_g, log_h = prior.tables(60)
        per_c = _log_stirling_weighted(log_h, 60)
        assert logsumexp(log_g[1:] + per_c[1:]) == pytest.approx(0.0, abs=1e-8)


@pytest.mark.parametrize("name", ["mfm_paper", "mfm_poisson", "mfm_geometric", "mfm_vector"])
@pytest.mark.parametrize("n", [1, 3, 5])
def test_mfm_is_the_sum_over_labelled_allocations(name, n):
    """Brute force: every labelled allocation of n items into K components (empty ones allowed),
    with its Dirichlet-multinomial probability, summed by the partition it induces and over K."""
    prior = PRIORS[name]
    g = prior.gamma
    states = all_partitions(n)
    index = {k: i for i, k in enumerate(state_keys(states, assume_canonical=True).tolist())}
    total = np.zeros(len(states))
    k_max = {"mfm_paper": n, "mfm_vector": 4}.get(name, 12)
    for K in range(1, k_max + 1):
        pk = _mfm_pk(prior, K, n)
        if pk == 0:
            continue
        alloc = np.indices((K,) * n).reshape(n, -1).T.astype(np.int64)
        counts = (alloc[:, :, None] == np.arange(K)).sum(axis=1)
        if name == "mfm_paper":  # the paper's printed formula, read as a labelled allocation
            log_p = (math.lgamma(K) - math.log(n) - math.lgamma(n + K)
                     + gammaln(counts + 1).sum(axis=1))  # fmt: skip
        else:
            log_p = (math.lgamma(K * g) - math.lgamma(K * g + n)
                     + (gammaln(counts + g) - math.lgamma(g)).sum(axis=1) + math.log(pk))  # fmt: skip
        keys = state_keys(canonicalize(alloc)).tolist()
        np.add.at(total, [index[k] for k in keys], np.exp(log_p))
    # each K contributes exactly p(K) in all: what K > k_max would add is at most P(K > k_max)
    # per partition, and exactly P(K > k_max) in all
    tail = 1.0 - sum(_mfm_pk(prior, K, n) for K in range(1, k_max + 1))
    missing = np.exp(prior.logp(states)) - total
    assert missing.min() >= -1e-13 and missing.max() <= tail + 1e-13
    assert missing.sum() == pytest.approx(tail, abs=1e-12)


@pytest.mark.parametrize("name, seed", [("mfm_paper", 11), ("mfm_poisson", 12), ("mfm_geometric", 13)])
def test_mfm_matches_its_generative_definition(name, seed):
    """Draw K ~ p(K), weights ~ Dirichlet(gamma), labels ~ Categorical(weights): the induced
    partitions follow prior.logp (Pearson chi-square, false alarm ALPHA)."""
    prior, n, n_draws = PRIORS[name], 4, 20_000
    rng = np.random.default_rng(seed)
    if prior.k_prior == "uniform":
        K = rng.integers(1, n + 1, n_draws)
    elif prior.k_prior == "poisson":
        K = rng.poisson(prior.k_param, n_draws) + 1
    else:
        K = rng.geometric(prior.k_param, n_draws)
    labels = np.empty((n_draws, n), dtype=np.int64)
    for i, k in enumerate(K):
        w = rng.dirichlet(np.full(k, prior.gamma))
        labels[i] = rng.choice(k, size=n, p=w)
    states = all_partitions(n)
    index = {k: i for i, k in enumerate(state_keys(states, assume_canonical=True).tolist())}
    counts = np.bincount([index[k] for k in state_keys(canonicalize(labels)).tolist()], minlength=len(states))
    expected = n_draws * np.exp(prior.logp(states))
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert expected.min() >= 5
    assert sps.chi2.sf(chi2, len(states) - 1) > ALPHA


def test_mfm_validation_and_scale():
    with pytest.raises(ValueError, match="k_param"):
        pmp.MixtureOfFiniteMixtures("poisson")
    with pytest.raises(ValueError, match="k_param"):
        pmp.MixtureOfFiniteMixtures("uniform", k_param=2.0)
    with pytest.raises(ValueError, match="k_param"):
        pmp.MixtureOfFiniteMixtures("geometric", k_param=1.5)
    with pytest.raises(ValueError, match="k_prior"):
        pmp.MixtureOfFiniteMixtures("negbin")
    with pytest.raises(ValueError, match="k_prior"):
        pmp.MixtureOfFiniteMixtures([0.5, -0.1])
    with pytest.raises(ValueError, match="gamma"):
        pmp.MixtureOfFiniteMixtures(gamma=0.0)
    assert pmp.MixtureOfFiniteMixtures() == pmp.MixtureOfFiniteMixtures("uniform", 1.0)
    assert pmp.MixtureOfFiniteMixtures([1, 1]) == pmp.MixtureOfFiniteMixtures([0.5, 0.5])
    assert "poisson" in repr(PRIORS["mfm_poisson"])
    # a vector p(K) on 1..k_max excludes partitions with more than k_max blocks
    assert PRIORS["mfm_vector"].logp(np.arange(5)) == -np.inf
    # the uniform-K reading at 500 items: normalized (recursion over block sizes)
    from pymc_partition.priors import _log_stirling_weighted

    for prior in (pmp.MixtureOfFiniteMixtures(), PRIORS["mfm_poisson"]):
        log_g, log_h = prior.tables(500)
        assert logsumexp(log_g[1:] + _log_stirling_weighted(log_h, 500)[1:]) == pytest.approx(0, abs=1e-9)


def test_crp_is_sequential_product():
    """CRP pmf of one state from the seating rule, independent of any formula."""
    a = 0.7
    z = np.array([0, 0, 1, 0, 2, 1, 1])
    p, counts = 1.0, []
    for i, lab in enumerate(z):
        if lab == len(counts):
            p *= a / (a + i)
            counts.append(1)
        else:
            p *= counts[lab] / (a + i)
            counts[lab] += 1
    assert pmp.DirichletProcess(alpha=a).logp(z) == pytest.approx(math.log(p), rel=1e-12)


@pytest.mark.parametrize(
    "factory, exc, match",
    [
        (lambda: pmp.DirichletProcess(alpha=0.0), ValueError, "alpha"),
        (lambda: pmp.DirichletProcess(alpha=-1.0), ValueError, "alpha"),
        (lambda: pmp.DirichletProcess(alpha=np.nan), ValueError, "alpha"),
        (lambda: pmp.DirichletProcess(alpha=np.inf), ValueError, "alpha"),
        (lambda: pmp.DirichletProcess(alpha="one"), TypeError, "alpha"),
        (lambda: pmp.PitmanYor(alpha=1.0, d=1.0), ValueError, "`d`"),
        (lambda: pmp.PitmanYor(alpha=1.0, d=-0.1), ValueError, "`d`"),
        (lambda: pmp.PitmanYor(alpha=-0.3, d=0.3), ValueError, "alpha"),
        (lambda: pmp.PitmanYor(alpha=np.nan, d=0.3), ValueError, "alpha"),
        (lambda: pmp.PitmanYor(alpha="a", d=0.3), TypeError, "alpha"),
        (lambda: pmp.UniformPartition().tables(0), ValueError, "n_items"),
        (lambda: pmp.UniformPartition().tables(2.5), TypeError, "n_items"),
        (lambda: pmp.DirichletProcess().tables(True), TypeError, "n_items"),
    ],
)
def test_parameter_validation(factory, exc, match):
    with pytest.raises(exc, match=match):
        factory()


def test_prior_equality_and_repr():
    assert pmp.DirichletProcess(alpha=2.0) == pmp.DirichletProcess(alpha=2.0)
    assert pmp.DirichletProcess(alpha=2.0) != pmp.DirichletProcess(alpha=3.0)
    assert pmp.PitmanYor(alpha=1.0, d=0.2) != pmp.DirichletProcess(alpha=1.0)
    assert "alpha=2.0" in repr(pmp.DirichletProcess(alpha=2.0))


# ----------------------------------------------------------------------------- Partition variable
@pytest.mark.parametrize("name", ["umd", "dp_small", "py", "uniform", "mfm_paper"])
def test_partition_logp_equals_prior(name):
    n = 5
    prior = PRIORS[name]
    with pm.Model() as model:
        pmp.Partition("z", n_items=n, prior=prior)
    logp = model.compile_logp()
    states = all_partitions(n)
    got = np.array([logp({"z": z}) for z in states])
    np.testing.assert_allclose(got, prior.logp(states), rtol=1e-12, atol=1e-12)
    for bad in ([1, 0, 0, 0, 0], [0, 2, 1, 1, 0], [0, 0, 2, 0, 0], [0, -1, 0, 0, 0],
                [0, 1, 2, 3, 5], [0, 1, 1, 3, 2]):  # fmt: skip
        assert not is_canonical(bad)
        assert logp({"z": np.array(bad)}) == -np.inf, bad


def test_partition_initial_point_and_errors():
    with pm.Model() as model:
        pmp.Partition("z", n_items=4, prior=pmp.UniformPartition())
    np.testing.assert_array_equal(model.initial_point()["z"], np.zeros(4, dtype=np.int64))
    with pm.Model():
        with pytest.raises(ValueError, match="n_items"):
            pmp.Partition("a", n_items=0, prior=pmp.UniformPartition())
        with pytest.raises(TypeError, match="n_items"):
            pmp.Partition("b", n_items=3.0, prior=pmp.UniformPartition())
        with pytest.raises(TypeError, match="prior"):
            pmp.Partition("c", n_items=3)
        with pytest.raises(TypeError, match="prior"):
            pmp.Partition("d", n_items=3, prior="uniform")
        with pytest.raises(ValueError, match="shape|size"):
            pmp.Partition("e", n_items=3, prior=pmp.UniformPartition(), shape=(3,))


@pytest.mark.default_backend
@pytest.mark.parametrize("name, seed", [("umd", 1), ("dp_small", 2), ("py", 3), ("uniform", 4), ("mfm_poisson", 5)])
def test_prior_draws_match_pmf(name, seed):
    n, n_draws = 4, 2000
    prior = PRIORS[name]
    z = pmp.Partition.dist(n_items=n, prior=prior)
    draws = pm.draw(z, draws=n_draws, random_seed=seed)
    assert draws.shape == (n_draws, n) and draws.dtype == np.int64
    assert is_canonical(draws).all()
    states = all_partitions(n)
    keys = state_keys(states, assume_canonical=True)
    index = {k: i for i, k in enumerate(keys.tolist())}
    counts = np.bincount([index[k] for k in state_keys(draws).tolist()], minlength=len(states))
    expected = n_draws * np.exp(prior.logp(states))
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    chi2 = ((obs - exp) ** 2 / exp).sum()
    p_value = sps.chi2.sf(chi2, len(exp) - 1)
    assert p_value > ALPHA, f"{name}: chi2={chi2:.1f}, df={len(exp) - 1}, p={p_value:.2g}"


@pytest.mark.default_backend
def test_prior_draws_reproducible():
    z = pmp.Partition.dist(n_items=6, prior=pmp.DirichletProcess(alpha=1.0))
    a = pm.draw(z, draws=20, random_seed=5)
    b = pm.draw(z, draws=20, random_seed=5)
    np.testing.assert_array_equal(a, b)
