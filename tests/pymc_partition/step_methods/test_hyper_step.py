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


def _spike_slab_model():
    data = pmp.datasets.simulate_spike_slab(random_seed=1)
    eb = pmp.fit_spike_slab(data.values, data.item_index).estimates
    with pm.Model() as model:
        mu = pm.Normal("mu", eb["mu"], 1.0)  # scales the per-item statistics
        s2t = pm.HalfNormal("sigma2_theta", 10.0)  # enters the cluster log marginal only
        z = pmp.Partition("z", n_items=data.n_items, prior=pmp.DirichletProcess(1.0))
        family = pmp.SpikeSlabNormal(**{**eb, "mu": mu, "sigma2_theta": s2t})
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
