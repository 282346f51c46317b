"""Benchmark of arviz_regen on 4 chains × 50,000 draws × 14 items (issue 4 targets).

Run: ``python benchmarks/bench_regen.py [--quick] [--previous REV]``. Synthetic canonical labels
come from a sticky reversible Metropolis chain over 300 random partitions of 14 items (Zipf
probabilities, top state ≈ 0.4 like the paper's MAP). Each function is timed after a warm-up call
(numba compilation is cached on disk and not part of the steady-state cost) as the best of 3 runs,
and compared with ``az.rhat`` of ``partition_logp`` on the same InferenceData.

Targets: hotelling_rs k=[2,3,5,10] < 1 s (bootstrap and chi2); the paper's look-ahead trace < 3 s; coclustering with
standard errors < 2 s.

``--quick``: 10,000 draws per chain and the best of 2 (the targets are for 50,000 draws: not checked).
``--previous REV``: also the package at git revision ``REV`` against this tree, each in a fresh
subprocess importing its own copy (``git archive``; this tree copied the same way), on the same
draws, alternated twice (each tree first once); per function the CPU seconds (best of the runs,
after a warm-up call) and the ratio previous / this tree, over the two alternations.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
from revisions import export_tree  # noqa: E402

import arviz_regen  # noqa: E402
from arviz_regen.testing import make_idata, metropolis_chain, random_partitions, zipf_probs  # noqa: E402

TARGETS = {
    "hotelling_rs k=[2,3,5,10]": 1.0,
    "hotelling_rs k=[2,3,5,10] chi2": 1.0,
    "hotelling_rs cumulative lookahead": 3.0,
    "coclustering + se": 2.0,
}


def build(n_chain=4, n_draw=50_000, n_items=14, n_states=300, seed=20190101):
    rng = np.random.default_rng(seed)
    states = random_partitions(n_states, n_items, rng)
    probs = zipf_probs(n_states, 1.6)
    index = metropolis_chain(probs, n_chain, n_draw, rng, stay=0.5, max_step=5)
    return make_idata(states, index, np.log(probs), logp_shift=-1234.5)


def best_of(fn, repeat=3, clock=time.perf_counter):
    fn()  # warm-up: numba compilation / caches
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def cases(idata):
    """The timed calls on ``idata``, by name (the arviz_regen imported, whichever tree it is from)."""
    return {
        "az.rhat (partition_logp)": lambda: az.rhat(idata.sample_stats["partition_logp"]),
        "az.rhat (labels z)": lambda: az.rhat(idata, var_names="z"),
        "hotelling_rs k=[2,3,5,10]": lambda: arviz_regen.hotelling_rs(idata, k=[2, 3, 5, 10]),
        "hotelling_rs k=[2,3,5,10] chi2": lambda: arviz_regen.hotelling_rs(idata, k=[2, 3, 5, 10], method="chi2"),
        "hotelling_rs cumulative lookahead": lambda: arviz_regen.hotelling_rs(
            idata, k=[2, 3, 5, 10], cumulative="lookahead"
        ),
        # no look-ahead: the full diagnostic (bootstrap included) recomputed at 20 draws
        "hotelling_rs cumulative (20 pts)": lambda: arviz_regen.hotelling_rs(idata, k=[2, 3, 5, 10], cumulative=True),
        "coclustering + se": lambda: arviz_regen.coclustering(idata),
        "coclustering cumulative (100 pts)": lambda: arviz_regen.coclustering(idata, cumulative=True),
        "regen_summary": lambda: arviz_regen.regen_summary(idata),
    }


def other_tree(rev, arrays, repeat):
    """CPU seconds per case of the package at git revision ``rev`` (``None``: this tree), in a subprocess.

    The draws (``arrays``: an ``.npz`` of states, index, log probabilities) are this run's, so both
    trees time the same data; each tree is a fresh copy, compiling its kernels in the warm-up call.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.join(here, "..")
    with tempfile.TemporaryDirectory() as tmp:
        if rev is None:
            shutil.copytree(os.path.join(root, "arviz_regen"), os.path.join(tmp, "arviz_regen"),
                            ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
        else:
            export_tree(rev, tmp, ["arviz_regen"])
        code = f"""
import sys, json, time, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, {tmp!r}); sys.path.insert(1, {here!r})
import numpy as np, arviz_regen  # the package of that tree
from arviz_regen.testing import make_idata
from bench_regen import best_of, cases  # this import puts today's tree on sys.path, after the package is loaded
a = np.load({arrays!r})
idata = make_idata(a["states"], a["index"], a["logp"], logp_shift=-1234.5)
print(json.dumps({{name: best_of(fn, {repeat}, time.process_time) for name, fn in cases(idata).items()}}))
"""
        res = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=tmp)
    return json.loads(res.stdout.strip().splitlines()[-1])


def compare(rev, n_draw, repeat, alternations=2):
    """Print, per case, CPU seconds of this tree and of ``rev`` and their ratio over ``alternations`` runs."""
    rng = np.random.default_rng(20190101)
    states = random_partitions(300, 14, rng)
    probs = zipf_probs(300, 1.6)
    index = metropolis_chain(probs, 4, n_draw, rng, stay=0.5, max_step=5)
    with tempfile.TemporaryDirectory() as tmp:
        arrays = os.path.join(tmp, "draws.npz")
        np.savez(arrays, states=states, index=index, logp=np.log(probs))
        runs = []
        for a in range(alternations):  # each tree first in every other alternation
            first, second = (None, rev) if a % 2 == 0 else (rev, None)
            times = {first: other_tree(first, arrays, repeat), second: other_tree(second, arrays, repeat)}
            runs.append((times[None], times[rev]))
    print(f"\n--previous {rev}: CPU seconds (best of {repeat} after a warm-up), {alternations} alternations")
    print(f"{'function':36s} {'this tree':>16s} {'previous':>16s} {'previous / this':>18s}")
    for name in runs[0][0]:
        now = [r[0][name] for r in runs]
        prev = [r[1].get(name, np.nan) for r in runs]
        ratio = [p / n for p, n in zip(prev, now)]
        print(f"{name:36s} {min(now):7.3f}-{max(now):<8.3f} {min(prev):7.3f}-{max(prev):<8.3f} "
              f"{min(ratio):8.2f}-{max(ratio):<5.2f}x")  # fmt: skip


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="10,000 draws per chain, best of 2 (targets not checked)")
    ap.add_argument("--previous", metavar="REV", default=None,
                    help="also time the package at this git revision against this tree (subprocesses)")  # fmt: skip
    args = ap.parse_args(argv)
    n_draw, repeat = (10_000, 2) if args.quick else (50_000, 3)
    t0 = time.perf_counter()
    idata = build(n_draw=n_draw)
    print(f"data: 4 chains x {n_draw:,} draws x 14 items, built in {time.perf_counter() - t0:.1f} s")
    warnings.simplefilter("ignore")
    results = {name: best_of(fn, repeat) for name, fn in cases(idata).items()}
    ref = results["az.rhat (partition_logp)"]
    print(f"{'function':36s} {'seconds':>9s} {'x az.rhat':>10s} {'target':>8s}")
    ok = True
    for name, sec in results.items():
        target = None if args.quick else TARGETS.get(name)
        flag = ""
        if target is not None:
            flag = f"< {target:.0f} s " + ("ok" if sec < target else "MISSED")
            ok &= sec < target
        print(f"{name:36s} {sec:9.3f} {sec / ref:10.1f}  {flag}")
    if args.previous:
        compare(args.previous, n_draw, repeat)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
