"""Benchmarks of the partition step methods, with the baselines measured in the same run.

Run from the repository root::

    python benchmarks/bench_samplers.py [--data /path/to/arabidopsis_messerli2007.csv] [--quick]
                                        [--previous REV] [--no-chains]

The Arabidopsis CSV is ``--data``, else ``$PMP_ARABIDOPSIS_CSV``, else
``../shared/data/arabidopsis_messerli2007.csv`` beside the clone
(``pymc_partition.datasets.arabidopsis_path``); if none exists the Arabidopsis-shaped problem is
simulated from the paper's fitted spike-and-slab model (14 items x 4 replicates, 43 variables).

Measured, all per draw (one draw = one full sweep over the items for the Gibbs-type samplers):

(a) the baseline a PyMC user writes today: ``pm.Categorical`` labels (14 labels, 14 categories)
    and a ``pm.Potential`` with the same marginal likelihood (``marginal_loglik_graph``) plus the
    partition prior corrected for labelled allocations, sampled through ``pm.sample`` by
    ``CategoricalGibbsMetropolis`` (``proposal="uniform"``, the baseline of the targets;
    ``"proportional"``, which scores every category of every label, shown once: PyMC sometimes
    stops it with "probabilities do not sum to 1");
(b) a hand-written numba collapsed Gibbs sweep of the same model (spike-and-slab formula
    hard-coded as ``logaddexp``, cached per-cluster statistics, no PyMC);
(c) ``GibbsPartition``, ``SplitMerge`` (default mix) and ``SplitMerge.badly_mixing`` through
    ``pm.sample`` (chains=1, cores=1; steps built, and thereby compiled, before sampling; time from
    PyMC's own ``sampling_time``). (a) and (c) are timed in interleaved rounds and each ratio is
    the median over the rounds of the per-round ratio, which the machine's load affects least;
(d) with ``--previous REV``: ``GibbsPartition`` and ``SplitMerge`` of the package at git revision
    ``REV`` on the same model, in a subprocess (needs git and the repository);
(e) many chains (skip with ``--no-chains``): wall-clock of ``pm.sample(chains=4, cores=2)`` with
    50,000 draws (``--quick``: 5,000), without thinning (``thin=1``) and with ``thin=5`` (five
    sweeps or split-merge steps per draw: PyMC's pipe round trip between the processes, about
    60 us, is paid once per draw), both for the same number of sweeps and for the same number of
    draws.

Ratios printed: baseline / ours (target >= 20x) and ours / hand-written (target <= 2x). Scaling
to many items is ``benchmarks/bench_sweeps.py``; which split-merge mix mixes best per second is
``benchmarks/bench_mix.py``.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
import warnings

import numba
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pymc as pm  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from revisions import export_tree  # noqa: E402
from scipy.special import gammaln  # noqa: E402

import pymc_partition as pmp  # noqa: E402
from pymc_partition.datasets import arabidopsis_path  # noqa: E402
from pymc_partition.likelihood import marginal_loglik_graph  # noqa: E402
from pymc_partition.model_spec import partition_spec  # noqa: E402
from pymc_partition.paper.constants import EB_HYPERPARAMETERS as HYPER  # noqa: E402
from pymc_partition.step_methods import GibbsPartition, SplitMerge  # noqa: E402

warnings.filterwarnings("ignore", category=UserWarning)
logging.getLogger("pymc").setLevel(logging.ERROR)
warnings.filterwarnings("ignore", category=FutureWarning)


# ----------------------------------------------------------------------------- data
def load_data(path):
    """(values, item_index, source) from the CSV (``None``: simulated data of the same shape)."""
    if path is not None:
        from pymc_partition.datasets import load_arabidopsis

        d = load_arabidopsis(path)
        return np.asarray(d.values), np.asarray(d.item_index), f"Arabidopsis CSV ({path})"
    rng = np.random.default_rng(2007)
    n_items, n_vars, n_rep = 14, 43, 4
    labels = np.array([0, 0, 0, 1, 1, 1, 2, 2, 0, 3, 3, 1, 2, 0])
    C = labels.max() + 1
    gamma = rng.random((C, n_vars)) < 0.2
    theta = rng.normal(0, math.sqrt(HYPER["sigma2_theta"]), (C, n_vars)) * gamma
    eta = rng.normal(0, math.sqrt(HYPER["sigma2_eta"]), (n_items, n_vars))
    idx = np.repeat(np.arange(n_items), n_rep)
    y = (HYPER["mu"] + theta[labels][idx] + eta[idx]
         + rng.normal(0, math.sqrt(HYPER["sigma2"]), (idx.size, n_vars)))  # fmt: skip
    return y, idx, "simulated from the fitted model (no CSV given/found)"


# ----------------------------------------------------------------------------- (a) baseline
def baseline_model(y, idx, family, prior):
    """pm.Categorical labels + pm.Potential: what a PyMC user writes today."""
    n = int(idx.max()) + 1
    stats = family.item_stats(y, idx, n)
    log_g, log_h = prior.tables(n)
    with pm.Model() as m:
        lab = pm.Categorical("labels", p=np.full(n, 1.0 / n), shape=n)
        counts = pt.bincount(lab, minlength=n)
        K = pt.sum(pt.gt(counts, 0))
        # partition prior, minus the Categorical's own log prior (n * log(1/n)) and corrected
        # for the n!/(n-K)! labelled allocations of one K-block partition
        log_prior = (pt.constant(log_g)[K] + pt.sum(pt.switch(pt.gt(counts, 0), pt.constant(log_h)[counts], 0.0))
                     - (gammaln(n + 1) - pt.gammaln(n + 1 - K)) + n * np.log(n))  # fmt: skip
        pm.Potential("partition", log_prior + marginal_loglik_graph(lab, pt.constant(stats), family))
    return m


def time_baseline(y, idx, family, prior, proposal, draws):
    m = baseline_model(y, idx, family, prior)
    with m:
        step = pm.CategoricalGibbsMetropolis([m["labels"]], proposal=proposal)
        pm.sample(draws=10, tune=0, chains=1, cores=1, step=step, progressbar=False,
                  compute_convergence_checks=False, random_seed=1)  # fmt: skip
        idata = pm.sample(draws=draws, tune=0, chains=1, cores=1, step=step, progressbar=False,
                          compute_convergence_checks=False, random_seed=2)  # fmt: skip
    return idata.posterior.attrs["sampling_time"] / draws


# ----------------------------------------------------------------------------- (b) hand-written
def make_hand_sweep(sigma2_theta, p):
    l1p, lp = math.log1p(-p), math.log(p)
    st = sigma2_theta

    @numba.njit(cache=False)
    def lm(A, B, const):
        op = 1.0 + st * A
        hl = -0.5 * math.log(op)
        tot = const
        for v in range(B.shape[0]):
            a = lp + hl + 0.5 * st * B[v] * B[v] / op
            mx = max(a, l1p)
            tot += mx + math.log(math.exp(a - mx) + math.exp(l1p - mx))
        return tot

    @numba.njit(cache=False)
    def sweep(z, item_const, item_A, item_B, log_g, log_h, c_const, c_A, c_B, c_n, c_lm,
              tmpB, logw, cand, item_lm):  # fmt: skip
        n, V = item_B.shape
        order = np.random.permutation(n)
        for t in range(n):
            i = order[t]
            k = z[i]
            old = c_lm[k]
            c_n[k] -= 1
            c_const[k] -= item_const[i]
            c_A[k] -= item_A[i]
            for v in range(V):
                c_B[k, v] -= item_B[i, v]
            if c_n[k] > 0:
                c_lm[k] = lm(c_A[k], c_B[k], c_const[k])
            C = 0
            for c in range(n):  # clusters are the slots with c_n > 0
                if c_n[c] == 0:
                    continue
                if c == k:
                    cl = old
                else:
                    for v in range(V):
                        tmpB[v] = c_B[c, v] + item_B[i, v]
                    cl = lm(c_A[c] + item_A[i], tmpB, c_const[c] + item_const[i])
                cand[c] = cl
                logw[c] = log_h[c_n[c] + 1] - log_h[c_n[c]] + cl - c_lm[c]
                C += 1
            free = -1
            for c in range(n):
                if c_n[c] == 0:
                    free = c
                    break
            logw[free] = log_g[C + 1] - log_g[C] + log_h[1] + item_lm[i] if C > 0 else 0.0
            cand[free] = item_lm[i]
            mx = -np.inf
            for c in range(n):
                if (c_n[c] > 0 or c == free) and logw[c] > mx:
                    mx = logw[c]
            tot = 0.0
            for c in range(n):
                if c_n[c] > 0 or c == free:
                    logw[c] = math.exp(logw[c] - mx)
                    tot += logw[c]
                else:
                    logw[c] = 0.0
            u = np.random.random() * tot
            acc = 0.0
            new = free
            for c in range(n):
                acc += logw[c]
                if logw[c] > 0 and u < acc:
                    new = c
                    break
            c_n[new] += 1
            c_const[new] += item_const[i]
            c_A[new] += item_A[i]
            for v in range(V):
                c_B[new, v] += item_B[i, v]
            c_lm[new] = cand[new]
            z[i] = new

    return lm, sweep


def time_hand_written(stats, log_g, log_h, sweeps):
    n = stats.shape[0]
    item_const, item_A = stats[:, 0].copy(), stats[:, 1].copy()
    item_B = np.ascontiguousarray(stats[:, 2:])
    lm, sweep = make_hand_sweep(HYPER["sigma2_theta"], HYPER["p"])
    item_lm = np.array([lm(item_A[i], item_B[i], item_const[i]) for i in range(n)])
    z = np.zeros(n, np.int64)
    c_const, c_A = np.zeros(n), np.zeros(n)
    c_B = np.zeros((n, item_B.shape[1]))
    c_n = np.zeros(n, np.int64)
    c_lm = np.zeros(n)
    for i in range(n):
        c_const[0] += item_const[i]
        c_A[0] += item_A[i]
        c_B[0] += item_B[i]
    c_n[0] = n
    c_lm[0] = lm(c_A[0], c_B[0], c_const[0])
    bufs = (np.zeros(item_B.shape[1]), np.zeros(n + 1), np.zeros(n + 1))
    args = (z, item_const, item_A, item_B, log_g, log_h, c_const, c_A, c_B, c_n, c_lm, *bufs, item_lm)
    for _ in range(200):  # compile + burn in
        sweep(*args)
    n_cl = []
    t0 = time.perf_counter()
    for _ in range(sweeps):
        sweep(*args)
    dt = (time.perf_counter() - t0) / sweeps
    for _ in range(200):
        sweep(*args)
        n_cl.append((c_n > 0).sum())
    return dt, float(np.mean(n_cl))


# ----------------------------------------------------------------------------- main
def time_previous(rev, data_path, draws):
    """Per-draw ``sampling_time`` of GibbsPartition and SplitMerge at git revision ``rev``."""
    import json
    import subprocess
    import tempfile

    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        export_tree(rev, tmp, ["pymc_partition", "arviz_regen"])
        code = f"""
import sys, json, warnings, logging
warnings.filterwarnings("ignore"); logging.getLogger("pymc").setLevel(logging.ERROR)
sys.path.insert(0, {tmp!r}); sys.path.insert(1, {here!r})
import pymc as pm, pymc_partition as pmp, arviz_regen  # the old packages, before
from bench_samplers import load_data, HYPER  # this import may put today's tree first on sys.path
y, idx, _ = load_data({None if data_path is None else str(data_path)!r})
out = {{}}
for name in ("GibbsPartition", "SplitMerge"):
    with pm.Model():
        z = pmp.Partition("z", n_items=int(idx.max()) + 1, prior=pmp.UniformMultinomialDirichlet())
        pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**HYPER), observed=y,
                               item_index=idx)
        step = getattr(pmp, name)([z])
        kw = dict(tune=0, chains=1, cores=1, step=step, progressbar=False,
                  compute_convergence_checks=False)
        pm.sample(draws=200, random_seed=0, **kw)
        times = sorted(pm.sample(draws={draws}, random_seed=r, **kw).posterior.attrs["sampling_time"]
                       for r in (1, 2, 3))
    out[name] = times[1] / {draws}  # the median of three
print(json.dumps(out))
"""
        res = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                             text=True, cwd=tmp)  # fmt: skip
    return json.loads(res.stdout.strip().splitlines()[-1])


def sample_time(model, step, draws, seed, **kwargs):
    """PyMC's ``sampling_time`` of ``draws`` draws (one chain, in-process unless told)."""
    opts = dict(tune=0, chains=1, cores=1, progressbar=False, compute_convergence_checks=False)
    opts.update(kwargs)
    with model:
        t0 = time.perf_counter()
        idata = pm.sample(draws=draws, step=step, random_seed=seed, **opts)
        wall = time.perf_counter() - t0
    return idata, idata.posterior.attrs["sampling_time"], wall


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None, help="Arabidopsis CSV (default: $PMP_ARABIDOPSIS_CSV, else "
                    "beside the clone, else simulated)")  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="fewer draws and rounds")
    ap.add_argument("--previous", metavar="REV", default=None,
                    help="also time the samplers of the package at this git revision")  # fmt: skip
    ap.add_argument("--no-chains", action="store_true", help="skip (e), the 4-chain wall-clock")
    args = ap.parse_args(argv)
    q = args.quick

    try:
        data_path = arabidopsis_path(args.data)  # a path given (option or variable) must exist
    except FileNotFoundError as err:
        ap.error(str(err))
    y, idx, source = load_data(data_path)
    n = int(idx.max()) + 1
    family = pmp.SpikeSlabNormal(**HYPER)
    prior = pmp.UniformMultinomialDirichlet()
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=prior)
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=y, item_index=idx)
    spec = partition_spec(model)
    print(f"Data: {source}: {y.shape[0]} rows, {n} items, {y.shape[1]} variables")
    print(f"numba {numba.__version__}, pymc {pm.__version__}, cpus {os.cpu_count()}, "
          f"load avg {os.getloadavg()[0]:.2f}\n")  # fmt: skip

    t_hand, c_hand = time_hand_written(spec.item_stats, spec.log_g, spec.log_h, 2000 if q else 20000)
    try:
        t_prop = time_baseline(y, idx, family, prior, "proportional", 100 if q else 300)
    except ValueError as err:  # PyMC's proportional proposal can fail on this model
        t_prop, prop_note = float("nan"), f"failed in PyMC: {str(err).splitlines()[0][:60]}"
    else:
        prop_note = ""

    # (a) and (c) in interleaved rounds
    base = baseline_model(y, idx, family, prior)
    with base:
        base_step = pm.CategoricalGibbsMetropolis([base["labels"]], proposal="uniform")
    ours = {}
    compile_s = {}
    for name, make in (("GibbsPartition", lambda m: GibbsPartition([m["z"]])),
                       ("SplitMerge (default)", lambda m: SplitMerge([m["z"]])),
                       ("SplitMerge.badly_mixing", lambda m: SplitMerge.badly_mixing([m["z"]]))):  # fmt: skip
        t0 = time.perf_counter()
        with model:
            ours[name] = make(model)
        compile_s[name] = time.perf_counter() - t0
    b_draws, o_draws, rounds = (150, 1000, 3) if q else (400, 4000, 7)
    sample_time(base, base_step, 10, 0)
    for step in ours.values():
        sample_time(model, step, 200, 0)
    per = {k: [] for k in ["baseline", *ours]}
    clusters = {}
    for r in range(rounds):
        per["baseline"].append(sample_time(base, base_step, b_draws, r + 1)[1] / b_draws)
        for name, step in ours.items():
            idata, t, _ = sample_time(model, step, o_draws, r + 1)
            per[name].append(t / o_draws)
            clusters[name] = float(idata.sample_stats["n_clusters"].mean())
    med = {k: float(np.median(v)) for k, v in per.items()}

    rows = [("(b) hand-written numba Gibbs sweep", t_hand, c_hand, ""),
            ("(a) Categorical + Potential, CategoricalGibbsMetropolis(proportional)", t_prop,
             float("nan"), prop_note),
            ("(a) Categorical + Potential, CategoricalGibbsMetropolis(uniform)", med["baseline"],
             float("nan"), "")]  # fmt: skip
    for name in ours:
        rows.append((f"(c) {name} via pm.sample", med[name], clusters[name],
                     f"set-up {compile_s[name]:.2f} s"))  # fmt: skip
    w = max(len(r[0]) for r in rows)
    print(f"{'Arabidopsis model, per draw (median over rounds)':<{w}}  {'time':>10}  {'mean C':>6}")
    for name, t, c, note in rows:
        print(f"{name:<{w}}  {t * 1e6:8.1f} us  {c:6.2f}  {note}")
    print()

    def verdict(ok):
        return "OK" if ok else "MISSED"

    print(f"Ratios per draw, median over {rounds} interleaved rounds of the per-round ratio "
          "(targets: baseline / ours >= 20x, ours / hand-written <= 2x)")  # fmt: skip
    for name in ours:
        ratios = np.array(per["baseline"]) / np.array(per[name])
        r_med = float(np.median(ratios))
        print(f"  baseline(uniform) / {name:<24}: {r_med:7.1f}x  {verdict(r_med >= 20)}  "
              f"(rounds {ratios.min():.1f}-{ratios.max():.1f}x; baseline(proportional) / ours: "
              f"{t_prop / med[name]:.0f}x)")  # fmt: skip
    print(f"  GibbsPartition / hand-written numba sweep  : {med['GibbsPartition'] / t_hand:7.2f}x  "
          f"{verdict(med['GibbsPartition'] / t_hand <= 2)}")  # fmt: skip
    print("  (SplitMerge's default step: one split-merge proposal with 5 restricted scans, then a")
    print("   Gibbs sweep; see benchmarks/bench_mix.py for what that buys per second.)\n")

    if args.previous:
        prev = time_previous(args.previous, data_path, 1000 if q else 4000)
        print(f"(d) the package at {args.previous}, same model, per draw via pm.sample:")
        for name, key in (("GibbsPartition", "GibbsPartition"),
                          ("SplitMerge (default)", "SplitMerge")):  # fmt: skip
            print(f"  {name:<22}: previous {prev[key] * 1e6:7.1f} us, now {med[name] * 1e6:7.1f} us:"
                  f" {prev[key] / med[name]:5.2f}x faster; baseline(uniform) / previous "
                  f"{med['baseline'] / prev[key]:.1f}x")  # fmt: skip
        print()

    if not args.no_chains:
        draws = 5_000 if q else 50_000
        print(f"(e) pm.sample(chains=4, cores=2), wall-clock including start-up, {draws:,} draws "
              "per chain")  # fmt: skip
        for name, make in (("GibbsPartition", lambda m, k: GibbsPartition([m["z"]], thin=k)),
                           ("SplitMerge", lambda m, k: SplitMerge([m["z"]], thin=k))):  # fmt: skip
            walls = {}
            for label, thin, n_draws in (("thin=1", 1, draws), ("thin=5, same sweeps", 5, draws // 5),
                                         ("thin=5, same draws", 5, draws)):  # fmt: skip
                with model:
                    step = make(model, thin)
                _, _, walls[label] = sample_time(model, step, n_draws, 11, chains=4, cores=2)
            a, b, c = walls["thin=1"], walls["thin=5, same sweeps"], walls["thin=5, same draws"]
            print(f"  {name:<15} thin=1: {a:6.1f} s | thin=5 with {draws // 5:,} draws (same sweeps): "
                  f"{b:6.1f} s, {a / b:.1f}x faster | thin=5 with {draws:,} draws (5x the sweeps): "
                  f"{c:6.1f} s, {c / a:.1f}x the time")  # fmt: skip


if __name__ == "__main__":
    main()
