"""Peak memory and time of ``pmp.compute_log_likelihood`` at 178 items x 4 chains x 5,000 draws (issue 18).

Run from the repository root::

    python benchmarks/bench_log_likelihood.py [--draws 5000] [--chains 4] [--cases fixed,alpha,family]

The model has the shape of scikit-learn's wine data (178 items, 13 variables; simulated here: three
Gaussian clusters), ``NormalInverseWishart`` (183 statistics per item), ``DirichletProcess``. The
draws mimic a posterior where partitions rarely repeat: the three clusters with each item
reassigned to one of five labels with probability 0.03 in every draw. Cases:

- ``fixed``: every hyperparameter a number;
- ``alpha``: ``alpha ~ Gamma(2, 1)`` (it enters only the prior: the pointwise values equal the
  fixed case's);
- ``family``: also ``kappa0 ~ Gamma(2, 10)`` (every draw has its own family: no reuse per state).

``previous_<case>`` runs the version of ``pymc_partition/log_likelihood.py`` at ``--previous``
(a git revision; default the commit before this benchmark) on the same draws: it refused random
hyperparameters, and with numbers it built its intermediate arrays for 2^21 (state, item) rows
at once, whatever the number of statistics.

Each case runs in a fresh process, after a warm-up call on 5 draws: the wall time of one call,
the process's peak resident memory (``ru_maxrss``: Python, PyMC, the draws and the call) and its
growth during the call, then the peak of numpy allocations during a second, traced call
(``tracemalloc``, which would slow the timed call down). The result itself (chains x draws x
items float64, 28.5 MB here) is part of every peak.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
import warnings

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

N_ITEMS, N_VARS = 178, 13
PREVIOUS = "8e93a16"  # the last commit before this benchmark (main, issue 18 opened)


def simulate(chains, draws, seed=0):
    """Data (178, 13) and label draws (chains, draws, 178)."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(3), [59, 71, 48])
    centers = rng.normal(0.0, 3.0, (3, N_VARS))
    y = centers[truth] + rng.standard_normal((N_ITEMS, N_VARS))
    moved = rng.random((chains, draws, N_ITEMS)) < 0.03
    z = np.where(moved, rng.integers(0, 5, (chains, draws, N_ITEMS)), truth)
    return y, z


def build(case, y):
    import pymc as pm

    import pymc_partition as pmp

    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0) if case in ("alpha", "family") else 1.0
        kappa0 = pm.Gamma("kappa0", 2.0, 10.0) if case == "family" else 0.2
        z = pmp.Partition("z", n_items=N_ITEMS, prior=pmp.DirichletProcess(alpha=alpha))
        family = pmp.NormalInverseWishart(mu0=np.zeros(N_VARS), kappa0=kappa0, nu0=N_VARS + 2.0,
                                          psi0=np.eye(N_VARS))  # fmt: skip
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=y)
    return model


def previous_function(revision):
    """``compute_log_likelihood`` of ``pymc_partition/log_likelihood.py`` at ``revision``."""
    import types

    source = subprocess.run(["git", "-C", ROOT, "show", f"{revision}:pymc_partition/log_likelihood.py"],
                            check=True, capture_output=True, text=True).stdout  # fmt: skip
    module = types.ModuleType("pymc_partition._previous_log_likelihood")
    module.__package__ = "pymc_partition"
    exec(compile(source, "previous_log_likelihood.py", "exec"), module.__dict__)
    return module.compute_log_likelihood


def run_case(name, chains, draws, previous):
    import logging

    warnings.simplefilter("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    from arviz_regen.xr.containers import from_dict

    import pymc_partition as pmp

    case = name.removeprefix("previous_")
    fn = previous_function(previous) if name.startswith("previous_") else pmp.compute_log_likelihood
    y, z = simulate(chains, draws)
    model = build(case, y)
    rng = np.random.default_rng(1)
    posterior = {"z": z}
    if case in ("alpha", "family"):
        posterior["alpha"] = rng.gamma(2.0, 1.0, (chains, draws))
    if case == "family":
        posterior["kappa0"] = rng.gamma(2.0, 0.1, (chains, draws))
    idata = from_dict({"posterior": posterior})
    try:
        fn(from_dict({"posterior": {k: v[:, :5] for k, v in posterior.items()}}), model=model)  # warm-up
    except Exception as err:  # noqa: BLE001 - the previous version refuses random hyperparameters
        print(json.dumps({"case": name, "outcome": f"{type(err).__name__}: {str(err)[:120]}"}))
        return
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    ds = fn(idata, model=model, extend_inferencedata=False)
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    del ds
    tracemalloc.start()  # again, traced (tracemalloc slows the Python-level work down)
    ds = fn(idata, model=model, extend_inferencedata=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"case": name, "seconds": seconds, "numpy_peak_mb": peak / 1e6, "rss_peak_mb": rss / 1e6,
                      "rss_growth_mb": (rss - rss_before) / 1e6, "outcome": f"ok, {ds['y'].shape}"}))  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=5000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--cases", default="fixed,alpha,family,previous_fixed,previous_alpha")
    parser.add_argument("--previous", default=PREVIOUS, help="git revision of the previous version")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, in this process
    args = parser.parse_args()
    if args.case:
        run_case(args.case, args.chains, args.draws, args.previous)
        return
    print(f"compute_log_likelihood: {N_ITEMS} items x {N_VARS} variables (NormalInverseWishart), "
          f"{args.chains} chains x {args.draws} draws")  # fmt: skip
    print(f"{'case':<18}{'time s':>9}{'numpy peak MB':>15}{'RSS peak MB':>13}{'RSS growth MB':>15}  outcome")
    for name in args.cases.split(","):
        cmd = [sys.executable, __file__, "--case", name, "--draws", str(args.draws),
               "--chains", str(args.chains), "--previous", args.previous]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            print(f"{name:<18} failed: {out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if "seconds" not in r:
            print(f"{name:<18}{'-':>9}{'-':>15}{'-':>13}{'-':>15}  {r['outcome']}")
            continue
        print(f"{name:<18}{r['seconds']:>9.2f}{r['numpy_peak_mb']:>15.1f}{r['rss_peak_mb']:>13.1f}"
              f"{r['rss_growth_mb']:>15.1f}  {r['outcome']}")  # fmt: skip


if __name__ == "__main__":
    main()
