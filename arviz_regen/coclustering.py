"""Co-clustering probabilities by regenerative sampling, with standard errors and CV.

ρ_ij = P(items i and j in the same cluster | y). The RS estimate uses whole tours between visits
to the regeneration state (the most probable visited state by default), its standard error the
univariate eq. regvar, and CV_ij = se(ρ̂_ij) / max(ρ̂_ij, 1 − ρ̂_ij) (Jones et al. 2006; the
paper's Figure 2b): the CV of the larger of the co- and anti-clustering estimates.

The work is one pass over the draws per block of item rows (one numba kernel,
:mod:`arviz_regen.pair_sums`): a pair's sums are settled only when its indicator changes (the
pairs of the items that move between consecutive draws) and at the end, so the cost is
O(changes + pairs) per chain, memory O(pairs of the block) whatever the number of draws. The
kernel plugs into the shared regeneration engine (:mod:`arviz_regen.regeneration`), which finds
the tours, pools chains and assembles the Dataset.

When the regeneration state recurs too rarely (a flat posterior over many items: every draw a
new partition), ``se_method="auto"`` falls back to the plain frequencies ρ̄_ij (mean over all
draws of 1{i and j together}) with lugsail batch-means standard errors
(:mod:`arviz_regen.batch_means`), from the batch sums of the pair indicators accumulated by the
same kernel: never pairs × states nor pairs × draws.
"""

from __future__ import annotations

import warnings

from ._numba import lazy_njit
import numpy as np

from ._data import load_partition, select_items
from .batch_means import LUGSAIL_R, BatchSums, batch_plan
from .pair_counts import add_pairs
from .pair_sums import PairSums
from .regeneration import assemble, estimate, eval_positions, regenerate
from .state import canonicalize
from .tours import completed_tours, regeneration_times

__all__ = ["coclustering", "coclustering_sums", "pair_rs_kernel", "pair_bm_kernel", "pair_frequencies", "chain_frequencies"]


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


def chain_frequencies(index, ulabels):
    """Co-clustering frequencies of the draws of chains: the share of draws with i, j together.

    Parameters
    ----------
    index : numpy.ndarray of int, shape (n_chain, n_draw)
        State of every draw (rows of ``ulabels``).
    ulabels : numpy.ndarray of int, shape (n_states, n_items)

    Returns
    -------
    numpy.ndarray, shape (n_items, n_items)
        Symmetric, ones on the diagonal: what :func:`pair_frequencies` gives with the states
        weighted by their visits, counted along the chains (the pairs that change between
        consecutive draws, :mod:`arviz_regen.pair_sums`): O(changes + pairs) per chain.
    """
    index = np.atleast_2d(np.asarray(index, dtype=np.int64))
    ul = _kernel_labels(ulabels)
    n = ul.shape[1]
    out = np.zeros((n, n))
    perm = np.argsort(ul[index[0, -1]], kind="stable")
    no_slot = np.zeros((0, 3), dtype=np.int64)
    tours = np.zeros((4, 1), dtype=np.int64)
    # per pair: the kernel's two state columns, its buffer and the total over chains
    for i0, i1 in row_blocks(n, max(1, PAIR_BLOCK_BYTES // 32)):
        sums = PairSums(n, (i0, i1), perm)
        total = np.zeros(sums.P, dtype=np.int64)
        for c in range(index.shape[0]):
            st, _ = sums.run(index[c], ul, no_slot, np.zeros(0), tours, 2)
            total += st[:, 1]
        _fill_half(out, total / index.size, perm, i0, i1)
    _symmetrize_half(out, 1.0)
    return out


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
    if eval_draws is None:
        eval_r = np.array([n_tours_total], dtype=np.int64)
    else:
        eval_r = completed_tours(is_regen)[np.asarray(eval_draws, dtype=np.int64)]
    s1, s2, sns = pair_rs_kernel(ulabels)(index, tau, eval_r)
    n = np.diff(tau).astype(float) if tau.size > 1 else np.zeros(0)
    sn = np.concatenate([[0.0], np.cumsum(n)])[eval_r]
    snn = np.concatenate([[0.0], np.cumsum(n * n)])[eval_r]
    return s1, s2, sns, sn, snn, eval_r


def _pair_sums(ul, rows, perm):
    """:class:`~arviz_regen.pair_sums.PairSums` of the pairs of positions ``rows`` (default all)."""
    n = ul.shape[1]
    i0, i1 = (0, n) if rows is None else (int(rows[0]), int(rows[1]))
    return PairSums(n, (i0, i1), np.arange(n) if perm is None else perm)


def pair_rs_kernel(ulabels, rows=None, perm=None, method="auto"):
    """Regeneration-engine kernel of the pair indicators: ``kernel(index, tau, eval_r)``.

    Returns the running sums (Σs, Σs², ΣNs) of the pair tour sums after ``eval_r`` tours, pair
    axis last in ``numpy.triu_indices(n_items, 1)`` order (see :meth:`Tours.rs_sums
    <arviz_regen.regeneration.Tours.rs_sums>`); with ``rows=(i0, i1)`` only the pairs (i, j > i)
    of the item rows i0 … i1 − 1, in the same order. ``perm``: item at each position, the pair
    axis then follows the positions; ``method``: how the sums are counted (see
    :class:`arviz_regen.pair_sums.PairSums`).
    """
    ul = _kernel_labels(ulabels)
    sums = _pair_sums(ul, rows, perm)

    def kernel(index, tau, eval_r):
        tau = np.asarray(tau, dtype=np.int64)
        eval_r = np.asarray(eval_r, dtype=np.int64)
        if tau.size < 2:  # no whole tour: nothing to sum
            zero = np.zeros((eval_r.size, sums.P))
            return zero, zero.copy(), zero.copy()
        m = int(np.asarray(index).size)
        R = tau.size - 1
        N = np.diff(tau)
        tours = np.zeros((4, max(m + 1, R + 1)), dtype=np.int64)
        tours[0, : m + 1] = np.minimum(np.searchsorted(tau, np.arange(m + 1), side="right") - 1, R)
        tours[1, : R + 1] = tau
        tours[2, 1 : R + 1] = np.cumsum(N)
        tours[3, 1 : R + 1] = np.cumsum(N * N)
        slots = np.array([[0, R, 2]], dtype=np.int64)
        if eval_r.size == 1 and eval_r[0] == R:  # the end of the chain: no snapshot needed
            st, _ = sums.run(index, ul, slots, np.zeros(1), tours, 6, method=method)
            return tuple(st[:, c][None].astype(float) for c in (3, 4, 5))
        _, out = sums.run(index, ul, slots, np.zeros(1), tours, 6, snap_t=tau[eval_r], snap_cols=(3, 4, 5), method=method)
        return tuple(out[:, c].astype(float) for c in range(3))

    return kernel


def pair_bm_kernel(ulabels, r=LUGSAIL_R, rows=None, perm=None, method="auto"):
    """Batch-means kernel of the pair indicators: ``kernel(index, positions) -> BatchSums``.

    For each evaluation draw p (default: the last), batches of ⌊√(p+1)⌋ and ⌊⌊√(p+1)⌋/r⌋
    draws (:func:`arviz_regen.batch_means.batch_plan`), accumulated in one streaming pass;
    ``rows=(i0, i1)``, ``perm``, ``method``: as for :func:`pair_rs_kernel`.
    """
    ul = _kernel_labels(ulabels)
    sums = _pair_sums(ul, rows, perm)

    def kernel(index, positions):
        index = np.ascontiguousarray(index, dtype=np.int64)
        m = np.array([index.size]) if positions is None else np.asarray(positions, dtype=np.int64) + 1
        E = m.size
        b, a, b_r, a_r = batch_plan(m, r)
        # slot 2e: batches of b, slot 2e + 1: of b_r (none when b_r = 0); state columns 0 and 1
        # (last change, total), then three per slot
        sizes = np.stack([b, np.maximum(b_r, 1)], axis=1).ravel()
        counts = np.stack([a, a_r], axis=1).ravel()
        slots = np.stack([sizes, counts, 2 + 3 * np.arange(2 * E)], axis=1)
        tours = np.zeros((4, 1), dtype=np.int64)
        if positions is None:
            st, _ = sums.run(index, ul, slots, 1.0 / sizes, tours, 2 + 6 * E, method=method)
            total = st[:, 1][None]
        else:
            order = np.argsort(m, kind="stable")
            st, out = sums.run(index, ul, slots, 1.0 / sizes, tours, 2 + 6 * E, snap_t=m[order], snap_cols=(1,),
                               method=method)  # fmt: skip
            total = np.empty((E, sums.P), dtype=np.int64)
            total[order] = out[:, 0]
        cols = slots[:, 2]

        def part(c):
            return np.ascontiguousarray(st[:, c].T, dtype=float)

        return BatchSums(
            m, total.astype(float), b, a, part(cols[0::2] + 1), part(cols[0::2] + 2), b_r, a_r,
            part(cols[1::2] + 1), part(cols[1::2] + 2),
        )  # fmt: skip

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


def _fill_half(arr, values, perm, i0, i1):
    """Put the pair values of position rows i0 … i1 − 1 (triu order) at (perm[i], perm[j]).

    Row by row, so each write stays in one row of ``arr``: of the entries (a, b) and (b, a) of
    a pair one is written, the other stays zero (see :func:`_symmetrize_half`).
    """
    n = perm.size
    off = 0
    for i in range(i0, i1):
        arr[..., perm[i], perm[i + 1 :]] = values[..., off : off + n - i - 1]
        off += n - i - 1


def _symmetrize_half(arr, diag, tile=256):
    """arr + arrᵀ in place, tile by tile (no n × n temporary), then ``diag`` on the diagonal."""
    n = arr.shape[-1]
    for a in range(0, n, tile):
        for b in range(a, n, tile):
            upper = arr[..., a : a + tile, b : b + tile]
            total = upper + np.swapaxes(arr[..., b : b + tile, a : a + tile], -1, -2)
            upper[...] = total
            arr[..., b : b + tile, a : a + tile] = np.swapaxes(total, -1, -2)
    idx = np.arange(n)
    arr[..., idx, idx] = diag


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


def _refuse_early(data, var_names, combined, cumulative, n_points, items, coords):
    """The memory check of :func:`coclustering`, from the posterior's sizes alone, before any
    draw is read (a whole matrix for 100,000 items was refused only after seconds of work)."""
    from ._data import PartitionDraws, select_partition_var, to_regen_data

    if items is not None or coords is not None or isinstance(data, PartitionDraws):
        return  # the subset or selection is known after loading: checked there
    try:
        posterior = to_regen_data(data, "data", var_names=var_names).posterior
        sizes = posterior[select_partition_var(posterior, var_names)].sizes
    except Exception:  # noqa: BLE001 - load_partition reports what is wrong with the input
        return
    dims = list(sizes)
    if len(dims) != 3 or "chain" not in sizes or "draw" not in sizes:
        return
    n = int(sizes[[d for d in dims if d not in ("chain", "draw")][0]])
    n_eval = 1 if not cumulative else (int(sizes["draw"]) if n_points is None else
                                        min(int(n_points), int(sizes["draw"])))  # fmt: skip
    lead = n_eval * (1 if combined else int(sizes["chain"]))
    check_memory(
        3 * lead * n * n * 8,
        f"The co-clustering of {n} items ({lead} estimate(s) of rho, se and cv)",
        "Pass `items=` (a subset of the items; blocks of items for the whole matrix), or fewer "
        "`n_points` in cumulative mode.",
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
        Hierarchical draws (``logp_var`` differs between draws of the same partition:
        hyperparameters sampled alongside, no regeneration): batch means, with a
        :class:`~arviz_regen.regeneration.SampledHyperparametersWarning` under "auto";
        "regenerative" is refused.
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
    _refuse_early(data, var_names, combined, cumulative, n_points, items, coords)
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
    mean = np.zeros(lead + (n, n))
    se = np.zeros(lead + (n, n))
    # the pair sums run over positions: the items grouped by the clusters of the last draw, so
    # that an item's cluster mates are neighbours in the kernel's arrays
    perm = np.argsort(ulabels[pdraws.index[0, -1]], kind="stable")
    # per pair: the kernel's state (2 + 6 per evaluation draw) and buffers and, per chain and
    # evaluation draw, the sums it returns (about five), stacked over chains (a copy) and pooled
    n_eval = 1 if positions is None else len(positions)
    per_pair = 8 * (12 + 6 * n_eval + 12 * pdraws.n_chain * n_eval)
    for i0, i1 in row_blocks(n, max(1, PAIR_BLOCK_BYTES // per_pair)):
        mean_p, se_p, _ = estimate(
            reg.tours,
            reg.se_method,
            rs_kernel=pair_rs_kernel(ulabels, rows=(i0, i1), perm=perm),
            bm_kernel=pair_bm_kernel(ulabels, rows=(i0, i1), perm=perm),
            positions=positions,
            combined=combined,
        )
        for arr, src in ((mean, mean_p), (se, se_p)):
            _fill_half(arr, src, perm, i0, i1)
        del mean_p, se_p
    for arr, diag in ((mean, 1.0), (se, 0.0)):
        _symmetrize_half(arr, diag)
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

