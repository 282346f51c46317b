"""``arviz_regen.combine_chains``: runs saved apart become one posterior that every summary takes;
runs that are not draws of the same model, or a run included twice, are refused."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import arviz_regen
from arviz_regen.testing import BlockModel, block_chain
from arviz_regen.xr.containers import from_datasets, get_group, group_names, is_datatree, is_inference_data
from arviz_regen.xr.io import save_inference_data

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore:invalid value encountered:RuntimeWarning")
MODEL = BlockModel(n_items=40, n_blocks=4)


def _run(seed, n_chain=2, n_draw=400, model=MODEL):
    return block_chain(model, n_chain, n_draw, np.random.default_rng(seed), rho=0.5)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs with different seeds, in memory and as zarr stores (with observed data)."""
    out, paths = [], []
    observed = xr.Dataset({"y": ("obs", np.arange(40.0))})
    for seed in (1, 2):
        run = _run(seed)
        groups = {g: get_group(run, g) for g in group_names(run)}
        run = from_datasets({**groups, "observed_data": observed})
        path = tmp_path_factory.mktemp("combine") / f"seed{seed}.zarr"
        save_inference_data(run, path)
        out.append(run)
        paths.append(str(path))
    return out, paths


def test_paths_combine_lazily_and_every_summary_takes_them(runs):
    (a, b), paths = runs
    both = arviz_regen.combine_chains(paths)
    assert is_datatree(both) or is_inference_data(both)
    post = get_group(both, "posterior")
    assert post.sizes["chain"] == 4 and post["chain"].values.tolist() == [0, 1, 2, 3]
    assert post["z"].chunks is not None  # still lazy: read by the summaries chunk by chunk
    assert post.attrs["combined_chains"].startswith("0: source 0 chain 0; 1: source 0 chain 1; 2: source 1 chain 0")
    for part, chains in ((a, [0, 1]), (b, [2, 3])):
        for group in ("posterior", "sample_stats"):
            want = get_group(part, group)
            got = get_group(both, group).sel(chain=chains).compute()
            for var in want.data_vars:
                np.testing.assert_array_equal(got[var].values, want[var].values)
    assert get_group(both, "observed_data").equals(get_group(a, "observed_data"))
    in_memory = arviz_regen.combine_chains([a, b])
    traces = arviz_regen.partition_traces(both)
    xr.testing.assert_identical(traces.drop_attrs(), arviz_regen.partition_traces(in_memory).drop_attrs())
    assert traces.sizes["chain"] == 4
    table = arviz_regen.regen_summary(both)
    assert "chain_agreement" in table.index
    assert arviz_regen.coclustering(both, items=[0, 1, 2]).sizes["chain"] == 4
    assert arviz_regen.point_estimate(both)["labels"].size == 40


def test_refusals(runs, tmp_path):
    (a, b), paths = runs
    plain = from_datasets({g: get_group(a, g) for g in ("posterior", "sample_stats")})
    with pytest.raises(ValueError, match="same run .* included twice"):
        arviz_regen.combine_chains([paths[0], a])
    with pytest.raises(ValueError, match="not the same items"):
        arviz_regen.combine_chains([plain, _run(3, model=BlockModel(n_items=48, n_blocks=4))])
    with pytest.raises(ValueError, match="300 draws per chain in source 1 and 400"):
        arviz_regen.combine_chains([plain, _run(3, n_draw=300)])
    with pytest.raises(ValueError, match="has the groups"):
        arviz_regen.combine_chains([a, _run(3)])  # no observed_data
    shifted_posterior = get_group(b, "posterior").assign_coords(z_dim_0=np.arange(1, 41))
    shifted = from_datasets({g: get_group(b, g) for g in group_names(b) if g != "posterior"}
                            | {"posterior": shifted_posterior})  # fmt: skip
    with pytest.raises(ValueError, match="coordinates of 'z_dim_0' .* not the same items"):
        arviz_regen.combine_chains([a, shifted])
    other_data = from_datasets({g: get_group(b, g) for g in group_names(b) if g != "observed_data"}
                               | {"observed_data": get_group(b, "observed_data") + 1})  # fmt: skip
    with pytest.raises(ValueError, match="did not fit the same data"):
        arviz_regen.combine_chains([a, other_data])
    extra = from_datasets({g: get_group(b, g) for g in group_names(b) if g != "sample_stats"}
                          | {"sample_stats": get_group(b, "sample_stats").drop_vars("n_clusters")})  # fmt: skip
    with pytest.raises(ValueError, match=r"missing \['n_clusters'\]"):
        arviz_regen.combine_chains([a, extra])
    with pytest.raises(TypeError, match="source 1 is a dict"):
        arviz_regen.combine_chains([a, {"z": 1}])
    with pytest.raises(ValueError, match="no sources"):
        arviz_regen.combine_chains([])
    with pytest.raises(FileNotFoundError):
        arviz_regen.combine_chains([a, tmp_path / "missing.zarr"])


def test_chains_that_never_move_are_not_copies():
    """Independent chains of a posterior concentrated on one partition are alike: combined."""
    labels = np.zeros((2, 50, 6), dtype=np.int64)
    runs = [from_datasets({"posterior": xr.Dataset({"z": (("chain", "draw", "z_dim_0"), labels)})}) for _ in range(2)]
    assert get_group(arviz_regen.combine_chains(runs), "posterior").sizes["chain"] == 4
