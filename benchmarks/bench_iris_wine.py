"""Clustering iris and wine with hyperparameters that need no guessing (issue 18, item 6).

Run from the repository root (scikit-learn supplies the data and the baseline: ``pip install -e
.[bench]``)::

    python benchmarks/bench_iris_wine.py [--quick] [--seed 1]

Each data set is standardised (``StandardScaler``, as a user would) and clustered by:

- ``defaults``: ``NormalInverseWishart.from_data(x, n_clusters=3)`` (mclust's default prior,
  Fraley & Raftery 2007) or ``NormalInverseGamma.from_data``, with ``DirichletProcess(1)``,
  all numbers fixed; ``SplitMerge`` (its default mix: a split-merge proposal and a Gibbs sweep
  per draw).
- ``hierarchical``: the same family with ``scale ~ LogNormal(0, 1)`` multiplying ``psi0`` /
  ``beta0`` (the data set how wide a cluster is, about the default) and
  ``alpha ~ Gamma(2, 1)``; ``pm.sample`` gives the two scalars to ``PartitionHyperparameters``
  (Escobar-West for ``alpha``, slice sampling for ``scale``), the same draws as the defaults.
- scikit-learn's ``BayesianGaussianMixture`` (10 components, full covariances, Dirichlet-process
  weights, its defaults otherwise), one fit per seed.

The partition's point estimate is SALSO's under VI loss (``arviz_regen.point_estimate``) over
both chains; ARI against the species / cultivar labels. Times are wall seconds of the whole call
(``pm.sample`` with its compilation; ``BayesianGaussianMixture.fit``) on a shared machine.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
warnings.filterwarnings("ignore")

try:
    from sklearn.datasets import load_iris, load_wine
    from sklearn.metrics import adjusted_rand_score
    from sklearn.mixture import BayesianGaussianMixture
    from sklearn.preprocessing import StandardScaler
except ImportError:  # pragma: no cover - an optional extra
    sys.exit("This benchmark needs scikit-learn (the data and the baseline): pip install -e .[bench]")

import pymc as pm  # noqa: E402

logging.getLogger("pymc").setLevel(logging.ERROR)  # after the import, which sets it

import arviz_regen  # noqa: E402
import pymc_partition as pmp  # noqa: E402

FAMILIES = {"NIW": pmp.NormalInverseWishart, "NIG": pmp.NormalInverseGamma}


def build(x, family, hierarchical):
    """The model: data-scaled family, DP prior; hyperpriors on the scale and alpha if asked."""
    with pm.Model() as model:
        scale = pm.LogNormal("scale", 0.0, 1.0) if hierarchical else 1.0
        alpha = pm.Gamma("alpha", 2.0, 1.0) if hierarchical else 1.0
        z = pmp.Partition("z", n_items=x.shape[0], prior=pmp.DirichletProcess(alpha))
        pmp.MarginalLikelihood("y", partition=z, observed=x,
                               family=FAMILIES[family].from_data(x, n_clusters=3, scale=scale))  # fmt: skip
    return model, z


def run_pymc(x, truth, family, hierarchical, draws, tune, seed):
    model, z = build(x, family, hierarchical)
    start = time.perf_counter()
    with model:
        idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, step=[pmp.SplitMerge([z])],
                          random_seed=seed, progressbar=False, compute_convergence_checks=False)  # fmt: skip
    seconds = time.perf_counter() - start
    labels = np.asarray(idata.posterior["z"]).reshape(-1, x.shape[0])[None]
    estimate = arviz_regen.point_estimate(labels, random_seed=seed)["labels"].values
    extra = ""
    if hierarchical:
        q = {k: np.quantile(idata.posterior[k].values, [0.05, 0.5, 0.95]) for k in ("scale", "alpha")}
        extra = "; ".join(f"{k} {v[1]:.2f} [{v[0]:.2f}, {v[2]:.2f}]" for k, v in q.items())
    return adjusted_rand_score(truth, estimate), np.unique(estimate).size, seconds, extra


def run_sklearn(x, truth, seeds):
    scores, sizes, seconds = [], [], []
    for seed in seeds:
        start = time.perf_counter()
        labels = BayesianGaussianMixture(n_components=10, covariance_type="full", random_state=seed,
                                         weight_concentration_prior_type="dirichlet_process",
                                         max_iter=500).fit(x).predict(x)  # fmt: skip
        seconds.append(time.perf_counter() - start)
        scores.append(adjusted_rand_score(truth, labels))
        sizes.append(np.unique(labels).size)
    return scores, sizes, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer draws (a smoke test)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    draws, tune = (300, 100) if args.quick else (1000, 200)
    rows = []
    for name, loader in (("iris", load_iris), ("wine", load_wine)):
        data = loader()
        x = StandardScaler().fit_transform(data.data)
        print(f"{name}: {x.shape[0]} items, {x.shape[1]} variables, {np.unique(data.target).size} classes",
              flush=True)  # fmt: skip
        for family in FAMILIES:
            for hierarchical in (False, True):
                d, t = draws, tune
                ari, k, sec, extra = run_pymc(x, data.target, family, hierarchical, d, t, args.seed)
                label = f"{family} {'hierarchical' if hierarchical else 'defaults'} (2 x {d} draws)"
                rows.append((name, label, f"{ari:.2f}", str(k), f"{sec:.1f}"))
                print(f"  {label}: ARI {ari:.3f}, {k} clusters, {sec:.1f} s {extra}", flush=True)
        scores, sizes, seconds = run_sklearn(x, data.target, range(5))
        label = "BayesianGaussianMixture (5 seeds)"
        rows.append((name, label, f"{np.median(scores):.2f} ({min(scores):.2f}-{max(scores):.2f})",
                     "-".join(map(str, sorted({min(sizes), max(sizes)}))), f"{np.median(seconds):.2f}"))  # fmt: skip
        print(f"  {label}: ARI {np.round(scores, 3).tolist()}, clusters {sizes}, "
              f"{np.round(seconds, 2).tolist()} s", flush=True)  # fmt: skip
    print("\n| data | model | ARI | clusters | seconds |\n|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
