"""``pmp.ReplicaExchange`` against exact posteriors, and its PyMC step protocol.

As ``test_sequential_merge_split``: one long chain through the step protocol on a small problem
(random hyperparameters, several families and priors), the recorded (cold) copy's visited-state
frequencies against :func:`pymc_partition.exact_posterior` by Pearson's chi-square (false-alarm
rate ``ALPHA`` per test) and every recorded ``partition_logp`` against the exact log posterior.
Every tempered copy is checked too, against its own exact target ``pi(z) L(z)^beta`` (the joint
target's marginals), which ties the tempered Gibbs sweeps, the tempered merge-split proposals and
the exchanges to the enumeration.
"""

from __future__ import annotations

import zlib

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from gof import chi_square_gof
from random_models import all_partitions, random_model, step_chain, tempered_log_posterior

import pymc_partition as pmp
from pymc_partition.model_spec import partition_spec
from pymc_partition.state import state_keys

ALPHA = 0.001
N_DRAWS = 4000
# every test uses 3 copies: each number of copies compiles the step once (CPU from empty caches)

MIXES = {
    "sams": dict(n_proposals=6, n_gibbs_scans=0),
    "mix": dict(n_proposals=2, n_gibbs_scans=1),
    "gibbs": dict(n_proposals=0, n_gibbs_scans=1),
    "balanced_informed": dict(n_proposals=6, n_gibbs_scans=0, split_probability=0.5, order="informed"),
    "graph": dict(n_proposals=4, n_gibbs_scans=1, specialize=False),  # the family's graph
}

CASES = [
    # (mix, family, prior, n, betas)
    ("sams", "nig", "dp", 6, (1.0, 0.3, 0.05)),
    ("mix", "niw", "py", 5, (1.0, 0.5, 0.2)),
    ("gibbs", "bernoulli", "mfm", 6, (1.0, 0.4, 0.0)),
    ("balanced_informed", "poisson", "umd", 5, (1.0, 0.25, 0.1)),
    ("graph", "bernoulli", "py", 5, (1.0, 0.3, 0.1)),
]


def run_chain(step, model, n_draws, seed, burn=20):
    """Every copy's labels ``(n_draws, R, n)`` and the recorded ``partition_logp`` of a chain
    driven by ``step.step``."""
    step.setup_chain(np.random.default_rng(seed), 0, n_draws)
    point = model.initial_point()
    for _ in range(burn):
        point, _ = step.step(point)
    labels = np.empty((n_draws, step.betas.size, step.n_items), np.int64)
    lps = np.empty(n_draws)
    for t in range(n_draws):
        point, (st,) = step.step(point)
        labels[t], lps[t] = step.replicas, st["partition_logp"]
        assert np.array_equal(labels[t, 0], point["z"])
    return labels, lps


@pytest.mark.parametrize("mix,family,prior,n,betas", CASES)
def test_every_copy_samples_its_tempered_posterior(mix, family, prior, n, betas):
    seed = zlib.crc32(repr((mix, family, prior, n)).encode())
    model = random_model(family, prior, n, seed)
    with model:
        step = pmp.ReplicaExchange([model["z"]], betas=betas, **MIXES[mix])
    assert (step.predictive_form.name == "graph") == (mix == "graph")
    exact = pmp.exact_posterior(model, progressbar=False)
    labels, lps = run_chain(step, model, N_DRAWS, seed)
    np.testing.assert_allclose(lps, exact.log_posterior(labels[:, 0]), rtol=0, atol=1e-9)
    states = all_partitions(n)
    keys = state_keys(states, assume_canonical=True)
    spec = partition_spec(model)
    np.testing.assert_allclose(tempered_log_posterior(spec, states, 1.0), exact.log_posterior(states), atol=1e-9)
    for t, beta in enumerate(betas):
        target = tempered_log_posterior(spec, states, beta)
        probs = np.exp(target - target.max())
        p_value, chi2, df = chi_square_gof(state_keys(labels[:, t], assume_canonical=True), keys, probs / probs.sum())
        assert p_value > ALPHA, f"copy at beta={beta}: chi2={chi2:.1f}, df={df}, p={p_value:.2e}"
    assert (step.swap_rates > 0).all()


def test_chi_square_has_power_on_a_wrong_power():
    """A hot copy's draws against the posterior (power 1) are rejected: the copies do differ."""
    model = random_model("nig", "dp", 6, 1)
    with model:
        step = pmp.ReplicaExchange([model["z"]], betas=(1.0, 0.2, 0.05), **MIXES["sams"])
    labels, _ = run_chain(step, model, 3000, seed=4)
    states = all_partitions(6)
    probs = pmp.exact_posterior(model, progressbar=False).probability(states)
    keys = state_keys(states, assume_canonical=True)
    p_value, _, _ = chi_square_gof(state_keys(labels[:, 1], assume_canonical=True), keys, probs)
    assert p_value < ALPHA


def test_stats_ladder_and_thin():
    model = random_model("niw", "dp", 8, 3)
    with model:
        step = pmp.ReplicaExchange([model["z"]], n_replicas=3, beta_min=0.25, n_proposals=2, n_gibbs_scans=1, thin=2)
    np.testing.assert_allclose(step.betas, [1.0, 0.5, 0.25])
    assert set(step.stats_dtypes_shapes) == {
        "partition_logp", "n_clusters", "proposal", "proposal_accepted",
        "n_proposals_accepted", "n_proposals", "n_gibbs_sweeps", "n_swaps_accepted", "n_swaps",
    }  # fmt: skip
    assert step.replicas is None  # before the first step
    step.setup_chain(np.random.default_rng(0), 0, 20)
    point = model.initial_point()
    for _ in range(20):
        point, (st,) = step.step(point)
        assert st["n_proposals"] == 3 * 2 * 2 and st["n_gibbs_sweeps"] == 3 * 2
        assert st["n_swaps"] == 2  # one pair per round of 3 copies, either parity
        assert 0 <= st["n_swaps_accepted"] <= 2
        assert st["n_clusters"] == point["z"].max() + 1
    assert step.replicas.shape == (3, 8)


def test_pm_sample_records_the_stats():
    model = random_model("nig", "py", 10, 4)
    with model:
        step = pmp.ReplicaExchange([model["z"]], n_replicas=3, beta_min=0.3)
        idata = pm.sample(draws=30, tune=0, chains=2, step=[step], progressbar=False,
                          random_seed=1, compute_convergence_checks=False)  # fmt: skip
    stats = idata.sample_stats
    assert int(stats["n_proposals"].sum()) == 2 * 30 * 3 * 3  # chains x draws x proposals x copies
    assert int(stats["n_swaps"].sum()) > 0 and stats["n_swaps_accepted"].dtype.kind == "i"
    assert idata.posterior["z"].shape == (2, 30, 10)


def test_a_chain_generator_fixes_the_draws_and_a_saved_state_resumes_them():
    """The same chain generator gives the same chain, another generator another one; a sampling
    state taken between two steps (it holds every copy) resumes the chain exactly, also after
    the step went through cloudpickle (as for worker processes)."""
    model = random_model("nig", "dp", 8, 2)
    with model:
        step = pmp.ReplicaExchange([model["z"]], n_replicas=3, beta_min=0.2)

    first = step_chain(step, model, 5, 30)
    np.testing.assert_array_equal(step_chain(step, model, 5, 30), first)
    assert not np.array_equal(step_chain(step, model, 6, 30), first)
    step.setup_chain(np.random.default_rng(5), 0, 30)
    point = model.initial_point()
    for _ in range(12):
        point, _ = step.step(point)
    saved, at = step.sampling_state, point
    assert saved.replicas.shape == (3, 8)
    step.sampling_state = saved
    again = cloudpickle.loads(cloudpickle.dumps(step))
    again.sampling_state = saved
    for other in (step, again):
        point = at
        for t in range(12, 30):
            point, _ = other.step(point)
            np.testing.assert_array_equal(point["z"], first[t])


def test_random_hyperparameters_are_refused():
    x = np.r_[np.zeros(4), np.ones(4) * 3.0]
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", n_items=8, prior=pmp.DirichletProcess(alpha))
        pmp.MarginalLikelihood("y", partition=z, observed=x, family=pmp.NormalInverseGamma.from_data(x, n_clusters=2))
    with model, pytest.raises(NotImplementedError, match="fixed at numbers"):
        pmp.ReplicaExchange([z])


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(n_replicas=0), ValueError, "n_replicas"),
        (dict(n_replicas=2.5), TypeError, "n_replicas"),
        (dict(beta_min=1.0), ValueError, "beta_min"),
        (dict(beta_min="a"), TypeError, "beta_min"),
        (dict(betas=(1.0, 1.0)), ValueError, "decrease"),
        (dict(betas=(0.5, 0.1)), ValueError, "start at 1.0"),
        (dict(n_proposals=0, n_gibbs_scans=0), ValueError, "never update"),
        (dict(split_probability=0.0), ValueError, "strictly between"),
        (dict(order="smart"), ValueError, "order"),
        (dict(thin=0), ValueError, "thin"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    model = random_model("nig", "dp", 4, 0)
    with model, pytest.raises(error, match=match):
        pmp.ReplicaExchange([model["z"]], **kwargs)
