"""Command line: ``arviz-regen-summary PATH`` prints the Hotelling-RS / R-hat / ESS table."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

__all__ = ["main", "open_inference_data", "save_inference_data"]


def save_inference_data(idata, path):
    """Save an InferenceData as netCDF (``*.nc``) or zarr (``*.zarr``, any zarr version)."""
    path = Path(path)
    if path.suffix == ".zarr":
        for i, group in enumerate(idata.groups()):
            getattr(idata, group).to_zarr(str(path), group=group, mode="w" if i == 0 else "a")
    else:
        idata.to_netcdf(str(path))
    return path


def open_inference_data(path, chunks=None):
    """Open a saved InferenceData (netCDF file or zarr store), lazily with dask when ``chunks``.

    Parameters
    ----------
    path : str or Path
        ``*.nc``/netCDF file or ``*.zarr`` directory.
    chunks : dict or None
        Dask chunks (e.g. ``{"draw": 10000}``); None reads without dask (lazily from disk).
    """
    import arviz as az
    import xarray as xr

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file or directory: {path}")
    is_zarr = path.is_dir() or path.suffix == ".zarr"
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
    return az.InferenceData.from_netcdf(str(path), group_kwargs=group_kwargs)


def _parser():
    p = argparse.ArgumentParser(
        prog="arviz-regen-summary",
        description=(
            "Print Hotelling-RS p-values (per chain) next to R-hat and ESS of n_clusters and "
            "partition_logp for a saved InferenceData (netCDF file or zarr store)."
        ),
    )
    p.add_argument("path", help="InferenceData file (.nc) or zarr store (.zarr)")
    p.add_argument("--var-name", default=None, help="partition variable (default: the only one)")
    p.add_argument("-k", type=int, nargs="+", default=[2, 3, 5, 10], help="numbers of top states (default: 2 3 5 10)")
    p.add_argument("--logp-var", default="partition_logp", help="sample_stats log posterior (default: partition_logp)")
    p.add_argument("--per-chain", action="store_true", help="rank top states per chain instead of pooled")
    p.add_argument("--chunk-draws", type=int, default=None, help="open with dask, this many draws per chunk")
    p.add_argument("--round", type=int, default=3, dest="round_to", help="decimals (default 3)")
    return p


def main(argv=None):
    """Entry point of ``arviz-regen-summary``; returns the exit status."""
    args = _parser().parse_args(argv)
    from .summary import regen_summary

    try:
        chunks = None if args.chunk_draws is None else {"draw": args.chunk_draws}
        idata = open_inference_data(args.path, chunks=chunks)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = regen_summary(
                idata,
                var_names=args.var_name,
                k=args.k,
                logp_var=args.logp_var,
                pooled=not args.per_chain,
                round_to=args.round_to,
            )
    except (OSError, ValueError, TypeError) as err:
        print(f"arviz-regen-summary: error: {err}", file=sys.stderr)
        return 2
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_columns", 50):
        print(table.to_string(na_rep=""))
    for w in caught:
        if issubclass(w.category, UserWarning):
            print(f"warning: {w.message}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
