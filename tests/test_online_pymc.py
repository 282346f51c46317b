"""StopWhenConverged inside pm.sample: stops a correct sampler early and records why."""

import numpy as np
import pymc as pm
import pytest

import arviz_regen
from arviz_regen._containers import get_group, group_names
import pymc_partition as pmp


def _model(seed=0, n=6):
    rng = np.random.default_rng(seed)
    p = np.where(np.arange(n) < n // 2, 0.2, 0.8)
    y = (rng.random((n, 4)) < p[:, None]).astype(float)
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=pmp.DirichletProcess(alpha=1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(a=1.0, b=1.0), observed=y)
    return model


@pytest.mark.parametrize("cores", [1, 2])
def test_gibbs_stops_early_with_precision(cores):
    model = _model()
    chains = 2
    mon = arviz_regen.StopWhenConverged(n_chains=chains, epsilon=0.05, first=500, growth=2.0, max_draws=40_000)
    with model:
        idata = pm.sample(
            draws=40_000, tune=0, chains=chains, cores=cores, step=pmp.GibbsPartition([model["z"]]),
            callback=mon, random_seed=1, progressbar=False, compute_convergence_checks=False,
        )
    dec = mon.decision
    if cores == 1:
        # chains run one after the other: the rule can act only in the last chain
        assert dec["status"] in ("converged", "undecided")
    else:
        assert dec["status"] == "converged"
        assert dec["stopped_at"] <= idata.posterior.sizes["draw"] < 40_000
    mon.annotate(idata)
    assert "convergence_monitor" in group_names(idata)
    assert get_group(idata, "convergence_monitor").attrs["status"] == dec["status"]


def test_progress_bar_shows_the_monitor():
    model = _model(seed=1)
    with model:
        step = pmp.GibbsPartition([model["z"]])
    mon = arviz_regen.StopWhenConverged(n_chains=1, epsilon=0.05, first=500, growth=2.0, max_draws=4000)
    columns, stats = step._progressbar_config(n_chains=1)
    assert "monitor" in stats and len(columns) == 3
    (update,) = step._make_progressbar_update_functions()
    assert update({"n_clusters": 2, "partition_logp": -1.0})["monitor"] == "waiting for 500 draws"
    with model:
        pm.sample(draws=4000, tune=0, chains=1, step=step, callback=mon, random_seed=2, progressbar=True,
                  compute_convergence_checks=False)
    assert update({"n_clusters": 2, "partition_logp": -1.0})["monitor"].startswith(str(mon.history.checkpoint.values[-1]))
    del mon
    import gc

    gc.collect()
    assert arviz_regen.online.active_monitor() is None
