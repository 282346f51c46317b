"""Level and power of the conditional (discrete Stein) check, by simulation (issue 25, item 1).

Run: ``python benchmarks/bench_conditional_check.py [--quick] [--sections level,sizes,hier,cost]``
(``--size-runs 200:500``, ``--cases "a;b"``, ``--seed`` for independent runs in several
processes, ``--batch`` to print the rows so far). Every design has a known answer and a fixed
seed; each prints the rejection rate at α = 0.05 of each test function's p-value and of all of
them together (``all``, the one a verdict reads), with its binomial standard error and the number
of runs, for half the items per draw (the default) and all items on the same draws. The test is
the one ``arviz_regen.conditional_check`` runs on what ``compute_conditional_checks`` stores: each
check's batches cover its test function's time (``check_tau``), all checks together by the adjusted
combination its attributes name (``all``; ``all (before)``: the per-check Bonferroni / Hotelling
combination before it, on the same terms).

level: 8 items (exact posterior): independent exact draws, exact Gibbs chains, sticky Gibbs
    chains (each step kept with probability 0.9), one chain.
sizes (50, 200, 2,000 items; :data:`CASES`): Gibbs chains of the right model (level) and of
    wrong targets (power): DP ``alpha`` off by 10-30 %, NIG ``beta0`` off by 30 %, π^0.9, an
    off-by-one new-cluster weight (alpha/n for alpha/(n-1), alpha+1 for alpha), chains started
    in one cluster or all apart and judged without burn-in. Each row reports the size of the
    error: Δ mean number of clusters and the largest co-clustering difference against the right
    model (with the right model's own noise floor).
hier (at each of ``--sizes``, ``--runs`` runs): a random DP alpha ~ Gamma(2, 1) sampled by a
    partition sweep at each draw's alpha and Escobar and West's update; level (the right sampler)
    and power against a partition step at alpha x 1.1 or 1.3 and against Escobar-West with its
    rate halved, with the terms of ``pmp.compute_conditional_checks`` (partition terms at each
    draw's alpha, Langevin terms of log alpha) tested as the verdict reads them, and the same terms
    tested with batches from their own autocorrelation only ("own tau": without ``state_tau``).
``--tau-factors 6,12`` compares batch lengths (``arviz_regen.base.conditional.TAU_FACTOR``) on the
same terms.
cost: the check's CPU per draw over a Gibbs sweep's (the engine's step), measured in the same
    run; ``compute_conditional_checks`` + ``regen_summary`` on 2,000 items x 4 x 1,000 draws
    against ``az.ess`` of the same posterior.

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

import arviz_regen.base.conditional as cond_base
from arviz_regen.base.conditional import conditional_test
from pymc_partition.conditional_check import COMBINATION, _check_times, _strata_and_partners
from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.engine.kernels.conditional import CHECK_NAMES, check_function_values, conditional_terms
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
from pymc_partition.state import canonicalize

ALPHA = 0.05
#: the combination ``arviz_regen.conditional_check`` applies to what ``compute_conditional_checks``
#: stores (its attributes, as ``conditional_test``'s keywords); "all (before)": without it
PLAN = {
    "adjusted": CHECK_NAMES.index(COMBINATION["adjusted_check"]),
    "raw": [CHECK_NAMES.index(c) for c in COMBINATION["raw_checks"].split(",")],
    **({"min_batches": COMBINATION["min_batches"]} if "min_batches" in COMBINATION else {}),
}
NIG = {"mu0": 0.0, "kappa0": 0.1, "alpha0": 2.0, "beta0": 2.0}
GIBBS = MoveMix(1, 0, 0, 0.0, 1)


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    return np.sort(np.repeat([-4.0, 0.0, 4.0], -(-n // 3))[:n]) + rng.normal(0, 1, n)


def spec_of(y, alpha=1.0, beta0_factor=1.0):
    fam = NormalInverseGamma(**{**NIG, "beta0": NIG["beta0"] * beta0_factor})
    return PartitionSpec.from_data(DirichletProcess(alpha), fam, y)


@numba.njit(cache=True)
def _tempered_sweep(m, s, w, beta, log_new):
    """A Gibbs sweep of π^beta (the engine's sweep with its log weights times ``beta``), the
    new cluster's weight times ``exp(log_new)`` (0: the right sampler)."""
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
        logw[C] = beta * (log_g[C + 1] - log_g[C] + log_h[1] + item_lm[i]) + log_new if C > 0 else 0.0
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
def _chains(starts, m, s, w, beta, log_new, n_burn, out, seed):
    """Chains of the (possibly wrong) sweep from each start ``(R, n)`` into ``out (R, T, n)``:
    many runs' chains in one compiled call (slot labels; canonicalise before use)."""
    np.random.seed(seed)
    for r in range(starts.shape[0]):
        build_state(starts[r], m, s)
        for t in range(n_burn + out.shape[1]):
            _tempered_sweep(m, s, w, beta, log_new)
            if t >= n_burn:
                out[r, t - n_burn] = s.z


def gibbs_chains(spec, n_chains, n_draws, seed, n_burn=200, beta=1.0, sticky=0.0, log_new=0.0,
                 start=None, runs=None):  # fmt: skip
    """``(n_chains, n_draws, n)`` canonical labels of Gibbs chains of ``spec``'s posterior (to the
    power ``beta``; new clusters weighted ``exp(log_new)`` more), from random partitions into 1-5
    clusters (``start``: "one" all together, "alone" all apart); ``sticky``: each step kept with
    that probability (a lazy chain, invariant for the same posterior). ``runs``: that many runs'
    chains at once, ``(runs, n_chains, n_draws, n)``, in one compiled call."""
    rng = np.random.default_rng(seed)
    kernel = PartitionKernel.from_spec(spec, GIBBS)
    n = spec.n_items
    R = runs or 1
    if start == "one":
        starts = np.zeros((R * n_chains, n), np.int64)
    elif start == "alone":
        starts = np.tile(np.arange(n, dtype=np.int64), (R * n_chains, 1))
    else:
        starts = canonicalize(rng.integers(0, rng.integers(1, 6, (R * n_chains, 1)), (R * n_chains, n)))
    if not sticky:
        m, s, w = kernel.bundles
        out = np.empty((R * n_chains, n_draws, n), np.int64)
        with quiet_compile():
            _chains(np.ascontiguousarray(starts, dtype=np.int64), m, s, w, beta, log_new, n_burn,
                    out, int(rng.integers(2**31)))  # fmt: skip
        out = canonicalize(out.reshape(-1, n)).reshape(R, n_chains, n_draws, n)
        return out if runs else out[0]
    out = np.empty((n_chains, n_draws, n), np.int64)
    for c in range(n_chains):
        state = kernel.init(starts[c])
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

    def terms(self, labels, values=False):
        """The terms ``(..., checks)``; with ``values`` also the test functions' values (as
        ``compute_conditional_checks`` evaluates them for ``check_tau``)."""
        *shape, n = labels.shape
        flat = np.ascontiguousarray(labels.reshape(-1, n), dtype=np.int64)
        R = self.bounds.size - 1
        u = self.rng.random((flat.shape[0], R if R < n else 0))
        out = np.empty((flat.shape[0], len(CHECK_NAMES)))
        m, s, w = self.kernel.bundles
        with quiet_compile():
            conditional_terms(flat, self.bounds, u, self.partners, m, s, w, out)
            if values:
                f = np.empty_like(out)
                check_function_values(flat, self.partners, m, s, f)
                return out.reshape(*shape, -1), f.reshape(*shape, -1)
        return out.reshape(*shape, -1)

    def reject(self, labels):
        """Rejections of each check and all together, for each of :data:`TAUS` (the batch length
        in autocorrelation times) on the same terms, with ``check_tau`` as
        ``compute_conditional_checks`` stores it: ``(len(TAUS), checks + 1)``."""
        terms, f = self.terms(labels, values=True)
        check_tau = _check_times(f if f.ndim == 3 else f[None])
        out = []
        default = cond_base.TAU_FACTOR
        try:
            for tau in TAUS:
                cond_base.TAU_FACTOR = tau
                res = conditional_test(terms, check_tau=check_tau, **PLAN)
                before = conditional_test(terms, check_tau=check_tau).p_value_all
                out.append(np.r_[res.p_value, res.p_value_all, before] < ALPHA)
        finally:
            cond_base.TAU_FACTOR = default
        return np.array(out)


def rate_str(x):
    x = np.asarray(x, dtype=float)
    p = x.mean()
    return f"{100 * p:5.1f} ± {100 * math.sqrt(max(p * (1 - p), 1e-12) / x.size):3.1f}"


HEADER = (f"{'design':72s} {'runs':>5s} " + " ".join(f"{c:>12s}" for c in (*CHECK_NAMES, "all", "all (before)"))
          + "   Δ n_clusters")  # fmt: skip


def row(name, rejections, extra=""):
    r = np.asarray(rejections)
    if r.ndim == 3:  # (runs, TAUS, checks): a row per batch length
        for q, tau in enumerate(TAUS):
            row(name if len(TAUS) == 1 else f"{name} [tau x {tau:g}]", r[:, q], extra)
        return
    print(
        f"{name:72s} {r.shape[0]:5d} "
        + " ".join(f"{rate_str(r[:, q]):>12s}" for q in range(r.shape[1]))
        + f"   {extra}",
        flush=True,
    )


def exact_designs(runs, seed=1, which=("iid", "gibbs", "sticky", "one"), items=(0.5, None), progress=0):
    """Level at 8 items (exact posterior known): each ``items`` setting on the same draws."""
    from pymc_partition.exact import ExactPosterior

    y = data(8, seed=3)
    spec = spec_of(y)
    ex = ExactPosterior(spec, progressbar=False)
    states, probs = ex.top(ex.n_states)
    probs = probs / probs.sum()
    checks = {it: Checker(spec, items=it) for it in items}
    rng = np.random.default_rng(seed)
    designs = {
        "iid": ("independent exact draws, 4 x 1,000",
                lambda r: states[rng.choice(probs.size, size=(4, 1000), p=probs)]),
        "gibbs": ("exact Gibbs, 4 x 1,000", lambda r: gibbs_chains(spec, 4, 1000, seed + r, n_burn=20)),
        "sticky": ("sticky Gibbs (hold 0.9), 4 x 2,000",
                   lambda r: gibbs_chains(spec, 4, 2000, seed + r, n_burn=20, sticky=0.9)),
        "one": ("exact Gibbs, 1 x 1,000", lambda r: gibbs_chains(spec, 1, 1000, seed + r, n_burn=20)),
    }  # fmt: skip
    for key in which:
        name, draw = designs[key]
        rej = {it: [] for it in items}
        t0 = time.process_time()
        for r in range(runs):
            labels = draw(r)
            for it in items:
                rej[it].append(checks[it].reject(labels))
            if progress and (r + 1) % progress == 0 and r + 1 < runs:
                for it in items:
                    row(f"  (so far) 8 items, {name}, items={it}", rej[it], f"| | {time.process_time() - t0:.0f} s")
        for it in items:
            tag = "half the items" if it == 0.5 else "all items"
            row(f"8 items, {name} ({tag})", rej[it], f"| | {time.process_time() - t0:.0f} s")


def mean_clusters(labels):
    return float((labels.max(axis=-1) + 1).mean())


def coclustering(labels, n_max=200):
    """Co-clustering matrix of the first ``n_max`` items over all draws of ``labels (..., n)``."""
    z = labels.reshape(-1, labels.shape[-1])[:, :n_max]
    onehot = (z[:, :, None] == np.arange(z.max() + 1)).astype(np.float32)
    return np.einsum("tik,tjk->ij", onehot, onehot) / z.shape[0]


#: the designs at 50, 200 and 2,000 items: name, wrong model's keywords, sampler's keywords
#: (``beta`` tempering, ``log_new`` a wrong new-cluster weight, ``start`` / ``n_burn``: a far start
#: judged too early). The right model is first; "off-by-one" is a sampler that normalises the
#: new-cluster weight alpha / n against the existing clusters' m_k / (n - 1) (weight (n - 1) / n
#: too small), or weighs it alpha + 1 for alpha.
CASES = [
    ("right model", {}, {}),
    ("DP alpha x 1.1", {"alpha": 1.1}, {}),
    ("DP alpha x 1.3", {"alpha": 1.3}, {}),
    ("DP alpha x 0.7", {"alpha": 0.7}, {}),
    ("NIG beta0 x 1.3", {"beta0_factor": 1.3}, {}),
    ("NIG beta0 x 0.7", {"beta0_factor": 0.7}, {}),
    ("tempered pi^0.9", {}, {"beta": 0.9}),
    ("off-by-one: alpha/n for alpha/(n-1)", {}, {"log_new": "n"}),
    ("off-by-one: alpha+1 for alpha", {}, {"log_new": math.log(2.0)}),
    ("one cluster start, no burn-in", {}, {"start": "one", "n_burn": 0}),
    ("all-apart start, no burn-in", {}, {"start": "alone", "n_burn": 0}),
    ("right model, short", {}, {"n_draws": 100}),
    ("one cluster start, no burn-in, short", {}, {"start": "one", "n_burn": 0, "n_draws": 100}),
]
#: the items evaluated per draw (compute_conditional_checks's ``items``) compared on the same chains
ITEMS = (0.5, None)
#: batch lengths in autocorrelation times (``arviz_regen.base.conditional.TAU_FACTOR``) compared
#: on the same terms (``--tau-factors``)
TAUS = (cond_base.TAU_FACTOR,)


def size_designs(n, runs, cases, n_draws=1000, seed=11, batch=None, progress=False, items=ITEMS, thin=False):
    """Every case at ``n`` items: each ``items`` setting's rejection rates on the same chains,
    and the size of the error (Δ mean number of clusters, largest co-clustering difference on
    the first 200 items, against the right model's runs; the noise floor is the right model's
    two halves of runs against each other; without the right model among ``cases`` the sizes
    are not printed). ``thin``: also all items on every second draw (the cost of half the items
    per draw)."""
    y = data(n)
    right = spec_of(y)
    checks = {it: Checker(right, seed=1, items=it) for it in items}
    batch = batch or max(1, min(runs, 400_000 // (4 * n_draws * n // 100)))
    base = base_cc = None
    for name, model_kw, kw in cases:
        kw = dict(kw)
        if kw.get("log_new") == "n":
            kw["log_new"] = math.log((n - 1) / n)
        spec = spec_of(y, **model_kw) if model_kw else right
        T = kw.pop("n_draws", n_draws)
        rej = {it: [] for it in items}
        rej_thin = []  # all items on every second draw: the cost of half the items per draw
        ks, cc = [], []
        t0 = time.process_time()
        for b in range(0, runs, batch):
            nb = min(batch, runs - b)
            labels = gibbs_chains(spec, 4, T, seed + 7919 * b, runs=nb, **kw)
            for r in range(nb):
                for it in items:
                    rej[it].append(checks[it].reject(labels[r]))
                if thin:
                    rej_thin.append(checks[None].reject(labels[r][:, ::2]))
                ks.append(mean_clusters(labels[r]))
                if len(cc) < 10:
                    cc.append(coclustering(labels[r]))
            if progress and b + nb < runs:  # cumulative rows so far (a long run can be cut short)
                for it in items:
                    row(f"  (so far) {n} items, {name}, items={it}", rej[it], f"| {time.process_time() - t0:.0f} s")
        k = float(np.mean(ks))
        cc_mean = np.mean(cc, axis=0)
        if base is None and name != "right model":
            size = "(no right-model row)"
        elif base is None:
            base, base_cc = k, cc_mean
            half = len(cc) // 2
            size = f"noise {np.abs(np.mean(cc[:half], axis=0) - np.mean(cc[half:], axis=0)).max():.3f}"
        else:
            size = f"{np.abs(cc_mean - base_cc).max():.3f}"
        for it in items:
            tag = "half the items" if it == 0.5 else "all items"
            dk = f"{k:.2f} clusters" if base is None else f"{k - base:+.2f} (of {base:.2f})"
            row(f"{n} items, {name}, 4 x {T:,} ({tag})", rej[it],
                f"{dk} | {size} | {time.process_time() - t0:.0f} s")  # fmt: skip
        if thin:
            row(f"{n} items, {name}, 4 x {T:,} (all items, every 2nd draw)", rej_thin, "the same chains")


@numba.njit(cache=True)
def _hier_chains(starts, m, s, w, a0, b0, rate_factor, alpha_factor, n_burn, out, out_alpha, seed):
    """Chains of a hierarchical sampler of DP(alpha), alpha ~ Gamma(a0, rate b0): a Gibbs sweep of
    the partition at ``alpha_factor * alpha`` (1: the right step; the spec is built at alpha = 1,
    so the new-cluster weight is ``log alpha``), then Escobar and West's update of alpha given
    the number of clusters with the rate ``rate_factor * b0`` (1: the right update)."""
    np.random.seed(seed)
    n = starts.shape[1]
    for r in range(starts.shape[0]):
        build_state(starts[r], m, s)
        alpha = a0 / b0
        for t in range(n_burn + out.shape[1]):
            _tempered_sweep(m, s, w, 1.0, np.log(alpha_factor * alpha))
            C = s.meta[0]
            rate = b0 * rate_factor - np.log(np.random.beta(alpha + 1.0, n))
            odds = (a0 + C - 1.0) / (n * rate)
            shape = a0 + C if np.random.random() * (1.0 + odds) < odds else a0 + C - 1.0
            alpha = np.random.gamma(shape, 1.0 / rate)
            if t >= n_burn:
                out[r, t - n_burn] = s.z
                out_alpha[r, t - n_burn] = alpha


#: hierarchical designs (alpha ~ Gamma(2, 1)): name, partition step's alpha factor, EW rate factor
HIER_CASES = [
    ("right sampler", 1.0, 1.0),
    ("partition step at alpha x 1.3", 1.3, 1.0),
    ("partition step at alpha x 1.1", 1.1, 1.0),
    ("Escobar-West rate halved", 1.0, 0.5),
]
HIER_PRIOR = (2.0, 1.0)


# alpha moves with the number of clusters: 200 sweeps from a start of 1-5 clusters left the right
# sampler's chains in transit (the Langevin check of alpha rejected 9.0 +- 2.9 % of 100 runs; 0 of
# 60 after 2,000), so the level rows would judge the burn-in, not the check
HIER_BURN = 2000


def hier_designs(n, runs, cases=None, n_chains=4, n_draws=1000, seed=23, n_burn=HIER_BURN, progress=0):
    """Level and power of the check with a random DP alpha (Gamma(2, 1)): the chains of
    :func:`_hier_chains`, their terms from ``pmp.compute_conditional_checks`` on the PyMC model
    (partition terms at each draw's alpha, Langevin terms of log alpha), tested as the verdict
    reads them (``z``, ``hyperparameters`` and both, Bonferroni)."""
    import warnings

    import pymc as pm
    import xarray as xr

    import arviz_regen
    import pymc_partition as pmp
    from arviz_regen.diagnostics.verdict import combine_checks
    from arviz_regen.xr.containers import from_dict

    y = data(n)
    spec = spec_of(y)  # alpha = 1: the sweep adds log alpha to the new cluster's weight
    a0, b0 = HIER_PRIOR
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", a0, b0)
        z = pmp.Partition("z", n_items=n, prior=pmp.DirichletProcess(alpha=alpha))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.NormalInverseGamma(**NIG), observed=y)
    kernel = PartitionKernel.from_spec(spec, GIBBS)
    m, s, w = kernel.bundles
    for name, alpha_factor, rate_factor in cases or HIER_CASES:
        rng = np.random.default_rng([seed, int(100 * alpha_factor), int(100 * rate_factor)])
        rej, ks, alphas = [], [], []
        t0 = time.process_time()
        for r in range(runs):
            starts = canonicalize(rng.integers(0, rng.integers(1, 6, (n_chains, 1)), (n_chains, n)))
            out = np.empty((n_chains, n_draws, n), np.int64)
            out_alpha = np.empty((n_chains, n_draws))
            with quiet_compile():
                _hier_chains(np.ascontiguousarray(starts, dtype=np.int64), m, s, w, a0, b0, rate_factor,
                             alpha_factor, n_burn, out, out_alpha, int(rng.integers(2**31)))  # fmt: skip
            labels = canonicalize(out.reshape(-1, n)).reshape(n_chains, n_draws, n)
            idata = from_dict({"posterior": {"z": labels, "alpha": out_alpha}}, dims={"z": ["z_dim_0"]})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                terms = pmp.compute_conditional_checks(idata, model=model, random_seed=r, extend_inferencedata=False)
            res = arviz_regen.conditional_check(terms)
            p_z = float(res["z"].sel(check="all"))
            p_h = float(res["hyperparameters"].sel(hyper_check="all"))
            # the same terms with batches from their own autocorrelation only (before state_tau)
            own = arviz_regen.conditional_check(
                xr.Dataset({k: xr.DataArray(v.values, dims=v.dims, coords=v.coords) for k, v in terms.items()})
            )
            o_z, o_h = float(own["z"].sel(check="all")), float(own["hyperparameters"].sel(hyper_check="all"))
            rej.append(np.r_[res["hyperparameters"].values[:-1], p_h, p_z, combine_checks([p_z, p_h]),
                             o_h, o_z, combine_checks([o_z, o_h])] < ALPHA)  # fmt: skip
            ks.append(mean_clusters(labels))
            alphas.append(out_alpha.mean())
            if progress and (r + 1) % progress == 0 and r + 1 < runs:  # a long run can be cut short
                q = np.array(rej)
                print(f"  (so far) {name}: {r + 1} runs, z all {rate_str(q[:, -5])}, hyper all "
                      f"{rate_str(q[:, -6])}, both {rate_str(q[:, -4])}; terms' own tau only: z all "
                      f"{rate_str(q[:, -2])}, hyper all {rate_str(q[:, -3])}, both {rate_str(q[:, -1])}",
                      flush=True)  # fmt: skip
        cols = [*res["hyperparameters"].hyper_check.values[:-1], "hyper all", "z all", "both",
                "hyper all (own tau)", "z all (own tau)", "both (own tau)"]  # fmt: skip
        r = np.array(rej)
        print(f"{n} items, hierarchical (alpha ~ Gamma{HIER_PRIOR}), {name}, {n_chains} x {n_draws:,}: {runs} runs, "
              f"mean clusters {np.mean(ks):.2f}, mean alpha {np.mean(alphas):.3f}, {time.process_time() - t0:.0f} s CPU"
              + "".join(f"\n    {c:24s} {rate_str(r[:, q])}" for q, c in enumerate(cols)), flush=True)  # fmt: skip


def cost_ratios(sizes=(200, 2000), n_draws=400, repeats=3):
    """Conditional-check CPU per draw over Gibbs sweep CPU per draw, measured in the same run
    (the engine's compiled step as a user's sampler runs it), ``repeats`` times."""
    for n in sizes:
        spec = spec_of(data(n))
        labels = gibbs_chains(spec, 1, n_draws, 5)[0]
        kernel = PartitionKernel.from_spec(spec, GIBBS)
        checks = {it: Checker(spec, items=it) for it in ITEMS}
        for c in checks.values():
            c.terms(labels[:2])  # compile
        ratios = {it: [] for it in ITEMS}
        rng = np.random.default_rng(3)
        for _ in range(repeats):
            state = kernel.init(labels[-1])
            t0 = time.process_time()
            for _ in range(n_draws):  # a fresh seed per step (one fixed seed freezes the chain)
                state, _ = kernel.step(state, rng)
            sweep = (time.process_time() - t0) / n_draws
            for it, c in checks.items():
                t0 = time.process_time()
                c.terms(labels)
                ratios[it].append((time.process_time() - t0) / n_draws / sweep)
        for it in ITEMS:
            r = ratios[it]
            print(f"cost, {n} items, items={it}: {min(r):.2f}-{max(r):.2f} Gibbs sweeps per draw "
                  f"(sweep {1e6 * sweep:.0f} us CPU)", flush=True)  # fmt: skip


def cost_design(n=2000, n_chains=4, n_draws=1000, repeats=2):
    """The user's path on ``n`` items x ``n_chains`` x ``n_draws``: compute_conditional_checks
    through a PyMC model and regen_summary with the check, against az.ess on the same posterior
    (the issue's target: within 3x), in the same run."""
    import warnings

    import arviz as az
    import pymc as pm

    import arviz_regen
    import pymc_partition as pmp
    from arviz_regen.xr.containers import from_dict

    y = data(n)
    spec = spec_of(y)
    labels = gibbs_chains(spec, n_chains, n_draws, 5)
    lp = spec.log_posterior(labels.reshape(-1, n)).reshape(n_chains, n_draws)
    idata = from_dict({"posterior": {"z": labels}, "sample_stats": {"partition_logp": lp,
                                                                   "n_clusters": labels.max(axis=-1) + 1}})  # fmt: skip
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.NormalInverseGamma(**NIG), observed=y)
    pmp.compute_conditional_checks(idata, model=model)  # compile once
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arviz_regen.regen_summary(idata)
        for _, items in ((r, it) for r in range(repeats) for it in ITEMS):
            t0 = time.process_time()
            pmp.compute_conditional_checks(idata, model=model, items=items)
            check = time.process_time() - t0
            t0 = time.process_time()
            table = arviz_regen.regen_summary(idata)
            summary = time.process_time() - t0
            t0 = time.process_time()
            az.ess(idata)
            ess = time.process_time() - t0
            print(f"cost, {n} items x {n_chains} x {n_draws:,} draws (CPU s; items={items}): "
                  f"compute_conditional_checks "
                  f"{check:.2f}, regen_summary with the check {summary:.2f} "
                  f"({table.attrs['verdict_status']}), az.ess of the posterior {ess:.2f}: "
                  f"regen_summary / az.ess {summary / ess:.2f}, "
                  f"(compute_conditional_checks + regen_summary) / az.ess {(check + summary) / ess:.2f}",
                  flush=True)  # fmt: skip


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs (a smoke test, wide SEs)")
    ap.add_argument("--sections", default="level,sizes,cost")
    ap.add_argument("--runs", type=int, default=None, help="runs of each 8-item level design")
    ap.add_argument("--level-designs", default="iid,gibbs,sticky,one", help="the 8-item level designs")
    ap.add_argument("--sizes", default="50,200,2000", help="numbers of items of the sizes section")
    ap.add_argument("--size-runs", default=None,
                    help="runs per case at each size, e.g. 50:100,200:500,2000:40")  # fmt: skip
    ap.add_argument("--cases", default=None, help="names of the cases (separated by semicolons; default all)")
    ap.add_argument("--seed", type=int, default=0, help="offset of the sizes section's seeds (independent runs)")
    ap.add_argument("--level-seed", type=int, default=1, help="seed of the level section (fresh runs: another)")
    ap.add_argument(
        "--tau-factors",
        default=None,
        help="batch lengths in autocorrelation times compared on the same terms, e.g. 6,8,12",
    )
    ap.add_argument("--items", default=None, help="items settings compared: half, all or half,all (default)")
    ap.add_argument("--thin", action="store_true", help="sizes: also all items on every second draw")
    ap.add_argument("--batch", type=int, default=None, help="runs per compiled call; print the rows so far after each")
    args = ap.parse_args(argv)
    global TAUS
    if args.tau_factors:
        TAUS = tuple(float(t) for t in args.tau_factors.split(","))
    items = ITEMS if args.items is None else tuple({"half": 0.5, "all": None}[i] for i in args.items.split(","))
    sections = args.sections.split(",")
    print(HEADER + " | largest Δ co-clustering | CPU")
    if "cost" in sections:
        cost_ratios()
        cost_design()
    if "level" in sections:
        exact_designs(args.runs or (40 if args.quick else 500), seed=args.level_seed,
                      which=args.level_designs.split(","), items=items, progress=args.batch or 0)  # fmt: skip
    if "hier" in sections:
        cases = None if args.cases is None else [c for c in HIER_CASES if c[0] in args.cases.split(";")]
        for n in (int(n) for n in args.sizes.split(",")):
            hier_designs(n, args.runs or (10 if args.quick else 200), cases, seed=23 + 104729 * args.seed,
                         progress=args.batch or 0)  # fmt: skip
    if "sizes" in sections:
        runs = {50: 20, 200: 10, 2000: 4} if args.quick else {50: 100, 200: 100, 2000: 20}
        if args.size_runs:
            runs.update({int(a): int(b) for a, b in (x.split(":") for x in args.size_runs.split(","))})
        cases = CASES if args.cases is None else [c for c in CASES if c[0] in args.cases.split(";")]
        for n in (int(n) for n in args.sizes.split(",")):
            size_designs(n, runs[n], cases, seed=11 + 104729 * args.seed, batch=args.batch,
                         progress=args.batch is not None, items=items, thin=args.thin)  # fmt: skip


if __name__ == "__main__":
    main()
