"""Point estimates, credible balls, co-clustering and consensus at 2,000 items (issue 11, part 3).

Run: ``python benchmarks/bench_point_estimate.py`` (about 3 minutes on 2 cores). Draws of a
4-cluster posterior with noise: 2,000 items in 4 equal clusters, 4 chains × 1,000 draws (pooled:
4,000 draws), each item reassigned to one of 5 labels with probability 0.02 in each draw, so
every draw is a distinct partition (the hardest case for anything that works per state).

Each case runs in a fresh process (``--case NAME``), which builds the draws, warms the compiled
kernels up on a small problem (numba compiles once and caches on disk: the warm-up time is the
first-run cost in a fresh process), then times the case once and reports the peak resident
memory of the whole process (``ru_maxrss``: Python, libraries, the draws and the case) and the
peak of numpy allocations during the case (tracemalloc). Targets (issue 11): point_estimate
under 30 s; everything at 2,000 items under 2 GB.

A second set of draws mimics a sampler (each draw moves 5 random items of the previous one: the
co-clustering counts follow only the pairs that change). Baselines measured in the same run:
the previous version's co-clustering kernel (its O(n²) loop over all pairs per state, copied
below; on its own, without the batch sums around it) on the same draws; a naive point estimate (the
best of 100 posterior draws under the same loss, what mcclust-style "draws" search does) for
speed and loss; co-clustering of 2,000 items for the 20,000-item runs. The previous version's
memory for cases it could not run is computed (its arrays of pairs × states, pairs × slots).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

if "--previous" not in sys.argv:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba  # noqa: E402
import numpy as np  # noqa: E402
from revisions import export_tree  # noqa: E402

N_ITEMS, N_CHAIN, N_DRAW, N_CLUSTERS, NOISE = 2000, 4, 1000, 4, 0.02
BIG_ITEMS, BIG_DRAWS, SUBSET = 20_000, 1000, 2000
GIB = 2**30
#: the last commit before this work (issue 11, part 3): its arviz_regen is "the previous version"
PREVIOUS_COMMIT = "9025d63"
ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS, TARGET_BYTES = 30.0, 2 * GIB


def simulate(n_items=N_ITEMS, n_chain=N_CHAIN, n_draw=N_DRAW, seed=2026):
    """Canonical labels (chain, draw, item) near a 4-cluster partition, and that partition."""
    from arviz_regen.base.state import canonicalize

    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(N_CLUSTERS), -(-n_items // N_CLUSTERS))[:n_items]
    rng.shuffle(truth)
    z = np.empty((n_chain, n_draw, n_items), dtype=np.int64)
    for c in range(n_chain):  # chain by chain: small temporaries
        block = np.broadcast_to(truth, (n_draw, n_items)).copy()
        move = rng.random((n_draw, n_items)) < NOISE
        block[move] = rng.integers(0, N_CLUSTERS + 1, size=int(move.sum()))
        z[c] = canonicalize(block)
    return z, canonicalize(truth)


def simulate_sticky(n_items=N_ITEMS, n_chain=N_CHAIN, n_draw=N_DRAW, moves=5, seed=7):
    """A sampler-like chain: from the 4-cluster partition, each draw reassigns ``moves`` random
    items (half of them back to their cluster), so consecutive draws differ in a few items."""
    from arviz_regen.base.state import canonicalize

    _, truth = simulate(n_items, 1, 1)
    rng = np.random.default_rng(seed)
    z = np.empty((n_chain, n_draw, n_items), dtype=np.int64)
    for c in range(n_chain):
        cur = truth.copy()
        for t in range(n_draw):
            i = rng.integers(0, n_items, moves)
            cur[i] = np.where(rng.random(moves) < 0.5, truth[i], rng.integers(0, N_CLUSTERS + 1, moves))
            z[c, t] = cur
        z[c] = canonicalize(z[c])
    return z, truth


@numba.njit(cache=True)
def _previous_pair_sums(ulabels):
    """The previous version's co-clustering kernel: every pair tested in every state (O(n²))."""
    n = ulabels.shape[1]
    acc = np.zeros(n * (n - 1) // 2)
    for u in range(ulabels.shape[0]):
        p = 0
        for i in range(n):
            li = ulabels[u, i]
            for j in range(i + 1, n):
                if ulabels[u, j] == li:
                    acc[p] += 1.0
                p += 1
    return acc


def _rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_case(name):
    """Run one case in this (fresh) process; print one JSON line with the measurements."""
    import matplotlib

    matplotlib.use("Agg")
    warnings.simplefilter("ignore")
    import arviz_regen
    from arviz_regen.xr.draws import load_partition

    if name.startswith("previous_version"):  # the previous package has none of the new functions
        pair_frequencies = mean_loss = parse_loss = state_weights = None
    else:
        from arviz_regen.base.pair_kernels import pair_frequencies
        from arviz_regen.base.partition_loss import mean_loss, parse_loss
        from arviz_regen.estimates.point_estimate import state_weights

    big = name.startswith("big")
    if big:
        z, truth = simulate(BIG_ITEMS, 1, BIG_DRAWS)
    elif name.endswith("sticky"):
        z, truth = simulate_sticky()
    else:
        z, truth = simulate()
    small = z[:, :50, :60]
    est_vi = None
    if name in ("credible_ball", "plot_point_estimate"):
        est_vi = arviz_regen.point_estimate(z, loss="VI", random_seed=1)

    cases = {
        "data": (lambda: None, lambda: None),
        "previous_pair_sums": (
            lambda: _previous_pair_sums(load_partition(small).labels),
            lambda: _previous_pair_sums(load_partition(z).labels),
        ),
        "pair_frequencies": (
            lambda: pair_frequencies(load_partition(small).labels),
            lambda: pair_frequencies(load_partition(z).labels),
        ),
        "point_estimate_VI": (
            lambda: arviz_regen.point_estimate(small, loss="VI", random_seed=0, n_runs=2),
            lambda: arviz_regen.point_estimate(z, loss="VI", random_seed=1),
        ),
        "point_estimate_binder": (
            lambda: arviz_regen.point_estimate(small, loss="binder", random_seed=0, n_runs=2),
            lambda: arviz_regen.point_estimate(z, loss="binder", random_seed=1),
        ),
        "best_of_100_draws_VI": (
            lambda: None,
            lambda: _best_of_draws(z, parse_loss("VI"), load_partition, state_weights, mean_loss),
        ),
        "credible_ball": (
            lambda: arviz_regen.credible_ball(small, small[0, 0]),
            lambda: arviz_regen.credible_ball(z, est_vi),
        ),
        "coclustering": (
            lambda: arviz_regen.coclustering(small),
            lambda: arviz_regen.coclustering(z),
        ),
        "previous_version_coclustering": (
            lambda: arviz_regen.coclustering(small),
            lambda: arviz_regen.coclustering(z),
        ),
        "previous_pair_sums_sticky": (
            lambda: _previous_pair_sums(load_partition(small).labels),
            lambda: _previous_pair_sums(load_partition(z).labels),
        ),
        "coclustering_sticky": (
            lambda: arviz_regen.coclustering(small),
            lambda: arviz_regen.coclustering(z),
        ),
        "consensus": (
            lambda: arviz_regen.consensus(small),
            lambda: arviz_regen.consensus(z),
        ),
        "plot_coclustering": (
            lambda: arviz_regen.plot_coclustering(small),
            lambda: arviz_regen.plot_coclustering(z).figure.savefig("/dev/null", format="png"),
        ),
        "plot_point_estimate": (
            lambda: arviz_regen.plot_point_estimate(small, random_seed=0, n_runs=2),
            lambda: arviz_regen.plot_point_estimate(z, estimate=est_vi).figure.savefig("/dev/null", format="png"),
        ),
        "big_coclustering_subset": (
            lambda: arviz_regen.coclustering(small),
            lambda: arviz_regen.coclustering(z, items=np.arange(0, BIG_ITEMS, BIG_ITEMS // SUBSET)),
        ),
        "big_point_estimate_VI": (
            lambda: arviz_regen.point_estimate(small, loss="VI", random_seed=0, n_runs=2),
            lambda: arviz_regen.point_estimate(z, loss="VI", random_seed=1, n_runs=4),
        ),
    }
    warm, main = cases[name]
    t0 = time.perf_counter()
    warm()
    warm_s = time.perf_counter() - t0
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    out = main()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    _, numpy_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    record = {
        "package": str(Path(arviz_regen.__file__).parent),
        "seconds": seconds,
        "cpu": cpu,
        "warmup": warm_s,
        "rss": _rss_bytes(),
        "numpy_peak": numpy_peak,
    }
    if name.startswith("point_estimate") or name.startswith("big_point"):
        record.update(
            loss=float(out.expected_loss),
            se=float(out.expected_loss_se),
            n_clusters=int(out.n_clusters),
            recovered=bool(np.array_equal(out.labels.values, truth)),
            runs_at_best=int(out.attrs["runs_at_best"]),
        )
    if name.startswith("best_of"):
        record.update(loss=float(out))
    if name == "credible_ball":
        record.update(radius=float(out.radius), bounds=out.bound_n_clusters.values.tolist())
    if name == "consensus":
        record.update(method=out.method, recovered=bool(np.array_equal(out.labels, truth)))
    print(json.dumps(record))


def _best_of_draws(z, spec, load_partition, state_weights, mean_loss):
    """Naive baseline: the best of 100 random draws under the same Monte Carlo expected loss."""
    pdraws = load_partition(z)
    pick = np.random.default_rng(0).choice(pdraws.n_states, 100, replace=False)
    losses = mean_loss(pdraws.labels[pick], pdraws.labels, state_weights(pdraws), spec)
    return losses.min()


def extract_previous(tmp):
    """The previous version's arviz_regen (git archive of PREVIOUS_COMMIT) in ``tmp``, or None."""
    try:
        export_tree(PREVIOUS_COMMIT, tmp, ["arviz_regen"])
    except (OSError, subprocess.CalledProcessError):
        return None
    return tmp


def measure(name, previous=None):
    cmd = [sys.executable, __file__, "--case", name]
    env = None
    if name.startswith("previous_version"):
        if previous is None:
            return {"error": f"previous version ({PREVIOUS_COMMIT}) not available: not a git checkout?"}
        import os

        cmd.append("--previous")
        env = dict(os.environ, PYTHONPATH=previous + os.pathsep + str(ROOT / "benchmarks"))
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(lines[-1])


def _mb(x):
    return f"{x / 2**20:8.0f}"


def main():
    n_pairs = N_ITEMS * (N_ITEMS - 1) // 2
    print(
        f"draws: {N_ITEMS:,} items x {N_CHAIN} chains x {N_DRAW:,} draws ({N_CHAIN * N_DRAW:,} distinct "
        f"partitions), {N_CLUSTERS} clusters, noise {NOISE}; each case in a fresh process\n"
    )
    names = [
        "data",
        "previous_pair_sums",
        "pair_frequencies",
        "point_estimate_VI",
        "point_estimate_binder",
        "best_of_100_draws_VI",
        "credible_ball",
        "coclustering",
        "previous_version_coclustering",
        "previous_pair_sums_sticky",
        "coclustering_sticky",
        "consensus",
        "plot_coclustering",
        "plot_point_estimate",
        "big_coclustering_subset",
        "big_point_estimate_VI",
    ]
    import tempfile

    tmp = tempfile.TemporaryDirectory()
    previous = extract_previous(tmp.name)
    res = {}
    print(f"{'case':30s} {'seconds':>8s} {'CPU s':>7s} {'warm-up':>8s} {'peak RSS MB':>12s} {'numpy MB':>9s}  notes")
    for name in names:
        r = measure(name, previous)
        res[name] = r
        if "error" in r:
            print(f"{name:30s} FAILED: {r['error']}")
            continue
        notes = []
        for key in ("loss", "se", "n_clusters", "recovered", "runs_at_best", "radius", "bounds", "method"):
            if key in r:
                val = r[key]
                notes.append(f"{key}={val:.4g}" if isinstance(val, float) else f"{key}={val}")
        print(
            f"{name:30s} {r['seconds']:8.2f} {r['cpu']:7.2f} {r['warmup']:8.2f} {_mb(r['rss']):>12s} "
            f"{_mb(r['numpy_peak']):>9s}  {' '.join(notes)}"
        )
    print()
    ok = True

    def ratio(a, b):
        ra, rb = res.get(a, {}), res.get(b, {})
        if "seconds" not in ra or "seconds" not in rb or rb["seconds"] <= 0:
            return float("nan")
        return ra["seconds"] / rb["seconds"]

    print("ratios (same run):")
    print(
        "  co-clustering pair sums, previous kernel / new kernel: "
        f"{ratio('previous_pair_sums', 'pair_frequencies'):6.1f}x"
    )
    print(
        f"  coclustering, previous version ({PREVIOUS_COMMIT}) / now: "
        f"{ratio('previous_version_coclustering', 'coclustering'):6.1f}x"
    )
    if "package" in res.get("previous_version_coclustering", {}):
        print(f"  (previous version imported from {res['previous_version_coclustering']['package']})")
    if "rss" in res.get("previous_version_coclustering", {}) and "rss" in res.get("coclustering", {}):
        print(
            "  coclustering peak RSS, previous version / now: "
            f"{res['previous_version_coclustering']['rss'] / res['coclustering']['rss']:6.2f}"
        )
    print(
        "  sticky chain (5 items move per draw): previous pair sums / whole coclustering: "
        f"{ratio('previous_pair_sums_sticky', 'coclustering_sticky'):6.1f}x"
    )
    for name in ("point_estimate_VI", "point_estimate_binder", "credible_ball", "coclustering", "consensus"):
        print(f"  {name:24s} / co-clustering frequencies: {ratio(name, 'pair_frequencies'):6.2f}")
    if "loss" in res.get("point_estimate_VI", {}) and "loss" in res.get("best_of_100_draws_VI", {}):
        a, b = res["point_estimate_VI"], res["best_of_100_draws_VI"]
        print(
            f"  VI expected loss, SALSO / best of 100 draws: {a['loss'] / b['loss']:.3f} "
            f"(time ratio {ratio('point_estimate_VI', 'best_of_100_draws_VI'):.2f})"
        )
    print(
        f"  20,000 items ({BIG_DRAWS} draws), co-clustering of {SUBSET:,} of them / 2,000 items x "
        f"{N_CHAIN * N_DRAW} draws: {ratio('big_coclustering_subset', 'coclustering'):.2f}"
    )
    # the previous version's arrays, for the cases it could not run
    prev_consensus = 817 * n_pairs * 8  # the run: binder_loss of 817 states at once
    prev_visited_here = N_CHAIN * N_DRAW * n_pairs * 8
    big_pairs = BIG_ITEMS * (BIG_ITEMS - 1) // 2
    prev_big = (6 * big_pairs + 3 * BIG_ITEMS**2) * 8  # BM kernel C, prev×2, sbb×2, tot; rho, se, cv
    print("\nprevious version, computed where it could not run:")
    print(
        f"  consensus(method='visited') here: {prev_visited_here / GIB:.1f} GiB "
        f"(issue: 817 states asked {prev_consensus / GIB:.1f} GiB)"
    )
    print(
        f"  coclustering of all {BIG_ITEMS:,} items: {prev_big / GIB:.1f} GiB "
        "(now: items= subset, or a clear MemoryError)"
    )
    print("\ntargets:")
    for name in names:
        r = res.get(name, {})
        if "rss" not in r or name.startswith("big") or name.startswith("previous"):
            continue
        fine = r["rss"] < TARGET_BYTES
        ok &= fine
        print(f"  {name:30s} peak RSS {r['rss'] / GIB:5.2f} GiB < 2 GiB: {'yes' if fine else 'NO'}")
    for name in ("point_estimate_VI", "point_estimate_binder"):
        r = res.get(name, {})
        fine = "seconds" in r and r["seconds"] < TARGET_SECONDS
        ok &= fine
        print(
            f"  {name:30s} {r.get('seconds', float('nan')):6.1f} s < {TARGET_SECONDS:.0f} s: {'yes' if fine else 'NO'}"
        )
    r = res.get("big_coclustering_subset", {})
    if "rss" in r:
        print(f"  20,000-item co-clustering (subset of {SUBSET:,}) peak RSS {r['rss'] / GIB:.2f} GiB")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", help="run one case in this process (internal)")
    parser.add_argument("--previous", action="store_true", help="import the previous version (internal)")
    args = parser.parse_args()
    if args.case:
        run_case(args.case)
    else:
        sys.exit(main())
