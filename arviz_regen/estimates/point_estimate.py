"""Posterior point estimate of a partition under Binder or VI loss, found by SALSO.

The estimate minimises the posterior expected loss E[L(c, ĉ) | y], estimated by the average of
L(c_t, ĉ) over the draws c_t (all chains pooled; repeated states are weighted by their visits).
The search is SALSO (:mod:`arviz_regen.base.salso`; Dahl, Johnson & Müller 2022), or an exhaustive
search over all partitions for a few items. The result is an xarray Dataset with the labels
over the item dimension of the posterior, the expected loss with a Monte Carlo standard error,
the loss against every draw and the search settings.
"""

from __future__ import annotations

import functools
import time

import numpy as np
import xarray as xr

from ..base.lazy_jit import gc_paused
from ..base.pair_kernels import check_memory
from ..base.partition_loss import _losses, mean_loss, parse_loss
from ..base.salso import INITS, SEARCH_DEFAULTS, salso_search
from ..base.seeds import random_seed_argument, seed_attribute
from ..base.state import all_partitions, bell_number
from ..xr.distributed import map_blocks, n_threads, resolve_client, using_client
from ..xr.draws import load_partition
from ..xr.regeneration import estimate, find_tours
from ..xr.sizes import refuse_early
from .expected_loss import state_losses

__all__ = ["point_estimate", "MAX_EXHAUSTIVE", "PSM_ROUTE_MAX_ITEMS"]

#: most items for ``method="exhaustive"`` (B(10) = 115,975 partitions)
MAX_EXHAUSTIVE = 10

#: Binder is searched on the co-clustering matrix (O(n) per item and scan, n² memory) up to this
#: many items, on the draws (O(T·K) per item and scan) above
PSM_ROUTE_MAX_ITEMS = 5000

_METHODS = ("salso", "exhaustive")
_ROUTES = ("auto", "draws", "psm")


def _positive_int(value, argname, allow_zero=False):
    try:
        ok = int(value) == value and (value >= 0 if allow_zero else value >= 1)
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(value, bool):
        what = "a non-negative" if allow_zero else "a positive"
        raise ValueError(f"`{argname}` must be {what} int, got {value!r}.")
    return int(value)


#: what the memory check advises when the draws are too large
def thin_advice(need, chains, draws, items, available):
    """Advice naming a thinning of the draws whose ``need(chains, draws, items)`` bytes fit in ``available``.

    A fifth of the memory is left for the rest of the process.
    """
    room = 0.8 * available
    if need(chains, 1, items) > room:
        return "Thinning the draws cannot make it fit: it needs more memory than one draw per chain leaves."
    steps = [k for k in (2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000) if k < draws] + [draws]
    k = next(k for k in steps if need(chains, -(-draws // k), items) <= room)
    nth = f"{k}nd" if k == 2 else f"{k}th"
    return (
        f"Thin the draws first, e.g. `coords={{'draw': slice(None, None, {k})}}` "
        f"(every {nth} draw, {-(-draws // k)} per chain)."
    )


def summary_bytes(chains, draws, items, psm=False):
    """Return the memory a point estimate needs.

    The draws as int64 labels with their distinct states and the sort that finds them (about three copies), and for the
    "psm" route the co-clustering matrix and the search's sums over it (about two n × n matrices).
    """
    return 3 * chains * draws * items * 8 + (2 * items * items * 8 if psm else 0)


def psm_route(loss, route, n_items, method="salso"):
    """Whether the search runs on the co-clustering matrix.

    It does for Binder, route "psm", or "auto" up to :data:`PSM_ROUTE_MAX_ITEMS` items.
    """
    auto = route == "auto" and n_items <= PSM_ROUTE_MAX_ITEMS
    return method == "salso" and loss.name == "binder" and (route == "psm" or auto)


def refuse_before_loading(data, var_names, coords, what, loss, route="auto"):
    """Raise a MemoryError naming the cheaper call when the summary cannot fit, before any draw is read.

    ``loss``/``route``: those of the search, None when there is none.
    """
    if coords is not None:
        return  # the selection is known after loading

    def need(c, d, n):
        return summary_bytes(c, d, n, loss is not None and psm_route(loss, route, n))

    def advice(c, d, n, available):
        psm = loss is not None and psm_route(loss, route, n)
        binder = " For Binder, route='draws' needs no items x items matrix." if psm else ""
        return thin_advice(need, c, d, n, available) + binder

    refuse_early(data, var_names, need, what + " of {items} items ({chains} chains x {draws} draws)", advice)


def state_weights(pdraws):
    """Posterior weight of each distinct state: its visits over all chains and draws."""
    counts = pdraws.counts().sum(axis=0).astype(float)
    return counts / counts.sum()


def draw_losses(pdraws, labels, spec, client=None):
    """Return the loss of ``labels`` against every distinct state, shape (n_states,).

    By blocks on the workers of ``client``'s cluster (a resolved client, :func:`resolve_client`) when given.
    """
    if client is not None:
        return state_losses(pdraws, labels, spec, client)
    est = np.unique(np.asarray(labels), return_inverse=True)[1].reshape(1, -1).astype(np.int64)
    return _losses(est, np.ascontiguousarray(pdraws.labels), spec)[0]


def loss_mean_se(pdraws, state_loss):
    """Mean loss over all draws and its batch-means standard error (pooled chains)."""
    tours = find_tours(pdraws.index, 0, pdraws.n_states)  # tours unused by batch means
    mean, se, _ = estimate(tours, "batch_means", state_values=state_loss, combined=True)
    return float(mean[0]), float(se[0])


def _exhaustive(pdraws, weights, spec, max_clusters):
    n = pdraws.n_items
    if n > MAX_EXHAUSTIVE:
        raise ValueError(
            f"`method='exhaustive'` enumerates all B({n}) = {bell_number(n):,} partitions; it is "
            f"offered up to {MAX_EXHAUSTIVE} items. Use method='salso'."
        )
    parts = all_partitions(n)
    if max_clusters is not None:
        parts = parts[parts.max(axis=1) < max_clusters]
    losses = mean_loss(parts, pdraws.labels, weights, spec)
    return parts[int(np.argmin(losses))], {"n_partitions": int(parts.shape[0])}


def collector_paused(func):
    """Run ``func`` with Python's cyclic garbage collector paused (:func:`~arviz_regen.base.lazy_jit.gc_paused`).

    A first call compiles kernels, and numba's compiler leaves many objects behind: every
    collection triggered during the rest of the call would walk them (figures in the performance
    page). The summaries make few reference cycles; those are collected after the call.
    """

    @functools.wraps(func)
    def run(*args, **kwargs):
        with gc_paused():
            return func(*args, **kwargs)

    return run


@collector_paused
def point_estimate(
    data,
    var_names=None,
    *,
    loss="VI",
    method="salso",
    max_clusters=None,
    n_runs=SEARCH_DEFAULTS["n_runs"],
    max_zealous=SEARCH_DEFAULTS["max_zealous"],
    max_scans=SEARCH_DEFAULTS["max_scans"],
    prob_sequential=SEARCH_DEFAULTS["prob_sequential"],
    prob_draw=SEARCH_DEFAULTS["prob_draw"],
    starts=None,
    route="auto",
    random_seed=None,
    logp_var="partition_logp",
    logp=None,
    coords=None,
    seed=None,
    client=None,
):
    """Posterior point estimate of the partition minimising the expected Binder or VI loss.

    The expected loss of a candidate ĉ is the average of L(c_t, ĉ) over the posterior draws
    c_t (chains pooled); it is computed from contingency counts per distinct state (never an
    items × items × draws array). The search is SALSO (Dahl, Johnson & Müller 2022): ``n_runs``
    runs, each a sequential allocation of the items in random order (or random labels), then
    sweetening scans (single-item reassignments until none helps) and up to ``max_zealous``
    zealous updates (a cluster destroyed and its items reallocated); the best run wins.

    Parameters
    ----------
    data : InferenceData, DataTree, Dataset, DataArray, dict or array
        Partition draws, as for :func:`arviz_regen.hotelling_rs` (labels (chain, draw, item);
        several chains are pooled). The log posterior is not needed.
    var_names : str or list of one str, optional
    loss : "VI", "binder", ("VI", a) or ("binder", a)
        Variation of information (bits; Meilă 2007, Wade & Ghahramani 2018) or Binder's loss
        (number of misclassified pairs), classical or weighted: a ∈ [0, 2] is the cost of
        separating two items that belong together, 2 − a of joining two that do not (Dahl,
        Johnson & Müller 2022). a < 1 favours more clusters, a > 1 fewer.
        See :mod:`arviz_regen.base.partition_loss`.
    method : {"salso", "exhaustive"}
        "exhaustive": all partitions (up to :data:`MAX_EXHAUSTIVE` items): exact.
    max_clusters : int, optional
        Largest number of clusters of the estimate (default: no limit).
    n_runs, max_zealous, max_scans : int
        SALSO settings: random restarts; zealous updates per run; sweetening scans per
        sweetening phase.
    prob_sequential, prob_draw : float
        A run starts by sequential allocation with probability ``prob_sequential``, from a
        posterior draw (picked by posterior weight; our addition, see
        :func:`arviz_regen.base.salso.salso_search`) with probability ``prob_draw``, else from random
        labels over as many clusters as the largest draw has.
    starts : array_like of int, shape (m, n_items), optional
        Extra runs started from these label vectors (e.g. a previous estimate).
    route : {"auto", "draws", "psm"}
        How SALSO scores a move. "draws": counts against the draws, kept along the chains per
        cluster track (any loss; a move of an item costs O(draws), a score O(its changes of
        cluster), see :mod:`arviz_regen.base.salso`); "psm": the co-clustering frequencies (Binder
        only; n² memory, faster when the draws outnumber the items). "auto": "psm" for Binder up
        to :data:`PSM_ROUTE_MAX_ITEMS` items.
    random_seed : int or numpy.random.Generator, optional
        Seed of the SALSO search's random orders and starts (None: fresh entropy).
    logp_var, logp, coords
        As for :func:`arviz_regen.coclustering` (``coords`` selects chains and draws).
    seed : int or numpy.random.Generator, optional
        Deprecated name of ``random_seed`` (a ``DeprecationWarning``; removed in the next release).
    client : distributed.Client, str, False or None, optional
        The ``dask.distributed`` cluster whose workers run the SALSO runs (in blocks of
        consecutive runs), the final sweetening on all draws and the loss against every draw (and
        read and hash dask-backed labels): a client, a scheduler address, or None for the active
        client if there is one (else this process); ``False``: this process. The result is the
        same (each run has its own seed, drawn beforehand).

    Returns
    -------
    xarray.Dataset
        ``labels`` (item dimension of the posterior; canonical), ``expected_loss`` (the average
        loss over the draws), ``expected_loss_se`` (its Monte Carlo standard error, lugsail
        batch means over the pooled chains; the estimate was chosen on the same draws, so the
        loss is slightly optimistic), ``n_clusters``, ``cluster_size`` (``cluster``) and
        ``draw_loss`` (``chain``, ``draw``: the loss against each draw). ``attrs``: the loss
        and its cost ``a``, the method and search settings, runs that reached the best loss
        (``runs_at_best``; many: a stable optimum), the draws the runs searched on
        (``search_draws``: long chains are thinned for the runs, their best estimates then scored
        and sweetened on all draws, ``polish_moves`` items moving there), the ``seed`` (its
        decimal string beyond 64 bits, -1 for a Generator), seconds spent.

    Examples
    --------
    >>> est = arviz_regen.point_estimate(idata, loss="VI")  # doctest: +SKIP
    >>> est.labels.values, float(est.expected_loss)  # doctest: +SKIP
    """
    seed = random_seed_argument(random_seed, seed)
    spec = parse_loss(loss)
    if method not in _METHODS:
        raise ValueError(f"`method` must be one of {_METHODS}, got {method!r}.")
    if route not in _ROUTES:
        raise ValueError(f"`route` must be one of {_ROUTES}, got {route!r}.")
    if max_clusters is not None:
        max_clusters = _positive_int(max_clusters, "max_clusters")
    n_runs = _positive_int(n_runs, "n_runs")
    max_zealous = _positive_int(max_zealous, "max_zealous", allow_zero=True)
    max_scans = _positive_int(max_scans, "max_scans")
    if method == "salso" and route == "psm" and spec.name != "binder":
        raise ValueError("`route='psm'` scores Binder's loss only; VI needs the draws (route='draws').")
    search_loss = spec if method == "salso" else None
    refuse_before_loading(data, var_names, coords, f"The {spec.label} point estimate", search_loss, route)
    client = resolve_client(client)
    with using_client(client):
        pdraws = load_partition(data, var_names, logp_var=logp_var, logp=logp, coords=coords)
    n = pdraws.n_items
    if psm_route(spec, route, n, method):  # with coords= the first check could not be made
        check_memory(summary_bytes(1, 0, n, True), f"The co-clustering matrix of {n} items (route='psm')",
                     "Pass route='draws' (no items x items matrix).")  # fmt: skip
    if starts is not None:
        starts = np.atleast_2d(np.asarray(starts))
        if starts.ndim != 2 or starts.shape[1] != n:
            raise ValueError(f"`starts` must be label vectors of length {n}, got shape {starts.shape}.")
    weights = state_weights(pdraws)
    t0 = time.perf_counter()
    settings = {}
    if method == "exhaustive":
        labels, settings = _exhaustive(pdraws, weights, spec, max_clusters)
        used_route = "exhaustive"
    else:
        if route == "auto":
            route = "psm" if spec.name == "binder" and n <= PSM_ROUTE_MAX_ITEMS else "draws"
        psm = None
        if route == "psm":
            from ..base.pair_kernels import chain_frequencies

            psm = chain_frequencies(pdraws.index, pdraws.labels)
        map_runs = None if client is None else functools.partial(map_blocks, client=client, name="salso_runs")
        res = salso_search(
            None if psm is not None else pdraws.labels,
            weights,
            spec,
            psm=psm,
            index=None if psm is not None else pdraws.index,
            max_clusters=max_clusters,
            n_runs=n_runs,
            max_zealous=max_zealous,
            max_scans=max_scans,
            prob_sequential=prob_sequential,
            prob_draw=prob_draw,
            starts=starts,
            seed=seed,
            map_runs=map_runs,
            n_blocks=None if client is None else n_threads(client),
        )
        labels = res.labels
        used_route = res.route
        best = res.run_losses.min()
        settings = {
            "n_runs": n_runs,
            "max_zealous": max_zealous,
            "max_scans": max_scans,
            "prob_sequential": float(prob_sequential),
            "prob_draw": float(prob_draw) if used_route == "draws" else 0.0,
            "n_starts": 0 if starts is None else int(starts.shape[0]),
            "runs_by_start": ", ".join(f"{name} {int(np.sum(res.init == i))}" for i, name in enumerate(INITS)),
            "runs_at_best": int(np.sum(res.run_losses <= best + 1e-9 * (1.0 + abs(best)))),
            "total_scans": int(res.n_scans.sum()),
            "zealous_accepts": int(res.zealous_accepts.sum()),
            "search_draws": int(res.search_draws),
            "polish_moves": int(res.polish_moves),
        }
    seconds = time.perf_counter() - t0
    state_loss = draw_losses(pdraws, labels, spec, client)
    mean, se = loss_mean_se(pdraws, state_loss)
    sizes = np.bincount(labels)
    attrs = {
        "var_name": pdraws.name,
        "loss": spec.name,
        "loss_a": float(spec.a),
        "method": method,
        "route": used_route,
        "max_clusters": int(max_clusters) if max_clusters is not None else n,
        "seed": seed_attribute(seed, missing=-1),
        "n_draws": int(pdraws.index.size),
        "n_states": int(pdraws.n_states),
        "seconds": float(seconds),
    }
    attrs.update(settings)
    ds = xr.Dataset(
        {
            "labels": ((pdraws.item_dim,), labels),
            "expected_loss": ((), mean),
            "expected_loss_se": ((), se),
            "n_clusters": ((), int(sizes.size)),
            "cluster_size": (("cluster",), sizes),
            "draw_loss": (("chain", "draw"), state_loss[pdraws.index]),
        },
        coords={
            pdraws.item_dim: pdraws.item_coord,
            "cluster": np.arange(sizes.size),
            "chain": pdraws.chain,
            "draw": pdraws.draw,
        },
        attrs=attrs,
    )
    unit = "bits" if spec.name == "VI" else "pairs"
    ds["labels"].attrs["long_name"] = f"{spec.label} point estimate (canonical labels)"
    ds["expected_loss"].attrs.update(long_name=f"posterior expected {spec.label} loss", units=unit)
    ds["expected_loss_se"].attrs["long_name"] = "Monte Carlo standard error (lugsail batch means)"
    ds["draw_loss"].attrs.update(long_name=f"{spec.label} loss of the estimate against each draw", units=unit)
    return ds
