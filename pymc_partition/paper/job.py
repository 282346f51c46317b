"""The main job: the paper's illustration end to end, printed and written to a folder.

:func:`run` fits the spike-and-slab hyperparameters by empirical Bayes, computes the exact
posterior under every reading of the paper's prior, samples the paper's model with collapsed
Gibbs and with the deliberately badly mixing split-merge, prints the convergence tables and the
comparison with the exact posterior and with the paper, and writes figures, tables and
InferenceData. ``pymc-partition-demo`` (:mod:`pymc_partition.paper.cli`) runs it.
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from pathlib import Path

import numpy as np

from . import constants

__all__ = ["run", "check_run_args", "check_output_folder", "INT_BOUNDS", "OUTPUT_FILES"]

#: Bounds of run()'s integer arguments (and the command line's): name -> (minimum, maximum or None)
INT_BOUNDS = {
    "draws": (100, None),  # the diagnostics need some tours
    "chains": (1, None),
    "cores": (1, None),
    "random_seed": (0, None),  # numpy seeds are non-negative
    "dpi": (10, 1000),
}

#: Every file the job writes into its output folder (``paper_comparison.csv``: real data only)
OUTPUT_FILES = (
    "prior_readings.csv", "idata_gibbs.nc", "idata_split_merge.nc", "convergence_gibbs.csv",
    "convergence_split_merge.csv", "comparison.csv", "paper_comparison.csv",
    "figure1_exact_posterior.png", "figure1_coclustering_matrix.png", "figure2_convergence.png",
)  # fmt: skip

_PD_OPTIONS = ("display.width", 200, "display.max_columns", 30, "display.float_format", "{:.4g}".format)


def _log(msg=""):
    print(msg, flush=True)


def check_int(name, value):
    """``value`` as an int within :data:`INT_BOUNDS` ``[name]``, else a ValueError naming it."""
    low, high = INT_BOUNDS[name]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"`{name}` must be an integer, got {value!r}.")
    if value < low or (high is not None and value > high):
        raise ValueError(f"`{name}` must be {bound_text(name)}, got {value}.")
    return int(value)


def bound_text(name):
    low, high = INT_BOUNDS[name]
    return f"at least {low}" if high is None else f"between {low} and {high}"


def check_output_folder(out, overwrite):
    """Return the job's files already in ``out``; a ValueError naming them unless ``overwrite``.

    A folder given twice must not lose a previous run's results (draws that took minutes, figures
    a user edited) without being asked: the check runs before any work.
    """
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise ValueError(f"the output folder {str(out)!r} exists and is not a folder.")
    present = [name for name in OUTPUT_FILES if (out / name).exists()]
    if present and not overwrite:
        raise ValueError(
            f"the output folder {str(out)!r} already holds {', '.join(present)} from an earlier "
            "run: choose another folder, or pass --force (overwrite=True to run()) to replace them."
        )
    return present


def check_run_args(draws, chains, cores, random_seed, dpi, k):
    """Validate :func:`run`'s arguments before any heavy work; returns them normalized."""
    draws, chains, cores, random_seed, dpi = (
        check_int(n, v) for n, v in
        (("draws", draws), ("chains", chains), ("cores", cores), ("random_seed", random_seed), ("dpi", dpi))
    )  # fmt: skip
    try:
        k = tuple(k)
    except TypeError:
        raise ValueError(f"`k` must be a sequence of positive integers, got {k!r}.") from None
    if not k or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1 for x in k):
        raise ValueError(f"`k` must be a non-empty sequence of positive integers, got {k!r}.")
    return draws, chains, cores, random_seed, dpi, tuple(int(x) for x in k)


@contextlib.contextmanager
def _quiet_pymc():
    """PyMC's INFO messages ("Sequential sampling ...") off for the job, restored afterwards."""
    import pymc  # noqa: F401  (its import sets the logger's level: set ours after it)

    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def run(data_path=None, out="output", draws=constants.DRAWS, chains=constants.CHAINS, cores=1,
        k=constants.K_VALUES, random_seed=constants.SEED, progressbar=True, dpi=90,
        overwrite=False):  # fmt: skip
    """Run the main job end to end and return a dict of results.

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
    overwrite : bool
        Replace the files of an earlier run in ``out`` (:data:`OUTPUT_FILES`); without it such a
        folder is refused before any work, with a ValueError naming the files.

    Returns
    -------
    dict with ``data``, ``eb``, ``exact`` (under the paper's prior), ``readings`` (MAP
    probability and top-10 mass under each reading of the prior), ``idata`` (dict by sampler),
    ``tables`` (the :func:`arviz_regen.regen_summary` table of each sampler), ``diagnostics``
    (:func:`~pymc_partition.paper.workflow.diagnostics_table`), ``closing`` (the comparison
    with the paper, real data only), ``seconds`` and ``files`` (paths written).
    """
    from ..datasets import load_arabidopsis

    draws, chains, cores, random_seed, dpi, k = check_run_args(draws, chains, cores, random_seed, dpi, k)
    present = check_output_folder(out, overwrite)
    # before any heavy import: a bad file fails at once
    data = load_arabidopsis(data_path) if data_path is not None else None
    from ..compat.pytensor import generated_source_dir

    with _quiet_pymc(), generated_source_dir():  # PyMC's compilations too: none in the system temp dir
        return _run(data, data_path, Path(out).expanduser(), draws, chains, cores, k, random_seed,
                    progressbar, dpi, present)  # fmt: skip


def _run(data, data_path, out, draws, chains, cores, k, random_seed, progressbar, dpi, present=()):
    import pandas as pd
    from matplotlib.figure import Figure

    import arviz_regen
    import pymc_partition as pmp

    from . import comparison, figures, workflow
    from .readings import PAPER_READING

    out.mkdir(parents=True, exist_ok=True)
    files = []
    real = data is not None
    if not real and "paper_comparison.csv" in present:
        # replaced by nothing on simulated data: a stale comparison must not sit beside new results
        (out / "paper_comparison.csv").unlink()

    def write(table, name):
        path = out / name
        table.to_csv(path)
        files.append(path)

    # 1. data
    if real:
        _log(f"Data: {data_path} ({data.n_rows} rows, {data.n_items} items, {data.n_vars} variables)")
    else:
        data = workflow.simulate_data(random_seed)
        _log(
            f"Data: simulated from the paper's fitted model ({data.n_rows} rows, {data.n_items} "
            f"items, {data.n_vars} variables, {int(data.true_labels.max()) + 1} true clusters); "
            f"pass --data or set {pmp.datasets.ARABIDOPSIS_ENV} for the Arabidopsis CSV"
        )

    # 2. empirical Bayes
    t0 = time.perf_counter()
    eb = pmp.fit_spike_slab(data.values, data.item_index)
    _log(f"\n== Empirical Bayes fit ({time.perf_counter() - t0:.1f} s): estimate (std. error)")
    eb_comparison = comparison.compare_eb(eb) if real else None
    if real:
        _log(str(eb_comparison))
    else:
        _log("   against the values the data were simulated from (the paper's table is for the real data)")
        _log(str(comparison.compare_with_truth(eb, constants.EB_HYPERPARAMETERS)))

    # 3. exact posterior under each reading of the prior
    t0 = time.perf_counter()
    readings, exacts = workflow.exact_under_readings(data, eb.estimates)
    exact = exacts[PAPER_READING]
    readings_table = comparison.readings_table(readings, paper=real)
    write(readings_table, "prior_readings.csv")
    _log(
        f"\n== Exact posterior over all B({data.n_items}) = {exact.n_states:,} partitions, under each "
        f"reading of the paper's prior ({time.perf_counter() - t0:.1f} s)"
    )
    _log(str(readings_table))
    labels, probs = exact.top(constants.TOP_K)
    _log(f"   The model (samplers, figures) uses the paper's prior: {PAPER_READING}.")
    _log(f"   MAP probability {probs[0]:.3f}, top-{constants.TOP_K} mass {probs.sum():.3f}")
    names = np.asarray(data.item_names)
    for c in range(int(labels[0].max()) + 1):
        _log(f"   MAP cluster {c + 1}: {', '.join(names[labels[0] == c])}")
    if data.true_labels is not None:
        same = bool(np.array_equal(pmp.canonicalize(data.true_labels), labels[0]))
        _log(f"   MAP partition {'equals' if same else 'differs from'} the simulated partition")

    # 4. two samplers
    _log(f"\n== Sampling: {chains} chains x {draws:,} draws with GibbsPartition, then with "
         f"SplitMerge.badly_mixing() {pmp.SplitMerge.BADLY_MIXING}")  # fmt: skip
    model, z = workflow.build_model(data, eb.estimates)
    idatas, seconds = workflow.sample_both(
        model, z, draws=draws, chains=chains, cores=cores, random_seed=random_seed,
        progressbar=progressbar, item_names=data.item_names,
    )  # fmt: skip
    for name, idata in idatas.items():
        _log(f"   {workflow.SAMPLER_LABELS[name]}: {seconds[name]:.1f} s sampling (compilation excluded: "
             "each sampler first ran 5 untimed draws)")  # fmt: skip
        path = out / f"idata_{name}.nc"
        idata.to_netcdf(path)
        files.append(path)

    # 5. convergence tables
    tables, diags = {}, {}
    for name, idata in idatas.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tables[name] = table = arviz_regen.regen_summary(idata, var_names="z", k=list(k))
        write(table, f"convergence_{name}.csv")
        with pd.option_context(*_PD_OPTIONS):
            _log(f"\n== Convergence table: {workflow.SAMPLER_LABELS[name]} (regen_summary)")
            _log(table.to_string())
        _log(f"   {table.attrs['verdict']}")
        for msg in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, UserWarning)):
            _log(f"   note: {msg}")
        diags[name] = workflow.convergence_diagnostics(idata, exact.coclustering, k=k)
    summary = workflow.diagnostics_table(diags, seconds=seconds, idatas=idatas)
    write(summary, "comparison.csv")
    with pd.option_context(*_PD_OPTIONS):
        _log("\n== Against the exact posterior (Figure 2 at the last draw; p-values: p_value_all, one "
             "verdict for all chains)")  # fmt: skip
        _log(summary.T.to_string())

    # 6. against the paper (real data only: simulated data have no paper to compare with)
    closing = None
    if real:
        closing = comparison.closing_table(eb_comparison=eb_comparison, readings=readings, diagnostics=summary)
        write(closing, "paper_comparison.csv")
        _log("\n== Against the paper (section 4)")
        _log(str(closing))

    # 7. figures, drawn without pyplot (no global matplotlib state, no window)
    figs = {
        "figure1_exact_posterior.png": figures.figure1(exact, data.item_names, fig=Figure(), dpi=dpi),
        "figure1_coclustering_matrix.png": figures.coclustering_matrix(exact, data.item_names, fig=Figure(), dpi=dpi),
        "figure2_convergence.png": figures.figure2(diags, fig=Figure(), dpi=dpi),
    }
    for fname, fig in figs.items():
        path = out / fname
        fig.savefig(path, dpi=dpi)
        files.append(path)
    _log(f"\nFigures, tables and InferenceData written to {out.resolve()}:")
    for f in files:
        _log(f"   {f.name}")
    return {
        "data": data, "eb": eb, "exact": exact, "readings": readings, "idata": idatas, "tables": tables,
        "diagnostics": summary, "closing": closing, "seconds": seconds, "files": files,
    }  # fmt: skip
