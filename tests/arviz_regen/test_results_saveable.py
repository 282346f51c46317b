"""Every public xarray result saves to netCDF and to zarr and reads back the same: its values, and
attributes that netCDF can hold (strings, numbers, vectors of numbers; no dict, None, bool or list
of names), which the code that reads them (the conditional check's terms) still understands."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

import arviz_regen
from arviz_regen.testing import BlockModel, block_chain, make_idata, metropolis_chain, random_partitions, zipf_probs
from arviz_regen.xr.containers import from_datasets, get_group, group_names
from arviz_regen.xr.io import open_inference_data, save_inference_data

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::arviz_regen.NonRecurrenceWarning"),
]

CHECKS = ["n_clusters", "cluster_size", "partner", "log_post"]


def _recurring(seed):
    rng = np.random.default_rng(seed)
    probs = zipf_probs(30)
    return make_idata(random_partitions(30, 12, rng), metropolis_chain(probs, 3, 2000, rng), np.log(probs))


@pytest.fixture(scope="module")
def recurring():
    """Three Metropolis chains over 30 states of 12 items: regenerative estimates."""
    return _recurring(2)


@pytest.fixture(scope="module")
def wandering():
    """Chains of a 24-item posterior whose states never recur."""
    return block_chain(BlockModel(n_items=24, n_blocks=4), 2, 400, np.random.default_rng(1), rho=0.5)


def _terms(adjusted=True, check_tau=True, hyper=False):
    """Terms with the attributes ``compute_conditional_checks`` stores (or those of an older one)."""
    rng = np.random.default_rng(3)
    attrs = {"items_per_draw": 4, "n_items": 8, "seed": 0, "thin": 1}
    if check_tau:
        attrs["check_tau"] = [1.5, 2.0, float("nan"), 30.0]
    if adjusted:
        attrs.update(adjusted_check="log_post", raw_checks="n_clusters", min_batches=8)
    z = xr.DataArray(rng.normal(size=(2, 400, 4)), dims=("chain", "draw", "check"), coords={"check": CHECKS},
                     attrs=attrs)  # fmt: skip
    out = {"z": z}
    if hyper:
        out["hyperparameters"] = xr.DataArray(
            rng.normal(size=(2, 400, 2)), dims=("chain", "draw", "hyper_check"),
            coords={"hyper_check": ["score[alpha]", "score_u[alpha]"]}, attrs={"thin": 1, "state_tau": 3.5},
        )  # fmt: skip
    return xr.Dataset(out, attrs={"description": "terms"})


RESULTS = {
    "hotelling_rs": lambda rec, wand: arviz_regen.hotelling_rs(rec),
    "hotelling_rs_128_bit_seed": lambda rec, wand: arviz_regen.hotelling_rs(rec, random_seed=2**127 + 5),
    "chain_agreement": lambda rec, wand: arviz_regen.chain_agreement(wand),
    "conditional_check_adjusted": lambda rec, wand: arviz_regen.conditional_check(_terms(hyper=True)),
    "conditional_check_bonferroni": lambda rec, wand: arviz_regen.conditional_check(_terms(adjusted=False)),
    "conditional_check_hotelling": lambda rec, wand: arviz_regen.conditional_check(_terms(False, False)),
    "conditional_check_statistic": lambda rec, wand: arviz_regen.conditional_check(_terms(), kind="statistic"),
    "partition_traces": lambda rec, wand: arviz_regen.partition_traces(wand),
    "coclustering": lambda rec, wand: arviz_regen.coclustering(rec),
    "coclustering_batch_means": lambda rec, wand: arviz_regen.coclustering(wand),
    "rs_estimate": lambda rec, wand: arviz_regen.rs_estimate(rec, lambda labels: labels.max(axis=-1)),
    "top_states": lambda rec, wand: arviz_regen.top_states(rec),
    "point_estimate": lambda rec, wand: arviz_regen.point_estimate(rec, random_seed=1, n_runs=4),
    "credible_ball": lambda rec, wand: arviz_regen.credible_ball(rec, random_seed=1, n_runs=4),
    "expected_loss": lambda rec, wand: arviz_regen.expected_loss(
        rec, get_group(rec, "posterior")["z"].values[0, -1], per_draw=True
    ),
    "when_converged": lambda rec, wand: arviz_regen.when_converged(rec, first=500, n_bootstrap=49),
    "when_reached": lambda rec, wand: arviz_regen.when_reached(wand, every=200),
}


def _saveable(value):
    """Whether netCDF holds ``value`` as an attribute and gives it back as the same kind."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        return False
    if isinstance(value, (str, int, float, np.integer, np.floating)):
        return not isinstance(value, (int, np.integer)) or -(2**63) <= int(value) < 2**63
    if isinstance(value, (list, tuple, np.ndarray)):
        a = np.asarray(value)
        return a.ndim == 1 and (a.size == 0 or a.dtype.kind in "iuf")  # a list of names reads back as a string
    return False


def _norm(value):
    """An attribute as it compares after a round trip (a vector of one number reads back as the number)."""
    if isinstance(value, str):
        return value
    return np.atleast_1d(np.asarray(value)).tolist()


def _all_attrs(ds):
    out = {("", k): v for k, v in ds.attrs.items()}
    out.update({(name, k): v for name in ds.variables for k, v in ds[name].attrs.items()})
    return out


def _round_trip(ds, path):
    if path.suffix == ".zarr":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zarr 3's notes on string dtypes and consolidated metadata
            ds.to_zarr(path, mode="w")
        return xr.open_zarr(path).load()
    ds.to_netcdf(path)
    with xr.open_dataset(path) as back:
        return back.load()


def _assert_read_back(ds, back):
    xr.testing.assert_equal(ds, back)
    attrs, got = _all_attrs(ds), _all_attrs(back)
    assert set(attrs) == set(got)
    for key, value in attrs.items():
        np.testing.assert_equal(_norm(got[key]), _norm(value), err_msg=str(key))


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_result_saves_and_reads_back(name, recurring, wandering, tmp_path):
    res = RESULTS[name](recurring, wandering)
    ds = res if isinstance(res, xr.Dataset) else res.to_dataset(name=res.name or "x")
    bad = {key: value for key, value in _all_attrs(ds).items() if not _saveable(value)}
    assert not bad, f"attributes netCDF cannot hold or gives back as another kind: {bad}"
    for suffix in (".nc", ".zarr"):
        _assert_read_back(ds, _round_trip(ds, tmp_path / f"{name}{suffix}"))


def test_conditional_check_attributes_read_back(tmp_path):
    """The adjusted combination's attributes after netCDF: names split back, beta on the coordinate."""
    terms = _terms()
    res = arviz_regen.conditional_check(terms)["z"]
    want = arviz_regen.base.conditional.conditional_test(
        terms["z"].values, check_tau=terms["z"].attrs["check_tau"], adjusted=3, raw=[0], min_batches=8
    )
    back = _round_trip(res.to_dataset(), tmp_path / "check.nc")["z"]
    assert back.attrs["adjusted_check"] == "log_post" and back.attrs["raw_checks"].split(",") == ["n_clusters"]
    assert back.attrs["capped"].split(",") == ["log_post"]  # 4 x 30 draws > 400 // 8
    beta = dict(zip(back["check"].values.tolist(), back.attrs["beta"]))
    np.testing.assert_allclose([beta[c] for c in CHECKS[:3]], want.beta, rtol=1e-12)
    assert np.isnan(beta["log_post"]) and np.isnan(beta["all"])
    assert back.attrs["adjusted_df"] == want.adjusted_df and back.attrs["df_each"].tolist() == list(want.df_each)


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_terms_saved_with_the_draws_give_the_same_check(suffix, recurring, tmp_path):
    """Terms saved in the draws' container (InferenceData or DataTree) read back to the same result."""
    idata = from_datasets({"posterior": get_group(recurring, "posterior"), "conditional_checks": _terms(hyper=True)})
    here = arviz_regen.conditional_check(idata)
    back = open_inference_data(save_inference_data(idata, tmp_path / f"draws{suffix}"))
    assert "conditional_checks" in group_names(back)
    _assert_read_back(here, arviz_regen.conditional_check(back))


@pytest.mark.parametrize(
    "raw",
    [["n_clusters"], ["n_clusters", "partner"], [], "n_clusters, partner"],
)
@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_terms_name_raw_checks_in_any_stored_form(raw, suffix, tmp_path):
    """``raw_checks`` as a list of names (read as before), whatever netCDF or zarr make of it: one name
    comes back from netCDF as a string, none as an empty vector of floats."""
    terms = _terms()
    terms["z"].attrs["raw_checks"] = raw
    want = arviz_regen.conditional_check(terms)
    names = raw.split(", ") if isinstance(raw, str) else list(raw)
    assert want["z"].attrs["raw_checks"] == ",".join(names)
    xr.testing.assert_identical(arviz_regen.conditional_check(_round_trip(terms, tmp_path / f"t{suffix}")), want)


def test_combined_chains_save_and_read_back(tmp_path):
    combined = arviz_regen.combine_chains([_recurring(2), _recurring(5)])
    for suffix in (".nc", ".zarr"):
        back = open_inference_data(save_inference_data(combined, tmp_path / f"combined{suffix}"))
        _assert_read_back(get_group(combined, "posterior"), get_group(back, "posterior"))
