"""``pmp.ParticleMergeSplit`` against exact posteriors, and the step protocol.

As ``test_sequential_merge_split``: one chain through the PyMC step protocol on a small
problem, visited-state frequencies against :func:`pymc_partition.exact_posterior` (chi-square,
false-alarm rate ``ALPHA``) and every recorded ``partition_logp`` against the exact log
posterior; "alone" makes no Gibbs sweep, so the test sees the move. The move itself is checked
one step at a time in ``engine/kernels/test_particle.py``.
"""

from __future__ import annotations

import zlib

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from gof import chi_square_gof
from random_models import all_partitions, random_model, step_chain
from test_sequential_merge_split import run_chain

import pymc_partition as pmp
from pymc_partition.state import state_keys

ALPHA = 0.001

CASES = [
    # (options, family, prior, n)
    (dict(n_particles=4, n_proposals=6, n_gibbs_scans=0, split_probability=None, order="random"), "niw", "dp", 6),
    (dict(n_particles=3, n_proposals=6, n_gibbs_scans=0), "bernoulli", "py", 5),
    (dict(n_particles=2, n_proposals=1, n_gibbs_scans=1, resplit_probability=0.0), "poisson", "mfm", 6),
    # mostly re-splits, which keep the number of clusters: thinned, as the draws are correlated
    (dict(n_particles=5, n_proposals=6, n_gibbs_scans=0, resplit_probability=0.8, thin=4), "nig", "umd", 6),
    # re-cuts of 3 clusters beside splits and merges: thinned too (unthinned, the engine's chain of
    # this model passes at 20,000 draws thinned by 10, p = 0.41, and fails at 5,000 by 1, p = 2e-4)
    (
        dict(n_particles=4, n_proposals=4, n_gibbs_scans=0, resplit_probability=0.5, recut_clusters=3, thin=4),
        "niw",
        "dp",
        6,
    ),
]


@pytest.mark.parametrize("options,family,prior,n", CASES)
def test_visited_frequencies_match_exact_posterior(options, family, prior, n):
    seed = zlib.crc32(repr((sorted(options.items()), family, prior, n)).encode())
    model = random_model(family, prior, n, seed)
    with model:
        step = pmp.ParticleMergeSplit([model["z"]], **options)
    exact = pmp.exact_posterior(model, progressbar=False)
    labels, lps = run_chain(step, model, 5000, seed)
    np.testing.assert_allclose(lps, exact.log_posterior(labels), rtol=0, atol=1e-9)
    states = all_partitions(n)
    keys = state_keys(states, assume_canonical=True)
    p_value, chi2, df = chi_square_gof(state_keys(labels, assume_canonical=True), keys, exact.probability(states))
    assert p_value > ALPHA, f"chi2={chi2:.1f}, df={df}, p={p_value:.2e}"


def test_pm_sample_stats_and_a_resumed_chain():
    """pm.sample records SequentialMergeSplit's stats; a sampling state taken between two steps
    resumes the chain exactly, also in a copy that went through cloudpickle."""
    model = random_model("nig", "py", 10, 4)
    with model:
        step = pmp.ParticleMergeSplit([model["z"]], n_particles=4)
        idata = pm.sample(draws=30, tune=0, chains=1, step=[step], progressbar=False,
                          random_seed=1, compute_convergence_checks=False)  # fmt: skip
    assert set(idata.sample_stats.data_vars) >= set(pmp.SequentialMergeSplit.stats_dtypes_shapes)
    ss = idata.sample_stats
    assert 0 < int(ss["n_proposals_accepted"].sum()) <= int(ss["n_proposals"].sum()) <= 90
    first = step_chain(step, model, 5, 30)
    step.setup_chain(np.random.default_rng(5), 0, 30)
    point = model.initial_point()
    for _ in range(12):
        point, _ = step.step(point)
    saved, at = step.sampling_state, point
    again = cloudpickle.loads(cloudpickle.dumps(step))
    for other in (step, again):
        other.sampling_state = saved
        point = at
        for t in range(12, 30):
            point, _ = other.step(point)
            np.testing.assert_array_equal(point["z"], first[t])


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(n_particles=0), ValueError, "n_particles"),
        (dict(n_particles=33), ValueError, "at most 32"),
        (dict(n_particles=2.0), TypeError, "n_particles"),
        (dict(order="smart"), ValueError, "order"),
        (dict(resplit_probability=1.5), ValueError, "resplit_probability"),
        (dict(recut_clusters=1), ValueError, "recut_clusters"),
        (dict(recut_clusters=3, n_particles=32), ValueError, "at most 128"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    model = random_model("nig", "dp", 4, 0)
    with model, pytest.raises(error, match=match):
        pmp.ParticleMergeSplit([model["z"]], **kwargs)
