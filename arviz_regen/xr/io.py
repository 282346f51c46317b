"""Saved draws: an InferenceData or DataTree written to and read from netCDF files and zarr stores.

Both ArviZ generations, zarr 2 and 3; opened lazily with dask when ``chunks`` is given, so that
the labels are read chunk by chunk (by the workers of a dask.distributed cluster when one runs
the summaries).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["open_inference_data", "save_inference_data"]


def save_inference_data(idata, path):
    """Save an InferenceData or DataTree as netCDF (``*.nc``) or zarr (``*.zarr``, any zarr version)."""
    from .containers import get_group, group_names, is_datatree

    path = Path(path)
    if is_datatree(idata):
        if path.suffix == ".zarr":
            idata.to_zarr(str(path), mode="w")
        else:
            idata.to_netcdf(str(path))
        return path
    if path.suffix == ".zarr":
        for i, group in enumerate(group_names(idata)):
            get_group(idata, group).to_zarr(str(path), group=group, mode="w" if i == 0 else "a")
    else:
        idata.to_netcdf(str(path))
    return path


def open_inference_data(path, chunks=None):
    """Open saved draws (netCDF file or zarr store), lazily with dask when ``chunks``.

    Parameters
    ----------
    path : str or Path
        ``*.nc``/netCDF file or ``*.zarr`` directory.
    chunks : dict or None
        Dask chunks (e.g. ``{"draw": 10000}``); None reads without dask (lazily from disk).

    Returns
    -------
    InferenceData (ArviZ 0.x) or xarray.DataTree (ArviZ 1.x, or without ArviZ)
    """
    import xarray as xr

    from .containers import arviz_major

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file or directory: {path}")
    is_zarr = path.is_dir() or path.suffix == ".zarr"
    if arviz_major() != 0:
        try:
            tree = xr.open_datatree(str(path), engine="zarr" if is_zarr else None, chunks=chunks)
        except (ValueError, OSError) as err:  # xarray's "consider installing IO dependencies"
            raise _unreadable(path, is_zarr, err) from err
        if not tree.children:
            raise ValueError(f"{path} holds no groups (expected `posterior` and `sample_stats`).")
        return tree
    import arviz as az

    if is_zarr:
        # read group by group with xarray: works with zarr 2 and 3 (ArviZ's from_zarr needs zarr<3)
        import zarr

        groups = sorted(zarr.open_group(str(path), mode="r").group_keys())
        if not groups:
            raise ValueError(f"{path} is not an InferenceData zarr store (no groups).")
        return az.InferenceData(**{g: xr.open_zarr(str(path), group=g, chunks=chunks) for g in groups})
    group_kwargs = None
    if chunks is not None:
        group_kwargs = {g: {"chunks": chunks} for g in ("posterior", "sample_stats")}
    try:
        return az.InferenceData.from_netcdf(str(path), group_kwargs=group_kwargs)
    except (ValueError, OSError) as err:  # h5py's "file signature not found", and the like
        raise _unreadable(path, is_zarr, err) from err


def _unreadable(path, is_zarr, err):
    """Return the error for a file that is not a store of draws.

    The readers' own messages point at missing IO dependencies or HDF5 signatures.
    """
    kind = "zarr store" if is_zarr else "netCDF file"
    reason = str(err).splitlines()[0] if str(err) else type(err).__name__
    if "IO backends" in str(err) or "IO dependencies" in str(err):
        reason = "no netCDF or zarr reader recognises its content"
    return ValueError(
        f"{path} is not a {kind} of draws that can be read ({reason}): save the InferenceData "
        "with to_netcdf or to_zarr."
    )
