"""A Partition in an ordinary PyMC workflow: generic steps refused, quiet convergence checks,
prior draws at scale."""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_partition as pmp

BERNOULLI_DATA = np.array([[1, 0], [1, 1], [0, 0], [0, 1], [1, 1]])


def _model():
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=5, prior=pmp.DirichletProcess(1.0))
        mu = pm.Normal("mu")
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0), observed=BERNOULLI_DATA)
        pm.Normal("w", mu, 1.0, observed=[0.1, 0.3])
    return model


@pytest.mark.parametrize(
    "make",
    [
        lambda m: pm.Metropolis([m["z"]]),
        lambda m: pm.Metropolis(),  # all free variables, the partition among them
        lambda m: pm.CategoricalGibbsMetropolis([m["z"]]),
        lambda m: pm.Slice([m["z"], m["mu"]]),
    ],
)
def test_generic_steps_refuse_a_partition(make):
    model = _model()
    with model, pytest.raises(TypeError, match=r"GibbsPartition\(\[z\]\) or pmp.SplitMerge"):
        make(model)


def test_generic_steps_still_work_on_other_variables_and_sample_assigns_steps():
    model = _model()
    with model:
        step = pm.Metropolis([model["mu"]])
        assert step.vars == [model.rvs_to_values[model["mu"]]]
        idata = pm.sample(draws=200, tune=100, chains=2, cores=1, progressbar=False,
                          random_seed=3, compute_convergence_checks=False)  # fmt: skip
    assert set(idata.sample_stats) >= {"partition_logp", "n_clusters", "diverging"}


def test_default_convergence_checks_skip_the_labels(caplog):
    model = _model()
    with model, warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING, "pymc"):
        warnings.simplefilter("always")
        idata = pm.sample(draws=300, tune=200, chains=2, cores=1, progressbar=False, random_seed=5)
    assert not [str(w.message) for w in caught if "scalar divide" in str(w.message) or "rhat" in str(w.message)]
    assert "z" in idata.posterior  # the labels are still recorded
    # the checks still run on the other variables: a stuck continuous variable is reported
    with pm.Model() as stuck:
        z = pmp.Partition("z", n_items=5, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0), observed=BERNOULLI_DATA)
        pm.Normal("mu", 0.0, 1.0)
    from pymc.sampling import mcmc

    with stuck:
        idata = pm.sample(draws=150, tune=0, chains=2, cores=1, progressbar=False, random_seed=1,
                          step=[pmp.GibbsPartition([z]), pm.Metropolis([stuck["mu"]], S=np.array([1e-4]))],
                          compute_convergence_checks=False)  # fmt: skip
    found = mcmc.run_convergence_checks(idata, stuck)
    assert any("rhat" in w.message or "effective sample size" in w.message for w in found)
    for w in found:  # the R-hat / ESS tables attached to the warnings leave the labels out
        assert "z" not in getattr(w.extra, "data_vars", {})


def test_convergence_checks_with_only_a_partition():
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=5, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0), observed=BERNOULLI_DATA)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            pm.sample(draws=150, tune=0, chains=2, cores=1, progressbar=False, random_seed=2)


def test_two_partitions_get_one_step_each():
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=5, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0), observed=BERNOULLI_DATA)
        z2 = pmp.Partition("z2", n_items=5, prior=pmp.UniformPartition())
        pmp.MarginalLikelihood("y2", partition=z2, family=pmp.BetaBernoulli(2.0, 1.0), observed=BERNOULLI_DATA)
        step = pmp.GibbsPartition([z, z2])
        assert [type(s).__name__ for s in step.methods] == ["GibbsPartition"] * 2
        idata = pm.sample(draws=200, tune=0, chains=2, cores=1, progressbar=False, random_seed=1,
                          compute_convergence_checks=False)  # fmt: skip
    assert {"z", "z2"} <= set(idata.posterior)
    # both chains of labels move (each partition has its own step)
    for name in ("z", "z2"):
        assert len(np.unique(idata.posterior[name].values.reshape(-1, 5), axis=0)) > 3
