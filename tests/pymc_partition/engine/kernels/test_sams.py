"""The sequentially allocated merge-split move (``engine/kernels/sams.py``), exactly.

On small problems (random hyperparameters, several families and priors) the move's transition
matrix is built by enumerating the ordered pair ``(i, j)``, the allocation order of ``S`` and, for
a split, every allocation, with the proposal probabilities from the kernel
(:func:`~pymc_partition.engine.kernels.sams_log_q`) and the posterior from
:func:`pymc_partition.exact_posterior`. Checked: rows sum to one, detailed balance holds to
rounding, the move alone connects every pair of states; and the compiled move, run many times
from one state, visits the next states with the matrix's probabilities (chi-square), which ties
the random path (the pair, the order, the draws) to the enumeration.
"""

from __future__ import annotations

import itertools
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
from gof import chi_square_gof
from random_models import all_partitions, random_model

import pymc_partition as pmp
from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.engine.kernels import sams_log_q
from pymc_partition.model_spec import partition_spec
from pymc_partition.state import state_keys

ALPHA = 0.001


def sams_kernel(model, n_proposals=1):
    """A kernel doing ``n_proposals`` SAMS proposals per step and nothing else."""
    mix = MoveMix(n_gibbs=0, n_split_merge=0, n_scans=0, gibbs_probability=0.0, thin=1,
                  n_sams=n_proposals)  # fmt: skip
    return PartitionKernel.from_spec(partition_spec(model), mix)


def sams_transition_matrix(model, kernel):
    """Exact transition matrix of one SAMS proposal, every random choice enumerated."""
    n = kernel.n_items
    states = all_partitions(n)
    keys = state_keys(states, assume_canonical=True).tolist()
    where = {k: s for s, k in enumerate(keys)}
    logp = partition_spec(model).log_posterior(states)
    bundles = kernel.bundles
    T = np.zeros((len(states), len(states)))
    for s, z in enumerate(states):
        for i, j in itertools.permutations(range(n), 2):
            members = [k for k in range(n) if k not in (i, j) and z[k] in (z[i], z[j])]
            orders = list(itertools.permutations(members))
            w = 1.0 / (n * (n - 1) * len(orders))
            for order in orders:
                order = np.array(order, dtype=np.int64)
                if z[i] == z[j]:
                    for outcome in itertools.product((0, 1), repeat=len(members)):
                        new = z.copy()
                        new[j] = z.max() + 1
                        new[order[np.array(outcome, dtype=bool)]] = z.max() + 1
                        new = pmp.canonicalize(new)
                        log_q = sams_log_q(new, i, j, order, *bundles)
                        t = where[state_keys(new, assume_canonical=True).item()]
                        acc = min(1.0, np.exp(logp[t] - logp[s] - log_q))
                        T[s, t] += w * np.exp(log_q) * acc
                        T[s, s] += w * np.exp(log_q) * (1 - acc)
                else:
                    log_q = sams_log_q(z, i, j, order, *bundles)
                    new = z.copy()
                    new[new == z[j]] = z[i]
                    t = where[state_keys(pmp.canonicalize(new), assume_canonical=True).item()]
                    acc = min(1.0, np.exp(logp[t] - logp[s] + log_q))
                    T[s, t] += w * acc
                    T[s, s] += w * (1 - acc)
    return states, keys, T, logp


CASES = [
    # (family, prior, n)
    ("nig", "dp", 5),
    ("niw", "py", 5),
    ("bernoulli", "umd", 5),
    ("poisson", "mfm", 5),
    ("spike", "uniform", 4),
    ("nig", "py", 4),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: "-".join(map(str, c)))
def case(request):
    family, prior, n = request.param
    seed = zlib.crc32(repr(request.param).encode())
    model = random_model(family, prior, n, seed)
    kernel = sams_kernel(model)
    states, keys, T, logp = sams_transition_matrix(model, kernel)
    return SimpleNamespace(model=model, kernel=kernel, seed=seed, states=states,
                           keys=np.asarray(keys), T=T, logp=logp)  # fmt: skip


def test_detailed_balance_and_irreducibility(case):
    T, states = case.T, case.states
    np.testing.assert_allclose(T.sum(axis=1), 1.0, atol=1e-12)
    pi = np.exp(case.logp - case.logp.max())
    pi /= pi.sum()
    flow = pi[:, None] * T
    np.testing.assert_allclose(flow, flow.T, atol=1e-12)
    np.testing.assert_allclose(pi @ T, pi, atol=1e-12)
    # the posterior the tests compare with is pmp.exact_posterior's
    exact = pmp.exact_posterior(case.model, progressbar=False)
    np.testing.assert_allclose(exact.probability(states), pi, rtol=1e-9, atol=1e-14)
    reach = T > 0
    for _ in range(len(pi)):
        reach = (reach.astype(float) @ (T > 0)) > 0
    assert reach.all()


def test_compiled_move_follows_the_transition_matrix(case):
    """From the first, the last and a middle state: next-state frequencies of the compiled move
    against the enumerated row of the matrix."""
    kernel, states = case.kernel, case.states
    rng = np.random.default_rng(case.seed)
    n_steps = 6000
    for s in (0, len(states) // 2, len(states) - 1):
        start = states[s]
        got = np.empty((n_steps, kernel.n_items), np.int64)
        for t in range(n_steps):
            got[t], _ = kernel.step(kernel.init(start), rng)  # a fresh state each time
        keys = state_keys(got, assume_canonical=True)
        p_value, chi2, df = chi_square_gof(keys, case.keys, case.T[s])
        assert p_value > ALPHA, f"from {start}: chi2={chi2:.1f}, df={df}, p={p_value:.2e}"


def test_power_of_the_one_step_check():
    """The one-step check has power: the compiled move of one model does not follow the matrix
    of another (same family and prior kind, other data and hyperparameters)."""
    model = random_model("nig", "dp", 5, 1)
    other = random_model("nig", "dp", 5, 2)
    kernel = sams_kernel(model)
    states, keys, T, _ = sams_transition_matrix(other, sams_kernel(other))
    rng = np.random.default_rng(3)
    s = len(states) - 1  # all singletons: merges only, their rates set by the data
    got = np.array([kernel.step(kernel.init(states[s]), rng)[0] for _ in range(6000)])
    p_value, _, _ = chi_square_gof(state_keys(got, assume_canonical=True), np.asarray(keys), T[s])
    assert p_value < ALPHA


def test_sams_log_q_sums_to_one_over_splits():
    """For one pair and order, the allocations' probabilities sum to one."""
    model = random_model("niw", "dp", 6, 5)
    kernel = sams_kernel(model)
    z = np.zeros(6, np.int64)
    order = np.array([4, 1, 5, 3], np.int64)
    total = 0.0
    for outcome in itertools.product((0, 1), repeat=4):
        new = z.copy()
        new[order[np.array(outcome, dtype=bool)]] = 1
        new[2] = 1
        total += np.exp(sams_log_q(new, 0, 2, order, *kernel.bundles))
    np.testing.assert_allclose(total, 1.0, atol=1e-12)
