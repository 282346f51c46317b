"""The particle Gibbs re-cut of several clusters (``engine/kernels/recut.py``), exactly.

As for ``test_particle``: the move's transition matrix averages over particle systems, so its
exactness is checked by what it must satisfy on small problems (several families and priors,
3 and 4 clusters, 2 to 6 particles): states drawn from :func:`pymc_partition.exact_posterior`,
one compiled re-cut from each; the next states follow the posterior (chi-square) and the pairs
``(from, to)`` are as frequent as ``(to, from)`` (Bowker's symmetry test, the move is
reversible). A sampled power check: the same test rejects moves of a wrong anchor probability.
"""

from __future__ import annotations

import zlib

import numba
import numpy as np
import pytest
from gof import chi_square_gof
from random_models import random_model
from test_particle import bowker, one_move_from_the_posterior

from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.engine.kernels import build_state, canonical_relabel, recut_move
from pymc_partition.engine.kernels.rng import rng_state
from pymc_partition.model_spec import partition_spec

ALPHA = 0.001


def recut_kernel(model, n_particles, n_clusters):
    """A kernel whose step is one re-cut and nothing else."""
    mix = MoveMix(n_gibbs=0, n_split_merge=0, n_scans=0, gibbs_probability=0.0, thin=1, n_sams=1,
                  n_particles=n_particles, resplit_probability=1.0, recut_clusters=n_clusters)  # fmt: skip
    return PartitionKernel.from_spec(partition_spec(model), mix)


@numba.njit
def _recut_as_the_step_calls_it(rng, m, s, w, n_clusters, n_particles):
    """``recut_move`` with ``ancestor_sampling`` omitted, as the step kernel calls it: its compiled signature.

    Called from Python without that argument, numba's dispatcher can miss the compiled
    ``omitted(default=True)`` specialisation in its fast path and type every call's arguments again
    in Python (``Dispatcher._compile_for_args``: it did when the particle tests had run first, tens of
    thousands of times here); given ``True``, it would compile another specialisation. Called from
    here, it links the one the step uses.
    """
    return recut_move(rng, m, s, w, n_clusters, n_particles)


def one_recut_from_the_posterior(model, kernel, n_draws, seed, n_clusters):
    """``(from, to)`` state indices: ``from`` drawn from the exact posterior, ``to`` one re-cut later."""
    K = kernel.mix.n_particles
    return one_move_from_the_posterior(
        model, kernel, n_draws, seed, lambda *a: _recut_as_the_step_calls_it(*a, n_clusters, K)
    )


CASES = [
    # (family, prior, n, n_particles, n_clusters)
    ("nig", "dp", 6, 4, 3),
    ("niw", "py", 6, 2, 3),
    ("bernoulli", "mfm", 6, 6, 4),
    ("poisson", "umd", 6, 3, 3),
]


@pytest.mark.parametrize("family,prior,n,n_particles,n_clusters", CASES)
def test_one_recut_keeps_the_posterior_and_is_reversible(family, prior, n, n_particles, n_clusters):
    seed = zlib.crc32(repr((family, prior, n, n_particles, n_clusters)).encode())
    model = random_model(family, prior, n, seed)
    kernel = recut_kernel(model, n_particles, n_clusters)
    states, keys, probs, start, to = one_recut_from_the_posterior(model, kernel, 30_000, seed, n_clusters)
    n_c = states.max(axis=1) + 1
    assert np.array_equal(n_c[start], n_c[to])  # the number of clusters is kept
    assert 0.02 < np.mean(start != to)  # the move moves
    p_value, chi2, df = chi_square_gof(keys[to], keys, probs)
    assert p_value > ALPHA, f"next states: chi2={chi2:.1f}, df={df}, p={p_value:.2e}"
    p_sym, n_pairs = bowker(start, to, len(states))
    assert n_pairs >= 10 and p_sym > ALPHA, f"symmetry: p={p_sym:.2e} over {n_pairs} pairs"


def test_too_many_clusters_or_particles_is_refused():
    kernel = recut_kernel(random_model("nig", "dp", 4, 1), 2, 3)
    m, s, w = kernel.bundles
    build_state(np.zeros(4, np.int64), m, s)
    with pytest.raises(ValueError, match="re-cut"):
        recut_move(rng_state(0), m, s, w, 3, 32)
    with pytest.raises(ValueError, match="re-cut"):
        recut_move(rng_state(0), m, s, w, 1, 2)


def test_fewer_clusters_than_asked_is_no_move():
    kernel = recut_kernel(random_model("nig", "dp", 5, 1), 2, 3)
    m, s, w = kernel.bundles
    labels = np.array([0, 0, 1, 1, 0], np.int64)
    build_state(labels, m, s)
    assert recut_move(rng_state(0), m, s, w, 3, 2) == (0, False)
    assert np.array_equal(s.z, labels)


@pytest.mark.parametrize("n_clusters,n_particles", [(4, 16), (2, 32)])
def test_every_particle_row_leaves_the_forms_scratch_alone(n_clusters, n_particles):
    """All the spare particle rows in use (2 x particles x clusters = PARTICLE_ROWS): the cluster
    log marginals the moves leave equal those rebuilt from the labels (the forms' scratch row
    lies after the particles' rows; NIW's ``pred`` writes it)."""
    from pymc_partition.engine.kernels import particle_move, state_log_posterior

    model = random_model("niw", "dp", 12, 5)
    kernel = recut_kernel(model, n_particles, max(n_clusters, 3))
    m, s, w = kernel.bundles
    gen = rng_state(2)
    build_state(np.arange(12) % 5, m, s)
    for _ in range(20):
        if n_clusters > 2:
            recut_move(gen, m, s, w, n_clusters, n_particles)
        else:
            particle_move(gen, m, s, w, n_particles, 0.5, False, 0.5)
        carried = state_log_posterior(m, s)
        labels = np.empty(12, np.int64)
        canonical_relabel(s.z, labels)
        build_state(labels, m, s)
        np.testing.assert_allclose(carried, state_log_posterior(m, s), rtol=0, atol=1e-8)
