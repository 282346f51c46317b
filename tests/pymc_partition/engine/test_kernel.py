"""The sampling engine driven directly, without PyMC: specs built from numbers, chains against
exact enumeration, state reuse, hyperparameter refresh and pickling."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import zlib

import numpy as np
import pytest
from test_samplers_exact import ALPHA, all_partitions, chi_square_gof, coclustering_z

import pymc_partition as pmp
from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.exact import ExactPosterior
from pymc_partition.spec import HyperparameterNumbers, PartitionSpec
from pymc_partition.state import state_keys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

MIXES = {
    "gibbs": MoveMix(n_gibbs=3, n_split_merge=0, n_scans=0, gibbs_probability=0.0, thin=1),
    "split_merge": MoveMix(n_gibbs=0, n_split_merge=8, n_scans=2, gibbs_probability=0.0, thin=1),
    "mixed_thin": MoveMix(n_gibbs=1, n_split_merge=1, n_scans=3, gibbs_probability=0.3, thin=2),
}


def _two_groups(n, n_vars, seed):
    rng = np.random.default_rng(seed)
    y = rng.normal(0.0, 1.0, (n, n_vars))
    y[: n // 2] += 2.5
    return y


def _spec(case, n=6, seed=0):
    """Specs from numbers only (no pm.Model)."""
    if case == "nig_dp":
        fam = pmp.NormalInverseGamma(mu0=0.0, kappa0=0.5, alpha0=2.0, beta0=1.0)
        return PartitionSpec.from_data(pmp.DirichletProcess(alpha=1.0), fam, _two_groups(n, 2, seed))
    if case == "bernoulli_py":
        y = (_two_groups(n, 5, seed) > 1.2).astype(float)
        return PartitionSpec.from_data(pmp.PitmanYor(alpha=0.5, d=0.3), pmp.BetaBernoulli(1.0, 1.0), y)
    if case == "spike_umd_replicates":
        idx = np.repeat(np.arange(n), 2)
        fam = pmp.SpikeSlabNormal(mu=0.0, sigma2=0.5, sigma2_eta=0.3, sigma2_theta=4.0, p=0.3)
        return PartitionSpec.from_data(pmp.UniformMultinomialDirichlet(), fam,
                                       _two_groups(n, 2, seed)[idx], item_index=idx)  # fmt: skip
    raise ValueError(case)


def run(kernel, labels, n_draws, seed, burn=20):
    """Labels ``(n_draws, n)`` and logp ``(n_draws,)`` of a chain of ``kernel`` from ``labels``."""
    rng = np.random.default_rng(seed)
    state = kernel.init(labels)
    for _ in range(burn):
        state, _ = kernel.step(state, rng)
    out = np.empty((n_draws, kernel.n_items), np.int64)
    lps = np.empty(n_draws)
    for t in range(n_draws):
        state, res = kernel.step(state, rng)
        out[t], lps[t] = state, res.partition_logp
    return out, lps


def test_engine_never_imports_pymc():
    code = ("import sys, pymc_partition.engine, pymc_partition.spec, pymc_partition.exact; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pymc'))")  # fmt: skip
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "case,mix",
    [
        ("nig_dp", "gibbs"),
        ("bernoulli_py", "split_merge"),
        ("spike_umd_replicates", "mixed_thin"),
        ("nig_dp", "split_merge"),
    ],
)
def test_chains_match_exact_enumeration(case, mix):
    """Visited states (chi-square) and co-clustering (batch-means standard errors) against the
    enumerated posterior, each at false-alarm rate ALPHA; every logp is the exact one."""
    seed = zlib.crc32(repr((case, mix)).encode())
    spec = _spec(case, seed=seed % 100)
    kernel = PartitionKernel.from_spec(spec, MIXES[mix])
    assert kernel.predictive_form.name != "graph"
    exact = ExactPosterior(spec, progressbar=False)
    states = all_partitions(spec.n_items)
    labels, lps = run(kernel, np.zeros(spec.n_items, np.int64), 8000, seed)
    np.testing.assert_allclose(lps, spec.log_posterior(labels), rtol=0, atol=1e-9)
    keys = state_keys(states, assume_canonical=True)
    p_value, chi2, df = chi_square_gof(state_keys(labels, assume_canonical=True), keys,
                                       exact.probability(states))  # fmt: skip
    assert p_value > ALPHA, f"chi2={chi2:.1f}, df={df}, p={p_value:.2e}"
    z, crit = coclustering_z(labels, exact.coclustering)
    assert z < crit, f"co-clustering off by {z:.1f} standard errors (critical {crit:.1f})"


def test_graph_form_matches_the_specialised_form():
    spec = _spec("nig_dp", n=9)
    fast = PartitionKernel.from_spec(spec, MIXES["mixed_thin"])
    graph = PartitionKernel.from_spec(spec, MIXES["mixed_thin"], specialize=False)
    assert graph.predictive_form.name == "graph" and not graph.refreshable
    a, la = run(fast, np.arange(9), 200, seed=3)
    b, lb = run(graph, np.arange(9), 200, seed=3)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(la, lb, rtol=0, atol=1e-9)


def test_a_step_depends_only_on_the_state_and_the_seed():
    """Reusing the cluster arrays (the state the kernel returned last) and rebuilding them from
    the labels (any other state, or a fresh init) give the same step."""
    kernel = PartitionKernel.from_spec(_spec("bernoulli_py", n=8), MIXES["mixed_thin"])
    s0 = kernel.init([3, 3, 1, 1, 0, 0, 7, 7])
    np.testing.assert_array_equal(s0, [0, 0, 1, 1, 2, 2, 3, 3])
    s1, r1 = kernel.step(s0, 11)
    s2, r2 = kernel.step(s1, 12)  # reuses the arrays
    again, r_again = kernel.step(kernel.init(s1), 12)  # rebuilds them
    np.testing.assert_array_equal(s2, again)
    assert r2 == r_again
    old, r_old = kernel.step(s1, 12)  # an older state: rebuilt, not the arrays' current one
    np.testing.assert_array_equal(old, s2)
    assert r_old == r2 and r_old.n_gibbs_sweeps >= 2 and r_old.n_proposals == 2
    assert s2.dtype == np.int64 and s2 is not s1 and not np.shares_memory(s2, s1)


def test_refresh_takes_new_hyperparameters_in_place():
    y = _two_groups(7, 2, seed=5)
    families = [pmp.NormalInverseGamma(0.0, 0.5, 2.0, 1.0), pmp.NormalInverseGamma(1.0, 2.0, 3.0, 0.5)]
    priors = [pmp.DirichletProcess(alpha=1.0), pmp.DirichletProcess(alpha=4.0)]
    specs = [PartitionSpec.from_data(p, f, y) for p, f in zip(priors, families)]
    kernel = PartitionKernel.from_spec(specs[0], MIXES["gibbs"])
    before = specs[0].item_stats.copy()
    state, res = kernel.step(kernel.init(np.zeros(7, np.int64)), 1)
    assert res.partition_logp == pytest.approx(specs[0].log_posterior(state), abs=1e-9)
    new = specs[1]
    numbers = HyperparameterNumbers(new.log_g, new.log_h, new.item_stats, new.family,
                                    new.family.log_marginal_numpy(new.item_stats))  # fmt: skip
    kernel.refresh(numbers)
    for t in range(5):  # the state it returned last is stale now: rebuilt at the new numbers
        state, res = kernel.step(state, 2 + t)
        assert res.partition_logp == pytest.approx(new.log_posterior(state), abs=1e-9)
    assert kernel.family is new.family
    np.testing.assert_array_equal(specs[0].item_stats, before)  # the spec's arrays untouched
    graph = PartitionKernel.from_spec(specs[0], MIXES["gibbs"], specialize=False)
    with pytest.raises(NotImplementedError, match="hyperparameters"):
        graph.refresh(numbers)


@pytest.mark.parametrize("family", ["nig", "niw", "bernoulli", "poisson", "spike"])
def test_refresh_computes_the_singletons_with_the_form(family):
    """Numbers without singleton log marginals: the engine computes them with its form (compiled), equal to the
    family's graph at the new hyperparameters, and the chain it then runs scores the new posterior."""
    y = _two_groups(7, 2, seed=3)
    idx = None
    families = {
        "nig": [pmp.NormalInverseGamma(0.0, 0.5, 2.0, 1.0), pmp.NormalInverseGamma([1.0, -2.0], 3.0, 3.0, 0.5)],
        "niw": [pmp.NormalInverseWishart(np.zeros(2), 0.5, 4.0, np.eye(2)),
                pmp.NormalInverseWishart(np.ones(2), 2.0, 5.0, 2.0 * np.eye(2))],
        "bernoulli": [pmp.BetaBernoulli(1.0, 1.0), pmp.BetaBernoulli(0.3, 2.0)],
        "poisson": [pmp.GammaPoisson(1.0, 1.0), pmp.GammaPoisson(3.0, 0.5)],
        "spike": [pmp.SpikeSlabNormal(mu=0.0, sigma2=0.5, sigma2_eta=0.3, sigma2_theta=4.0, p=0.3),
                  pmp.SpikeSlabNormal(mu=0.0, sigma2=0.5, sigma2_eta=0.3, sigma2_theta=0.7, p=0.8)],
    }[family]  # fmt: skip
    if family == "bernoulli":
        y = (y > 1.2).astype(float)
    elif family == "poisson":
        y = np.round(np.abs(y) * 2.0)
    elif family == "spike":
        idx = np.repeat(np.arange(7), 2)
        y = _two_groups(7, 3, seed=3)[idx]
    specs = [PartitionSpec.from_data(pmp.DirichletProcess(alpha=1.0), f, y, item_index=idx) for f in families]
    kernel = PartitionKernel.from_spec(specs[0], MIXES["gibbs"])
    assert kernel.refreshable
    state, _ = kernel.step(kernel.init(np.zeros(7, np.int64)), 1)
    new = specs[1]
    kernel.refresh(HyperparameterNumbers(new.log_g, new.log_h, new.item_stats, new.family, None))
    want = new.family.log_marginal_numpy(new.item_stats)
    np.testing.assert_allclose(kernel.bundles[0].item_lm, want, rtol=1e-10, atol=1e-10)
    for t in range(3):  # the cluster state the singletons overwrote is rebuilt from the labels
        state, res = kernel.step(state, 2 + t)
        assert res.partition_logp == pytest.approx(new.log_posterior(state), abs=1e-9)


def test_bad_labels_mix_and_seed():
    kernel = PartitionKernel.from_spec(_spec("nig_dp", n=4), MIXES["gibbs"])
    with pytest.raises(ValueError, match="shape"):
        kernel.init(np.zeros(5, np.int64))
    with pytest.raises(TypeError, match="integer"):
        kernel.init(np.zeros(4))
    with pytest.raises(TypeError, match="Generator or an integer"):
        kernel.step(kernel.init(np.zeros(4, np.int64)), 1.5)
    with pytest.raises(TypeError, match="MoveMix"):
        PartitionKernel.from_spec(_spec("nig_dp", n=4), dict(MIXES["gibbs"]._asdict()))


def _after_unpickling(blob, labels, seeds):
    """Labels after one step per seed, from ``labels``, of the pickled kernel ``blob``."""
    kernel = pickle.loads(blob)
    state = kernel.init(labels)
    out = []
    for seed in seeds:
        state, _ = kernel.step(state, seed)
        out.append(state)
    return np.array(out)


def test_pickling_rebuilds_the_kernel():
    kernel = PartitionKernel.from_spec(_spec("spike_umd_replicates", n=8), MIXES["mixed_thin"])
    state, _ = kernel.step(kernel.init(np.zeros(8, np.int64)), 0)
    blob = pickle.dumps(kernel)
    clone = pickle.loads(blob)
    # the clone's compiled bundle points at its own arrays, not the original's
    model, st, _ = clone.bundles
    assert model.X.ctypes.data == clone.item_stats.ctypes.data != kernel.item_stats.ctypes.data
    assert clone.bundles[1].stats.ctypes.data != kernel.bundles[1].stats.ctypes.data
    seeds = list(range(1, 30))
    want = _after_unpickling(pickle.dumps(kernel), state, seeds)
    np.testing.assert_array_equal(_after_unpickling(blob, state, seeds), want)
    # and in a fresh process, where nothing of it was compiled yet
    code = ("import pickle, sys, numpy as np; sys.path.insert(0, sys.argv[1]); "
            "from test_kernel import _after_unpickling; "
            "blob, labels, seeds = pickle.loads(sys.stdin.buffer.read()); "
            "sys.stdout.buffer.write(pickle.dumps(_after_unpickling(blob, labels, seeds)))")  # fmt: skip
    here = os.path.dirname(os.path.abspath(__file__))
    helpers = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "pymc_partition", "step_methods")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, *helpers, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code, here], input=pickle.dumps((blob, state, seeds)),
                         capture_output=True, env=env, check=True)  # fmt: skip
    np.testing.assert_array_equal(pickle.loads(out.stdout), want)


def test_structure_reference_equals_the_reference_bit_for_bit():
    """The reference log marginal with the hyperparameters (and a centre) as inputs gives the
    numbers of the one built for the family's numbers, and one graph serves new data."""
    from pymc_partition.engine import compile as engine_compile
    from pymc_partition.model_spec import partition_spec

    rng = np.random.default_rng(3)
    y = rng.normal(0.5, 1.0, size=(9, 2))
    yp = rng.poisson(3.0, (9, 2)).astype(float)
    cases = [
        (pmp.NormalInverseGamma(mu0=0.3, kappa0=0.2, alpha0=2.0, beta0=1.5), y),
        (pmp.NormalInverseGamma.from_data(y, n_clusters=3, scale=1.3), y),  # a centre from the data
        (pmp.NormalInverseGamma.from_data(y + 1.0, n_clusters=3, scale=0.7), y + 1.0),
        (pmp.GammaPoisson(2.0, 1.0), yp),
    ]
    graphs = set()
    import pymc as pm

    for family, data in cases:
        with pm.Model() as model:
            z = pmp.Partition("z", n_items=9, prior=pmp.DirichletProcess(1.0))
            pmp.MarginalLikelihood("y", partition=z, family=family, observed=data)
        spec = partition_spec(model, z)
        X = spec.item_stats
        rows = np.vstack([X, X[:4].sum(0), X.sum(0)])
        want = engine_compile.reference_log_marginal(spec.family, X.shape[1])(rows)
        shared = engine_compile.structure_reference(spec.family, X.shape[1])
        assert np.array_equal(shared(rows), want)
        assert shared(rows[0]) == want[0]
        if type(spec.family).__name__ == "NormalInverseGamma" and np.ndim(spec.family.mu0):
            graphs.add(id(shared.function))
    assert len(graphs) == 1  # both from_data families (new numbers, new centre): one graph
