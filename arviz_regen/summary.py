"""One table: the Hotelling-RS verdict next to R-hat and ESS of the label-invariant statistics."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ._data import load_partition, to_inference_data
from .hotelling import hotelling_rs

__all__ = ["regen_summary"]

_STAT_COLUMNS = ["mean", "sd", "ess_bulk", "ess_tail", "r_hat"]
_VERDICT_COLUMNS = ["p_value_all", "p_value_pooled", "p_value_agreement", "p_value_recurrence"]


def _stat_dataset(idata, pdraws, stats_vars, logp_var):
    """The requested (chain, draw) statistics, in memory (they are small)."""
    out = {}
    ss = idata.sample_stats if "sample_stats" in idata.groups() else xr.Dataset()
    for name in stats_vars:
        if name in ss.data_vars:
            out[name] = np.asarray(ss[name].transpose("chain", "draw").values, dtype=float)
        elif name == "n_clusters":
            # a function of the state: recover it from the labels when it was not recorded
            out[name] = (pdraws.labels.max(axis=1) + 1)[pdraws.index].astype(float)
        elif name != logp_var:  # a missing log posterior gets its own warning below
            warnings.warn(f"sample_stats[{name!r}] not found; left out of the summary.", UserWarning, stacklevel=3)
    return xr.Dataset(
        {k: (("chain", "draw"), v) for k, v in out.items()},
        coords={"chain": pdraws.chain, "draw": pdraws.draw},
    )


def _hotelling_rows(ds, ks, chains):
    """One row ``hotelling_rs[k=K]`` per K: the verdict, the per-chain p-values, tour counts."""
    labels = ds["top_state_labels"].values
    n_ranked = int((labels[:, 0] >= 0).sum()) if labels.shape[1] else 0  # top states that exist
    visiting = ds["tours_visiting"].transpose("chain", "rank").values
    n_tours_min = int(ds["n_tours"].values.min())
    rows = []
    for kk in ks:
        sel = ds.sel(k=kk)
        row = {name: float(sel[name].values) for name in _VERDICT_COLUMNS}
        for c, pv in zip(chains, sel["p_value"].transpose("chain").values):
            row[f"p_value[{c}]"] = float(pv)
        row["n_tours_min"] = n_tours_min
        used = min(int(kk), n_ranked)
        row["tours_visiting_min"] = int(visiting[:, :used].min()) if used else 0
        rows.append(pd.Series(row, name=f"hotelling_rs[k={int(kk)}]"))
    return rows


def regen_summary(
    data,
    var_names=None,
    *,
    k=(2, 3, 5, 10),
    stats_vars=("n_clusters", "partition_logp"),
    logp_var="partition_logp",
    pooled=True,
    method=None,
    n_bootstrap=499,
    random_seed=0,
    round_to=None,
    logp=None,
    coords=None,
):
    """Summary table: ArviZ mean/sd/ESS/R-hat of label-invariant statistics and the Hotelling-RS verdict.

    Parameters
    ----------
    data : InferenceData or convertible (dask-backed data are reduced chunk-wise)
    var_names : str or list of one str, optional
        The partition variable.
    k : int or sequence of int
        K values of the Hotelling-RS rows.
    stats_vars : sequence of str
        ``sample_stats`` variables summarized with ArviZ's ``summary`` (``n_clusters`` is
        recomputed from the labels if it was not recorded; others missing are left out with a
        warning).
    logp_var : str
        ``sample_stats`` variable with the log unnormalized posterior.
    pooled : bool
        Passed to :func:`arviz_regen.hotelling_rs` (ranking of the top states for the per-chain
        p-values; the verdict always uses the pooled ranking).
    method : {"bootstrap", "chi2"}, optional
        Reference distribution of the per-chain p-values, passed to
        :func:`arviz_regen.hotelling_rs` (default "bootstrap"). The verdict ``p_value_all``
        always uses the renewal bootstrap.
    n_bootstrap : int, default 499
        Bootstrap replicates; p-values are multiples of 1/(n_bootstrap + 1).
    random_seed : int or None, default 0
        Seed of the bootstrap (the same data give the same table).
    round_to : int, optional
        Round the table.
    logp : array_like, optional
        Log posterior ``(chain, draw)`` for inputs without sample_stats.
    coords : dict, optional
        Selection of chains and draws applied first.

    Returns
    -------
    pandas.DataFrame
        One row per statistic (columns ``mean sd ess_bulk ess_tail r_hat``) and one row
        ``hotelling_rs[k=K]`` per K with columns

        - ``p_value_all``: **the verdict**, one p-value for all chains together (Simes'
          combination of the three below). Compare it, and only it, with α: the per-chain
          columns are K × chains separate tests without multiplicity control.
        - ``p_value_pooled`` (pooled tours fit the known relative probabilities),
          ``p_value_agreement`` (the chains agree on the top states),
          ``p_value_recurrence`` (the chains return to the regeneration state equally often;
          NaN with one chain);
        - ``p_value[<chain>]``: per-chain p-values (NaN for a chain without two whole tours);
        - ``n_tours_min``: fewest whole regeneration tours of any chain;
        - ``tours_visiting_min``: fewest whole tours (of any chain) in which one of the K top
          states was visited; below :data:`arviz_regen.hotelling.MIN_TOURS_VISITING` the result
          rests on a handful of excursions and means little.

        Cells that do not apply are NaN. A NaN ``p_value_all`` means that no verdict was
        reached (e.g. the states do not recur: no whole tour at all). Without ``logp_var`` the
        Hotelling-RS rows are left out with a warning.

    Raises
    ------
    ImportError
        If neither ArviZ 0.x (``arviz.summary``) nor ``arviz-stats`` (ArviZ 1.x) is installed.

    Notes
    -----
    R-hat and ESS come from :func:`arviz.summary` with ArviZ 0.x, otherwise from
    :func:`arviz_stats.summary` (ArviZ 1.x; its ``sd`` divides by n rather than n − 1).
    """
    idata = to_inference_data(data, logp=logp, coords=coords, logp_var=logp_var)
    pdraws = load_partition(idata, var_names, logp_var=logp_var)
    stats_ds = _stat_dataset(idata, pdraws, stats_vars, logp_var)
    if stats_ds.data_vars:
        table = az_summary(stats_ds)
    else:
        table = pd.DataFrame(columns=_STAT_COLUMNS)
    rows = []
    if pdraws.logp is None:
        warnings.warn(
            f"sample_stats[{logp_var!r}] not found: no Hotelling-RS rows in the summary.",
            UserWarning,
            stacklevel=2,
        )
    else:
        ks = np.atleast_1d(k)
        ds = hotelling_rs(
            pdraws,
            k=list(ks),
            pooled=pooled,
            method=method,
            n_bootstrap=n_bootstrap,
            random_seed=random_seed,
            logp_var=logp_var,
        )
        rows = _hotelling_rows(ds, ks, pdraws.chain)
    if rows:
        table = pd.concat([table, pd.DataFrame(rows)], axis=0)
    if round_to is not None:
        table = table.round(round_to)
    return table


def _summary_function():
    """ArviZ 0.x ``arviz.summary``, else ``arviz_stats.summary`` (ArviZ 1.x), else ImportError."""
    try:
        import arviz as az
    except ImportError:
        az = None
    if az is not None and str(getattr(az, "__version__", "0")).split(".")[0] == "0" and hasattr(az, "summary"):
        return az.summary
    try:
        from arviz_stats import summary
    except ImportError:
        summary = None
    if summary is not None:
        return summary
    raise ImportError(
        "regen_summary needs ArviZ's summary for R-hat and ESS: install ArviZ 0.x "
        "(`pip install 'arviz<1'`) or, with ArviZ 1.x, `pip install arviz-stats`."
    )


def az_summary(dataset):
    """mean, sd, ess_bulk, ess_tail, r_hat of the (chain, draw) variables of ``dataset``."""
    summary = _summary_function()
    return summary(dataset, kind="all", round_to="none")[_STAT_COLUMNS]
