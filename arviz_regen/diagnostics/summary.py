"""One table and one verdict: every check that applies, combined, beside R-hat and ESS of traces that see the partition.

Rows: ArviZ's mean, sd, bulk/tail ESS and rank-normalized split R-hat of the scalar traces of
:func:`arviz_regen.partition_traces` (``n_clusters``, ``partition_logp``, and the VI and Binder
distances of each draw to reference partitions), then the rows of the checks
(:mod:`arviz_regen.diagnostics.verdict`): ``hotelling_rs[k=K]`` when states recur (not for hierarchical
draws, whose ``partition_logp`` is not a function of the partition: Hotelling-RS needs a fixed
target), ``chain_agreement`` when Hotelling-RS cannot compare two or more chains, and
``conditional_check`` when the
``conditional_checks`` group is present. The verdict combines their p-values (multiplicity
across K and checks accounted for).
"""

from __future__ import annotations

import html
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ..base.blas import one_blas_thread
from ..base.tour_tests import N_LONGEST
from ..estimates.traces import partition_traces
from ..xr.distributed import current_client, resolve_client, using_client
from ..xr.draws import load_partition, to_inference_data
from ..xr.regeneration import SampledHyperparametersWarning
from .agreement import chain_agreement
from .hotelling import hotelling_rs
from .run_length import draws_needed
from .verdict import MEANING, Check, agreement_check, conditional_check_adapter, decide, hotelling_check, recurrence

__all__ = ["regen_summary"]

_STAT_COLUMNS = ["mean", "sd", "ess_bulk", "ess_tail", "r_hat"]
_VERDICT_COLUMNS = ["p_value_all", "p_value_pooled", "p_value_agreement", "p_value_recurrence"]
_AGREEMENT_COLUMNS = [
    "p_value_all",
    "p_value_traces",
    "p_value_coclustering",
    "n_pairs",
    "n_pairs_disagreeing",
    "n_batches",
    "batch_size",
]


def _stat_dataset(idata, pdraws, traces, stats_vars, logp_var):
    """Return the (chain, draw) statistics: the requested sample_stats, then the distance traces."""
    from ..xr.draws import _align_on

    out = {}
    ss = idata.sample_stats if "sample_stats" in idata.groups() else xr.Dataset()
    frame = xr.DataArray(np.zeros((pdraws.chain.size, pdraws.draw.size)), dims=("chain", "draw"),
                         coords={"chain": pdraws.chain, "draw": pdraws.draw})  # fmt: skip
    for name in stats_vars:
        if name in ss.data_vars:
            da = _align_on(ss[name], frame, f"sample_stats[{name!r}]", f"posterior[{pdraws.name!r}]")
            out[name] = np.asarray(da.transpose("chain", "draw").values, dtype=float)
            if name in ("n_clusters", f"n_clusters_{pdraws.name}") and "n_clusters" in traces.data_vars:
                _check_same_counts(name, out[name], traces["n_clusters"].transpose("chain", "draw").values)
        elif name in traces.data_vars:  # n_clusters from the labels when it was not recorded
            out[name] = traces[name].transpose("chain", "draw").values
        elif name != logp_var:  # a missing log posterior gets its own warning below
            warnings.warn(f"sample_stats[{name!r}] not found; left out of the summary.", UserWarning, stacklevel=3)
    for name, da in traces.data_vars.items():
        if name not in out and name not in ("n_clusters", logp_var) and set(da.dims) == {"chain", "draw"}:
            out[name] = da.transpose("chain", "draw").values
    return xr.Dataset(
        {k: (("chain", "draw"), v) for k, v in out.items()},
        coords={"chain": pdraws.chain, "draw": pdraws.draw},
    )


def _param_dataset(idata, pdraws, param_vars, stats_ds):
    """Return the scalar (chain, draw) variables ``param_vars``, aligned on the partition's draws.

    ``"auto"``: every such posterior variable but the partition.
    """
    from ..xr.draws import _align_on

    if param_vars is None:
        return xr.Dataset()
    post = idata.posterior
    ss = idata.sample_stats if "sample_stats" in idata.groups() else xr.Dataset()
    if isinstance(param_vars, str) and param_vars == "auto":
        names = [n for n, da in post.data_vars.items() if n != pdraws.name and set(da.dims) == {"chain", "draw"}]
    else:
        names = [param_vars] if isinstance(param_vars, str) else list(param_vars)
    frame = xr.DataArray(np.zeros((pdraws.chain.size, pdraws.draw.size)), dims=("chain", "draw"),
                         coords={"chain": pdraws.chain, "draw": pdraws.draw})  # fmt: skip
    out = {}
    for name in names:
        if name in stats_ds.data_vars:
            continue
        group = post if name in post.data_vars else ss
        if name not in group.data_vars or set(group[name].dims) != {"chain", "draw"}:
            raise ValueError(
                f"`param_vars`: {name!r} is not a scalar (chain, draw) variable of the posterior or "
                f"sample_stats; scalar posterior variables: "
                f"{[n for n, da in post.data_vars.items() if set(da.dims) == {'chain', 'draw'}]}."
            )
        da = _align_on(group[name], frame, f"{name!r}", f"posterior[{pdraws.name!r}]")
        out[name] = (("chain", "draw"), np.asarray(da.transpose("chain", "draw").values, dtype=float))
    return xr.Dataset(out, coords={"chain": pdraws.chain, "draw": pdraws.draw})


def _check_same_counts(name, recorded, counted):
    """Check that the sampler's cluster counts are those of the labels.

    Else the groups do not hold the same draws (a damaged store reads fill values, or the stats come from another run).
    """
    if recorded.shape == counted.shape and np.array_equal(recorded, counted):
        return
    wrong = int(np.sum(recorded != counted)) if recorded.shape == counted.shape else recorded.size
    raise ValueError(
        f"sample_stats[{name!r}] disagrees with the clusters of the posterior labels in {wrong} "
        f"draw(s) (mean {np.mean(recorded):.3g} against {np.mean(counted):.3g}): the posterior "
        "and sample_stats do not hold the same draws (a damaged or partly written store, or "
        "groups of different runs)."
    )


def _hotelling_rows(ds, ks):
    """One row ``hotelling_rs[k=K]`` per K: the verdict, its parts, tour counts."""
    labels = ds["top_state_labels"].values
    n_ranked = int((labels[:, 0] >= 0).sum()) if labels.shape[1] else 0  # top states that exist
    visiting = ds["tours_visiting"].transpose("chain", "rank").values
    n_tours_min = int(ds["n_tours"].values.min())
    rows = []
    for kk in ks:
        sel = ds.sel(k=kk)
        row = {name: float(sel[name].values) for name in _VERDICT_COLUMNS}
        row["n_tours_min"] = n_tours_min
        used = min(int(kk), n_ranked)
        row["tours_visiting_min"] = int(visiting[:, :used].min()) if used else 0
        rows.append(pd.Series(row, name=f"hotelling_rs[k={int(kk)}]"))
    return rows


def _rare_switching(hot, n_chain):
    """Why the chains cannot be compared by their tours (rare switching), or None.

    Hotelling-RS leaves its agreement and recurrence parts out when a few long tours hold much
    of the draws (:mod:`arviz_regen.base.tour_tests`); the chain-agreement test's batch means are no
    better then (30 % of correct chains crossing two basins about 5 times in 10,000 draws were
    rejected): the chains are not compared, and the verdict is not reached.
    """
    if n_chain < 2 or "p_value_agreement" not in hot:
        return None
    if np.isfinite(np.asarray(hot["p_value_agreement"].values, dtype=float)).any():
        return None
    return (
        f"the chains switch rarely between regions of the state space (the {N_LONGEST} longest "
        "whole tours hold much of the draws): too few crossings to compare the chains; run longer"
    )


def _agreement_row(ds):
    row = {name: float(ds[name].values) for name in _AGREEMENT_COLUMNS[:5]}
    row["n_batches"] = ds.attrs["n_batches"]
    row["batch_size"] = ds.attrs["batch_size"]
    return pd.Series(row, name="chain_agreement")


class SummaryTable(pd.DataFrame):
    """The table of :func:`regen_summary`: a DataFrame that prints every column and its verdict line.

    A plain DataFrame printed in a script elides columns as ``...`` and never shows ``attrs``,
    where the verdict lives. Anything derived from the table (a selection, ``round``) is a plain
    DataFrame again.
    """

    def __repr__(self):
        with pd.option_context("display.max_columns", None, "display.max_colwidth", None):
            body = super().__repr__()
        verdict = self.attrs.get("verdict")
        return f"{body}\n{verdict}" if verdict else body

    __str__ = __repr__

    def _repr_html_(self):
        with pd.option_context("display.max_columns", None):
            body = super()._repr_html_()
        verdict = self.attrs.get("verdict")
        if body is None or not verdict:
            return body
        return f"{body}<p><strong>{html.escape(verdict)}</strong></p>"


@one_blas_thread
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
    n_permutations=199,
    pairs=True,
    alpha=0.05,
    random_seed=0,
    round_to=None,
    logp=None,
    coords=None,
    client=None,
    param_vars=None,
):
    """Summary table and verdict: R-hat and ESS of traces that see the partition, and the deciding test.

    Parameters
    ----------
    data : InferenceData or convertible (dask-backed data are reduced chunk-wise)
    var_names : str or list of one str, optional
        The partition variable.
    k : int or sequence of int
        K values of the Hotelling-RS rows.
    stats_vars : sequence of str
        ``sample_stats`` variables summarized first (``n_clusters`` is recomputed from the
        labels if it was not recorded; others missing are left out with a warning). The distance
        traces of :func:`arviz_regen.partition_traces` follow.
    logp_var : str
        ``sample_stats`` variable with the log unnormalized posterior.
    pooled, method, n_bootstrap
        Passed to :func:`arviz_regen.hotelling_rs` (the verdict ``p_value_all`` always uses the
        pooled ranking and the renewal bootstrap).
    n_permutations, pairs
        Passed to :func:`arviz_regen.chain_agreement` (when it decides).
    alpha : float, default 0.05
        Level of the verdict (``table.attrs["verdict"]``).
    random_seed : int or None, default 0
        Seed of the bootstraps and permutations (the same data give the same table).
    round_to : int, optional
        Round the table.
    logp : array_like, optional
        Log posterior ``(chain, draw)`` for inputs without sample_stats.
    coords : dict, optional
        Selection of chains and draws applied first.
    client : distributed.Client, str or None, optional
        The ``dask.distributed`` cluster whose workers read and hash dask-backed labels and run
        the heavy blocks of the traces, the chain-agreement test and the conditional check: a
        client, a scheduler address (``arviz-regen-summary --scheduler``), or None for the
        active client if there is one (else this process); ``False``: this process. The table
        does not depend on it.
    param_vars : sequence of str or "auto", optional
        Scalar ``(chain, draw)`` variables of the posterior (or ``sample_stats``), such as the
        hyperparameters of a hierarchical model, summarized beside the partition's traces and
        compared across chains by the chain-agreement test; ``"auto"``: every such posterior
        variable. Default: none.

    Returns
    -------
    pandas.DataFrame
        A :class:`~pandas.DataFrame` whose printed form shows every column and ends with the
        verdict line. One row per trace (columns ``mean sd ess_bulk ess_tail r_hat``; ArviZ's
        rank-normalized split R-hat and bulk/tail ESS), then the rows of the checks:

        - states recur (every chain has at least :data:`arviz_regen.xr.regeneration.MIN_TOURS`
          whole tours): one row ``hotelling_rs[k=K]`` per K with ``p_value_all`` (**the
          verdict**, one p-value for all chains: Simes' combination of ``p_value_pooled``,
          ``p_value_agreement``, ``p_value_recurrence``), ``n_tours_min`` (fewest whole tours
          of a chain) and ``tours_visiting_min`` (fewest whole tours, of any chain, visiting one
          of the K top states). Per-chain p-values are in :func:`arviz_regen.hotelling_rs`:
          they are K × chains tests without multiplicity control, not a verdict.
        - with two or more chains that Hotelling-RS cannot compare (states do not recur,
          hierarchical draws, no log posterior): one row ``chain_agreement``
          (:func:`arviz_regen.chain_agreement`) with
          ``p_value_all``, ``p_value_traces``, ``p_value_coclustering``,
          ``n_pairs``, ``n_pairs_disagreeing``, ``n_batches`` and ``batch_size``.
        - with a ``conditional_checks`` group: one row ``conditional_check`` (its combined
          ``p_value_all``, :func:`arviz_regen.conditional_check`).

        ``table.attrs``: ``verdict`` (one line: PASS, FAIL or NOT REACHED at ``alpha``, which
        check failed and what that means, or why no verdict was reached), ``verdict_status``,
        ``decided_by`` (the checks combined, or the failing ones), ``verdict_p_value`` (their
        Bonferroni combination; Hotelling-RS enters as Simes' combination over K) and
        ``checks`` (per check: p-value, status, note). A PASS needs the combination not to
        reject, every check that applies to decide, *and* every R-hat in the table at most 1.01
        and every bulk ESS at least 100 per chain; with one chain R-hat cannot be computed, so
        the verdict is NOT REACHED (:mod:`arviz_regen.diagnostics.verdict`).
        ``draws_needed`` and ``draws_needed_reason``: about how many draws per chain the
        verdict's R-hat, ESS and chain-agreement criteria need
        (:func:`arviz_regen.draws_needed`); a NOT REACHED line ends with that number.

    Raises
    ------
    ImportError
        If neither ArviZ 0.x (``arviz.summary``) nor ``arviz-stats`` (ArviZ 1.x) is installed.

    Notes
    -----
    R-hat and ESS come from :func:`arviz.summary` with ArviZ 0.x, otherwise from
    :func:`arviz_stats.summary` (ArviZ 1.x; its ``sd`` divides by n rather than n − 1).


    Examples
    --------
    Exact draws of four partitions of three items with known probabilities, two chains, as
    ``(chain, draw, item)`` labels with the log posterior of each draw (an InferenceData or
    DataTree from ``pm.sample`` is read the same way, with ``var_names="z"``):

    >>> import numpy as np, arviz_regen
    >>> states = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 1], [0, 1, 2]])
    >>> probs = np.array([0.4, 0.3, 0.2, 0.1])
    >>> pick = np.random.default_rng(0).choice(4, p=probs, size=(2, 2000))
    >>> labels, logp = states[pick], np.log(probs)[pick]
    >>> table = arviz_regen.regen_summary(labels, logp=logp, k=[2, 3])
    >>> table.attrs["verdict_status"]
    'PASS'
    >>> table.attrs["verdict"]
    'verdict: PASS at alpha=0.05 ...'

    ``print(table)`` shows every column and ends with that verdict line.
    """
    params = dict(locals())  # the arguments, for the call under the client below
    client = resolve_client(client)
    if client is not None and current_client() is not client:  # every step inside runs there
        with using_client(client):
            return regen_summary(**{**params, "client": client})
    idata = to_inference_data(data, logp=logp, coords=coords, logp_var=logp_var)
    pdraws = load_partition(idata, var_names, logp_var=logp_var)
    traces = partition_traces(pdraws)
    stats_ds = _stat_dataset(idata, pdraws, traces, stats_vars, logp_var)
    params = _param_dataset(idata, pdraws, param_vars, stats_ds)
    stats_ds = stats_ds.assign(params.data_vars)
    if stats_ds.data_vars:
        with warnings.catch_warnings():
            # a constant trace (e.g. n_clusters of a posterior that never changes it) has no R-hat
            warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
            table = az_summary(stats_ds)
    else:
        table = pd.DataFrame(columns=_STAT_COLUMNS)
    hot = missing = None
    if pdraws.logp_spread is not None:
        missing = (
            f"hyperparameters were sampled alongside (sample_stats[{logp_var!r}] differs between "
            f"draws of the same partition by up to {pdraws.logp_spread:.3g}): Hotelling-RS needs "
            "a fixed target"
        )
        warnings.warn(
            f"No Hotelling-RS test: {missing}. The chain-agreement test decides, beside R-hat "
            "and ESS of the traces (to test the partition sampler itself, sample again with the "
            "hyperparameters fixed).",
            SampledHyperparametersWarning,
            stacklevel=2,
        )
    elif pdraws.logp is None:
        warnings.warn(
            f"sample_stats[{logp_var!r}] not found: no Hotelling-RS test, the chain-agreement test decides.",
            UserWarning,
            stacklevel=2,
        )
    else:
        ks = np.atleast_1d(k)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            hot = hotelling_rs(
                pdraws,
                k=list(ks),
                pooled=pooled,
                method=method,
                n_bootstrap=n_bootstrap,
                random_seed=random_seed,
                logp_var=logp_var,
            )
        applies, _ = recurrence(hot)
        if applies:  # its warnings matter only when it decides
            for w in caught:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    rows, agree = [], None
    hot_check = hotelling_check(hot, missing)
    if hot_check.status == "absent" or pdraws.n_chain < 2:
        compared = None  # chain agreement compares the chains when Hotelling-RS cannot
    else:
        rare = _rare_switching(hot, pdraws.n_chain)
        compared = rare is None
    if hot is not None and recurrence(hot)[0]:
        rows = _hotelling_rows(hot, np.atleast_1d(k))
    if compared is None and pdraws.n_chain >= 2:
        agree = chain_agreement(
            pdraws,
            traces=traces.assign(params.data_vars),
            n_permutations=n_permutations,
            pairs=pairs,
            random_seed=0 if random_seed is None else random_seed,
            alpha=alpha,
        )
        rows.append(_agreement_row(agree))
    if compared is None:
        agree_check = agreement_check(agree, pdraws.n_chain)
    elif compared:
        agree_check = Check("chain_agreement", float("nan"), MEANING["chain_agreement"], "absent",
                            "compared by Hotelling-RS p_value_all (agreement and recurrence parts)")  # fmt: skip
    else:
        agree_check = Check("chain_agreement", float("nan"), MEANING["chain_agreement"], "undecided", rare)
    conditional = conditional_check_adapter(data, pdraws.name, coords)
    if conditional.status != "absent":
        rows.append(pd.Series({"p_value_all": conditional.p_value}, name="conditional_check"))
    checks = [hot_check, agree_check, conditional]
    verdict = decide(checks, table, pdraws.n_chain, alpha)
    need, need_why = draws_needed(table, pdraws.n_draw, pdraws.n_chain, checks=verdict.checks)
    line = verdict.line
    if verdict.status == "NOT REACHED":
        line += f" About {need:,} draws per chain needed ({need_why})."
    table = pd.concat([table, pd.DataFrame(rows)], axis=0)
    if round_to is not None:
        table = table.round(round_to)
    table.attrs.update({
        "verdict": line, "verdict_status": verdict.status, "decided_by": verdict.method,
        "verdict_p_value": verdict.p_value,
        "checks": {c.name: {"p_value": c.p_value, "status": c.status, "note": c.note} for c in verdict.checks},
        "draws_needed": need, "draws_needed_reason": need_why,
    })  # fmt: skip
    out = SummaryTable(table)
    out.attrs.update(table.attrs)
    return out


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
