"""The loss of one partition against every posterior draw, chunk by chunk of the stored labels.

For posteriors stored in zarr and opened with dask: the label array is never gathered; each
chunk of (chain, draw) draws is scored by a numpy kernel where it is read (on the workers of a
``dask.distributed`` cluster when one runs) and only two sums per chunk, or one loss per draw,
come back. :func:`expected_loss` scores an estimate (e.g. :func:`arviz_regen.point_estimate`'s,
found on a subsample or on another machine) against the whole posterior; ``per_draw=True``
gives the distances of every draw, what :func:`arviz_regen.credible_ball` ranks.

:func:`state_losses` is the same evaluation over the distinct states of loaded draws (the
final-candidate evaluation of ``point_estimate`` and ``credible_ball``), by blocks of states on
the cluster's workers.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..base.partition_loss import _losses, loss_block_sums, parse_loss, partition_loss
from ..base.state import canonicalize, check_labels, keys_to_labels
from ..xr.distributed import TASK_PREFIX, map_blocks, resolve_client, using_client
from ..xr.draws import select_partition_var, to_regen_data

__all__ = ["expected_loss", "state_losses", "loss_sums"]

#: labels (draws × items) per block when the draws are not dask-backed
BLOCK_LABELS = 1 << 22


def loss_sums(draws, estimate, loss):
    """[Σ_t L(draw_t, estimate), T] over one block of draws ``(..., n_items)`` (numpy kernel)."""
    draws = np.asarray(draws)
    flat = draws.reshape(-1, draws.shape[-1])
    if flat.shape[0] == 0:
        return np.zeros(2)
    return np.asarray(loss_block_sums(estimate, flat, loss=loss), dtype=float)


def _per_draw(draws, estimate, loss):
    """Loss of ``estimate`` against each draw of a block ``(..., n_items)`` (numpy kernel)."""
    draws = np.asarray(draws)
    if draws.size == 0:
        return np.zeros(draws.shape[:-1])
    return np.asarray(partition_loss(draws.reshape(-1, draws.shape[-1]), estimate, loss)).reshape(draws.shape[:-1])


def expected_loss(data, estimate, var_names=None, *, loss="VI", per_draw=False, coords=None, client=None):
    """Posterior expected loss of a partition, computed chunk by chunk of the stored draws.

    Parameters
    ----------
    data : InferenceData, DataTree, Dataset, DataArray, dict or array
        Posterior labels ``(chain, draw, item)``; dask-backed (a zarr store opened with
        ``chunks``) for posteriors larger than memory: each chunk is scored where it is read.
    estimate : array_like of int, shape (n_items,)
        The partition scored (any labels).
    var_names : str or list of one str, optional
        The partition variable.
    loss : "VI", "binder", ("VI", a) or ("binder", a)
        As for :func:`arviz_regen.partition_loss`.
    per_draw : bool, default False
        Return the loss against every draw instead of their mean.
    coords : dict, optional
        Selection of chains and draws applied first, e.g. ``{"draw": slice(1000, None)}``.
    client : distributed.Client, str or None, optional
        The ``dask.distributed`` cluster whose workers read and score the chunks: a client, a
        scheduler address, or None for the active client if there is one (else this process);
        ``False``: this process. The result does not depend on it.

    Returns
    -------
    float or xarray.DataArray
        The mean loss over all draws (chains pooled; VI in bits, Binder in pairs), or with
        ``per_draw`` the loss against each draw, dims ``(chain, draw)``.

    Examples
    --------
    >>> est = arviz_regen.point_estimate(idata)["labels"]          # doctest: +SKIP
    >>> arviz_regen.expected_loss(store, est, client=client)       # doctest: +SKIP
    """
    spec = parse_loss(loss)
    client = resolve_client(client)
    posterior = to_regen_data(data, "data", var_names=var_names).posterior
    name = select_partition_var(posterior, var_names)
    da = posterior[name]
    if da.ndim != 3 or "chain" not in da.dims or "draw" not in da.dims:
        raise ValueError(f"posterior variable {name!r} must have dims (chain, draw, <item dim>), got {da.dims}.")
    item_dim = [d for d in da.dims if d not in ("chain", "draw")][0]
    if coords:
        da = da.sel(coords)
    da = da.transpose("chain", "draw", item_dim)
    n = da.sizes[item_dim]
    if np.shape(estimate) != (n,):
        raise ValueError(f"`estimate` must be one label vector of length {n}, got shape {np.shape(estimate)}.")
    est = canonicalize(check_labels(np.asarray(estimate), n, name="estimate")[None])[0]
    if da.chunks is not None:
        da = da.chunk({item_dim: -1})  # whole label vectors in every chunk
    with using_client(client):
        if per_draw:
            out = xr.apply_ufunc(_per_draw, da, kwargs={"estimate": est, "loss": spec}, input_core_dims=[[item_dim]],
                                 dask="parallelized", output_dtypes=[float])  # fmt: skip
            return out.compute().rename("loss")
        if da.chunks is not None:
            import dask

            token = dask.base.tokenize(da.data, est, spec)
            key = f"{TASK_PREFIX}-loss_sums-{token}"
            parts = [dask.delayed(loss_sums, pure=True)(block, est, spec, dask_key_name=f"{key}-{i}")
                     for i, block in enumerate(da.data.to_delayed().ravel())]  # fmt: skip
            total = dask.delayed(np.sum, pure=True)(parts, axis=0).compute()
        else:  # in memory: blocks of draws (sent to the workers when there is a client)
            values = np.asarray(da.values)
            step = max(1, BLOCK_LABELS // max(1, n * values.shape[0]))
            blocks = [(values[:, s : s + step],) for s in range(0, values.shape[1], step)]
            total = np.sum(list(map_blocks(loss_sums, blocks, shared=(est, spec), client=client)), axis=0)
    if total[1] == 0:
        raise ValueError("There are no draws to score (after the selection `coords`).")
    return float(total[0] / total[1])


#: labels (states × items) per block of :func:`state_losses`; fixed, so that the blocks (and the
#: results, to the last bit) are the same with and without a cluster
STATE_BLOCK_LABELS = 1 << 21


def _state_block_losses(keys, n_items, est, spec):
    """Loss of ``est`` (1, n_items) against the states of one block of keys (numpy kernel)."""
    return _losses(est, np.ascontiguousarray(keys_to_labels(keys, n_items)), spec)[0]


def state_losses(pdraws, labels, spec, client=None):
    """Loss of ``labels`` against every distinct state of ``pdraws``, shape (n_states,).

    The final-candidate evaluation of ``point_estimate`` and ``credible_ball``, by blocks of
    states: on the workers of ``client``'s cluster when there is one (None: the active client,
    if any), here otherwise; each block's labels are built from its state keys where it runs,
    so the labels of all states are never formed in this process.
    """
    client = resolve_client(client)
    est = np.unique(np.asarray(labels), return_inverse=True)[1].reshape(1, -1).astype(np.int64)
    step = max(1, STATE_BLOCK_LABELS // max(1, pdraws.n_items))
    blocks = [(pdraws.keys[s : s + step],) for s in range(0, pdraws.n_states, step)]
    parts = map_blocks(_state_block_losses, blocks, shared=(pdraws.n_items, est, spec), client=client)
    return np.concatenate(list(parts)) if blocks else np.zeros(0)
