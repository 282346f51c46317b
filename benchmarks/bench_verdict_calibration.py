"""Level of every p-value and of the verdict on correct chains (issue 25, deliverable 2).

Run: ``python benchmarks/bench_verdict_calibration.py [--runs N] [--designs a,b] [--json PATH]``.
Fixed seeds. For each design of *correct* chains, 1 and 4 chains, ``N`` runs (default 500, so
that 2 binomial SE of a 5 % rate is below 2 %): the rejection rate at α = 0.05 of Hotelling-RS
``p_value_all`` per K, of its parts (pooled, agreement, recurrence) at K = 2, of the chain
agreement test, of each check's p-value as the verdict reads it, and the verdict of
:func:`arviz_regen.regen_summary` (FAIL / NOT REACHED rates), each with its binomial SE.

Designs (``MODEL_DESIGNS``, the whole pipeline on Gibbs chains of a right or wrong model at 200 and
2,000 items, are listed there; ``--coclustering PREFIX`` saves their co-clustering matrices):

- ``exact8``: independent exact draws from the posterior of 8 items, DP(1), NIG
  (``pmp.exact_posterior``: all 4,140 partitions), 5,000 draws per chain (needs PyMC);
- ``gibbs8``: the exact random-scan Gibbs sampler on that posterior (one item per step, 8 steps
  per draw), 5,000 draws;
- ``basin_*``: 30 states (π ∝ 1/rank) in two basins crossed rarely
  (:func:`arviz_regen.testing.two_basin_chain`), 10,000 draws; ``cross`` 1e-3, 3e-3, 1e-2 give
  about 5, 15 and 45 crossings per chain;
- ``excursion``: top states reached through long excursions (:func:`excursion_chain`), 10,000 draws;
- ``sticky``: a very sticky Metropolis chain (stay 0.95, steps ±1; large Monte Carlo error),
  5,000 draws.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np

import arviz_regen
from arviz_regen.base.tour_tests import simes
from arviz_regen.testing import (
    excursion_chain,
    gibbs_chain,
    iid_chain,
    make_idata,
    metropolis_chain,
    random_partitions,
    two_basin_chain,
)

ALPHA = 0.05
NIG8 = {"mu0": 0.0, "kappa0": 0.5, "alpha0": 2.0, "beta0": 1.0}
Y8 = np.array([-1.0, 0.0, 1.2])[np.arange(8) % 3] + np.random.default_rng(8).normal(0, 0.8, 8)
KS = [2, 3, 5, 10]
N_STATES = 30
PROBS = 1.0 / np.arange(1, N_STATES + 1)
PROBS /= PROBS.sum()


def exact8():
    """All partitions of 8 items and their log posterior: DP(1), NIG, three groups of data."""
    import pymc as pm

    import pymc_partition as pmp
    from pymc_partition.exact import exact_posterior

    y = Y8
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=8, prior=pmp.DirichletProcess(alpha=1.0))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.families.NormalInverseGamma(**NIG8), observed=y)
    ex = exact_posterior(model, progressbar=False)
    labels, probs = ex.top(ex.n_states)
    return labels, np.log(probs)


def checker8():
    """The conditional check's per-draw terms for :func:`exact8`'s model (the default items)."""
    from bench_conditional_check import Checker

    from pymc_partition.families import NormalInverseGamma
    from pymc_partition.priors import DirichletProcess
    from pymc_partition.spec import PartitionSpec

    return Checker(PartitionSpec.from_data(DirichletProcess(1.0), NormalInverseGamma(**NIG8), Y8))


def designs(names):
    """name -> (states, logp, draw(n_chain, n_draw, seed), n_draw)."""
    universe = random_partitions(N_STATES, 8, np.random.default_rng(1))
    lp30 = np.log(PROBS)
    out = {}
    for cross, tag in ((1e-3, "basin_1e-3"), (3e-3, "basin_3e-3"), (1e-2, "basin_1e-2")):
        out[tag] = (universe, lp30, lambda C, T, s, c=cross: two_basin_chain(PROBS, C, T, s, cross=c), 10_000)
    out["excursion"] = (
        universe,
        lp30,
        lambda C, T, s: excursion_chain(PROBS, C, T, np.random.default_rng(s), stay=0.0, max_step=1),
        10_000,
    )
    out["sticky"] = (
        universe,
        lp30,
        lambda C, T, s: metropolis_chain(PROBS, C, T, np.random.default_rng(s), stay=0.95, max_step=1),
        5_000,
    )
    if {"exact8", "gibbs8"} & set(names):
        labels, lp = exact8()
        p8 = np.exp(lp - lp.max())
        p8 /= p8.sum()
        out["exact8"] = (labels, lp, lambda C, T, s: iid_chain(p8, C, T, np.random.default_rng(s)), 5_000)
        out["gibbs8"] = (labels, lp, lambda C, T, s: gibbs_chain(labels, lp, C, T, s, thin=8), 5_000)
    return {k: out[k] for k in names}


def fast_run(states, lp, index, seed):
    """Hotelling-RS and the verdict's FAIL decision from it (no R-hat, no chain agreement)."""
    from arviz_regen.diagnostics.summary import _rare_switching
    from arviz_regen.diagnostics.verdict import Check, decide, hotelling_check

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hot = arviz_regen.hotelling_rs(make_idata(states, index, lp), k=KS, n_bootstrap=199, random_seed=seed)
    row = {f"p_all[k={k}]": float(hot.p_value_all.sel(k=k)) for k in KS}
    for part in ("pooled", "agreement", "recurrence"):
        row[f"p_{part}[k=2]"] = float(hot[f"p_value_{part}"].sel(k=2))
    check = hotelling_check(hot)
    row["hotelling (Simes over K)"] = check.p_value
    rare = _rare_switching(hot, index.shape[0])
    extra = [] if rare is None else [Check("chain_agreement", np.nan, "", "undecided", rare)]
    v = decide([check, *extra], None, index.shape[0], ALPHA)
    row["verdict p"] = v.p_value
    row["status"] = v.status if v.status == "FAIL" or index.shape[0] > 1 else "NOT REACHED"
    return row


def add_terms(idata, terms):
    """The conditional_checks group, as ``pmp.compute_conditional_checks`` adds it."""
    import xarray as xr

    from arviz_regen.xr.containers import add_group
    from pymc_partition.conditional_check import CHECK_NAMES

    ds = xr.Dataset({"z": (("chain", "draw", "check"), terms)}, coords={"check": list(CHECK_NAMES)})
    return add_group(idata, "conditional_checks", ds, replace=True)


def one_run(states, lp, index, seed, checker=None):
    idata = make_idata(states, index, lp)
    if checker is not None:
        idata = add_terms(idata, checker.terms(states[index]))
    return summary_row(idata, seed)


def summary_row(idata, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = arviz_regen.regen_summary(idata, k=KS, n_bootstrap=199, n_permutations=199, random_seed=seed)
    checks = table.attrs["checks"]
    row = {"status": table.attrs["verdict_status"]}
    hot = [f"hotelling_rs[k={k}]" for k in KS]
    if hot[0] in table.index:
        for k, name in zip(KS, hot):
            row[f"p_all[k={k}]"] = float(table.loc[name, "p_value_all"])
        for part in ("pooled", "agreement", "recurrence"):
            row[f"p_{part}[k=2]"] = float(table.loc[hot[0], f"p_value_{part}"])
        row["hotelling (Simes over K)"] = float(simes(np.array([row[f"p_all[k={k}]"] for k in KS])))
    for name in ("chain_agreement", "conditional_check"):
        row[name] = checks.get(name, {}).get("p_value", np.nan)
    row["verdict p"] = table.attrs["verdict_p_value"]
    return row


def rate(x):
    x = np.asarray(x, dtype=bool)
    return f"{100 * x.mean():5.1f} ± {100 * np.sqrt(max(x.mean() * (1 - x.mean()), 1e-12) / x.size):3.1f}"


#: full-pipeline designs at 200 and 2,000 items (the issue's "blind at 200 items" data: three well
#: separated groups, DP(1), NIG): Gibbs chains of the right model or of a wrong sampler, judged with
#: the right model's partition_logp and conditional check; name -> (model keywords, sampler
#: keywords); the number of items is the name's last number
MODEL_DESIGNS = {
    "right200": ({}, {}),
    "dp5_200": ({"alpha": 5.0}, {}),
    "beta0x2_200": ({"beta0_factor": 2.0}, {}),
    "dp1.1_200": ({"alpha": 1.1}, {}),
    "offbyone200": ({}, {"log_new": float(np.log(199 / 200))}),
    "far200": ({}, {"start": "one", "n_burn": 0}),
    "right2000": ({}, {}),
    "dp1.1_2000": ({"alpha": 1.1}, {}),
    "dp1.3_2000": ({"alpha": 1.3}, {}),
    "beta0x1.3_2000": ({"beta0_factor": 1.3}, {}),
    "tempered0.9_2000": ({}, {"beta": 0.9}),
    "alpha+1_2000": ({}, {"log_new": float(np.log(2.0))}),
}


def design_items(name):
    """The number of items of a :data:`MODEL_DESIGNS` design (its name's last number)."""
    return int(re.findall(r"\d+", name)[-1])


def model_run_rows(name, runs, C, n_draw, seed=5, cc_path=None):
    """regen_summary rows of ``runs`` runs of a :data:`MODEL_DESIGNS` design and its mean number
    of clusters; ``cc_path``: save the mean co-clustering matrix of the first 200 items over the
    first ten runs there (``.npy``: the size of the error against the right model's)."""
    from bench_conditional_check import Checker, coclustering, data, gibbs_chains, spec_of

    from arviz_regen.xr.containers import from_dict

    model_kw, kw = MODEL_DESIGNS[name]
    n = design_items(name)
    batch = 5 if n <= 200 else 2  # runs per compiled call (memory: batch x C x n_draw x n labels)
    y = data(n)
    right = spec_of(y)
    spec = spec_of(y, **model_kw) if model_kw else right
    checker = Checker(right, seed=1)
    rows, ks, cc = [], [], []
    for b in range(0, runs, batch):
        nb = min(batch, runs - b)
        labels = gibbs_chains(spec, C, n_draw, seed + 7919 * b, runs=nb, **kw)
        for r in range(nb):
            lab = labels[r]
            lp = right.log_posterior(lab.reshape(-1, n)).reshape(C, n_draw)
            idata = from_dict({"posterior": {"z": lab},
                               "sample_stats": {"partition_logp": lp, "n_clusters": lab.max(axis=-1) + 1}},
                              dims={"z": ["z_dim_0"]})  # fmt: skip
            rows.append(summary_row(add_terms(idata, checker.terms(lab)), b + r))
            ks.append(float((lab.max(axis=-1) + 1).mean()))
            if cc_path and len(cc) < 10:
                cc.append(coclustering(lab))
        st = np.array([x["status"] for x in rows])
        cond = np.array([x.get("conditional_check", np.nan) for x in rows], dtype=float)
        so_far = f"FAIL {rate(st == 'FAIL')}, NOT REACHED {rate(st == 'NOT REACHED')}"
        print(f"  (so far) {name} {len(rows)} runs: {so_far}, conditional_check {rate(cond < ALPHA)}", flush=True)
    if cc_path:
        np.save(cc_path, np.mean(cc, axis=0))
    return rows, float(np.mean(ks))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--designs", default="exact8,gibbs8,basin_1e-3,basin_3e-3,basin_1e-2,excursion,sticky")
    ap.add_argument("--chains", default="1,4")
    ap.add_argument("--draws", type=int, default=None, help="draws per chain (default: the design's)")
    ap.add_argument("--json")
    ap.add_argument(
        "--coclustering",
        default=None,
        help="model designs: save each one's mean co-clustering matrix to PREFIX-<design>-C<chains>.npy",
    )
    ap.add_argument("--seed", type=int, default=0, help="offset of the seeds (independent runs)")
    ap.add_argument("--progress", type=int, default=0, help="print the rates so far every this many runs")
    ap.add_argument("--fast", action="store_true", help="Hotelling-RS only: FAIL rates without R-hat / chain agreement")
    ap.add_argument(
        "--conditional",
        action="store_true",
        help="exact8 / gibbs8: add the conditional check's group (the full verdict pipeline)",
    )
    args = ap.parse_args(argv)
    results = {}
    names = args.designs.split(",")
    model_names = [n for n in names if n in MODEL_DESIGNS]
    jobs = list(designs([n for n in names if n not in MODEL_DESIGNS]).items())
    jobs += [(n, None) for n in model_names]
    for name, design in jobs:
        for C in (int(c) for c in args.chains.split(",")):
            t0 = time.process_time()
            if design is None:
                n_draw = args.draws or 1000
                cc_path = args.coclustering and f"{args.coclustering}-{name}-C{C}.npy"
                rows, k = model_run_rows(name, args.runs, C, n_draw, seed=5 + 104729 * args.seed, cc_path=cc_path)
                extra = f", mean clusters {k:.2f}"
            else:
                states, lp, draw, n_draw = design
                n_draw = args.draws or n_draw
                index = draw(args.runs * C, n_draw, 1000 * C + 7 + 104729 * args.seed).reshape(args.runs, C, n_draw)
                checker = checker8() if args.conditional and name in ("exact8", "gibbs8") else None
                run = fast_run if args.fast else one_run
                extra_args = () if args.fast else (checker,)
                rows = []
                for r in range(args.runs):
                    rows.append(run(states, lp, index[r], r + args.runs * args.seed, *extra_args))
                    if args.progress and (r + 1) % args.progress == 0:  # cumulative so far
                        st = np.array([x["status"] for x in rows])
                        cond = np.array([x.get("conditional_check", np.nan) for x in rows], dtype=float)
                        print(
                            f"  (so far) {name} {r + 1} runs: FAIL {rate(st == 'FAIL')}, NOT REACHED "
                            f"{rate(st == 'NOT REACHED')}, conditional_check {rate(cond < ALPHA)}",
                            flush=True,
                        )
                extra = ", with the conditional check" if checker is not None else ""
            keys = [k for k in rows[0] if k != "status"]
            print(
                f"\n{name}, {C} chain(s) x {n_draw} draws, {args.runs} runs "
                f"({time.process_time() - t0:.0f} s CPU{extra}): % rejected at α = {ALPHA} ± 1 SE"
            )
            res = {}
            for k in keys:
                v = np.array([r.get(k, np.nan) for r in rows], dtype=float)
                if np.isfinite(v).any():
                    res[k] = (float(np.mean(v < ALPHA)), float(np.mean(np.isnan(v))))
                    print(f"  {k:28s} {rate(v < ALPHA)}   (not run: {100 * np.mean(np.isnan(v)):.0f} %)")
            st = np.array([r["status"] for r in rows])
            for s in ("FAIL", "NOT REACHED", "PASS"):
                print(f"  verdict {s:20s} {rate(st == s)}")
                res[f"verdict {s}"] = float(np.mean(st == s))
            results[f"{name}/C={C}"] = res
            sys.stdout.flush()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
