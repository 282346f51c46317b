"""Co-clustering probabilities by regenerative sampling, with standard errors and CV.

ρ_ij = P(items i and j in the same cluster | y). The RS estimate uses whole tours between visits
to the regeneration state (the most probable visited state by default), its standard error the
univariate eq. regvar, and CV_ij = se(ρ̂_ij) / max(ρ̂_ij, 1 − ρ̂_ij) (Jones et al. 2006; the
paper's Figure 2b): the CV of the larger of the co- and anti-clustering estimates.

The work is one pass over runs of identical consecutive states (a numba kernel): tour sums of
the n(n−1)/2 pair indicators are accumulated per run, never materialized per draw, so memory
stays O(n²) whatever the number of draws.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import xarray as xr

from ._data import load_partition, regeneration_state
from .tours import completed_tours, regeneration_times, rs_from_sums

__all__ = ["coclustering", "coclustering_sums"]


@numba.njit(cache=True)
def _pair_prefix_sums(idx, tau, ulabels, eval_r):
    """Running sums of pair-indicator tour sums after ``eval_r[e]`` tours (sorted, 0 … R)."""
    n = ulabels.shape[1]
    P = n * (n - 1) // 2
    E = eval_r.shape[0]
    R = tau.shape[0] - 1
    s1 = np.zeros((E, P))
    s2 = np.zeros((E, P))
    sns = np.zeros((E, P))
    sn_out = np.zeros(E)
    snn_out = np.zeros(E)
    a1 = np.zeros(P)
    a2 = np.zeros(P)
    ans = np.zeros(P)
    s = np.zeros(P)
    sn = 0.0
    snn = 0.0
    e = 0
    for r in range(R + 1):
        while e < E and eval_r[e] == r:
            s1[e] = a1
            s2[e] = a2
            sns[e] = ans
            sn_out[e] = sn
            snn_out[e] = snn
            e += 1
        if r == R:
            break
        s[:] = 0.0
        start = tau[r]
        stop = tau[r + 1]
        t = start
        while t < stop:
            u = idx[t]
            w = 1
            while t + w < stop and idx[t + w] == u:
                w += 1
            p = 0
            for i in range(n):
                li = ulabels[u, i]
                for j in range(i + 1, n):
                    if ulabels[u, j] == li:
                        s[p] += w
                    p += 1
            t += w
        nr = float(stop - start)
        for p in range(P):
            a1[p] += s[p]
            a2[p] += s[p] * s[p]
            ans[p] += nr * s[p]
        sn += nr
        snn += nr * nr
    return s1, s2, sns, sn_out, snn_out


def coclustering_sums(index, ulabels, regen, eval_draws=None):
    """Numpy core: RS running sums of the pair indicators for one chain.

    Parameters
    ----------
    index : numpy.ndarray of int, shape (n_draw,)
        State index of each draw.
    ulabels : numpy.ndarray of int, shape (n_states, n_items)
        Canonical labels of the states.
    regen : int
        Index of the regeneration state.
    eval_draws : numpy.ndarray of int, optional
        Sorted draw positions at which to report sums over the tours completed by then;
        default: only the end of the chain.

    Returns
    -------
    tuple (s1, s2, sns, sn, snn, n_tours), leading dim len(eval_draws) (or 1); pair axis in
    ``numpy.triu_indices(n_items, 1)`` order.
    """
    index = np.ascontiguousarray(index, dtype=np.int64)
    is_regen = index == regen
    tau = regeneration_times(is_regen)
    n_tours_total = max(tau.size - 1, 0)
    if tau.size == 0:
        tau = np.zeros(1, dtype=np.int64)
    if eval_draws is None:
        eval_r = np.array([n_tours_total], dtype=np.int64)
    else:
        eval_r = completed_tours(is_regen)[np.asarray(eval_draws, dtype=np.int64)]
    out = _pair_prefix_sums(index, tau, np.ascontiguousarray(ulabels, dtype=np.int64), eval_r)
    return out + (eval_r,)


def _eval_positions(n_draw, n_points):
    if n_points is None:
        return np.arange(n_draw)
    if int(n_points) < 1:
        raise ValueError(f"`n_points` must be a positive int or None, got {n_points!r}.")
    return np.unique(np.linspace(0, n_draw - 1, int(n_points)).round().astype(np.int64))


def coclustering(
    data,
    var_names=None,
    *,
    combined=False,
    cumulative=False,
    n_points=100,
    regeneration=None,
    logp_var="partition_logp",
):
    """Co-clustering probabilities with regenerative-sampling standard errors and CV.

    Parameters
    ----------
    data : InferenceData or convertible
    var_names : str or list of one str, optional
        The partition variable; found automatically when unambiguous.
    combined : bool, default False
        Pool the tours of all chains (one estimate) instead of one estimate per chain. All
        chains regenerate at the same state, so their tours are iid together.
    cumulative : bool, default False
        Report the estimates along the draws (the paper's Figure 2a/2b) at ``n_points``
        evenly spaced draws (including the last), each from the tours completed by then.
    n_points : int or None
        Number of evaluation draws in cumulative mode (None: every draw; memory n_draw·n²).
    regeneration : None, "mode", or label vector
        Regeneration state: None = most probable visited state by ``logp_var`` (the most
        visited one, with a warning, when ``logp_var`` is missing); "mode" = most visited.
    logp_var : str

    Returns
    -------
    xarray.Dataset
        ``rho`` (ρ̂_ij), ``se``, ``cv`` with dims (``chain``) (``draw``) ``item_i``, ``item_j``
        (symmetric; diagonal ρ̂ = 1, se = cv = 0) and ``n_tours``. ``se`` and ``cv`` are NaN
        where fewer than two tours are available, ``rho`` where none is (with a warning in
        non-cumulative mode).
    """
    if not isinstance(combined, (bool, np.bool_)):
        raise TypeError(f"`combined` must be a bool, got {combined!r}.")
    pdraws = load_partition(data, var_names, logp_var=logp_var)
    regen = regeneration_state(pdraws, regeneration)
    n = pdraws.n_items
    ulabels = pdraws.labels
    positions = _eval_positions(pdraws.n_draw, n_points) if cumulative else None
    E = 1 if positions is None else positions.size
    P = n * (n - 1) // 2
    sums = [np.zeros((pdraws.n_chain, E, P)) for _ in range(3)]
    sn = np.zeros((pdraws.n_chain, E))
    snn = np.zeros((pdraws.n_chain, E))
    ntours = np.zeros((pdraws.n_chain, E), dtype=np.int64)
    for c in range(pdraws.n_chain):
        s1, s2, sns, sn_c, snn_c, r_c = coclustering_sums(pdraws.index[c], ulabels, regen, positions)
        sums[0][c], sums[1][c], sums[2][c] = s1, s2, sns
        sn[c], snn[c], ntours[c] = sn_c, snn_c, r_c
    if combined:
        sums = [a.sum(axis=0) for a in sums]
        sn, snn, ntours = sn.sum(axis=0), snn.sum(axis=0), ntours.sum(axis=0)
    mean_p, se_p = rs_from_sums(*sums, sn, snn, ntours)

    if not cumulative:
        few = np.atleast_1d(ntours[..., -1] < 2)
        if few.any():
            where = "pooled chains" if combined else f"chains {pdraws.chain[few].tolist()}"
            warnings.warn(
                f"Fewer than two whole regeneration tours in {where}: standard errors and CV are "
                "NaN there (and rho too without any tour).",
                UserWarning,
                stacklevel=2,
            )

    # unpack pairs into symmetric matrices
    iu, ju = np.triu_indices(n, 1)
    lead = mean_p.shape[:-1]
    mean = np.ones(lead + (n, n))
    se = np.zeros(lead + (n, n))
    for arr, src in ((mean, mean_p), (se, se_p)):
        arr[..., iu, ju] = src
        arr[..., ju, iu] = src
    nan_mean = ntours < 1
    mean[nan_mean] = np.nan
    se[ntours < 2] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = se / np.maximum(mean, 1.0 - mean)

    item_coord = pdraws.item_coord
    dims = (() if combined else ("chain",)) + ("draw",) + ("item_i", "item_j")
    coords = {"item_i": item_coord, "item_j": item_coord}
    if not combined:
        coords["chain"] = pdraws.chain
    if cumulative:
        coords["draw"] = pdraws.draw[positions]
    tdims = dims[:-2]
    ds = xr.Dataset(
        {"rho": (dims, mean), "se": (dims, se), "cv": (dims, cv), "n_tours": (tdims, ntours)},
        coords=coords,
    )
    if not cumulative:
        ds = ds.isel(draw=0)
    ds.attrs.update(
        {
            "var_name": pdraws.name,
            "regeneration_state": ulabels[regen].tolist(),
            "combined": int(bool(combined)),
        }
    )
    ds["rho"].attrs["long_name"] = "RS estimate of P(i and j in the same cluster)"
    ds["se"].attrs["long_name"] = "RS standard error"
    ds["cv"].attrs["long_name"] = "se / max(mean, 1 - mean)"
    return ds

