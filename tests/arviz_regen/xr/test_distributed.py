"""The summaries on a dask.distributed cluster: the same results, to the last bit, as in this
process, with the heavy blocks run as tasks of the cluster's workers (a small in-process
``LocalCluster``: the task stream records what the workers ran)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import arviz_regen
from arviz_regen.base.partition_loss import parse_loss
from arviz_regen.estimates.expected_loss import state_losses
from arviz_regen.estimates.point_estimate import draw_losses
from arviz_regen.testing import BlockModel, block_chain, make_idata, metropolis_chain, random_partitions, zipf_probs
from arviz_regen.xr.containers import from_datasets, get_group
from arviz_regen.xr.distributed import TASK_PREFIX, current_client, map_blocks, resolve_client, using_client
from arviz_regen.xr.draws import load_partition
from arviz_regen.xr.io import open_inference_data, save_inference_data

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore:invalid value encountered:RuntimeWarning")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster, set_as_default=False) as c:
            yield c


@pytest.fixture(scope="module")
def wandering(tmp_path_factory):
    """Chains of a 40-item posterior whose states never recur, in memory and as a zarr store
    opened lazily (dask chunks of 100 draws)."""
    idata = block_chain(BlockModel(n_items=40, n_blocks=4), 3, 600, np.random.default_rng(1), rho=0.5)
    path = tmp_path_factory.mktemp("dist") / "wandering.zarr"
    save_inference_data(idata, path)
    return idata, open_inference_data(path, chunks={"draw": 100})


@pytest.fixture(scope="module")
def recurring():
    """Three Metropolis chains over 30 states of 12 items: regenerative estimates."""
    rng = np.random.default_rng(2)
    probs = zipf_probs(30)
    return make_idata(random_partitions(30, 12, rng), metropolis_chain(probs, 3, 2000, rng), np.log(probs))


def _ran(client, call):
    """``call()``'s result and the task names the cluster's workers ran for it."""
    with distributed.get_task_stream(client) as ts:
        out = call()
    workers = set(client.scheduler_info()["workers"])
    assert all(t["worker"] in workers for t in ts.data)
    return out, Counter(str(t["key"]).split("-")[1] for t in ts.data if str(t["key"]).startswith(TASK_PREFIX))


def test_resolve_client(client):
    assert resolve_client(False) is None
    assert resolve_client(client) is client
    assert resolve_client(None) is None  # set_as_default=False: no active client here
    with using_client(client):
        assert resolve_client(None) is client and current_client() is client
        assert resolve_client(False) is None
    assert current_client() is None
    with pytest.raises(TypeError, match="dask.distributed Client"):
        resolve_client(3)
    with distributed.Client(client.scheduler.address) as active:  # the default client
        assert resolve_client(None) is active


def test_map_blocks_same_results_here_and_on_workers(client):
    blocks = [(np.arange(5) + i,) for i in range(4)]
    here = list(map_blocks(np.multiply, blocks, shared=(3,)))
    there, names = _ran(client, lambda: list(map_blocks(np.multiply, blocks, shared=(3,), client=client)))
    assert all(np.array_equal(a, b) for a, b in zip(here, there))
    assert names["multiply"] == 4


def test_partition_traces(client, wandering, monkeypatch):
    idata, lazy = wandering
    here = arviz_regen.partition_traces(idata)
    monkeypatch.setattr("arviz_regen.estimates.traces.STATE_BLOCK_LABELS", 40 * 500)  # several blocks
    there, names = _ran(client, lambda: arviz_regen.partition_traces(lazy, client=client))
    xr.testing.assert_identical(here.drop_attrs(), there.drop_attrs())
    assert names["state_traces"] == 4


@pytest.mark.parametrize("kwargs", [{}, {"cumulative": True, "n_points": 4}, {"combined": True}])
def test_coclustering_regenerative(client, recurring, kwargs):
    here = arviz_regen.coclustering(recurring, **kwargs)
    there, names = _ran(client, lambda: arviz_regen.coclustering(recurring, client=client, **kwargs))
    assert there.attrs["se_method"] == "regenerative"
    xr.testing.assert_identical(here, there)
    assert names["_pair_block"] >= 2  # blocks of item rows for both worker threads


def test_coclustering_items_batch_means(client, wandering):
    idata, lazy = wandering
    items = list(range(5, 35))
    here = arviz_regen.coclustering(idata, items=items)
    there, names = _ran(client, lambda: arviz_regen.coclustering(lazy, items=items, client=client))
    assert there.attrs["se_method"] == "batch_means"
    xr.testing.assert_identical(here, there)
    assert names["_pair_block"] >= 2


def test_chain_agreement(client, wandering):
    idata, lazy = wandering
    here = arviz_regen.chain_agreement(idata)
    assert here.attrs["decided"]
    there, names = _ran(client, lambda: arviz_regen.chain_agreement(lazy, client=client))
    xr.testing.assert_identical(here, there)
    assert names["_chain_pair_batches"] == 3 and names["anova_pairs"] == 4 and names["max_f_pairs"] >= 4


def test_conditional_check(client):
    rng = np.random.default_rng(3)
    terms = xr.Dataset({"z": (("chain", "draw", "check"), rng.normal(size=(2, 400, 3)))},
                       coords={"check": ["a", "b", "c"]})  # fmt: skip
    idata = from_datasets({"posterior": xr.Dataset({"z": (("chain", "draw", "z_dim_0"), np.zeros((2, 400, 3), int))}),
                           "conditional_checks": terms.chunk({"draw": 100})})  # fmt: skip
    here = arviz_regen.conditional_check(terms)
    there, names = _ran(client, lambda: arviz_regen.conditional_check(idata, client=client))
    xr.testing.assert_identical(here, there)
    assert names["conditional_test"] == 1
    with pytest.raises(ValueError, match="not finite|finite"):  # the worker's error, raised here
        arviz_regen.conditional_check(terms.where(terms.draw != 3), client=client)


def test_conditional_check_adjusted_combination(client, wandering, tmp_path):
    """The terms ``compute_conditional_checks`` computes from the lazily read draws on the cluster, saved
    with them and read back in dask chunks: the adjusted combination's attributes (``adjusted_check``,
    ``raw_checks``, ``min_batches``) reach the task on the worker, and the p-values, the result's
    attributes and the verdict are those in memory."""
    pm = pytest.importorskip("pymc")
    pmp = pytest.importorskip("pymc_partition")
    idata, lazy = wandering
    y = np.repeat([-6.0, -2.0, 2.0, 6.0], 10) + np.random.default_rng(0).normal(size=40)
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=40, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, observed=y, family=pmp.NormalInverseGamma.from_data(y, n_clusters=4))
    terms = pmp.compute_conditional_checks(idata, model=model, extend_inferencedata=False)
    with distributed.get_task_stream(client) as ts, using_client(client):
        from_chunks = pmp.compute_conditional_checks(lazy, model=model, extend_inferencedata=False)
    assert ts.data  # the draws' chunks were read by the cluster's worker
    xr.testing.assert_identical(from_chunks, terms)
    assert terms["z"].attrs["adjusted_check"] == "log_post" and terms["z"].attrs["min_batches"] == 8
    terms["z"].attrs["check_tau"][3] = 40.0  # log_post's batches meet the cap, N // min_batches
    here_data = from_datasets({"posterior": get_group(idata, "posterior"), "conditional_checks": terms})
    stored = open_inference_data(save_inference_data(here_data, tmp_path / "terms.zarr"), chunks={"draw": 100})
    assert get_group(stored, "conditional_checks")["z"].chunks[1] == (100,) * 6
    here = arviz_regen.conditional_check(here_data)
    there, names = _ran(client, lambda: arviz_regen.conditional_check(stored, client=client))
    assert names["conditional_test"] == 1
    xr.testing.assert_identical(there, here)
    attrs = there["z"].attrs
    assert attrs["combination"] == "adjusted" and attrs["adjusted_check"] == "log_post"
    assert attrs["raw_checks"] == "n_clusters"
    assert attrs["capped"] == "log_post" and attrs["batch"][3] == 600 // 8  # min_batches = 8, not 4
    table_here = arviz_regen.regen_summary(here_data)
    table_there = arviz_regen.regen_summary(stored, client=client)
    pd.testing.assert_frame_equal(table_there, table_here)
    assert table_there.attrs["verdict"] == table_here.attrs["verdict"]
    assert table_there.loc["conditional_check", "p_value_all"] == float(there["z"].sel(check="all"))


def test_regen_summary(client, wandering):
    idata, lazy = wandering
    here = arviz_regen.regen_summary(idata)
    there, names = _ran(client, lambda: arviz_regen.regen_summary(lazy, client=client))
    pd.testing.assert_frame_equal(here, there)
    assert here.attrs["verdict"] == there.attrs["verdict"]
    assert {"state_traces", "_chain_pair_batches", "max_f_pairs"} <= set(names)


def test_loss_evaluations(client, wandering):
    idata, lazy = wandering
    est = get_group(idata, "posterior")["z"].values[0, -1]
    pdraws = load_partition(idata)
    spec = parse_loss("VI")
    here = state_losses(pdraws, est, spec)
    np.testing.assert_allclose(here, draw_losses(pdraws, est, spec), rtol=1e-12, atol=1e-12)
    on_workers, names = _ran(client, lambda: state_losses(pdraws, est, spec, client=client))
    assert np.array_equal(on_workers, here) and names["_state_block_losses"] == 1
    here = arviz_regen.expected_loss(lazy, est, client=False)
    there, names = _ran(client, lambda: arviz_regen.expected_loss(lazy, est, client=client))
    z = get_group(lazy, "posterior")["z"]
    assert here == there and names["loss_sums"] == z.data.npartitions == len(z.chunks[1]) * len(z.chunks[0])
    want = float(np.mean(arviz_regen.partition_loss(get_group(idata, "posterior")["z"].values, est)))
    np.testing.assert_allclose(there, want, rtol=1e-12)
    assert arviz_regen.expected_loss(idata, est) == pytest.approx(want, rel=1e-12)
    per_draw = arviz_regen.expected_loss(lazy, est, loss="binder", per_draw=True, client=client)
    assert per_draw.dims == ("chain", "draw")
    np.testing.assert_array_equal(per_draw.values, arviz_regen.partition_loss(get_group(idata, "posterior")["z"].values,
                                                                             est, loss="binder"))  # fmt: skip
    with pytest.raises(ValueError, match="one label vector of length 40"):
        arviz_regen.expected_loss(idata, est[:5])


def test_point_estimate_and_credible_ball_score_on_the_active_client(client, wandering):
    idata, _ = wandering
    here = arviz_regen.point_estimate(idata, loss="VI", random_seed=3)
    ball_here = arviz_regen.credible_ball(idata, here, level=0.9)

    def on_cluster():
        with using_client(client):
            est = arviz_regen.point_estimate(idata, loss="VI", random_seed=3)
            return est, arviz_regen.credible_ball(idata, est, level=0.9)

    (there, ball_there), names = _ran(client, on_cluster)
    assert names["_state_block_losses"] >= 2  # the estimate's final scoring and the ball's distances
    assert names["salso_runs"] == 2  # the SALSO runs in one block per worker thread
    for a, b in ((there, here), (ball_there, ball_here)):
        a.attrs.pop("seconds", None), b.attrs.pop("seconds", None)  # the only thing that may differ
        xr.testing.assert_identical(a, b)


def test_point_estimate_and_credible_ball_take_a_client(client, wandering):
    idata, lazy = wandering
    here = arviz_regen.point_estimate(idata, random_seed=3, client=False)
    ball_here = arviz_regen.credible_ball(idata, level=0.9, random_seed=3, client=False)
    there, names = _ran(client, lambda: arviz_regen.point_estimate(lazy, random_seed=3, client=client))
    assert names["salso_runs"] == 2 and names["_state_block_losses"] == 1
    ball_there, names = _ran(client, lambda: arviz_regen.credible_ball(lazy, level=0.9, random_seed=3, client=client))
    assert names["salso_runs"] == 2 and names["_state_block_losses"] == 2  # the search's and the ball's
    here.attrs.pop("seconds"), there.attrs.pop("seconds")
    xr.testing.assert_identical(there, here)
    xr.testing.assert_identical(ball_there, ball_here)
