"""Rejection rates of the convergence diagnostics by simulation (issue 19: before / after).

Run: ``python benchmarks/bench_diagnostic_calibration.py [--quick] [--json PATH]``. Every
design uses chains with a known answer, fixed seeds, and reports rejection rates at α = 0.05
with their binomial standard errors:

A. per-chain Hotelling-RS p-values of *correct* chains that reach their top states only through
   long excursions (:func:`arviz_regen.testing.excursion_chain`: 30 partitions, π ∝ 1/rank,
   top states far apart on the chain's path, 10,000 draws), several speeds; also among the chains
   whose top states were all seen in ≥ 5 tours (no warning), and ``p_value_all`` of 4 chains;
B. power of the per-chain p-values: iid draws with the top state 10 % over-visited;
C. partitions that never recur (:class:`arviz_regen.testing.BlockModel`, 200 items, 4 chains x
   1,000 draws): correct chains at several mixing speeds (and with rare mode switches), and
   chains trapped two and two in two modes of equal size (R-hat of ``n_clusters`` and
   ``partition_logp`` see nothing there). Reported: the verdict of ``regen_summary`` (PASS /
   FAIL / NOT REACHED, as ``arviz-regen-summary --fail-below 0.05`` reads it), the largest
   R-hat of ``n_clusters`` / ``partition_logp``, and, where the installed version has it, the
   chain-agreement test;
D. (``--sections D``, needs PyMC) the Arabidopsis posterior (the CSV if found, else data simulated
   from the fitted model), 4 chains x 10,000 draws: the exact Gibbs sampler and the Gibbs sampler
   with an off-by-one new-cluster weight (:mod:`pymc_partition.paper.bug`): how often the verdict
   rejects, and the largest R-hat of the traces beside it.

The script uses the public API (and, for revisions before issue 19, the CLI's verdict rule), so
the same file measures any revision.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import arviz_regen  # noqa: E402
from arviz_regen.testing import (  # noqa: E402
    BlockModel,
    block_chain,
    excursion_chain,
    iid_chain,
    make_idata,
    random_partitions,
)

ALPHA = 0.05
KS = [2, 3, 5, 10]
N_STATES = 30
PROBS = 1.0 / np.arange(1, N_STATES + 1)
PROBS /= PROBS.sum()


def rate(x):
    """Mean of a boolean array and its binomial standard error, as a string."""
    x = np.asarray(x, dtype=bool)
    if x.size == 0:
        return "n/a"
    p = x.mean()
    return f"{100 * p:5.1f}% ({100 * np.sqrt(p * (1 - p) / x.size):.1f})"


def per_chain(index, states, seed):
    """Per-chain p-values (chains, K), tours visiting, and p_value_all of groups of 4 chains."""
    p, vis, p_all = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for g in range(0, index.shape[0], 4):
            ds = arviz_regen.hotelling_rs(
                make_idata(states, index[g : g + 4], np.log(PROBS)), k=KS, random_seed=seed + g
            )
            p.append(ds.p_value.transpose("chain", "k").values)
            vis.append(ds.tours_visiting.transpose("chain", "rank").values)
            p_all.append(ds.p_value_all.values)
    return np.concatenate(p), np.concatenate(vis), np.array(p_all)


def section_a(n_chain, out):
    states = random_partitions(N_STATES, 8, np.random.default_rng(1))
    print(f"A. per-chain level, correct chains with long excursions ({n_chain} chains x 10,000 draws)")
    for d, (stay, step) in enumerate([(0.5, 1), (0.0, 1), (0.8, 3)]):
        t0 = time.perf_counter()
        idx = excursion_chain(PROBS, n_chain, 10_000, np.random.default_rng(100 + d), stay=stay, max_step=step)
        p, vis, p_all = per_chain(idx, states, 1000 * d)
        ok = np.stack([vis[:, :K].min(axis=1) >= 5 for K in KS], axis=1)
        key = f"A stay={stay} max_step={step}"
        out[key] = {
            "per_chain": [float((p[:, j] < ALPHA).mean()) for j in range(len(KS))],
            "undecided": [float(np.isnan(p[:, j]).mean()) for j in range(len(KS))],
            "per_chain_5_tours": [
                float((p[ok[:, j], j] < ALPHA).mean()) if ok[:, j].any() else None for j in range(len(KS))
            ],
            "p_value_all": [float((p_all[:, j] < ALPHA).mean()) for j in range(len(KS))],
        }
        print(f"  {key}  ({time.perf_counter() - t0:.0f} s)")
        for j, K in enumerate(KS):
            print(
                f"    K={K:2d}: per chain {rate(p[:, j] < ALPHA)}, undecided {rate(np.isnan(p[:, j]))}; "
                f"top states all in >= 5 tours ({ok[:, j].sum()} chains) {rate(p[ok[:, j], j] < ALPHA)}; "
                f"p_value_all of 4 chains {rate(p_all[:, j] < ALPHA)}"
            )


def section_b(n_chain, out):
    states = random_partitions(N_STATES, 8, np.random.default_rng(1))
    wrong = PROBS.copy()
    wrong[0] *= 1.10
    idx = iid_chain(wrong / wrong.sum(), n_chain, 10_000, np.random.default_rng(3))
    p, _, _ = per_chain(idx, states, 7)
    out["B power iid +10% top state"] = [float((p[:, j] < ALPHA).mean()) for j in range(len(KS))]
    print(f"B. power, iid with the top state over-visited by 10 % ({n_chain} chains x 10,000 draws)")
    print("    " + ", ".join(f"K={K}: {rate(p[:, j] < ALPHA)}" for j, K in enumerate(KS)))


def _summary_verdict(idata):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = arviz_regen.regen_summary(idata, n_bootstrap=199)
    if "verdict_status" in table.attrs:  # the verdict of regen_summary itself
        status = {"PASS": 0, "FAIL": 1, "NOT REACHED": 3}[table.attrs["verdict_status"]]
        line = table.attrs["verdict"]
    else:  # revisions before issue 19: the CLI's reading of p_value_all
        from arviz_regen.cli import _verdict

        status, line = _verdict(table, ALPHA)
    rows = [r for r in ("n_clusters", "partition_logp") if r in table.index]
    rhat = float(table.loc[rows, "r_hat"].max())
    return status, line, rhat, table


def section_c(n_rep, out):
    model = BlockModel(200)
    designs = {
        "correct, iid (rho=1)": dict(rho=1.0),
        "correct, rho=0.3": dict(rho=0.3),
        "correct, rho=0.1": dict(rho=0.1),
        "correct, rho=0.3, mode switches 1/100": dict(rho=0.3, switch=0.01),
        "trapped 2+2, rho=0.3": dict(rho=0.3, modes=[0, 0, 1, 1]),
    }
    print(f"C. partitions that never recur: 200 items, 4 chains x 1,000 draws, {n_rep} runs per design")
    names = {0: "PASS", 1: "FAIL", 3: "NOT REACHED"}
    for d, (name, kw) in enumerate(designs.items()):
        t0 = time.perf_counter()
        status, rhat, agree = [], [], []
        for r in range(n_rep):
            idata = block_chain(model, 4, 1_000, np.random.default_rng(10_000 * d + r), **kw)
            s, _, rh, table = _summary_verdict(idata)
            status.append(s)
            rhat.append(rh)
            if "chain_agreement" in table.index:
                agree.append(float(table.loc["chain_agreement", "p_value_all"]))
        status = np.array(status)
        rhat = np.array(rhat)
        res = {names[s]: float((status == s).mean()) for s in names}
        res["rhat_n_clusters_logp_above_1.01"] = float((rhat > 1.01).mean())
        if agree:
            res["chain_agreement_rejects"] = float((np.array(agree) < ALPHA).mean())
        out[f"C {name}"] = res
        print(
            f"  {name:40s} verdict PASS {rate(status == 0)}, FAIL {rate(status == 1)}, NOT REACHED "
            f"{rate(status == 3)}; R-hat(n_clusters, logp) > 1.01 {rate(rhat > 1.01)}"
            + (f"; agreement test rejects {rate(np.array(agree) < ALPHA)}" if agree else "")
            + f"  ({time.perf_counter() - t0:.0f} s)"
        )


def section_d(n_rep, out):
    import logging

    import pymc_partition as pmp
    from pymc_partition.paper import bug, workflow

    logging.getLogger("pymc").setLevel(logging.ERROR)  # after importing PyMC, which sets it
    path = pmp.datasets.arabidopsis_path()
    data = workflow.load_data(path)
    eb = pmp.fit_spike_slab(data.values, data.item_index)
    model, z = workflow.build_model(data, eb.estimates)
    print(f"D. Arabidopsis posterior ({'real' if path else 'simulated'} data), 4 chains x 10,000 draws, {n_rep} runs")
    for name in ("gibbs", "off_by_one"):
        t0 = time.perf_counter()
        p_all, rhat = [], []
        for r in range(n_rep):
            if name == "gibbs":
                idata, _ = workflow.sample_timed(model, z, lambda: pmp.GibbsPartition([z]), draws=10_000, chains=4,
                                                 random_seed=100 + r, progressbar=False)  # fmt: skip
            else:
                idata, _ = bug.sample_off_by_one(data, eb.estimates, draws=10_000, chains=4, random_seed=100 + r,
                                                 progressbar=False)  # fmt: skip
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = arviz_regen.regen_summary(idata, var_names="z", n_bootstrap=199, random_seed=r)
            hot = [i for i in table.index if str(i).startswith("hotelling_rs")]
            p_all.append(float(table.loc[hot, "p_value_all"].min()) if hot else np.nan)
            rhat.append(float(table["r_hat"].max()))
        p_all, rhat = np.array(p_all), np.array(rhat)
        out[f"D {name}"] = {"verdict_rejects": float((p_all < ALPHA).mean()), "max_rhat": float(rhat.max())}
        print(f"  {name:10s} smallest p_value_all over K < 0.05: {rate(p_all < ALPHA)}; largest R-hat of any trace "
              f"{rhat.max():.4f}  ({time.perf_counter() - t0:.0f} s)")  # fmt: skip


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer replicates (a smoke run)")
    ap.add_argument("--sections", default="ABC", help="which sections to run (default ABC; D needs PyMC)")
    ap.add_argument("--json", default=None, help="write the rates to this file")
    args = ap.parse_args(argv)
    n_chain = 40 if args.quick else 200
    n_rep = 5 if args.quick else 40
    out = {}
    if "A" in args.sections:
        section_a(n_chain, out)
    if "B" in args.sections:
        section_b(n_chain, out)
    if "C" in args.sections:
        section_c(n_rep, out)
    if "D" in args.sections:
        section_d(5 if args.quick else 20, out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
