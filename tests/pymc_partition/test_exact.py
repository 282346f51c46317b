"""Exact posterior (``pymc_partition.exact``) against brute-force enumeration.

The brute force here is independent of the subset dynamic program and of the enumeration kernel:
it lists every restricted growth string, sums the per-item statistics of each cluster with a
one-hot product, evaluates the family's pytensor log marginal on all clusters at once and adds
the prior tables. ``spec.log_posterior`` (the package's own per-state reference) is checked
against it too.
"""

from __future__ import annotations

import numba
import numpy as np
import pymc as pm
import pytest
from scipy.special import logsumexp

import pymc_partition as pmp
from pymc_partition import exact as exact_mod
from pymc_partition.exact import ExactPosterior, exact_posterior
from pymc_partition.model_spec import partition_spec
from pymc_partition.state import bell_number, is_canonical, state_keys


# ----------------------------------------------------------------------------- helpers
def all_partitions(n):
    """All canonical label vectors (restricted growth strings) of ``n`` items, ``(B(n), n)``."""
    rows = [[0]]
    for _ in range(n - 1):
        rows = [r + [c] for r in rows for c in range(max(r) + 2)]
    return np.array(rows, dtype=np.int64).reshape(-1, n)


def brute_force(spec):
    """States, unnormalized log posterior, log Z, co-clustering and P(C) by enumeration."""
    n = spec.n_items
    states = all_partitions(n)
    onehot = (states[:, :, None] == np.arange(n)).astype(float)  # (S, item, cluster)
    cluster_stats = np.einsum("sic,ij->scj", onehot, spec.item_stats)
    counts = onehot.sum(axis=1).astype(np.int64)  # (S, cluster)
    family = spec.family  # one instance: a stacked family compiles on first use
    lm = family.log_marginal_numpy(cluster_stats)  # (S, cluster); empty ones masked below
    lp = np.where(counts > 0, lm + spec.log_h[counts], 0.0).sum(axis=1)
    lp += spec.log_g[(counts > 0).sum(axis=1)]
    log_z = logsumexp(lp)
    probs = np.exp(lp - log_z)
    same = states[:, :, None] == states[:, None, :]
    co = np.einsum("s,sij->ij", probs, same.astype(float))
    n_clusters = states.max(axis=1) + 1
    pmf = np.bincount(n_clusters, weights=probs, minlength=n + 1)
    return states, lp, log_z, co, pmf


def make_model(n, prior, family, values, item_index):
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=prior)
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=values, item_index=item_index)
    return model


def _groups(n):
    return np.arange(n) % 3  # three true clusters


def _continuous(n, n_vars, rng, reps=2):
    idx = np.repeat(np.arange(n), reps)
    shift = np.array([-1.0, 0.0, 1.2])[_groups(n)][idx, None]
    return shift + rng.normal(0, 0.8, (n * reps, n_vars)), idx


def _binary(n, n_vars, rng, reps=2):
    idx = np.repeat(np.arange(n), reps)
    p = np.array([0.15, 0.5, 0.85])[_groups(n)][idx, None]
    return (rng.random((n * reps, n_vars)) < p).astype(float), idx


def _categorical(n, n_vars, rng, reps=2):
    idx = np.repeat(np.arange(n), reps)
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])[_groups(n)][idx]
    u = rng.random((n * reps, n_vars, 1))
    return (u > np.cumsum(probs, axis=1)[:, None, :]).sum(axis=2).astype(float), idx


def _counts(n, n_vars, rng, reps=2):
    idx = np.repeat(np.arange(n), reps)
    lam = np.array([0.5, 3.0, 8.0])[_groups(n)][idx, None]
    return rng.poisson(lam, (n * reps, n_vars)).astype(float), idx


# name -> (constructor kwargs, data generator, n_vars); classes looked up by name so that a
# missing family only skips its own tests
FAMILIES = {
    "SpikeSlabNormal": (dict(mu=0.0, sigma2=0.5, sigma2_eta=0.3, sigma2_theta=4.0, p=0.3), _continuous, 3),
    "NormalInverseGamma": (dict(mu0=0.0, kappa0=0.5, alpha0=2.0, beta0=1.0), _continuous, 2),
    "NormalInverseWishart": (dict(mu0=np.zeros(2), kappa0=0.5, nu0=4.0, psi0=np.eye(2)), _continuous, 2),
    "BetaBernoulli": (dict(a=0.5, b=1.5), _binary, 4),
    "DirichletCategorical": (dict(alpha=np.array([0.5, 1.0, 2.0])), _categorical, 3),
    "GammaPoisson": (dict(a=2.0, b=1.0), _counts, 2),
}
PRIORS = {
    "umd": pmp.UniformMultinomialDirichlet(),
    "dp": pmp.DirichletProcess(alpha=0.6),
    "py": pmp.PitmanYor(alpha=0.8, d=0.3),
    "uniform": pmp.UniformPartition(),
}
_FAMILY_CACHE = {}


def get_family(name):
    """One instance per family (its compiled log marginal is reused across tests)."""
    import pymc_partition.families as fam_mod

    cls = getattr(fam_mod, name, None)
    if cls is None:
        pytest.skip(f"pymc_partition.families has no {name} yet")
    if name not in _FAMILY_CACHE:
        _FAMILY_CACHE[name] = cls(**FAMILIES[name][0])
    return _FAMILY_CACHE[name]


def family_model(name, prior, n, seed=0):
    family = get_family(name)
    _, gen, n_vars = FAMILIES[name]
    values, idx = gen(n, n_vars, np.random.default_rng(seed))
    return make_model(n, prior, family, values, idx)


def check_against_brute(model, atol=1e-10):
    spec = partition_spec(model)
    states, lp, log_z, co, pmf = brute_force(spec)
    ex = exact_posterior(model, progressbar=False)
    n = spec.n_items
    # the package's per-state reference agrees with the independent brute force (few states:
    # with several terms each call of spec.log_posterior compiles a new stacked family)
    step = max(1, len(states) // (40 if len(spec.terms) == 1 else 3))
    np.testing.assert_allclose(spec.log_posterior(states[::step]), lp[::step], rtol=1e-12, atol=1e-8)
    np.testing.assert_allclose(ex.log_posterior(states), lp, rtol=1e-12, atol=1e-8)
    assert ex.log_z == pytest.approx(log_z, rel=1e-12, abs=1e-8)
    np.testing.assert_allclose(ex.coclustering, co, atol=atol)
    np.testing.assert_allclose(ex.n_clusters_pmf, pmf, atol=atol)
    assert ex.coclustering.shape == (n, n)
    assert np.all(np.diag(ex.coclustering) == 1.0)
    assert ex._diag_error < 1e-9
    # MAP by the max-product DP (before any enumeration)
    best = np.argmax(lp)
    gap = np.sort(lp)[-1] - np.sort(lp)[-2] if len(lp) > 1 else np.inf
    if gap > 1e-8:
        np.testing.assert_array_equal(ex.map, states[best])
    # every state by enumeration: probabilities, order and total mass
    labels, probs = ex.top(len(states))
    assert labels.shape == states.shape and labels.dtype == np.int64
    assert is_canonical(labels).all()
    assert len(np.unique(state_keys(labels, assume_canonical=True))) == len(states)
    exact_probs = np.exp(lp - log_z)
    np.testing.assert_allclose(probs, np.sort(exact_probs)[::-1], atol=1e-12, rtol=1e-9)
    by_key = dict(zip(state_keys(states, assume_canonical=True).tolist(), exact_probs))
    np.testing.assert_allclose(
        probs, [by_key[k] for k in state_keys(labels, assume_canonical=True).tolist()],
        atol=1e-12, rtol=1e-9,
    )  # fmt: skip
    assert np.all(np.diff(probs) <= 1e-15)
    assert probs.sum() == pytest.approx(1.0, abs=1e-10)
    if gap > 1e-8:
        np.testing.assert_array_equal(labels[0], states[best])
        np.testing.assert_array_equal(ex.map, states[best])
    return ex


# ----------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("prior", list(PRIORS))
@pytest.mark.parametrize("family", list(FAMILIES))
def test_exact_matches_brute_force(family, prior):
    model = family_model(family, PRIORS[prior], n=6, seed=hash(prior) % 1000)
    check_against_brute(model)


@pytest.mark.parametrize("prior", list(PRIORS))
def test_exact_matches_brute_force_n8(prior):
    model = family_model("SpikeSlabNormal", PRIORS[prior], n=8, seed=3)
    check_against_brute(model)


def test_peaked_posterior_n10_all_states():
    """Many items, well-separated data (log weights spanning hundreds of nats)."""
    rng = np.random.default_rng(7)
    n = 10
    idx = np.repeat(np.arange(n), 3)
    shift = np.array([-3.0, 0.0, 3.0])[_groups(n)][idx, None]
    values = shift + rng.normal(0, 0.5, (3 * n, 6))
    family = pmp.SpikeSlabNormal(mu=0.0, sigma2=0.3, sigma2_eta=0.1, sigma2_theta=9.0, p=0.5)
    ex = check_against_brute(make_model(n, pmp.UniformMultinomialDirichlet(), family, values, idx))
    assert ex.top(1)[1][0] > 0.5


def test_several_likelihood_terms():
    rng = np.random.default_rng(1)
    n = 6
    y, idx = _continuous(n, 2, rng)
    b, _ = _binary(n, 3, rng)
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=pmp.DirichletProcess(alpha=1.5))
        pmp.MarginalLikelihood("y", partition=z, family=get_family("SpikeSlabNormal"),
                               observed=y, item_index=idx)  # fmt: skip
        pmp.MarginalLikelihood("b", partition=z, family=get_family("BetaBernoulli"),
                               observed=b, item_index=idx)  # fmt: skip
    check_against_brute(model)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_tiny(n):
    ex = check_against_brute(family_model("SpikeSlabNormal", pmp.UniformMultinomialDirichlet(), n))
    assert ex.n_states == bell_number(n)
    if n == 1:
        spec = partition_spec(family_model("SpikeSlabNormal", pmp.UniformMultinomialDirichlet(), 1))
        assert ex.log_z == pytest.approx(float(spec.family.log_marginal_numpy(spec.item_stats)[0]))
        assert ex.top(1)[1][0] == pytest.approx(1.0)


# ----------------------------------------------------------------------------- API
@pytest.fixture(scope="module")
def model7():
    return family_model("SpikeSlabNormal", pmp.UniformMultinomialDirichlet(), n=7, seed=11)


def test_top_k_caching_and_prefix(model7):
    ex = exact_posterior(model7, top_k=5, progressbar=False)
    labels3, probs3 = ex.top(3)
    assert ex._top[0].shape[0] == 5  # enumerated once, kept top_k
    labels_all, probs_all = ex.top(ex.n_states)
    np.testing.assert_array_equal(labels3, labels_all[:3])
    np.testing.assert_allclose(probs3, probs_all[:3], rtol=1e-13)
    np.testing.assert_array_equal(ex.map, labels_all[0])
    assert ex.map_probability == pytest.approx(probs_all[0], rel=1e-12)
    np.testing.assert_allclose(ex.probability(labels_all[:4]), probs_all[:4], rtol=1e-10)
    # any labels are accepted by log_posterior (relabelled clusters are the same state)
    assert ex.log_posterior(labels_all[1] + 5) == pytest.approx(ex.log_posterior(labels_all[1]))
    assert "ExactPosterior" in repr(ex)
    assert isinstance(ex.log_z, float)


def test_threads_do_not_change_results(model7):
    prev = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        ex1 = exact_posterior(model7, progressbar=False)
        l1, p1 = ex1.top(40)
        m1 = ex1.map
    finally:
        numba.set_num_threads(prev)
    ex2 = exact_posterior(model7, progressbar=False)
    l2, p2 = ex2.top(40)
    np.testing.assert_array_equal(l1, l2)
    np.testing.assert_allclose(p1, p2, rtol=1e-13)
    np.testing.assert_array_equal(m1, ex2.map)
    assert ex1.log_z == pytest.approx(ex2.log_z, rel=1e-14)
    np.testing.assert_allclose(ex1.coclustering, ex2.coclustering, atol=1e-14)


def test_model_from_context(model7):
    with model7:
        ex = exact_posterior(progressbar=False)
    assert isinstance(ex, ExactPosterior) and ex.n_items == 7 and ex.name == "z"


# ----------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("k", [0, -1])
def test_top_k_out_of_range(model7, k):
    ex = exact_posterior(model7, progressbar=False)
    with pytest.raises(ValueError, match="`k`"):
        ex.top(k)


def test_top_k_too_large_and_not_int(model7):
    ex = exact_posterior(model7, progressbar=False)
    with pytest.raises(ValueError, match="exceeds the number of partitions"):
        ex.top(ex.n_states + 1)
    with pytest.raises(TypeError, match="`k`"):
        ex.top(2.5)
    with pytest.raises(ValueError, match="`top_k`"):
        exact_posterior(model7, top_k=0)


def test_enumeration_refused_beyond_limit(model7, monkeypatch):
    ex = exact_posterior(model7, progressbar=False)
    monkeypatch.setattr(exact_mod, "MAX_ENUM_ITEMS", 6)
    with pytest.raises(ValueError, match="n_items <= 6"):
        ex.top(1)
    # the MAP does not need the enumeration
    spec = partition_spec(model7)
    states, lp, *_ = brute_force(spec)
    np.testing.assert_array_equal(ex.map, states[np.argmax(lp)])


def test_too_many_items_refused_at_once():
    n = 21
    rng = np.random.default_rng(0)
    model = make_model(n, pmp.UniformMultinomialDirichlet(), get_family("SpikeSlabNormal"),
                       rng.normal(size=(n, 2)), None)  # fmt: skip
    with pytest.raises(ValueError, match=r"n_items <= 20.*21 items"):
        exact_posterior(model)


def test_model_without_partition_or_likelihood():
    with pm.Model() as no_partition:
        pm.Normal("x", 0, 1)
    with pytest.raises(ValueError, match="no pmp.Partition"):
        exact_posterior(no_partition)
    with pm.Model() as no_lik:
        pmp.Partition("z", n_items=4, prior=pmp.UniformPartition())
    with pytest.raises(ValueError, match="No pmp.MarginalLikelihood"):
        exact_posterior(no_lik)
