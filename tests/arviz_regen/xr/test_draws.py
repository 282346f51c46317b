"""arviz_regen as the lower layer: import cost, lazy numba, every input type, coords, accessors.

Every input route (InferenceData, DataTree, Dataset, DataArray, dict, numpy arrays with
``logp=``) must give the same numbers as the InferenceData route; ``coords=`` must equal slicing
the data first; bad input must fail early with a message that says what is wrong.
"""

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import arviz_regen
from arviz_regen.base.lazy_jit import LazyDispatcher, lazy_import, lazy_njit
from arviz_regen.testing import make_idata, metropolis_chain, random_partitions, zipf_probs
from arviz_regen.xr.containers import from_datasets, get_group, to_datatree

N_CHAIN, N_DRAW, N_ITEMS, N_STATES = 3, 2000, 7, 25
K = [2, 3, 5]
ROOT = Path(__file__).resolve().parents[3]

HAS_DATATREE = hasattr(xr, "DataTree")
# short slices: a few top states rest on few tours (the same warning on every route)
pytestmark = pytest.mark.filterwarnings("ignore:Top states visited in fewer:UserWarning")
needs_datatree = pytest.mark.skipif(not HAS_DATATREE, reason="xarray without DataTree")


@pytest.fixture(scope="module")
def idata():
    rng = np.random.default_rng(7)
    states = random_partitions(N_STATES, N_ITEMS, rng)
    probs = zipf_probs(N_STATES, 1.3)
    idx = metropolis_chain(probs, N_CHAIN, N_DRAW, rng, stay=0.4, max_step=2)
    return make_idata(states, idx, np.log(probs), logp_shift=-50.0)


@pytest.fixture(scope="module")
def labels(idata):
    return idata.posterior["z"].values


@pytest.fixture(scope="module")
def logp(idata):
    return idata.sample_stats["partition_logp"].values


@pytest.fixture(scope="module")
def reference(idata):
    return {
        "hotelling_rs": arviz_regen.hotelling_rs(idata, k=K),
        "coclustering": arviz_regen.coclustering(idata),
    }


def _strip(ds):
    """Numbers only: the attrs (e.g. ``var_name``) may name the variable differently."""
    return ds.drop_attrs() if hasattr(ds, "drop_attrs") else ds.copy().assign_attrs({})


def _assert_same(ref, data, **kwargs):
    h = arviz_regen.hotelling_rs(data, k=K, **kwargs)
    c = arviz_regen.coclustering(data, **kwargs)
    for name, got in (("hotelling_rs", h), ("coclustering", c)):
        exp = ref[name]
        assert set(got.data_vars) == set(exp.data_vars)
        for var in exp.data_vars:
            np.testing.assert_allclose(got[var].values, exp[var].values, err_msg=f"{name}.{var}")
    return h, c


def _run(code):
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


# --- layering and import cost -------------------------------------------------------------------

HEAVY = ["pymc", "pytensor", "pymc_partition", "numba"]
#: public functions named like the modules that define them
SAME_NAMES = [
    ("consensus", "estimates.consensus"),
    ("coclustering", "estimates.coclustering"),
    ("point_estimate", "estimates.point_estimate"),
    ("credible_ball", "estimates.credible_ball"),
    ("partition_loss", "base.partition_loss"),
    ("batch_means", "base.batch_means"),
]


@pytest.fixture(scope="module")
def fresh_import():
    """One new interpreter for the import checks that can share it (each costs an interpreter
    and an import of ArviZ): the heavy modules loaded by ``import arviz`` (which ``import
    arviz_regen`` does first) and then by ``import arviz_regen``; then the package's names after
    their submodules are imported."""
    probe = f"""
        import importlib, json, sys
        import arviz
        arviz_only = {{m: m in sys.modules for m in {HEAVY!r}}}
        import arviz_regen
        regen = {{m: m in sys.modules for m in {HEAVY!r}}}
        names = {{}}
        for name, module in {SAME_NAMES!r}:
            importlib.import_module("arviz_regen." + module)
            obj = getattr(arviz_regen, name)
            names[name] = [callable(obj), getattr(obj, "__module__", None)]
        print(json.dumps({{"arviz_only": arviz_only, "regen": regen, "names": names}}))
    """
    return json.loads(_run(probe).strip().splitlines()[-1])


def test_import_leaves_heavy_modules_out(fresh_import):
    regen, arviz_only = fresh_import["regen"], fresh_import["arviz_only"]
    for mod in ("pymc", "pytensor", "pymc_partition"):
        assert not regen[mod], f"`import arviz_regen` imported {mod}"
    # ArviZ 0.23 itself imports numba when it is installed (arviz.stats.ecdf_utils); arviz_regen
    # must add nothing to that
    if not arviz_only["numba"]:
        assert not regen["numba"], "`import arviz_regen` imported numba"


def test_import_does_not_need_numba_pymc_or_arviz():
    # with numba, pymc, pytensor and pymc_partition made unimportable, `import arviz_regen` works
    # (ArviZ falls back to no-numba by itself), and so it does without ArviZ at all
    out = _run(
        """
        import sys
        for m in ("numba", "pymc", "pytensor", "pymc_partition"):
            sys.modules[m] = None
        import arviz_regen, arviz as az
        assert az.hotelling_rs is arviz_regen.hotelling_rs
        from arviz_regen.base.lazy_jit import LazyDispatcher
        kernels = [
            obj
            for name, mod in list(sys.modules.items())
            if name.startswith("arviz_regen") and mod is not None
            for obj in vars(mod).values()
            if isinstance(obj, LazyDispatcher)
        ]
        assert len(kernels) >= 3 and not any(k.is_loaded for k in kernels)
        print("ok")
        """
    )
    assert out.strip().endswith("ok")
    out = _run(
        """
        import sys
        sys.modules["arviz"] = None
        import arviz_regen, xarray as xr
        assert xr.Dataset.regen is not None
        print("ok")
        """
    )
    assert out.strip().endswith("ok")


def test_sources_never_import_the_upper_layer():
    for path in (ROOT / "arviz_regen").rglob("*.py"):
        text = path.read_text()
        for mod in ("pymc", "pytensor", "pymc_partition"):
            assert f"import {mod}" not in text and f"from {mod}" not in text, f"{path.name} imports {mod}"


def test_pymc_partition_state_is_the_same_implementation():
    from arviz_regen.base import state as rstate
    from pymc_partition import state as pstate

    for name in rstate.__all__:
        assert getattr(pstate, name) is getattr(rstate, name)


# --- lazy numba -----------------------------------------------------------------------------------


@lazy_njit
def _inner(x):
    return 2.0 * x + 1.0


@lazy_njit(cache=False)
def _outer(a):
    s = 0.0
    for v in a:
        s += _inner(v)  # a lazily-jitted kernel called from inside another one
    return s


@lazy_njit(cache=False)
def _apply(f, a):
    return f(a[0])


def test_lazy_njit_nested_kernels_and_arguments():
    import numba

    a = np.arange(5.0)
    assert _outer(a) == pytest.approx((2 * a + 1).sum())
    assert _outer.signatures and isinstance(_outer.dispatcher, numba.core.registry.CPUDispatcher)
    assert _apply(_inner, np.array([3.0])) == 7.0  # a proxy passed as a first-class function

    @numba.njit
    def plain(x):  # a plain numba kernel calling a lazy one through a global
        return _inner(x) - 1.0

    assert plain(2.0) == 4.0
    assert _outer.py_func(a) == _outer(a)
    assert _outer.__name__ == "_outer" and isinstance(_outer, LazyDispatcher)
    assert pickle.loads(pickle.dumps(_outer)) is _outer


def test_lazy_njit_defers_until_first_call():
    @lazy_njit(cache=False)
    def fresh(x):
        return x + 1

    assert not fresh.is_loaded and "not loaded" in repr(fresh)
    assert fresh(1) == 2 and fresh.is_loaded


def test_lazy_import():
    mod = lazy_import("json")
    assert "not loaded" in repr(mod)
    assert mod.dumps([1]) == "[1]" and "loaded" in repr(mod)


# --- input types ----------------------------------------------------------------------------------


@needs_datatree
def test_datatree_from_inference_data(idata, reference):
    _assert_same(reference, to_datatree(idata))


@needs_datatree
def test_datatree_from_arviz_base(labels, logp, reference):
    arviz_base = pytest.importorskip("arviz_base")
    dt = arviz_base.from_dict(
        {"posterior": {"z": labels}, "sample_stats": {"partition_logp": logp}}, dims={"z": ["z_dim_0"]}
    )
    _assert_same(reference, dt)


@needs_datatree
def test_dask_backed_datatree(idata, reference):
    pytest.importorskip("dask")
    dt = to_datatree(idata).chunk({"draw": 500})
    assert dt["posterior"]["z"].chunks is not None
    _assert_same(reference, dt)


def test_dataset_with_logp_argument(idata, logp, reference):
    _assert_same(reference, idata.posterior, logp=logp)
    _assert_same(reference, idata.posterior, logp=idata.sample_stats["partition_logp"])  # a DataArray


def test_dataset_holding_the_logp_variable(idata, reference):
    merged = xr.merge([get_group(idata, "posterior"), get_group(idata, "sample_stats")[["partition_logp"]]])
    _assert_same(reference, merged)


def test_dict_and_arrays(idata, labels, logp, reference):
    _assert_same(reference, {"z": labels}, logp=logp)
    _assert_same(reference, {"z": labels, "partition_logp": logp})
    _assert_same(reference, {"posterior": {"z": labels}, "sample_stats": {"partition_logp": logp}})
    h, _ = _assert_same(reference, labels, logp=logp)
    assert h.attrs["var_name"] == "x"
    h, _ = _assert_same(reference, labels, logp=logp, var_names="z")
    assert h.attrs["var_name"] == "z"
    _assert_same(reference, idata.posterior["z"], logp=logp)  # a DataArray of labels


@pytest.mark.parametrize("n_items", [3, 40])  # uint64 keys, byte-string keys
def test_unique_keys_is_numpy_unique(n_items, monkeypatch):
    from arviz_regen.base.state import state_keys
    from arviz_regen.xr import draws

    monkeypatch.setattr(draws, "_UNIQUE_STEP", 7)  # several comparison blocks
    keys = state_keys(np.random.default_rng(1).integers(0, 2, (300, n_items)))
    for got, want in zip(draws.unique_keys(keys), np.unique(keys, return_index=True, return_inverse=True)):
        assert got.dtype == want.dtype and np.array_equal(got, want.reshape(-1))


def test_keys_by_blocks_are_the_same(labels, monkeypatch):
    from arviz_regen.xr import draws
    from arviz_regen.xr.draws import load_partition

    whole = load_partition(labels)
    monkeypatch.setattr(draws, "_KEY_BLOCK", 3 * labels.shape[-1] + 1)  # 3 draws a block, a short last one
    blocks = load_partition(labels)
    assert np.array_equal(blocks.keys, whole.keys) and np.array_equal(blocks.index, whole.index)


def test_single_chain_arrays(idata, labels, logp):
    ref = arviz_regen.hotelling_rs(idata, k=K, coords={"chain": [1]})
    for lab, lp in ((labels[1], logp[1]), (labels[1:2], logp[1:2]), (labels[1], logp[1:2])):
        got = arviz_regen.hotelling_rs(lab, k=K, logp=lp)
        assert got.sizes["chain"] == 1
        np.testing.assert_allclose(got.p_value.values, ref.p_value.values)


def test_explicit_logp_overrides_recorded(idata, logp):
    shifted = arviz_regen.hotelling_rs(idata, k=3, logp=logp + 7.0)
    ref = arviz_regen.hotelling_rs(idata, k=3)
    np.testing.assert_allclose(shifted.p_value.values, ref.p_value.values)
    np.testing.assert_allclose(shifted.log_z.values, ref.log_z.values + 7.0)


def test_other_public_functions_take_logp_and_coords(idata, logp):
    ds = idata.posterior
    coords = {"draw": slice(500, None)}
    sliced = idata.sel(draw=slice(500, None))
    top_ref = arviz_regen.top_states(sliced, k=4)
    top = arviz_regen.top_states(ds, k=4, logp=logp, coords=coords)
    np.testing.assert_array_equal(top.labels.values, top_ref.labels.values)
    est_ref = arviz_regen.rs_estimate(sliced, lambda lab: lab.max(axis=1) + 1.0)
    est = arviz_regen.rs_estimate(ds, lambda lab: lab.max(axis=1) + 1.0, logp=logp, coords=coords)
    for var in est_ref.data_vars:
        np.testing.assert_allclose(est[var].values, est_ref[var].values)
    cons = arviz_regen.consensus(ds, logp=logp, coords=coords)
    np.testing.assert_array_equal(cons.labels, arviz_regen.consensus(sliced).labels)
    table = arviz_regen.regen_summary(ds, k=[2, 3], logp=logp, coords=coords)
    ref_table = arviz_regen.regen_summary(sliced, k=[2, 3])
    assert list(table.index) == list(ref_table.index)
    np.testing.assert_allclose(table.to_numpy(dtype=float), ref_table.to_numpy(dtype=float), equal_nan=True)


# --- coords ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "coords",
    [{"chain": [0, 2]}, {"draw": slice(1000, None)}, {"chain": [2, 1], "draw": slice(None, 1499)}],
    ids=["chains", "draws", "both"],
)
def test_coords_equal_slicing_first(idata, labels, logp, coords):
    sliced = idata.sel(**coords)
    ref = {"hotelling_rs": arviz_regen.hotelling_rs(sliced, k=K), "coclustering": arviz_regen.coclustering(sliced)}
    h, c = _assert_same(ref, idata, coords=coords)
    np.testing.assert_array_equal(h.chain.values, sliced.posterior.chain.values)
    _assert_same(ref, idata.posterior, logp=logp, coords=coords)
    if HAS_DATATREE:
        _assert_same(ref, to_datatree(idata), coords=coords)
    table = arviz_regen.regen_summary(idata, k=[2, 3], coords=coords)
    np.testing.assert_allclose(
        table.to_numpy(dtype=float), arviz_regen.regen_summary(sliced, k=[2, 3]).to_numpy(dtype=float), equal_nan=True
    )


def test_scalar_coord_keeps_the_dimension(idata):
    h = arviz_regen.hotelling_rs(idata, k=3, coords={"chain": 1})
    assert h.p_value.dims == ("chain",) and h.chain.values.tolist() == [1]


def test_coords_do_not_select_items(idata):
    # a subset of items is another state space (logp is no longer a function of the state)
    with pytest.raises(ValueError, match="chains and draws only.*item_i"):
        arviz_regen.coclustering(idata, coords={"z_dim_0": [0, 2, 3]})


# --- accessors ------------------------------------------------------------------------------------


@needs_datatree
def test_datatree_accessor(idata, reference):
    dt = to_datatree(idata)
    h = dt.regen.hotelling_rs(k=K)
    xr.testing.assert_allclose(_strip(h), _strip(reference["hotelling_rs"]))
    xr.testing.assert_allclose(_strip(dt.regen.coclustering()), _strip(reference["coclustering"]))
    table = dt.regen.summary(k=[2, 3])
    ref_table = arviz_regen.regen_summary(idata, k=[2, 3])
    np.testing.assert_allclose(table.to_numpy(dtype=float), ref_table.to_numpy(dtype=float), equal_nan=True)
    sub = dt.regen.hotelling_rs(k=3, coords={"chain": [0]})
    assert sub.sizes["chain"] == 1
    assert "hotelling_rs" in repr(dt.regen)


def test_dataset_and_dataarray_accessors(idata, logp, reference):
    h = idata.posterior.regen.hotelling_rs(k=K, logp=logp)
    xr.testing.assert_allclose(_strip(h), _strip(reference["hotelling_rs"]))
    c = idata.posterior["z"].regen.coclustering(logp=logp)
    xr.testing.assert_allclose(_strip(c), _strip(reference["coclustering"]))
    with pytest.raises(ValueError, match="logp="):
        idata.posterior.regen.hotelling_rs(k=2)  # a posterior alone has no log posterior


# --- clear errors ---------------------------------------------------------------------------------


def test_errors_for_bad_labels(labels, logp):
    with pytest.raises(ValueError, match=r"\(chain, draw, item\).*\(draw, item\)"):
        arviz_regen.hotelling_rs(labels[0, 0], logp=logp)
    with pytest.raises(ValueError, match="got 4 dimension"):
        arviz_regen.hotelling_rs(labels[None], logp=logp)
    with pytest.raises(TypeError, match="integer labels"):
        arviz_regen.coclustering(labels + 0.5, logp=logp)
    with pytest.raises(TypeError, match="'z' must hold integer labels"):
        arviz_regen.coclustering({"z": labels.astype(complex)}, logp=logp)
    with pytest.raises(TypeError, match="integer labels"):
        arviz_regen.coclustering(labels.astype(str), logp=logp)
    with pytest.raises(ValueError, match=r"must have dims \(chain, draw, \.\.\.\)"):
        arviz_regen.coclustering({"z": labels[0, 0]})


def test_errors_for_bad_logp(idata, labels, logp):
    with pytest.raises(ValueError, match=r"has shape \(3, 1999\).*\(chain, draw\) = \(3, 2000\)"):
        arviz_regen.hotelling_rs(labels, logp=logp[:, 1:])
    with pytest.raises(ValueError, match=r"has shape \(2000,\)"):
        arviz_regen.hotelling_rs(labels, logp=logp[0])  # (draw,) only for one chain
    with pytest.raises(ValueError, match=r"must have dims \(chain, draw\)"):
        arviz_regen.hotelling_rs(idata.posterior, logp=xr.DataArray(logp, dims=("a", "b")))
    with pytest.raises(ValueError, match="chain coordinates differ"):
        bad = idata.sample_stats["partition_logp"].assign_coords(chain=[5, 6, 7])
        arviz_regen.hotelling_rs(idata.posterior, logp=bad)
    with pytest.raises(TypeError, match="logp_var="):
        arviz_regen.hotelling_rs(idata, logp="partition_logp")
    with pytest.raises(TypeError, match="real numbers"):
        arviz_regen.hotelling_rs(labels, logp=logp.astype(str))
    nan_lp = logp.copy()
    nan_lp[0, 3] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        arviz_regen.hotelling_rs(labels, logp=nan_lp)


def test_errors_for_missing_groups_and_types(idata):
    no_post = from_datasets({"sample_stats": get_group(idata, "sample_stats")})
    with pytest.raises(ValueError, match="no posterior group|without a `posterior` group"):
        arviz_regen.hotelling_rs(no_post)
    if HAS_DATATREE:
        dt = xr.DataTree.from_dict({"sample_stats": get_group(idata, "sample_stats")})
        with pytest.raises(ValueError, match="without a `posterior` group"):
            arviz_regen.coclustering(dt)
    with pytest.raises(TypeError, match="Accepted: arviz.InferenceData"):
        arviz_regen.hotelling_rs(object())


def test_errors_for_bad_coords(idata):
    with pytest.raises(ValueError, match="'chains' is not a dimension"):
        arviz_regen.hotelling_rs(idata, coords={"chains": [0]})
    with pytest.raises(ValueError, match="could not be selected"):
        arviz_regen.hotelling_rs(idata, coords={"chain": [0, 9]})
    with pytest.raises(ValueError, match="selects no draw"):
        arviz_regen.coclustering(idata, coords={"draw": slice(10**6, None)})
    with pytest.raises(TypeError, match="must be a dict"):
        arviz_regen.coclustering(idata, coords=[0, 1])


# --- the DataTree world without ArviZ 0.x ------------------------------------------------------------


@needs_datatree
def test_datatree_route_without_arviz(labels, logp, reference, tmp_path):
    pytest.importorskip("arviz_base")
    np.savez(tmp_path / "draws.npz", labels=labels, logp=logp)
    expected = {
        "p": reference["hotelling_rs"].p_value.values.tolist(),
        "rho": reference["coclustering"].rho.values.tolist(),
    }
    out = _run(
        f"""
        import json, sys
        sys.modules["arviz"] = None  # the ArviZ 1.x world: no InferenceData
        import numpy as np
        import arviz_base
        import arviz_regen
        d = np.load({str(tmp_path / "draws.npz")!r})
        dt = arviz_base.from_dict(
            {{"posterior": {{"z": d["labels"]}}, "sample_stats": {{"partition_logp": d["logp"]}}}},
            dims={{"z": ["z_dim_0"]}},
        )
        h = arviz_regen.hotelling_rs(dt, k={K!r})
        c = dt.regen.coclustering()
        arrays = arviz_regen.hotelling_rs(d["labels"], k={K!r}, logp=d["logp"])
        assert np.allclose(arrays.p_value.values, h.p_value.values)
        print(json.dumps({{"p": h.p_value.values.tolist(), "rho": c.rho.values.tolist()}}))
        """
    )
    got = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(got["p"], expected["p"])
    np.testing.assert_allclose(got["rho"], expected["rho"])


def test_negative_labels_are_refused_as_such():
    """A -1 (an "unassigned" item) read as a label joins every other -1 in one cluster, so the
    draw shares a state with draws of another log posterior: the message names the -1, not
    "hyperparameters updated by NUTS"."""
    from arviz_regen.testing import random_partitions

    rng = np.random.default_rng(0)
    states = random_partitions(5, 5, rng)
    idx = rng.integers(0, 5, size=(2, 300))
    labels, logp = states[idx].copy(), -idx.astype(float)
    labels[0, 5, 2] = -1
    for fn in (arviz_regen.hotelling_rs, arviz_regen.coclustering):
        with pytest.raises(ValueError, match=r"hold 1 negative value\(s\) \(e.g. -1\).*unassigned") as info:
            fn(labels, logp=logp)
        assert "NUTS" not in str(info.value)


def test_public_functions_keep_their_names_after_their_submodules_are_imported(fresh_import):
    """``consensus``, ``coclustering``, ``point_estimate``, ... are public functions named like
    the modules that define them: importing a module (as other modules do) must not rebind the
    package's name to the module (``arviz_regen.consensus(x)`` raised "'module' object is not
    callable")."""
    for name, module in SAME_NAMES:
        assert fresh_import["names"][name] == [True, "arviz_regen." + module], name
