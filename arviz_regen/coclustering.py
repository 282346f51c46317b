"""Co-clustering probabilities by regenerative sampling, with standard errors and CV.

ρ_ij = P(items i and j in the same cluster | y). The RS estimate uses whole tours between visits
to the regeneration state (the most probable visited state by default), its standard error the
univariate eq. regvar, and CV_ij = se(ρ̂_ij) / max(ρ̂_ij, 1 − ρ̂_ij) (Jones et al. 2006; the
paper's Figure 2b): the CV of the larger of the co- and anti-clustering estimates.

The work is one pass over runs of identical consecutive states (a numba kernel): tour sums of
the n(n−1)/2 pair indicators are accumulated per run, never materialized per draw, so memory
stays O(n²) whatever the number of draws. Both kernels plug into the shared regeneration engine
(:mod:`arviz_regen.regeneration`), which finds the tours, pools chains and assembles the Dataset.

When the regeneration state recurs too rarely (a flat posterior over many items: every draw a
new partition), ``se_method="auto"`` falls back to the plain frequencies ρ̄_ij (mean over all
draws of 1{i and j together}) with lugsail batch-means standard errors
(:mod:`arviz_regen.batch_means`). The batch sums of the pair indicators are accumulated by a
second streaming kernel over runs of identical states, so memory stays O(E·n²) (E evaluation
draws) there too: never pairs × states nor pairs × draws.
"""

from __future__ import annotations

import warnings

from ._numba import lazy_njit
import numpy as np

from ._data import load_partition
from .batch_means import LUGSAIL_R, BatchSums, batch_plan
from .regeneration import assemble, estimate, eval_positions, regenerate
from .tours import completed_tours, regeneration_times

__all__ = ["coclustering", "coclustering_sums", "pair_rs_kernel", "pair_bm_kernel"]


@lazy_njit(cache=True)
def _add_pairs(acc, ulabels, u, w):
    """Add ``w`` (draws in a run of state ``u``) to every pair co-clustered in ``u`` (triu order)."""
    n = ulabels.shape[1]
    p = 0
    for i in range(n):
        li = ulabels[u, i]
        for j in range(i + 1, n):
            if ulabels[u, j] == li:
                acc[p] += w
            p += 1


@lazy_njit(cache=True)
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
            _add_pairs(s, ulabels, u, w)
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


@lazy_njit(cache=True)
def _pair_batch_sums(idx, ulabels, ev_pos, ev_slot, n_slots, n_eval):
    """Streaming batch sums of the pair indicators of one chain, over runs of identical states.

    Events, sorted by ``ev_pos`` (a number of draws from the start): slot s < ``n_slots`` is a
    batch boundary of batch-size slot s (the pair counts since that slot's previous boundary,
    B, are added as B² to ``sbb[s]``); slot ``n_slots + e`` records the pair counts of the first
    ``ev_pos`` draws as the total of evaluation e. Returns (Σ B per slot, i.e. the counts at
    the slot's last boundary; Σ B² per slot; totals), each with the pair axis last.
    """
    n = ulabels.shape[1]
    P = n * (n - 1) // 2
    C = np.zeros(P)
    prev = np.zeros((n_slots, P))
    sbb = np.zeros((n_slots, P))
    tot = np.zeros((n_eval, P))
    t = 0
    for ev in range(ev_pos.shape[0]):
        stop = ev_pos[ev]
        while t < stop:
            u = idx[t]
            w = 1
            while t + w < stop and idx[t + w] == u:
                w += 1
            _add_pairs(C, ulabels, u, w)
            t += w
        s = ev_slot[ev]
        if s < n_slots:
            for p in range(P):
                d = C[p] - prev[s, p]
                sbb[s, p] += d * d
                prev[s, p] = C[p]
        else:
            for p in range(P):
                tot[s - n_slots, p] = C[p]
    return prev, sbb, tot


def pair_rs_kernel(ulabels):
    """Regeneration-engine kernel of the pair indicators: ``kernel(index, tau, eval_r)``.

    Returns the running sums (Σs, Σs², ΣNs) of the pair tour sums after ``eval_r`` tours, pair
    axis last in ``numpy.triu_indices(n_items, 1)`` order (see :meth:`Tours.rs_sums
    <arviz_regen.regeneration.Tours.rs_sums>`).
    """
    ul = np.ascontiguousarray(ulabels, dtype=np.int64)

    def kernel(index, tau, eval_r):
        tau = np.asarray(tau, dtype=np.int64)
        if tau.size == 0:
            tau = np.zeros(1, dtype=np.int64)
        index = np.ascontiguousarray(index, dtype=np.int64)
        s1, s2, sns, _, _ = _pair_prefix_sums(index, tau, ul, np.ascontiguousarray(eval_r, dtype=np.int64))
        return s1, s2, sns

    return kernel


def pair_bm_kernel(ulabels, r=LUGSAIL_R):
    """Batch-means kernel of the pair indicators: ``kernel(index, positions) -> BatchSums``.

    For each evaluation draw p (default: the last), batches of ⌊√(p+1)⌋ and ⌊⌊√(p+1)⌋/r⌋
    draws (:func:`arviz_regen.batch_means.batch_plan`), accumulated in one streaming pass.
    """
    ul = np.ascontiguousarray(ulabels, dtype=np.int64)

    def kernel(index, positions):
        index = np.ascontiguousarray(index, dtype=np.int64)
        m = np.array([index.size]) if positions is None else np.asarray(positions, dtype=np.int64) + 1
        E = m.size
        b, a, b_r, a_r = batch_plan(m, r)
        sizes = np.stack([b, np.maximum(b_r, 1)], axis=1).ravel()  # slot 2e: b, slot 2e + 1: b_r
        counts = np.stack([a, a_r], axis=1).ravel()
        slot = np.repeat(np.arange(2 * E), counts)
        k = np.arange(slot.size) - np.repeat(np.cumsum(counts) - counts, counts)
        pos = np.concatenate([(k + 1) * sizes[slot], m])
        slot = np.concatenate([slot, 2 * E + np.arange(E)])
        order = np.argsort(pos, kind="stable")
        sb, sbb, tot = _pair_batch_sums(
            index, ul, np.ascontiguousarray(pos[order]), np.ascontiguousarray(slot[order]), 2 * E, E
        )
        return BatchSums(m, tot, b, a, sb[0::2], sbb[0::2], b_r, a_r, sb[1::2], sbb[1::2])

    return kernel


def _pair_matrices(mean_p, se_p, n):
    """Symmetric (…, n, n) matrices from pair vectors; diagonal ρ = 1, se = 0."""
    iu, ju = np.triu_indices(n, 1)
    lead = mean_p.shape[:-1]
    mean = np.ones(lead + (n, n))
    se = np.zeros(lead + (n, n))
    for arr, src in ((mean, mean_p), (se, se_p)):
        arr[..., iu, ju] = src
        arr[..., ju, iu] = src
    return mean, se


def coclustering(
    data,
    var_names=None,
    *,
    combined=False,
    cumulative=False,
    n_points=100,
    regeneration=None,
    se_method="auto",
    logp_var="partition_logp",
    logp=None,
    coords=None,
):
    """Co-clustering probabilities with regenerative-sampling standard errors and CV.

    When the regeneration state recurs too rarely (fewer than
    :data:`arviz_regen.regeneration.MIN_TOURS` whole tours), the plain frequencies over the draws
    with batch-means standard errors instead, with one warning (see ``se_method``).

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
    se_method : {"auto", "regenerative", "batch_means"}
        "regenerative": RS estimates over whole tours; "batch_means": frequencies over all draws
        with lugsail batch-means standard errors (pooled chains: replicated batch means);
        "auto" (default): regenerative when every chain (with ``combined``, the pooled chains)
        completes at least ``MIN_TOURS`` whole tours over the whole run, else batch means with
        a :class:`~arviz_regen.regeneration.NonRecurrenceWarning`.
    logp_var : str

    Returns
    -------
    xarray.Dataset
        ``rho`` (ρ̂_ij), ``se``, ``cv`` with dims (``chain``) (``draw``) ``item_i``, ``item_j``
        (symmetric; diagonal ρ̂ = 1, se = cv = 0) and ``n_tours`` (whole regeneration tours,
        whatever the method); ``attrs["se_method"]`` records the method used. Regenerative:
        ``se`` and ``cv`` are NaN where fewer than two tours are available, ``rho`` where none
        is (with a warning in non-cumulative mode). Batch means: ``se`` and ``cv`` are NaN with
        fewer than two batches (a single draw).
    """
    if not isinstance(combined, (bool, np.bool_)):
        raise TypeError(f"`combined` must be a bool, got {combined!r}.")
    pdraws = load_partition(data, var_names, logp_var=logp_var, logp=logp, coords=coords)
    reg = regenerate(pdraws, regeneration, se_method=se_method, combined=combined, what="coclustering")
    n = pdraws.n_items
    positions = eval_positions(pdraws.n_draw, n_points) if cumulative else None
    mean_p, se_p, ntours = estimate(
        reg.tours,
        reg.se_method,
        rs_kernel=pair_rs_kernel(pdraws.labels),
        bm_kernel=pair_bm_kernel(pdraws.labels),
        positions=positions,
        combined=combined,
    )
    mean, se = _pair_matrices(mean_p, se_p, n)
    if reg.se_method == "regenerative":
        if not cumulative:
            few = np.atleast_1d(ntours[..., -1] < 2)
            if few.any():
                where = "pooled chains" if combined else f"chains {pdraws.chain[few].tolist()}"
                warnings.warn(
                    f"Fewer than two whole regeneration tours in {where}: standard errors and CV "
                    "are NaN there (and rho too without any tour).",
                    UserWarning,
                    stacklevel=2,
                )
        mean[ntours < 1] = np.nan
        se[ntours < 2] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = se / np.maximum(mean, 1.0 - mean)
    core = ("item_i", "item_j")
    ds = assemble(
        pdraws,
        {"rho": (core, mean), "se": (core, se), "cv": (core, cv), "n_tours": ((), ntours)},
        combined=combined,
        positions=positions,
        coords={"item_i": pdraws.item_coord, "item_j": pdraws.item_coord},
        attrs=reg.attrs(pdraws, combined),
    )
    bm = reg.se_method == "batch_means"
    ds["rho"].attrs["long_name"] = (
        "frequency over draws of i and j in the same cluster" if bm else "RS estimate of P(i and j in the same cluster)"
    )
    ds["se"].attrs["long_name"] = "batch-means standard error" if bm else "RS standard error"
    ds["cv"].attrs["long_name"] = "se / max(mean, 1 - mean)"
    return ds

