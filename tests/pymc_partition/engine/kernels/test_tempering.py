"""The exchange move of replica exchange (``engine/kernels/tempering.py``), exactly.

The tempered copies' own moves are the Gibbs sweep and the SAMS move at a likelihood power
(``test_sams.py`` enumerates the tempered SAMS move; ``step_methods/test_replica_exchange.py``
runs every copy against its tempered exact posterior). Here the exchanges alone: their transition
matrix on the joint space of two copies, built from the definition (each of the two parities
with probability 1/2, the Metropolis ratio of the product target), is reversible for
``prod_t pi(z_t) L(z_t)^beta_t``; and the compiled step without moves (exchanges only) from
fixed joint states of three copies visits the next joint states with the row's probabilities.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from gof import chi_square_gof
from random_models import all_partitions, random_model, tempered_log_posterior

from pymc_partition.engine import MoveMix, PartitionKernel, ReplicaExchangeKernel
from pymc_partition.engine.kernels.rng import rng_state
from pymc_partition.model_spec import partition_spec
from pymc_partition.state import state_keys

ALPHA = 0.001
#: a mix that moves no copy: the step makes the exchanges alone
IDLE = MoveMix(n_gibbs=0, n_split_merge=0, n_scans=0, gibbs_probability=0.0, thin=1)


def swap_row(log_lik, betas):
    """The exchange round's transitions from copies with log likelihoods ``log_lik`` (temperature
    order): ``{permutation of the copies: probability}``."""
    R = len(betas)
    row = {}
    for parity in (0, 1):
        moves = []
        for t in range(parity, R - 1, 2):
            a = min(1.0, np.exp((betas[t] - betas[t + 1]) * (log_lik[t + 1] - log_lik[t])))
            moves.append((t, a))
        # independent exchanges of disjoint pairs: every subset of them
        for taken in itertools.product((False, True), repeat=len(moves)):
            p, perm = 0.5, list(range(R))
            for (t, a), go in zip(moves, taken):
                p *= a if go else 1.0 - a
                if go:
                    perm[t], perm[t + 1] = perm[t + 1], perm[t]
            row[tuple(perm)] = row.get(tuple(perm), 0.0) + p  # the identity collects the rejections
    return row


def test_exchange_matrix_is_reversible_for_the_product_target():
    model = random_model("nig", "dp", 4, 11)
    spec = partition_spec(model)
    states = all_partitions(4)
    betas = np.array([1.0, 0.3])
    log_lik = spec.log_posterior(states) - tempered_log_posterior(spec, states, 0.0)
    S = len(states)
    joint = [(a, b) for a in range(S) for b in range(S)]
    where = {ab: k for k, ab in enumerate(joint)}
    log_target = np.array([tempered_log_posterior(spec, states[[a]], 1.0)[0]
                           + tempered_log_posterior(spec, states[[b]], 0.3)[0] for a, b in joint])  # fmt: skip
    T = np.zeros((len(joint), len(joint)))
    for k, (a, b) in enumerate(joint):
        for perm, p in swap_row(log_lik[[a, b]], betas).items():
            T[k, where[tuple((a, b)[q] for q in perm)]] += p
    np.testing.assert_allclose(T.sum(axis=1), 1.0, atol=1e-12)
    pi = np.exp(log_target - log_target.max())
    pi /= pi.sum()
    flow = pi[:, None] * T
    np.testing.assert_allclose(flow, flow.T, atol=1e-14)


def test_compiled_exchanges_follow_the_row():
    betas = (1.0, 0.4, 0.0)
    model = random_model("nig", "py", 5, 3)
    spec = partition_spec(model)
    engine = ReplicaExchangeKernel(PartitionKernel.from_spec(spec, IDLE), betas)
    states = all_partitions(5)
    log_lik = spec.log_posterior(states) - tempered_log_posterior(spec, states, 0.0)
    rng = rng_state(7)
    for start in ((0, 51, 20), (30, 2, 44)):
        row = swap_row(log_lik[list(start)], np.asarray(betas))
        perms = sorted(row)
        got = np.empty(2000, np.int64)
        for t in range(got.size):
            engine.load_replicas(states[list(start)])
            engine.step(states[start[0]], rng)
            after = state_keys(engine.replica_labels(), assume_canonical=True)
            before = state_keys(states[list(start)], assume_canonical=True)
            got[t] = perms.index(tuple(int(np.flatnonzero(before == k)[0]) for k in after))
        p_value, chi2, df = chi_square_gof(got, np.arange(len(perms)), np.array([row[p] for p in perms]))
        assert p_value > ALPHA, f"from {start}: chi2={chi2:.1f}, df={df}, p={p_value:.2e}"
    assert (engine.swap_proposed > 0).all()


def test_a_split_merge_mix_is_refused():
    model = random_model("nig", "dp", 4, 0)
    kernel = PartitionKernel.from_spec(partition_spec(model), IDLE._replace(n_split_merge=1, n_scans=2))
    with pytest.raises(ValueError, match="not tempered"):
        ReplicaExchangeKernel(kernel, (1.0, 0.5))


@pytest.mark.parametrize("betas,match", [((0.9, 0.5), "start at 1.0"), ((1.0, 0.5, 0.6), "decrease"),
                                         ((1.0, -0.1), "decrease"), ((), "start at 1.0")])  # fmt: skip
def test_bad_ladders(betas, match):
    model = random_model("nig", "dp", 4, 0)
    kernel = PartitionKernel.from_spec(partition_spec(model), IDLE)
    with pytest.raises(ValueError, match=match):
        ReplicaExchangeKernel(kernel, betas)
