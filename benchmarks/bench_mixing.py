"""Which move mix mixes best per CPU second on data users have? Move mixes side by side, same run.

Run from the repository root (scikit-learn supplies the real data: ``pip install -e .[bench]``)::

    python benchmarks/bench_mixing.py [--quick | --draws N] [--data iris,wine] [--seed 1]

Data sets, each standardised (``StandardScaler``) as a user would: simulated Gaussian mixtures of
200 and 2,000 items (5 components in 3 dimensions, unequal sizes, some overlap), iris, wine,
breast cancer (PCA to 5 dimensions) and digits (PCA to 10). Model: ``NormalInverseWishart.
from_data(x, n_clusters=3)`` and ``DirichletProcess(1)``, numbers fixed (the moves are compared,
not the hyperpriors).

Move mixes, each one step per draw:

- ``Gibbs``: one collapsed Gibbs sweep (``GibbsPartition``'s default);
- ``SplitMerge``: one restricted-Gibbs split-merge proposal from 5 scans and one Gibbs sweep
  (``SplitMerge``'s default, the mix the README recommends today);
- ``SAMS k + Gibbs``: ``k`` sequentially allocated merge-split proposals and one Gibbs sweep
  (``SequentialMergeSplit(n_proposals=k)``).

Each mix runs 4 chains from the all-in-one partition (as ``pm.sample`` starts) on the engine
(:class:`~pymc_partition.engine.PartitionKernel`, the compiled step ``pm.sample`` calls; no PyMC
loop), one after another; the first 20% of each chain is dropped. Reported per mix: CPU seconds
of the 4 chains (``time.process_time``, compilation excluded); R-hat (rank-normalised) and bulk
ESS over the 4 chains of ``n_clusters`` and ``partition_logp``; ESS per CPU second and its ratio
to ``SplitMerge`` (today's default), the figure that decides; the merge-split acceptance rate;
and the ARI against the known labels of the point estimate (the kept draw of highest
``partition_logp`` over all chains: SALSO's search would cost more than the chains at 2,000
items). ESS on chains that disagree (R-hat well above 1) is small whatever its rate: read the two
together.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
warnings.filterwarnings("ignore")

try:
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
    from sklearn.decomposition import PCA
    from sklearn.metrics import adjusted_rand_score
    from sklearn.preprocessing import StandardScaler
except ImportError:  # pragma: no cover - an optional extra
    sys.exit("This benchmark needs scikit-learn (the data): pip install -e .[bench]")

import arviz as az  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_partition as pmp  # noqa: E402
from pymc_partition.engine import MoveMix, PartitionKernel  # noqa: E402
from pymc_partition.model_spec import partition_spec  # noqa: E402

N_CHAINS = 4
WARMUP = 0.2


def mix(n_gibbs=1, n_split_merge=0, n_scans=0, n_sams=0):
    return MoveMix(n_gibbs=n_gibbs, n_split_merge=n_split_merge, n_scans=n_scans,
                   gibbs_probability=0.0, thin=1, n_sams=n_sams)  # fmt: skip


BASELINE = "SplitMerge"
MIXES = {
    "Gibbs": mix(),
    BASELINE: mix(n_split_merge=1, n_scans=5),
    "SAMS 3 + Gibbs": mix(n_sams=3),
    "SAMS 10 + Gibbs": mix(n_sams=10),
    "SAMS 30 + Gibbs": mix(n_sams=30),
}


def simulated(n, seed):
    """``n`` items from 5 Gaussian components in 3 dimensions, unequal weights, some overlap."""
    rng = np.random.default_rng(seed)
    means = np.array([[0, 0, 0], [4, 0, 0], [0, 4, 0], [2.5, 2.5, 3], [-3, 2, -2]], float)
    labels = rng.choice(5, size=n, p=[0.35, 0.25, 0.2, 0.12, 0.08])
    return means[labels] + rng.normal(0, 1.0, (n, 3)), labels


def datasets(seed):
    """``name -> (x, labels)``, loaded lazily (digits' PCA takes a moment)."""

    def real(loader, n_pc=None):
        def load():
            d = loader()
            x = StandardScaler().fit_transform(d.data)
            if n_pc is not None:
                x = StandardScaler().fit_transform(PCA(n_pc, random_state=0).fit_transform(x))
            return x, d.target

        return load

    return {
        "sim200": lambda: simulated(200, seed),
        "sim2000": lambda: simulated(2000, seed + 1),
        "iris": real(load_iris),
        "wine": real(load_wine),
        "breast_cancer": real(load_breast_cancer, 5),
        "digits": real(load_digits, 10),
    }


def build_spec(x):
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=x.shape[0], prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, observed=x,
                               family=pmp.NormalInverseWishart.from_data(x, n_clusters=3))  # fmt: skip
    return partition_spec(model)


def run_mix(spec, move_mix, draws, seed):
    """4 chains of ``draws`` steps; per-draw stats, the best kept labels and CPU seconds."""
    kernel = PartitionKernel.from_spec(spec, move_mix)
    n = spec.n_items
    lp = np.empty((N_CHAINS, draws))
    k = np.empty((N_CHAINS, draws))
    acc = prop = 0
    best, best_lp = None, -np.inf
    keep = int(WARMUP * draws)
    cpu = 0.0
    for c in range(N_CHAINS):
        rng = np.random.default_rng([seed, c])
        state = kernel.init(np.zeros(n, np.int64))
        start = time.process_time()
        for t in range(draws):
            state, res = kernel.step(state, rng)
            lp[c, t], k[c, t] = res.partition_logp, res.n_clusters
            acc += res.n_proposals_accepted
            prop += res.n_proposals
            if t >= keep and res.partition_logp > best_lp:
                best, best_lp = state, res.partition_logp
        cpu += time.process_time() - start
    return lp[:, keep:], k[:, keep:], best, cpu, (acc / prop if prop else np.nan)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 x 300 draws instead of 4 x 2,000")
    parser.add_argument("--draws", type=int, default=None, help="draws per chain (overrides --quick)")
    parser.add_argument("--data", default=None, help="comma-separated subset of the data sets")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    draws = args.draws or (300 if args.quick else 2000)
    sets = datasets(args.seed)
    names = args.data.split(",") if args.data else list(sets)
    unknown = set(names) - set(sets)
    if unknown:
        parser.error(f"unknown data sets {sorted(unknown)}; choose from {list(sets)}")
    print(f"{N_CHAINS} chains x {draws:,} draws per mix (first {WARMUP:.0%} dropped), engine only, "
          f"CPU seconds; load avg {os.getloadavg()[0]:.2f}\n", flush=True)  # fmt: skip
    rows = []
    for name in names:
        x, truth = sets[name]()
        spec = build_spec(x)
        print(f"{name}: {x.shape[0]} items, {x.shape[1]} dims, {np.unique(truth).size} classes",
              flush=True)  # fmt: skip
        base = None
        for label, move_mix in MIXES.items():
            lp, k, best, cpu, acc = run_mix(spec, move_mix, draws, args.seed)
            ess = {s: float(az.ess(v)) for s, v in (("n_clusters", k), ("partition_logp", lp))}
            rhat = {s: float(az.rhat(v)) for s, v in (("n_clusters", k), ("partition_logp", lp))}
            rate = {s: e / cpu for s, e in ess.items()}
            if label == BASELINE:
                base = rate
            ari = adjusted_rand_score(truth, best)
            row = dict(data=name, mix=label, cpu=cpu, ess=ess, rhat=rhat, rate=rate, acc=acc,
                       ari=ari, k=float(np.median(k)))  # fmt: skip
            rows.append(row)
            print(f"  {label:16s} {cpu:7.1f} s  ESS/s n_clusters {rate['n_clusters']:8.2f}, "
                  f"logp {rate['partition_logp']:8.2f}  R-hat {rhat['n_clusters']:.3f}/"
                  f"{rhat['partition_logp']:.3f}  acc {acc:.3f}  clusters {row['k']:.0f}  "
                  f"ARI {ari:.2f}", flush=True)  # fmt: skip
        for row in rows:
            if row["data"] == name:
                row["ratio"] = {s: row["rate"][s] / base[s] for s in base}
    print("\n| data | mix | CPU s | ESS/s n_clusters (x default) | ESS/s partition_logp (x default) "
          "| R-hat n_clusters / logp | acceptance | clusters | ARI |\n|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    for r in rows:
        print(f"| {r['data']} | {r['mix']} | {r['cpu']:.1f} | "
              f"{r['rate']['n_clusters']:.2f} ({r['ratio']['n_clusters']:.2f}) | "
              f"{r['rate']['partition_logp']:.2f} ({r['ratio']['partition_logp']:.2f}) | "
              f"{r['rhat']['n_clusters']:.3f} / {r['rhat']['partition_logp']:.3f} | "
              f"{r['acc']:.3f} | {r['k']:.0f} | {r['ari']:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
