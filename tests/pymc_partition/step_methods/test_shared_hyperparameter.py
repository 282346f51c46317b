"""A DP concentration shared by two partitions (issue 26, case 7): ``pm.sample()`` samples it
with NUTS beside a GibbsPartition per partition, where the automatic step choice crashed ("must
hang off exactly one pmp.Partition"); given to PartitionHyperparameters, the refusal says what to
pass instead."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from pymc.sampling.mcmc import assign_step_methods

import pymc_partition as pmp


def _model():
    rng = np.random.default_rng(4)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        for name in ("z1", "z2"):
            z = pmp.Partition(name, n_items=5, prior=pmp.DirichletProcess(alpha))
            pmp.MarginalLikelihood(f"y_{name}", partition=z, family=pmp.BetaBernoulli(1.0, 1.0),
                                   observed=(rng.random((5, 3)) < 0.5).astype(float))  # fmt: skip
    return model


def test_pm_sample_samples_a_concentration_shared_by_two_partitions():
    model = _model()
    _, selected = assign_step_methods(model, None, pm.step_methods.STEP_METHODS)
    chosen = {cls.__name__: sorted(model.values_to_rvs[v].name for v in vs) for cls, vs in selected.items()}
    assert chosen == {"NUTS": ["alpha"], "GibbsPartition": ["z1", "z2"]}
    with model:
        idata = pm.sample(draws=50, tune=50, chains=1, random_seed=3, progressbar=False,
                          compute_convergence_checks=False)  # fmt: skip
    assert idata.posterior["alpha"].shape == (1, 50) and np.all(idata.posterior["alpha"] > 0)


def test_partition_hyperparameters_given_a_shared_variable_says_what_to_pass():
    model = _model()
    with pytest.raises(ValueError, match=r"hang off 2.*pm\.NUTS\(\['alpha_log__'\]\)"):
        pmp.PartitionHyperparameters([model["alpha"]], model=model)
