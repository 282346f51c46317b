"""Which sweep mix mixes best per second? Sampler mixes on the Arabidopsis model, same run.

Run from the repository root::

    python benchmarks/bench_mix.py [--data CSV] [--quick]

For each mix (plain Gibbs, and split-merge proposals with 0, 1, 2 and 5 intermediate restricted
scans plus one Gibbs sweep per step: ``SplitMerge``'s default is 5) four chains are run through
``pm.sample`` (``cores=1``; the time is PyMC's ``sampling_time``: the sampler and PyMC's
in-process loop, no set-up), started from the all-in-one partition. Reported per mix: time per draw;
effective sample size per draw (``arviz.ess``, bulk, over the four chains) of ``partition_logp``,
``n_clusters`` and every co-clustering indicator ``1[z_i = z_j]`` (median and smallest over the 91
pairs); effective samples per second relative to the default mix (the figure that decides); and the
largest absolute error of the co-clustering estimate against the exact posterior
(:func:`pymc_partition.exact_posterior`), with its Monte Carlo standard error from the ESS.

The data are the Arabidopsis CSV (``--data``, ``$PMP_ARABIDOPSIS_CSV``, or beside the clone) with
the paper's hyperparameters and the uniform multinomial-Dirichlet prior.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
warnings.filterwarnings("ignore")
logging.getLogger("pymc").setLevel(logging.ERROR)

import arviz as az  # noqa: E402
import pymc as pm  # noqa: E402

import pymc_partition as pmp  # noqa: E402
from pymc_partition.datasets import arabidopsis_path, load_arabidopsis  # noqa: E402

HYPER = dict(mu=0.083, sigma2=0.16, sigma2_eta=0.37, sigma2_theta=5.1, p=0.034)

MIXES = {
    "Gibbs only": lambda z: pmp.GibbsPartition([z]),
    "SM t=0 + Gibbs": lambda z: pmp.SplitMerge([z], n_restricted_scans=0),
    "SM t=1 + Gibbs": lambda z: pmp.SplitMerge([z], n_restricted_scans=1),
    "SM t=2 + Gibbs": lambda z: pmp.SplitMerge([z], n_restricted_scans=2),
    "SM t=5 + Gibbs (default)": lambda z: pmp.SplitMerge([z]),
}


def indicators(labels):
    """``(chain, draw, pair)`` co-clustering indicators."""
    n = labels.shape[-1]
    iu = np.triu_indices(n, 1)
    return (labels[..., iu[0]] == labels[..., iu[1]]).astype(float), iu


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None, help="Arabidopsis CSV")
    ap.add_argument("--quick", action="store_true", help="4 x 5,000 draws instead of 4 x 50,000")
    args = ap.parse_args(argv)
    try:
        path = arabidopsis_path(args.data)
    except FileNotFoundError as err:
        ap.error(str(err))
    if path is None:
        ap.error("the Arabidopsis CSV was not found: give --data or set PMP_ARABIDOPSIS_CSV")
    d = load_arabidopsis(path)
    draws = 5_000 if args.quick else 50_000
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=14, prior=pmp.UniformMultinomialDirichlet())
        pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**HYPER),
                               observed=np.asarray(d.values), item_index=np.asarray(d.item_index))  # fmt: skip
    exact = pmp.exact_posterior(model, progressbar=False)
    print(f"Arabidopsis model, 4 chains x {draws:,} draws per mix, cores=1; "
          f"load avg {os.getloadavg()[0]:.2f}\n")  # fmt: skip
    rows = []
    for name, make in MIXES.items():
        with model:
            step = make(model["z"])
            idata = pm.sample(draws=draws, tune=0, chains=4, cores=1, step=step, random_seed=7,
                              progressbar=False, compute_convergence_checks=False)  # fmt: skip
        seconds = idata.posterior.attrs["sampling_time"]  # PyMC's timer: no set-up
        labels = idata.posterior["z"].values
        ind, iu = indicators(labels)
        ess_pairs = np.array([float(az.ess(ind[..., k])) for k in range(ind.shape[-1])])
        ss = idata.sample_stats
        ess_lp = float(az.ess(ss["partition_logp"].values))
        ess_c = float(az.ess(ss["n_clusters"].values.astype(float)))
        co = ind.mean(axis=(0, 1))
        p = exact.coclustering[iu]
        err = np.abs(co - p)
        k = int(np.argmax(err))
        se = np.sqrt(p[k] * (1 - p[k]) / max(ess_pairs[k], 1.0))
        n_total = 4 * draws
        rows.append((name, seconds / n_total, ess_lp / n_total, ess_c / n_total,
                     np.median(ess_pairs) / n_total, ess_pairs.min() / n_total, err[k], se))  # fmt: skip
    ref = next(r for r in rows if "default" in r[0])
    print(f"{'mix':<26}{'per draw':>10}{'ESS/draw: logp':>16}{'C':>7}{'pairs med':>11}{'min':>7}"
          f"{'ESS/s vs default: logp':>24}{'pairs med':>11}{'min':>7}{'max |co - exact|':>19}")  # fmt: skip
    for name, t, e_lp, e_c, e_med, e_min, err, se in rows:
        rel = [(e / t) / (r / ref[1]) for e, r in ((e_lp, ref[2]), (e_med, ref[4]), (e_min, ref[5]))]
        print(f"{name:<26}{t * 1e6:>7.1f} us{e_lp:>16.3f}{e_c:>7.3f}{e_med:>11.3f}{e_min:>7.3f}"
              f"{rel[0]:>23.2f}x{rel[1]:>10.2f}x{rel[2]:>6.2f}x{err:>11.4f} (SE {se:.4f})")  # fmt: skip
    print("\nESS/s relative to the default mix: above 1 mixes more per second of sampling.")


if __name__ == "__main__":
    main()
