"""One table: Hotelling-RS p-values next to R-hat and ESS of the label-invariant statistics."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ._data import load_partition, to_inference_data
from .hotelling import hotelling_rs

__all__ = ["regen_summary"]

_STAT_COLUMNS = ["mean", "sd", "ess_bulk", "ess_tail", "r_hat"]


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


def regen_summary(
    data,
    var_names=None,
    *,
    k=(2, 3, 5, 10),
    stats_vars=("n_clusters", "partition_logp"),
    logp_var="partition_logp",
    pooled=True,
    round_to=None,
):
    """Summary table: ArviZ mean/sd/ESS/R-hat of label-invariant statistics and Hotelling-RS.

    Parameters
    ----------
    data : InferenceData or convertible (dask-backed data are reduced chunk-wise)
    var_names : str or list of one str, optional
        The partition variable.
    k : int or sequence of int
        K values of the Hotelling-RS rows.
    stats_vars : sequence of str
        ``sample_stats`` variables summarized with :func:`arviz.summary` (``n_clusters`` is
        recomputed from the labels if it was not recorded; others missing are left out with a
        warning).
    logp_var : str
    pooled : bool
        Passed to :func:`arviz_regen.hotelling_rs`.
    round_to : int, optional
        Round the table.

    Returns
    -------
    pandas.DataFrame
        One row per statistic (columns ``mean sd ess_bulk ess_tail r_hat``) and one row
        ``hotelling_rs[k=K]`` per K (columns ``p_value_min``, ``p_value[<chain>]`` for each
        chain, ``n_tours_min``); cells that do not apply are NaN. Without ``logp_var`` the
        Hotelling-RS rows are left out with a warning.
    """
    idata = to_inference_data(data)
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
        ds = hotelling_rs(pdraws, k=list(ks), pooled=pooled, logp_var=logp_var)
        for kk in ks:
            sel = ds.sel(k=kk)
            row = {"p_value_min": float(np.nanmin(sel.p_value.values)) if np.isfinite(sel.p_value.values).any() else np.nan}
            for c, pv in zip(pdraws.chain, sel.p_value.values):
                row[f"p_value[{c}]"] = pv
            row["n_tours_min"] = int(sel.n_tours.values.min())
            rows.append(pd.Series(row, name=f"hotelling_rs[k={int(kk)}]"))
    if rows:
        table = pd.concat([table, pd.DataFrame(rows)], axis=0)
    if round_to is not None:
        table = table.round(round_to)
    return table


def az_summary(dataset):
    import arviz as az

    return az.summary(dataset, kind="all", round_to="none")[_STAT_COLUMNS]
