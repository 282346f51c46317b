"""Benchmark of ``pmp.exact_posterior`` with baselines measured in the same run.

Run from the repository root::

    python benchmarks/bench_exact.py [--data path/to/arabidopsis_messerli2007.csv]
                                     [--sizes 16 18 20] [--no-map-large]

The Arabidopsis problem (14 items, 55 rows, 43 metabolites; the paper's empirical-Bayes
hyperparameters, uniform multinomial-Dirichlet prior) is read from ``--data``, else from
``$PMP_ARABIDOPSIS_CSV``, else from ``../shared/data/arabidopsis_messerli2007.csv`` beside the
clone (``pymc_partition.datasets.arabidopsis_path``); if none exists it is simulated from the
fitted spike-and-slab model with the same shape. Larger problems (``--sizes``) are simulated.

Timed (after a warm-up that compiles the numba kernels and the family's pytensor function):

- block weights: ``w[B] = log_h[|B|] + log m(B)`` for all 2^n subsets (batched pytensor calls);
- log Z + co-clustering + P(C): the O(3^n) subset dynamic program;
- full enumeration: all B(n) states scored, top-k kept (``top(10)`` on a fresh object);
- MAP: max-product dynamic program.

Baselines (extrapolated to all B(14) states from a timed sample, since running them over all
1.9e8 states would take hours):

- per-state: ``spec.log_posterior`` on one state at a time (what a user writes with the
  package's reference scorer: one family call per state);
- batched numpy: states scored 100,000 at a time (one-hot cluster sums, one family call for
  all clusters of the batch), the best one can do with numpy without the subset structure.

Target (issue): all partitions of the 14 items in < 5 s on 2 cores; log Z and co-clustering
in < 1 s.
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import sys
import time
import warnings

import numba
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pymc as pm  # noqa: E402

import pymc_partition as pmp  # noqa: E402
from pymc_partition.datasets import arabidopsis_path  # noqa: E402
from pymc_partition.exact import block_log_weights, exact_posterior  # noqa: E402
from pymc_partition.model_spec import partition_spec  # noqa: E402
from pymc_partition.paper import constants as paper  # noqa: E402
from pymc_partition.state import bell_number  # noqa: E402

HYPER = paper.EB_HYPERPARAMETERS
PAPER_MAP_PROB, PAPER_TOP10 = paper.MAP_PROBABILITY, paper.TOP_MASS

warnings.filterwarnings("ignore", category=UserWarning)
warnings.filterwarnings("ignore", category=FutureWarning)
logging.getLogger("pymc").setLevel(logging.ERROR)


def read_arabidopsis_csv(path):
    """Minimal CSV reader: sample ``ColWT.1`` -> item ``ColWT`` (text before the last '.')."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], [r for r in rows[1:] if r]
    items, item_index = [], []
    for r in body:
        name = r[0].rsplit(".", 1)[0] if "." in r[0] else r[0]
        if name not in items:
            items.append(name)
        item_index.append(items.index(name))
    values = np.array([[float(x) for x in r[1:]] for r in body])
    return values, np.array(item_index), items, len(header) - 1


def make_model(values, item_index, n_items):
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n_items, prior=pmp.UniformMultinomialDirichlet())
        pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**HYPER),
                               observed=values, item_index=item_index)  # fmt: skip
    return model


def simulated(n_items, seed):
    d = pmp.datasets.simulate_spike_slab(n_items=n_items, n_vars=43, n_replicates=4, **HYPER, random_seed=seed)
    return d.values, d.item_index


def random_states(n, size, rng):
    """Random canonical label vectors (not uniform over partitions; only used for timing)."""
    raw = rng.integers(0, rng.integers(1, n + 1, size=(size, 1)), size=(size, n))
    return pmp.canonicalize(raw)


def batched_numpy_score(spec, family, states):
    n = spec.n_items
    onehot = (states[:, None, :] == np.arange(n)[None, :, None]).astype(float)  # (S, cluster, item)
    stats = onehot @ spec.item_stats  # (S, cluster, n_stats) by batched matmul
    counts = onehot.sum(axis=2).astype(np.int64)
    used = counts > 0
    lm = np.zeros(counts.shape)
    lm[used] = family.log_marginal_numpy(stats[used]) + spec.log_h[counts[used]]  # non-empty only
    return lm.sum(axis=1) + spec.log_g[used.sum(axis=1)]


def best_of(fn, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="Arabidopsis CSV (default: $PMP_ARABIDOPSIS_CSV, else "
                    "beside the clone, else simulated)")  # fmt: skip
    ap.add_argument("--sizes", type=int, nargs="*", default=[16, 18, 20])
    ap.add_argument("--no-map-large", action="store_true", help="skip the MAP DP for --sizes")
    ap.add_argument("--repeat", type=int, default=5, help="timings are the best of this many runs")
    args = ap.parse_args()

    print(f"numba threads: {numba.get_num_threads()}, cores visible: {os.cpu_count()}, "
          f"load average: {os.getloadavg()[0]:.2f}")  # fmt: skip
    try:
        data_path = arabidopsis_path(args.data)  # a path given (option or variable) must exist
    except FileNotFoundError as err:
        ap.error(str(err))
    if data_path is not None:
        values, item_index, items, n_vars = read_arabidopsis_csv(data_path)
        source = f"Arabidopsis CSV {data_path} ({len(items)} items, {values.shape[0]} rows, {n_vars} variables)"
    else:
        values, item_index = simulated(14, seed=2019)
        items = [f"item{i}" for i in range(14)]
        source = "simulated from the fitted spike-and-slab model (14 items x 4 replicates, 43 variables)"
    n = len(items)
    print(f"data: {source}")
    model = make_model(values, item_index, n)
    spec = partition_spec(model)
    family = spec.family

    # warm-up: compile the numba kernels (cached on disk) and the family's pytensor function
    t0 = time.perf_counter()
    warm = exact_posterior(make_model(values[item_index < 6], item_index[item_index < 6], 6), progressbar=False)
    warm.top(3), warm.map
    exact_posterior(model, progressbar=False)
    print(f"warm-up (compilation or cache load): {time.perf_counter() - t0:.2f} s\n")

    rows = []
    t_w, w = best_of(lambda: block_log_weights(family, spec.item_stats, spec.log_h), args.repeat)
    rows.append((f"block weights, 2^{n} = {2**n} subsets", t_w))
    t_exact, ex = best_of(lambda: exact_posterior(model, progressbar=False), args.repeat)
    t_dp = min(exact_posterior(model, progressbar=False).timings["dp"] for _ in range(args.repeat))
    rows.append(("subset DP: log Z + co-clustering + P(C)", t_dp))
    rows.append(("exact_posterior(model) total (weights + DP)", t_exact))
    t_map, _ = best_of(ex._max_product, args.repeat)
    rows.append(("MAP by max-product DP", t_map))

    def enumerate_all():
        e = exact_posterior(model, top_k=10, progressbar=False)
        t0 = time.perf_counter()
        out = e.top(10)
        return time.perf_counter() - t0, out

    t_enum = min(enumerate_all()[0] for _ in range(args.repeat))
    labels, probs = ex.top(10)
    rows.append((f"full enumeration of B({n}) = {bell_number(n):,} states, top-10", t_enum))

    # baselines
    rng = np.random.default_rng(0)
    sample = random_states(n, 2000, rng)
    t_naive, _ = best_of(lambda: spec.log_posterior(sample), 1)
    per_state_naive = t_naive / len(sample)
    big = random_states(n, 100_000, rng)
    t_batch, _ = best_of(lambda: batched_numpy_score(spec, family, big), 1)
    per_state_batch = t_batch / len(big)
    B = bell_number(n)
    naive_all, batch_all = per_state_naive * B, per_state_batch * B

    print(f"{f'stage (n = {n})':<58}{'seconds':>10}")
    for name, t in rows:
        print(f"{name:<58}{t:>10.3f}")
    print()
    print("baselines, extrapolated to all B(14) states from a timed sample:")
    print(f"  per-state spec.log_posterior: {per_state_naive * 1e6:8.1f} us/state x {B:,} = {naive_all:10.0f} s")
    print(f"  batched numpy (1e5/batch):    {per_state_batch * 1e6:8.2f} us/state x {B:,} = {batch_all:10.0f} s")
    print(f"  ours, enumeration:            {t_enum / B * 1e9:8.2f} ns/state")
    print()
    print(f"{'ratio (baseline / ours)':<58}{'per-state':>12}{'batched':>12}")
    print(f"{'full enumeration (all states scored, top-k)':<58}{naive_all / t_enum:>12.0f}{batch_all / t_enum:>12.0f}")
    print(f"{'log Z + co-clustering (baselines need every state)':<58}"
          f"{naive_all / t_exact:>12.0f}{batch_all / t_exact:>12.0f}")  # fmt: skip
    print()
    ok_enum = "OK" if t_enum < 5 else "MISSED"
    ok_dp = "OK" if t_exact < 1 else "MISSED"
    print(f"targets: enumeration < 5 s: {t_enum:.2f} s {ok_enum}; log Z + co-clustering < 1 s: "
          f"{t_exact:.3f} s {ok_dp} (block weights included)")  # fmt: skip
    print()

    # posterior summaries beside the paper
    print(f"log Z = {ex.log_z:.6f}")
    print(f"MAP probability: {probs[0]:.4f}   (paper: {PAPER_MAP_PROB})")
    print(f"top-10 mass:     {probs.sum():.4f}   (paper: about {PAPER_TOP10})")
    names = np.array(items)
    print("MAP clusters:", " | ".join(", ".join(names[labels[0] == c]) for c in range(labels[0].max() + 1)))
    print("P(C = c):", ", ".join(f"{c}: {p:.4f}" for c, p in enumerate(ex.n_clusters_pmf) if p > 5e-5))
    print("top-10 probabilities:", np.array2string(probs, precision=4))
    print()

    # larger problems (simulated): log Z + co-clustering, MAP
    if args.sizes:
        print(f"{'n_items':>8}{'states':>12}{'weights s':>12}{'DP s':>10}{'total s':>10}{'MAP s':>10}")
    for m in args.sizes:
        v, idx = simulated(m, seed=m)
        mm = make_model(v, idx, m)
        t0 = time.perf_counter()
        e = exact_posterior(mm, progressbar=False)
        tot = time.perf_counter() - t0
        if args.no_map_large:
            t_m = float("nan")
        else:
            t0 = time.perf_counter()
            _ = e.map
            t_m = time.perf_counter() - t0
        print(f"{m:>8}{bell_number(m):>12.2e}{e.timings['block_weights']:>12.2f}{e.timings['dp']:>10.2f}"
              f"{tot:>10.2f}{t_m:>10.2f}", flush=True)  # fmt: skip
        del e


if __name__ == "__main__":
    main()
