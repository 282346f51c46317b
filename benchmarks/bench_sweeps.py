"""Gibbs sweeps on many items: ``GibbsPartition`` against a hand-written numba sweep, same run.

Run from the repository root::

    python benchmarks/bench_sweeps.py [--quick] [--previous REV]

Data: a Gaussian mixture with 4 well separated clusters in the first two coordinates (standard
normal noise in every coordinate), one row per item; a Dirichlet-process prior (alpha = 1); every
chain starts at the simulated partition, so the number of clusters stays near 4.

Measured, per item and sweep (one sweep = every item's cluster drawn once from its full
conditional), each figure a ratio against a baseline timed in the same run, interleaved with it:

(a) 20,000 items with ``NormalInverseGamma`` (d = 2) and ``NormalInverseWishart`` (d = 2, 10):
    ``GibbsPartition.step`` (what ``pm.sample`` calls per draw: one sweep, the exact rebuild of
    the cluster state and the canonical relabelling) with the family's specialised predictive
    form, and with ``specialize=False`` (the compiled pytensor graph called per candidate, as
    before this change), against the hand-written, family-specialised sweep of
    ``benchmarks/reference_sweeps.py`` (target: ours / hand-written <= 2);
(b) linearity in the number of items for d = 2: 10^4, 10^5 and 10^6 items (``--quick``: up to
    10^5), time per item and sweep and its ratio to the hand-written sweep at the same size;
(c) with ``--previous REV`` (a git revision, e.g. the commit before this change), the package as
    it was at ``REV``, run in a subprocess on the same data (needs git and the repository).

Timings are the smallest of several interleaved repeats (the machine may be shared); the set-up
time of a step (compiling, or loading the compiled kernels from numba's cache, and checking the
form against the graph) is shown separately.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from revisions import export_tree

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

warnings.filterwarnings("ignore")
logging.getLogger("pymc").setLevel(logging.ERROR)

import pymc as pm  # noqa: E402
from reference_sweeps import nig_reference, niw_reference  # noqa: E402

import pymc_partition as pmp  # noqa: E402

CENTERS = np.array([[-6.0, -6.0], [-6.0, 6.0], [6.0, -6.0], [6.0, 6.0]])
NIG = dict(mu0=0.0, kappa0=0.1, alpha0=2.0, beta0=2.0)
ALPHA_DP = 1.0


def mixture(n, d, seed=0):
    """``(y (n, d), true labels)``: 4 clusters apart in the first two coordinates."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, n)
    y = rng.normal(0.0, 1.0, (n, d))
    y[:, :2] += CENTERS[truth]
    return y, pmp.canonicalize(truth)


def family(kind, d):
    if kind == "nig":
        return pmp.NormalInverseGamma(**NIG)
    return pmp.NormalInverseWishart(mu0=np.zeros(d), kappa0=0.1, nu0=d + 2.0, psi0=np.eye(d))


def reference(kind, y, labels):
    d = y.shape[1]
    if kind == "nig":
        return nig_reference(y, labels, NIG["mu0"], NIG["kappa0"], NIG["alpha0"], NIG["beta0"],
                             ALPHA_DP)  # fmt: skip
    return niw_reference(y, labels, np.zeros(d), 0.1, d + 2.0, np.eye(d), ALPHA_DP)


def gibbs_step(kind, y, specialize=True):
    """``(step, set-up seconds)``."""
    n, d = y.shape
    with pm.Model():
        z = pmp.Partition("z", n_items=n, prior=pmp.DirichletProcess(ALPHA_DP))
        pmp.MarginalLikelihood("y", partition=z, family=family(kind, d), observed=y)
        t0 = time.perf_counter()
        step = pmp.GibbsPartition([z], specialize=specialize)
    return step, time.perf_counter() - t0


def interleaved(timers, repeats):
    """Smallest time of each timer over ``repeats`` interleaved rounds (after one warm-up)."""
    for f in timers:
        f()
    best = [np.inf] * len(timers)
    for _ in range(repeats):
        for k, f in enumerate(timers):
            t0 = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def sweep_timers(kind, y, labels, with_graph):
    """Timers of the hand-written sweep, our step (specialised) and, optionally, the graph form."""
    ref = reference(kind, y, labels)
    out = {"ref": (ref.sweep, lambda: ref.n_clusters)}
    setup = {}
    variants = [("ours", True)] + ([("graph", False)] if with_graph else [])
    for name, specialize in variants:
        step, setup[name] = gibbs_step(kind, y, specialize)
        state = {"point": {"z": labels}, "C": 0}

        def run(step=step, state=state):
            state["point"], (st,) = step.step(state["point"])
            state["C"] = int(st["n_clusters"])

        out[name] = (run, lambda state=state: state["C"])
    return out, setup


def previous_version(rev, kind, n, d, repeats):
    """Seconds per sweep of ``GibbsPartition`` as it was at git revision ``rev`` (subprocess);
    ``rev=None``: this tree, timed the same way (a fresh chain from the same labels: the cost of
    a sweep grows with the clusters a chain has made, so only like with like compares)."""
    root = os.path.join(HERE, "..")
    with tempfile.TemporaryDirectory() as tmp:
        if rev is None:
            for pkg in ("pymc_partition", "arviz_regen"):
                shutil.copytree(os.path.join(root, pkg), os.path.join(tmp, pkg))
        else:
            export_tree(rev, tmp, ["pymc_partition", "arviz_regen"])
        code = f"""
import sys, time, json, warnings, logging
warnings.filterwarnings("ignore"); logging.getLogger("pymc").setLevel(logging.ERROR)
sys.path.insert(0, {tmp!r}); sys.path.insert(1, {HERE!r})
import numpy as np, pymc as pm, pymc_partition as pmp, arviz_regen  # the old packages, before
from bench_sweeps import mixture, family, ALPHA_DP  # this import puts today's tree first on sys.path
y, labels = mixture({n}, {d})
with pm.Model():
    z = pmp.Partition("z", n_items={n}, prior=pmp.DirichletProcess(ALPHA_DP))
    pmp.MarginalLikelihood("y", partition=z, family=family({kind!r}, {d}), observed=y)
    step = pmp.GibbsPartition([z])
p = {{"z": labels}}
p, _ = step.step(p)
best = np.inf
for _ in range({repeats}):
    t0 = time.perf_counter(); p, _ = step.step(p); best = min(best, time.perf_counter() - t0)
print(json.dumps(best))
"""
        res = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                             text=True, cwd=tmp)  # fmt: skip
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats; scaling up to 10^5 items")
    ap.add_argument("--previous", metavar="REV", default=None,
                    help="also time the package at this git revision (subprocess)")  # fmt: skip
    args = ap.parse_args(argv)
    q = args.quick
    import numba

    print(f"numba {numba.__version__}, pymc {pm.__version__}, cpus {os.cpu_count()}, "
          f"load avg {os.getloadavg()[0]:.2f}\n")  # fmt: skip

    # ------------------------------------------------------------------ (a) 20,000 items
    n = 20_000
    configs = [("nig", 2), ("niw", 2), ("niw", 10)]
    print(f"(a) Gibbs sweep on {n:,} items, per item (smallest of {3 if q else 7} interleaved "
          "repeats)")  # fmt: skip
    head = (f"{'family':<24}{'hand-written':>14}{'ours':>10}{'ours/hand':>11}{'graph':>10}"
            f"{'graph/hand':>12}{'graph/ours':>12}{'C':>4}  set-up ours, graph")  # fmt: skip
    print(head)
    for kind, d in configs:
        y, labels = mixture(n, d)
        timers, setup = sweep_timers(kind, y, labels, with_graph=True)
        names = list(timers)
        best = dict(zip(names, interleaved([timers[k][0] for k in names], 3 if q else 7)))
        per = {k: best[k] / n * 1e9 for k in names}
        label = f"{'NormalInverseGamma' if kind == 'nig' else 'NormalInverseWishart'} d={d}"
        ok = "OK" if per["ours"] / per["ref"] <= 2 else "MISSED"
        print(f"{label:<24}{per['ref']:>11.0f} ns{per['ours']:>7.0f} ns{per['ours'] / per['ref']:>9.2f}x"
              f"{per['graph']:>7.0f} ns{per['graph'] / per['ref']:>10.1f}x{per['graph'] / per['ours']:>10.1f}x"
              f"{timers['ours'][1]():>4}  {setup['ours']:.2f} s, {setup['graph']:.2f} s  {ok}")  # fmt: skip
        if args.previous:
            # interleaved, both as fresh chains in a subprocess
            now = prev = np.inf
            for _ in range(2):
                now = min(now, previous_version(None, kind, n, d, 3 if q else 5) / n * 1e9)
                prev = min(prev, previous_version(args.previous, kind, n, d, 3 if q else 5) / n * 1e9)
            print(f"{'':<24}fresh chains: this tree {now:.0f} ns per item, previous version "
                  f"({args.previous}) {prev:.0f} ns: {prev / now:.2f}x this tree")  # fmt: skip
    print("  ours = GibbsPartition.step with the specialised predictive form; graph = the same with specialize=False")
    print("  (one compiled-graph call per candidate); target ours/hand <= 2.\n")

    # ------------------------------------------------------------------ (b) linearity
    sizes = [10_000, 100_000] if q else [10_000, 100_000, 1_000_000]
    print("(b) Linearity in the number of items, d = 2, per item and sweep")
    print(f"{'family':<24}{'items':>10}{'hand-written':>14}{'ours':>10}{'ours/hand':>11}"
          f"{'ours vs 10^4':>14}{'C':>4}")  # fmt: skip
    for kind in ("nig", "niw"):
        base = None
        for size in sizes:
            y, labels = mixture(size, 2, seed=size)
            timers, _ = sweep_timers(kind, y, labels, with_graph=False)
            reps = 2 if size >= 1_000_000 else (3 if q else 5)
            t_ref, t_ours = interleaved([timers["ref"][0], timers["ours"][0]], reps)
            per_ref, per_ours = t_ref / size * 1e9, t_ours / size * 1e9
            base = base or per_ours
            label = "NormalInverseGamma" if kind == "nig" else "NormalInverseWishart"
            print(f"{label:<24}{size:>10,}{per_ref:>11.0f} ns{per_ours:>7.0f} ns"
                  f"{per_ours / per_ref:>9.2f}x{per_ours / base:>13.2f}x{timers['ours'][1]():>4}")  # fmt: skip
            del timers, y, labels


if __name__ == "__main__":
    main()
