"""What the raw-address context of the predictive forms saves: the form's call boundary, same run.

Run from the repository root::

    python benchmarks/bench_form_boundary.py [--quick]

The Gibbs sweep calls a form's ``pred`` once per item for all its candidate clusters
(:mod:`pymc_partition.predictive`). Timed here, per item (``NormalInverseGamma``, two variables,
20,000 items, four candidate clusters, the same compiled ``_pred_one`` body inside), the loop of
those calls with the arrays passed

(A) as the raw-address context of :mod:`pymc_partition.predictive._types` (what the kernels do);
(B) as arrays (``params, stats, cache, aux, slots, out``) to a first-class function: numba checks
    the array types, the function pointer still comes from its addresses;
(C) as arrays to the dispatcher itself, passed as an argument: everything checked by numba (the
    loop compiles once per form and is not cached on disk).

Each figure is the smallest of interleaved repeats in CPU time (``time.thread_time``), with its
ratio to (A); ``bench_sweeps.py``
gives the time of a whole sweep per item, to which the difference adds.
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np
from numba import types

import pymc_partition as pmp
from pymc_partition.predictive import normal_inverse_gamma as nig
from pymc_partition.predictive._types import (
    PRED_SIG,
    _from_addresses,
    addresses,
    make_context,
    pred_from_addresses,
    quiet_compile,
)
from pymc_partition.spec import PartitionSpec

F1, F2, I1 = types.Array(types.float64, 1, "C"), types.Array(types.float64, 2, "C"), types.Array(types.int64, 1, "C")
ARRAY_SIG = types.void(F1, F2, F2, F2, I1, types.int64, types.int64, F1)
array_pred_from_addresses = _from_addresses(ARRAY_SIG)


@numba.njit(nogil=True, cache=True)
def array_pred(params, stats, cache, aux, slots, m, i, out):
    for a in range(m):
        out[a] = nig._pred_one(params, stats, cache, slots[a], aux, i)


@numba.njit(nogil=True, cache=True)
def loop_context(fa, ctx, slots, out, n, reps):
    pred = pred_from_addresses(fa[0], fa[1])
    slots_addr, out_addr = np.int64(slots.ctypes.data), np.int64(out.ctypes.data)
    tot = 0.0
    for _ in range(reps):
        for i in range(n):
            pred(ctx, slots_addr, slots.shape[0], i, out_addr)
            tot += out[0]
    return tot


@numba.njit(nogil=True)
def loop_dispatcher(pred, params, stats, cache, aux, slots, out, n, reps):
    tot = 0.0
    for _ in range(reps):
        for i in range(n):
            pred(params, stats, cache, aux, slots, slots.shape[0], i, out)
            tot += out[0]
    return tot


@numba.njit(nogil=True, cache=True)
def loop_arrays(fa, params, stats, cache, aux, slots, out, n, reps):
    """:func:`loop_dispatcher`'s loop on the first-class function rebuilt from its addresses."""
    return loop_dispatcher(array_pred_from_addresses(fa[0], fa[1]), params, stats, cache, aux, slots, out, n, reps)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args(argv)
    print(f"numba {numba.__version__}, cpus {os.cpu_count()}, load avg {os.getloadavg()[0]:.2f}\n")
    n, n_clusters = 20_000, 4
    rng = np.random.default_rng(0)
    labels = np.arange(n) % n_clusters
    y = rng.normal(size=(n, 2)) + 6.0 * np.stack([labels % 2, labels // 2], axis=1)
    spec = PartitionSpec.from_data(pmp.DirichletProcess(1.0), pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), y)
    form = spec.family.predictive_form(spec.item_stats)
    stats = np.zeros((n + 3, spec.item_stats.shape[1]))
    cache = np.zeros((n + 3, form.cache_width))
    for c in range(n_clusters):
        stats[c] = spec.item_stats[labels == c].sum(axis=0)
    ctx = make_context(form.params, stats, cache, form.aux, np.zeros(2, np.int64))
    for c in range(n_clusters):
        form.init(ctx, c)
    slots, out = np.arange(n_clusters, dtype=np.int64), np.zeros(n_clusters)
    arrays = (form.params, stats, cache, form.aux, slots, out)
    with quiet_compile():
        fa, fb = addresses(nig._pred, PRED_SIG), addresses(array_pred, ARRAY_SIG)
        runs = {
            "(A) context": lambda r: loop_context(fa, ctx, slots, out, n, r),
            "(B) arrays, function from addresses": lambda r: loop_arrays(fb, *arrays, n, r),
            "(C) arrays, dispatcher argument": lambda r: loop_dispatcher(array_pred, *arrays, n, r),
        }
        first = [run(1) for run in runs.values()]
    np.testing.assert_allclose(first, first[0], rtol=1e-12)  # the same values every way
    reps, rounds = (10, 3) if args.quick else (20, 7)
    best = dict.fromkeys(runs, np.inf)
    for _ in range(rounds):
        for name, run in runs.items():
            t0 = time.thread_time()  # CPU time: on a loaded machine, preemption does not count
            run(reps)
            best[name] = min(best[name], (time.thread_time() - t0) / (n * reps) * 1e9)
    print(f"one pred call per item for {n_clusters} candidates, {n:,} items, smallest of {rounds} interleaved repeats")
    for name, ns in best.items():
        print(f"{name:<40}{ns:8.0f} ns per item  {ns / best['(A) context']:5.2f}x (A)")


if __name__ == "__main__":
    main()
