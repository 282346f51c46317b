"""Co-clustering probabilities by regenerative sampling, with standard errors and CV.

ρ_ij = P(items i and j in the same cluster | y). The RS estimate uses whole tours between visits
to the regeneration state (the most probable visited state by default), its standard error the
univariate eq. regvar, and CV_ij = se(ρ̂_ij) / max(ρ̂_ij, 1 − ρ̂_ij) (Jones et al. 2006; the
paper's Figure 2b): the CV of the larger of the co- and anti-clustering estimates.

The work is one pass over the draws per block of item rows (one numba kernel,
:mod:`arviz_regen.base.pair_sums`): a pair's sums are settled only when its indicator changes (the
pairs of the items that move between consecutive draws) and at the end, so the cost is
O(changes + pairs) per chain, memory O(pairs of the block) whatever the number of draws. The
kernel plugs into the shared regeneration engine (:mod:`arviz_regen.xr.regeneration`), which finds
the tours, pools chains and assembles the Dataset.

When the regeneration state recurs too rarely (a flat posterior over many items: every draw a
new partition), ``se_method="auto"`` falls back to the plain frequencies ρ̄_ij (mean over all
draws of 1{i and j together}) with lugsail batch-means standard errors
(:mod:`arviz_regen.base.batch_means`), from the batch sums of the pair indicators accumulated by the
same kernel: never pairs × states nor pairs × draws.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..base.pair_kernels import (
    PAIR_BLOCK_BYTES,
    check_memory,
    fill_half,
    kernel_labels,
    pair_bm_kernel,
    pair_rs_kernel,
    row_blocks,
    symmetrize_half,
)
from ..xr.distributed import map_blocks, n_threads, resolve_client, using_client
from ..xr.draws import load_partition, select_items
from ..xr.regeneration import assemble, estimate, eval_positions, regenerate

__all__ = ["coclustering"]


def _pair_block(i0, i1, tours, se_method, ulabels, perm, positions, combined):
    """Mean and standard error of the pairs of item rows i0 … i1 − 1 (one task of a cluster)."""
    mean, se, _ = estimate(
        tours,
        se_method,
        rs_kernel=pair_rs_kernel(ulabels, rows=(i0, i1), perm=perm),
        bm_kernel=pair_bm_kernel(ulabels, rows=(i0, i1), perm=perm),
        positions=positions,
        combined=combined,
    )
    return mean, se


def _refuse_early(data, var_names, combined, cumulative, n_points, items, coords):
    """Refuse a too large :func:`coclustering` from the posterior's sizes alone, before any draw is read."""
    from ..xr.draws import PartitionDraws
    from ..xr.sizes import partition_sizes

    if items is not None or coords is not None or isinstance(data, PartitionDraws):
        return  # the subset or selection is known after loading: checked there
    sizes = partition_sizes(data, var_names)
    if sizes is None:
        return
    n_chain, n_draw, n = sizes
    n_eval = 1 if not cumulative else (n_draw if n_points is None else min(int(n_points), n_draw))
    lead = n_eval * (1 if combined else n_chain)
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
    client=None,
):
    """Co-clustering probabilities with regenerative-sampling standard errors and CV.

    When the regeneration state recurs too rarely (fewer than
    :data:`arviz_regen.xr.regeneration.MIN_TOURS` whole tours), the plain frequencies over the draws
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
        a :class:`~arviz_regen.xr.regeneration.NonRecurrenceWarning`.
        Hierarchical draws (``logp_var`` differs between draws of the same partition:
        hyperparameters sampled alongside, no regeneration): batch means, with a
        :class:`~arviz_regen.xr.regeneration.SampledHyperparametersWarning` under "auto";
        "regenerative" is refused.
    logp_var : str
    items : sequence of item coordinate labels, slice of labels or boolean mask, optional
        Only the co-clustering of these items (in this order); the regeneration state and tours
        are still those of the whole partition. The pair sums are computed in blocks of item
        rows whose working memory is bounded (:data:`PAIR_BLOCK_BYTES`), so the memory is that
        of the result, 3 × (items)² floats per estimate: for tens of thousands of items name the
        subset you need. A result larger than the available memory raises a MemoryError that
        says so.
    client : distributed.Client, str or None, optional
        The ``dask.distributed`` cluster whose workers compute the blocks of item rows (and read
        and hash dask-backed labels): a client, a scheduler address, or None for the active
        client if there is one (else this process); ``False``: this process. The results are
        the same to the last bit.

    Returns
    -------
    xarray.Dataset
        ``rho`` (ρ̂_ij), ``se``, ``cv`` with dims (``chain``) (``draw``) ``item_i``, ``item_j``
        (symmetric; diagonal ρ̂ = 1, se = cv = 0) and ``n_tours`` (whole regeneration tours,
        whatever the method); ``attrs["se_method"]`` records the method used. Regenerative:
        ``se`` and ``cv`` are NaN where fewer than two tours are available, ``rho`` where none
        is (with a warning in non-cumulative mode). Batch means: ``se`` and ``cv`` are NaN with
        fewer than two batches (a single draw).


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
    >>> c = arviz_regen.coclustering(labels, logp=logp, combined=True)
    >>> rho, se = float(c.rho[0, 1]), float(c.se[0, 1])   # exactly 0.4 + 0.3 = 0.7
    >>> bool(abs(rho - 0.7) < 3 * se)
    True
    """
    if not isinstance(combined, (bool, np.bool_)):
        raise TypeError(f"`combined` must be a bool, got {combined!r}.")
    _refuse_early(data, var_names, combined, cumulative, n_points, items, coords)
    client = resolve_client(client)
    with using_client(client):
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
    ulabels = kernel_labels(pdraws.labels_of(cols))  # a subset's labels renumbered below its size
    mean = np.zeros(lead + (n, n))
    se = np.zeros(lead + (n, n))
    # the pair sums run over positions: the items grouped by the clusters of the last draw, so
    # that an item's cluster mates are neighbours in the kernel's arrays
    perm = np.argsort(ulabels[pdraws.index[0, -1]], kind="stable")
    # per pair: the kernel's state (2 + 6 per evaluation draw) and buffers and, per chain and
    # evaluation draw, the sums it returns (about five), stacked over chains (a copy) and pooled
    n_eval = 1 if positions is None else len(positions)
    per_pair = 8 * (12 + 6 * n_eval + 12 * pdraws.n_chain * n_eval)
    # each block walks every state's labels: fewer, larger blocks as they grow, and a block's memory at most what
    # the labels already hold (between half and all of PAIR_BLOCK_BYTES)
    budget = min(PAIR_BLOCK_BYTES, max(PAIR_BLOCK_BYTES // 2, ulabels.nbytes))
    max_pairs = max(1, budget // per_pair)
    if client is not None:  # a pair's sums do not depend on the block: blocks for every worker thread
        max_pairs = min(max_pairs, max(1, -(-n * (n - 1) // (4 * n_threads(client)))))
    blocks = row_blocks(n, max_pairs)
    results = map_blocks(_pair_block, blocks, client=client,
                         shared=(reg.tours, reg.se_method, ulabels, perm, positions, combined))  # fmt: skip
    for (i0, i1), (mean_p, se_p) in zip(blocks, results):  # one block's results at a time
        for arr, src in ((mean, mean_p), (se, se_p)):
            fill_half(arr, src, perm, i0, i1)
        del mean_p, se_p
    for arr, diag in ((mean, 1.0), (se, 0.0)):
        symmetrize_half(arr, diag)
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
