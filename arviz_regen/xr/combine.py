"""Chains sampled apart (other machines, other seeds) as one posterior.

Each ``pm.sample`` run saves its chains (numbered 0, 1, ...) to a netCDF file or zarr store.
:func:`combine_chains` concatenates them along ``chain``, renumbered, after checking that they
are draws of the same model: the same groups, variables, dims and coordinates (items, draws),
and that no chain appears twice (a run repeated with the same seed would make the chains agree
by construction). The result is the container of the installed ArviZ generation and every
summary of this package takes it; stores opened lazily stay lazy.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import xarray as xr

from .containers import from_datasets, get_group, group_names, is_datatree, is_inference_data

__all__ = ["combine_chains"]

#: draws per chain compared between chains to detect a chain included twice
_FINGERPRINT_DRAWS = 32


def _open(source, i, chunks):
    if isinstance(source, (str, os.PathLike)):
        from .io import open_inference_data

        return open_inference_data(source, chunks=chunks)
    if is_inference_data(source) or is_datatree(source):
        return source
    raise TypeError(
        f"combine_chains: source {i} is a {type(source).__name__}; expected a path (netCDF file or "
        "zarr store), an InferenceData (ArviZ 0.x) or a DataTree (ArviZ 1.x)."
    )


def _describe(source, i):
    return f"source {i} ({os.fspath(source)})" if isinstance(source, (str, os.PathLike)) else f"source {i}"


def _same_layout(name, ref, ds, where):
    """Refuse ``ds`` unless it has ``ref``'s variables, dims, sizes and coordinates, chains aside.

    ``ds`` is the group ``name`` of another source.
    """
    if set(ref.data_vars) != set(ds.data_vars):
        only_ref = sorted(set(ref.data_vars) - set(ds.data_vars))
        only_ds = sorted(set(ds.data_vars) - set(ref.data_vars))
        raise ValueError(
            f"combine_chains: group {name!r} of {where} does not hold the variables of source 0 "
            f"(missing {only_ref}, extra {only_ds}): not draws of the same model."
        )
    for var in ref.data_vars:
        if ref[var].dims != ds[var].dims:
            raise ValueError(
                f"combine_chains: {name}[{var!r}] has dims {ds[var].dims} in {where} and {ref[var].dims} in source 0."
            )
    for dim in ref.dims:
        if dim == "chain":
            continue
        if ref.sizes[dim] != ds.sizes.get(dim):
            what = "draws per chain" if dim == "draw" else f"entries along {dim!r}"
            hint = (" (select the same draws first, e.g. idata.sel(draw=slice(0, n)))" if dim == "draw"
                    else ": not the same items, or not the same model")  # fmt: skip
            raise ValueError(
                f"combine_chains: {name} has {ds.sizes.get(dim)} {what} in {where} and {ref.sizes[dim]} "
                f"in source 0{hint}."
            )
        if dim in ref.indexes and dim in ds.indexes and not ref.indexes[dim].equals(ds.indexes[dim]):
            kind = "items" if dim not in ("draw",) else "draws"
            raise ValueError(
                f"combine_chains: the coordinates of {dim!r} in group {name!r} differ between "
                f"{where} ({np.asarray(ds.indexes[dim])[:5].tolist()}...) and source 0 "
                f"({np.asarray(ref.indexes[dim])[:5].tolist()}...): not the same {kind}."
            )


def _fingerprints(ds, n):
    """Per chain, the first ``n`` draws of every variable, or None for a chain that does not move in them.

    A few values are read per chain: independent chains of a posterior concentrated on one state are alike, only chains
    that move and coincide are copies.
    """
    head = ds.isel(draw=slice(0, n)).compute()
    out = []
    for c in range(head.sizes["chain"]):
        values = [np.asarray(head[v].isel(chain=c).transpose("draw", ...).values) for v in sorted(head.data_vars)]
        moves = any(x.shape[0] > 1 and not (x == x[:1]).all() for x in values)
        out.append(tuple(x.tobytes() for x in values) if moves else None)
    return out


def combine_chains(sources, *, chunks=None):
    """One posterior from the chains of several runs (several machines, several seeds).

    Parameters
    ----------
    sources : sequence of str, path, InferenceData or DataTree
        The runs: saved draws (netCDF files ``*.nc`` or zarr stores ``*.zarr``, opened lazily)
        or containers in memory, of the same model and data.
    chunks : dict, optional
        Dask chunks for the saved draws (default: the stores' own chunks, read lazily; the
        labels are then read chunk by chunk by the summaries, by the workers of a
        dask.distributed cluster when one runs).

    Returns
    -------
    InferenceData (ArviZ 0.x) or xarray.DataTree (ArviZ 1.x)
        Every group with a ``chain`` dim concatenated along it in the order of ``sources``,
        chains renumbered 0 … C − 1; the groups without (``observed_data``, ``constant_data``)
        once. ``posterior.attrs["combined_chains"]`` says which chain came from which source.

    Raises
    ------
    ValueError
        Fewer than one source; sources that are not draws of the same model: different groups,
        variables, dims, numbers of draws, item or draw coordinates, or different data in a
        group without chains (``observed_data``); a chain present twice (the same run, or the
        same seed, included twice).
    TypeError
        A source that is neither a path nor an InferenceData / DataTree.

    Examples
    --------
    >>> idata = arviz_regen.combine_chains(["run_seed1.zarr", "run_seed2.zarr"])  # doctest: +SKIP
    >>> arviz_regen.regen_summary(idata)                                            # doctest: +SKIP
    """
    if isinstance(sources, (str, os.PathLike)) or is_inference_data(sources) or is_datatree(sources):
        sources = [sources]
    sources = list(sources)
    if not sources:
        raise ValueError("combine_chains: no sources given.")
    lazy = {} if chunks is None else chunks
    opened = [_open(s, i, lazy) for i, s in enumerate(sources)]
    names = [group_names(d) for d in opened]
    for i, grp in enumerate(names[1:], start=1):
        if set(grp) != set(names[0]):
            raise ValueError(
                f"combine_chains: {_describe(sources[i], i)} has the groups {sorted(grp)} and source 0 "
                f"{sorted(names[0])}: save every run with the same groups."
            )
    if "posterior" not in names[0]:
        raise ValueError("combine_chains: the sources have no `posterior` group.")
    groups = {}
    origin = []
    for name in names[0]:
        parts = [get_group(d, name) for d in opened]
        if "chain" not in parts[0].dims:
            for i, ds in enumerate(parts[1:], start=1):
                if not ds.equals(parts[0]):
                    raise ValueError(
                        f"combine_chains: group {name!r} differs between {_describe(sources[i], i)} and "
                        "source 0: the runs did not fit the same data."
                    )
            groups[name] = parts[0]
            continue
        for i, ds in enumerate(parts[1:], start=1):
            if "chain" not in ds.dims:
                raise ValueError(f"combine_chains: group {name!r} of {_describe(sources[i], i)} has no chain dim.")
            _same_layout(name, parts[0], ds, _describe(sources[i], i))
        start, renumbered = 0, []
        for i, ds in enumerate(parts):
            n = ds.sizes["chain"]
            renumbered.append(ds.assign_coords(chain=np.arange(start, start + n)))
            if name == "posterior":
                old = ds["chain"].values if "chain" in ds.coords else np.arange(n)
                origin += [f"{start + c}: source {i} chain {old[c]}" for c in range(n)]
            start += n
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # xarray's changing concat defaults
            groups[name] = xr.concat(renumbered, dim="chain", data_vars="minimal", coords="minimal",
                                     compat="override", join="exact", combine_attrs="override")  # fmt: skip
    posterior = groups["posterior"]
    if "draw" in posterior.dims and len(sources) > 1:
        prints = _fingerprints(posterior, _FINGERPRINT_DRAWS)
        seen = {}
        for c, fp in enumerate(prints):
            if fp is not None and fp in seen:
                raise ValueError(
                    f"combine_chains: chains {origin[seen[fp]].split(': ')[1]} and "
                    f"{origin[c].split(': ')[1]} start with the same {_FINGERPRINT_DRAWS} draws: the "
                    "same run (or a run with the same random seed) included twice. Sample each "
                    "run with its own seed."
                )
            seen[fp] = c
    groups["posterior"] = posterior.assign_attrs(combined_chains="; ".join(origin))
    return from_datasets(groups)
