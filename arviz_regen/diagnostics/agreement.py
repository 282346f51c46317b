"""Do the chains agree? A permutation test of batch means that works at any number of items.

Hotelling-RS needs states that recur. With many items every draw is a new partition, and what
the chains can still be asked is whether they agree: on the scalar traces that see the whole
partition (:func:`arviz_regen.partition_traces`: distances to reference partitions, number of
clusters, log posterior) and on the co-clustering of every pair of items.

Batch means. Each chain is cut into b batches of L draws (its first n − bL draws are left out),
with L at least :data:`BATCH_TAU` times the largest integrated autocorrelation time of the
scalar traces within any chain (:func:`arviz_regen.base.autocorrelation.integrated_time`); at that
length the means of consecutive batches are nearly independent. Each chain is split into two
halves, as split-R-hat does, so that a chain that drifts disagrees with itself. Under
convergence all C·b batch means of a feature are then exchangeable across the 2C half-chains.

Test. For every feature f (each trace; each pair indicator 1{i, j together}) the one-way
analysis-of-variance ratio F_f of between-half-chain to within-half-chain variation of its batch
means. The largest F_f of each family (traces; co-clustering pairs) is referred to its
permutation distribution (batches reassigned to half-chains at random): the p-value of each
family is exact under exchangeability whatever the distribution of the batch means and the
dependence between features (the max-T method of Westfall & Young controls the family-wise
error over all pairs). ``p_value_all`` is Simes' combination of the two families. Pair-level
adjusted p-values say which pairs disagree.

Too little information. When the chains are too short for their autocorrelation (fewer than
:data:`MIN_BATCHES` batches of L draws per chain) no batch means are nearly independent and the
test cannot be trusted: the result is undecided (NaN, with a warning saying how many draws would
do), never a pass.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import xarray as xr

from ..base.anova import anova_f, max_f
from ..base.autocorrelation import integrated_time
from ..base.blas import one_blas_thread
from ..base.pair_kernels import kernel_labels
from ..base.pair_sums import PairSums
from ..base.state import canonicalize
from ..base.tour_tests import _batch_seed, sequential_p_values, simes
from ..estimates.traces import partition_traces
from ..xr.distributed import hold_blocks, map_blocks, n_threads, resolve_client, using_client
from ..xr.draws import load_partition

__all__ = ["chain_agreement", "BATCH_TAU", "MIN_BATCHES", "MAX_BATCHES", "MAX_PAIR_ITEMS"]

#: batch length in units of the largest within-chain integrated autocorrelation time of the
#: traces. Batch means of length L of a chain with integrated time τ have a lag-one
#: correlation of about τ/(2L): 5% at L = 10τ, which leaves the permutation test within Monte
#: Carlo error of its level in our simulations (tests/arviz_regen/diagnostics/test_agreement.py).
BATCH_TAU = 10
#: fewest batches per chain (two per half-chain) for a decision
MIN_BATCHES = 4
#: most batches per chain (more add little power and cost time)
MAX_BATCHES = 20
#: most items whose pairs are tested (a deterministic random subset beyond: the test stays valid
#: for the pairs it sees; 400 items are 79,800 pairs)
MAX_PAIR_ITEMS = 400


def _batch_plan(tau, n_draw, batch_tau, max_batches):
    """(batches per chain, batch length): L ≥ batch_tau·τ, an even number of batches ≤ max_batches."""
    L = max(1, int(math.ceil(batch_tau * tau)))
    b = min(n_draw // L, int(max_batches))
    b -= b % 2
    if b < 2:
        return b, L
    return b, n_draw // b


def _pair_batches(pdraws, columns, b, L, offset, client=None):
    """Return batch means of the pair indicators of the items ``columns``, one (pairs, b) array per chain.

    A task per chain; the results are left on the workers when there is a cluster.
    """
    ul = kernel_labels(canonicalize(pdraws.labels_of(columns)))
    blocks = [(pdraws.index[c],) for c in range(pdraws.n_chain)]
    return hold_blocks(_chain_pair_batches, blocks, shared=(ul, b, L, offset), client=client)


def _chain_pair_batches(index, ul, b, L, offset):
    """Batch means (pairs, b) of the pair indicators along one chain (state ``index`` per draw)."""
    n = ul.shape[1]
    sums = PairSums(n, (0, n), np.arange(n))
    ends = offset + L * np.arange(b + 1)  # draws together after each batch end: column 1
    no_slot = np.zeros((0, 3), dtype=np.int64)
    no_tours = np.zeros((4, 1), dtype=np.int64)
    _, snaps = sums.run(index, ul, no_slot, np.zeros(0), no_tours, 2, snap_t=ends, snap_cols=(1,))
    return np.diff(snaps[:, 0, :], axis=0).T / L


def _family(Y):
    """Return the features of ``Y`` (features, units) that vary.

    Returns their rows, total and grand sums, and the mask of those that vary.
    """
    grand = Y.sum(axis=1)
    total = ((Y - (grand / Y.shape[1])[:, None]) ** 2).sum(axis=1) if Y.size else np.zeros(0)
    live = total > 1e-12 * np.maximum((Y**2).sum(axis=1), 1e-300) if Y.size else np.zeros(0, bool)
    return np.ascontiguousarray(Y[live]), total[live], grand[live], live


def _pair_rows(a, z, chains):
    """:func:`_family` of the pairs a … z − 1, batch means of all chains side by side (one task)."""
    return _family(np.concatenate([c[a:z] for c in chains], axis=1))


def _live_mask(block):
    return block[3]


def _pair_row(k, chains):
    """Batch means of pair ``k`` along all chains, shape (C·b,)."""
    return np.concatenate([c[k] for c in chains])


def _max_f_block(group, block, n_groups):
    """Largest F over the varying rows of one block (:func:`_family`) of features, for each permutation (one task)."""
    Y, total, grand, _ = block
    return max_f(Y, total, grand, group, n_groups)


def _anova_block(block, groups, n_groups):
    """F of each varying row of one block (:func:`_family`) of features (one task)."""
    return anova_f(block[0], groups, n_groups) if block[0].shape[0] else np.zeros(0)


@one_blas_thread
def chain_agreement(
    data,
    var_names=None,
    *,
    traces=None,
    n_permutations=199,
    random_seed=0,
    pairs=True,
    batch_tau=BATCH_TAU,
    max_batches=MAX_BATCHES,
    max_items=MAX_PAIR_ITEMS,
    alpha=0.05,
    logp_var="partition_logp",
    logp=None,
    coords=None,
    client=None,
):
    """Test that the chains agree, on traces that see the whole partition and on co-clustering.

    Valid at any number of items (states need not recur): a permutation test of batch means
    across half-chains (see the module notes), with the family-wise error over all pairs of items
    controlled.

    Parameters
    ----------
    data : InferenceData, DataTree, Dataset, dict or array
        Posterior labels ``(chain, draw, item)`` (and ``partition_logp`` in ``sample_stats``,
        used as a trace when present).
    var_names : str or list of one str, optional
        The partition variable.
    traces : xarray.Dataset, optional
        The output of :func:`arviz_regen.partition_traces` (computed when not given).
    n_permutations : int
        Most permutations (sequential stopping as for Hotelling-RS; p-values ≥ 1/(n + 1)).
    random_seed : int
        Seed of the permutations and of the item subset.
    pairs : bool
        Test the co-clustering pairs too (False: the traces only).
    batch_tau : float
        Batch length in units of the integrated autocorrelation time (:data:`BATCH_TAU`).
    max_batches : int
        Most batches per chain.
    max_items : int
        Most items whose pairs are tested (a random subset of items beyond, named in ``attrs``).
    alpha : float
        Level at which ``n_pairs_disagreeing`` counts pairs (family-wise over the pairs).
    logp_var, logp, coords
        As for :func:`arviz_regen.hotelling_rs`.
    client : distributed.Client, str or None, optional
        The ``dask.distributed`` cluster whose workers compute the traces, the pair batch means
        (a task per chain) and the permutation maxima over the pairs (a task per block of
        pairs): a client, a scheduler address, or None for the active client if there is one
        (else this process); ``False``: this process. The results do not depend on it.

    Returns
    -------
    xarray.Dataset
        ``p_value_all`` (the verdict: Simes' combination of the two below), ``p_value_traces``,
        ``p_value_coclustering``; per trace (dim ``trace``) ``f_statistic`` and ``p_value_trace``
        (max-T adjusted over the traces); ``n_pairs`` (pairs with variation), and, per pair
        disagreeing at ``alpha`` after adjustment, nothing but their number
        ``n_pairs_disagreeing`` and the worst one (``worst_pair`` items, its co-clustering
        frequency per chain ``worst_pair_coclustering``). ``attrs``: ``decided``, ``reason``,
        ``batch_size``, ``n_batches`` (per chain), ``tau_max``, ``n_permutations_used``. NaN
        p-values when undecided, always with a warning; a trace (or a family) that does not
        vary at all has NaN ``f_statistic`` and p-value (nothing to compare), and
        ``p_value_all`` combines the families that vary.

    Warns
    -----
    UserWarning
        Chains too short for their autocorrelation (undecided); items subsampled for the pairs.
    """
    client = resolve_client(client)
    with using_client(client):
        pdraws = load_partition(data, var_names, logp_var=logp_var, logp=logp, coords=coords)
    if traces is None:
        traces = partition_traces(pdraws, client=client or False)
    names = [v for v in traces.data_vars if set(traces[v].dims) == {"chain", "draw"}]
    X = np.stack([traces[v].transpose("chain", "draw").values.astype(float) for v in names])  # (F, C, n)
    C, n = pdraws.n_chain, pdraws.n_draw
    tau = integrated_time(X)
    tau_max = float(np.nanmax(tau)) if np.isfinite(tau).any() else 1.0
    b, L = _batch_plan(tau_max, n, batch_tau, max_batches)
    nan = float("nan")
    base = {
        "decided": int(b >= MIN_BATCHES),
        "batch_size": int(L),
        "n_batches": int(max(b, 0)),
        "tau_max": tau_max,
        "alpha": float(alpha),
    }
    if b < MIN_BATCHES:
        need = int(math.ceil(MIN_BATCHES * batch_tau * tau_max))
        reason = (
            f"the chains are too short for their autocorrelation: the slowest trace has an "
            f"integrated autocorrelation time of {tau_max:.0f} draws within a chain, and the test "
            f"needs {MIN_BATCHES} batches of {batch_tau:g} times that per chain (about {need} "
            f"draws per chain, {n} drawn)"
        )
        warnings.warn(
            f"chain_agreement is undecided: {reason}. Run longer (or thin less); no verdict, not a pass.",
            UserWarning,
            stacklevel=2,
        )
        return _dataset(
            names,
            np.full(len(names), nan),
            np.full(len(names), nan),
            nan,
            nan,
            nan,
            0,
            0,
            None,
            None,
            pdraws,
            {**base, "reason": reason, "draws_needed": need, "n_permutations_used": 0},
        )
    offset = n - b * L
    Ys = X[:, :, offset:].reshape(len(names), C, b, L).mean(axis=-1).reshape(len(names), C * b)
    columns = np.arange(pdraws.n_items)
    subset_note = ""
    if pairs and pdraws.n_items > max_items:
        rng = np.random.default_rng(random_seed)
        columns = np.sort(rng.choice(pdraws.n_items, size=max_items, replace=False))
        subset_note = (
            f"pairs of a random subset of {max_items} of the {pdraws.n_items} items (random_seed={random_seed})"
        )
        warnings.warn(
            f"chain_agreement tests the co-clustering of {subset_note}; the test is valid for "
            "those pairs, and the traces see all items.",
            UserWarning,
            stacklevel=2,
        )
    # groups: the two halves of every chain, b/2 consecutive batches each
    m = b // 2
    groups = np.repeat(np.arange(2 * C), m)
    G = 2 * C
    traces_fam = _family(Ys)
    f_traces = np.full(len(names), nan)
    f_traces[traces_fam[3]] = anova_f(traces_fam[0], groups, G)
    # the pairs, the large family: made and held by the workers in blocks of pairs (one block
    # without a cluster); F and its maxima are per pair, so the blocks change nothing
    n_pairs_all = columns.size * (columns.size - 1) // 2 if pairs and columns.size > 1 else 0
    chains = _pair_batches(pdraws, columns, b, L, offset, client) if n_pairs_all else []
    n_blocks = 1 if client is None else max(1, min(n_pairs_all, 2 * n_threads(client)))
    cuts = np.linspace(0, n_pairs_all, n_blocks + 1).round().astype(np.int64)
    held = (
        hold_blocks(_pair_rows, [(a, z, chains) for a, z in zip(cuts[:-1], cuts[1:])], client=client)
        if n_pairs_all
        else []
    )
    live = (
        np.concatenate(list(map_blocks(_live_mask, [(h,) for h in held], client=client))) if held else np.zeros(0, bool)
    )
    n_live = int(live.sum())
    f_pairs = (
        np.concatenate(list(map_blocks(_anova_block, [(h,) for h in held], shared=(groups, G), client=client,
                                       name="anova_pairs")))
        if n_live else np.zeros(0)
    )  # fmt: skip
    observed = np.array(
        [
            np.nanmax(f_traces) if np.isfinite(f_traces).any() or np.isinf(f_traces).any() else nan,
            f_pairs.max() if f_pairs.size else nan,
        ]
    )
    seeds = np.random.SeedSequence(int(random_seed)).generate_state(1, dtype=np.uint32)
    reps = []

    def draw(i, size):
        rng = np.random.default_rng(_batch_seed(int(seeds[0]), i))
        # a random reassignment of the batches to the half-chains (each keeps m of them)
        group = np.ascontiguousarray(groups[np.argsort(rng.random((size, C * b)), axis=1)])
        Y_t, tot_t, grand_t, _ = traces_fam
        out_s = max_f(Y_t, tot_t, grand_t, group, G) if Y_t.shape[0] else np.full(size, nan)
        if n_live:
            parts = map_blocks(_max_f_block, [(group, h) for h in held], shared=(G,), client=client, name="max_f_pairs")
            out_p = np.max(np.stack(list(parts)), axis=0)
        else:
            out_p = np.full(size, nan)
        out = np.stack([out_s, out_p])
        reps.append(out)
        return out

    p, used = sequential_p_values(observed, draw, int(n_permutations))
    rep = np.concatenate(reps, axis=1) if reps else np.zeros((2, 0))
    with np.errstate(invalid="ignore"):
        p_trace = np.array(
            [(1 + np.sum(rep[0] >= f)) / (1 + rep.shape[1]) if np.isfinite(f) or np.isinf(f) else nan for f in f_traces]
        )
    p_all = simes([v for v in p if np.isfinite(v)]) if np.isfinite(p).any() else nan
    n_sig, worst, worst_cc = 0, None, None
    if f_pairs.size:
        if np.isfinite(p[1]) and p[1] < alpha and rep.shape[1]:
            crit = np.quantile(rep[1], 1 - alpha)
            n_sig = int(np.sum(f_pairs >= crit))
        k = int(np.flatnonzero(live)[int(np.argmax(f_pairs))])
        ii, jj = np.triu_indices(columns.size, 1)
        worst = (int(columns[ii[k]]), int(columns[jj[k]]))
        worst_cc = next(map_blocks(_pair_row, [(k, chains)], client=client)).reshape(C, b).mean(axis=1)
    attrs = {
        **base,
        "reason": "",
        "n_permutations_used": int(used),
        "pairs": subset_note or ("all pairs" if pairs else "none"),
    }
    return _dataset(names, f_traces, p_trace, p_all, p[0], p[1], n_live, n_sig, worst, worst_cc, pdraws, attrs)


def _dataset(names, f_traces, p_trace, p_all, p_traces, p_pairs, n_pairs, n_sig, worst, worst_cc, pdraws, attrs):
    coords = {"trace": names, "chain": pdraws.chain, "pair_item": ["i", "j"]}
    ds = xr.Dataset(
        {
            "p_value_all": ((), p_all),
            "p_value_traces": ((), p_traces),
            "p_value_coclustering": ((), p_pairs),
            "f_statistic": (("trace",), f_traces),
            "p_value_trace": (("trace",), p_trace),
            "n_pairs": ((), n_pairs),
            "n_pairs_disagreeing": ((), n_sig),
            "worst_pair": (("pair_item",), np.array(worst if worst is not None else (-1, -1))),
            "worst_pair_coclustering": (
                ("chain",),
                np.asarray(worst_cc if worst_cc is not None else np.full(pdraws.n_chain, np.nan)),
            ),
        },
        coords=coords,
    )
    ds.attrs.update({"var_name": pdraws.name, **attrs})
    ds["p_value_all"].attrs["long_name"] = "chains agree (Simes' combination of traces and co-clustering)"
    ds["p_value_traces"].attrs["long_name"] = "chains agree on the scalar traces (max-F permutation test)"
    ds["p_value_coclustering"].attrs["long_name"] = (
        "chains agree on the co-clustering of every pair (max-F permutation test)"
    )
    ds["f_statistic"].attrs["long_name"] = "ANOVA F of the batch means across half-chains"
    ds["n_pairs_disagreeing"].attrs["long_name"] = (
        "pairs whose co-clustering differs between half-chains (family-wise level alpha)"
    )
    return ds
