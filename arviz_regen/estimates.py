"""Regenerative estimates of any function of the partition state, and of top-state probabilities."""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from ._data import load_partition, rank_states, regeneration_state
from .coclustering import _eval_positions
from .tours import completed_tours, prefix_sums, regeneration_times, rs_from_sums, tour_sums

__all__ = ["rs_estimate", "top_states"]


def _rs_per_chain(pdraws, state_values, regen, positions, combined):
    """Prefix sums of per-state values over the tours of each chain, then mean and se."""
    extra = state_values.shape[1:]
    E = 1 if positions is None else positions.size
    acc = [np.zeros((pdraws.n_chain, E) + extra) for _ in range(3)]
    sn = np.zeros((pdraws.n_chain, E))
    snn = np.zeros((pdraws.n_chain, E))
    ntours = np.zeros((pdraws.n_chain, E), dtype=np.int64)
    for c in range(pdraws.n_chain):
        idx = pdraws.index[c]
        is_regen = idx == regen
        tau = regeneration_times(is_regen)
        s, n = tour_sums(state_values[idx] if tau.size > 1 else state_values[:0], tau)
        s1, s2, sns, sn_c, snn_c = prefix_sums(s, n)
        at = (
            np.array([n.size])
            if positions is None
            else completed_tours(is_regen)[positions]
        )
        acc[0][c], acc[1][c], acc[2][c] = s1[at], s2[at], sns[at]
        sn[c], snn[c], ntours[c] = sn_c[at], snn_c[at], at
    if combined:
        acc = [a.sum(axis=0) for a in acc]
        sn, snn, ntours = sn.sum(axis=0), snn.sum(axis=0), ntours.sum(axis=0)
    mean, se = rs_from_sums(*acc, sn, snn, ntours)
    return mean, se, ntours


def rs_estimate(
    data,
    func,
    var_names=None,
    *,
    combined=False,
    cumulative=False,
    n_points=None,
    regeneration=None,
    logp_var="partition_logp",
    name="f",
):
    """RS mean and RS standard error of a function of the partition state.

    Parameters
    ----------
    data : InferenceData or convertible
    func : callable
        Vectorized function of states: receives canonical labels ``(n_states, n_items)`` (each
        visited state once) and returns values ``(n_states,)`` or ``(n_states, ...)``.
    var_names : str or list of one str, optional
    combined : bool
        Pool the tours of all chains into one estimate.
    cumulative : bool
        Estimates along the draws from the tours completed by each draw.
    n_points : int or None
        Evaluation draws in cumulative mode (None: every draw).
    regeneration : None, "mode" or label vector
        See :func:`arviz_regen.coclustering`.
    logp_var : str
    name : str
        Prefix of the dimensions of a vector-valued ``func`` (``{name}_dim_0``, …).

    Returns
    -------
    xarray.Dataset
        ``estimate`` and ``se`` with dims (``chain``) (``draw``) + function dims, and
        ``n_tours``. ``se`` is NaN with fewer than two tours, ``estimate`` without any tour.
    """
    if not callable(func):
        raise TypeError(f"`func` must be callable (labels -> values), got {type(func).__name__}.")
    pdraws = load_partition(data, var_names, logp_var=logp_var)
    regen = regeneration_state(pdraws, regeneration)
    vals = np.asarray(func(pdraws.labels), dtype=float)
    if vals.ndim == 0 or vals.shape[0] != pdraws.n_states:
        raise ValueError(
            f"`func` must return one value (or array) per state: expected leading dimension "
            f"{pdraws.n_states}, got shape {vals.shape}."
        )
    positions = _eval_positions(pdraws.n_draw, n_points) if cumulative else None
    mean, se, ntours = _rs_per_chain(pdraws, vals, regen, positions, combined)
    if not cumulative and np.any(ntours < 2):
        warnings.warn(
            "Fewer than two whole regeneration tours in some chain(s): se is NaN there.",
            UserWarning,
            stacklevel=2,
        )
    fdims = tuple(f"{name}_dim_{i}" for i in range(vals.ndim - 1))
    dims = (() if combined else ("chain",)) + ("draw",) + fdims
    coords = {} if combined else {"chain": pdraws.chain}
    if cumulative:
        coords["draw"] = pdraws.draw[positions]
    ds = xr.Dataset(
        {"estimate": (dims, mean), "se": (dims, se), "n_tours": (dims[: len(dims) - len(fdims)], ntours)},
        coords=coords,
    )
    if not cumulative:
        ds = ds.isel(draw=0)
    ds.attrs.update({"var_name": pdraws.name, "regeneration_state": pdraws.labels[regen].tolist()})
    return ds


def top_states(data, var_names=None, *, k=10, combined=False, logp_var="partition_logp"):
    """The K most probable visited states with RS estimates of their probabilities.

    Parameters
    ----------
    data : InferenceData or convertible
    var_names : str or list of one str, optional
    k : int
        Number of states (reduced, with a warning, to the number of visited states).
    combined : bool
        Pool the tours of all chains.
    logp_var : str

    Returns
    -------
    xarray.Dataset
        ``labels`` (rank, item), ``logp`` (rank), ``probability`` and ``se`` (RS estimates of
        P(X = S_rank), dims (``chain``) ``rank``), ``logp_probability`` (rank: exp(logp − log
        Ẑ) with Ẑ from the pooled RS estimate Σ visits / Σ q-weighted visits; what the
        probabilities should be if the chains have converged on these states).
    """
    if int(k) < 1:
        raise ValueError(f"`k` must be a positive int, got {k!r}.")
    pdraws = load_partition(data, var_names, logp_var=logp_var)
    order = rank_states(pdraws)
    if k > order.size:
        warnings.warn(
            f"k={k} is larger than the {order.size} visited states; returning all of them.",
            UserWarning,
            stacklevel=2,
        )
    top = order[: int(k)]
    ind = np.zeros((pdraws.n_states, top.size))
    ind[top, np.arange(top.size)] = 1.0
    mean, se, _ = _rs_per_chain(pdraws, ind, int(top[0]), None, combined)
    mean, se = mean[..., 0, :], se[..., 0, :]
    logp = pdraws.logp[top]
    # pooled ratio estimate of 1/Z on the q scale: Σ_i P̂(S_i) / Σ_i q_i over the top states
    pooled, _, _ = _rs_per_chain(pdraws, ind, int(top[0]), None, True)
    q = np.exp(logp - logp[0])
    level = pooled[0].sum() / q.sum()
    dims = (() if combined else ("chain",)) + ("rank",)
    coords = {"rank": np.arange(top.size), "item": pdraws.item_coord}
    if not combined:
        coords["chain"] = pdraws.chain
    ds = xr.Dataset(
        {
            "labels": (("rank", "item"), pdraws.labels[top]),
            "logp": (("rank",), logp),
            "probability": (dims, mean),
            "se": (dims, se),
            "logp_probability": (("rank",), level * q),
        },
        coords=coords,
    )
    ds.attrs["var_name"] = pdraws.name
    return ds
