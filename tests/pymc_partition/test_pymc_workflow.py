"""A Partition in an ordinary PyMC workflow: generic steps refused, quiet convergence checks,
prior draws at scale."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_partition as pmp
from arviz_regen.xr.containers import get_group

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


@pytest.mark.default_backend
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
    with pm.Model():
        z = pmp.Partition("z", n_items=5, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0), observed=BERNOULLI_DATA)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            pm.sample(draws=150, tune=0, chains=2, cores=1, progressbar=False, random_seed=2)


def test_two_partitions_get_one_step_each():
    with pm.Model():
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


def test_two_partitions_sampled_by_pm_sample_have_their_own_stats():
    """PyMC stacks same-named stats of several steps into one variable with an extra dimension;
    with two partitions each step names its stats after its variable, and arviz_regen finds
    ``partition_logp_<var>`` by itself."""
    import arviz as az

    import arviz_regen
    from arviz_regen.xr.draws import load_partition
    from pymc_partition.model_spec import partition_spec

    with pm.Model() as model:
        z = pmp.Partition("z", n_items=5, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0), observed=BERNOULLI_DATA)
        z2 = pmp.Partition("z2", n_items=5, prior=pmp.UniformPartition())
        pmp.MarginalLikelihood("y2", partition=z2, family=pmp.BetaBernoulli(2.0, 1.0), observed=BERNOULLI_DATA)
        idata = pm.sample(draws=1000, tune=0, chains=2, cores=1, progressbar=False, random_seed=4,
                          compute_convergence_checks=False)  # fmt: skip
        step = pmp.SplitMerge([z, z2])
    stats = idata.sample_stats
    for name in ("z", "z2"):
        for stat in ("partition_logp", "n_clusters", "n_gibbs_sweeps"):
            assert stats[f"{stat}_{name}"].dims == ("chain", "draw")
        # each logp is the exact log posterior of its own partition's draws
        spec = partition_spec(model, model[name])
        draws = idata.posterior[name].values.reshape(-1, 5)
        np.testing.assert_allclose(
            stats[f"partition_logp_{name}"].values.ravel(), spec.log_posterior(draws), rtol=1e-10
        )
        pdraws = load_partition(idata, name)
        assert pdraws.logp_name == f"partition_logp_{name}"
    assert "partition_logp" not in stats and "n_clusters" not in stats
    # the diagnostics read the right logp, as if it had been named explicitly
    res = az.hotelling_rs(idata, var_names="z2", k=2)
    ref = az.hotelling_rs(idata, var_names="z2", k=2, logp_var="partition_logp_z2")
    np.testing.assert_array_equal(res["p_value"].values, ref["p_value"].values)
    with warnings.catch_warnings(record=True) as caught:  # no "most visited state" fallback
        warnings.simplefilter("always")
        cc = arviz_regen.coclustering(idata, var_names="z")
    assert not [w for w in caught if "not found" in str(w.message)]
    ref = arviz_regen.coclustering(idata, var_names="z", logp_var="partition_logp_z")
    xr.testing.assert_identical(cc, ref)
    # a default name that is really missing still says what to do
    with pytest.raises(ValueError, match="partition_logp"):
        az.hotelling_rs(get_group(idata, "posterior")[["z"]], var_names="z", k=2)
    # the progress bar of the compound step shows one column pair per partition
    columns, bar = step._progressbar_config(2)
    assert set(bar) >= {"n_clusters_z", "partition_logp_z", "n_clusters_z2", "partition_logp_z2"}
    _, step_stats = step.step(model.initial_point())
    updates = step._make_progressbar_update_functions()
    shown = {}
    for update, st in zip(updates, step_stats, strict=True):
        shown.update(update(st))
    assert set(shown) == {"n_clusters_z", "partition_logp_z", "n_clusters_z2", "partition_logp_z2"}


def test_one_partition_keeps_the_plain_stat_names():
    model = _model()
    with model:
        step = pmp.SplitMerge([model["z"]])
    assert set(step.stats_dtypes_shapes) == set(type(step).stats_dtypes_shapes)
    _, [st] = step.step(model.initial_point())
    assert set(st) == set(pmp.SplitMerge.stats_dtypes_shapes)
