"""Chains sampled by separate ``pm.sample`` runs (several machines, their own seeds), saved to
zarr, combined by ``arviz_regen.combine_chains`` into one posterior that the summaries take; a run
repeated with the same seed is refused (its chains would agree by construction)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import arviz_regen
import pymc_partition as pmp
from arviz_regen.xr.containers import get_group
from arviz_regen.xr.io import save_inference_data

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning", "ignore::FutureWarning")
DATA = np.array([[1, 0], [1, 1], [0, 0], [0, 1], [1, 1], [0, 0]])


def _sample(model, seed, path):
    with model:
        idata = pm.sample(draws=300, tune=50, chains=2, cores=1, progressbar=False, random_seed=seed,
                          compute_convergence_checks=False)  # fmt: skip
    return str(save_inference_data(idata, path))


def test_runs_with_their_own_seeds_combine(tmp_path):
    with pm.Model() as model:  # the same model on every "machine"
        z = pmp.Partition("z", n_items=6, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0), observed=DATA)
    paths = [_sample(model, seed, tmp_path / f"machine{seed}.zarr") for seed in (1, 2)]
    idata = arviz_regen.combine_chains(paths)
    post = get_group(idata, "posterior")
    assert post.sizes["chain"] == 4 and post["chain"].values.tolist() == [0, 1, 2, 3]
    assert get_group(idata, "sample_stats").sizes["chain"] == 4
    table = arviz_regen.regen_summary(idata, n_bootstrap=99)
    assert table.attrs["verdict_status"] in ("PASS", "FAIL", "NOT REACHED")
    assert arviz_regen.hotelling_rs(idata, k=2, n_bootstrap=99).sizes["chain"] == 4
    assert arviz_regen.point_estimate(idata)["labels"].size == 6
    again = _sample(model, 1, tmp_path / "machine1_again.zarr")  # the same seed on another machine
    with pytest.raises(ValueError, match="same random seed"):
        arviz_regen.combine_chains([paths[0], paths[1], again])
