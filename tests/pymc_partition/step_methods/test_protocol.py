"""The partition steps speak PyMC 6's step protocol and keep PyMC 5's: setup_chain / set_rng,
per-chain state, default tuning, registration for automatic step assignment."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from pymc.step_methods import STEP_METHODS
from random_models import step_chain

import pymc_partition as pmp
from pymc_partition.engine.kernels.rng import rng_state

PYMC_MAJOR = int(pm.__version__.split(".")[0])
DATA = np.array([[1, 0], [1, 1], [0, 0], [0, 1], [1, 1], [0, 0]])


def _model(extra=False):
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=6, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0), observed=DATA)
        if extra:
            pm.Normal("mu")
    return model


def _chain(step, model, seed, n=15):
    return step_chain(step, model, seed, n)


@pytest.mark.parametrize("kind", ["GibbsPartition", "SplitMerge"])
def test_one_instance_serves_several_chains(kind):
    """setup_chain starts a chain afresh: the generator it is given, nothing cached from the
    chain before (the same instance gives the same chain for the same generator)."""
    model = _model()
    with model:
        step = getattr(pmp, kind)([model["z"]])
    first = _chain(step, model, 1)
    assert step._chain is not None
    other = _chain(step, model, 2)
    rng = np.random.default_rng(1)
    step.setup_chain(rng, 5, 10)
    assert step._chain is None and step.rng is rng  # PyMC's, not a copy
    np.testing.assert_array_equal(step.rng_state, rng_state(np.random.default_rng(1)))
    np.testing.assert_array_equal(_chain(step, model, 1), first)
    assert not np.array_equal(first, other)
    step.set_rng(np.random.default_rng(1))  # PyMC < 6.3
    assert step._chain is None


def test_the_chain_generator_seeds_one_state_that_every_step_advances():
    """A chain's draws come from one generator state seeded by four words of the chain's
    generator and advanced by each step (the engine driven with that state gives the same
    chain), and a sampling state taken between two steps resumes the chain exactly (it
    carries a copy of the generator state)."""
    model = _model()
    with model:
        step = pmp.SplitMerge([model["z"]], thin=2)
    want = _chain(step, model, 3, n=150)
    rng = rng_state(np.random.default_rng(3))
    engine, state = step.engine, step.engine.init(model.initial_point()["z"])
    for t in range(150):
        state, _ = engine.step(state, rng)
        np.testing.assert_array_equal(state, want[t])
    step.setup_chain(np.random.default_rng(3), 0, 150)
    point = model.initial_point()
    for _ in range(70):
        point, _ = step.step(point)
    saved, at = step.sampling_state, point
    assert saved.rng_state is not step.rng_state and np.array_equal(saved.rng_state, step.rng_state)
    for _ in range(70, 150):
        point, _ = step.step(point)
    step.sampling_state = saved
    assert step.n_steps == saved.n_steps
    point, again = at, []
    for _ in range(70, 150):
        point, _ = step.step(point)
        again.append(point["z"])
    np.testing.assert_array_equal(again, want[70:])


def test_partition_steps_need_no_tuning():
    """default_tune_steps = 0: on PyMC >= 6 pm.sample() without ``tune`` runs no tuning steps for
    a model of partitions (with another step, that step's default decides); PyMC 5 always
    defaults to 1000."""
    assert pmp.GibbsPartition.default_tune_steps == 0 == pmp.SplitMerge.default_tune_steps
    opts = dict(draws=20, chains=1, cores=1, progressbar=False, compute_convergence_checks=False,
                random_seed=1)  # fmt: skip
    with _model():
        alone = pm.sample(**opts)
    with _model(extra=True):
        compound = pm.sample(**opts)
    assert alone["sample_stats"].attrs["tuning_steps"] == (0 if PYMC_MAJOR >= 6 else 1000)
    assert compound["sample_stats"].attrs["tuning_steps"] == 1000
    assert alone["posterior"].sizes["draw"] == 20


def test_registered_for_automatic_assignment():
    from pymc.sampling.mcmc import assign_step_methods

    assert STEP_METHODS.count(pmp.GibbsPartition) == 1
    if PYMC_MAJOR < 6:
        assert pm.STEP_METHODS is STEP_METHODS
    _, selected = assign_step_methods(_model(), None)
    assert list(selected) == [pmp.GibbsPartition]
