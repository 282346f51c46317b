"""Summaries of a zarr-stored posterior on a dask.distributed cluster: does the work move to the workers?

Run: ``python benchmarks/bench_distributed.py [--quick] [--repeats R] [--previous REV]``.

Data: two runs (separate "machines", seeds 1 and 2) of 2 chains each, of a posterior whose states
never recur (:class:`arviz_regen.testing.BlockModel`: 2,000 items × 4 chains × 2,000 draws;
``--quick``: 600 items × 4 × 1,000), each saved to its own zarr store with a
``conditional_checks`` group, combined by :func:`arviz_regen.combine_chains` (lazily, dask chunks
of the stores). Workload, unchanged between the modes (the active client is picked up):
``regen_summary`` (traces, chain-agreement test on 79,800 pairs, conditional check),
``coclustering(items=300 items)``, the VI ``point_estimate`` (SALSO, seed 1) and its
``credible_ball``, ``expected_loss`` of a draw against all draws.

Modes: in this process without a cluster (the baseline), then a cluster of 1 and of 2 workers of
one thread each (2 cores here), the scheduler and every worker in their own process (started
with ``python -m distributed.cli.dask_scheduler`` / ``dask_worker``, as on separate machines).
Per mode: wall time and the CPU seconds of the client process (``resource.getrusage``), of the
workers and of the scheduler (``psutil`` through ``client.run`` / ``run_on_scheduler``), after a
warm-up call (imports, numba's cached kernels loaded in every worker). The client's share of the
CPU is the figure the issue sets (≤ 20 %). The cluster's results are checked equal to the
baseline's (same table, same co-clustering). Every mode runs in a fresh subprocess.

``--previous REV``: the same measurement of the package at git revision REV (e.g. the merge
base), on the store combined here and saved once (REV has no ``combine_chains``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def make_data(tmp, n_items, n_draw):
    """Two runs saved apart (zarr), and the two combined and saved (for ``--previous``)."""
    sys.path.insert(0, str(ROOT))
    import numpy as np
    import xarray as xr

    import arviz_regen
    from arviz_regen.testing import BlockModel, block_chain
    from arviz_regen.xr.containers import from_datasets, get_group, group_names
    from arviz_regen.xr.io import save_inference_data

    model = BlockModel(n_items=n_items, n_blocks=4)
    paths = []
    for seed in (1, 2):
        run = block_chain(model, 2, n_draw, np.random.default_rng(seed), rho=0.3)
        groups = {g: get_group(run, g) for g in group_names(run)}
        terms = np.random.default_rng(seed + 10).normal(size=(2, n_draw, 3))  # mean-zero check terms
        groups["conditional_checks"] = xr.Dataset({"z": (("chain", "draw", "check"), terms)},
                                                  coords={"check": ["a", "b", "c"]})  # fmt: skip
        for ds in groups.values():
            for var in ds.data_vars:
                ds[var].encoding["chunks"] = tuple(min(s, 250) if d == "draw" else s for d, s in ds[var].sizes.items())
        path = Path(tmp) / f"run_seed{seed}.zarr"
        save_inference_data(from_datasets(groups), path)
        paths.append(str(path))
    both = arviz_regen.combine_chains(paths)
    combined = Path(tmp) / "combined.zarr"
    save_inference_data(from_datasets({g: get_group(both, g).compute() for g in group_names(both)}), combined)
    return paths, str(combined)


CHILD = r"""
import json, os, resource, subprocess, sys, time, warnings
warnings.filterwarnings("ignore")
root, mode, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, root)
import numpy as np, psutil
import arviz_regen
from arviz_regen.cli import open_inference_data

def cpu():
    t = psutil.Process().cpu_times()
    return t.user + t.system

def own():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def workload():
    if hasattr(arviz_regen, "combine_chains"):
        idata = arviz_regen.combine_chains(spec["paths"])
    else:
        idata = open_inference_data(spec["combined"], chunks={})
    table = arviz_regen.regen_summary(idata, n_permutations=199)
    cc = arviz_regen.coclustering(idata, items=list(range(spec["cc_items"])))
    out = {"table": table.round(12).to_csv(), "rho": float(np.nansum(cc["rho"].values)),
           "verdict": table.attrs["verdict_status"]}
    est = arviz_regen.point_estimate(idata, random_seed=1)
    ball = arviz_regen.credible_ball(idata, est)
    out["point_estimate"] = [float(est["expected_loss"]), est["labels"].values.tolist(), float(ball["radius"])]
    if hasattr(arviz_regen, "expected_loss"):
        from arviz_regen.xr.containers import get_group
        est = get_group(idata, "posterior")["z"].isel(chain=0, draw=-1).values
        out["expected_loss"] = arviz_regen.expected_loss(idata, est)
    return out

env = dict(os.environ, PYTHONPATH=root, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
procs, client = [], None
if mode != "local":
    import distributed
    sched = os.path.join(spec["tmp"], f"scheduler-{os.getpid()}.json")
    procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--scheduler-file", sched,
                                   "--no-dashboard", "--port", "0"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    while not os.path.exists(sched):
        time.sleep(0.1)
    for _ in range(int(mode)):
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", sched,
                                       "--nthreads", "1", "--no-nanny", "--no-dashboard", "--memory-limit", "0"],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    client = distributed.Client(scheduler_file=sched)  # the active client: the workload does not name it
    client.wait_for_workers(int(mode))
try:
    result = workload()  # warm-up: imports, compiled kernels loaded (client and workers)
    rows = []
    for _ in range(spec["repeats"]):
        w0 = client.run(cpu) if client else {}
        s0 = client.run_on_scheduler(cpu) if client else 0.0
        c0, t0 = own(), time.perf_counter()
        result = workload()
        wall, c1 = time.perf_counter() - t0, own()
        w1 = client.run(cpu) if client else {}
        s1 = client.run_on_scheduler(cpu) if client else 0.0
        rows.append({"wall": wall, "client": c1 - c0, "workers": sum(w1[k] - w0[k] for k in w1),
                     "scheduler": s1 - s0})
    print(json.dumps({"rows": rows, "result": result}))
finally:
    if client is not None:
        client.close()
    for p in procs[::-1]:
        p.terminate()
        p.wait()
"""


def measure(root, mode, spec):
    """One mode in a fresh process (the package found at ``root``)."""
    env = dict(os.environ, PYTHONPATH=str(root))
    res = subprocess.run([sys.executable, "-c", CHILD, str(root), mode, json.dumps(spec)], capture_output=True,
                         text=True, env=env, cwd=spec["tmp"])  # fmt: skip
    if res.returncode:
        raise RuntimeError(f"mode {mode} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def report(label, out, base_result):
    rows = out["rows"]

    def rng(key):
        vals = [r[key] for r in rows]
        return f"{min(vals):6.2f}" + (f"-{max(vals):<6.2f}" if len(vals) > 1 else " " * 7)

    shares = [r["client"] / max(r["client"] + r["workers"] + r["scheduler"], 1e-9) for r in rows]
    same = "-" if base_result is None else "yes" if out["result"] == base_result else "NO"
    share = f"{100 * min(shares):3.0f}-{100 * max(shares):3.0f} %" if len(shares) > 1 else f"{100 * shares[0]:3.0f} %"
    print(f"{label:<26} wall {rng('wall')} s  client CPU {rng('client')} s  workers {rng('workers')} s  "
          f"scheduler {rng('scheduler')} s  client share {share}  same results: {same}")  # fmt: skip
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="600 items x 4 x 1,000 draws, one repeat")
    ap.add_argument("--repeats", type=int, default=None, help="measured calls per mode (default 3; --quick 1)")
    ap.add_argument("--previous", metavar="REV", default=None, help="also measure the package at this git revision")
    args = ap.parse_args(argv)
    n_items, n_draw = (600, 1000) if args.quick else (2000, 2000)
    repeats = args.repeats or (1 if args.quick else 3)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        paths, combined = make_data(tmp, n_items, n_draw)
        print(f"posterior: {n_items} items x 4 chains x {n_draw} draws, two runs of 2 chains saved apart (zarr, "
              f"chunks of 250 draws), combined by combine_chains ({time.perf_counter() - t0:.1f} s to make); "
              f"{os.cpu_count()} cores, shared; {repeats} measured call(s) per mode after a warm-up")  # fmt: skip
        spec = {"paths": paths, "combined": combined, "tmp": tmp, "repeats": repeats, "cc_items": 300}
        base = report("in this process (no cluster)", measure(ROOT, "local", spec), None)
        outs = {}
        for mode in ("1", "2"):
            outs[mode] = report(f"{mode} worker(s), 1 thread each", measure(ROOT, mode, spec), base["result"])
        walls = {m: min(r["wall"] for r in o["rows"]) for m, o in outs.items()}
        print(f"wall time 1 worker / 2 workers: {walls['1'] / walls['2']:.2f}x (best of each)")
        if args.previous:
            with tempfile.TemporaryDirectory() as old:
                archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.previous, "arviz_regen"],
                                         check=True, capture_output=True).stdout  # fmt: skip
                subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
                prev_base = report(f"previous ({args.previous}), no cluster", measure(old, "local", spec), None)
                report(f"previous ({args.previous}), 2 workers", measure(old, "2", spec), prev_base["result"])
        digest = hashlib.sha1(base["result"]["table"].encode()).hexdigest()[:10]
        print(f"table digest {digest}")


if __name__ == "__main__":
    main()
