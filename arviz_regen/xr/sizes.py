"""Sizes of a posterior's partition variable from its metadata, for memory checks before any draw is read."""

from __future__ import annotations

__all__ = ["partition_sizes", "refuse_early"]


def partition_sizes(data, var_names=None):
    """(chains, draws, items) of the partition variable, from the input's metadata alone, or None.

    None when the sizes are not known without loading (a :class:`~arviz_regen.xr.draws.PartitionDraws`,
    an input :func:`~arviz_regen.xr.draws.load_partition` will reject, dimensions other than
    chain, draw and one item dimension): the caller then checks after loading, or not at all.
    """
    from .draws import PartitionDraws, select_partition_var, to_regen_data

    if isinstance(data, PartitionDraws):
        return None
    try:
        posterior = to_regen_data(data, "data", var_names=var_names).posterior
        sizes = posterior[select_partition_var(posterior, var_names)].sizes
    except Exception:  # noqa: BLE001 - load_partition reports what is wrong with the input
        return None
    dims = list(sizes)
    if len(dims) != 3 or "chain" not in sizes or "draw" not in sizes:
        return None
    item = [d for d in dims if d not in ("chain", "draw")][0]
    return int(sizes["chain"]), int(sizes["draw"]), int(sizes[item])


def refuse_early(data, var_names, need, what, advice):
    """Raise a MemoryError before anything is built when the sizes cannot fit.

    That is when ``need(chains, draws, items)`` bytes exceed the memory available now
    (:func:`arviz_regen.base.pair_kernels.check_memory`); nothing when the sizes are unknown before loading (see
    :func:`partition_sizes`). ``advice``: a string, or ``advice(chains, draws, items, available)`` returning one.
    """
    from ..base.pair_kernels import check_memory

    sizes = partition_sizes(data, var_names)
    if sizes is not None:
        sized = (lambda available: advice(*sizes, available)) if callable(advice) else advice
        check_memory(int(need(*sizes)), what.format(chains=sizes[0], draws=sizes[1], items=sizes[2]), sized)
