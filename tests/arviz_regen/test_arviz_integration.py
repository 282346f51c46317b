"""ArviZ integration: registration, input types, dask-backed data, summary table, CLI, plots."""

import matplotlib

matplotlib.use("Agg")

import arviz as az  # noqa: E402
import dask  # noqa: E402
import dask.array as dsa  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402
from dask.callbacks import Callback  # noqa: E402

import arviz_regen  # noqa: E402
from arviz_regen.cli import main, open_inference_data, save_inference_data  # noqa: E402
from arviz_regen.testing import make_idata, metropolis_chain, random_partitions, zipf_probs  # noqa: E402
from arviz_regen.xr.containers import from_datasets, get_group  # noqa: E402

N_CHAIN, N_DRAW, N_ITEMS = 3, 3000, 9

pytestmark = [
    pytest.mark.filterwarnings("ignore:The specified chunks separate:UserWarning"),
    pytest.mark.filterwarnings("ignore:Consolidated metadata:UserWarning"),
]


@pytest.fixture(scope="module")
def idata():
    rng = np.random.default_rng(42)
    states = random_partitions(40, N_ITEMS, rng)
    probs = zipf_probs(40, 1.4)
    idx = metropolis_chain(probs, N_CHAIN, N_DRAW, rng, stay=0.5, max_step=3)
    return make_idata(states, idx, np.log(probs), logp_shift=-321.0)


class CountTasks(Callback):
    def __init__(self):
        super().__init__()
        self.n = 0

    def _pretask(self, key, dsk, state):
        self.n += 1


def test_registered_on_arviz():
    assert az.hotelling_rs is arviz_regen.hotelling_rs
    assert az.coclustering is arviz_regen.coclustering
    assert az.regen_summary is arviz_regen.regen_summary
    # ArviZ's own names are never shadowed
    assert az.rhat.__module__.startswith("arviz")


def test_beside_rhat_and_ess(idata):
    hrs = az.hotelling_rs(idata, k=[2, 3, 5])
    rhat = az.rhat(get_group(idata, "sample_stats")[["n_clusters", "partition_logp"]])
    merged = xr.merge(
        [hrs.drop_attrs() if hasattr(hrs, "drop_attrs") else hrs, rhat.rename({k: f"rhat_{k}" for k in rhat.data_vars})]
    )
    assert set(merged.data_vars) >= {"t2", "p_value", "df", "n_tours", "rhat_n_clusters"}
    assert hrs.p_value.dims == ("chain", "k")


def test_accepts_what_convert_to_inference_data_accepts(idata):
    ref = arviz_regen.coclustering(idata)
    as_dict = {"z": idata.posterior["z"].values}
    with pytest.warns(UserWarning, match="most visited"):
        from_dict = arviz_regen.coclustering(as_dict, var_names="z", regeneration=None)
    # the most visited state is the top state here, so the estimates agree
    np.testing.assert_allclose(from_dict.rho.values, ref.rho.values)
    as_dataset = idata.posterior
    np.testing.assert_allclose(
        arviz_regen.coclustering(as_dataset, regeneration="mode").rho.values,
        arviz_regen.coclustering(idata, regeneration="mode").rho.values,
    )


def _open_chunked_zarr(path):
    return from_datasets({
        "posterior": xr.open_zarr(path, group="posterior", chunks={"draw": 500}),
        "sample_stats": xr.open_zarr(path, group="sample_stats", chunks={"draw": 500}),
    })  # fmt: skip


@pytest.mark.parametrize("fmt", ["zarr", "netcdf"])
def test_dask_backed_equals_in_memory(idata, tmp_path, fmt):
    if fmt == "zarr":
        path = str(tmp_path / "trace.zarr")
        save_inference_data(idata, path)
        lazy = _open_chunked_zarr(path)
    else:
        path = str(tmp_path / "trace.nc")
        idata.to_netcdf(path)
        lazy = open_inference_data(path, chunks={"draw": 500})
    assert isinstance(lazy.posterior["z"].data, dsa.Array)
    counter = CountTasks()
    with dask.config.set(scheduler="synchronous"), counter:
        h_lazy = arviz_regen.hotelling_rs(lazy, k=[2, 5], cumulative=False)
        c_lazy = arviz_regen.coclustering(lazy, combined=True)
        table = arviz_regen.regen_summary(lazy, k=[2, 5])
    assert counter.n >= 2 * (N_DRAW // 500)  # computed chunk by chunk
    assert isinstance(lazy.posterior["z"].data, dsa.Array)  # nothing loaded into the dataset
    h_mem = arviz_regen.hotelling_rs(idata, k=[2, 5])
    xr.testing.assert_allclose(h_lazy, h_mem)
    np.testing.assert_allclose(c_lazy.rho.values, arviz_regen.coclustering(idata, combined=True).rho.values)
    np.testing.assert_allclose(table.loc["hotelling_rs[k=5]", "p_value_all"], h_mem.p_value_all.sel(k=5).item())


def test_summary_table(idata):
    table = arviz_regen.regen_summary(idata, k=[2, 3, 5, 10], n_bootstrap=199)
    traces = ["n_clusters", "partition_logp", "vi_ref0", "vi_ref1", "binder_ref0", "binder_ref1"]
    assert list(table.index[:6]) == traces
    assert [r for r in table.index[6:]] == [f"hotelling_rs[k={k}]" for k in (2, 3, 5, 10)]
    verdict = ["p_value_all", "p_value_pooled", "p_value_agreement", "p_value_recurrence"]
    for col in ["mean", "sd", "ess_bulk", "ess_tail", "r_hat", *verdict, "n_tours_min", "tours_visiting_min"]:
        assert col in table.columns
    # neither the minimum over chains nor per-chain p-values: no multiplicity control, no verdict
    assert "p_value_min" not in table.columns and not any(c.startswith("p_value[") for c in table.columns)
    hot = [c for c in table.columns if c not in ("mean", "sd", "ess_bulk", "ess_tail", "r_hat")]
    assert hot == [*verdict, "n_tours_min", "tours_visiting_min"]  # the verdict first
    assert table.attrs["decided_by"] == "hotelling_rs" and table.attrs["verdict"].startswith("verdict: ")
    # the distance traces are those of partition_traces, summarized by ArviZ
    tr = arviz_regen.partition_traces(idata)
    np.testing.assert_allclose(table.loc["vi_ref1", "r_hat"], az.rhat(tr[["vi_ref1"]])["vi_ref1"])
    rhat = az.rhat(get_group(idata, "sample_stats")[["n_clusters"]])["n_clusters"]
    np.testing.assert_allclose(table.loc["n_clusters", "r_hat"], rhat)
    hrs = arviz_regen.hotelling_rs(idata, k=[2, 3, 5, 10], n_bootstrap=199)
    for kk in (2, 3, 5, 10):
        row = table.loc[f"hotelling_rs[k={kk}]"]
        for name in verdict:
            np.testing.assert_allclose(row[name], hrs[name].sel(k=kk).item())
        assert row["n_tours_min"] == hrs.n_tours.values.min()
        assert row["tours_visiting_min"] == hrs.tours_visiting.values[:, :kk].min()
    # fewer tours visit the rarer states of a larger K
    assert table.loc["hotelling_rs[k=10]", "tours_visiting_min"] <= table.loc["hotelling_rs[k=2]", "tours_visiting_min"]
    # method, n_bootstrap and random_seed reach hotelling_rs
    chi2 = arviz_regen.regen_summary(idata, k=[2, 3], method="chi2", n_bootstrap=199, random_seed=3)
    ref = arviz_regen.hotelling_rs(idata, k=[2, 3], method="chi2", n_bootstrap=199, random_seed=3)
    np.testing.assert_allclose(chi2.loc["hotelling_rs[k=2]", "p_value_all"], ref.p_value_all.sel(k=2).item())
    # Monte Carlo p-values: at least 1/(n_bootstrap + 1), at most 1
    vals = table.loc["hotelling_rs[k=2]", verdict[1:3]].astype(float).values
    # (agreement is NaN when a tour spans a fifth of a chain: rare switching, see tour_tests)
    assert np.isfinite(vals[0]) and np.all((vals[np.isfinite(vals)] >= 1 / 200) & (vals[np.isfinite(vals)] <= 1))
    # n_clusters recomputed from the labels when not recorded
    no_nc = from_datasets({
        "posterior": get_group(idata, "posterior"),
        "sample_stats": get_group(idata, "sample_stats").drop_vars("n_clusters"),
    })  # fmt: skip
    t2 = arviz_regen.regen_summary(no_nc, k=2, n_bootstrap=199)
    np.testing.assert_allclose(t2.loc["n_clusters", "mean"], table.loc["n_clusters", "mean"])


def test_summary_without_arviz_0x(idata, monkeypatch):
    """ArviZ 1.x world: arviz.summary of 0.x missing → arviz_stats.summary; neither → ImportError."""
    import sys

    from arviz_regen.diagnostics import summary as summary_mod

    arviz_stats = pytest.importorskip("arviz_stats")
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "arviz", None)  # `import arviz` raises ImportError
        assert summary_mod._summary_function() is arviz_stats.summary
        m.setitem(sys.modules, "arviz_stats", None)
        with pytest.raises(ImportError, match="arviz-stats"):
            summary_mod._summary_function()
    ref = arviz_regen.regen_summary(idata, k=2, n_bootstrap=199)
    monkeypatch.setattr(summary_mod, "_summary_function", lambda: arviz_stats.summary)
    table = arviz_regen.regen_summary(idata, k=2, n_bootstrap=199)
    assert list(table.index) == list(ref.index) and list(table.columns) == list(ref.columns)
    stats = ["n_clusters", "partition_logp", "vi_ref0", "binder_ref1"]
    for col in ("mean", "ess_bulk", "r_hat"):
        np.testing.assert_allclose(table.loc[stats, col].astype(float), ref.loc[stats, col].astype(float), rtol=1e-6)
    np.testing.assert_allclose(table.loc[stats, "sd"].astype(float), ref.loc[stats, "sd"].astype(float), rtol=1e-3)
    assert np.all(np.isfinite(table.loc[stats, "ess_tail"].astype(float)))  # tail ESS of ties differs
    hot = ref.columns[5:]
    np.testing.assert_allclose(
        table.loc["hotelling_rs[k=2]", hot].astype(float), ref.loc["hotelling_rs[k=2]", hot].astype(float)
    )


def test_cli_prints_table(idata, tmp_path, capsys):
    path = tmp_path / "trace.nc"
    idata.to_netcdf(str(path))
    assert main([str(path), "-k", "2", "3", "--n-bootstrap", "199"]) == 0
    out = capsys.readouterr().out
    assert "hotelling_rs[k=2]" in out and "hotelling_rs[k=3]" in out
    assert "r_hat" in out and "ess_bulk" in out and "n_clusters" in out
    assert "p_value_all" in out and "tours_visiting_min" in out and "p_value_min" not in out
    zpath = tmp_path / "trace.zarr"
    save_inference_data(idata, zpath)
    assert main([str(zpath), "--chunk-draws", "1000", "--var-name", "z", "-k", "5", "--n-bootstrap", "199"]) == 0
    assert "hotelling_rs[k=5]" in capsys.readouterr().out
    assert main([str(tmp_path / "missing.nc")]) == 2
    assert "no such file" in capsys.readouterr().err
    lazy = open_inference_data(zpath, chunks={"draw": 700})
    assert isinstance(lazy.posterior["z"].data, dsa.Array)


def test_plots_return_axes(idata):
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    axes = arviz_regen.plot_hotelling_rs(idata, k=[2, 5], n_bootstrap=199, n_points=8)
    assert len(axes) == 2 and all(isinstance(a, Axes) for a in axes)
    assert len(axes[0].lines) == N_CHAIN + 2  # chains, the verdict, alpha
    cum = arviz_regen.hotelling_rs(idata, k=3, cumulative=True, n_bootstrap=199, n_points=8)
    assert isinstance(arviz_regen.plot_hotelling_rs(cum)[0], Axes)
    ax = arviz_regen.plot_coclustering(idata)
    assert isinstance(ax, Axes)
    order = [int(t.get_text()) for t in ax.get_xticklabels()]
    assert sorted(order) == list(range(N_ITEMS))
    assert isinstance(arviz_regen.plot_coclustering(np.eye(4), order=False), Axes)
    rho = arviz_regen.coclustering(idata, combined=True).rho.values
    axes = arviz_regen.plot_coclustering_trace(idata, stat="abs_error", reference=rho, n_points=20)
    assert len(axes) == N_CHAIN and isinstance(axes[0], Axes)
    axes = arviz_regen.plot_coclustering_trace(idata, stat="cv", combined=True, n_points=20)
    assert len(axes) == 1
    ax = arviz_regen.plot_top_states(idata, k=8, reference=zipf_probs(40, 1.4)[:8])
    assert isinstance(ax, Axes) and len(ax.lines) == N_CHAIN + 2
    fig, given = plt.subplots(1, 2)
    out = arviz_regen.plot_hotelling_rs(idata, k=[2, 3], ax=given, n_bootstrap=199, n_points=5)
    assert out[0] is given[0]
    plt.close("all")


def test_plot_hotelling_rs_trace(idata):
    import matplotlib.pyplot as plt

    cum = arviz_regen.hotelling_rs(idata, k=[2, 5], cumulative=True, n_bootstrap=199, n_points=10)
    axes = arviz_regen.plot_hotelling_rs(cum, alpha=0.1)
    for axi, kk in zip(axes, (2, 5)):
        assert axi.get_yscale() == "log"
        assert axi.get_ylim() == pytest.approx((1 / 200, 1.0))  # clipped at the smallest bootstrap p
        *chains, verdict, level = axi.lines
        assert len(chains) == N_CHAIN
        assert verdict.get_color() == "k" and verdict.get_linewidth() > chains[0].get_linewidth()
        np.testing.assert_allclose(verdict.get_xdata(), cum.draw.values)
        np.testing.assert_allclose(
            verdict.get_ydata(), np.clip(cum.p_value_all.sel(k=kk).values, 1 / 200, 1), equal_nan=True
        )
        np.testing.assert_allclose(
            chains[1].get_ydata(), np.clip(cum.p_value.sel(k=kk, chain=1).values, 1 / 200, 1), equal_nan=True
        )
        assert level.get_ydata()[0] == pytest.approx(0.1)
        assert not axi.texts  # p-values defined: no note
    # computed from the data: cumulative and the bootstrap options are passed through
    axes = arviz_regen.plot_hotelling_rs(idata, k=[3], n_bootstrap=99, n_points=5)
    assert axes[0].get_ylim()[0] == pytest.approx(1 / 100) and axes[0].lines[0].get_xdata().size == 5
    # the paper's Figure 2c: χ² after every draw, top states of the whole run, no verdict line
    axes = arviz_regen.plot_hotelling_rs(idata, k=[2, 3], cumulative="lookahead")
    assert len(axes[0].lines) == N_CHAIN + 1 and axes[0].lines[0].get_xdata().size == N_DRAW
    assert "look-ahead" in axes[0].get_ylabel()
    la = arviz_regen.hotelling_rs(idata, k=[2, 3], cumulative="lookahead")
    np.testing.assert_allclose(
        axes[0].lines[2].get_ydata(), np.clip(la.p_value.sel(k=2, chain=2).values, 1e-4, 1), equal_nan=True
    )
    with pytest.raises(ValueError, match="cumulative"):
        arviz_regen.plot_hotelling_rs(idata, k=2, cumulative=False)
    plt.close("all")


def test_plot_overlays_labels_and_given_probabilities(idata):
    """The options the paper's figures use: all K / all chains in one panel, item names, and
    the cumulative curve of given (e.g. exact) probabilities."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import same_color

    cum = arviz_regen.hotelling_rs(idata, k=[2, 5], cumulative=True, n_bootstrap=199, n_points=6)
    fig, ax = plt.subplots()
    out = arviz_regen.plot_hotelling_rs(cum, overlay=True, alpha=0.05, ax=ax)
    assert len(out) == 1 and out[0] is ax
    levels = [line for line in ax.lines if line.get_label().startswith("α")]
    traces = [line for line in ax.lines if line not in levels]
    assert len(levels) == 1 and len(traces) == 2 * (N_CHAIN + 1)  # per K: the chains and the verdict
    level = levels[0]
    for i, kk in enumerate((2, 5)):
        lines = traces[i * (N_CHAIN + 1) : (i + 1) * (N_CHAIN + 1)]
        assert all(same_color(line.get_color(), f"C{i}") for line in lines)  # one colour per K
        assert len({line.get_linestyle() for line in lines[:N_CHAIN]}) == N_CHAIN  # one style per chain
        np.testing.assert_allclose(
            lines[-1].get_ydata(), np.clip(cum.p_value_all.sel(k=kk).values, 1 / 200, 1), equal_nan=True
        )
    assert level.get_ydata()[0] == pytest.approx(0.05)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "K = 2" in labels and "chain 0" in labels

    co = arviz_regen.coclustering(idata, cumulative=True, n_points=5)
    fig, ax = plt.subplots()
    arviz_regen.plot_coclustering_trace(co, stat="cv", overlay=True, ax=ax)
    n_pairs = N_ITEMS * (N_ITEMS - 1) // 2
    assert len(ax.lines) == N_CHAIN * n_pairs
    assert [same_color(ax.lines[c * n_pairs].get_color(), f"C{c}") for c in range(N_CHAIN)] == [True] * N_CHAIN
    np.testing.assert_allclose(ax.lines[n_pairs].get_ydata(), co.cv.sel(chain=1).values[:, 0, 1], equal_nan=True)

    names = [f"item {i}" for i in range(4)]
    ax = arviz_regen.plot_coclustering(np.eye(4), labels=names, order=False)
    assert [t.get_text() for t in ax.get_xticklabels()] == names
    with pytest.raises(ValueError, match="labels"):
        arviz_regen.plot_coclustering(np.eye(4), labels=names[:3])

    probs = np.array([0.5, 0.3, 0.2])
    ax = arviz_regen.plot_top_states(probs)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [0.5, 0.8, 1.0])
    with pytest.raises(ValueError, match="probabilities"):
        arviz_regen.plot_top_states(np.array([0.5, np.nan]))
    plt.close("all")


def test_similarity_order_groups_blocks():
    from arviz_regen.plots.partition_plots import similarity_order

    labels = np.array([0, 1, 0, 2, 1, 0, 2])
    rho = (labels[:, None] == labels[None, :]).astype(float) * 0.9 + 0.05
    np.fill_diagonal(rho, 1.0)
    order = similarity_order(rho)
    runs = np.flatnonzero(np.diff(labels[order]) != 0).size
    assert runs == 2  # each block contiguous
