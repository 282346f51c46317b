"""The particle Gibbs split-merge move (``engine/kernels/particle.py``), exactly.

The move's transition matrix is out of reach (it averages over particle systems), so its
exactness is checked by what it must satisfy, on small problems (random hyperparameters,
several families, priors, pair and order options):

- *detailed balance, sampled* (merge-split proposals and re-splits): states drawn from
  :func:`pymc_partition.exact_posterior`, one compiled move from each; the next states follow
  the posterior (chi-square) and the pairs ``(from, to)`` are as frequent as ``(to, from)`` (Bowker's symmetry test);
- the filter's estimate ``Z^`` is unbiased for the splits' total mass (enumerated), which the
  move's exactness rests on;
- with one particle the filter is the sequential allocation: its forced log weight is SAMS's
  proposal probability (:func:`~pymc_partition.engine.kernels.sams_log_q`, which
  ``test_sams`` ties to an enumerated, reversible matrix).
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest
from gof import chi_square_gof
from random_models import all_partitions, random_model
from scipy import stats

import pymc_partition as pmp
from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.engine.kernels import (
    build_state,
    canonical_relabel,
    particle_filter,
    particle_move,
    sams_log_q,
)
from pymc_partition.engine.kernels.rng import rng_state
from pymc_partition.model_spec import partition_spec
from pymc_partition.state import state_keys

ALPHA = 0.001


def particle_kernel(model, n_particles, split_probability=0.0, informed=False, resplit=0.0):
    """A kernel whose step is one particle proposal and nothing else."""
    mix = MoveMix(n_gibbs=0, n_split_merge=0, n_scans=0, gibbs_probability=0.0, thin=1, n_sams=1,
                  sams_split_probability=split_probability, sams_informed=informed,
                  n_particles=n_particles, resplit_probability=resplit)  # fmt: skip
    return PartitionKernel.from_spec(partition_spec(model), mix)


def one_move_from_the_posterior(model, kernel, n_draws, seed, move=None):
    """``(from, to)`` state indices: ``from`` drawn from the exact posterior, ``to`` one move later.

    ``move(gen, m, s, w)`` makes the move (default: :func:`particle_move` with the kernel's mix).
    """
    states = all_partitions(kernel.n_items)
    probs = pmp.exact_posterior(model, progressbar=False).probability(states)
    probs = probs / probs.sum()
    rng = np.random.default_rng(seed)
    start = rng.choice(len(states), size=n_draws, p=probs)
    m, s, w = kernel.bundles
    mix = kernel.mix
    gen = rng_state(seed)
    out = np.empty((n_draws, kernel.n_items), np.int64)
    for t in range(n_draws):
        build_state(states[start[t]], m, s)
        if move is None:
            particle_move(gen, m, s, w, mix.n_particles, mix.sams_split_probability, mix.sams_informed,
                          mix.resplit_probability)  # fmt: skip
        else:
            move(gen, m, s, w)
        canonical_relabel(s.z, out[t])
    keys = state_keys(states, assume_canonical=True)
    order = np.argsort(keys)
    to = order[np.searchsorted(keys[order], state_keys(out, assume_canonical=True))]
    return states, keys, probs, start, to


def bowker(start, to, n_states, min_count=10):
    """Bowker's symmetry test of the ``(from, to)`` counts (pairs seen at least ``min_count`` times)."""
    counts = np.zeros((n_states, n_states))
    np.add.at(counts, (start, to), 1)
    upper = np.triu_indices(n_states, 1)
    a, b = counts[upper], counts.T[upper]
    keep = a + b >= min_count
    statistic = ((a[keep] - b[keep]) ** 2 / (a[keep] + b[keep])).sum()
    return stats.chi2.sf(statistic, keep.sum()), int(keep.sum())


CASES = [
    # (family, prior, n, n_particles, split_probability, informed, resplit_probability)
    ("nig", "dp", 5, 4, 0.0, False, 0.0),
    ("niw", "py", 5, 3, 0.5, True, 0.0),
    ("bernoulli", "mfm", 5, 8, 0.3, False, 0.5),
    ("poisson", "umd", 5, 2, 0.0, True, 0.5),
    ("niw", "dp", 5, 3, 0.5, True, 1.0),
]


@pytest.mark.parametrize("family,prior,n,n_particles,p,informed,resplit", CASES)
def test_one_move_keeps_the_posterior_and_is_reversible(family, prior, n, n_particles, p, informed, resplit):
    seed = zlib.crc32(repr((family, prior, n, n_particles)).encode())
    model = random_model(family, prior, n, seed)
    kernel = particle_kernel(model, n_particles, p, informed, resplit)
    states, keys, probs, start, to = one_move_from_the_posterior(model, kernel, 10_000, seed)
    assert 0.05 < np.mean(start != to) < 0.95  # the move moves
    p_value, chi2, df = chi_square_gof(keys[to], keys, probs)
    assert p_value > ALPHA, f"next states: chi2={chi2:.1f}, df={df}, p={p_value:.2e}"
    p_sym, n_pairs = bowker(start, to, len(states))
    assert n_pairs >= 10 and p_sym > ALPHA, f"symmetry: p={p_sym:.2e} over {n_pairs} pairs"


def test_the_sampled_checks_have_power():
    """Moves from another model's posterior: the next states are rejected (the move is not
    given time to forget where it started)."""
    model = random_model("nig", "dp", 5, 1)
    other = random_model("nig", "dp", 5, 2)
    kernel = particle_kernel(model, 4)
    states, keys, _, _, to = one_move_from_the_posterior(other, kernel, 6000, 3)
    probs = pmp.exact_posterior(model, progressbar=False).probability(states)
    p_value, _, _ = chi_square_gof(keys[to], keys, probs)
    assert p_value < ALPHA


def _split_weights(kernel, i, j, members):
    """``log gamma_T - log gamma_0`` of every split of ``members`` (anchors ``i``, ``j``): one forced particle."""
    m, s, w = kernel.bundles
    rng = rng_state(0)
    out = []
    for sides in itertools.product((0, 1), repeat=len(members)):
        w.members[: len(members)] = members
        force = np.array(sides, np.int64)
        _, _, g, _, _ = particle_filter(rng, m, s, w, i, j, len(members), 1, force, kernel.n_items, 0.0, w.side)
        out.append(g)
    return np.array(out)


def test_the_filter_is_unbiased_for_the_splits_mass():
    """Mean of ``Z^`` over many filters against the enumerated sum over splits (MC error: 5 s.e.)."""
    model = random_model("niw", "dp", 7, 11)
    kernel = particle_kernel(model, 3)
    m, s, w = kernel.bundles
    build_state(np.zeros(7, np.int64), m, s)
    members = np.array([1, 2, 4, 5, 6], np.int64)
    exact = np.exp(_split_weights(kernel, 0, 3, members)).sum()
    rng = rng_state(7)
    est = np.empty(4000)
    for t in range(est.size):
        w.members[:5] = members
        est[t] = np.exp(particle_filter(rng, m, s, w, 0, 3, 5, 3, w.side[:0], 7, 0.0, w.side)[0])
    se = est.std() / np.sqrt(est.size)
    assert abs(est.mean() - exact) < 5 * se, (est.mean(), exact, se)


def test_one_particle_is_the_sequential_allocation():
    """Forced, one particle: ``log Z^ - g`` is minus SAMS's log proposal probability of those sides."""
    model = random_model("poisson", "py", 6, 4)
    kernel = particle_kernel(model, 1)
    m, s, w = kernel.bundles
    labels = np.array([0, 1, 0, 0, 1, 1], np.int64)
    build_state(labels, m, s)
    order = np.array([5, 2, 1, 3], np.int64)
    force = np.array([1, 0, 1, 0], np.int64)  # with j (item 4) or with i (item 0)
    w.members[:4] = order
    log_z, k, g, _, _ = particle_filter(rng_state(1), m, s, w, 0, 4, 4, 1, force, 6, 0.0, w.side)
    assert k == 0 and np.array_equal(w.side[:4], force)
    # beta given, as test_sams gives it: one compiled signature of sams_log_q for both files
    np.testing.assert_allclose(g - log_z, sams_log_q(labels, 0, 4, order, m, s, w, 1.0), rtol=0, atol=1e-12)


def test_too_many_particles_is_refused():
    from pymc_partition.engine.kernels import MAX_PARTICLES

    kernel = particle_kernel(random_model("nig", "dp", 4, 1), 2)
    m, s, w = kernel.bundles
    build_state(np.zeros(4, np.int64), m, s)
    with pytest.raises(ValueError, match="n_particles"):
        # every argument given, as the step kernel gives them: without the last one numba
        # compiles a second specialisation of the whole move (seconds) just for this refusal
        particle_move(rng_state(0), m, s, w, MAX_PARTICLES + 1, 0.0, False, 0.0)
