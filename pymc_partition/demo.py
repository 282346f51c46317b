"""The main job: the paper's illustration as a command-line demo.

Fits the spike-and-slab model by empirical Bayes, computes the exact posterior over all partitions,
samples it with collapsed Gibbs and with a deliberately badly mixing split-merge
(:meth:`SplitMerge.badly_mixing <pymc_partition.SplitMerge.badly_mixing>`), prints the convergence
tables (Hotelling-RS beside R-hat and ESS) and writes figures and InferenceData to an output
folder. Without ``--data`` (and without the environment variable ``PMP_ARABIDOPSIS_CSV``) it
runs on data simulated from the paper's fitted model, so no download is needed::

    pymc-partition-demo --out output
    pymc-partition-demo --data path/to/arabidopsis_messerli2007.csv --out output
    python -m pymc_partition.demo --draws 5000 --out output      # same thing, shorter

Every argument is checked before anything heavy is imported or computed (``--help`` and argument
errors take well under 2 s: PyMC is imported only once the run starts).

The plotting helpers (:func:`plot_exact_posterior`, :func:`plot_convergence`) and
:func:`diagnostics_table` are also used by ``notebooks/arabidopsis_convergence.ipynb``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from . import datasets as _datasets  # numpy only: keeps --help and argument errors fast

__all__ = [
    "main",
    "run",
    "compare_with_truth",
    "build_model",
    "sample_both",
    "convergence_diagnostics",
    "diagnostics_table",
    "plot_exact_posterior",
    "plot_convergence",
    "SAMPLER_LABELS",
    "K_VALUES",
]

#: Hotelling-RS partitions of the state space into the K most probable states (paper, Fig. 2c)
K_VALUES = (2, 3, 5, 10)

#: Display names of the two samplers of the paper's comparison
SAMPLER_LABELS = {"gibbs": "Gibbs", "split_merge": "split-merge (badly mixing)"}

#: The paper's figures for its Arabidopsis posterior (section 4.2)
PAPER_MAP_PROBABILITY = 0.43
PAPER_TOP10_MASS = 0.80

#: Hyperparameters the demo's simulated data are drawn from: the paper's empirical-Bayes fit
SIMULATION_HYPERPARAMETERS = dict(_datasets._PAPER_HYPERPARAMETERS)


def _log(msg=""):
    print(msg, flush=True)


# ------------------------------------------------------------------------------------------
# building blocks (also used by the notebook)
# ------------------------------------------------------------------------------------------


def build_model(data, estimates):
    """The paper's model: uniform multinomial-Dirichlet prior, spike-and-slab likelihood.

    Returns ``(model, z)``.
    """
    import pymc as pm

    import pymc_partition as pmp

    with pm.Model(coords={"item": list(data.item_names)}) as model:
        z = pmp.Partition("z", n_items=data.n_items, prior=pmp.UniformMultinomialDirichlet())
        pmp.MarginalLikelihood(
            "y", partition=z, family=pmp.SpikeSlabNormal(**estimates),
            observed=data.values, item_index=data.item_index,
        )  # fmt: skip
    return model, z


def make_steps(z):
    """The two samplers of the comparison, as zero-argument factories keyed like SAMPLER_LABELS."""
    import pymc_partition as pmp

    return {
        "gibbs": lambda: pmp.GibbsPartition([z]),
        "split_merge": lambda: pmp.SplitMerge.badly_mixing([z]),
    }


def sample_both(model, z, *, draws, chains=2, cores=1, random_seed=2019, progressbar=True, item_names=None):
    """Sample the model with GibbsPartition and the badly mixing SplitMerge.

    Returns ``(idatas, seconds)``: dicts keyed ``"gibbs"``, ``"split_merge"``.
    """
    import pymc as pm

    idatas, seconds = {}, {}
    for name, make_step in make_steps(z).items():
        with model:
            t0 = time.perf_counter()
            idata = pm.sample(
                draws=draws, tune=0, chains=chains, cores=cores, step=make_step(),
                random_seed=random_seed, progressbar=progressbar, compute_convergence_checks=False,
            )  # fmt: skip
        seconds[name] = time.perf_counter() - t0
        if item_names is not None:
            dim = f"{z.name}_dim_0"
            if dim in idata.posterior.dims:
                idata.posterior = idata.posterior.assign_coords({dim: list(item_names)})
        idatas[name] = idata
    return idatas, seconds


def convergence_diagnostics(idata, exact_coclustering, *, k=K_VALUES, n_points=100):
    """Along-the-draws diagnostics of one sampler (the three panels of the paper's Figure 2).

    Returns a dict with ``coclustering`` (cumulative, per chain, ``n_points`` evaluation draws),
    ``abs_error`` (``|rho_hat - rho|`` on the same grid, NaN before the first tour),
    ``hotelling`` (cumulative Hotelling-RS for every K, every draw) and ``final`` (Hotelling-RS
    at the end of the chains).
    """
    import arviz_regen

    with warnings.catch_warnings():
        # early in a cumulative trace there are too few tours (NaN se, CV and p-values there, by
        # design); the end-of-chain warnings are reported by regen_summary
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        co = arviz_regen.coclustering(idata, "z", cumulative=True, n_points=n_points)
        hot = arviz_regen.hotelling_rs(idata, "z", k=list(k), cumulative=True)
        final = arviz_regen.hotelling_rs(idata, "z", k=list(k))
    err = np.abs(co["rho"] - np.asarray(exact_coclustering))
    return {"coclustering": co, "abs_error": err, "hotelling": hot, "final": final}


def compare_with_truth(eb, truth):
    """The EB fit of simulated data beside the values they were simulated from.

    One row per hyperparameter: ``simulated from``, ``EB estimate``, ``std. error``,
    ``z = (est - true) / se`` and ``within 2 s.e.`` (about 95 % of fits should be, parameter by
    parameter). On simulated data this is the check that matters; the paper's table describes
    its fit to the real data. Returns a pandas DataFrame.
    """
    import pandas as pd

    rows = {}
    for name, true in truth.items():
        est, se = float(eb.estimates[name]), float(eb.std_errors[name])
        z = (est - true) / se if se > 0 else float("nan")
        rows[name] = {
            "simulated from": true, "EB estimate": est, "std. error": se,
            "z = (est - true) / se": z, "within 2 s.e.": "yes" if abs(z) <= 2 else "NO",
        }  # fmt: skip
    return pd.DataFrame(rows).T


def _pairs(values, n):
    iu, ju = np.triu_indices(n, 1)
    return np.asarray(values)[..., iu, ju]


def diagnostics_table(diags, *, seconds=None, idatas=None, cv_draw=20_000):
    """One row per sampler: the numbers behind Figure 2 at the end of the chains.

    Columns: maximum and mean absolute co-clustering error against the exact values (worst
    chain), the maximum CV over pairs at ``cv_draw`` (or the nearest evaluation draw) and at the
    end, the Hotelling-RS p-value for each K (smallest over chains), whole tours, seconds and,
    for split-merge, the acceptance rate of its proposals.
    """
    import pandas as pd

    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a chain without tours: NaN
        for name, d in diags.items():
            rows[SAMPLER_LABELS.get(name, name)] = _diagnostics_row(name, d, seconds, idatas, cv_draw)
    return pd.DataFrame(rows).T


def _diagnostics_row(name, d, seconds, idatas, cv_draw):
    co = d["coclustering"]
    n = co.sizes["item_i"]
    err_end = _pairs(d["abs_error"].isel(draw=-1).transpose("chain", "item_i", "item_j").values, n)
    cv = co["cv"].transpose("chain", "draw", "item_i", "item_j").values
    draws = co["draw"].values
    i_cv = int(np.argmin(np.abs(draws - cv_draw)))
    row = {
        "max |error|": np.nanmax(err_end),
        "mean |error|": float(np.nanmax(np.nanmean(err_end, axis=-1))),
        f"max CV @ draw {int(draws[i_cv]):,}": np.nanmax(_pairs(cv[:, i_cv], n)),
        "max CV @ end": np.nanmax(_pairs(cv[:, -1], n)),
    }
    final = d["final"]
    for kk in final["k"].values:
        row[f"p-value K={int(kk)}"] = float(np.nanmin(final["p_value"].sel(k=kk).values))
    row["tours (min over chains)"] = int(final["n_tours"].values.min())
    if seconds is not None and name in seconds:
        row["seconds"] = round(seconds[name], 1)
    if idatas is not None and "proposal_accepted" in idatas[name].sample_stats:
        row["acceptance"] = float(idatas[name].sample_stats["proposal_accepted"].mean())
    return row


def plot_exact_posterior(exact, item_names, *, n_states=1000, k=10, threshold=0.05, dpi=90):
    """The paper's Figure 1: cumulative probability of the states, and the co-clustering matrix.

    Left: cumulative probability of the ``n_states`` most probable partitions by rank (log
    scale). Right: exact co-clustering probabilities of all pairs above ``threshold``, split into
    the contribution of the top ``k`` partitions and of the rest. Returns the figure.
    """
    import matplotlib.pyplot as plt

    n_states = int(min(n_states, exact.n_states))
    labels, probs = exact.top(n_states)
    top_labels, top_probs = labels[:k], probs[:k]
    rho = exact.coclustering
    n = rho.shape[0]
    iu, ju = np.triu_indices(n, 1)
    same = top_labels[:, iu] == top_labels[:, ju]  # (k, pairs)
    top_part = top_probs @ same
    keep = np.flatnonzero(rho[iu, ju] > threshold)
    keep = keep[np.argsort(-rho[iu, ju][keep], kind="stable")]

    fig, (ax1, ax2) = plt.subplots(
        1, 2, figsize=(13, 4.8), dpi=dpi, gridspec_kw={"width_ratios": [1, 2]}, constrained_layout=True
    )
    rank = np.arange(1, n_states + 1)
    cum = np.cumsum(probs)
    ax1.plot(rank, cum, color="k", lw=1.5)
    ax1.plot(rank[:k], cum[:k], "o", color="k", ms=4)
    ax1.set_xscale("log")
    ax1.set_ylim(0, 1.02)
    ax1.set_xlabel(f"partition rank (by posterior probability, top {n_states:,} of {exact.n_states:,})")
    ax1.set_ylabel("cumulative posterior probability")
    ax1.set_title(f"MAP probability {probs[0]:.2f}; top {k}: {cum[k - 1]:.2f}")
    ax1.grid(alpha=0.3)

    names = [f"{item_names[i]}–{item_names[j]}" for i, j in zip(iu[keep], ju[keep])]
    x = np.arange(keep.size)
    ax2.bar(x, top_part[keep], color="k", label=f"top {k} partitions")
    ax2.bar(x, rho[iu, ju][keep] - top_part[keep], bottom=top_part[keep], color="tab:red", label="the rest")
    ax2.set_xticks(x)
    ax2.set_xticklabels(names, rotation=90, fontsize=6 if keep.size > 40 else 8)
    ax2.set_xlim(-0.7, keep.size - 0.3)
    ax2.set_ylim(0, 1.02)
    ax2.set_ylabel(r"co-clustering probability $\rho_{ij}$")
    ax2.set_title(rf"exact $\rho_{{ij}}$ of the {keep.size} pairs with $\rho_{{ij}} > {threshold}$")
    ax2.legend(frameon=False, fontsize=9)
    return fig


def plot_coclustering_matrix(exact, item_names, *, dpi=90):
    """Heat map of the exact co-clustering matrix (items ordered by similarity). Returns the figure."""
    import matplotlib.pyplot as plt

    from arviz_regen.plots import similarity_order

    fig, ax = plt.subplots(figsize=(5.6, 4.8), dpi=dpi, constrained_layout=True)

    order = similarity_order(exact.coclustering)
    im = ax.imshow(exact.coclustering[np.ix_(order, order)], vmin=0, vmax=1, cmap="viridis")
    names = np.asarray(item_names)[order]
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_title("exact co-clustering matrix")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label=r"$\rho_{ij}$")
    return fig


def plot_convergence(diags, *, alpha=0.05, dpi=90, max_points=2000):
    """The paper's Figure 2, one row per sampler: (a) |rho_hat - rho|, (b) CV, (c) Hotelling-RS.

    Lines are item pairs in (a) and (b) (chains overlaid, one colour per chain) and K in (c)
    (one colour per K, one line style per chain; thinned to about ``max_points`` points per
    line). Returns the figure.
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    names = list(diags)
    fig, axes = plt.subplots(
        len(names), 3, figsize=(13, 3.4 * len(names)), dpi=dpi, sharex=True, squeeze=False,
        constrained_layout=True,
    )  # fmt: skip
    styles = ["-", "--", ":", "-."]
    err_max = max(float(np.nanmax(d["abs_error"].values)) for d in diags.values())
    # log-scale floor of panel (c): below the smallest p-value, at least 1e-10 (smaller p-values,
    # common in the first few tours, are drawn at the floor)
    p_min = min(float(np.nanmin(d["hotelling"]["p_value"].values, initial=1.0)) for d in diags.values())
    p_floor = min(1e-3, max(p_min / 10, 1e-10))
    for r, name in enumerate(names):
        d = diags[name]
        co, hot = d["coclustering"], d["hotelling"]
        n = co.sizes["item_i"]
        draws = co["draw"].values + 1
        chains = co["chain"].values
        for ci, c in enumerate(chains):
            col = f"C{ci}"
            err = _pairs(d["abs_error"].sel(chain=c).transpose("draw", "item_i", "item_j").values, n)
            cv = _pairs(co["cv"].sel(chain=c).transpose("draw", "item_i", "item_j").values, n)
            axes[r, 0].plot(draws, err, color=col, lw=0.5, alpha=0.5)
            axes[r, 1].plot(draws, cv, color=col, lw=0.5, alpha=0.5)
        axes[r, 0].set_ylim(0, max(0.05, 1.05 * err_max))
        axes[r, 1].axhline(0.05, color="0.3", ls="--", lw=0.8)
        axes[r, 1].set_yscale("log")
        axes[r, 1].set_ylim(bottom=1e-4)
        # at most ~max_points points per line (the trace has one value per draw)
        stride = max(1, hot.sizes["draw"] // max_points)
        hsub = hot["p_value"].isel(draw=slice(None, None, stride))
        hdraws = hsub["draw"].values + 1
        for ki, kk in enumerate(hot["k"].values):
            for ci, c in enumerate(hot["chain"].values):
                p = np.maximum(hsub.sel(k=kk, chain=c).values, p_floor)
                axes[r, 2].plot(hdraws, p, color=f"C{ki}", ls=styles[ci % 4], lw=0.9, alpha=0.85)
        if alpha is not None:
            axes[r, 2].axhline(alpha, color="0.3", ls="--", lw=0.8)
        axes[r, 2].set_yscale("log")
        axes[r, 2].set_ylim(p_floor, 1.5)
        label = SAMPLER_LABELS.get(name, name)
        axes[r, 0].set_ylabel(f"{label}\n" + r"$|\hat\rho_{ij} - \rho_{ij}|$")
        axes[r, 1].set_ylabel(r"CV$_{ij}$ = se / max($\hat\rho$, 1 − $\hat\rho$)")
        axes[r, 2].set_ylabel("Hotelling-RS p-value")
        handles = [Line2D([], [], color=f"C{i}", lw=1.5, label=f"K = {int(kk)}") for i, kk in enumerate(hot["k"].values)]
        handles += [Line2D([], [], color="0.3", ls=styles[i % 4], label=f"chain {c}") for i, c in enumerate(hot["chain"].values)]
        if r == 0:  # one legend for the column
            axes[r, 2].legend(handles=handles, fontsize=7, ncol=2, framealpha=0.9, loc="lower left")
        chain_handles = [Line2D([], [], color=f"C{i}", label=f"chain {c}") for i, c in enumerate(chains)]
        axes[r, 0].legend(handles=chain_handles, fontsize=8, frameon=False, loc="upper right")
    for j, t in enumerate(["(a) absolute co-clustering error", "(b) CV of the RS estimates",
                           "(c) Hotelling-RS p-values"]):  # fmt: skip
        axes[0, j].set_title(t)
        axes[-1, j].set_xlabel("iteration (draws per chain)")
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
    return fig


# ------------------------------------------------------------------------------------------
# the demo
# ------------------------------------------------------------------------------------------


def run(data_path=None, out="output", draws=50_000, chains=2, cores=1, k=K_VALUES,
        random_seed=2019, progressbar=True, dpi=90):
    """Run the demo end to end and return a dict of results.

    Parameters
    ----------
    data_path : str or Path, optional
        The Arabidopsis CSV; ``None`` simulates data of the same shape from the paper's fit.
    out : str or Path
        Output folder for figures, tables and InferenceData (created if missing).
    draws : int
        Draws per chain for each sampler.
    chains, cores : int
        Passed to ``pm.sample``.
    k : sequence of int
        Numbers of top states for Hotelling-RS.
    random_seed : int
        Seed for simulation and sampling.
    progressbar : bool
        Show progress bars.
    dpi : int
        Resolution of the PNG figures.

    Returns
    -------
    dict with ``data``, ``eb``, ``exact``, ``idata`` (dict by sampler), ``tables`` (the
    :func:`arviz_regen.regen_summary` table of each sampler), ``diagnostics`` (the
    :func:`diagnostics_table`), ``files`` (paths written).
    """
    draws, chains, cores, random_seed, dpi, k = _check_run_args(draws, chains, cores, random_seed, dpi, k)
    if data_path is not None:  # before any heavy import: a bad file fails at once
        data = _load_data(data_path)

    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    import arviz_regen
    import pymc_partition as pmp
    from pymc_partition import fit_spike_slab  # noqa: F401  (loads the API, PyMC included, before the timings)
    from pymc_partition.exact import exact_posterior

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = []

    # 1. data
    if data_path is not None:
        _log(f"Data: {data_path} ({data.n_rows} rows, {data.n_items} items, {data.n_vars} variables)")
    else:
        data = pmp.datasets.simulate_spike_slab(**SIMULATION_HYPERPARAMETERS, random_seed=random_seed)
        _log(
            f"Data: simulated from the paper's fitted model ({data.n_rows} rows, {data.n_items} "
            f"items, {data.n_vars} variables, {int(data.true_labels.max()) + 1} true clusters); "
            f"pass --data or set {pmp.datasets.ARABIDOPSIS_ENV} for the Arabidopsis CSV"
        )

    # 2. empirical Bayes
    t0 = time.perf_counter()
    eb = pmp.fit_spike_slab(data.values, data.item_index)
    _log(f"\n== Empirical Bayes fit ({time.perf_counter() - t0:.1f} s): estimate (std. error)")
    if data_path is None:
        _log("   against the values the data were simulated from (the paper's table is for the real data)")
        with pd.option_context("display.width", 200, "display.float_format", "{:.4g}".format):
            _log(compare_with_truth(eb, SIMULATION_HYPERPARAMETERS).to_string())
    else:
        _log(str(pmp.compare_with_paper(eb)))

    # 3. model and exact posterior
    model, z = build_model(data, eb.estimates)
    t0 = time.perf_counter()
    exact = exact_posterior(model, top_k=1000, progressbar=progressbar)
    labels, probs = exact.top(10)
    _log(
        f"\n== Exact posterior over all B({data.n_items}) = {exact.n_states:,} partitions "
        f"({time.perf_counter() - t0:.1f} s)\n"
        f"   MAP probability {probs[0]:.3f}, top-10 mass {probs.sum():.3f}"
        + (f"   (paper: {PAPER_MAP_PROBABILITY} and about {PAPER_TOP10_MASS})" if data_path is not None else "")
    )
    names = np.asarray(data.item_names)
    for c in range(int(labels[0].max()) + 1):
        _log(f"   MAP cluster {c + 1}: {', '.join(names[labels[0] == c])}")
    if data.true_labels is not None:
        same = bool(np.array_equal(pmp.canonicalize(data.true_labels), labels[0]))
        _log(f"   MAP partition {'equals' if same else 'differs from'} the simulated partition")

    # 4. two samplers
    _log(f"\n== Sampling: {chains} chains x {draws:,} draws with GibbsPartition, then with "
         f"SplitMerge.badly_mixing() {pmp.SplitMerge.BADLY_MIXING}")  # fmt: skip
    logging.getLogger("pymc").setLevel(logging.WARNING)
    idatas, seconds = sample_both(
        model, z, draws=draws, chains=chains, cores=cores, random_seed=random_seed,
        progressbar=progressbar, item_names=data.item_names,
    )  # fmt: skip
    for name, idata in idatas.items():
        _log(f"   {SAMPLER_LABELS[name]}: {seconds[name]:.1f} s")
        path = out / f"idata_{name}.nc"
        idata.to_netcdf(path)
        files.append(path)

    # 5. convergence tables
    tables, diags = {}, {}
    pd_opts = ("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.4g}".format)
    for name, idata in idatas.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = arviz_regen.regen_summary(idata, var_names="z", k=list(k))
        tables[name] = table
        path = out / f"convergence_{name}.csv"
        table.to_csv(path)
        files.append(path)
        with pd.option_context(*pd_opts):
            _log(f"\n== Convergence table: {SAMPLER_LABELS[name]} (regen_summary)")
            _log(table.to_string())
        for msg in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, UserWarning)):
            _log(f"   note: {msg}")
        diags[name] = convergence_diagnostics(idata, exact.coclustering, k=k)
    summary = diagnostics_table(diags, seconds=seconds, idatas=idatas)
    path = out / "comparison.csv"
    summary.to_csv(path)
    files.append(path)
    with pd.option_context(*pd_opts):
        _log("\n== Against the exact posterior (Figure 2 at the last draw; p-values: smallest over chains)")
        _log(summary.T.to_string())

    # 6. figures
    figs = {
        "figure1_exact_posterior.png": plot_exact_posterior(exact, data.item_names, dpi=dpi),
        "figure1_coclustering_matrix.png": plot_coclustering_matrix(exact, data.item_names, dpi=dpi),
        "figure2_convergence.png": plot_convergence(diags, dpi=dpi),
    }
    for fname, fig in figs.items():
        path = out / fname
        fig.savefig(path, dpi=dpi)
        plt.close(fig)
        files.append(path)
    _log(f"\nFigures, tables and InferenceData written to {out.resolve()}:")
    for f in files:
        _log(f"   {f.name}")
    return {
        "data": data, "eb": eb, "exact": exact, "idata": idatas, "tables": tables,
        "diagnostics": summary, "seconds": seconds, "files": files,
    }  # fmt: skip


#: Bounds of the integer arguments (the CLI's and run()'s): name -> (minimum, maximum or None)
_INT_BOUNDS = {
    "draws": (100, None),  # the diagnostics need some tours
    "chains": (1, None),
    "cores": (1, None),
    "random_seed": (0, None),  # numpy seeds are non-negative
    "dpi": (10, 1000),
}


def _check_int(name, value):
    low, high = _INT_BOUNDS[name]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"`{name}` must be an integer, got {value!r}.")
    if value < low or (high is not None and value > high):
        bound = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"`{name}` must be {bound}, got {value}.")
    return int(value)


def _check_run_args(draws, chains, cores, random_seed, dpi, k):
    """Validate run()'s arguments before any heavy work; returns them normalized."""
    draws, chains, cores, random_seed, dpi = (
        _check_int(n, v) for n, v in
        (("draws", draws), ("chains", chains), ("cores", cores), ("random_seed", random_seed), ("dpi", dpi))
    )  # fmt: skip
    try:
        k = tuple(k)
    except TypeError:
        raise ValueError(f"`k` must be a sequence of positive integers, got {k!r}.") from None
    if not k or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1 for x in k):
        raise ValueError(f"`k` must be a non-empty sequence of positive integers, got {k!r}.")
    return draws, chains, cores, random_seed, dpi, tuple(int(x) for x in k)


def _load_data(path):
    """Load the Arabidopsis CSV (cheap: csv module and numpy)."""
    return _datasets.load_arabidopsis(path)


def _int_option(name):
    """argparse type for an integer option with the bounds of ``_INT_BOUNDS[name]``."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        try:
            return _check_int(name, value)
        except ValueError as err:
            low, high = _INT_BOUNDS[name]
            bound = f"at least {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value}") from err

    parse.__name__ = "integer"
    return parse


def _parser():
    env = _datasets.ARABIDOPSIS_ENV
    parser = argparse.ArgumentParser(
        prog="pymc-partition-demo",
        description="Bayesian clustering with exact posterior, Gibbs and split-merge sampling, "
        "and the Hotelling-RS convergence diagnostic (Asgharian, Lysy & Partovi Nia 2019).",
        epilog=f"Data: --data PATH, else the environment variable {env}, else data simulated "
        "from the paper's fitted model (no download needed). The Arabidopsis CSV is bclust's "
        "`gaelle` exported from R: library(bclust); data(gaelle); "
        'write.csv(gaelle, "arabidopsis_messerli2007.csv").',
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--data", default=None, metavar="PATH",
                        help=f"Arabidopsis CSV (bclust's gaelle) or its folder; default: ${env} if set, "
                        "else simulated data")  # fmt: skip
    source.add_argument("--simulate", action="store_true",
                        help=f"use simulated data even if {env} is set")  # fmt: skip
    parser.add_argument("--out", default="output", metavar="DIR", help="output folder (default: output)")
    parser.add_argument("--draws", type=_int_option("draws"), default=50_000,
                        help="draws per chain and sampler, >= 100 (default 50000)")  # fmt: skip
    parser.add_argument("--chains", type=_int_option("chains"), default=2, help="chains per sampler, >= 1 (default 2)")
    parser.add_argument("--cores", type=_int_option("cores"), default=1,
                        help="processes for sampling, >= 1 (default 1)")  # fmt: skip
    parser.add_argument("--seed", type=_int_option("random_seed"), default=2019,
                        help="random seed, >= 0 (default 2019)")  # fmt: skip
    parser.add_argument("--dpi", type=_int_option("dpi"), default=90,
                        help="resolution of the PNG figures, 10-1000 (default 90)")  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def main(argv=None):
    """Command-line entry point (``pymc-partition-demo``).

    Every argument (including the data file's existence and layout, and the output folder) is
    checked before PyMC is imported; argument errors exit with status 2.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    data_path = None
    if not args.simulate:
        try:  # --data, else $PMP_ARABIDOPSIS_CSV; never the file beside the clone, silently
            data_path = _datasets.arabidopsis_path(args.data, use_default=False)
            if data_path is not None:
                _load_data(data_path)
        except (FileNotFoundError, ValueError) as err:
            parser.error(str(err))
    out = Path(args.out).expanduser()
    if out.exists() and not out.is_dir():
        parser.error(f"--out {str(out)!r} exists and is not a folder.")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        parser.error(f"cannot create the output folder {str(out)!r}: {err}")
    try:
        run(data_path, out, draws=args.draws, chains=args.chains, cores=args.cores,
            random_seed=args.seed, progressbar=not args.no_progress, dpi=args.dpi)  # fmt: skip
    except (FileNotFoundError, ValueError) as err:
        print(f"pymc-partition-demo: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
