"""Credible ball of a partition estimate (Wade & Ghahramani 2018, Bayesian Analysis 13(2)).

The ball of radius ε around an estimate ĉ holds the partitions within distance ε of it, under
the loss of the estimate (VI or Binder, :mod:`arviz_regen.base.partition_loss`). The 100·level%
credible ball is the smallest such ball with posterior probability at least ``level``;
estimated from the draws, its radius is the smallest ε such that the draws within ε of ĉ
carry a fraction ``level`` of them. Its uncertainty is summarised by the draws in the ball
that lie farthest from ĉ: overall (the horizontal bound), among those with the fewest clusters
(the upper vertical bound: coarser partitions) and among those with the most clusters (the lower
vertical bound: finer ones).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..base.partition_loss import parse_loss
from ..base.state import check_labels
from ..xr.distributed import resolve_client, using_client
from ..xr.draws import load_partition
from .point_estimate import collector_paused, draw_losses, point_estimate, refuse_before_loading, state_weights

__all__ = ["credible_ball", "ball_radius", "BOUNDS"]

#: the bounds reported, in order: coarse (fewest clusters), farthest, fine (most clusters)
BOUNDS = ("vertical_upper", "horizontal", "vertical_lower")


def ball_radius(distances, weights, level):
    """Smallest ε with Σ weights[distances ≤ ε] ≥ level (numpy core; ties count together)."""
    order = np.argsort(distances, kind="stable")
    d = np.asarray(distances, dtype=float)[order]
    cum = np.cumsum(np.asarray(weights, dtype=float)[order])
    # rounding in the cumulative sum must not push the radius one state further out
    k = int(np.searchsorted(cum, level * cum[-1] - 1e-12 * cum[-1], side="left"))
    return float(d[min(k, d.size - 1)])


def _farthest(candidates, distances):
    """Index (into the states) of the farthest candidate; ties: the first state by key order."""
    return int(candidates[np.argmax(distances[candidates])])


def _estimate_labels(estimate, pdraws, spec, search, client):
    """Return the estimate's labels and where they came from."""
    if estimate is None:
        est = point_estimate(pdraws, loss=spec, client=False if client is None else client, **search)
        return est["labels"].values, "point_estimate"
    if search:
        raise TypeError(
            f"`{sorted(search)[0]}` configures the search for the estimate; with `estimate=` given there is none."
        )
    if isinstance(estimate, xr.Dataset):
        if "labels" not in estimate:
            raise ValueError("`estimate`: a Dataset must hold `labels` (the result of point_estimate).")
        given = estimate.attrs.get("loss")
        if given is not None and (given, float(estimate.attrs.get("loss_a", 1.0))) != (spec.name, spec.a):
            raise ValueError(
                f"`estimate` minimises the {given} loss but the ball is asked for {spec.label}: pass "
                f"loss={given!r} (with its cost a), or an estimate for this loss."
            )
        estimate = estimate["labels"].values
    labels = check_labels(estimate, pdraws.n_items, name="estimate")
    if labels.ndim != 1:
        raise ValueError(f"`estimate` must be one label vector, got shape {labels.shape}.")
    return labels, "given"


@collector_paused
def credible_ball(
    data,
    estimate=None,
    var_names=None,
    *,
    loss="VI",
    level=0.95,
    logp_var="partition_logp",
    logp=None,
    coords=None,
    client=None,
    **search,
):
    """Credible ball around a partition estimate, with its vertical and horizontal bounds.

    Parameters
    ----------
    data : InferenceData, DataTree, Dataset, DataArray, dict or array
        Partition draws (chains pooled), as for :func:`arviz_regen.point_estimate`.
    estimate : label vector, or the Dataset of :func:`arviz_regen.point_estimate`, optional
        The centre; default ``point_estimate(data, loss=loss, **search)``.
    var_names : str or list of one str, optional
    loss : "VI", "binder", ("VI", a) or ("binder", a)
        The distance (that of the estimate: a Dataset made for another loss is refused).
    level : float in (0, 1)
        Posterior probability of the ball.
    logp_var, logp, coords
        As for :func:`arviz_regen.coclustering`.
    client : distributed.Client, str, False or None, optional
        The ``dask.distributed`` cluster whose workers compute the distance of every draw from
        the estimate (and the estimate's search, when there is one): a client, a scheduler
        address, or None for the active client if there is one (else this process); ``False``:
        this process. The result is the same.
    **search
        Passed to :func:`arviz_regen.point_estimate` when ``estimate`` is None (``seed``,
        ``n_runs``, ``max_clusters``, ...).

    Returns
    -------
    xarray.Dataset
        ``estimate`` (item dimension), ``radius``, ``probability`` (the posterior mass of the
        draws in the ball, ≥ ``level``), ``bound_labels`` (``bound``, item), ``bound_distance``
        and ``bound_n_clusters`` (``bound``) with bound = vertical_upper (farthest among the
        draws in the ball with the fewest clusters), horizontal (farthest), vertical_lower
        (farthest among those with the most clusters), ``bound_probability`` (``bound``: the
        posterior mass of that partition among the draws) and ``distance`` (``chain``, ``draw``:
        distance of every draw from the estimate). ``attrs``: loss, a, level, states in the ball.
    """
    spec = parse_loss(loss)
    try:
        level = float(level)
    except (TypeError, ValueError):
        raise TypeError(f"`level` must be a number in (0, 1), got {level!r}.") from None
    if not 0.0 < level < 1.0:
        raise ValueError(f"`level` must lie in (0, 1), got {level!r}.")
    searched = spec if estimate is None and search.get("method", "salso") == "salso" else None
    refuse_before_loading(data, var_names, coords, f"The {spec.label} credible ball", searched,
                          search.get("route", "auto"))  # fmt: skip
    client = resolve_client(client)
    with using_client(client):
        pdraws = load_partition(data, var_names, logp_var=logp_var, logp=logp, coords=coords)
    centre, source = _estimate_labels(estimate, pdraws, spec, search, client)
    weights = state_weights(pdraws)
    dist = draw_losses(pdraws, centre, spec, client)
    radius = ball_radius(dist, weights, level)
    tol = 1e-9 * max(1.0, abs(radius))
    inside = np.flatnonzero(dist <= radius + tol)
    n_clus = pdraws.labels.max(axis=1) + 1
    k_in = n_clus[inside]
    picks = [
        _farthest(inside[k_in == k_in.min()], dist),
        _farthest(inside, dist),
        _farthest(inside[k_in == k_in.max()], dist),
    ]
    item = pdraws.item_dim
    ds = xr.Dataset(
        {
            "estimate": ((item,), np.asarray(centre)),
            "radius": ((), radius),
            "probability": ((), float(weights[inside].sum())),
            "bound_labels": (("bound", item), pdraws.labels[picks]),
            "bound_distance": (("bound",), dist[picks]),
            "bound_n_clusters": (("bound",), n_clus[picks]),
            "bound_probability": (("bound",), weights[picks]),
            "distance": (("chain", "draw"), dist[pdraws.index]),
        },
        coords={item: pdraws.item_coord, "bound": list(BOUNDS), "chain": pdraws.chain, "draw": pdraws.draw},
        attrs={
            "var_name": pdraws.name,
            "loss": spec.name,
            "loss_a": float(spec.a),
            "level": level,
            "estimate_from": source,
            "n_states_in_ball": int(inside.size),
            "n_states": int(pdraws.n_states),
        },
    )
    unit = "bits" if spec.name == "VI" else "pairs"
    ds["radius"].attrs.update(long_name=f"radius of the {level:.0%} credible ball ({spec.label})", units=unit)
    ds["distance"].attrs.update(long_name=f"{spec.label} distance of each draw from the estimate", units=unit)
    return ds
