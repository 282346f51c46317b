"""The two ArviZ generations' containers, told apart and handled in one place.

ArviZ 0.x (with PyMC 5) holds draws in ``arviz.InferenceData``; ArviZ 1.x (with PyMC 6) in
``xarray.DataTree``, and there ``arviz.InferenceData`` is a module-level alias of ``DataTree``
that warns on access, so ``isinstance(tree, az.InferenceData)`` is true for every DataTree and
``tree.groups`` is a property. Everything here avoids that alias: an InferenceData is an
instance of the class ArviZ 0.x defines in its own module dict, and nothing imports ArviZ just
to check a type.

Functions return what the user's generation holds: a group added to an InferenceData is added
with ``add_groups``; to a DataTree, as a child node; new containers are built by the installed
ArviZ's ``from_dict``.
"""

from __future__ import annotations

import functools
import sys
import warnings
from importlib import metadata

import xarray as xr

__all__ = [
    "arviz_major",
    "is_inference_data",
    "is_datatree",
    "group_names",
    "get_group",
    "add_group",
    "from_dict",
    "from_datasets",
    "to_datatree",
]


@functools.cache  # the installed version does not change within a process; reading it scans sys.path
def arviz_major():
    """Major version of the installed ArviZ (0 or 1), or None when it is not installed."""
    try:
        return int(metadata.version("arviz").split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        return None


def _inference_data_class():
    # only if arviz was imported (never import it just to check), and only the real class: in
    # ArviZ 1 the name is served by the module's __getattr__ (a DataTree alias with a warning)
    az = sys.modules.get("arviz")
    return vars(az).get("InferenceData") if az is not None else None


def is_datatree(data):
    """Whether ``data`` is an ``xarray.DataTree`` (or the older ``xarray-datatree`` tree)."""
    cls = getattr(xr, "DataTree", None)
    if cls is not None and isinstance(data, cls):
        return True
    legacy = sys.modules.get("datatree")
    return legacy is not None and isinstance(data, getattr(legacy, "DataTree", ()))


def is_inference_data(data):
    """Whether ``data`` is an ArviZ 0.x ``InferenceData`` (never true for a DataTree)."""
    cls = _inference_data_class()
    return cls is not None and isinstance(data, cls) and not is_datatree(data)


def group_names(data):
    """Names of the groups of an InferenceData or DataTree (children of the root)."""
    if is_inference_data(data):
        return list(data.groups())
    if is_datatree(data):
        return list(data.children)
    raise TypeError(f"expected an InferenceData or a DataTree, got {type(data).__name__}.")


def get_group(data, name):
    """Group ``name`` as an ``xarray.Dataset`` (a DataTree node's own variables and coords)."""
    if is_inference_data(data):
        return getattr(data, name)
    node = data[name]
    return node.to_dataset() if hasattr(node, "to_dataset") else node.ds.to_dataset()


def add_group(data, name, dataset, *, replace=False):
    """Add ``dataset`` as group ``name`` of ``data`` in place, the generation's way.

    An existing group is kept unless ``replace``; returns ``data``.
    """
    if name in group_names(data):
        if not replace:
            raise ValueError(f"the data already have a {name!r} group.")
    if is_inference_data(data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ArviZ 0.x warns about non-standard group names
            if name in data.groups():
                setattr(data, name, dataset)
            else:
                data.add_groups({name: dataset})
        return data
    data[name] = xr.DataTree(dataset=dataset)
    return data


def from_dict(groups, dims=None, coords=None):
    """Return a container of the installed ArviZ generation from ``{group: {name: array}}``.

    InferenceData on ArviZ 0.x, DataTree on ArviZ 1.x (whose ``from_dict`` takes the groups as one positional mapping).
    """
    import arviz as az

    if arviz_major() >= 1:
        return az.from_dict(dict(groups), dims=dims, coords=coords)
    return az.from_dict(**groups, dims=dims, coords=coords)


def from_datasets(groups):
    """Return a container of the installed ArviZ generation from ``{group: xarray.Dataset}``."""
    if arviz_major() == 0:
        import arviz as az

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # non-standard group names
            return az.InferenceData(**groups)
    return xr.DataTree.from_dict(dict(groups))


def to_datatree(data):
    """Return ``data`` as an ``xarray.DataTree`` (an InferenceData converted, a DataTree unchanged)."""
    if is_datatree(data):
        return data
    if is_inference_data(data):
        return data.to_datatree()
    raise TypeError(f"expected an InferenceData or a DataTree, got {type(data).__name__}.")
