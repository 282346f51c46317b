"""The sequentially allocated merge-split move (``engine/kernels/sams.py``), exactly.

On small problems (random hyperparameters, several families and priors) the move's transition
matrix is built by enumerating the ordered pair ``(i, j)`` (uniform or balanced between splits
and merges), the allocation order of ``S`` (random or informed) and, for a split, every
allocation, with the proposal probabilities from the kernel
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
from random_models import all_partitions, random_model, tempered_log_posterior

import pymc_partition as pmp
from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.engine.kernels import build_state, canonical_relabel, sams_informed_order, sams_log_q, sams_move
from pymc_partition.engine.kernels.rng import rng_state
from pymc_partition.model_spec import partition_spec
from pymc_partition.state import state_keys

ALPHA = 0.001


#: the move's options: (split_probability, informed); 0.0 and False is Dahl & Newcomb's move
MODES = {"uniform": (0.0, False), "balanced": (0.3, False), "informed": (0.0, True), "balanced_informed": (0.6, True)}


def sams_kernel(model, n_proposals=1, mode="uniform"):
    """A kernel doing ``n_proposals`` SAMS proposals per step and nothing else."""
    p, informed = MODES[mode]
    mix = MoveMix(n_gibbs=0, n_split_merge=0, n_scans=0, gibbs_probability=0.0, thin=1,
                  n_sams=n_proposals, sams_split_probability=p, sams_informed=informed)  # fmt: skip
    return PartitionKernel.from_spec(partition_spec(model), mix)


def pair_probability(z, i, j, p):
    """Probability of drawing the ordered pair ``(i, j)`` in state ``z`` (uniform pairs if ``p == 0``)."""
    n = z.size
    if p == 0:
        return 1.0 / (n * (n - 1))
    n_i = int((z == z[i]).sum())
    return (p / (n_i - 1) if z[j] == z[i] else (1 - p) / (n - n_i)) / n


def sams_transition_matrix(model, kernel, mode="uniform", beta=1.0):
    """Exact transition matrix of one SAMS proposal, every random choice enumerated.

    The pair's probability and the Hastings ratio's pair term are computed here, from their
    definitions; the informed order comes from the kernel (any order fixed by the pair and ``S`` is exact).
    ``beta``: the move of a tempered copy (likelihood to that power; replica exchange), whose
    target is then the returned ``logp``.
    """
    p, informed = MODES[mode]
    n = kernel.n_items
    states = all_partitions(n)
    keys = state_keys(states, assume_canonical=True).tolist()
    where = {k: s for s, k in enumerate(keys)}
    logp = tempered_log_posterior(partition_spec(model), states, beta)
    bundles = kernel.bundles
    T = np.zeros((len(states), len(states)))
    for s, z in enumerate(states):
        # balanced pairs: a split drawn for a singleton ``i`` (or a merge with one cluster) proposes nothing
        T[s, s] += 1.0 - sum(pair_probability(z, i, j, p) for i, j in itertools.permutations(range(n), 2))
        for i, j in itertools.permutations(range(n), 2):
            members = [k for k in range(n) if k not in (i, j) and z[k] in (z[i], z[j])]
            if informed:
                orders = [sams_informed_order(i, j, np.array(members, dtype=np.int64), *bundles)]
            else:
                orders = list(itertools.permutations(members))
            w = pair_probability(z, i, j, p) / len(orders)
            for order in orders:
                order = np.array(order, dtype=np.int64)
                if z[i] == z[j]:
                    for outcome in itertools.product((0, 1), repeat=len(members)):
                        new = z.copy()
                        new[j] = z.max() + 1
                        new[order[np.array(outcome, dtype=bool)]] = z.max() + 1
                        new = pmp.canonicalize(new)
                        log_q = sams_log_q(new, i, j, order, *bundles, beta)
                        pair = np.log(pair_probability(new, i, j, p) / pair_probability(z, i, j, p))
                        t = where[state_keys(new, assume_canonical=True).item()]
                        acc = min(1.0, np.exp(logp[t] - logp[s] - log_q + pair))
                        T[s, t] += w * np.exp(log_q) * acc
                        T[s, s] += w * np.exp(log_q) * (1 - acc)
                else:
                    log_q = sams_log_q(z, i, j, order, *bundles, beta)
                    new = z.copy()
                    new[new == z[j]] = z[i]
                    pair = np.log(pair_probability(new, i, j, p) / pair_probability(z, i, j, p))
                    t = where[state_keys(pmp.canonicalize(new), assume_canonical=True).item()]
                    acc = min(1.0, np.exp(logp[t] - logp[s] + log_q + pair))
                    T[s, t] += w * acc
                    T[s, s] += w * (1 - acc)
    return states, keys, T, logp


CASES = [
    # (family, prior, n, mode)
    ("nig", "dp", 5, "uniform"),
    ("niw", "py", 5, "uniform"),
    ("bernoulli", "umd", 5, "uniform"),
    ("poisson", "mfm", 5, "uniform"),
    ("spike", "uniform", 4, "uniform"),
    ("nig", "py", 4, "uniform"),
    ("nig", "dp", 5, "balanced_informed"),
    ("bernoulli", "py", 5, "balanced"),
    ("poisson", "umd", 5, "informed"),
    ("niw", "mfm", 4, "balanced_informed"),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: "-".join(map(str, c)))
def case(request):
    family, prior, n, mode = request.param
    seed = zlib.crc32(repr(request.param[:3]).encode())
    model = random_model(family, prior, n, seed)
    kernel = sams_kernel(model, mode=mode)
    states, keys, T, logp = sams_transition_matrix(model, kernel, mode)
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
        # beta given, as the tests above give it: one compiled signature, not one more without it
        total += np.exp(sams_log_q(new, 0, 2, order, *kernel.bundles, 1.0))
    np.testing.assert_allclose(total, 1.0, atol=1e-12)


#: the tempered move (a copy of replica exchange): (family, prior, n, mode, beta); beta 0 is the prior
TEMPERED = [("nig", "dp", 5, "uniform", 0.4), ("poisson", "py", 4, "balanced_informed", 0.0)]


@pytest.mark.parametrize("family,prior,n,mode,beta", TEMPERED)
def test_tempered_move_is_reversible_for_its_power(family, prior, n, mode, beta):
    """At likelihood power ``beta`` the move is reversible for ``pi(z) L(z)^beta`` (every random
    choice enumerated), and the compiled move from one state follows the enumerated row."""
    seed = zlib.crc32(repr((family, prior, n)).encode())
    model = random_model(family, prior, n, seed)
    kernel = sams_kernel(model, mode=mode)
    states, keys, T, logp = sams_transition_matrix(model, kernel, mode, beta)
    np.testing.assert_allclose(T.sum(axis=1), 1.0, atol=1e-12)
    pi = np.exp(logp - logp.max())
    pi /= pi.sum()
    flow = pi[:, None] * T
    np.testing.assert_allclose(flow, flow.T, atol=1e-12)
    p, informed = MODES[mode]
    m, s, w = kernel.bundles
    rng = rng_state(seed)
    start = len(states) // 2
    got = np.empty((4000, n), np.int64)
    for t in range(got.shape[0]):
        build_state(states[start], m, s)
        sams_move(rng, m, s, w, p, informed, beta)
        canonical_relabel(s.z, got[t])
    p_value, chi2, df = chi_square_gof(state_keys(got, assume_canonical=True), np.asarray(keys), T[start])
    assert p_value > ALPHA, f"chi2={chi2:.1f}, df={df}, p={p_value:.2e}"
