"""StopWhenConverged inside pm.sample: stops a correct sampler early and records why."""

import numpy as np
import pymc as pm
import pytest

import arviz_regen
import pymc_partition as pmp
from arviz_regen.diagnostics.online import active_monitor
from arviz_regen.xr.containers import get_group, group_names


def _model(seed=0, n=6):
    rng = np.random.default_rng(seed)
    p = np.where(np.arange(n) < n // 2, 0.2, 0.8)
    y = (rng.random((n, 4)) < p[:, None]).astype(float)
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=pmp.DirichletProcess(alpha=1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(a=1.0, b=1.0), observed=y)
    return model


def test_gibbs_stops_early_with_precision():
    model = _model()
    chains = 2
    mon = arviz_regen.StopWhenConverged(n_chains=chains, epsilon=0.05, first=500, growth=2.0, max_draws=40_000)
    with model:
        idata = pm.sample(
            draws=40_000,
            tune=0,
            chains=chains,
            cores=chains,
            step=pmp.GibbsPartition([model["z"]]),
            callback=mon,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
    dec = mon.decision
    assert dec["status"] == "converged"
    posterior = get_group(idata, "posterior")
    # the returned draws are the ones the decision was made on: every chain (PyMC alone keeps the
    # longest chain when they were interrupted at unequal lengths), cut where it stopped
    assert (posterior.sizes["chain"], posterior.sizes["draw"]) == (chains, dec["stopped_at"])
    mon.annotate(idata)
    assert "convergence_monitor" in group_names(idata)
    assert get_group(idata, "convergence_monitor").attrs["status"] == dec["status"]


@pytest.mark.parametrize(
    "chains, cores, n_chains, match",
    [(2, 1, 2, "one after the other in this process"),  # cores=1
     (2, 2, 4, r"got a run of 2 chain\(s\) \[0, 1\]"),  # fewer chains than n_chains
     (2, 2, 1, r"got a run of 2 chain\(s\)|received a draw of chain 1")],  # more chains
)  # fmt: skip
def test_stop_when_converged_refuses_chains_not_sampled_together(chains, cores, n_chains, match):
    """With chains in turns (cores=1: one after the other) the rule could act only in the last
    chain, and PyMC would return the longest chains, not those the decision was on; with another
    number of chains it never decides: refused at the first draw, with the reason."""
    mon = arviz_regen.StopWhenConverged(n_chains=n_chains, epsilon=0.05, first=500, growth=2.0, max_draws=40_000)
    with _model(), pytest.raises(ValueError, match=match):
        pm.sample(draws=40_000, tune=0, chains=chains, cores=cores, callback=mon, random_seed=1,
                  progressbar=False, compute_convergence_checks=False)  # fmt: skip
    assert not mon._labels  # refused at the first draw, not after the run


def test_stop_when_converged_with_chains_in_turns_returns_all_chains_cut():
    """cores < chains: the first chains are drawn to the end before the last start (a warning
    says so); the stop then cuts every chain to the decided draws."""
    mon = arviz_regen.StopWhenConverged(n_chains=4, epsilon=0.05, first=500, growth=2.0, max_draws=3000)
    with _model(), pytest.warns(RuntimeWarning, match=r"ended before chain\(s\) \[2, 3\] started"):
        idata = pm.sample(draws=3000, tune=0, chains=4, cores=2, callback=mon, random_seed=1,
                          progressbar=False, compute_convergence_checks=False)  # fmt: skip
    dec = mon.decision
    assert dec["status"] == "converged"
    posterior = get_group(idata, "posterior")
    assert (posterior.sizes["chain"], posterior.sizes["draw"]) == (4, dec["stopped_at"])
    mon.annotate(idata)


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
        pm.sample(
            draws=4000,
            tune=0,
            chains=1,
            step=step,
            callback=mon,
            random_seed=2,
            progressbar=True,
            compute_convergence_checks=False,
        )
    assert update({"n_clusters": 2, "partition_logp": -1.0})["monitor"].startswith(
        str(mon.history.checkpoint.values[-1])
    )
    del mon
    import gc

    gc.collect()
    assert active_monitor() is None
