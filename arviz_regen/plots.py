"""Matplotlib plots in ArviZ style (``ax=`` in, Axes out): the paper's Figures 1 and 2.

- :func:`plot_hotelling_rs`: Hotelling-RS p-value along the draws, per chain and K (Fig. 2c).
- :func:`plot_coclustering`: co-clustering heat map, items ordered by similarity (Fig. 1 right).
- :func:`plot_coclustering_trace`: CV, se or absolute error of ρ̂_ij along the draws (Fig. 2a/b).
- :func:`plot_top_states`: cumulative probability of the top states by rank (Fig. 1 left).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = ["plot_hotelling_rs", "plot_coclustering", "plot_coclustering_trace", "plot_top_states"]


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


def plot_hotelling_rs(data, var_names=None, *, k=(2, 3, 5, 10), alpha=0.05, ax=None, figsize=None, **kwargs):
    """Hotelling-RS p-values along the draws: one panel per K, one line per chain.

    Parameters
    ----------
    data : InferenceData (or convertible), or the Dataset of ``hotelling_rs(..., cumulative=True)``
    var_names : str, optional
    k : sequence of int
        Used when ``data`` is not already a cumulative result.
    alpha : float or None
        Draws a dashed reference line at this level.
    ax : matplotlib Axes or array of Axes, optional
    figsize : tuple, optional
    **kwargs
        Passed to :func:`arviz_regen.hotelling_rs`.

    Returns
    -------
    numpy.ndarray of matplotlib Axes
    """
    if isinstance(data, xr.Dataset) and "p_value" in data and "draw" in data["p_value"].dims:
        ds = data
    else:
        from .hotelling import hotelling_rs

        ds = hotelling_rs(data, var_names, k=list(np.atleast_1d(k)), cumulative=True, **kwargs)
    if "k" not in ds["p_value"].dims:
        ds = ds.expand_dims(k=[int(np.atleast_1d(ds.attrs.get("k", [0]))[0])])
    ks = ds["k"].values
    axes = _axes_grid(ks.size, ax, figsize)
    draws = ds["draw"].values
    for axi, kk in zip(axes, ks):
        sub = ds["p_value"].sel(k=kk)
        for c in ds["chain"].values:
            axi.plot(draws, sub.sel(chain=c).values, lw=1, label=f"chain {c}")
        if alpha is not None:
            axi.axhline(alpha, color="0.4", ls="--", lw=0.8)
        axi.set_ylim(-0.02, 1.02)
        axi.set_title(f"K = {int(kk)}")
        axi.set_xlabel("draw")
        axi.set_ylabel("Hotelling-RS p-value")
    axes[0].legend(fontsize="small", frameon=False)
    return axes


def similarity_order(rho):
    """Item order putting similar items (high ρ_ij) next to each other: average-linkage leaves."""
    from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
    from scipy.spatial.distance import squareform

    rho = np.asarray(rho, dtype=float)
    if rho.shape[0] < 3:
        return np.arange(rho.shape[0])
    dist = np.clip(1.0 - rho, 0.0, None)
    np.fill_diagonal(dist, 0.0)
    y = squareform((dist + dist.T) / 2, checks=False)
    Z = linkage(y, method="average")
    return leaves_list(optimal_leaf_ordering(Z, y))


def _rho_matrix(data, var_names, chain, **kwargs):
    if isinstance(data, xr.Dataset) and "rho" in data:
        da = data["rho"]
    elif isinstance(data, (xr.DataArray, np.ndarray)):
        return np.asarray(data, dtype=float), None
    else:
        from .coclustering import coclustering

        da = coclustering(data, var_names, combined=chain is None, **kwargs)["rho"]
    if "chain" in da.dims:
        da = da.sel(chain=chain) if chain is not None else da.mean("chain")
    if "draw" in da.dims:
        da = da.isel(draw=-1)
    labels = da["item_i"].values if "item_i" in da.coords else None
    return np.asarray(da.values, dtype=float), labels


def plot_coclustering(
    data, var_names=None, *, chain=None, order=True, ax=None, figsize=None, cmap="viridis", colorbar=True, **kwargs
):
    """Heat map of co-clustering probabilities, items ordered by similarity.

    Parameters
    ----------
    data : InferenceData (or convertible), a :func:`coclustering` Dataset, or an (n, n) matrix
    chain : chain coordinate, optional
        One chain's estimate; default the pooled estimate (or the mean over chains of a given
        per-chain Dataset).
    order : bool or sequence of int
        True: average-linkage leaf order; False: as stored; or an explicit order.
    ax, figsize, cmap, colorbar
        Matplotlib options.
    **kwargs
        Passed to :func:`arviz_regen.coclustering`.

    Returns
    -------
    matplotlib Axes
    """
    rho, labels = _rho_matrix(data, var_names, chain, **kwargs)
    n = rho.shape[0]
    if labels is None:
        labels = np.arange(n)
    if order is True:
        perm = similarity_order(rho)
    elif order is False:
        perm = np.arange(n)
    else:
        perm = np.asarray(order)
    ax = _axes_grid(1, ax, figsize or (5, 4.3))[0]
    im = ax.imshow(rho[np.ix_(perm, perm)], vmin=0, vmax=1, cmap=cmap, interpolation="nearest")
    ax.set_xticks(np.arange(n))
    ax.set_yticks(np.arange(n))
    ax.set_xticklabels([str(v) for v in np.asarray(labels)[perm]], rotation=90, fontsize="small")
    ax.set_yticklabels([str(v) for v in np.asarray(labels)[perm]], fontsize="small")
    ax.set_title("co-clustering probability")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return ax


def plot_coclustering_trace(
    data, var_names=None, *, stat="cv", reference=None, combined=False, n_points=100, ax=None, figsize=None, **kwargs
):
    """One line per item pair: CV, se, ρ̂ or |ρ̂ − ρ| along the draws (the paper's Fig. 2a/2b).

    Parameters
    ----------
    data : InferenceData (or convertible) or a cumulative :func:`coclustering` Dataset
    stat : {"cv", "se", "rho", "abs_error"}
        "abs_error" needs ``reference`` (the true co-clustering matrix).
    reference : (n, n) array, optional
    combined : bool
        One panel for the pooled chains instead of one per chain.
    n_points : int
        Evaluation draws when computing.

    Returns
    -------
    numpy.ndarray of matplotlib Axes
    """
    if stat not in ("cv", "se", "rho", "abs_error"):
        raise ValueError(f"`stat` must be 'cv', 'se', 'rho' or 'abs_error', got {stat!r}.")
    if stat == "abs_error" and reference is None:
        raise ValueError("`stat='abs_error'` needs `reference` (the true co-clustering matrix).")
    if isinstance(data, xr.Dataset) and "rho" in data and "draw" in data.dims:
        ds = data
    else:
        from .coclustering import coclustering

        ds = coclustering(data, var_names, combined=combined, cumulative=True, n_points=n_points, **kwargs)
    if stat == "abs_error":
        values = np.abs(ds["rho"] - np.asarray(reference))
    else:
        values = ds[stat]
    chains = ds["chain"].values if "chain" in ds.dims else [None]
    axes = _axes_grid(len(chains), ax, figsize)
    n = ds.sizes["item_i"]
    iu, ju = np.triu_indices(n, 1)
    draws = ds["draw"].values
    for axi, c in zip(axes, chains):
        v = values if c is None else values.sel(chain=c)
        arr = np.asarray(v.transpose("draw", "item_i", "item_j").values)[:, iu, ju]
        axi.plot(draws, arr, lw=0.6, color="C0", alpha=0.5)
        axi.set_xlabel("draw")
        axi.set_ylabel({"cv": "CV", "se": "standard error", "rho": "co-clustering", "abs_error": "absolute error"}[stat])
        axi.set_title("pooled chains" if c is None else f"chain {c}")
    return axes


def plot_top_states(data, var_names=None, *, k=10, reference=None, combined=False, ax=None, figsize=None, **kwargs):
    """Cumulative probability of the top states by rank (the paper's Figure 1, left).

    Lines: the RS estimate per chain (or pooled), the probabilities implied by ``logp`` and the
    pooled estimate of Z (dashed), and optionally the true probabilities ``reference``.

    Parameters
    ----------
    data : InferenceData (or convertible) or a :func:`top_states` Dataset
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
    if isinstance(data, xr.Dataset) and "probability" in data:
        ds = data
    else:
        from .estimates import top_states

        ds = top_states(data, var_names, k=k, combined=combined, **kwargs)
    ax = _axes_grid(1, ax, figsize or (5, 3.5))[0]
    rank = ds["rank"].values + 1
    prob = ds["probability"]
    if "chain" in prob.dims:
        for c in prob["chain"].values:
            ax.plot(rank, np.cumsum(prob.sel(chain=c).values), marker="o", ms=3, lw=1, label=f"chain {c}")
    else:
        ax.plot(rank, np.cumsum(prob.values), marker="o", ms=3, lw=1, label="pooled chains")
    ax.plot(rank, np.cumsum(ds["logp_probability"].values), ls="--", color="0.3", lw=1, label="from logp")
    if reference is not None:
        ref = np.asarray(reference, dtype=float)[: rank.size]
        ax.plot(rank[: ref.size], np.cumsum(ref), color="k", lw=1.5, label="reference")
    ax.set_xlabel("state rank (by posterior probability)")
    ax.set_ylabel("cumulative probability")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize="small", frameon=False)
    return ax
