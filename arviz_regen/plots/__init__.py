"""Plots of the diagnostics and estimates (matplotlib)."""

from .partition_plots import (
    plot_coclustering,
    plot_coclustering_trace,
    plot_hotelling_rs,
    plot_point_estimate,
    plot_top_states,
)

__all__ = [
    "plot_coclustering",
    "plot_coclustering_trace",
    "plot_hotelling_rs",
    "plot_point_estimate",
    "plot_top_states",
]
