"""``PartitionHyperparameters``, the PyMC adapter: which variables it is given, what it refuses, and
its sampling state. Its chains are checked against exact posteriors in
``tests/pymc_partition/step_methods/test_hierarchical_hyper.py``."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from pymc.sampling.mcmc import assign_step_methods

import pymc_partition as pmp
from pymc_partition.engine.kernels.rng import rng_state


def _spike_slab_model(random_p=False):
    data = pmp.datasets.simulate_spike_slab(random_seed=1)
    eb = pmp.fit_spike_slab(data.values, data.item_index).estimates
    with pm.Model() as model:
        mu = pm.Normal("mu", eb["mu"], 1.0)  # scales the per-item statistics
        s2t = pm.HalfNormal("sigma2_theta", 10.0)  # enters the cluster log marginal only
        p = pm.Beta("p", 1.0, 5.0) if random_p else eb["p"]
        z = pmp.Partition("z", n_items=data.n_items, prior=pmp.DirichletProcess(1.0))
        family = pmp.SpikeSlabNormal(**{**eb, "mu": mu, "sigma2_theta": s2t, "p": p})
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=data.values,
                               item_index=data.item_index)  # fmt: skip
    return model


def _dp_model():
    """Four items under a DP whose alpha has a LogNormal prior (slice-sampled)."""
    with pm.Model() as model:
        alpha = pm.LogNormal("alpha", 0.0, 1.0)
        z = pmp.Partition("z", n_items=4, prior=pmp.DirichletProcess(alpha=alpha))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0),
                               observed=np.eye(4))  # fmt: skip
    return model


def test_nuts_keeps_what_scales_the_statistics_and_the_step_reads_them_again():
    model = _spike_slab_model()
    _, selected = assign_step_methods(model, None, pm.step_methods.STEP_METHODS)
    chosen = {cls.__name__: sorted(model.values_to_rvs[v].name for v in vs) for cls, vs in selected.items()}
    assert chosen == {"NUTS": ["mu"], "PartitionHyperparameters": ["sigma2_theta"], "GibbsPartition": ["z"]}
    with pytest.raises(NotImplementedError, match=r"\['mu'\] scale the per-item statistics"):
        pmp.PartitionHyperparameters([model["mu"]], model=model)
    step = pmp.PartitionHyperparameters([model["sigma2_theta"]], model=model)
    assert step.block.stats_names == ["mu"] and step.block.escobar_west == []
    point = model.initial_point()
    step.step(point)
    before = step.kernel.item_stats.copy()
    step.step({**point, "mu": point["mu"] + 0.5})  # NUTS moved mu: the statistics follow
    assert not np.allclose(step.kernel.item_stats, before)
    np.testing.assert_allclose(step.kernel.item_stats,
                               step.block.item_stats_at({**point, "mu": point["mu"] + 0.5}))  # fmt: skip


def test_sampling_state_round_trip_and_chain_setup():
    model = _dp_model()
    alpha = model["alpha"]
    step = pmp.PartitionHyperparameters([alpha], model=model)
    point = model.initial_point()
    for _ in range(20):
        point, stats = step.step(point)
    assert stats[0]["hyper_n_evals"] > 0 and np.isfinite(stats[0]["hyper_logp"])
    state = step.sampling_state
    widths = step.kernel.widths.copy()
    step.setup_chain(np.random.default_rng(0), tune=0, draws=10)  # a new chain: widths afresh
    assert np.all(step.kernel.widths == 1.0) and not step.tune
    step.sampling_state = state
    np.testing.assert_array_equal(step.kernel.widths, widths)
    assert step.competence(model["z"], False) == 0  # INCOMPATIBLE with the partition


def test_refuses_what_does_not_hang_off_a_partition():
    with pm.Model() as model:
        x = pm.Normal("x")
        pm.Normal("y", x, 1.0, observed=[0.1, 0.2])
        pmp.Partition("z", n_items=3, prior=pmp.DirichletProcess(1.0))
    with pytest.raises(ValueError, match="hang off exactly one pmp.Partition"):
        pmp.PartitionHyperparameters([x], model=model)
    with pytest.raises(TypeError, match="cannot sample the Partition"):  # no vars: all of them
        pmp.PartitionHyperparameters(model=model)


def test_pickles_for_worker_processes():
    """PyMC pickles the steps for worker processes where it cannot fork: the compiled density is
    built again there from the pytensor function, and the chain continues alike."""
    import cloudpickle

    model = _dp_model()
    alpha = model["alpha"]
    step = pmp.PartitionHyperparameters([alpha], model=model)
    copy = cloudpickle.loads(cloudpickle.dumps(step))
    point = model.initial_point()
    step.rng_state, copy.rng_state = rng_state(7), rng_state(7)
    np.testing.assert_array_equal(step.step(point)[0]["alpha_log__"], copy.step(point)[0]["alpha_log__"])


def _recommended(seed, n=12):
    """The docs' recommended model (random scale and concentration) on data from ``seed``."""
    x = np.random.default_rng(seed).normal(size=(n, 2))
    with pm.Model() as model:
        scale = pm.LogNormal("scale", 0.0, 1.0)
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", n_items=n, prior=pmp.DirichletProcess(alpha))
        pmp.MarginalLikelihood("y", partition=z, observed=x,
                               family=pmp.NormalInverseGamma.from_data(x, n_clusters=3, scale=scale))  # fmt: skip
    return model


def test_models_of_one_structure_share_compiled_code_and_keep_their_own_numbers():
    """Two models that differ only in their data share the compiled density and reader (their
    numbers are inputs), and each density still differs from its model's log density by a
    constant in the hyperparameters, and each reader gives its own model's numbers."""
    from pymc_partition._pytensor_modes import python_function
    from pymc_partition.model_spec import partition_spec

    labels = np.array([0, 0, 1, 1, 2, 0, 1, 2, 2, 0, 3, 3])
    steps = []
    for seed in (1, 2):
        model = _recommended(seed)
        hyper = pmp.PartitionHyperparameters([model["scale"]], model=model)
        gibbs = pmp.GibbsPartition([model["z"]], model=model)
        steps.append((hyper, gibbs))
        # the model's log density run by PyTensor's Python linker: nothing compiled
        names = [v.name for v in model.value_vars]
        logp_fn = python_function(model.value_vars, model.logp())
        block = hyper.block
        S, sizes = _cluster_sums(labels, hyper.kernel.item_stats)
        diffs = []
        for t in (-0.7, 0.1, 0.9):
            point = {**model.initial_point(), "z": labels, "scale_log__": np.array(t)}
            dens = hyper.kernel.density(block.theta(point), block.rest(point), S, sizes)
            diffs.append(float(logp_fn(*[point[n] for n in names])) - dens)
        np.testing.assert_allclose(diffs, diffs[0], rtol=0, atol=1e-9)
        point = {**model.initial_point(), "scale_log__": np.array(0.4)}
        got = gibbs._reader.read(point)
        want = partition_spec(model, "z", point=point)
        np.testing.assert_allclose(got.log_g[:13], want.log_g[:13])
        np.testing.assert_allclose(got.item_stats, want.item_stats)
    (h1, g1), (h2, g2) = steps
    assert h1.block.density_function is h2.block.density_function
    assert g1._reader._compiled is g2._reader._compiled
    assert not np.array_equal(h1.block.rest_constants, h2.block.rest_constants)


def test_a_model_built_again_on_the_same_numbers_folds_nothing_and_new_data_get_their_own(monkeypatch):
    """The graphs before folding, numbers by value, map to what folding gave: building the same model
    again (a re-run cell) folds nothing and gets the same compiled functions and numbers, bit for bit;
    new data of the same structure fold again and get their own numbers, those of a cold build."""
    from pymc_partition import model_spec

    folds = []
    hoist = model_spec._hoist_constants
    monkeypatch.setattr(model_spec, "_hoist_constants", lambda *a: folds.append(1) or hoist(*a))

    def build(seed):
        model = _recommended(seed)
        hyper = pmp.PartitionHyperparameters([model["scale"]], model=model)
        gibbs = pmp.GibbsPartition([model["z"]], model=model)
        return hyper.block, gibbs._reader

    def numbers(block, reader):
        return block.rest_constants, reader._consts

    model_spec._EXACT._d.clear()
    cold = build(1)
    assert len(folds) == 2 and len(model_spec._EXACT._d) == 2
    again = build(1)
    assert len(folds) == 2  # hits: nothing folded
    assert again[0].density_function is cold[0].density_function and again[1]._compiled is cold[1]._compiled
    for a, b in zip(numbers(*again), numbers(*cold)):
        np.testing.assert_array_equal(a, b)
    other = build(2)
    assert len(folds) == 4 and len(model_spec._EXACT._d) == 4  # misses
    assert not np.array_equal(other[0].rest_constants, cold[0].rest_constants)
    model_spec._EXACT._d.clear()  # no stale numbers: the miss gave what a cold build gives
    for a, b in zip(numbers(*other), numbers(*build(2))):
        np.testing.assert_array_equal(a, b)


def _cluster_sums(labels, X):
    from pymc_partition.engine.kernels.hyper import cluster_sums

    return cluster_sums(np.ascontiguousarray(labels, dtype=np.int64), X)


def test_spike_slab_density_sums_the_clusters_with_the_form():
    """The spike-and-slab likelihood's part of the density comes from the predictive form's code, and the density
    still differs from the model's log density by a constant in the hyperparameters (to rounding): the slice
    updates target the same conditional."""
    from pymc_partition._pytensor_modes import python_function

    model = _spike_slab_model(random_p=True)
    hyper = pmp.PartitionHyperparameters([model["sigma2_theta"], model["p"]], model=model)
    block = hyper.block
    assert block.density_clusters is not None
    names = [v.name for v in model.value_vars]
    logp_fn = python_function(model.value_vars, model.logp())
    n = model.initial_point()["z"].shape[0]
    diffs = []
    for k, labels in enumerate([np.zeros(n, np.int64), np.arange(n) % 3, np.arange(n)]):
        S, sizes = _cluster_sums(labels, hyper.kernel.item_stats)
        for s, q in ((-2.0, -3.0), (0.5, 0.0), (3.0, 2.5)):
            point = {**model.initial_point(), "z": labels, "sigma2_theta_log__": np.array(s),
                     "p_logodds__": np.array(q)}  # fmt: skip
            dens = hyper.kernel.density(block.theta(point), block.rest(point), S, sizes)
            diffs.append(float(logp_fn(*[point[n] for n in names])) - dens)
        # the constant is the rest of the model at these labels: the same across hyperparameters
        np.testing.assert_allclose(diffs[3 * k :], diffs[3 * k], rtol=0, atol=1e-8)
