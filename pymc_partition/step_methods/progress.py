"""Progress-bar columns of the partition steps: clusters, log posterior and the monitor's state.

The monitor is an ``arviz_regen.StopWhenConverged`` one when one is active
(:func:`arviz_regen.diagnostics.online.active_monitor`).
"""

from __future__ import annotations

__all__ = ["config", "updater"]


def _monitor():
    from arviz_regen.diagnostics.online import active_monitor

    return active_monitor()


def config(stat_names, var_name, n_chains):
    """PyMC's ``(columns, stats)`` of a step whose stats are named ``stat_names`` (field to name).

    ``var_name`` (empty with one partition) is added to the column titles.
    """
    from rich.progress import TextColumn
    from rich.table import Column

    n_clusters, logp = stat_names["n_clusters"], stat_names["partition_logp"]
    of = f" {var_name}" if var_name else ""  # one column pair per partition
    columns = [
        TextColumn(f"{{task.fields[{n_clusters}]}}", table_column=Column(f"Clusters{of}", ratio=1)),
        TextColumn(f"{{task.fields[{logp}]:0.2f}}", table_column=Column(f"Partition logp{of}", ratio=1)),
    ]
    stats = {n_clusters: [0] * n_chains, logp: [0.0] * n_chains}
    if _monitor() is not None:  # a StopWhenConverged callback: show its state while sampling
        columns.append(TextColumn("{task.fields[monitor]}", table_column=Column("Monitor", ratio=2)))
        stats["monitor"] = [""] * n_chains
    return columns, stats


def updater(stat_names):
    """PyMC's update function: a step's stats to the progress bar's fields."""
    show_monitor = _monitor() is not None
    names = [stat_names[k] for k in ("n_clusters", "partition_logp")]

    def update_stats(step_stats):
        out = {k: step_stats[k] for k in names}
        if show_monitor:
            mon = _monitor()
            out["monitor"] = mon.status if mon is not None else ""
        return out

    return update_stats
