"""Hotelling-RS: whether the chains visit their top states in the right relative proportions.

SPEC section 4. The K most probable *visited* states S_1 … S_K (by ``partition_logp``, pooled
over chains by default) are compared with their known relative probabilities
q_i = exp(logp_i − logp_1), using whole regeneration tours at δ = S_1. Two reference
distributions:

- ``method="bootstrap"`` (default): Hotelling's T² of the visits per tour against their known
  means, calibrated by a bootstrap-t of the chain's own tours (:mod:`arviz_regen.base.tour_t2`).
  Within Monte Carlo error of the level for slowly mixing chains, also those that reach their
  top states only through a few long excursions; conservative when a top state appears in a
  handful of tours.
- ``method="chi2"``: the paper's Hotelling T² with its χ²_{K−1} limit
  (:mod:`arviz_regen.base.hotelling_t2`), asymptotic in the number of tours through every top state.

``t2`` (the paper's statistic) is reported with either method. Beside the per-chain p-values,
``p_value_all`` is one verdict for all chains (pooled tours plus agreement between chains).

The trace (``cumulative=True``) recomputes everything at each evaluation draw t from draws
0 … t only, including which states are the top K: what a user watching the chains would have
seen. ``cumulative="lookahead"`` is the paper's Figure 2c trace (top states of the whole run,
χ² p-values after every tour).
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from ..base.blas import one_blas_thread
from ..base.hotelling_t2 import DEFAULT_TOL, t2_core
from ..base.seeds import seed_attribute
from ..base.tour_t2 import tour_t2_test
from ..base.tour_tests import all_chains_test
from ..xr.draws import load_partition
from ..xr.regeneration import MIN_TOURS, eval_positions, find_tours

__all__ = ["hotelling_rs", "MIN_TOURS_VISITING"]

#: A top state seen in fewer whole tours than this makes a result "mean little" (warned). A
#: state's share of the statistic is then carried by a handful of iid excursions: the bootstrap
#: can only resample those, and a resample leaves the state out altogether with probability
#: about e^{−m} for m tours (e^{−5} ≈ 0.7%), which makes the bootstrap-t conservative there
#: (in our simulations 0-1% rejections at α = 0.05 for K = 10 with the rarest state in fewer than
#: 10 tours; the χ² limit rejected 90% of such correct runs).
MIN_TOURS_VISITING = 5

METHODS = ("bootstrap", "chi2")
_VERDICT = ("p_value_all", "p_value_pooled", "p_value_agreement", "p_value_recurrence")


def _normalize_k(k):
    scalar = np.ndim(k) == 0
    ks = np.atleast_1d(np.asarray(k))
    if ks.size == 0 or not np.issubdtype(ks.dtype, np.integer):
        raise TypeError(f"`k` must be an int or a sequence of ints, got {k!r}.")
    if np.any(ks < 2):
        raise ValueError(f"`k` must be at least 2 (the test compares K ≥ 2 states), got {k!r}.")
    if np.unique(ks).size != ks.size:
        raise ValueError(f"`k` has repeated values: {k!r}.")
    return scalar, ks.astype(np.int64)


def _ranked(logp, mask):
    """Return the indices of the states in ``mask`` by decreasing logp (ties by index: deterministic)."""
    cand = np.flatnonzero(mask)
    return cand[np.lexsort((cand, -logp[cand]))]


def _seeds(random_seed, n):
    return np.random.SeedSequence(random_seed).generate_state(n, dtype=np.uint32).astype(np.int64)


class _Problems:
    """Conditions met while evaluating, reported once per call as warnings."""

    def __init__(self):
        self.too_big = []
        self.no_tours = []
        self.rare = []
        self.singular = []
        self.no_df = []
        self.unseen = []
        self.few_pooled = []
        self.rare_switching = []


def _evaluate(index, logp, n_states, ks_req, *, method, pooled, n_rep, seeds, min_tours, tol, problems):
    """Everything at one evaluation point, from the draws ``index`` (chain, t) only."""
    C, n_draw = index.shape
    nK = ks_req.size
    kmax_req = int(ks_req.max())
    visits = np.stack([np.bincount(index[c], minlength=n_states) for c in range(C)])
    pooled_order = _ranked(logp, visits.sum(axis=0) > 0)
    orders = [pooled_order if pooled else _ranked(logp, visits[c] > 0) for c in range(C)]
    tours = find_tours(index, [o[0] for o in orders], n_states)
    res = {
        "t2": np.full((C, nK), np.nan),
        "t2_tours": np.full((C, nK), np.nan),
        "p_value": np.full((C, nK), np.nan),
        "df": np.zeros((C, nK), dtype=np.int64),
        "log_z": np.full((C, nK), np.nan),
        "n_tours": tours.n_tours,
        "tours_visiting": np.zeros((C, kmax_req), dtype=np.int64),
    }
    tops = [o[: int(min(kmax_req, o.size))] for o in orders]
    per_chain = tours.visit_counts(tops)
    for c in range(C):
        order = orders[c]
        ks = np.minimum(ks_req, order.size)
        if ks.min() < ks_req.max():
            problems.too_big.extend((int(a), order.size) for a, b in zip(ks_req, ks) if b < a)
        kmax = int(ks.max())
        top = order[:kmax]
        q = np.exp(logp[top] - logp[top[0]])
        counts, lengths = per_chain[c]
        visiting = (counts > 0).sum(axis=0).astype(np.int64)
        res["tours_visiting"][c, :kmax] = visiting
        if lengths.size < 2:
            problems.no_tours.append((c, lengths.size, int(visits[c, order[0]])))
            continue
        if order.size < 2:
            continue  # one visited state: nothing to compare (reported as K > visited states)
        rare = np.flatnonzero(visiting < min_tours)
        if rare.size:
            problems.rare.append((c, rare, visiting[rare], top[rare]))
        ksv = np.maximum(ks, 2)
        t2 = t2_core(counts, lengths, q, ksv, tol=tol)
        res["t2"][c], res["df"][c] = t2["t2"][:, 0], t2["df"][:, 0]
        res["log_z"][c] = logp[top[0]] - t2["log_c"][:, 0]
        kept = t2["kept"][:, 0, :]
        for j, K in enumerate(ksv):
            if t2["df"][j, 0] >= 1 and not kept[j, :K].all():
                problems.singular.append((c, int(K)))
            elif t2["df"][j, 0] == 0 and ks[j] >= 2:
                problems.no_df.append((c, int(K)))
        if method == "chi2":
            res["p_value"][c] = t2["p_value"][:, 0]
        else:
            t2t, p, unseen = tour_t2_test(counts, q, ksv, n_rep=n_rep, seed=seeds[c])
            res["t2_tours"][c], res["p_value"][c] = t2t, p
            if unseen.any():
                problems.unseen.append((c, int(ksv[unseen].min()), int(np.flatnonzero(visiting == 0)[0])))
        too_small = ks < 2
        for name in ("t2", "t2_tours", "p_value", "log_z"):
            res[name][c, too_small] = np.nan
    # one verdict for all chains, always on the pooled ranking and the renewal bootstrap
    ks = np.maximum(np.minimum(ks_req, pooled_order.size), 2)
    kmax = min(int(ks.max()), pooled_order.size)
    top = pooled_order[:kmax]
    ptours = tours if pooled else find_tours(index, pooled_order[0], n_states)
    parts = ptours.visit_counts(top)
    q = np.exp(logp[top] - logp[top[0]])
    pooled_tours = int(ptours.n_tours.sum())
    if kmax >= 2 and 0 < pooled_tours < MIN_TOURS:  # none at all: the no-tours warning says it
        problems.few_pooled.append(pooled_tours)
    if kmax >= 2 and pooled_tours >= MIN_TOURS:
        # visits outside whole tours: every draw counts in the pooled test (tour_tests module notes)
        partial = visits[:, top] - np.stack([p[0].sum(axis=0) for p in parts])
        verdict = all_chains_test(
            [p[0] for p in parts],
            [p[1] for p in parts],
            np.full(C, n_draw),
            q,
            np.minimum(ks, kmax),
            partial=partial,
            n_rep=n_rep,
            seed=seeds[C],
        )
        if verdict["rare_switching"] and C > 1:
            problems.rare_switching.append(verdict["longest_share"])
    else:
        verdict = {name: np.full(nK, np.nan) for name in _VERDICT}
    res.update({name: verdict[name] for name in _VERDICT})
    res["top"] = pooled_order[:kmax_req]
    return res


@one_blas_thread
def hotelling_rs(
    data,
    var_names=None,
    *,
    k=10,
    method=None,
    pooled=True,
    cumulative=False,
    n_points=20,
    n_bootstrap=499,
    random_seed=0,
    min_tours=MIN_TOURS_VISITING,
    logp_var="partition_logp",
    logp=None,
    coords=None,
    tol=DEFAULT_TOL,
):
    """Hotelling-RS convergence diagnostic of partition-valued chains: per chain and for all.

    Tests whether the relative visit frequencies of the K most probable visited states match
    their known relative posterior probabilities exp(logp_i − logp_j), using regeneration at the
    most probable state (Asgharian, Lysy & Partovi Nia 2019; SPEC section 4). Small p-values
    mean the chains have not converged on those states. The test sees relative frequencies of
    *visited* states only: chains that all miss the same mode pass it.

    Parameters
    ----------
    data : InferenceData, DataTree, Dataset, dict or array
        Posterior labels ``(chain, draw, item)`` and the log unnormalized posterior of each draw
        (``sample_stats[logp_var]``, or ``logp=`` for inputs without sample_stats).
    var_names : str or list of one str, optional
        The partition variable; found automatically when unambiguous.
    k : int or sequence of int
        Number(s) K ≥ 2 of top states. A sequence adds a ``k`` dimension.
    method : {"bootstrap", "chi2"}, optional
        Reference distribution of the per-chain p-values. "bootstrap" (the default): Hotelling's
        T² of the visits per whole tour to the top states other than δ against their known
        means q (``t2_tours``), calibrated by a bootstrap-t of the chain's own tours
        (``n_bootstrap`` replicates at most; p-values are multiples of 1/(n_bootstrap + 1) or
        stop early when clearly not small): within Monte Carlo error of the level also for
        correct chains that reach their top states only through a few long excursions, and
        conservative when a top state appears in a handful of tours. "chi2": the paper's T²
        with its χ²_{K−1} limit, which is too liberal when the rarest top state appears in few
        tours (large K, short or slow chains). ``p_value_all`` always uses the renewal bootstrap.
    pooled : bool, default True
        Rank states over all chains (all chains judged on the same states and regeneration
        state). With False each chain uses its own top visited states for ``p_value``.
    cumulative : bool or "lookahead", default False
        True: the diagnostic along the draws at ``n_points`` evaluation draws, each computed
        from draws 0 … t only (the top states too): what a user watching the chains would have
        seen. Read it as a picture, not as ``n_points`` tests: looking repeatedly and stopping
        at the first small p-value rejects a correct sampler far more often than α (see
        :func:`arviz_regen.StopWhenConverged` for an online rule with error control).
        "lookahead": the paper's Figure 2c trace, χ² p-values after every tour with the top
        states of the whole run (look-ahead: not what was observable at draw t).
    n_points : int
        Evaluation draws of ``cumulative=True`` (evenly spaced, the last draw included).
    n_bootstrap : int
        Bootstrap replicates.
    random_seed : int or None
        Seed of the bootstrap (default 0: the same data give the same p-values).
    min_tours : int
        Warn when a top state was visited in fewer whole tours than this (see
        :data:`MIN_TOURS_VISITING` for why 5).
    logp_var : str
        ``sample_stats`` variable with the log unnormalized posterior of the state.
    logp : array_like, optional
        Log posterior ``(chain, draw)`` for inputs without sample_stats.
    coords : dict, optional
        Selection applied first, e.g. ``{"chain": [0, 2]}`` or ``{"draw": slice(1000, None)}``.
    tol : float
        Relative tolerance of the rank decision for Σ̂ in T².

    Returns
    -------
    xarray.Dataset
        Per chain (dims ``chain`` (+ ``k``) (+ ``draw`` if cumulative)): ``p_value``, ``t2`` (the
        paper's statistic), ``t2_tours`` (the statistic the bootstrap method tests), ``df``
        (states used in T² − 1; 0: no test), ``log_z`` (log Ẑ on the scale of ``logp_var``),
        ``n_tours``;
        ``tours_visiting`` (``chain``, ``rank``): whole tours in which each top state was visited.
        For all chains (dims (``k``) (+ ``draw``)): ``p_value_all`` (one p-value for all chains:
        Simes' combination of the three below), ``p_value_pooled`` (all draws of all chains, in
        tour units), ``p_value_agreement`` (chains agree on the top states),
        ``p_value_recurrence`` (chains agree on the mass of the regeneration state); the last
        two are NaN with one chain, and when the chains switch rarely between regions of the
        state space (warned; :mod:`arviz_regen.base.tour_tests`).
        ``top_state_labels`` (``rank``, ``item``). NaN where there is no test, always with a
        warning that says why.

    Warns
    -----
    UserWarning
        K larger than the number of visited states, a chain with fewer than two whole tours, top
        states visited in fewer than ``min_tours`` tours (named) or in none of a chain's whole
        tours (p_value NaN there: undecided), fewer than
        :data:`arviz_regen.xr.regeneration.MIN_TOURS` whole tours in all chains together
        (p_value_all NaN: no verdict), T² without degrees of freedom (t2 NaN), singular Σ̂ in T².

    Notes
    -----
    Under convergence whole tours are iid, so they are resampled: per chain, R tours drawn with
    replacement give one replicate of T² of the visits per tour, centred at the observed means
    and studentized by the replicate's own covariance (a bootstrap-t). For the all-chains
    verdict (:func:`arviz_regen.base.tour_tests.all_chains_test`): the pooled test is the per-chain
    bootstrap-t T² on the whole tours of all chains plus, per chain, its draws outside whole
    tours as one more unit (every draw counts, so the statistic is centred for any chain
    length); agreement is a permutation test of the tours across chains; recurrence a renewal
    bootstrap of pseudo-chains of each chain's length.

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
    >>> h = arviz_regen.hotelling_rs(labels, logp=logp, k=[2, 3])
    >>> bool((h.p_value_all > 0.05).all())       # one p-value per K for all chains
    True
    >>> h.top_state_labels.values[0]             # the most visited partition
    array([0, 0, 0])

    After ``import arviz_regen``, the same function is ``az.hotelling_rs(idata, var_names="z")``.
    """
    scalar_k, ks_req = _normalize_k(k)
    if not isinstance(pooled, (bool, np.bool_)):
        raise TypeError(f"`pooled` must be a bool, got {pooled!r}.")
    if cumulative not in (False, True, "lookahead"):
        raise ValueError(f"`cumulative` must be False, True or 'lookahead', got {cumulative!r}.")
    if method is None:
        method = "chi2" if cumulative == "lookahead" else "bootstrap"
    if method not in METHODS:
        raise ValueError(f"`method` must be 'bootstrap' or 'chi2', got {method!r}.")
    if cumulative == "lookahead" and method != "chi2":
        raise ValueError("`cumulative='lookahead'` is the paper's χ² trace: use method='chi2' (or None).")
    if int(n_bootstrap) < 19:
        raise ValueError(f"`n_bootstrap` must be at least 19 (p-values in steps of 1/(B+1)), got {n_bootstrap!r}.")
    if int(min_tours) < 1:
        raise ValueError(f"`min_tours` must be a positive int, got {min_tours!r}.")
    pdraws = load_partition(data, var_names, logp_var=logp_var, logp=logp, coords=coords)
    logp = pdraws.require_logp("hotelling_rs")
    seeds = _seeds(random_seed, pdraws.n_chain + 1)
    if cumulative == "lookahead":
        return _lookahead(pdraws, logp, ks_req, scalar_k, pooled, tol, pdraws.logp_name)

    problems = _Problems()
    opts = dict(
        method=method,
        pooled=bool(pooled),
        n_rep=int(n_bootstrap),
        seeds=seeds,
        min_tours=int(min_tours),
        tol=tol,
        problems=problems,
    )
    if cumulative:
        positions = eval_positions(pdraws.n_draw, n_points)
        steps = []
        for t in positions:
            # early draws always lack tours: warn only about the end of the chains (the last point)
            at_end = t == pdraws.n_draw - 1
            step_opts = opts if at_end else {**opts, "problems": _Problems()}
            steps.append(_evaluate(pdraws.index[:, : t + 1], logp, pdraws.n_states, ks_req, **step_opts))
        last = steps[-1]  # eval_positions always includes the last draw
        res = {
            name: np.stack([s[name] for s in steps], axis=-1)
            for name in steps[0]
            if name not in ("top", "tours_visiting")
        }
        res["tours_visiting"] = last["tours_visiting"]
        res["top"] = last["top"]
    else:
        positions = None
        res = _evaluate(pdraws.index, logp, pdraws.n_states, ks_req, **opts)
    _warn(problems, pdraws, ks_req, method, int(min_tours))
    return _dataset(
        pdraws, res, ks_req, scalar_k, positions, method, pooled, pdraws.logp_name, n_bootstrap, random_seed
    )


def _dataset(pdraws, res, ks_req, scalar_k, positions, method, pooled, logp_var, n_bootstrap, random_seed):
    trace = () if positions is None else ("draw",)
    per_chain = ("chain", "k") + trace
    verdict = ("k",) + trace
    top = res["top"]
    kmax = int(ks_req.max())
    labels = np.full((kmax, pdraws.n_items), -1, dtype=np.int64)
    labels[: top.size] = pdraws.labels[top]
    coords = {"chain": pdraws.chain, "k": ks_req, "rank": np.arange(kmax), "item": pdraws.item_coord}
    if positions is not None:
        coords["draw"] = pdraws.draw[positions]
    ds = xr.Dataset(
        {
            "p_value": (per_chain, res["p_value"]),
            "t2": (per_chain, res["t2"]),
            "t2_tours": (per_chain, res["t2_tours"]),
            "df": (per_chain, res["df"]),
            "log_z": (per_chain, res["log_z"]),
            "n_tours": (("chain",) + trace, res["n_tours"]),
            "tours_visiting": (("chain", "rank"), res["tours_visiting"]),
            "p_value_all": (verdict, res["p_value_all"]),
            "p_value_pooled": (verdict, res["p_value_pooled"]),
            "p_value_agreement": (verdict, res["p_value_agreement"]),
            "p_value_recurrence": (verdict, res["p_value_recurrence"]),
            "top_state_labels": (("rank", "item"), labels),
        },
        coords=coords,
    )
    if scalar_k:
        ds = ds.isel(k=0, drop=True)
    ds.attrs.update(
        {
            "var_name": pdraws.name,
            "logp_var": logp_var,
            "method": method,
            "reference": (
                "bootstrap-t of whole regeneration tours (T² of the visits per tour against their known means)"
                if method == "bootstrap"
                else "chi-square limit of Hotelling-RS T² (Asgharian, Lysy & Partovi Nia 2019)"
            ),
            "verdict_reference": (
                "Simes of: bootstrap-t T² of all draws in tour units (pooled), permutation X² of the tours across "
                "chains (agreement), renewal bootstrap (recurrence)"
            ),
            "n_bootstrap": int(n_bootstrap),
            "random_seed": seed_attribute(random_seed, missing=-1),
            "pooled": int(bool(pooled)),
            "k": ks_req.tolist(),
            "regeneration_state": labels[0].tolist(),
            "cumulative": "no look-ahead" if positions is not None else "no",
        }
    )
    ds["p_value"].attrs["long_name"] = f"per-chain p-value ({method})"
    ds["t2"].attrs["long_name"] = "Hotelling-RS statistic T²"
    ds["t2_tours"].attrs["long_name"] = (
        "Hotelling T² of the visits per tour to the top states against their known means"
    )
    ds["df"].attrs["long_name"] = "degrees of freedom of T² (states used − 1; 0: no test)"
    ds["n_tours"].attrs["long_name"] = "whole regeneration tours used"
    ds["tours_visiting"].attrs["long_name"] = "whole tours in which the top state of this rank was visited"
    ds["log_z"].attrs["long_name"] = f"RS estimate of the log normalizing constant of exp({logp_var})"
    ds["p_value_all"].attrs["long_name"] = "one verdict for all chains"
    ds["top_state_labels"].attrs["long_name"] = "canonical labels of the top states by rank (-1: fewer states visited)"
    return ds


def _lookahead(pdraws, logp, ks_req, scalar_k, pooled, tol, logp_var):
    """Return the paper's trace: top states of the whole run, χ² p-value after every whole tour."""
    C, n_draw = pdraws.index.shape
    nK = ks_req.size
    shape = (C, nK, n_draw)
    out = {name: np.full(shape, np.nan) for name in ("t2", "p_value", "log_z")}
    out["df"] = np.zeros(shape, dtype=np.int64)
    visits = np.stack([np.bincount(pdraws.index[c], minlength=pdraws.n_states) for c in range(C)])
    pooled_order = _ranked(logp, visits.sum(axis=0) > 0)
    orders = [pooled_order if pooled else _ranked(logp, visits[c] > 0) for c in range(C)]
    tours = find_tours(pdraws.index, [o[0] for o in orders], pdraws.n_states)
    completed = tours.completed()
    problems = _Problems()
    kss = [np.maximum(np.minimum(ks_req, o.size), 2) for o in orders]
    tops = [o[: int(ks.max())] for o, ks in zip(orders, kss)]
    per_chain = tours.visit_counts(tops)
    for c in range(C):
        ks, top = kss[c], tops[c]
        q = np.exp(logp[top] - logp[top[0]])
        counts, lengths = per_chain[c]
        if lengths.size < 2:
            problems.no_tours.append((c, lengths.size, int(visits[c, top[0]])))
            continue
        r = t2_core(counts, lengths, q, ks, eval_r=np.arange(1, lengths.size + 1), tol=tol)
        at = np.maximum(completed[c] - 1, -1)  # column of the statistic after that many tours
        ok = at >= 0
        for name in ("t2", "p_value", "df"):
            out[name][c][:, ok] = r[name][:, at[ok]]
        out["log_z"][c][:, ok] = logp[top[0]] - r["log_c"][:, at[ok]]
    _warn(problems, pdraws, ks_req, "chi2", 1)
    ds = xr.Dataset(
        {name: (("chain", "k", "draw"), val) for name, val in out.items()}
        | {"n_tours": (("chain", "draw"), completed)},
        coords={"chain": pdraws.chain, "k": ks_req, "draw": pdraws.draw},
    )
    if scalar_k:
        ds = ds.isel(k=0, drop=True)
    ds.attrs.update({"var_name": pdraws.name, "logp_var": logp_var, "method": "chi2", "cumulative": "lookahead"})
    return ds


def _warn(problems, pdraws, ks_req, method, min_tours):
    if problems.too_big:
        kr, nv = problems.too_big[0]
        warnings.warn(
            f"k={kr} is larger than the {nv} visited states; the test uses all visited states.",
            UserWarning,
            stacklevel=3,
        )
    if problems.no_tours:
        items = ", ".join(f"chain {pdraws.chain[c]}: {v} visits, {r} tours" for c, r, v in problems.no_tours[:8])
        warnings.warn(
            "The regeneration state (the most probable visited state) recurs too rarely for a "
            f"regenerative test ({items}; at least two whole tours are needed): p_value is NaN "
            "there. States are not recurring: run more draws, cluster fewer items, or ask a "
            "coarser question (co-clustering probabilities and n_clusters, whose batch-means "
            "errors do not need recurring states). p_value_all still counts such chains: a "
            "chain that rarely reaches the top state disagrees with chains that often do.",
            UserWarning,
            stacklevel=3,
        )
    if problems.few_pooled:
        warnings.warn(
            f"All chains together have {problems.few_pooled[0]} whole tours at the regeneration state: "
            f"p_value_all would rest on too little (it needs >= {MIN_TOURS}) and is NaN (no verdict). "
            "States hardly recur: run longer, or use arviz_regen.chain_agreement (regen_summary "
            "does), which needs no recurring states.",
            UserWarning,
            stacklevel=3,
        )
    if problems.rare_switching:
        from ..base.tour_tests import N_LONGEST

        warnings.warn(
            f"The chains switch rarely between regions of the state space: the {N_LONGEST} longest "
            f"whole tours hold {problems.rare_switching[0]:.0%} of the whole-tour draws, and a "
            "tour spans much of a chain. The "
            "agreement and recurrence parts of p_value_all would rest on a handful of excursions "
            "and are not run (NaN); p_value_all is the pooled test alone. Run longer to compare "
            "the chains by their tours; arviz_regen.chain_agreement compares them by their traces.",
            UserWarning,
            stacklevel=3,
        )
    if problems.rare:
        parts = []
        for c, ranks, n_vis, _ in problems.rare[:4]:
            desc = ", ".join(f"rank {r} ({m} tours)" for r, m in zip(ranks.tolist(), n_vis.tolist()))
            parts.append(f"chain {pdraws.chain[c]}: {desc}")
        first = problems.rare[0][3][0]
        warnings.warn(
            f"Top states visited in fewer than {min_tours} whole tours ({'; '.join(parts)}; e.g. "
            f"rank {problems.rare[0][1][0]} is {pdraws.labels[first].tolist()}): the test rests on "
            "a handful of excursions for them, so its result means little for K that includes "
            "them"
            + (
                " (the χ² p-values are then too small)"
                if method == "chi2"
                else " (the bootstrap p-values are then conservative: large, not evidence of convergence)"
            )
            + ". Use a smaller K or run longer; `tours_visiting` has the counts.",
            UserWarning,
            stacklevel=3,
        )
    if problems.no_df:
        items = ", ".join(f"chain {pdraws.chain[c]} k={kk}" for c, kk in problems.no_df[:8])
        tail = (
            "t2, log_z and p_value are NaN there."
            if method == "chi2"
            else "t2 and log_z are NaN there; p_value comes from t2_tours, the visits per tour "
            "against their known means (infinite, with p_value at its smallest, when identical "
            "tours visit the top states in the wrong proportions)."
        )
        warnings.warn(
            f"The paper's T² has no degrees of freedom ({items}): the tour sums of the top states "
            f"do not vary (e.g. identical tours of a periodic chain) or fewer than three tours; {tail}",
            UserWarning,
            stacklevel=3,
        )
    if problems.unseen:
        items = ", ".join(f"chain {pdraws.chain[c]}: rank {r}, k >= {kk}" for c, kk, r in problems.unseen[:8])
        warnings.warn(
            f"Top states never visited within a chain's whole tours ({items}): that chain carries "
            "no information on their relative frequency, so its p_value is NaN (undecided) for "
            "those K. p_value_all still counts it: a chain that never reaches a state the others "
            "visit disagrees with them. Use a smaller K or run longer.",
            UserWarning,
            stacklevel=3,
        )
    if problems.singular and method == "chi2":
        items = "; ".join(f"chain {pdraws.chain[c]} k={kk}" for c, kk in problems.singular[:8])
        warnings.warn(
            f"Σ̂ of T² is singular ({items}): too few tours or linearly dependent tour sums (e.g. "
            "the K states are all the visited states). The dependent states are dropped "
            "(pivoted Cholesky) and df is reduced.",
            UserWarning,
            stacklevel=3,
        )
