"""The paper's Figures 1 and 2, drawn with :mod:`arviz_regen.plots`.

Each function draws on ``fig`` (an empty matplotlib Figure, e.g. ``matplotlib.figure.Figure()``
for a script that must not touch pyplot's state) or, by default, on a new pyplot figure (shown
inline in a notebook). Nothing here changes matplotlib's global settings.
"""

from __future__ import annotations

import numpy as np

from . import constants

__all__ = ["figure1", "coclustering_matrix", "figure2"]


def _new_figure(fig, figsize, dpi):
    if fig is None:
        import matplotlib.pyplot as plt

        return plt.figure(figsize=figsize, dpi=dpi, layout="constrained")
    fig.set_size_inches(*figsize)
    fig.set_dpi(dpi)
    fig.set_layout_engine("constrained")
    return fig


def figure1(exact, item_names, *, n_states=1000, k=constants.TOP_K, threshold=constants.COCLUSTERING_THRESHOLD,
            fig=None, dpi=90):  # fmt: skip
    """Draw the paper's Figure 1: cumulative probability of the states, and the co-clustering of pairs.

    Left: cumulative probability of the ``n_states`` most probable partitions by rank (log
    scale, the top ``k`` marked). Right: exact co-clustering probabilities of all pairs above
    ``threshold``, split into the contribution of the top ``k`` partitions (black) and of the
    rest (red). Returns the figure.
    """
    from arviz_regen.plots import plot_top_states

    fig = _new_figure(fig, (13, 4.8), dpi)
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 2]})
    n_states = int(min(n_states, exact.n_states))
    labels, probs = exact.top(n_states)
    plot_top_states(probs, ax=ax1)
    cum = np.cumsum(probs)
    ax1.plot(np.arange(1, k + 1), cum[:k], "o", color="k", ms=4, label=f"top {k}")
    ax1.set_xscale("log")
    ax1.set_xlabel(f"partition rank (top {n_states:,} of {exact.n_states:,})")
    ax1.set_title(f"MAP probability {probs[0]:.2f}; top {k}: {cum[k - 1]:.2f}")
    if ax1.get_legend() is not None:
        ax1.get_legend().remove()
    ax1.grid(alpha=0.3)

    rho = exact.coclustering
    iu, ju = np.triu_indices(rho.shape[0], 1)
    same = labels[:k, iu] == labels[:k, ju]  # (k, pairs): pair together in each top partition
    top_part = probs[:k] @ same
    keep = np.flatnonzero(rho[iu, ju] > threshold)
    keep = keep[np.argsort(-rho[iu, ju][keep], kind="stable")]
    x = np.arange(keep.size)
    ax2.bar(x, top_part[keep], color="k", label=f"top {k} partitions")
    ax2.bar(x, rho[iu, ju][keep] - top_part[keep], bottom=top_part[keep], color="tab:red", label="the rest")
    ax2.set_xticks(x, [f"{item_names[i]}–{item_names[j]}" for i, j in zip(iu[keep], ju[keep])],
                   rotation=90, fontsize=6 if keep.size > 40 else 8)  # fmt: skip
    ax2.set_xlim(-0.7, max(keep.size, 1) - 0.3)
    ax2.set_ylim(0, 1.02)
    ax2.set_ylabel(r"co-clustering probability $\rho_{ij}$")
    ax2.set_title(rf"exact $\rho_{{ij}}$ of the {keep.size} pairs with $\rho_{{ij}} > {threshold}$")
    ax2.legend(frameon=False, fontsize=9)
    return fig


def coclustering_matrix(exact, item_names, *, fig=None, dpi=90):
    """Heat map of the exact co-clustering matrix, items ordered by similarity. Returns the figure."""
    from arviz_regen.plots import plot_coclustering

    fig = _new_figure(fig, (5.6, 4.8), dpi)
    ax = fig.subplots()
    plot_coclustering(exact.coclustering, labels=list(item_names), ax=ax)
    ax.set_title("exact co-clustering matrix")
    return fig


def figure2(diags, *, alpha=constants.ALPHA, cv_threshold=constants.CV_THRESHOLD, fig=None, dpi=90):
    """Draw the paper's Figure 2, one row per sampler: (a) |rho_hat - rho|, (b) CV, (c) Hotelling-RS.

    ``diags`` maps a sampler's name to its
    :func:`~pymc_partition.paper.workflow.convergence_diagnostics`. Lines are item pairs in (a)
    and (b) (one colour per chain) and K in (c) (one colour per K, one line style per chain, the
    all-chains verdict thick). Returns the figure.
    """
    from arviz_regen.plots import plot_coclustering_trace, plot_hotelling_rs

    from .workflow import SAMPLER_LABELS

    names = list(diags)
    fig = _new_figure(fig, (13, 3.6 * len(names)), dpi)
    axes = fig.subplots(len(names), 3, sharex=True, squeeze=False)
    err_max = max(float(np.nanmax(d["abs_error"].values, initial=0.0)) for d in diags.values())
    p_min = min(float(np.nanmin(d["hotelling"]["p_value"].values, initial=1.0)) for d in diags.values())
    for r, name in enumerate(names):
        d = diags[name]
        plot_coclustering_trace(
            d["coclustering"], stat="abs_error", reference=d["reference"], overlay=True, ax=axes[r, 0]
        )
        plot_coclustering_trace(d["coclustering"], stat="cv", overlay=True, ax=axes[r, 1])
        plot_hotelling_rs(d["hotelling"], overlay=True, alpha=alpha, p_min=min(1e-3, max(p_min / 10, 1e-10)),
                          ax=axes[r, 2])  # fmt: skip
        axes[r, 0].set_ylim(0, max(0.05, 1.05 * err_max))
        axes[r, 1].axhline(cv_threshold, color="0.3", ls="--", lw=0.8)
        axes[r, 1].set_yscale("log")
        axes[r, 1].set_ylim(bottom=1e-4)
        label = SAMPLER_LABELS.get(name, name)
        axes[r, 0].set_ylabel(f"{label}\n" + r"$|\hat\rho_{ij} - \rho_{ij}|$")
        axes[r, 1].set_ylabel(r"CV$_{ij}$ = se / max($\hat\rho$, 1 − $\hat\rho$)")
        axes[r, 2].set_ylabel("Hotelling-RS p-value")
        for ax in axes[r]:
            ax.set_title("")  # the column titles below say it once
            if r and ax.get_legend() is not None:  # one legend per column
                ax.get_legend().remove()
    for j, title in enumerate(["(a) absolute co-clustering error", "(b) CV of the RS estimates",
                               "(c) Hotelling-RS p-values"]):  # fmt: skip
        axes[0, j].set_title(title)
    for ax in axes.ravel():
        ax.set_xlabel("")
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("iteration (draws per chain)")
    return fig
