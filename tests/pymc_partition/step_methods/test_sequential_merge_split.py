"""``pmp.SequentialMergeSplit`` against exact posteriors, alone and mixed with Gibbs sweeps.

As ``test_samplers_exact``: one long chain through the PyMC step protocol on a small problem
(random hyperparameters, several families and priors), visited-state frequencies against
:func:`pymc_partition.exact_posterior` by Pearson's chi-square (false-alarm rate ``ALPHA`` per
test), every recorded ``partition_logp`` against the exact log posterior. "alone" runs the
merge-split proposals without any Gibbs sweep (irreducible by itself: merge everything, then
split), so the test sees the move and not the sweeps; "mix" adds one Gibbs sweep per step.
"""

from __future__ import annotations

import zlib

import numpy as np
import pymc as pm
import pytest
from gof import chi_square_gof
from random_models import all_partitions, random_model

import pymc_partition as pmp
from pymc_partition.state import state_keys

ALPHA = 0.001
N_DRAWS = 8000

MIXES = {
    "alone": dict(n_proposals=12, n_gibbs_scans=0),
    "mix": dict(n_proposals=2, n_gibbs_scans=1),
    "rare_gibbs": dict(n_proposals=6, n_gibbs_scans=0, gibbs_probability=0.3),
    "alone_graph": dict(n_proposals=12, n_gibbs_scans=0, specialize=False),  # the family's graph
    "balanced_informed": dict(n_proposals=12, n_gibbs_scans=0, split_probability=0.5, order="informed"),
    "balanced_mix": dict(n_proposals=4, n_gibbs_scans=1, split_probability=0.3),
}

CASES = [
    # (mix, family, prior, n)
    ("alone", "nig", "dp", 6),
    ("alone", "niw", "py", 5),
    ("alone", "bernoulli", "umd", 6),
    ("alone", "poisson", "mfm", 5),
    ("alone", "spike", "uniform", 5),
    ("mix", "nig", "py", 6),
    ("mix", "niw", "dp", 6),
    ("mix", "bernoulli", "mfm", 5),
    ("mix", "spike", "umd", 6),
    ("rare_gibbs", "poisson", "dp", 6),
    ("alone_graph", "bernoulli", "py", 5),
    ("balanced_informed", "niw", "dp", 6),
    ("balanced_informed", "poisson", "py", 5),
    ("balanced_mix", "nig", "mfm", 6),
]


def run_chain(step, model, n_draws, seed, burn=20):
    """Labels ``(n_draws, n)`` and ``partition_logp`` of a chain driven by ``step.step``."""
    step.set_rng(np.random.default_rng(seed))
    point = model.initial_point()
    for _ in range(burn):
        point, _ = step.step(point)
    labels = np.empty((n_draws, step.n_items), np.int64)
    lps = np.empty(n_draws)
    for t in range(n_draws):
        point, (st,) = step.step(point)
        labels[t], lps[t] = point["z"], st["partition_logp"]
    return labels, lps


@pytest.mark.parametrize("mix,family,prior,n", CASES)
def test_visited_frequencies_match_exact_posterior(mix, family, prior, n):
    seed = zlib.crc32(repr((mix, family, prior, n)).encode())
    model = random_model(family, prior, n, seed)
    with model:
        step = pmp.SequentialMergeSplit([model["z"]], **MIXES[mix])
    assert (step.predictive_form.name == "graph") == (mix == "alone_graph")
    exact = pmp.exact_posterior(model, progressbar=False)
    labels, lps = run_chain(step, model, N_DRAWS, seed)
    np.testing.assert_allclose(lps, exact.log_posterior(labels), rtol=0, atol=1e-9)
    states = all_partitions(n)
    keys = state_keys(states, assume_canonical=True)
    got = state_keys(labels, assume_canonical=True)
    p_value, chi2, df = chi_square_gof(got, keys, exact.probability(states))
    assert p_value > ALPHA, f"chi2={chi2:.1f}, df={df}, p={p_value:.2e}"


def test_chi_square_has_power_on_a_wrong_target():
    """The same chains against another model's posterior are rejected."""
    model = random_model("nig", "dp", 6, 1)
    wrong = random_model("nig", "dp", 6, 2)
    with model:
        step = pmp.SequentialMergeSplit([model["z"]], **MIXES["alone"])
    labels, _ = run_chain(step, model, 3000, seed=4)
    states = all_partitions(6)
    probs = pmp.exact_posterior(wrong, progressbar=False).probability(states)
    keys = state_keys(states, assume_canonical=True)
    p_value, _, _ = chi_square_gof(state_keys(labels, assume_canonical=True), keys, probs)
    assert p_value < ALPHA


def test_stats_and_thin():
    model = random_model("niw", "dp", 8, 3)
    with model:
        step = pmp.SequentialMergeSplit([model["z"]], n_proposals=5, n_gibbs_scans=2, thin=3)
    assert set(step.stats_dtypes_shapes) == {
        "partition_logp", "n_clusters", "proposal", "proposal_accepted",
        "n_proposals_accepted", "n_proposals", "n_gibbs_sweeps",
    }  # fmt: skip
    step.set_rng(np.random.default_rng(0))
    point, accepted = model.initial_point(), 0
    for _ in range(20):
        point, (st,) = step.step(point)
        assert st["n_proposals"] == 15 and st["n_gibbs_sweeps"] == 6
        assert st["proposal"] in (1, 2)
        assert 0 <= st["n_proposals_accepted"] <= 15
        accepted += st["n_proposals_accepted"]
    assert accepted > 0
    assert st["n_clusters"] == point["z"].max() + 1


def test_a_chain_generator_fixes_the_draws():
    """The same chain generator gives the same chain (the step's generator state is seeded from
    it); another generator, as PyMC gives each chain, another one."""
    model = random_model("nig", "dp", 8, 2)
    with model:
        step = pmp.SequentialMergeSplit([model["z"]])

    def chain(seed):
        step.setup_chain(np.random.default_rng(seed), 0, 25)
        point, out = model.initial_point(), []
        for _ in range(25):
            point, _ = step.step(point)
            out.append(point["z"])
        return np.array(out)

    first = chain(5)
    np.testing.assert_array_equal(chain(5), first)
    assert not np.array_equal(chain(6), first)


def test_pm_sample_records_the_stats():
    model = random_model("nig", "py", 10, 4)
    with model:
        step = pmp.SequentialMergeSplit([model["z"]])
        idata = pm.sample(draws=30, tune=0, chains=1, step=[step], progressbar=False,
                          random_seed=1, compute_convergence_checks=False)  # fmt: skip
    stats = idata.sample_stats
    assert int(stats["n_proposals"].sum()) == 30 * 3  # the default: 3 proposals per step
    assert stats["proposal_accepted"].dtype == bool
    assert 0 < int(stats["n_proposals_accepted"].sum()) <= 90


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(n_proposals=-1), ValueError, "n_proposals"),
        (dict(n_proposals=1.5), TypeError, "n_proposals"),
        (dict(n_gibbs_scans=-1), ValueError, "n_gibbs_scans"),
        (dict(gibbs_probability=1.5), ValueError, "gibbs_probability"),
        (dict(n_proposals=0, n_gibbs_scans=0), ValueError, "never update"),
        (dict(thin=0), ValueError, "thin"),
        (dict(split_probability=1.0), ValueError, "strictly between"),
        (dict(split_probability="a"), TypeError, "split_probability"),
        (dict(order="smart"), ValueError, "order"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    model = random_model("nig", "dp", 4, 0)
    with model, pytest.raises(error, match=match):
        pmp.SequentialMergeSplit([model["z"]], **kwargs)
