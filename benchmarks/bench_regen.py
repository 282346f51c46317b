"""Benchmark of arviz_regen on 4 chains × 50,000 draws × 14 items (issue 4 targets).

Run: ``python benchmarks/bench_regen.py``. Synthetic canonical labels come from a sticky
reversible Metropolis chain over 300 random partitions of 14 items (Zipf probabilities, top
state ≈ 0.4 like the paper's MAP). Each function is timed after a warm-up call (numba
compilation is cached on disk and not part of the steady-state cost) as the best of 3 runs, and
compared with ``az.rhat`` of ``partition_logp`` on the same InferenceData.

Targets: hotelling_rs k=[2,3,5,10] < 1 s (bootstrap and chi2); the paper's look-ahead trace < 3 s; coclustering with
standard errors < 2 s.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402

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


def best_of(fn, repeat=3):
    fn()  # warm-up: numba compilation / caches
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    t0 = time.perf_counter()
    idata = build()
    print(f"data: 4 chains x 50,000 draws x 14 items, built in {time.perf_counter() - t0:.1f} s")
    warnings.simplefilter("ignore")
    cases = {
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
    results = {name: best_of(fn) for name, fn in cases.items()}
    ref = results["az.rhat (partition_logp)"]
    print(f"{'function':36s} {'seconds':>9s} {'x az.rhat':>10s} {'target':>8s}")
    ok = True
    for name, sec in results.items():
        target = TARGETS.get(name)
        flag = ""
        if target is not None:
            flag = f"< {target:.0f} s " + ("ok" if sec < target else "MISSED")
            ok &= sec < target
        print(f"{name:36s} {sec:9.3f} {sec / ref:10.1f}  {flag}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
