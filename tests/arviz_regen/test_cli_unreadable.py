"""``arviz-regen-summary`` on a file that is not a store of draws (issue 26, case 10): exit status 2
and a message saying so, not xarray's "consider installing additional IO dependencies"."""

from __future__ import annotations

import numpy as np

from arviz_regen.cli import main


def test_a_random_or_empty_nc_file_is_named_as_not_draws(tmp_path, capsys):
    for name, content in (("random.nc", np.random.default_rng(0).bytes(4096)), ("empty.nc", b"")):
        path = tmp_path / name
        path.write_bytes(content)
        assert main([str(path)]) == 2
        err = capsys.readouterr().err
        assert "is not a netCDF file of draws" in err, err
        assert "IO dependencies" not in err


def _store(path):
    import sys
    from pathlib import Path

    import xarray as xr

    sys.path.insert(0, str(Path(__file__).parent / "xr"))
    from test_label_input_edges import _draws, _with_logp

    labels, logp = _draws()
    tree = _with_logp(labels, logp)
    stats = tree["sample_stats"].to_dataset()
    stats["n_clusters"] = (("chain", "draw"), (labels.max(axis=-1) + 1).astype(float))
    xr.DataTree.from_dict({"posterior": tree["posterior"].to_dataset(), "sample_stats": stats}).to_zarr(path)


def test_a_damaged_zarr_store_is_an_error_not_a_pass(tmp_path, capsys):
    """Issue 26, case 3: without the chunks of `posterior/z`, or without `posterior/`, zarr reads
    fill values (labels all 0, chain = [0, 0]); that printed PASS with exit status 0."""
    import shutil

    import pytest

    pytest.importorskip("zarr")
    path = tmp_path / "draws.zarr"
    _store(path)
    for entry in (path / "posterior" / "z").iterdir():  # the chunks, whatever zarr's layout
        if entry.name not in ("zarr.json", ".zarray", ".zattrs"):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    assert main([str(path), "--fail-below", "0.05"]) == 2
    assert "disagrees with the clusters of the posterior labels" in capsys.readouterr().err
    shutil.rmtree(path / "posterior")
    assert main([str(path), "--fail-below", "0.05"]) == 2
    assert "repeated 'chain' coordinates" in capsys.readouterr().err
