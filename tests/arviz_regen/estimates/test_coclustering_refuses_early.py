"""A co-clustering matrix larger than the memory is refused before any draw is read (issue 26,
case 11: 100,000 items were refused only after 4 s and 2 GB of work)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import xarray as xr

import arviz_regen

cc = importlib.import_module("arviz_regen.estimates.coclustering")  # the package exports the function by that name


def test_a_matrix_beyond_memory_is_refused_before_loading_the_draws(monkeypatch):
    labels = np.zeros((2, 3, 100_000), dtype=np.int64)
    post = xr.Dataset({"z": (("chain", "draw", "z_dim"), labels)})

    def never(*args, **kwargs):
        raise AssertionError("the draws were loaded before the memory check")

    monkeypatch.setattr(cc, "load_partition", never)
    with pytest.raises(MemoryError, match=r"co-clustering of 100000 items \(2 estimate\(s\).*GiB.*`items=`"):
        arviz_regen.coclustering(post)
