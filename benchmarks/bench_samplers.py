"""Benchmarks of the partition step methods, with the baselines measured in the same run.

Run from the repository root::

    python benchmarks/bench_samplers.py [--data /path/to/arabidopsis_messerli2007.csv] [--quick]

The Arabidopsis CSV is ``--data``, else ``$PMP_ARABIDOPSIS_CSV``, else
``../shared/data/arabidopsis_messerli2007.csv`` beside the clone
(``pymc_partition.datasets.arabidopsis_path``); if none exists the Arabidopsis-shaped problem is
simulated from the paper's fitted spike-and-slab model (14 items x 4 replicates, 43 variables).

Measured, all per draw (one draw = one full sweep over the items for the Gibbs-type samplers):

(a) the baseline a PyMC user writes today: ``pm.Categorical`` labels (14 labels, 14 categories)
    and a ``pm.Potential`` with the same marginal likelihood (``marginal_loglik_graph``) plus the
    partition prior corrected for labelled allocations, sampled through ``pm.sample`` by
    ``CategoricalGibbsMetropolis`` (``proposal="proportional"``: every category of every label
    scored, the Gibbs-like sweep; ``"uniform"`` also shown);
(b) a hand-written numba collapsed Gibbs sweep of the same model (spike-and-slab formula
    hard-coded, cached per-cluster statistics, no PyMC);
(c) ``GibbsPartition`` and ``SplitMerge`` through ``pm.sample`` (chains=1, cores=1; compile time
    excluded: steps are built, and thereby compiled, before sampling; time from PyMC's own
    ``sampling_time``);
(d) linear scaling: ``GibbsPartition`` per-sweep time at 1,000, 10,000 and 100,000 items on
    simulated Normal-Inverse-Gamma data (2 variables, 4 well separated clusters, DP prior with
    small concentration, started at the simulated partition so C stays bounded; C reported).

Ratios printed: baseline / ours (target >= 20x) and ours / hand-written (target <= 2x).
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
from scipy.special import gammaln  # noqa: E402

import pymc_partition as pmp  # noqa: E402
from pymc_partition.datasets import arabidopsis_path  # noqa: E402
from pymc_partition.families.base import ConjugateFamily  # noqa: E402
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


# ----------------------------------------------------------------------------- (c) ours
def time_step(model, make_step, draws, repeats=3):
    t0 = time.perf_counter()
    with model:
        step = make_step(model)
    compile_s = time.perf_counter() - t0
    per_draw = []
    with model:
        pm.sample(draws=200, tune=0, chains=1, cores=1, step=step, progressbar=False,
                  compute_convergence_checks=False, random_seed=0)  # fmt: skip
        for r in range(repeats):
            idata = pm.sample(draws=draws, tune=0, chains=1, cores=1, step=step,
                              progressbar=False, compute_convergence_checks=False,
                              random_seed=r + 1)  # fmt: skip
            per_draw.append(idata.sample_stats.attrs["sampling_time"] / draws)
    n_cl = float(idata.sample_stats["n_clusters"].mean())
    return float(np.median(per_draw)), n_cl, compile_s


# ----------------------------------------------------------------------------- (d) scaling
class _LocalNIG(ConjugateFamily):
    """Normal-Inverse-Gamma, independent per variable (fallback if the package has none)."""

    _param_names = ("mu0", "kappa0", "alpha0", "beta0")

    def __init__(self, mu0=0.0, kappa0=1.0, alpha0=1.0, beta0=1.0):
        self.mu0, self.kappa0, self.alpha0, self.beta0 = map(float, (mu0, kappa0, alpha0, beta0))

    def _item_stats(self, values, item_index, n_items):
        n = np.bincount(item_index, minlength=n_items).astype(float)
        s1 = np.zeros((n_items, values.shape[1]))
        s2 = np.zeros((n_items, values.shape[1]))
        np.add.at(s1, item_index, values)
        np.add.at(s2, item_index, values**2)
        return np.column_stack([n, s1, s2])

    def log_marginal(self, stats):
        stats = pt.as_tensor_variable(stats)
        V = (stats.shape[-1] - 1) // 2
        n = stats[..., 0][..., None]
        s1, s2 = stats[..., 1 : 1 + V], stats[..., 1 + V :]
        m0, k0, a0, b0 = self.mu0, self.kappa0, self.alpha0, self.beta0
        kn = k0 + n
        mn = (k0 * m0 + s1) / kn
        an = a0 + n / 2
        bn = b0 + 0.5 * (s2 + k0 * m0**2 - kn * mn**2)
        t = (pt.gammaln(an) - gammaln(a0) + a0 * np.log(b0) - an * pt.log(bn)
             + 0.5 * (np.log(k0) - pt.log(kn)) - 0.5 * n * np.log(2 * np.pi))  # fmt: skip
        return pt.sum(t, axis=-1)


class _ClosedFormDP(pmp.DirichletProcess):
    """DP prior whose tables skip the generic O(N^3) normalization (DP tables are normalized)."""

    def tables(self, n_items):
        log_g, log_h = self._unnormalized_tables(int(n_items))
        log_g = np.asarray(log_g, float).copy()
        log_h = np.asarray(log_h, float).copy()
        log_g[0], log_h[0] = -np.inf, 0.0
        return log_g, log_h


def nig_family():
    try:
        from pymc_partition.families.normal_inverse_gamma import NormalInverseGamma

        return NormalInverseGamma(mu0=0.0, kappa0=0.1, alpha0=2.0, beta0=2.0), "package"
    except ImportError:
        return _LocalNIG(mu0=0.0, kappa0=0.1, alpha0=2.0, beta0=2.0), "local fallback"


def time_scaling(n, family, draws):
    rng = np.random.default_rng(n)
    centers = np.array([[-6.0, -6.0], [-6.0, 6.0], [6.0, -6.0], [6.0, 6.0]])
    truth = rng.integers(0, 4, n)
    y = centers[truth] + rng.normal(0, 1.0, (n, 2))
    with pm.Model() as m:
        z = pmp.Partition("z", n_items=n, prior=_ClosedFormDP(alpha=0.01))
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=y)
        t0 = time.perf_counter()
        step = GibbsPartition([z])
        compile_s = time.perf_counter() - t0
        start = {"z": pmp.canonicalize(truth)}
        pm.sample(draws=1, tune=0, chains=1, cores=1, step=step, progressbar=False,
                  compute_convergence_checks=False, initvals=start, random_seed=0)  # fmt: skip
        idata = pm.sample(draws=draws, tune=0, chains=1, cores=1, step=step, progressbar=False,
                          compute_convergence_checks=False, initvals=start, random_seed=1)  # fmt: skip
    per_sweep = idata.sample_stats.attrs["sampling_time"] / draws
    return per_sweep, float(idata.sample_stats["n_clusters"].mean()), compile_s


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None, help="Arabidopsis CSV (default: $PMP_ARABIDOPSIS_CSV, else "
                    "beside the clone, else simulated)")  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="fewer draws, scaling up to 10,000 items")
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

    rows = []
    t_hand, c_hand = time_hand_written(spec.item_stats, spec.log_g, spec.log_h, 2000 if q else 20000)
    rows.append(("(b) hand-written numba Gibbs sweep", t_hand, c_hand, ""))
    t_prop = time_baseline(y, idx, family, prior, "proportional", 100 if q else 400)
    rows.append(("(a) Categorical + Potential, CategoricalGibbsMetropolis(proportional)", t_prop, float("nan"), ""))
    t_unif = time_baseline(y, idx, family, prior, "uniform", 300 if q else 1500)
    rows.append(("(a) Categorical + Potential, CategoricalGibbsMetropolis(uniform)", t_unif, float("nan"), ""))
    draws = 1000 if q else 5000
    t_g, c_g, comp_g = time_step(model, lambda m: GibbsPartition([m["z"]]), draws)
    rows.append(("(c) GibbsPartition via pm.sample", t_g, c_g, f"compile {comp_g:.2f} s"))
    t_sm, c_sm, comp_sm = time_step(model, lambda m: SplitMerge([m["z"]]), draws)
    rows.append(("(c) SplitMerge (default: 1 split-merge t=5 + 1 Gibbs) via pm.sample", t_sm, c_sm,
                 f"compile {comp_sm:.2f} s"))  # fmt: skip
    t_bad, c_bad, _ = time_step(model, lambda m: SplitMerge.badly_mixing([m["z"]]), draws)
    rows.append(("(c) SplitMerge.badly_mixing via pm.sample", t_bad, c_bad, ""))

    w = max(len(r[0]) for r in rows)
    print(f"{'Arabidopsis-shaped model, per draw':<{w}}  {'time':>10}  {'mean C':>6}")
    for name, t, c, note in rows:
        print(f"{name:<{w}}  {t * 1e6:8.1f} us  {c:6.2f}  {note}")
    print()
    def verdict(ok):
        return "OK" if ok else "MISSED"

    print("Ratios per draw (targets: baseline / ours >= 20x, ours / hand-written <= 2x)")
    print("  the issue's baseline (~2.5 ms per sweep) is CategoricalGibbsMetropolis(uniform);")
    print("  'proportional' scores every category of every label, the Gibbs-equivalent sweep")
    for name, t in (("GibbsPartition", t_g), ("SplitMerge (default)", t_sm),
                    ("SplitMerge.badly_mixing", t_bad)):  # fmt: skip
        print(f"  baseline(uniform) / {name:<24}: {t_unif / t:8.1f}x  {verdict(t_unif / t >= 20)}"
              f"   baseline(proportional) / {name}: {t_prop / t:7.1f}x")  # fmt: skip
    print(f"  GibbsPartition / hand-written numba sweep  : {t_g / t_hand:8.2f}x  "
          f"{verdict(t_g / t_hand <= 2)}")  # fmt: skip
    print("  (SplitMerge's default step does one split-merge proposal with 5 restricted scans plus")
    print("   a full Gibbs sweep, about 3x the work of one Gibbs sweep.)")
    print()

    fam, fam_src = nig_family()
    sizes = [1_000, 10_000] if q else [1_000, 10_000, 100_000]
    print(f"(d) GibbsPartition scaling, NormalInverseGamma ({fam_src}), 2 variables, DP(alpha=0.01)")
    print(f"{'items':>8}  {'per sweep':>12}  {'per item':>10}  {'mean C':>6}  {'compile':>8}")
    base = None
    for n_items in sizes:
        draws_s = max(3, 200_000 // n_items) if not q else max(2, 50_000 // n_items)
        t, c, comp = time_scaling(n_items, fam, draws_s)
        per_item = t / n_items
        base = base or per_item
        print(f"{n_items:>8}  {t * 1e3:9.2f} ms  {per_item * 1e6:7.3f} us  {c:6.2f}  {comp:6.2f} s"
              f"   (per item x{per_item / base:.2f} vs 1,000)")  # fmt: skip


if __name__ == "__main__":
    main()
