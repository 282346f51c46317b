"""Exactness of the partition samplers against brute-force posteriors on small problems.

For ``n_items <= 6`` every partition (restricted growth string) is enumerated and its exact
posterior probability computed with ``partition_spec(model).log_posterior``. Each sampler is run
as one long chain, thinned inside the step (several sweeps or split-merge proposals per step, so
that kept draws are practically independent), and the visited-state frequencies are compared to
the exact probabilities with Pearson's chi-square goodness-of-fit test; states with an expected
count below 5 are pooled into one bin. Each test has a false-alarm rate of ``ALPHA = 0.001``
(fixed seeds make the outcome deterministic). Every recorded ``partition_logp`` is also checked
against the exact unnormalized log posterior of the recorded state.

A separate test checks detailed balance of the split-merge move exactly, by building its
transition matrix with the launch randomness enumerated.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from gof import chi_square_gof
from scipy import stats as sps

import pymc_partition as pmp
from pymc_partition.engine import kernels
from pymc_partition.families.base import ConjugateFamily
from pymc_partition.model_spec import partition_spec
from pymc_partition.state import state_keys
from pymc_partition.step_methods import GibbsPartition, SplitMerge

ALPHA = 0.001


# ----------------------------------------------------------------------------- helpers
def all_partitions(n):
    """All canonical label vectors (restricted growth strings) of ``n`` items."""
    out = []

    def rec(prefix, n_used):
        if len(prefix) == n:
            out.append(list(prefix))
            return
        for lab in range(n_used + 1):
            rec(prefix + [lab], max(n_used, lab + 1))

    rec([0], 1)
    return np.array(out, dtype=np.int64)


def exact_table(model):
    spec = partition_spec(model)
    states = all_partitions(spec.n_items)
    logp = spec.log_posterior(states)
    probs = np.exp(logp - logp.max())
    probs /= probs.sum()
    return states, state_keys(states, assume_canonical=True), logp, probs


def run_chain(step, model, n_draws, seed, burn=20):
    """Call ``step.step`` repeatedly; return labels (n_draws, n) and partition_logp (n_draws,)."""
    step.set_rng(np.random.default_rng(seed))
    point = model.initial_point()
    name = step.vars[0].name
    for _ in range(burn):
        point, _ = step.step(point)
    labels = np.empty((n_draws, point[name].shape[0]), dtype=np.int64)
    lps = np.empty(n_draws)
    for t in range(n_draws):
        point, (st,) = step.step(point)
        labels[t] = point[name]
        lps[t] = st["partition_logp"]
    return labels, lps


class LocalBetaBernoulli(ConjugateFamily):
    """Beta-Bernoulli per variable (stand-in when pymc_partition has no BetaBernoulli yet)."""

    _param_names = ("a", "b")

    def __init__(self, a=1.0, b=1.0):
        self.a, self.b = float(a), float(b)

    def _item_stats(self, values, item_index, n_items):
        ones = np.zeros((n_items, values.shape[1]))
        np.add.at(ones, item_index, values)
        r = np.bincount(item_index, minlength=n_items).astype(float)[:, None]
        return np.column_stack([ones, r - ones])

    def log_marginal(self, stats):
        stats = pt.as_tensor_variable(stats)
        v = stats.shape[-1] // 2
        k, m = stats[..., :v], stats[..., v:]
        a, b = self.a, self.b
        g = pt.gammaln
        term = g(a + k) + g(b + m) - g(a + b + k + m) - (g(a) + g(b) - g(a + b))
        return pt.sum(term, axis=-1)


def other_family():
    """A second family: the package's BetaBernoulli if present, else the local stand-in."""
    try:
        from pymc_partition.families.beta_bernoulli import BetaBernoulli
    except ImportError:
        return LocalBetaBernoulli(1.0, 1.0), "LocalBetaBernoulli"
    return BetaBernoulli(a=1.0, b=1.0), "BetaBernoulli"


def nig_family():
    try:
        from pymc_partition.families.normal_inverse_gamma import NormalInverseGamma
    except ImportError:
        return None
    return NormalInverseGamma(mu0=0.0, kappa0=1.0, alpha0=2.0, beta0=1.0)


# ----------------------------------------------------------------------------- problems
SPIKE = dict(mu=0.0, sigma2=0.5, sigma2_eta=0.3, sigma2_theta=4.0, p=0.3)


def spike_data(n, peaked, seed):
    """Replicated data (2 rows per item); peaked: two well separated groups on 3 variables."""
    rng = np.random.default_rng(seed)
    n_vars = 3 if peaked else 1
    shift = np.where(np.arange(n) < n // 2, -2.0, 2.0)[:, None] if peaked else np.zeros((n, 1))
    item_means = shift + rng.normal(0, 0.3 if peaked else 0.5, (n, n_vars))
    item_index = np.repeat(np.arange(n), 2)
    y = item_means[item_index] + rng.normal(0, 0.5, (2 * n, n_vars))
    return y, item_index


def make_model(n, prior, family_kind, peaked, seed=0):
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=prior)
        if family_kind == "spike":
            y, idx = spike_data(n, peaked, seed)
            pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**SPIKE), observed=y, item_index=idx)
        elif family_kind == "bernoulli":
            fam, _ = other_family()
            rng = np.random.default_rng(seed)
            p = np.where(np.arange(n) < n // 2, 0.1, 0.9) if peaked else np.full(n, 0.5)
            n_vars = 6 if peaked else 2
            y = (rng.random((n, n_vars)) < p[:, None]).astype(float)
            pmp.MarginalLikelihood("y", partition=z, family=fam, observed=y)
        elif family_kind == "nig":
            fam = nig_family()
            rng = np.random.default_rng(seed)
            mu = np.where(np.arange(n) < n // 2, -3.0, 3.0) if peaked else np.zeros(n)
            y = mu[:, None] + rng.normal(0, 1.0, (n, 2))
            pmp.MarginalLikelihood("y", partition=z, family=fam, observed=y)
        else:  # pragma: no cover
            raise ValueError(family_kind)
    return model


PRIORS = {
    "umd": pmp.UniformMultinomialDirichlet(),
    "dp": pmp.DirichletProcess(alpha=1.0),
    "py": pmp.PitmanYor(alpha=0.5, d=0.3),
    "uniform": pmp.UniformPartition(),
    "mfm": pmp.MixtureOfFiniteMixtures("poisson", gamma=0.8, k_param=2.0),
}


def make_step(kind, model):
    with model:
        z = model["z"]
        if kind == "gibbs":
            return GibbsPartition([z], n_sweeps=3), 1
        if kind == "sm":  # default mix: split-merge + Gibbs
            return SplitMerge([z]), 3
        if kind == "sm_only":  # split-merge moves alone (irreducible by themselves)
            return SplitMerge([z], n_split_merge=8, n_gibbs_scans=0, n_restricted_scans=2), 1
        if kind == "sm_random_launch":  # random launch, rare Gibbs sweeps
            return SplitMerge([z], n_split_merge=8, n_gibbs_scans=0, n_restricted_scans=0,
                              gibbs_probability=0.2), 1  # fmt: skip
    raise ValueError(kind)


CASES = [
    # (sampler, n, prior, family, peaked)
    ("gibbs", 5, "umd", "spike", False),
    ("gibbs", 6, "umd", "spike", True),
    ("gibbs", 5, "dp", "bernoulli", True),
    ("gibbs", 6, "py", "bernoulli", False),
    ("sm", 5, "umd", "spike", True),
    ("sm", 6, "dp", "spike", False),
    ("sm", 5, "py", "bernoulli", True),
    ("sm_only", 5, "umd", "spike", True),
    ("sm_only", 6, "dp", "bernoulli", False),
    ("sm_only", 5, "uniform", "spike", False),
    ("sm_random_launch", 5, "py", "spike", True),
    ("gibbs", 6, "mfm", "spike", True),
    ("sm", 5, "mfm", "bernoulli", False),
]
N_DRAWS = 8000


@pytest.mark.parametrize("sampler,n,prior,family,peaked", CASES)
def test_visited_frequencies_match_exact_posterior(sampler, n, prior, family, peaked):
    model = make_model(n, PRIORS[prior], family, peaked, seed=n)
    states, keys, exact_logp, probs = exact_table(model)
    step, thin = make_step(sampler, model)
    seed = zlib.crc32(repr((sampler, n, prior, family, peaked)).encode())
    labels, lps = run_chain(step, model, N_DRAWS * thin, seed)
    labels, lps = labels[thin - 1 :: thin], lps[thin - 1 :: thin]
    got = state_keys(labels, assume_canonical=True)
    # partition_logp is the exact unnormalized log posterior of every recorded state
    lp_of = dict(zip(keys.tolist(), exact_logp))
    expect = np.array([lp_of[k] for k in got.tolist()])
    np.testing.assert_allclose(lps, expect, rtol=0, atol=1e-9)
    p_value, chi2, df = chi_square_gof(got, keys, probs)
    assert p_value > ALPHA, (
        f"{sampler} visited-state frequencies differ from the exact posterior: chi2={chi2:.1f}, "
        f"df={df}, p={p_value:.2e} (max prob {probs.max():.3f})"
    )


@pytest.mark.skipif(nig_family() is None, reason="NormalInverseGamma not available yet")
@pytest.mark.parametrize("sampler", ["gibbs", "sm_only"])
def test_normal_inverse_gamma_family(sampler):
    model = make_model(5, PRIORS["dp"], "nig", True, seed=3)
    states, keys, exact_logp, probs = exact_table(model)
    step, thin = make_step(sampler, model)
    labels, lps = run_chain(step, model, N_DRAWS * thin, seed=11)
    labels, lps = labels[thin - 1 :: thin], lps[thin - 1 :: thin]
    got = state_keys(labels, assume_canonical=True)
    p_value, chi2, df = chi_square_gof(got, keys, probs)
    assert p_value > ALPHA, f"chi2={chi2:.1f}, df={df}, p={p_value:.2e}"


def test_chi_square_detects_a_wrong_target():
    """Power check of the harness: draws from the prior-only target must be rejected."""
    model = make_model(5, PRIORS["umd"], "spike", True, seed=5)
    _, keys, _, probs = exact_table(model)
    with pm.Model() as wrong:  # same prior, no structure in the data
        z = pmp.Partition("z", n_items=5, prior=PRIORS["umd"])
        pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**SPIKE), observed=np.zeros((5, 1)))
        step = GibbsPartition([z], n_sweeps=3)
    labels, _ = run_chain(step, wrong, 3000, seed=1)
    p_value, _, _ = chi_square_gof(state_keys(labels, assume_canonical=True), keys, probs)
    assert p_value < ALPHA


# ----------------------------------------------------------------------------- detailed balance
def _split_merge_transition_matrix(model, specialize=True):
    """Exact transition matrix of one split-merge proposal with no intermediate restricted scans.

    Enumerates the ordered pair (i, j), the uniform launch state of ``S`` and, for a split, every
    outcome of the final restricted scan, with the proposal probabilities from the kernel.
    """
    spec = partition_spec(model)
    n = spec.n_items
    with model:
        step = GibbsPartition([model["z"]], specialize=specialize)  # for its kernel bundles
    bundles = step.engine.bundles
    states = all_partitions(n)
    keys = state_keys(states, assume_canonical=True).tolist()
    where = {k: s for s, k in enumerate(keys)}
    logp = spec.log_posterior(states)
    T = np.zeros((len(states), len(states)))
    pair_prob = 1.0 / (n * (n - 1))
    for s, z in enumerate(states):
        for i, j in itertools.permutations(range(n), 2):
            members = [k for k in range(n) if k not in (i, j) and z[k] in (z[i], z[j])]
            m = len(members)
            for launch in itertools.product((0, 1), repeat=m):
                launch = np.array(launch, dtype=np.int64)
                w = pair_prob / 2**m
                if z[i] == z[j]:
                    for outcome in itertools.product((0, 1), repeat=m):
                        new = z.copy()
                        new_label = z.max() + 1
                        new[j] = new_label
                        for q, k in enumerate(members):
                            if outcome[q] == 1:
                                new[k] = new_label
                        new = pmp.canonicalize(new)
                        log_q = kernels.split_merge_log_q(z, new, i, j, launch, *bundles)
                        t = where[state_keys(new, assume_canonical=True).item()]
                        acc = min(1.0, np.exp(logp[t] - logp[s] - log_q))
                        T[s, t] += w * np.exp(log_q) * acc
                        T[s, s] += w * np.exp(log_q) * (1 - acc)
                else:
                    new = z.copy()
                    new[new == z[j]] = z[i]
                    new = pmp.canonicalize(new)
                    log_q = kernels.split_merge_log_q(z, z, i, j, launch, *bundles)
                    t = where[state_keys(new, assume_canonical=True).item()]
                    acc = min(1.0, np.exp(logp[t] - logp[s] + log_q))
                    T[s, t] += w * acc
                    T[s, s] += w * (1 - acc)
    return T, logp


@pytest.mark.parametrize("prior", ["umd", "py"])
def test_split_merge_detailed_balance_exact(prior):
    model = make_model(4, PRIORS[prior], "spike", True, seed=2)
    T, logp = _split_merge_transition_matrix(model)
    np.testing.assert_allclose(T.sum(axis=1), 1.0, atol=1e-12)
    pi = np.exp(logp - logp.max())
    pi /= pi.sum()
    flow = pi[:, None] * T
    np.testing.assert_allclose(flow, flow.T, atol=1e-12)
    # and the split-merge move alone connects every pair of states
    reach = (T > 0).astype(float)
    for _ in range(len(pi)):
        reach = ((reach @ (T > 0)) > 0).astype(float)
    assert reach.all()


# ----------------------------------------------------------------------------- specialised forms
def family_model(kind, n, prior, seed):
    """Two groups of items on NIG (1-3 rows per item) or NIW (one row, ``V`` = last digit) data."""
    rng = np.random.default_rng(seed)
    shift = np.where(np.arange(n) < n // 2, -2.0, 2.0)
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=PRIORS[prior])
        if kind == "nig_rep":
            idx = rng.permutation(np.repeat(np.arange(n), rng.integers(1, 4, n)))
            y = shift[idx, None] + rng.normal(0, 1.5, (idx.size, 2))
            fam = pmp.NormalInverseGamma(mu0=[0.0, 0.5], kappa0=0.5, alpha0=[2.0, 3.0], beta0=1.5)
            pmp.MarginalLikelihood("y", partition=z, family=fam, observed=y, item_index=idx)
        else:
            V = int(kind[-1])
            y = rng.normal(0, 1.2, (n, V))
            y[:, 0] += shift
            fam = pmp.NormalInverseWishart(mu0=np.zeros(V), kappa0=0.5, nu0=V + 1.0,
                                           psi0=np.eye(V) + 0.3)  # fmt: skip
            pmp.MarginalLikelihood("y", partition=z, family=fam, observed=y)
    return model


def coclustering_z(labels, exact, n_batches=20):
    """Largest |frequency - exact| / standard error over item pairs, the standard errors from
    batch means (robust to the chain's autocorrelation), and the Bonferroni critical value of
    Student's t for a two-sided level ``ALPHA``."""
    n_draws, n = labels.shape
    iu = np.triu_indices(n, 1)
    same = (labels[:, iu[0]] == labels[:, iu[1]]).astype(float)
    size = n_draws // n_batches
    means = same[: size * n_batches].reshape(n_batches, size, -1).mean(axis=1)
    p = exact[iu]
    se = np.maximum(means.std(axis=0, ddof=1) / np.sqrt(n_batches),
                    np.sqrt(p * (1 - p) / n_draws))  # fmt: skip
    z = np.abs(same.mean(axis=0) - p) / np.maximum(se, 1e-12)
    return float(z.max()), float(sps.t.isf(ALPHA / (2 * len(p)), n_batches - 1))


def make_special_step(kind, model):
    z = model["z"]
    with model:
        if kind == "gibbs":
            return GibbsPartition([z], n_sweeps=3)
        if kind == "gibbs_blocks":  # the blocked visiting order of large problems, on 2-item blocks
            step = GibbsPartition([z], n_sweeps=3)
            step.engine.block = 2
            return step
        if kind == "gibbs_thin":  # thinning inside the step, one sweep per step
            return GibbsPartition([z], thin=3)
        if kind == "sm":
            return SplitMerge([z], thin=3)
        if kind == "sm_only":
            return SplitMerge([z], n_split_merge=8, n_gibbs_scans=0, n_restricted_scans=2)
    raise ValueError(kind)


SPECIAL_CASES = [
    # (sampler, family, n, prior)
    ("gibbs", "nig_rep", 6, "dp"),
    ("sm", "nig_rep", 6, "py"),
    ("gibbs", "niw2", 7, "umd"),
    ("gibbs_blocks", "niw2", 7, "dp"),
    ("gibbs_thin", "niw2", 6, "py"),
    ("sm", "niw3", 6, "dp"),
    ("sm_only", "niw3", 6, "umd"),
    ("gibbs", "niw3", 7, "dp"),
]


@pytest.mark.parametrize("sampler,family,n,prior", SPECIAL_CASES)
def test_specialised_forms_match_exact_posterior(sampler, family, n, prior):
    """Chains on the specialised NIG/NIW forms (and the blocked order, and ``thin``) against
    :func:`pymc_partition.exact_posterior`: visited-state frequencies (chi-square) and
    co-clustering frequencies (batch-means standard errors)."""
    seed = zlib.crc32(repr((sampler, family, n, prior)).encode())
    model = family_model(family, n, prior, seed)
    step = make_special_step(sampler, model)
    assert step.predictive_form.name != "graph"
    exact = pmp.exact_posterior(model, progressbar=False)
    states = all_partitions(n)
    probs = exact.probability(states)
    np.testing.assert_allclose(probs.sum(), 1.0, atol=1e-9)
    labels, lps = run_chain(step, model, N_DRAWS, seed)
    np.testing.assert_allclose(lps, exact.log_posterior(labels), rtol=0, atol=1e-9)
    keys = state_keys(states, assume_canonical=True)
    p_value, chi2, df = chi_square_gof(state_keys(labels, assume_canonical=True), keys, probs)
    assert p_value > ALPHA, f"chi2={chi2:.1f}, df={df}, p={p_value:.2e}"
    z, crit = coclustering_z(labels, exact.coclustering)
    assert z < crit, f"co-clustering off by {z:.1f} standard errors (critical {crit:.1f})"


def test_thin_repeats_the_step_and_reports_it():
    model = family_model("niw2", 6, "dp", 1)
    with model:
        gibbs = GibbsPartition([model["z"]], n_sweeps=2, thin=3)
        sm = SplitMerge([model["z"]], n_split_merge=2, thin=4)
    point = model.initial_point()
    _, (st,) = gibbs.step(point)
    assert st["n_gibbs_sweeps"] == 6
    _, (st,) = sm.step(point)
    assert st["n_proposals"] == 8 and st["n_gibbs_sweeps"] == 4
    assert 0 <= st["n_proposals_accepted"] <= 8
    with pytest.raises(ValueError, match="thin"):
        GibbsPartition([model["z"]], thin=0, model=model)
