"""``StopWhenConverged`` across runs and targets (issue 26, cases 4 and 6): a monitor reused for a
second ``pm.sample`` decides on that run's draws alone, as a fresh one would; on a chain whose
``partition_logp`` is not a function of the partition (random hyperparameters) it says so and
lets ``pm.sample`` return every draw, where it raised from inside ``pm.sample`` and lost them."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import arviz_regen
import pymc_partition as pmp


def _model(random_alpha=False, n=6, seed=0):
    rng = np.random.default_rng(seed)
    p = np.where(np.arange(n) < n // 2, 0.2, 0.8)
    y = (rng.random((n, 4)) < p[:, None]).astype(float)
    with pm.Model() as model:
        alpha = pm.LogNormal("alpha", 0.0, 1.0) if random_alpha else 1.0
        z = pmp.Partition("z", n_items=n, prior=pmp.DirichletProcess(alpha=alpha))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(a=1.0, b=1.0), observed=y)
    return model


def _sample(model, monitor, seed, draws=20_000):
    with model:
        return pm.sample(draws=draws, tune=0, chains=1, cores=1, callback=monitor, random_seed=seed,
                         progressbar=False, compute_convergence_checks=False)  # fmt: skip


def _monitor():
    return arviz_regen.StopWhenConverged(n_chains=1, epsilon=0.05, first=500, growth=2.0, max_draws=20_000)


def test_a_monitor_reused_for_a_second_run_starts_afresh():
    model = _model()
    reused = _monitor()
    _sample(model, reused, seed=1)
    first = dict(reused.decision)
    assert first["status"] == "converged"
    second = _sample(model, reused, seed=2)
    fresh = _monitor()
    again = _sample(model, fresh, seed=2)
    assert reused.decision == fresh.decision
    np.testing.assert_array_equal(second.posterior["z"].values, again.posterior["z"].values)
    assert second.posterior.sizes["draw"] == fresh.decision["stopped_at"]
    reused.annotate(second)  # about these draws, not the first run's


def test_random_hyperparameters_keep_every_draw_and_say_why():
    model = _model(random_alpha=True)
    monitor = _monitor()
    with pytest.warns(RuntimeWarning, match="fixed target"):
        idata = _sample(model, monitor, seed=1, draws=3000)
    assert idata.posterior.sizes["draw"] == 3000  # nothing lost, nothing cut
    decision = monitor.decision
    assert decision["status"] == "undecided" and "fixed target" in decision["reason"]
    assert monitor.history.attrs["status"] == "undecided"
    assert monitor._next == 0  # no checkpoint evaluated on draws it cannot judge
