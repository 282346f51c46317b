"""The paper's workflow in steps.

Data, model, exact posterior under each reading of the prior, both samplers, and the diagnostics along the iterations
(the numbers behind Figure 2).

Used by the main job (:mod:`pymc_partition.paper.job`) and the notebook. Heavy imports (PyMC,
arviz_regen) happen inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np

from arviz_regen.xr.containers import add_group, get_group

from . import constants

__all__ = [
    "SAMPLER_LABELS",
    "BIG_ERROR_COLUMN",
    "P_VALUE_COLUMN",
    "simulate_data",
    "load_data",
    "build_model",
    "make_steps",
    "sample_both",
    "sample_timed",
    "exact_under_readings",
    "top_partitions",
    "convergence_diagnostics",
    "diagnostics_table",
]

#: Display names of the two samplers of the paper's comparison (and of the notebook's third, a
#: sampler with a plausible bug: :mod:`pymc_partition.paper.bug`).
SAMPLER_LABELS = {
    "gibbs": "Gibbs",
    "split_merge": "split-merge (badly mixing)",
    "off_by_one": "Gibbs, off-by-one bug",
}

#: Prefix of the p-value columns of :func:`diagnostics_table` (``"p_value_all K=2"``, …).
P_VALUE_COLUMN = "p_value_all"

#: Column of :func:`diagnostics_table`: share of the pairs with an error above the paper's 10 %.
BIG_ERROR_COLUMN = f"share of pairs |error| > {constants.SPLIT_MERGE_ERRORS[0]:g}"


def simulate_data(random_seed=constants.SEED):
    """Simulate data of the Arabidopsis shape from the paper's fitted model.

    14 items, 43 variables, ColWT's 3 replicates and 4 for the others; the model is
    :data:`~.constants.EB_HYPERPARAMETERS`.
    """
    from ..datasets import simulate_spike_slab

    return simulate_spike_slab(
        n_items=constants.N_ITEMS, n_vars=constants.N_VARS, n_replicates=list(constants.REPLICATES),
        **constants.EB_HYPERPARAMETERS, random_seed=random_seed,
    )  # fmt: skip


def load_data(path=None, *, random_seed=constants.SEED):
    """Return the Arabidopsis data from ``path``, or simulated data (:func:`simulate_data`) if ``path`` is None.

    Find the path with :func:`pymc_partition.datasets.arabidopsis_path`.
    """
    from ..datasets import load_arabidopsis

    return simulate_data(random_seed) if path is None else load_arabidopsis(path)


def build_model(data, estimates, prior=None):
    """Build the paper's model; return ``(model, z)``.

    A partition of the items with ``prior`` (default :func:`~.readings.paper_prior`) and the spike-and-slab marginal
    likelihood with the hyperparameters ``estimates``.
    """
    import pymc as pm

    import pymc_partition as pmp

    from .readings import paper_prior

    with pm.Model(coords={"item": list(data.item_names)}) as model:
        z = pmp.Partition("z", n_items=data.n_items, prior=paper_prior() if prior is None else prior)
        pmp.MarginalLikelihood(
            "y", partition=z, family=pmp.SpikeSlabNormal(**estimates),
            observed=data.values, item_index=data.item_index,
        )  # fmt: skip
    return model, z


def make_steps(z):
    """Return the two samplers of the comparison, as zero-argument factories keyed like SAMPLER_LABELS."""
    import pymc_partition as pmp

    return {
        "gibbs": lambda: pmp.GibbsPartition([z]),
        "split_merge": lambda: pmp.SplitMerge.badly_mixing([z]),
    }


def sample_both(model, z, *, draws=constants.DRAWS, chains=constants.CHAINS, cores=1,
                random_seed=constants.SEED, progressbar=True, item_names=None):  # fmt: skip
    """Sample the model with GibbsPartition and with the badly mixing SplitMerge.

    Returns ``(idatas, seconds)``: dicts keyed ``"gibbs"``, ``"split_merge"``. ``seconds`` is
    the sampling time of each, measured the same way for both: each sampler first runs a few
    untimed draws, so that the compilation on first use in a process (numba kernels: about 20 s
    with cold caches, paid by whichever sampler runs first) is not counted. With
    ``item_names``, the partition's item dimension gets them as coordinates.
    """
    idatas, seconds = {}, {}
    for name, make_step in make_steps(z).items():
        idatas[name], seconds[name] = sample_timed(
            model, z, make_step, draws=draws, chains=chains, cores=cores, random_seed=random_seed,
            progressbar=progressbar, item_names=item_names,
        )  # fmt: skip
    return idatas, seconds


def sample_timed(model, z, make_step, *, draws, chains, cores=1, random_seed=constants.SEED,
                 progressbar=True, item_names=None):  # fmt: skip
    """``pm.sample`` with the step ``make_step()``, timed after an untimed warm-up of 5 draws.

    Returns ``(idata, seconds)``; see :func:`sample_both`.
    """
    import pymc as pm

    pm_log = logging.getLogger("pymc")
    level = pm_log.level
    with model:
        try:  # PyMC's "only 5 samples per chain" advice does not apply to a warm-up
            pm_log.setLevel(logging.ERROR)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pm.sample(draws=5, tune=0, chains=1, cores=1, step=make_step(), random_seed=random_seed,
                          progressbar=False, compute_convergence_checks=False)  # fmt: skip
        finally:
            pm_log.setLevel(level)
        t0 = time.perf_counter()
        idata = pm.sample(
            draws=draws, tune=0, chains=chains, cores=cores, step=make_step(),
            random_seed=random_seed, progressbar=progressbar, compute_convergence_checks=False,
        )  # fmt: skip
        seconds = time.perf_counter() - t0
    dim = f"{z.name}_dim_0"
    posterior = get_group(idata, "posterior")
    if item_names is not None and dim in posterior.dims:
        add_group(idata, "posterior", posterior.assign_coords({dim: list(item_names)}), replace=True)
    return idata, seconds


def exact_under_readings(data, estimates, priors=None, *, top_k=1000):
    """Return the exact posterior of the data under each prior (default: every reading of the paper's).

    Parameters
    ----------
    data : ClusteringData
    estimates : dict
        The spike-and-slab hyperparameters.
    priors : dict, optional
        ``{label: prior}``; default :func:`~.readings.prior_readings`.
    top_k : int
        Most probable partitions kept by each exact posterior.

    Returns
    -------
    (numbers, exacts) : (dict, dict)
        ``numbers[label]``: ``prior P(C=1)``, ``prior P(C<=3)``, ``MAP probability`` and
        ``top-10 mass`` (input of :func:`~.comparison.readings_table`); ``exacts[label]``: the
        :class:`~pymc_partition.ExactPosterior`.
    """
    from ..exact import exact_posterior
    from .comparison import TOP_MASS_KEY
    from .readings import n_clusters_pmf, prior_readings

    priors = prior_readings() if priors is None else priors
    numbers, exacts = {}, {}
    for label, prior in priors.items():
        model, _ = build_model(data, estimates, prior)
        exacts[label] = exact = exact_posterior(model, top_k=top_k, progressbar=False)
        _, probs = exact.top(constants.TOP_K)
        pc = n_clusters_pmf(prior, data.n_items)
        numbers[label] = {
            "prior P(C=1)": float(pc[0]), "prior P(C<=3)": float(pc[:3].sum()),
            "MAP probability": float(probs[0]), TOP_MASS_KEY: float(probs.sum()),
        }  # fmt: skip
    return numbers, exacts


def top_partitions(exact, item_names, k=constants.TOP_K):
    """Return the ``k`` most probable partitions, their probabilities and cumulative mass, as a Table."""
    import pandas as pd

    from .table import Table

    labels, probs = exact.top(k)
    names = np.asarray(item_names)

    def blocks(row):
        return " | ".join("{" + ", ".join(names[row == c]) + "}" for c in range(int(row.max()) + 1))

    frame = pd.DataFrame(
        {"probability": probs, "cumulative": np.cumsum(probs), "partition": [blocks(row) for row in labels]},
        index=pd.RangeIndex(1, len(probs) + 1, name="rank"),
    )
    return Table(frame, formats={"probability": "{:.4f}", "cumulative": "{:.4f}"}, left=("partition",))


def convergence_diagnostics(idata, exact_coclustering, *, k=constants.K_VALUES, n_points=constants.N_POINTS):
    """Along-the-draws diagnostics of one sampler (the three panels of the paper's Figure 2).

    Returns a dict with ``reference`` (the exact co-clustering matrix), ``coclustering``
    (cumulative, per chain, ``n_points`` evaluation draws),
    ``abs_error`` (``|rho_hat - rho|`` on the same grid, NaN before the first tour),
    ``hotelling`` (cumulative Hotelling-RS for every K, no look-ahead) and ``final``
    (Hotelling-RS at the end of the chains).
    """
    import arviz_regen

    with warnings.catch_warnings():
        # early in a cumulative trace there are too few tours (NaN se, CV and p-values there, by
        # design); the end-of-chain warnings are reported by regen_summary
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        co = arviz_regen.coclustering(idata, "z", cumulative=True, n_points=n_points)
        hot = arviz_regen.hotelling_rs(idata, "z", k=list(k), cumulative=True)
        final = arviz_regen.hotelling_rs(idata, "z", k=list(k))
    reference = np.asarray(exact_coclustering, dtype=float)
    err = np.abs(co["rho"] - reference)
    return {"reference": reference, "coclustering": co, "abs_error": err, "hotelling": hot, "final": final}


def _pairs(values, n):
    iu, ju = np.triu_indices(n, 1)
    return np.asarray(values)[..., iu, ju]


def diagnostics_table(diags, *, seconds=None, idatas=None, cv_draw=constants.CV_DRAW):
    """One row per sampler: the numbers behind Figure 2 at the end of the chains.

    Columns: maximum and mean absolute co-clustering error against the exact values and the
    share of pairs with an error above the paper's 10 % (worst chain), the maximum CV over pairs
    at ``cv_draw`` (or the nearest evaluation draw) and at the end, the Hotelling-RS verdict
    ``p_value_all`` for each K (one p-value for all chains: the smallest per-chain p-value has
    no multiplicity control), whole tours, sampling seconds and, for split-merge, the acceptance
    rate of its proposals. Returns a pandas DataFrame indexed by :data:`SAMPLER_LABELS`.
    """
    import pandas as pd

    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a chain without tours: NaN
        for name, d in diags.items():
            rows[SAMPLER_LABELS.get(name, name)] = _diagnostics_row(name, d, seconds, idatas, cv_draw)
    return pd.DataFrame(rows).T


def _diagnostics_row(name, d, seconds, idatas, cv_draw):
    co = d["coclustering"]
    n = co.sizes["item_i"]
    err_end = _pairs(d["abs_error"].isel(draw=-1).transpose("chain", "item_i", "item_j").values, n)
    cv = co["cv"].transpose("chain", "draw", "item_i", "item_j").values
    draws = co["draw"].values
    i_cv = int(np.argmin(np.abs(draws - cv_draw)))
    row = {
        "max |error|": np.nanmax(err_end),
        "mean |error|": float(np.nanmax(np.nanmean(err_end, axis=-1))),
        BIG_ERROR_COLUMN: float(np.nanmax(np.mean(err_end > constants.SPLIT_MERGE_ERRORS[0], axis=-1))),
        f"max CV @ draw {int(draws[i_cv]):,}": np.nanmax(_pairs(cv[:, i_cv], n)),
        "max CV @ end": np.nanmax(_pairs(cv[:, -1], n)),
    }
    final = d["final"]
    for kk in final["k"].values:
        row[f"{P_VALUE_COLUMN} K={int(kk)}"] = float(final["p_value_all"].sel(k=kk).values)
    row["tours (min over chains)"] = int(final["n_tours"].values.min())
    if seconds is not None and name in seconds:
        row["sampling seconds"] = round(seconds[name], 1)
    if idatas is not None and "proposal_accepted" in idatas[name].sample_stats:
        row["acceptance"] = float(idatas[name].sample_stats["proposal_accepted"].mean())
    return row
