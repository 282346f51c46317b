"""Level and power of the conditional (discrete Stein) check, by simulation (issue 25, item 1).

Run: ``python benchmarks/bench_conditional_check.py [--quick] [--sections level,power,cost]``.
Every design has a known answer and a fixed seed; each prints the rejection rate at α = 0.05 of
each test function's p-value and of all of them together (``all``, the one a verdict reads), with
its binomial standard error and the number of runs.

level (the draws follow the posterior the check uses; ``all`` should reject ≤ 5 % + 2 SE):
    8 items: independent exact draws (``pmp.exact_posterior``), exact Gibbs chains, Gibbs chains
    made sticky (each step kept with probability 0.9: still reversible for the posterior, ten
    times slower); 50, 200 and 2,000 items: Gibbs chains of the right model.
power (Gibbs chains of a wrong target, checked against the right model, 4 chains × 1,000 draws
    after 200 sweeps of burn-in): DP ``alpha`` off by +10 % and ±30 %, NIG ``beta0`` off by ±30 %,
    the tempered target π^0.9. Each row reports the size of the error: the difference between the
    wrong target's mean number of clusters and the right one's (both from the runs' chains).
cost: :func:`pymc_partition.compute_conditional_checks` on 2,000 items × 4 × 1,000 draws through
    a PyMC model, against ``az.ess`` of the partition's ``n_clusters`` and ``partition_logp`` and
    against 4,000 Gibbs sweeps.

Data: three well separated 1-D Gaussian groups (means −4, 0, 4, sd 1, equal thirds), DP(1),
``NormalInverseGamma(0, 0.1, 2, 2)``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numba
import numpy as np

from arviz_regen.base.conditional import conditional_test
from pymc_partition.conditional_check import _strata_and_partners
from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.engine.kernels.conditional import CHECK_NAMES, conditional_terms
from pymc_partition.engine.kernels.slots import (
    activate,
    deactivate,
    move_to_end,
    put,
    take,
)
from pymc_partition.engine.kernels.state import build_state, form_functions, init_slot
from pymc_partition.families import NormalInverseGamma
from pymc_partition.predictive._types import quiet_compile
from pymc_partition.priors import DirichletProcess
from pymc_partition.spec import PartitionSpec

ALPHA = 0.05
NIG = {"mu0": 0.0, "kappa0": 0.1, "alpha0": 2.0, "beta0": 2.0}
GIBBS = MoveMix(1, 0, 0, 0.0, 1)


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    return np.sort(np.repeat([-4.0, 0.0, 4.0], -(-n // 3))[:n]) + rng.normal(0, 1, n)


def spec_of(y, alpha=1.0, beta0_factor=1.0):
    fam = NormalInverseGamma(**{**NIG, "beta0": NIG["beta0"] * beta0_factor})
    return PartitionSpec.from_data(DirichletProcess(alpha), fam, y)


@numba.njit(cache=True)
def _tempered_sweep(m, s, w, beta):
    """A Gibbs sweep of π^beta (the engine's sweep with its log weights times ``beta``)."""
    X, item_lm, log_g, log_h, ctx = m.X, m.item_lm, m.log_g, m.log_h, m.ctx
    z, counts, stats, clm = s.z, s.counts, s.stats, s.clm
    active, pos, free, meta = s.active, s.pos, s.free, s.meta
    cand, logw = w.cand, w.logw
    pred, remove, add = form_functions(m)
    active_addr, cand_addr = np.int64(active.ctypes.data), np.int64(cand.ctypes.data)
    n, d = X.shape
    for i in np.random.permutation(n):
        k = z[i]
        own = 0.0
        if counts[k] == 1:
            counts[k] = 0
            deactivate(k, active, pos, free, meta)
            for v in range(d):
                stats[k, v] = 0.0
            clm[k] = 0.0
            C = meta[0]
            pred(ctx, active_addr, C, i, cand_addr)
        else:
            own = take(remove, ctx, X, stats, counts, clm, k, i)
            move_to_end(k, active, pos, meta)
            C = meta[0]
            pred(ctx, active_addr, C - 1, i, cand_addr)
            cand[C - 1] = own
        for a in range(C):
            c = active[a]
            logw[a] = beta * (log_h[counts[c] + 1] - log_h[counts[c]] + cand[a])
        logw[C] = (
            beta * (log_g[C + 1] - log_g[C] + log_h[1] + item_lm[i]) if C > 0 else 0.0
        )
        mx = logw[: C + 1].max()
        p = np.exp(logw[: C + 1] - mx)
        u = np.random.random() * p.sum()
        a = min(np.searchsorted(np.cumsum(p), u, side="right"), C)
        if a == C:
            c = activate(active, pos, free, meta)
            for v in range(d):
                stats[c, v] = X[i, v]
            counts[c] = 1
            init_slot(m, c)
            clm[c] = item_lm[i]
        else:
            c = active[a]
            put(add, ctx, X, stats, counts, clm, c, i, cand[a])
        z[i] = c


@numba.njit(cache=True)
def _tempered_chain(labels, m, s, w, beta, n_burn, out, seed):
    np.random.seed(seed)
    build_state(labels, m, s)
    for t in range(n_burn + out.shape[0]):
        _tempered_sweep(m, s, w, beta)
        if t >= n_burn:
            out[t - n_burn] = s.z


def gibbs_chains(spec, n_chains, n_draws, seed, n_burn=200, beta=1.0, sticky=0.0):
    """``(n_chains, n_draws, n)`` labels of Gibbs chains of ``spec``'s posterior (to the power
    ``beta``), from random partitions into 1-5 clusters; ``sticky``: each step kept with that
    probability (a lazy chain, invariant for the same posterior)."""
    rng = np.random.default_rng(seed)
    kernel = PartitionKernel.from_spec(spec, GIBBS)
    n = spec.n_items
    out = np.empty((n_chains, n_draws, n), np.int64)
    for c in range(n_chains):
        start = rng.integers(0, rng.integers(1, 6), n)
        if beta != 1.0:
            m, s, w = kernel.bundles
            with quiet_compile():
                _tempered_chain(
                    start.astype(np.int64),
                    m,
                    s,
                    w,
                    beta,
                    n_burn,
                    out[c],
                    int(rng.integers(2**31)),
                )
            continue
        state = kernel.init(start)
        for _ in range(n_burn):
            state, _ = kernel.step(state, rng)
        for t in range(n_draws):
            if not (sticky and rng.random() < sticky):
                state, _ = kernel.step(state, rng)
            out[c, t] = state
    return out


class Checker:
    """The per-draw terms of the right model's conditionals (what compute_conditional_checks
    computes, called on the kernel directly: ``items`` as there) and their test."""

    def __init__(self, spec, seed=0, items=0.5):
        self.kernel = PartitionKernel.from_spec(spec, GIBBS)
        self.n = spec.n_items
        self.rng = np.random.default_rng(seed)
        self.bounds, self.partners = _strata_and_partners(self.n, items, self.rng)

    def terms(self, labels):
        *shape, n = labels.shape
        flat = np.ascontiguousarray(labels.reshape(-1, n), dtype=np.int64)
        R = self.bounds.size - 1
        u = self.rng.random((flat.shape[0], R if R < n else 0))
        out = np.empty((flat.shape[0], len(CHECK_NAMES)))
        m, s, w = self.kernel.bundles
        with quiet_compile():
            conditional_terms(flat, self.bounds, u, self.partners, m, s, w, out)
        return out.reshape(*shape, -1)

    def reject(self, labels):
        res = conditional_test(self.terms(labels))
        return np.r_[res.p_value, res.p_value_all] < ALPHA


def rate_str(x):
    x = np.asarray(x, dtype=float)
    p = x.mean()
    return f"{100 * p:5.1f} ± {100 * math.sqrt(max(p * (1 - p), 1e-12) / x.size):3.1f}"


HEADER = (
    f"{'design':44s} {'runs':>5s} "
    + " ".join(f"{c:>12s}" for c in (*CHECK_NAMES, "all"))
    + "   Δ n_clusters"
)


def row(name, rejections, extra=""):
    r = np.asarray(rejections)
    print(
        f"{name:44s} {r.shape[0]:5d} "
        + " ".join(f"{rate_str(r[:, q]):>12s}" for q in range(r.shape[1]))
        + f"   {extra}",
        flush=True,
    )


def exact_designs(runs, seed=1):
    from pymc_partition.exact import ExactPosterior

    y = data(8, seed=3)
    spec = spec_of(y)
    ex = ExactPosterior(spec, progressbar=False)
    states, probs = ex.top(ex.n_states)
    probs = probs / probs.sum()
    check = Checker(spec)
    rng = np.random.default_rng(seed)
    iid = [
        check.reject(states[rng.choice(probs.size, size=(4, 1000), p=probs)])
        for _ in range(runs)
    ]
    row("8 items, independent exact draws, 4 x 1,000", iid)
    gibbs = [
        check.reject(gibbs_chains(spec, 4, 1000, seed + r, n_burn=20))
        for r in range(runs)
    ]
    row("8 items, exact Gibbs, 4 x 1,000", gibbs)
    sticky = [
        check.reject(gibbs_chains(spec, 4, 2000, seed + r, n_burn=20, sticky=0.9))
        for r in range(runs)
    ]
    row("8 items, sticky Gibbs (hold 0.9), 4 x 2,000", sticky)
    one = [
        check.reject(gibbs_chains(spec, 1, 1000, seed + r, n_burn=20))
        for r in range(runs)
    ]
    row("8 items, exact Gibbs, 1 x 1,000", one)


def mean_clusters(labels):
    return float((labels.max(axis=-1) + 1).mean())


def power_designs(sizes, runs, n_draws=1000, seed=11):
    cases = [
        ("right model", {}),
        ("DP alpha x 1.1", {"alpha": 1.1}),
        ("DP alpha x 1.3", {"alpha": 1.3}),
        ("DP alpha x 0.7", {"alpha": 0.7}),
        ("NIG beta0 x 1.3", {"beta0_factor": 1.3}),
        ("NIG beta0 x 0.7", {"beta0_factor": 0.7}),
        ("tempered pi^0.9", {"beta": 0.9}),
    ]
    for n in sizes:
        y = data(n)
        right = spec_of(y)
        check = Checker(right)
        base = None
        for name, kw in cases:
            beta = kw.get("beta", 1.0)  # not popped: the cases serve every size
            model_kw = {k: v for k, v in kw.items() if k != "beta"}
            spec = spec_of(y, **model_kw) if model_kw else right
            rej, ks = [], []
            t0 = time.perf_counter()
            for r in range(runs[n]):
                labels = gibbs_chains(spec, 4, n_draws, seed + 1000 * r, beta=beta)
                rej.append(check.reject(labels))
                ks.append(mean_clusters(labels))
            k = float(np.mean(ks))
            base = k if base is None else base
            row(f"{n} items, {name}, 4 x {n_draws:,}", rej,
                f"{k - base:+.2f} (of {base:.2f}; {time.perf_counter() - t0:.0f} s)")  # fmt: skip


def cost_design(n=2000, n_chains=4, n_draws=1000):
    import arviz as az
    import pymc as pm

    import pymc_partition as pmp
    from arviz_regen.xr.containers import from_dict

    y = data(n)
    spec = spec_of(y)
    labels = gibbs_chains(spec, n_chains, n_draws, 5)
    kernel = PartitionKernel.from_spec(spec, GIBBS)
    state = kernel.init(labels[0, -1])
    t0 = time.perf_counter()
    for _ in range(n_chains * n_draws):
        state, _ = kernel.step(state, 1)
    sweeps = time.perf_counter() - t0
    lp = spec.log_posterior(labels.reshape(-1, n)).reshape(n_chains, n_draws)
    idata = from_dict({"posterior": {"z": labels}, "sample_stats": {"partition_logp": lp,
                                                                   "n_clusters": labels.max(axis=-1) + 1}})  # fmt: skip
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood(
            "y", partition=z, family=pmp.NormalInverseGamma(**NIG), observed=y
        )
    pmp.compute_conditional_checks(idata, model=model)  # compile once
    t0 = time.perf_counter()
    pmp.compute_conditional_checks(idata, model=model)
    import arviz_regen

    arviz_regen.conditional_check(idata)
    check = time.perf_counter() - t0
    t0 = time.perf_counter()
    az.ess(
        idata.sample_stats if hasattr(idata, "sample_stats") else idata["sample_stats"]
    )
    ess = time.perf_counter() - t0
    t0 = time.perf_counter()
    az.ess(idata, var_names=["z"])
    ess_z = time.perf_counter() - t0
    print(f"{n} items x {n_chains} x {n_draws:,} draws: compute_conditional_checks + conditional_check "
          f"{check:.2f} s; {n_chains * n_draws:,} Gibbs sweeps {sweeps:.2f} s; az.ess of sample_stats "
          f"{ess:.3f} s; az.ess of the labels (one per item) {ess_z:.2f} s")  # fmt: skip


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="fewer runs (a smoke test, wide SEs)"
    )
    ap.add_argument("--sections", default="level,power,cost")
    ap.add_argument("--runs", type=int, default=None, help="runs of each level design")
    ap.add_argument(
        "--sizes", default="50,200,2000", help="numbers of items of the power section"
    )
    args = ap.parse_args(argv)
    sections = args.sections.split(",")
    print(HEADER)
    if "level" in sections:
        exact_designs(args.runs or (40 if args.quick else 500))
    if "power" in sections:
        runs = {50: 20, 200: 10, 2000: 4} if args.quick else {50: 100, 200: 50, 2000: 8}
        power_designs([int(n) for n in args.sizes.split(",")], runs)
    if "cost" in sections:
        cost_design()


if __name__ == "__main__":
    main()
