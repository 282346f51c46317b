"""``arviz-regen-summary --scheduler ADDRESS``: the same table, with the store read and the heavy
blocks run by the workers of the scheduler at that address; a scheduler that does not answer is
an error (status 2)."""

from __future__ import annotations

import numpy as np
import pytest

from arviz_regen.cli import EXIT_ERROR, EXIT_OK, main
from arviz_regen.testing import BlockModel, block_chain
from arviz_regen.xr.distributed import TASK_PREFIX
from arviz_regen.xr.io import save_inference_data

distributed = pytest.importorskip("distributed")


def test_scheduler_address(tmp_path, capsys):
    idata = block_chain(BlockModel(n_items=24, n_blocks=4), 2, 500, np.random.default_rng(5), rho=0.5)
    path = save_inference_data(idata, tmp_path / "run.zarr")
    assert main([str(path)]) == EXIT_OK
    here = capsys.readouterr().out
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster, set_as_default=False) as watcher:
            with distributed.get_task_stream(watcher) as ts:
                assert main([str(path), "--scheduler", cluster.scheduler_address]) == EXIT_OK
    there = capsys.readouterr().out
    assert there == here
    keys = [str(t["key"]) for t in ts.data]
    assert any(k.startswith(f"{TASK_PREFIX}-state_traces") for k in keys)
    assert any("keys_block" in k for k in keys)  # the labels read and hashed by the workers
    assert any("open_dataset" in k for k in keys)


def test_no_scheduler_answers(tmp_path, capsys, monkeypatch):
    idata = block_chain(BlockModel(n_items=8, n_blocks=4), 2, 50, np.random.default_rng(5), rho=0.5)
    path = save_inference_data(idata, tmp_path / "run.zarr")
    monkeypatch.setattr("arviz_regen.cli._CONNECT_TIMEOUT", "1s")
    assert main([str(path), "--scheduler", "tcp://127.0.0.1:9"]) == EXIT_ERROR
    assert "no dask scheduler answers at 'tcp://127.0.0.1:9'" in capsys.readouterr().err
