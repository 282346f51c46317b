"""point_estimate and credible_ball refuse a posterior beyond the memory before reading a draw
(issue 27 item 3), naming the cheaper call, through the helper coclustering uses."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest
import xarray as xr

import arviz_regen

pe = importlib.import_module("arviz_regen.estimates.point_estimate")
cb = importlib.import_module("arviz_regen.estimates.credible_ball")


@pytest.fixture
def small_memory(monkeypatch):
    """100 MiB available; no draw may be loaded."""
    real = os.sysconf

    def sysconf(name):
        if name == "SC_AVPHYS_PAGES":
            return (100 << 20) // real("SC_PAGE_SIZE")
        return real(name)

    def never(*args, **kwargs):
        raise AssertionError("the draws were loaded before the memory check")

    monkeypatch.setattr(os, "sysconf", sysconf)
    monkeypatch.setattr(pe, "load_partition", never)
    monkeypatch.setattr(cb, "load_partition", never)


def posterior(chains, draws, items):
    """A posterior of these sizes that is never read (broadcast: no memory)."""
    z = np.broadcast_to(np.zeros(1, dtype=np.int64), (chains, draws, items))
    return xr.Dataset({"z": (("chain", "draw", "z_dim"), z)})


def test_draws_beyond_memory_are_refused_before_loading(small_memory):
    post = posterior(4, 1000, 5000)  # 160 MB of labels, three copies
    with pytest.raises(MemoryError, match=r"VI point estimate of 5000 items \(4 chains x 1000 draws\).*coords="):
        arviz_regen.point_estimate(post, loss="VI")
    with pytest.raises(MemoryError, match=r"VI credible ball of 5000 items.*coords="):
        arviz_regen.credible_ball(post, np.zeros(5000, dtype=int), loss="VI")


def test_advised_thinning_is_the_least_listed_that_fits(small_memory):
    """The advice names a thinning that fits in 80 % of what is available, and the finer one before it does not."""
    room = 0.8 * (100 << 20)
    with pytest.raises(MemoryError, match=r"every 5th draw, 200 per chain\)\.$"):
        arviz_regen.point_estimate(posterior(4, 1000, 2000), loss="VI")
    assert pe.summary_bytes(4, 200, 2000, False) <= room < pe.summary_bytes(4, 500, 2000, False)
    with pytest.raises(MemoryError, match=r"every 2nd draw, 500 per chain\)"):
        arviz_regen.point_estimate(posterior(4, 1000, 1200), loss="VI")
    with pytest.raises(MemoryError, match=r"Thinning the draws cannot make it fit"):
        arviz_regen.point_estimate(posterior(4, 3, 2_000_000), loss="VI")  # one draw per chain: 192 MB


def test_binder_matrix_beyond_memory_names_the_draws_route(small_memory):
    post = posterior(1, 2, 4000)  # the draws are small; a 4000 x 4000 matrix twice is not
    with pytest.raises(MemoryError, match=r"binder point estimate.*cannot make it fit.*route='draws'"):
        arviz_regen.point_estimate(post, loss="binder")
    with pytest.raises(MemoryError, match=r"binder credible ball.*route='draws'"):
        arviz_regen.credible_ball(post, loss="binder")
    # with route="draws" nothing is refused: the (patched) loading is reached
    with pytest.raises(AssertionError, match="loaded before"):
        arviz_regen.point_estimate(post, loss="binder", route="draws")
