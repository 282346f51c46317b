"""Matplotlib plots in ArviZ style (``ax=`` in, Axes out): the paper's Figures 1 and 2.

- :func:`plot_hotelling_rs`: Hotelling-RS p-value along the draws, per chain and K (Fig. 2c;
  ``overlay=True``: all K in one panel).
- :func:`plot_coclustering`: co-clustering heat map, items ordered by similarity.
- :func:`plot_coclustering_trace`: CV, se or absolute error of ρ̂_ij along the draws (Fig. 2a/b;
  ``overlay=True``: all chains in one panel).
- :func:`plot_top_states`: cumulative probability of the top states by rank (Fig. 1 left), from
  chains or from given (e.g. exact) probabilities.
- :func:`plot_point_estimate`: the co-clustering matrix ordered by a point estimate, its clusters
  outlined.

No panel is left silently empty: a panel whose values are all undefined (e.g. regenerative
estimates without any whole tour, ``se_method="regenerative"``) says so in its middle, and the
heat map refuses undefined entries with a clear ValueError instead of failing inside scipy.
Estimates computed by the batch-means fallback are labelled as such.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = [
    "plot_hotelling_rs",
    "plot_coclustering",
    "plot_coclustering_trace",
    "plot_top_states",
    "plot_point_estimate",
]

#: largest number of items whose labels are written on the axes (beyond: cluster ticks)
MAX_ITEM_TICKS = 40

#: optimal leaf ordering costs O(n³): beyond this many items the plain average-linkage order
MAX_OPTIMAL_ORDERING = 400


_NO_TOURS = (
    "no estimate: too few whole regeneration tours\n"
    "(se_method='auto' or 'batch_means' gives frequencies over the draws)"
)


def _note(ax, text):
    """Write ``text`` in the middle of ``ax``, so that an empty panel explains itself."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize="small", color="0.3")


def _fallback(ds):
    """Whether a result Dataset comes from the batch-means fallback (not regenerative)."""
    return ds.attrs.get("se_method") == "batch_means"


def _check_finite_matrix(rho, what="co-clustering matrix"):
    if not np.all(np.isfinite(rho)):
        bad = int((~np.isfinite(rho)).sum())
        raise ValueError(
            f"The {what} has {bad} undefined (NaN) entries: regenerative estimates need at least "
            "one whole regeneration tour. Compute it with se_method='auto' (the default) or "
            "'batch_means', which fall back to the co-clustering frequencies over the draws."
        )
    return rho


def _axes_grid(n, ax, figsize, ncols=None):
    import matplotlib.pyplot as plt

    if ax is not None:
        axes = np.atleast_1d(ax).ravel()
        if axes.size < n:
            raise ValueError(f"`ax` must hold at least {n} Axes, got {axes.size}.")
        return axes[:n]
    ncols = ncols or min(n, 4)
    nrows = int(np.ceil(n / ncols))
    if figsize is None:
        figsize = (4.0 * ncols, 3.0 * nrows)
    fig, axes = plt.subplots(nrows, ncols, figsize=figsize, squeeze=False, constrained_layout=True)
    for extra in axes.ravel()[n:]:
        extra.set_visible(False)
    return axes.ravel()[:n]


def plot_hotelling_rs(
    data,
    var_names=None,
    *,
    k=(2, 3, 5, 10),
    cumulative=True,
    alpha=0.05,
    p_min=None,
    overlay=False,
    ax=None,
    figsize=None,
    **kwargs,
):
    """Hotelling-RS p-values along the draws: one panel per K, one line per chain and the verdict.

    Each panel shows the per-chain ``p_value`` (thin lines), the one verdict for all chains
    ``p_value_all`` (thick black line, not with ``cumulative="lookahead"``) and a dashed line at
    ``alpha``, on a log scale. With ``overlay=True`` all K share one panel (the paper's Figure
    2c): one colour per K, one line style per chain, the verdict as a thick line of its K's colour.

    The trace is a picture of how the evidence builds up, not a test: its points are many
    looks at the same growing chains, and stopping at the first draw where a line dips below
    ``alpha`` rejects a correct sampler far more often than ``alpha`` (and waiting for a line to
    rise above it accepts too easily). The p-value at the last draw, computed once for a run
    length fixed in advance (:func:`arviz_regen.hotelling_rs` or
    :func:`arviz_regen.regen_summary`), is the test; for watching chains with error control use
    :func:`arviz_regen.StopWhenConverged`.

    Parameters
    ----------
    data : InferenceData (or convertible), or the Dataset of ``hotelling_rs(..., cumulative=...)``
        A Dataset whose ``p_value`` has a ``draw`` dimension is drawn as given.
    var_names : str, optional
    k : sequence of int
        Used when ``data`` is not already a cumulative result.
    cumulative : True or "lookahead", default True
        Passed to :func:`arviz_regen.hotelling_rs`. True: at each evaluation draw t everything
        (the top states too) is computed from draws 0 … t only, what a user watching the chains
        would have seen; bootstrap p-values by default. "lookahead": the paper's Figure 2c, χ²
        p-values after every tour with the top states of the whole run (no ``p_value_all``).
    alpha : float or None
        Draws a dashed reference line at this level.
    p_min : float, optional
        Lower end of the log-scaled y axis; smaller p-values are drawn at it. Default
        1/(n_bootstrap + 1) for bootstrap p-values (the smallest they can be), 1e-4 for χ².
    ax : matplotlib Axes or array of Axes, optional
    figsize : tuple, optional
    **kwargs
        Passed to :func:`arviz_regen.hotelling_rs` (e.g. ``method``, ``n_points``,
        ``n_bootstrap``, ``random_seed``, ``pooled``).

    Returns
    -------
    numpy.ndarray of matplotlib Axes
        A panel without any defined p-value (too few whole regeneration tours at every
        evaluation draw) says so in its middle.
    """
    if isinstance(data, xr.Dataset) and "p_value" in data and "draw" in data["p_value"].dims:
        ds = data
    else:
        if cumulative not in (True, "lookahead"):
            raise ValueError(
                f"`cumulative` must be True or 'lookahead' (a trace along the draws), got {cumulative!r}; "
                "for the p-values at the last draw use arviz_regen.hotelling_rs or regen_summary."
            )
        from ..diagnostics.hotelling import hotelling_rs

        ds = hotelling_rs(data, var_names, k=list(np.atleast_1d(k)), cumulative=cumulative, **kwargs)
    method = ds.attrs.get("method", "bootstrap")
    lookahead = ds.attrs.get("cumulative") == "lookahead"
    if p_min is None:
        p_min = 1.0 / (int(ds.attrs.get("n_bootstrap", 499)) + 1) if method == "bootstrap" else 1e-4
    if "k" in ds["p_value"].dims:
        ks = [int(v) for v in ds["k"].values]
        select = [ds.sel(k=v) for v in ks]
    else:
        known = ds.attrs.get("k")
        ks = [int(np.atleast_1d(known)[0]) if known is not None else None]
        select = [ds]
    axes = _axes_grid(1 if overlay else len(ks), ax, figsize)
    if overlay:
        axes = [axes[0]] * len(ks)
    draws = ds["draw"].values
    reference = {"bootstrap": "bootstrap", "chi2": "χ² limit"}.get(method, method)
    if lookahead:
        reference += ", look-ahead"

    def shown(values):
        values = np.asarray(values, dtype=float)
        return np.where(np.isfinite(values), np.clip(values, p_min, 1.0), np.nan)

    styles = ["-", "--", ":", "-."]
    finite = np.zeros(len(ks), dtype=bool)
    for i, (axi, kk, sub) in enumerate(zip(axes, ks, select)):
        pv = sub["p_value"].transpose("chain", "draw").values
        finite[i] = np.isfinite(pv).any()
        for j, (c, line) in enumerate(zip(ds["chain"].values, pv)):
            if overlay:
                axi.plot(draws, shown(line), lw=1, color=f"C{i}", ls=styles[j % 4], alpha=0.8)
            else:
                axi.plot(draws, shown(line), lw=1, label=f"chain {c}")
        if "p_value_all" in sub:
            verdict = sub["p_value_all"].values
            finite[i] |= np.isfinite(verdict).any()
            color = f"C{i}" if overlay else "k"
            axi.plot(draws, shown(verdict), color=color, lw=2.5, label=None if overlay else "all chains (p_value_all)")
        if overlay and i:
            continue
        if alpha is not None:
            axi.axhline(alpha, color="0.4", ls="--", lw=0.8, label=f"α = {alpha:g}")
        axi.set_yscale("log")
        axi.set_ylim(p_min, 1.0)
        axi.set_title("Hotelling-RS" if kk is None or overlay else f"K = {kk}")
        axi.set_xlabel("draw")
        axi.set_ylabel(f"p-value ({reference})")
    no_test = "no test: too few tours\n(fewer than two whole regeneration tours\nat every evaluation draw)"
    for axi, ok in zip(axes[:1] if overlay else axes, [finite.any()] if overlay else finite):
        if not ok:
            _note(axi, no_test)
    if overlay:
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color=f"C{i}", lw=1.5, label=f"K = {kk}") for i, kk in enumerate(ks)]
        handles += [Line2D([], [], color="0.3", lw=1, ls=styles[j % 4], label=f"chain {c}")
                    for j, c in enumerate(ds["chain"].values)]  # fmt: skip
        if "p_value_all" in ds:
            handles.append(Line2D([], [], color="0.3", lw=2.5, label="all chains (p_value_all)"))
        axes[0].legend(handles=handles, fontsize="small", ncol=2, framealpha=0.9)
        return np.array(axes[:1], dtype=object)
    axes[0].legend(fontsize="small", frameon=False)
    return axes


def similarity_order(rho):
    """Item order putting similar items (high ρ_ij) next to each other: average-linkage leaves."""
    from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
    from scipy.spatial.distance import squareform

    rho = _check_finite_matrix(np.asarray(rho, dtype=float))
    if rho.shape[0] < 3:
        return np.arange(rho.shape[0])
    dist = np.clip(1.0 - rho, 0.0, None)
    np.fill_diagonal(dist, 0.0)
    y = squareform((dist + dist.T) / 2, checks=False)
    Z = linkage(y, method="average")
    if rho.shape[0] > MAX_OPTIMAL_ORDERING:
        return leaves_list(Z)
    return leaves_list(optimal_leaf_ordering(Z, y))


def _rho_matrix(data, var_names, chain, **kwargs):
    if isinstance(data, xr.Dataset) and "rho" in data:
        da = data["rho"]
    elif isinstance(data, (xr.DataArray, np.ndarray)) and np.ndim(data) == 2:
        return np.asarray(data, dtype=float), None
    else:
        from ..estimates.coclustering import coclustering

        da = coclustering(data, var_names, combined=chain is None, **kwargs)["rho"]
    if "chain" in da.dims:
        da = da.sel(chain=chain) if chain is not None else da.mean("chain")
    if "draw" in da.dims:
        da = da.isel(draw=-1)
    labels = da["item_i"].values if "item_i" in da.coords else None
    return np.asarray(da.values, dtype=float), labels


def plot_coclustering(
    data, var_names=None, *, chain=None, order=True, labels=None, ax=None, figsize=None, cmap="viridis",
    colorbar=True, **kwargs,
):  # fmt: skip
    """Heat map of co-clustering probabilities, items ordered by similarity.

    Parameters
    ----------
    data : InferenceData (or convertible), a :func:`coclustering` Dataset, or an (n, n) matrix
        (a 2-D array is read as the matrix; labels (chain, draw, item) as draws)
    chain : chain coordinate, optional
        One chain's estimate; default the pooled estimate (or the mean over chains of a given
        per-chain Dataset).
    order : bool or sequence of int
        True: average-linkage leaf order; False: as stored; or an explicit order.
    labels : sequence of str, optional
        Item names (default: the items' coordinate, or 0, 1, ... for a matrix).
    ax, figsize, cmap, colorbar
        Matplotlib options.
    **kwargs
        Passed to :func:`arviz_regen.coclustering`.

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        If the matrix has undefined (NaN) entries, e.g. regenerative estimates computed with
        ``se_method="regenerative"`` from chains without whole tours.
    """
    rho, coord = _rho_matrix(data, var_names, chain, **kwargs)
    _check_finite_matrix(rho)
    n = rho.shape[0]
    labels = coord if labels is None else labels
    if labels is None:
        labels = np.arange(n)
    elif len(labels) != n:
        raise ValueError(f"`labels` has {len(labels)} names for {n} items.")
    if order is True:
        perm = similarity_order(rho)
    elif order is False:
        perm = np.arange(n)
    else:
        perm = np.asarray(order)
    ax = _axes_grid(1, ax, figsize or (5, 4.3))[0]
    im = ax.imshow(rho[np.ix_(perm, perm)], vmin=0, vmax=1, cmap=cmap, interpolation="nearest")
    if n <= MAX_ITEM_TICKS:
        _item_ticks(ax, np.asarray(labels)[perm])
    else:
        ax.set_xlabel(f"{n} items (ordered by similarity)")
    ax.set_title("co-clustering probability")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


def plot_coclustering_trace(
    data, var_names=None, *, stat="cv", reference=None, combined=False, overlay=False, n_points=100, ax=None,
    figsize=None, **kwargs,
):  # fmt: skip
    """One line per item pair: CV, se, ρ̂ or ``|ρ̂ − ρ|`` along the draws (the paper's Fig. 2a/2b).

    Parameters
    ----------
    data : InferenceData (or convertible) or a cumulative :func:`coclustering` Dataset
    stat : {"cv", "se", "rho", "abs_error"}
        "abs_error" needs ``reference`` (the true co-clustering matrix).
    reference : (n, n) array, optional
    combined : bool
        One panel for the pooled chains instead of one per chain.
    overlay : bool
        All chains in one panel, one colour per chain (``ax`` then needs one Axes).
    n_points : int
        Evaluation draws when computing.

    Returns
    -------
    numpy.ndarray of matplotlib Axes
        Panel titles say "(batch means)" for the fallback of :func:`coclustering`; a panel
        without any defined value says so in its middle.
    """
    if stat not in ("cv", "se", "rho", "abs_error"):
        raise ValueError(f"`stat` must be 'cv', 'se', 'rho' or 'abs_error', got {stat!r}.")
    if stat == "abs_error" and reference is None:
        raise ValueError("`stat='abs_error'` needs `reference` (the true co-clustering matrix).")
    if isinstance(data, xr.Dataset) and "rho" in data and "draw" in data.dims:
        ds = data
    else:
        from ..estimates.coclustering import coclustering

        ds = coclustering(data, var_names, combined=combined, cumulative=True, n_points=n_points, **kwargs)
    if stat == "abs_error":
        values = np.abs(ds["rho"] - np.asarray(reference))
    else:
        values = ds[stat]
    chains = ds["chain"].values if "chain" in ds.dims else [None]
    overlay = overlay and len(chains) > 1
    axes = _axes_grid(1 if overlay else len(chains), ax, figsize)
    n = ds.sizes["item_i"]
    iu, ju = np.triu_indices(n, 1)
    draws = ds["draw"].values
    suffix = " (batch means)" if _fallback(ds) else ""
    finite = []
    for i, c in enumerate(chains):
        axi = axes[0] if overlay else axes[i]
        v = values if c is None else values.sel(chain=c)
        arr = np.asarray(v.transpose("draw", "item_i", "item_j").values)[:, iu, ju]
        lines = axi.plot(draws, arr, lw=0.6, color=f"C{i}" if overlay else "C0", alpha=0.5)
        if overlay and lines:
            lines[0].set_label(f"chain {c}")
        finite.append(bool(np.isfinite(arr).any()))
        if overlay and i < len(chains) - 1:
            continue
        if not (any(finite) if overlay else finite[-1]):
            _note(axi, "no item pairs to show" if arr.shape[1] == 0 else _NO_TOURS)
        axi.set_xlabel("draw")
        axi.set_ylabel(
            {"cv": "CV", "se": "standard error", "rho": "co-clustering", "abs_error": "absolute error"}[stat]
        )
        axi.set_title(("all chains" if overlay else "pooled chains" if c is None else f"chain {c}") + suffix)
    if overlay:
        axes[0].legend(fontsize="small", frameon=False)
    return axes


def plot_top_states(data, var_names=None, *, k=10, reference=None, combined=False, ax=None, figsize=None, **kwargs):
    """Cumulative probability of the top states by rank (the paper's Figure 1, left).

    Lines: the RS estimate per chain (or pooled), the probabilities implied by ``logp`` and the
    pooled estimate of Z (dashed), and optionally the true probabilities ``reference``. Under
    the batch-means fallback of :func:`top_states` (states that do not recur) the lines are
    visit frequencies, labelled and annotated as such; without any estimate the axis says so.

    Parameters
    ----------
    data : InferenceData (or convertible), a :func:`top_states` Dataset, or array_like
        A one-dimensional array is taken as the probabilities of the states by rank (e.g. the
        exact ``exact.top(k)[1]``) and drawn as one line.
    k : int
    reference : array_like, optional
        True probabilities of the states by rank (e.g. ``exact.top(k)[1]``).
    combined : bool
    ax, figsize
    **kwargs
        Passed to :func:`arviz_regen.top_states`.

    Returns
    -------
    matplotlib Axes
    """
    if isinstance(data, (np.ndarray, list, tuple)) and np.ndim(data) == 1:
        return _plot_cumulative(np.asarray(data, dtype=float), reference, ax, figsize)
    if isinstance(data, xr.Dataset) and "probability" in data:
        ds = data
    else:
        from ..estimates.rs_estimate import top_states

        ds = top_states(data, var_names, k=k, combined=combined, **kwargs)
    ax = _axes_grid(1, ax, figsize or (5, 3.5))[0]
    rank = ds["rank"].values + 1
    prob = ds["probability"]
    what = " (visit frequencies)" if _fallback(ds) else ""
    if "chain" in prob.dims:
        for c in prob["chain"].values:
            ax.plot(rank, np.cumsum(prob.sel(chain=c).values), marker="o", ms=3, lw=1, label=f"chain {c}{what}")
    else:
        ax.plot(rank, np.cumsum(prob.values), marker="o", ms=3, lw=1, label=f"pooled chains{what}")
    if not np.isfinite(prob.values).any():
        _note(ax, _NO_TOURS)
    elif _fallback(ds):
        _note(ax, "the chains rarely return to any state:\nvisit frequencies, not regenerative estimates")
    ax.plot(rank, np.cumsum(ds["logp_probability"].values), ls="--", color="0.3", lw=1, label="from logp")
    if reference is not None:
        ref = np.asarray(reference, dtype=float)[: rank.size]
        ax.plot(rank[: ref.size], np.cumsum(ref), color="k", lw=1.5, label="reference")
    _finish_top_states(ax, "cumulative visit frequency" if _fallback(ds) else "cumulative probability")
    return ax


def _finish_top_states(ax, ylabel):
    ax.set_xlabel("state rank (by posterior probability)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize="small", frameon=False)


def _plot_cumulative(probs, reference, ax, figsize):
    """Cumulative probability of given state probabilities by rank (no sampling involved)."""
    if probs.size == 0 or not np.all(np.isfinite(probs)) or np.any(probs < 0):
        raise ValueError("The state probabilities must be a non-empty array of finite non-negative numbers.")
    ax = _axes_grid(1, ax, figsize or (5, 3.5))[0]
    rank = np.arange(1, probs.size + 1)
    ax.plot(rank, np.cumsum(probs), color="k", lw=1.5, label="probability")
    if reference is not None:
        ref = np.asarray(reference, dtype=float)[: rank.size]
        ax.plot(rank[: ref.size], np.cumsum(ref), color="0.5", ls="--", lw=1, label="reference")
    _finish_top_states(ax, "cumulative probability")
    return ax


def _item_ticks(ax, labels):
    n = len(labels)
    ax.set_xticks(np.arange(n))
    ax.set_yticks(np.arange(n))
    ax.set_xticklabels([str(v) for v in labels], rotation=90, fontsize="small")
    ax.set_yticklabels([str(v) for v in labels], fontsize="small")


def estimate_order(labels, rho):
    """Items grouped by cluster (largest first); within a cluster, most cohesive first.

    Cohesion of item i: its mean co-clustering probability with the other items of its cluster.
    Returns (order, cluster boundaries as positions in the order, cluster of each block).
    """
    labels = np.asarray(labels)
    sizes = np.bincount(labels)
    clusters = np.argsort(-sizes, kind="stable")
    order, bounds = [], [0]
    for k in clusters:
        members = np.flatnonzero(labels == k)
        if members.size > 1:
            cohesion = rho[np.ix_(members, members)].sum(axis=1)
            members = members[np.argsort(-cohesion, kind="stable")]
        order.append(members)
        bounds.append(bounds[-1] + members.size)
    return np.concatenate(order), np.asarray(bounds), clusters


def _estimate_and_rho(data, var_names, estimate, loss, coclustering, kwargs):
    """Labels (and their Dataset, if any) of the estimate and the co-clustering matrix to show."""
    est_ds = None
    if estimate is None:
        if data is None:
            raise ValueError("`data` is needed to compute the estimate (or pass `estimate=`).")
        from ..estimates.point_estimate import point_estimate

        est_ds = point_estimate(data, var_names, loss=loss, **kwargs)
    elif isinstance(estimate, xr.Dataset):
        if "labels" not in estimate:
            raise ValueError("`estimate`: a Dataset must hold `labels` (the result of point_estimate).")
        est_ds = estimate
    elif kwargs:
        raise TypeError(f"`{sorted(kwargs)[0]}` configures the search; with `estimate=` given there is none.")
    labels = np.asarray(est_ds["labels"].values if est_ds is not None else estimate)
    if coclustering is not None:
        rho, _ = _rho_matrix(coclustering, None, None)
    else:
        if data is None:
            raise ValueError("`data` is needed for the co-clustering matrix (or pass `coclustering=`).")
        from ..base.pair_kernels import chain_frequencies
        from ..xr.draws import load_partition

        pdraws = load_partition(data, var_names)
        rho = chain_frequencies(pdraws.index, pdraws.labels)
    rho = _check_finite_matrix(np.asarray(rho, dtype=float))
    if rho.ndim != 2 or rho.shape[0] != rho.shape[1] or rho.shape[0] != labels.shape[-1]:
        raise ValueError(
            f"The co-clustering matrix has shape {rho.shape} but the estimate labels {labels.shape[-1]} items."
        )
    from ..base.state import canonicalize

    return canonicalize(labels), est_ds, rho


def plot_point_estimate(
    data=None,
    var_names=None,
    *,
    estimate=None,
    loss="VI",
    coclustering=None,
    ax=None,
    figsize=None,
    cmap="viridis",
    colorbar=True,
    **kwargs,
):
    """Co-clustering matrix with the items ordered by a point estimate, its clusters outlined.

    Clusters are placed largest first along the diagonal and outlined; within a cluster the
    items most often clustered with the rest of it come first, so weakly attached items (and
    items the posterior is unsure about) show at the end of each block.

    Parameters
    ----------
    data : InferenceData (or convertible), optional
        Partition draws: for the estimate (unless given) and the co-clustering frequencies
        (unless ``coclustering`` is given).
    estimate : :func:`arviz_regen.point_estimate` Dataset or label vector, optional
        Default ``point_estimate(data, var_names, loss=loss, **kwargs)``.
    loss : "VI", "binder", ("VI", a) or ("binder", a)
        Used when the estimate is computed here.
    coclustering : :func:`arviz_regen.coclustering` Dataset or (n, n) matrix, optional
        The matrix shown; default the co-clustering frequencies over the draws (chains pooled),
        the matrix Binder's loss is scored on.
    ax, figsize, cmap, colorbar
        Matplotlib options.
    **kwargs
        Passed to :func:`arviz_regen.point_estimate` (``seed``, ``n_runs``, ...).

    Returns
    -------
    matplotlib Axes
        Item labels on the axes up to :data:`MAX_ITEM_TICKS` items, else a tick per cluster.
    """
    labels, est_ds, rho = _estimate_and_rho(data, var_names, estimate, loss, coclustering, kwargs)
    order, bounds, clusters = estimate_order(labels, rho)
    n = labels.size
    ax = _axes_grid(1, ax, figsize or (5.2, 4.5))[0]
    im = ax.imshow(rho[np.ix_(order, order)], vmin=0, vmax=1, cmap=cmap, interpolation="nearest")
    import matplotlib.patches as mpatches

    for start, stop in zip(bounds[:-1], bounds[1:]):
        ax.add_patch(
            mpatches.Rectangle(
                (start - 0.5, start - 0.5), stop - start, stop - start, fill=False, edgecolor="white", lw=1.2
            )
        )
    if n <= MAX_ITEM_TICKS:
        coord = est_ds["labels"].coords[est_ds["labels"].dims[0]].values if est_ds is not None else np.arange(n)
        _item_ticks(ax, coord[order])
    else:
        centres = (bounds[:-1] + bounds[1:] - 1) / 2.0
        shown = np.diff(bounds) >= max(1, n // 40)  # clusters big enough to hold a readable tick
        ax.set_xticks(centres[shown])
        ax.set_xticklabels([str(int(k)) for k in clusters[shown]], fontsize="small")
        ax.set_yticks(centres[shown])
        ax.set_yticklabels([str(int(k)) for k in clusters[shown]], fontsize="small")
        ax.set_xlabel(f"{n} items by cluster of the estimate (tick: cluster label)")
    title = f"{clusters.size} cluster{'s' if clusters.size != 1 else ''}"
    if est_ds is not None and "expected_loss" in est_ds:
        from ..base.partition_loss import Loss

        name = Loss(est_ds.attrs.get("loss", "VI"), float(est_ds.attrs.get("loss_a", 1.0))).label
        el, se = float(est_ds["expected_loss"]), float(est_ds.get("expected_loss_se", np.nan))
        title = f"{name} estimate: {title}, E[loss] = {el:.3g}" + (f" ± {se:.2g}" if np.isfinite(se) else "")
    ax.set_title(title, fontsize="medium")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="co-clustering probability")
    return ax
