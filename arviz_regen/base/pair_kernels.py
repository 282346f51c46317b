"""Co-clustering kernels: pair frequencies and the per-pair sums of the regeneration engine.

Numpy in, numpy out. The pairs (i, j > i) of n items are laid out in ``numpy.triu_indices(n, 1)``
order; the sums are taken block by block over item rows (:func:`row_blocks`), so memory is
O(pairs of a block) whatever the number of draws, and counted along the chains where the pair
indicators change (:mod:`arviz_regen.base.pair_sums`). :func:`arviz_regen.coclustering` puts them
into a Dataset.
"""

from __future__ import annotations

import numpy as np

from .batch_means import LUGSAIL_R, BatchSums, batch_plan
from .lazy_jit import lazy_njit
from .pair_sums import COST_RUN_PAIR, PairSums, _together, sampled_changes
from .state import canonicalize
from .together_counts import TOGETHER_WORK_ROWS, together_counts
from .tours import completed_tours, regeneration_times

__all__ = [
    "pair_frequencies",
    "chain_frequencies",
    "coclustering_sums",
    "pair_rs_kernel",
    "pair_bm_kernel",
    "row_blocks",
    "block_pairs",
    "check_memory",
    "PAIR_BLOCK_BYTES",
    "kernel_labels",
    "fill_half",
    "symmetrize_half",
]


@lazy_njit("void(int64[:, ::1], float64[::1], float64[::1], int64[::1])", cache=True, _nrt=False)
def _add_state_pairs(ulabels, weights, acc, work):
    """acc[p] += weights[u] for each pair p = (i, j > i) that state u clusters together (u in order).

    Pairs in ``numpy.triu_indices(n, 1)`` order; labels in 0 … n − 1; ``work`` int64 (3 n + 1,):
    a counting sort of each state's items by cluster (items, cluster starts, fill pointers then
    places). One function, no callees: quick to compile.
    """
    S, n = ulabels.shape
    for u in range(S):
        w = weights[u]
        if w == 0.0:
            continue
        for lab in range(n + 1):
            work[n + lab] = 0
        for i in range(n):
            work[n + 1 + ulabels[u, i]] += 1
        for lab in range(n):
            work[n + lab + 1] += work[n + lab]
            work[2 * n + 1 + lab] = work[n + lab]
        for i in range(n):  # the items of each cluster in ascending order
            lab = ulabels[u, i]
            work[work[2 * n + 1 + lab]] = i
            work[2 * n + 1 + lab] += 1
        for x in range(n):  # the fill pointers become each item's place in that order
            work[2 * n + 1 + work[x]] = x
        base = -1  # pair (i, j) at base + j: items in ascending order, one sweep through acc
        for i in range(n):
            for y in range(work[2 * n + 1 + i] + 1, work[n + 1 + ulabels[u, i]]):
                acc[base + work[y]] += w
            base += n - i - 2


def _state_pairs(ul, weights, scale=1.0):
    """Σ_u weights_u 1{i, j together in state u} / ``scale``, symmetric (n, n), ones on the diagonal."""
    n = ul.shape[1]
    acc = np.zeros(n * (n - 1) // 2)
    _add_state_pairs(ul, np.ascontiguousarray(weights, dtype=np.float64), acc, np.zeros(3 * n + 1, dtype=np.int64))
    out = np.zeros((n, n))
    fill_half(out, acc / scale, np.arange(n), 0, n)
    symmetrize_half(out, 1.0)
    return out


def kernel_labels(ulabels):
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
    ul = kernel_labels(ulabels)
    w = np.ones(ul.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    return _state_pairs(ul, w / w.sum())


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
        consecutive draws, :mod:`arviz_regen.base.together_counts`): O(changes + pairs) per chain; or
        over the distinct states when that is cheaper (O(pairs together) per state), by a matrix
        product in numpy for few items and states (no kernel to compile). The counts are exact
        integers whichever way they are taken: the same frequencies.
    """
    index = np.ascontiguousarray(np.atleast_2d(index), dtype=np.int64)
    ul = kernel_labels(ulabels)
    n = ul.shape[1]
    visits = np.bincount(index.ravel(), minlength=ul.shape[0])
    dense = _dense_counts(index, ul, visits)
    if dense is not None:
        out = dense / index.size
        out[np.arange(n), np.arange(n)] = 1.0
        return out
    if _cheaper_by_states(index, ul, visits):
        return _state_pairs(ul, visits, index.size)
    out = np.zeros((n, n))
    together_counts(index, ul, out, np.zeros((TOGETHER_WORK_ROWS, n + 1), dtype=np.int64))
    symmetrize_half(out, float(index.size))
    out /= index.size
    return out


#: float operations (2 n² × the clusters of the visited states) and one-hot cells (n × those
#: clusters) up to which :func:`chain_frequencies` counts the pairs by a matrix product in numpy: a
#: small posterior's co-clustering should not wait for numba to compile the pair kernels
DENSE_FLOPS = 1 << 28
DENSE_CELLS = 1 << 22


def _dense_counts(index, ul, visits=None):
    """Draws with i, j together, (n, n) float, as Σ_u visits_u Z_u Z_uᵀ (Z_u the one-hot clusters of state u), or None.

    None when the product would exceed :data:`DENSE_FLOPS` or :data:`DENSE_CELLS`. The sums are
    integers below 2⁵³, exact in float64 whatever the order of the product's additions, so the
    frequencies equal those counted along the chains.
    """
    n = ul.shape[1]
    if visits is None:
        visits = np.bincount(index.ravel(), minlength=ul.shape[0])
    seen = np.flatnonzero(visits)
    if 2 * n * n * seen.size > DENSE_FLOPS or n * seen.size > DENSE_CELLS:  # each state has a cluster
        return None
    k = ul[seen].max(axis=1) + 1 if n else np.zeros(seen.size, dtype=np.int64)
    cols = int(k.sum())
    if 2 * n * n * cols > DENSE_FLOPS or n * cols > DENSE_CELLS:
        return None
    offset = np.cumsum(k) - k
    one_hot = np.zeros((n, cols))
    one_hot[np.tile(np.arange(n), seen.size), (offset[:, None] + ul[seen]).ravel()] = 1.0
    return (one_hot * np.repeat(visits[seen], k).astype(float)) @ one_hot.T


#: estimated work (ns) by which counting the pairs over the distinct states may exceed counting
#: them along the chains' changes, and still be chosen: its kernel compiles faster
#: (docs/performance.md, "Figures behind the code")
STATES_SLACK_NS = 2e8
#: ns per pair that flips at a change of state, counted along the chains (:mod:`.together_counts`)
COST_TOGETHER_FLIP = 6.0
#: labels per block of states whose pairs :func:`_cheaper_by_states` sums at a time (a bounded temporary)
STATES_BLOCK_CELLS = 1 << 22


def _cheaper_by_states(index, ul, visits):
    """Whether :func:`chain_frequencies` counts over the distinct states (cost estimates, ns).

    States: :data:`~arviz_regen.base.pair_sums.COST_RUN_PAIR` per pair together in each state
    visited; changes: :data:`COST_TOGETHER_FLIP` per pair that flips at a change of state
    (:func:`~arviz_regen.base.pair_sums.sampled_changes`) and per pair at the end of each chain.
    The states' pairs are summed only until they exceed the changes' estimate: the same answer as
    the full sum (the partial sums only grow).
    """
    n = ul.shape[1]
    by_changes = COST_TOGETHER_FLIP * n * (n - 1) / 2 * index.shape[0]
    for chain in index:
        n_changes, flips, _ = sampled_changes(chain, ul)
        by_changes += COST_TOGETHER_FLIP * flips * n_changes
    seen = np.flatnonzero(visits)
    every = seen.size == ul.shape[0]  # all states visited: blocks are views, not copies
    step = max(1, STATES_BLOCK_CELLS // max(n, 1))
    together = 0.0
    for a in range(0, seen.size, step):
        together += float(_together(ul[a : a + step] if every else ul[seen[a : a + step]]).sum())
        if COST_RUN_PAIR * together > by_changes + STATES_SLACK_NS:
            return False
    return True


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
    """:class:`~arviz_regen.base.pair_sums.PairSums` of the pairs of positions ``rows`` (default all)."""
    n = ul.shape[1]
    i0, i1 = (0, n) if rows is None else (int(rows[0]), int(rows[1]))
    return PairSums(n, (i0, i1), np.arange(n) if perm is None else perm)


def pair_rs_kernel(ulabels, rows=None, perm=None, method="auto"):
    """Regeneration-engine kernel of the pair indicators: ``kernel(index, tau, eval_r)``.

    Returns the running sums (Σs, Σs², ΣNs) of the pair tour sums after ``eval_r`` tours, pair
    axis last in ``numpy.triu_indices(n_items, 1)`` order (see :meth:`Tours.rs_sums
    <arviz_regen.xr.regeneration.Tours.rs_sums>`); with ``rows=(i0, i1)`` only the pairs (i, j > i)
    of the item rows i0 … i1 − 1, in the same order. ``perm``: item at each position, the pair
    axis then follows the positions; ``method``: how the sums are counted (see
    :class:`arviz_regen.base.pair_sums.PairSums`).
    """
    ul = kernel_labels(ulabels)
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
        _, out = sums.run(
            index, ul, slots, np.zeros(1), tours, 6, snap_t=tau[eval_r], snap_cols=(3, 4, 5), method=method
        )
        return tuple(out[:, c].astype(float) for c in range(3))

    return kernel


def pair_bm_kernel(ulabels, r=LUGSAIL_R, rows=None, perm=None, method="auto"):
    """Batch-means kernel of the pair indicators: ``kernel(index, positions) -> BatchSums``.

    For each evaluation draw p (default: the last), batches of ⌊√(p+1)⌋ and ⌊⌊√(p+1)⌋/r⌋
    draws (:func:`arviz_regen.base.batch_means.batch_plan`), accumulated in one streaming pass;
    ``rows=(i0, i1)``, ``perm``, ``method``: as for :func:`pair_rs_kernel`.
    """
    ul = kernel_labels(ulabels)
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


def fill_half(arr, values, perm, i0, i1):
    """Put the pair values of position rows i0 … i1 − 1 (triu order) at (perm[i], perm[j]).

    Row by row, so each write stays in one row of ``arr``: of the entries (a, b) and (b, a) of
    a pair one is written, the other stays zero (see :func:`symmetrize_half`).
    """
    n = perm.size
    off = 0
    for i in range(i0, i1):
        arr[..., perm[i], perm[i + 1 :]] = values[..., off : off + n - i - 1]
        off += n - i - 1


def symmetrize_half(arr, diag, tile=256):
    """Set ``arr`` to arr + arrᵀ in place, tile by tile (no n × n temporary), then ``diag`` on the diagonal."""
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
    """MemoryError (with ``advice``) when ``n_bytes`` exceed the memory available now (Linux).

    ``advice``: a string, or a function of the available bytes that returns one (advice sized to fit).
    """
    try:
        import os

        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not Linux: let numpy try
        return
    if n_bytes > available:
        advice = advice(available) if callable(advice) else advice
        raise MemoryError(
            f"{what} needs {n_bytes / 2**30:.1f} GiB but {available / 2**30:.1f} GiB are available. {advice}"
        )
