"""Regenerative estimates of any function of the partition state, and of top-state probabilities."""

from __future__ import annotations

import warnings

import numpy as np

from ..xr.draws import load_partition, rank_states
from ..xr.regeneration import assemble, estimate, eval_positions, regenerate

__all__ = ["rs_estimate", "top_states"]


def _state_values(func, pdraws):
    """``func`` evaluated once per visited state, checked: (n_states, ...) floats."""
    vals = np.asarray(func(pdraws.labels), dtype=float)
    if vals.ndim == 0 or vals.shape[0] != pdraws.n_states:
        raise ValueError(
            f"`func` must return one value (or array) per state: expected leading dimension "
            f"{pdraws.n_states}, got shape {vals.shape}."
        )
    return vals


def _warn_few_tours(n_tours, se_method, cumulative):
    """Warn that an explicit ``se_method="regenerative"`` with fewer than two tours gives a NaN se."""
    if se_method == "regenerative" and not cumulative and np.any(np.asarray(n_tours) < 2):
        warnings.warn(
            "Fewer than two whole regeneration tours in some chain(s): se is NaN there "
            "(se_method='auto' falls back to batch means).",
            UserWarning,
            stacklevel=3,
        )


def rs_estimate(
    data,
    func,
    var_names=None,
    *,
    combined=False,
    cumulative=False,
    n_points=None,
    regeneration=None,
    se_method="auto",
    logp_var="partition_logp",
    name="f",
    logp=None,
    coords=None,
):
    """RS mean and RS standard error of a function of the partition state.

    Regenerative sampling (Hobert et al. 2002; the paper's eq. regvar) at the regeneration
    state; when that state recurs too rarely (fewer than
    :data:`arviz_regen.xr.regeneration.MIN_TOURS` whole tours) the plain mean over the draws with a
    batch-means standard error instead, with a warning (see ``se_method``).

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
    se_method : {"auto", "regenerative", "batch_means"}
        "regenerative": RS mean and se over whole tours; "batch_means": mean over all draws
        with a lugsail batch-means se (:mod:`arviz_regen.base.batch_means`; pooled chains: replicated
        batch means); "auto" (default): regenerative when every chain (or, with ``combined``,
        the pooled chains) completes at least ``MIN_TOURS`` whole tours over the whole run, else
        batch means with a :class:`~arviz_regen.xr.regeneration.NonRecurrenceWarning`.
        Hierarchical draws (``logp_var`` differs between draws of the same partition:
        hyperparameters sampled alongside, no regeneration): batch means, with a
        :class:`~arviz_regen.xr.regeneration.SampledHyperparametersWarning` under "auto";
        "regenerative" is refused.
    logp_var : str
    name : str
        Prefix of the dimensions of a vector-valued ``func`` (``{name}_dim_0``, …).

    Returns
    -------
    xarray.Dataset
        ``estimate`` and ``se`` with dims (``chain``) (``draw``) + function dims, and
        ``n_tours`` (whole regeneration tours, whatever the method); ``attrs["se_method"]``
        records the method used. Regenerative: ``se`` is NaN with fewer than two tours,
        ``estimate`` without any tour. Batch means: ``se`` is NaN with fewer than two batches
        (a single draw).
    """
    if not callable(func):
        raise TypeError(f"`func` must be callable (labels -> values), got {type(func).__name__}.")
    pdraws = load_partition(data, var_names, logp_var=logp_var, logp=logp, coords=coords)
    vals = _state_values(func, pdraws)
    reg = regenerate(pdraws, regeneration, se_method=se_method, combined=combined, what="rs_estimate")
    positions = eval_positions(pdraws.n_draw, n_points) if cumulative else None
    mean, se, n_tours = estimate(reg.tours, reg.se_method, state_values=vals, positions=positions, combined=combined)
    _warn_few_tours(n_tours, reg.se_method, cumulative)
    fdims = tuple(f"{name}_dim_{i}" for i in range(vals.ndim - 1))
    return assemble(
        pdraws,
        {"estimate": (fdims, mean), "se": (fdims, se), "n_tours": ((), n_tours)},
        combined=combined,
        positions=positions,
        attrs=reg.attrs(pdraws, combined),
    )


def top_states(
    data, var_names=None, *, k=10, combined=False, se_method="auto", logp_var="partition_logp", logp=None, coords=None
):
    """Return the K most probable visited states with RS estimates of their probabilities.

    Parameters
    ----------
    data : InferenceData or convertible
    var_names : str or list of one str, optional
    k : int
        Number of states (reduced, with a warning, to the number of visited states).
    combined : bool
        Pool the tours of all chains.
    se_method : {"auto", "regenerative", "batch_means"}
        As :func:`arviz_regen.rs_estimate`; regeneration is at the top state. With batch means
        the probabilities are the visit frequencies of the states over all draws (labelled as
        such in ``attrs`` and ``probability.attrs``).
    logp_var : str

    Returns
    -------
    xarray.Dataset
        ``labels`` (rank, item), ``logp`` (rank), ``probability`` and ``se`` (RS estimates of
        P(X = S_rank), or visit frequencies with batch-means se; dims (``chain``) ``rank``),
        ``logp_probability`` (rank: exp(logp − log Ẑ) with Ẑ from the pooled estimate Σ visits /
        Σ q-weighted visits; what the probabilities should be if the chains have converged on
        these states) and ``n_tours`` (``chain``). ``attrs["se_method"]`` records the method.
    """
    if int(k) < 1:
        raise ValueError(f"`k` must be a positive int, got {k!r}.")
    pdraws = load_partition(data, var_names, logp_var=logp_var, logp=logp, coords=coords)
    order = rank_states(pdraws)
    if k > order.size:
        warnings.warn(
            f"k={k} is larger than the {order.size} visited states; returning all of them.",
            UserWarning,
            stacklevel=2,
        )
    top = order[: int(k)]
    ind = np.zeros((pdraws.n_states, top.size))  # indicators of the top states: (states, rank)
    ind[top, np.arange(top.size)] = 1.0
    reg = regenerate(pdraws, "logp", se_method=se_method, combined=combined, what="top_states")
    mean, se, n_tours = estimate(reg.tours, reg.se_method, state_values=ind, combined=combined)
    _warn_few_tours(n_tours, reg.se_method, False)
    pooled = mean if combined else estimate(reg.tours, reg.se_method, state_values=ind, combined=True)[0]
    lp = pdraws.logp[top]
    # pooled ratio estimate of 1/Z on the q scale: Σ_i P̂(S_i) / Σ_i q_i over the top states
    q = np.exp(lp - lp[0])
    level = pooled[0].sum() / q.sum()
    ds = assemble(
        pdraws,
        {"probability": (("rank",), mean), "se": (("rank",), se), "n_tours": ((), n_tours)},
        combined=combined,
        static={
            "labels": (("rank", "item"), pdraws.labels[top]),
            "logp": (("rank",), lp),
            "logp_probability": (("rank",), level * q),
        },
        coords={"rank": np.arange(top.size), "item": pdraws.item_coord},
        attrs=reg.attrs(pdraws, combined),
    )
    ds = ds[["labels", "logp", "probability", "se", "logp_probability", "n_tours"]]
    if reg.se_method == "batch_means":
        ds["probability"].attrs["long_name"] = "visit frequency over all draws (not regenerative)"
    else:
        ds["probability"].attrs["long_name"] = "RS estimate of the posterior probability"
    return ds
