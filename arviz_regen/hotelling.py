"""Hotelling-RS: does a chain visit its top states in the right relative proportions?

SPEC section 4, for each chain:

1. S_1 … S_K: the K most probable *visited* states by ``partition_logp`` (pooled over chains by
   default); the regeneration state δ is S_1.
2. τ_0 < … < τ_R: visits to δ; tour r covers draws τ_{r−1} … τ_r − 1, length N_r, sum s_r.
3. g_i(x) = 1{x = S_i} / q_i with q_i = exp(logp_i − max logp).
4. ḡ = Σ s_r / Σ N_r,  Σ̂ = Σ (s_r − N_r ḡ)(s_r − N_r ḡ)ᵀ / (R N̄²).
5. Ẑ⁻¹ = w'ḡ, w = Σ̂⁻¹1 / 1'Σ̂⁻¹1;  T² = R (ḡ − Ẑ⁻¹1)' Σ̂⁻¹ (ḡ − Ẑ⁻¹1);  p = P(χ²_{K−1} > T²).

Numerics. With h_i(x) = 1{x = S_i} (visit counts, exact integers) and D = diag(q), g = D⁻¹h, so
T² = R (h̄ − c q)' Σ̂_h⁻¹ (h̄ − c q) with c the GLS weight: the same number, computed on counts.
Σ̂ is scaled to a correlation matrix and factored by a pivoted Cholesky; ``c`` estimates
π_max / Z, so log Ẑ = max logp − log c comes for free.

Singular Σ̂ (documented rule). Σ_r (s_r − N_r ḡ) = 0, so Σ̂ has rank ≤ R − 1, and a top state
that a chain never visits has a zero row. The pivoted Cholesky keeps a maximal set of states
whose tour sums are linearly independent (greedily, largest residual variance first, relative
tolerance ``tol`` on the correlation scale; states never visited are dropped first). The
statistic is the Hotelling-RS statistic of the kept states, with df = (number kept) − 1; a
warning names the dropped states. With fewer than two kept states (e.g. fewer than three whole
tours) there is no test: ``t2`` and ``p_value`` are NaN, ``df`` is 0, with a warning.

Cumulative mode. The centred cross-product matrix is updated tour by tour (a Welford-type
re-centring, O(K²) per tour: no recomputation from scratch and no cancellation from expanding
Σ s s' − 2ḡ Σ N s' + ḡḡ' Σ N²), and the statistic is evaluated after every tour. The value at
draw t is the statistic of the whole tours completed by draw t (the top states stay those of the
full run), i.e. exactly what the non-cumulative mode returns on draws 0 … t.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import xarray as xr
from scipy import stats

from ._data import load_partition, rank_states
from .tours import completed_tours, regeneration_times

__all__ = ["hotelling_rs", "hotelling_rs_core"]

#: relative tolerance on residual variance (correlation scale) of the pivoted Cholesky
DEFAULT_TOL = 1e-10


@numba.njit(cache=True)
def _statistic(M, sdiag, xbar, q, K, total, tol, kept):
    """T²/… of the leading K states from the centred cross-product matrix M = Σ e e'.

    Returns (t2, c, m): the statistic, the GLS level c (h̄ ≈ c q) and the number m of kept
    states; ``kept`` (length ≥ K) receives the kept mask.
    """
    d = np.zeros(K)
    for i in range(K):
        kept[i] = False
        # zero variance: exactly zero for an unvisited state; relative test against Σ s² for
        # states whose tour sums are exactly proportional to the tour lengths
        if M[i, i] > 1e-12 * sdiag[i] and M[i, i] > 0.0:
            d[i] = np.sqrt(M[i, i])
    # working residual matrix on the correlation scale
    G = np.zeros((K, K))
    for i in range(K):
        for j in range(K):
            if d[i] > 0.0 and d[j] > 0.0:
                G[i, j] = M[i, j] / (d[i] * d[j])
    Lcol = np.zeros((K, K))  # Lcol[m, i]: m-th Cholesky column, indexed by state
    piv = np.empty(K, dtype=np.int64)
    chosen = np.zeros(K, dtype=np.bool_)
    m = 0
    for step in range(K):
        best = -1
        bestval = tol
        for j in range(K):
            if not chosen[j] and G[j, j] > bestval:
                best = j
                bestval = G[j, j]
        if best < 0:
            break
        piv[m] = best
        chosen[best] = True
        root = np.sqrt(G[best, best])
        for i in range(K):
            if not chosen[i]:
                Lcol[m, i] = G[i, best] / root
            else:
                Lcol[m, i] = 0.0
        Lcol[m, best] = root
        for i in range(K):
            if chosen[i]:
                continue
            li = Lcol[m, i]
            for j in range(K):
                if not chosen[j]:
                    G[i, j] -= li * Lcol[m, j]
        m += 1
    if m < 2:
        for a in range(m):
            kept[piv[a]] = True
        return np.nan, np.nan, m
    # forward solves L a = x_S / d_S, L b = q_S / d_S in pivot order
    a = np.zeros(m)
    b = np.zeros(m)
    for r in range(m):
        i = piv[r]
        ua = xbar[i] / d[i]
        ub = q[i] / d[i]
        for c in range(r):
            ua -= Lcol[c, i] * a[c]
            ub -= Lcol[c, i] * b[c]
        a[r] = ua / Lcol[r, i]
        b[r] = ub / Lcol[r, i]
        kept[i] = True
    aa = 0.0
    ab = 0.0
    bb = 0.0
    for r in range(m):
        aa += a[r] * a[r]
        ab += a[r] * b[r]
        bb += b[r] * b[r]
    # T² = R (x − c q)' Σ̂⁻¹ (x − c q) with Σ̂ = M R / (Σ N)²  =>  T² = (Σ N)² (a·a − (a·b)²/(b·b))
    t2 = total * total * max(aa - ab * ab / bb, 0.0)
    return t2, ab / bb, m


@numba.njit(cache=True)
def _hotelling_kernel(counts, n, q, ks, eval_r, tol):
    """Hotelling-RS after the first ``eval_r[e]`` tours, for each K in ``ks``.

    counts : (R, Kmax) visit counts of the top states per tour; n : (R,) tour lengths;
    q : (Kmax,) relative probabilities; eval_r : sorted numbers of tours (1 … R).
    """
    R, Kmax = counts.shape
    nK = ks.shape[0]
    E = eval_r.shape[0]
    t2 = np.full((nK, E), np.nan)
    cc = np.full((nK, E), np.nan)
    kept = np.zeros((nK, E, Kmax), dtype=np.bool_)
    M = np.zeros((Kmax, Kmax))
    v = np.zeros(Kmax)  # Σ N_i e_i with e_i = s_i − N_i ḡ
    ssum = np.zeros(Kmax)
    sdiag = np.zeros(Kmax)  # Σ s_i², the raw scale of M's diagonal
    gbar = np.zeros(Kmax)
    delta = np.zeros(Kmax)
    e_new = np.zeros(Kmax)
    sn = 0.0
    snn = 0.0
    e = 0
    for r in range(R):
        nr = n[r]
        sn += nr
        for i in range(Kmax):
            ssum[i] += counts[r, i]
            sdiag[i] += counts[r, i] * counts[r, i]
            g_new = ssum[i] / sn
            delta[i] = g_new - gbar[i]
            gbar[i] = g_new
        # re-centre the old tours at the new mean, then add the new tour
        for i in range(Kmax):
            for j in range(Kmax):
                M[i, j] += -delta[i] * v[j] - v[i] * delta[j] + snn * delta[i] * delta[j]
        for i in range(Kmax):
            v[i] -= snn * delta[i]
            e_new[i] = counts[r, i] - nr * gbar[i]
        for i in range(Kmax):
            for j in range(Kmax):
                M[i, j] += e_new[i] * e_new[j]
            v[i] += nr * e_new[i]
        snn += nr * nr
        while e < E and eval_r[e] == r + 1:
            for kk in range(nK):
                K = ks[kk]
                res = _statistic(M, sdiag, gbar, q, K, sn, tol, kept[kk, e])
                t2[kk, e] = res[0]
                cc[kk, e] = res[1]
            e += 1
    return t2, cc, kept


def _tour_counts(rank_draw, kmax):
    """Per-tour visit counts of the top ``kmax`` states and tour lengths of one chain."""
    is_regen = rank_draw == 0
    tau = regeneration_times(is_regen)
    n_tours = max(tau.size - 1, 0)
    if n_tours == 0:
        return np.zeros((0, kmax)), np.zeros(0), is_regen
    seg = rank_draw[tau[0] : tau[-1]]
    tour_id = np.cumsum(is_regen[tau[0] : tau[-1]]) - 1
    top = seg >= 0
    flat = np.bincount(tour_id[top] * kmax + seg[top], minlength=n_tours * kmax)
    return flat.reshape(n_tours, kmax).astype(float), np.diff(tau).astype(float), is_regen


def hotelling_rs_core(rank_draw, q, ks, cumulative=False, tol=DEFAULT_TOL):
    """Hotelling-RS of one chain from the rank of its state at each draw (numpy core).

    Parameters
    ----------
    rank_draw : numpy.ndarray of int, shape (n_draw,)
        Rank (0 = regeneration state δ) of each draw's state among the top states, −1 for
        other states.
    q : numpy.ndarray, shape (Kmax,)
        exp(logp_i − logp_1) of the ranked states (q_1 = 1).
    ks : sequence of int
        Numbers of states K ≤ Kmax.
    cumulative : bool
        Evaluate after every tour (rows 0 … R: row r uses r tours; row 0 is NaN) instead of once.

    Returns
    -------
    dict with ``t2``, ``p_value``, ``df`` (int), ``log_c`` (log of the GLS level c, so that
    log Ẑ = logp_1 − log c), shape (len(ks),) or (len(ks), R + 1) when cumulative; ``kept``
    (len(ks), Kmax) boolean mask of the states used (last evaluation); ``n_tours`` (int);
    ``completed`` (n_draw,) tours completed at each draw.
    """
    q = np.asarray(q, dtype=float)
    ks = np.asarray(ks, dtype=np.int64)
    kmax = q.size
    counts, n, is_regen = _tour_counts(np.asarray(rank_draw), kmax)
    n_tours = n.size
    eval_r = np.arange(1, n_tours + 1) if cumulative else np.array([n_tours], dtype=np.int64)
    if n_tours == 0:
        eval_r = np.zeros(0, dtype=np.int64)
    t2, c, kept = _hotelling_kernel(counts, n, q, ks, eval_r.astype(np.int64), tol)
    df = kept.sum(axis=-1).astype(np.int64) - 1
    df = np.maximum(df, 0)
    t2 = np.where(df >= 1, t2, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(df >= 1, stats.chi2.sf(t2, np.maximum(df, 1)), np.nan)
        log_c = np.where(df >= 1, np.log(c), np.nan)
    if n_tours == 0:
        shape = (ks.size, 1)
        t2 = np.full(shape, np.nan)
        p, log_c = t2.copy(), t2.copy()
        df = np.zeros(shape, dtype=np.int64)
        last_kept = np.zeros((ks.size, kmax), dtype=bool)
    else:
        last_kept = kept[:, -1, :]
    if cumulative:
        # prepend the "no tour yet" row so that row r holds the statistic of r tours
        pad = lambda a, fill: np.concatenate([np.full((ks.size, 1), fill, dtype=a.dtype), a], axis=1)  # noqa: E731
        if n_tours:
            t2, p, log_c, df = pad(t2, np.nan), pad(p, np.nan), pad(log_c, np.nan), pad(df, 0)
    else:
        t2, p, log_c, df = t2[:, -1], p[:, -1], log_c[:, -1], df[:, -1]
    return {
        "t2": t2,
        "p_value": p,
        "df": df,
        "log_c": log_c,
        "kept": last_kept,
        "n_tours": n_tours,
        "completed": completed_tours(is_regen),
    }


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


def hotelling_rs(
    data,
    var_names=None,
    *,
    k=10,
    pooled=True,
    cumulative=False,
    logp_var="partition_logp",
    tol=DEFAULT_TOL,
):
    """Hotelling-RS convergence diagnostic of a partition-valued chain, per chain.

    Tests whether the relative visit frequencies of the K most probable visited states match
    their known relative posterior probabilities exp(logp_i − logp_j), using regenerative
    sampling at the most probable state (Asgharian, Lysy & Partovi Nia 2019; SPEC section 4).
    Small p-values mean the chain has not converged (on those states).

    Parameters
    ----------
    data : InferenceData or object convertible by :func:`arviz.convert_to_inference_data`
        Posterior labels ``(chain, draw, item)`` and ``sample_stats[logp_var]`` ``(chain, draw)``.
        Dask-backed data are reduced chunk by chunk (only state keys are kept in memory).
    var_names : str or list of one str, optional
        The partition variable; found automatically when unambiguous.
    k : int or sequence of int
        Number(s) K ≥ 2 of top states. A sequence adds a ``k`` dimension.
    pooled : bool, default True
        Rank states over all chains (all chains judged on the same states and regeneration
        state). With False each chain uses its own top visited states.
    cumulative : bool, default False
        Return the statistic along the draws (the paper's Figure 2c): at each draw, the value
        for the whole tours completed by then, computed in one pass over the tours.
    logp_var : str
        ``sample_stats`` variable with the log unnormalized posterior of the state.
    tol : float
        Relative tolerance of the rank decision for Σ̂ (see module notes on singular Σ̂).

    Returns
    -------
    xarray.Dataset
        ``t2``, ``p_value``, ``df`` (int) and ``log_z`` (log Ẑ on the scale of ``logp_var``)
        with dims ``chain`` (+ ``k`` if several K) (+ ``draw`` if cumulative), and ``n_tours``
        (whole tours used) with dims ``chain`` (+ ``draw``). Where ``df`` is 0 (fewer than two
        usable states, e.g. fewer than three tours — always the case at the start of a
        cumulative trace) ``t2``, ``p_value`` and ``log_z`` are NaN.

    Warns
    -----
    UserWarning
        K larger than the number of visited states (K is reduced to it), a chain with too few
        tours (NaN result, df 0), top states not visited by a chain or otherwise singular Σ̂
        (states dropped, df reduced), non-canonical labels, inconsistent ``logp_var``.

    Notes
    -----
    The chi-square reference is asymptotic in the number of tours. Σ̂ must estimate the
    covariance of the tour sums of every one of the K states, so when the rarest of them is
    visited in only a few tours (large K, short or sticky chains) T² is inflated and p-values are
    too small: in our checks a sticky chain gave 42% of K = 10 p-values below 0.05 at 3,000 draws
    and uniform p-values at 30,000. Prefer small K for short runs, and read a cumulative trace as
    a sequence of dependent tests, not as many independent ones.

    Examples
    --------
    >>> import arviz_regen, arviz as az                       # doctest: +SKIP
    >>> az.hotelling_rs(idata, var_names="z", k=[2, 3, 5, 10])  # doctest: +SKIP
    """
    scalar_k, ks_req = _normalize_k(k)
    if not isinstance(pooled, (bool, np.bool_)):
        raise TypeError(f"`pooled` must be a bool, got {pooled!r}.")
    pdraws = load_partition(data, var_names, logp_var=logp_var)
    logp = pdraws.require_logp("hotelling_rs")

    pooled_order = rank_states(pdraws)
    n_chain, n_draw = pdraws.n_chain, pdraws.n_draw
    nK = ks_req.size
    shape = (n_chain, nK) + ((n_draw,) if cumulative else ())
    t2 = np.full(shape, np.nan)
    pval = np.full(shape, np.nan)
    log_z = np.full(shape, np.nan)
    df = np.zeros(shape, dtype=np.int64)
    n_tours = np.zeros((n_chain,) + ((n_draw,) if cumulative else ()), dtype=np.int64)
    problems = {"too_big": [], "no_test": [], "unvisited": [], "singular": []}

    for c in range(n_chain):
        idx = pdraws.index[c]
        if pooled:
            order = pooled_order
        else:
            order = rank_states(pdraws, mask=np.bincount(idx, minlength=pdraws.n_states) > 0)
        n_vis = order.size
        ks = np.minimum(ks_req, n_vis)
        for kr, ke in zip(ks_req, ks):
            if ke < kr:
                problems["too_big"].append((int(kr), n_vis))
        kmax = int(ks.max())
        top = order[:kmax]
        rank_of = np.full(pdraws.n_states, -1, dtype=np.int64)
        rank_of[top] = np.arange(kmax)
        q = np.exp(logp[top] - logp[top[0]])
        res = hotelling_rs_core(rank_of[idx], q, ks, cumulative=cumulative, tol=tol)
        visited = np.bincount(idx, minlength=pdraws.n_states)[top] > 0
        for j, ke in enumerate(ks):
            label = (pdraws.chain[c], int(ks_req[j]))
            final_df = res["df"][j, -1] if cumulative else res["df"][j]
            if final_df >= 1:
                kept = res["kept"][j, :ke]
                if not kept.all():
                    unvis = np.flatnonzero(~visited[:ke])
                    if unvis.size:
                        problems["unvisited"].append(label + (unvis.tolist(),))
                    else:
                        problems["singular"].append(label + (np.flatnonzero(~kept).tolist(),))
            else:
                problems["no_test"].append(label + (res["n_tours"],))
        if cumulative:
            at = res["completed"]  # tours completed at each draw -> row of the prefix arrays
            if res["n_tours"] == 0:
                at = np.zeros(n_draw, dtype=np.int64)
            t2[c] = res["t2"][:, at]
            pval[c] = res["p_value"][:, at]
            df[c] = res["df"][:, at]
            log_z[c] = logp[top[0]] - res["log_c"][:, at]
            n_tours[c] = res["completed"]
        else:
            t2[c], pval[c], df[c] = res["t2"], res["p_value"], res["df"]
            log_z[c] = logp[top[0]] - res["log_c"]
            n_tours[c] = res["n_tours"]

    _warn_problems(problems, pooled)

    dims = ["chain", "k"] + (["draw"] if cumulative else [])
    tdims = ["chain"] + (["draw"] if cumulative else [])
    coords = {"chain": pdraws.chain, "k": ks_req}
    if cumulative:
        coords["draw"] = pdraws.draw
    ds = xr.Dataset(
        {
            "t2": (dims, t2),
            "p_value": (dims, pval),
            "df": (dims, df),
            "log_z": (dims, log_z),
            "n_tours": (tdims, n_tours),
        },
        coords=coords,
    )
    if scalar_k:
        ds = ds.isel(k=0, drop=True)
    top_labels = pdraws.labels[pooled_order[0]]
    ds.attrs.update(
        {
            "var_name": pdraws.name,
            "logp_var": logp_var,
            "pooled": int(bool(pooled)),
            "k": ks_req.tolist(),
            "regeneration_state": top_labels.tolist(),
            "method": "Hotelling-RS (Asgharian, Lysy & Partovi Nia 2019)",
        }
    )
    ds["t2"].attrs["long_name"] = "Hotelling-RS statistic T²"
    ds["p_value"].attrs["long_name"] = "P(χ²_df > T²)"
    ds["df"].attrs["long_name"] = "degrees of freedom (states used − 1; 0: no test)"
    ds["n_tours"].attrs["long_name"] = "whole regeneration tours used"
    ds["log_z"].attrs["long_name"] = f"RS estimate of the log normalizing constant of exp({logp_var})"
    return ds


def _warn_problems(problems, pooled):
    if problems["too_big"]:
        kr, nv = problems["too_big"][0]
        warnings.warn(
            f"k={kr} is larger than the {nv} visited states; the test uses all visited states "
            "(df reflects the number used).",
            UserWarning,
            stacklevel=3,
        )
    if problems["no_test"]:
        items = ", ".join(f"chain {c} k={kk} ({r} tours)" for c, kk, r in problems["no_test"][:8])
        warnings.warn(
            "Hotelling-RS has no degrees of freedom for " + items + ": it needs at least three "
            "whole tours (visits to the regeneration state) and two states with varying tour "
            "counts. t2, p_value and log_z are NaN there and df is 0.",
            UserWarning,
            stacklevel=3,
        )
    if problems["unvisited"]:
        items = "; ".join(
            f"chain {c} k={kk}: ranks {r}" for c, kk, r in problems["unvisited"][:8]
        )
        warnings.warn(
            f"Some {'pooled ' if pooled else ''}top states were never visited by a chain ({items}). "
            "Σ̂ is singular; those states are dropped from that chain's test and df is reduced "
            "(a never-visited top state is itself a sign of non-convergence).",
            UserWarning,
            stacklevel=3,
        )
    if problems["singular"]:
        items = "; ".join(
            f"chain {c} k={kk}: ranks {r}" for c, kk, r in problems["singular"][:8]
        )
        warnings.warn(
            f"Σ̂ is singular ({items}): too few tours (rank ≤ tours − 1) or linearly dependent "
            "tour sums (e.g. the K states are all the visited states, so their counts add up to "
            "the tour length). The dependent states are dropped (pivoted Cholesky) and df is "
            "reduced accordingly.",
            UserWarning,
            stacklevel=3,
        )
