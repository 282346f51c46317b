"""A step reused for another ``pm.sample`` after ``pm.set_data`` samples the model's current data
(issue 26, case 1): its draws are those of a step built afresh on the new data, with the same
seed, for every partition step and for ``PartitionHyperparameters``; with ``cores=2`` too."""

from __future__ import annotations

import cloudpickle
import numpy as np
import pymc as pm
import pytest

import pymc_partition as pmp

N = 12
_rng = np.random.default_rng(3)
FIRST = np.concatenate([_rng.normal(0.0, 1.0, (6, 2)), _rng.normal(4.0, 1.0, (6, 2))])
SECOND = _rng.normal(0.0, 3.0, (N, 2))


def _model(random_beta0=False):
    with pm.Model() as model:
        xd = pm.Data("xd", FIRST)
        beta0 = pm.Gamma("beta0", 2.0, 1.0) if random_beta0 else 1.5
        z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.NormalInverseGamma(0.0, 0.5, 2.0, beta0),
                               observed=xd)  # fmt: skip
    return model


def _sample(model, step, cores=1, chains=1):
    with model:
        return pm.sample(draws=30, tune=5, chains=chains, cores=cores, step=step, random_seed=7,
                         progressbar=False, compute_convergence_checks=False)  # fmt: skip


def _same_draws(a, b, names):
    for name in names:
        np.testing.assert_array_equal(a.posterior[name].values, b.posterior[name].values)


@pytest.mark.parametrize("kind", ["GibbsPartition", "SplitMerge"])
def test_a_reused_partition_step_samples_the_new_data(kind):
    model = _model()
    step = getattr(pmp, kind)([model["z"]], model=model)
    _sample(model, step)
    with model:
        pm.set_data({"xd": SECOND})
    again = _sample(model, step)
    fresh = _sample(model, getattr(pmp, kind)([model["z"]], model=model))
    _same_draws(again, fresh, ["z"])
    # the statistic is the model's log posterior at the drawn partition, on the new data
    logp = model.compile_logp()
    z = again.posterior["z"].values[0]
    stat = again.sample_stats["partition_logp"].values[0]
    for t in (0, 29):
        assert stat[t] == pytest.approx(logp({"z": z[t]}), rel=1e-9)


def test_unchanged_data_keep_the_step_and_equal_values_are_no_change():
    model = _model()
    step = pmp.GibbsPartition([model["z"]], model=model)
    engine = step.engine
    _sample(model, step)
    assert step.engine is engine
    with model:
        pm.set_data({"xd": FIRST.copy()})  # a new array, the same numbers: nothing to redo
    _sample(model, step)
    assert step.engine is engine


def test_a_reused_step_in_a_compound_step_with_hyperparameters():
    """Random ``beta0``: the reused PartitionHyperparameters and GibbsPartition both move to the
    new data (``beta0`` was 5.24 against 2.74 with a fresh step)."""
    model = _model(random_beta0=True)
    steps = [pmp.GibbsPartition([model["z"]], model=model),
             pmp.PartitionHyperparameters([model["beta0"]], model=model)]  # fmt: skip
    _sample(model, steps)
    with model:
        pm.set_data({"xd": SECOND})
    again = _sample(model, steps)
    fresh = _sample(model, [pmp.GibbsPartition([model["z"]], model=model),
                            pmp.PartitionHyperparameters([model["beta0"]], model=model)])  # fmt: skip
    _same_draws(again, fresh, ["z", "beta0"])


def test_a_reused_step_sent_to_worker_processes_samples_the_new_data():
    model = _model()
    step = pmp.GibbsPartition([model["z"]], model=model)
    with model:
        pm.set_data({"xd": SECOND})
    sent = cloudpickle.loads(cloudpickle.dumps(step))  # what the workers get: the current numbers
    np.testing.assert_array_equal(sent.engine.item_stats, pmp.partition_spec(model).item_stats)
    again = _sample(model, step, cores=2, chains=2)
    fresh = _sample(model, pmp.GibbsPartition([model["z"]], model=model), cores=2, chains=2)
    _same_draws(again, fresh, ["z"])


def test_new_data_with_other_rows_are_refused_by_a_reused_step():
    model = _model()
    step = pmp.GibbsPartition([model["z"]], model=model)
    with model:
        pm.set_data({"xd": np.vstack([SECOND, SECOND[:2]])})
    with pytest.raises(ValueError, match="build the model again"):
        _sample(model, step)


def test_a_refresh_that_fails_is_tried_again_at_the_same_point():
    """The engine refused the hyperparameters' numbers (an error the user sees): a second step at
    the same point reads and hands them over again instead of sampling with the numbers before."""
    model = _model(random_beta0=True)
    step = pmp.GibbsPartition([model["z"]], model=model)
    point = model.initial_point()
    point["beta0_log__"] = np.asarray(1.3)
    calls = []

    def refuse(numbers):
        calls.append(numbers)
        raise ValueError("refused")

    step.engine.refresh = refuse
    for _ in range(2):
        with pytest.raises(ValueError, match="refused"):
            step.step(point)
    assert len(calls) == 2
