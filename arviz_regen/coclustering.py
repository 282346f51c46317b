"""Co-clustering probabilities by regenerative sampling, with standard errors and CV.

ρ_ij = P(items i and j in the same cluster | y). The RS estimate uses whole tours between visits
to the regeneration state (the most probable visited state by default), its standard error the
univariate eq. regvar, and CV_ij = se(ρ̂_ij) / max(ρ̂_ij, 1 − ρ̂_ij) (Jones et al. 2006; the
paper's Figure 2b): the CV of the larger of the co- and anti-clustering estimates.

The work is one pass over the draws per block of item rows (numba kernels): the pair counts
follow the chain (:mod:`arviz_regen.pair_counts`: by runs of identical states, or by the pairs
that change between consecutive states, whichever is cheaper for the chain) and are read at the
end of each tour, so memory stays O(n²) whatever the number of draws, and the blocks bound the
working memory beyond the result. Both kernels plug into the shared regeneration engine
(:mod:`arviz_regen.regeneration`), which finds the tours, pools chains and assembles the Dataset.

When the regeneration state recurs too rarely (a flat posterior over many items: every draw a
new partition), ``se_method="auto"`` falls back to the plain frequencies ρ̄_ij (mean over all
draws of 1{i and j together}) with lugsail batch-means standard errors
(:mod:`arviz_regen.batch_means`). The batch sums of the pair indicators are accumulated by a
second streaming kernel on the same counts, so memory stays O(E·n²) (E evaluation draws) there
too: never pairs × states nor pairs × draws.
"""

from __future__ import annotations

import warnings

from ._numba import lazy_njit
import numpy as np

from ._data import load_partition, select_items
from .batch_means import LUGSAIL_R, BatchSums, batch_plan
from .pair_counts import add_pairs, count_until, new_work, start_counts, use_clock
from .regeneration import assemble, estimate, eval_positions, regenerate
from .state import canonicalize
from .tours import completed_tours, regeneration_times

__all__ = ["coclustering", "coclustering_sums", "pair_rs_kernel", "pair_bm_kernel", "pair_frequencies"]


@lazy_njit(cache=True)
def _pair_prefix_sums(idx, tau, ulabels, eval_r, i0, i1):
    """Running sums of pair-indicator tour sums after ``eval_r[e]`` tours (sorted, 0 … R).

    Pairs of the item rows i0 … i1 − 1 only (a block; the whole triangle with 0, n). The pair
    counts are brought to the end of each tour by :func:`arviz_regen.pair_counts.count_until`;
    a tour's sums are the differences.
    """
    n = ulabels.shape[1]
    P = (i1 - i0) * (2 * n - i0 - i1 - 1) // 2
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
    C = np.zeros(P)
    clock_state = np.zeros((P, 2))  # a pair's acc and last side by side: one cache line per flip
    acc = clock_state[:, 0]
    last = clock_state[:, 1]
    prev = np.zeros(P)
    work = new_work(n)
    clock = False
    if R >= 1:
        clock = use_clock(idx, ulabels, tau[0], tau[R], i0, i1, work)
        start_counts(C, acc, last, float(tau[0]))
    cur = -1
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
        start = tau[r]
        stop = tau[r + 1]
        cur = count_until(clock, C, acc, last, idx, ulabels, cur, start, stop, i0, i1, work)
        nr = float(stop - start)
        for p in range(P):
            sp = C[p] - prev[p]  # draws together during tour r
            prev[p] = C[p]
            a1[p] += sp
            a2[p] += sp * sp
            ans[p] += nr * sp
        sn += nr
        snn += nr * nr
    return s1, s2, sns, sn_out, snn_out


@lazy_njit(cache=True)
def _pair_frequencies(ulabels, weights):
    S, n = ulabels.shape
    acc = np.zeros(n * (n - 1) // 2)
    order = np.empty(n, dtype=np.int64)
    cstart = np.empty(n + 1, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    for u in range(S):
        add_pairs(acc, ulabels[u], weights[u], 0, n, order, cstart, pos)
    out = np.empty((n, n))
    p = 0
    for i in range(n):
        out[i, i] = 1.0
        for j in range(i + 1, n):
            out[i, j] = acc[p]
            out[j, i] = acc[p]
            p += 1
    return out


def _kernel_labels(ulabels):
    """int64 labels in 0 … n_items − 1, as the kernels need (renumbered per state if not)."""
    ul = np.ascontiguousarray(ulabels, dtype=np.int64)
    if ul.size and (ul.min() < 0 or ul.max() >= ul.shape[1]):
        ul = np.ascontiguousarray(canonicalize(ul))
    return ul


def pair_frequencies(ulabels, weights=None):
    """Weighted co-clustering frequencies Σ_u w_u 1{i, j together in state u} / Σ_u w_u (numpy core).

    Parameters
    ----------
    ulabels : numpy.ndarray of int, shape (n_states, n_items)
        Label vectors (any non-negative labels below n_items).
    weights : numpy.ndarray, shape (n_states,), optional
        E.g. visit counts; default equal.

    Returns
    -------
    numpy.ndarray, shape (n_items, n_items)
        Symmetric, ones on the diagonal. The cost is the number of co-clustered pairs summed
        over the states (no pairs × states array).
    """
    ul = _kernel_labels(ulabels)
    w = np.ones(ul.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    return _pair_frequencies(ul, np.ascontiguousarray(w / w.sum()))


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
    ul = _kernel_labels(ulabels)
    out = _pair_prefix_sums(index, tau, ul, eval_r, 0, ul.shape[1])
    return out + (eval_r,)


@lazy_njit(cache=True)
def _pair_batch_sums(idx, ulabels, ev_pos, ev_slot, n_slots, n_eval, i0, i1):
    """Streaming batch sums of the pair indicators of one chain.

    Events, sorted by ``ev_pos`` (a number of draws from the start): slot s < ``n_slots`` is a
    batch boundary of batch-size slot s (the pair counts since that slot's previous boundary,
    B, are added as B² to ``sbb[s]``); slot ``n_slots + e`` records the pair counts of the first
    ``ev_pos`` draws as the total of evaluation e. Returns (Σ B per slot, i.e. the counts at
    the slot's last boundary; Σ B² per slot; totals), each with the pair axis last (pairs of
    the item rows i0 … i1 − 1). Counts by :func:`arviz_regen.pair_counts.count_until`.
    """
    n = ulabels.shape[1]
    P = (i1 - i0) * (2 * n - i0 - i1 - 1) // 2
    C = np.zeros(P)
    clock_state = np.zeros((P, 2))  # a pair's acc and last side by side: one cache line per flip
    acc = clock_state[:, 0]
    last = clock_state[:, 1]
    prev = np.zeros((n_slots, P))
    sbb = np.zeros((n_slots, P))
    tot = np.zeros((n_eval, P))
    work = new_work(n)
    end = ev_pos[-1] if ev_pos.shape[0] else 0
    clock = use_clock(idx, ulabels, 0, end, i0, i1, work)
    start_counts(C, acc, last, 0.0)
    cur = -1
    t = 0
    for ev in range(ev_pos.shape[0]):
        stop = ev_pos[ev]
        cur = count_until(clock, C, acc, last, idx, ulabels, cur, t, stop, i0, i1, work)
        t = stop
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


def pair_rs_kernel(ulabels, rows=None):
    """Regeneration-engine kernel of the pair indicators: ``kernel(index, tau, eval_r)``.

    Returns the running sums (Σs, Σs², ΣNs) of the pair tour sums after ``eval_r`` tours, pair
    axis last in ``numpy.triu_indices(n_items, 1)`` order (see :meth:`Tours.rs_sums
    <arviz_regen.regeneration.Tours.rs_sums>`); with ``rows=(i0, i1)`` only the pairs (i, j > i)
    of the item rows i0 … i1 − 1, in the same order.
    """
    ul = _kernel_labels(ulabels)
    i0, i1 = (0, ul.shape[1]) if rows is None else (int(rows[0]), int(rows[1]))

    def kernel(index, tau, eval_r):
        tau = np.asarray(tau, dtype=np.int64)
        if tau.size == 0:
            tau = np.zeros(1, dtype=np.int64)
        index = np.ascontiguousarray(index, dtype=np.int64)
        s1, s2, sns, _, _ = _pair_prefix_sums(index, tau, ul, np.ascontiguousarray(eval_r, dtype=np.int64), i0, i1)
        return s1, s2, sns

    return kernel


def pair_bm_kernel(ulabels, r=LUGSAIL_R, rows=None):
    """Batch-means kernel of the pair indicators: ``kernel(index, positions) -> BatchSums``.

    For each evaluation draw p (default: the last), batches of ⌊√(p+1)⌋ and ⌊⌊√(p+1)⌋/r⌋
    draws (:func:`arviz_regen.batch_means.batch_plan`), accumulated in one streaming pass;
    ``rows=(i0, i1)``: only the pairs of those item rows (see :func:`pair_rs_kernel`).
    """
    ul = _kernel_labels(ulabels)
    i0, i1 = (0, ul.shape[1]) if rows is None else (int(rows[0]), int(rows[1]))

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
            index, ul, np.ascontiguousarray(pos[order]), np.ascontiguousarray(slot[order]), 2 * E, E, i0, i1
        )
        return BatchSums(m, tot, b, a, sb[0::2], sbb[0::2], b_r, a_r, sb[1::2], sbb[1::2])

    return kernel


#: working memory (bytes) of the pair kernels for one block of item rows: the pair sums are
#: computed block by block, so co-clustering of many items never needs pairs × states, nor all
#: pairs' running sums at once (only the n × n results)
PAIR_BLOCK_BYTES = 256 * 2**20


def row_blocks(n, max_pairs):
    """Item-row ranges (i0, i1) covering the pairs (i, j > i), at most ``max_pairs`` each (≥ 1 row)."""
    sizes = n - 1 - np.arange(n - 1)  # pairs of each row
    blocks, i0 = [], 0
    while i0 < n - 1:
        cum = np.cumsum(sizes[i0:])
        i1 = i0 + max(1, int(np.searchsorted(cum, max_pairs, side="right")))
        blocks.append((i0, i1))
        i0 = i1
    return blocks


def block_pairs(i0, i1, n):
    """(i, j) of the pairs (i, j > i) of rows i0 … i1 − 1, in ``numpy.triu_indices`` order."""
    counts = n - 1 - np.arange(i0, i1)
    ii = np.repeat(np.arange(i0, i1), counts)
    jj = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts) + ii + 1
    return ii, jj


def check_memory(n_bytes, what, advice):
    """MemoryError (with ``advice``) when ``n_bytes`` exceed the memory available now (Linux)."""
    try:
        import os

        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not Linux: let numpy try
        return
    if n_bytes > available:
        raise MemoryError(
            f"{what} needs {n_bytes / 2**30:.1f} GiB but {available / 2**30:.1f} GiB are available. {advice}"
        )


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
    items=None,
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
    items : sequence of item coordinate labels, slice of labels or boolean mask, optional
        Only the co-clustering of these items (in this order); the regeneration state and tours
        are still those of the whole partition. The pair sums are computed in blocks of item
        rows whose working memory is bounded (:data:`PAIR_BLOCK_BYTES`), so the memory is that
        of the result, 3 × (items)² floats per estimate: for tens of thousands of items name the
        subset you need. A result larger than the available memory raises a MemoryError that
        says so.

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
    cols = select_items(pdraws, items)
    reg = regenerate(pdraws, regeneration, se_method=se_method, combined=combined, what="coclustering")
    n = cols.size
    positions = eval_positions(pdraws.n_draw, n_points) if cumulative else None
    ntours = reg.tours.tours_at(positions)
    if combined:
        ntours = ntours.sum(axis=0)
    lead = ntours.shape
    check_memory(
        3 * int(np.prod(lead)) * n * n * 8,
        f"The co-clustering of {n} items ({'x'.join(map(str, lead))} estimates of rho, se and cv)",
        "Pass `items=` (a subset of the items; blocks of items for the whole matrix), or fewer "
        "`n_points` in cumulative mode.",
    )
    ulabels = _kernel_labels(pdraws.labels_of(cols))  # a subset's labels renumbered below its size
    mean = np.ones(lead + (n, n))
    se = np.zeros(lead + (n, n))
    # per pair: the kernel's counts and running sums and, per chain and evaluation draw, the sums
    # it returns (about five), stacked over chains (a copy) and pooled
    per_pair = 8 * (12 + 12 * pdraws.n_chain * (1 if positions is None else len(positions)))
    for i0, i1 in row_blocks(n, max(1, PAIR_BLOCK_BYTES // per_pair)):
        mean_p, se_p, _ = estimate(
            reg.tours,
            reg.se_method,
            rs_kernel=pair_rs_kernel(ulabels, rows=(i0, i1)),
            bm_kernel=pair_bm_kernel(ulabels, rows=(i0, i1)),
            positions=positions,
            combined=combined,
        )
        ii, jj = block_pairs(i0, i1, n)
        for arr, src in ((mean, mean_p), (se, se_p)):
            arr[..., ii, jj] = src
            arr[..., jj, ii] = src
        del mean_p, se_p, ii, jj
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
    cv = np.subtract(1.0, mean)  # se / max(ρ, 1 − ρ), in place: no further n × n temporaries
    np.maximum(cv, mean, out=cv)
    with np.errstate(invalid="ignore", divide="ignore"):
        np.divide(se, cv, out=cv)
    core = ("item_i", "item_j")
    ds = assemble(
        pdraws,
        {"rho": (core, mean), "se": (core, se), "cv": (core, cv), "n_tours": ((), ntours)},
        combined=combined,
        positions=positions,
        coords={"item_i": pdraws.item_coord[cols], "item_j": pdraws.item_coord[cols]},
        attrs=reg.attrs(pdraws, combined),
    )
    bm = reg.se_method == "batch_means"
    ds["rho"].attrs["long_name"] = (
        "frequency over draws of i and j in the same cluster" if bm else "RS estimate of P(i and j in the same cluster)"
    )
    ds["se"].attrs["long_name"] = "batch-means standard error" if bm else "RS standard error"
    ds["cv"].attrs["long_name"] = "se / max(mean, 1 - mean)"
    return ds

