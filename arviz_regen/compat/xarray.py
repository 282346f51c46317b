"""xarray: the ``.regen`` accessors on ``Dataset``, ``DataArray`` and ``DataTree``.

Through xarray's public accessor API (``xarray.register_*_accessor``), the plugin route
arviz-stats takes with ``.azstats``; ``register_datatree_accessor`` exists from xarray 2024.10
(with ``xarray.DataTree``), and older versions get the Dataset and DataArray accessors only.
"""

from __future__ import annotations

__all__ = ["register"]


def register():
    """Register the ``regen`` accessors (called by ``import arviz_regen``; idempotent).

    Returns
    -------
    list of type
        The xarray classes that have the accessor (empty when xarray is missing).
    """
    try:
        import xarray as xr
    except ImportError:
        return []
    from ..accessor import ACCESSOR_NAME, DataArrayRegenAccessor, DatasetRegenAccessor, DataTreeRegenAccessor

    targets = [
        (getattr(xr, "register_dataset_accessor", None), xr.Dataset, DatasetRegenAccessor),
        (getattr(xr, "register_dataarray_accessor", None), xr.DataArray, DataArrayRegenAccessor),
        (getattr(xr, "register_datatree_accessor", None), getattr(xr, "DataTree", None), DataTreeRegenAccessor),
    ]
    done = []
    for reg, cls, accessor in targets:
        if reg is None or cls is None:
            continue  # an xarray without DataTree (< 2024.10)
        if getattr(cls, ACCESSOR_NAME, None) is not accessor:  # registered once: no AccessorRegistrationWarning
            reg(ACCESSOR_NAME)(accessor)
        done.append(cls)
    return done
