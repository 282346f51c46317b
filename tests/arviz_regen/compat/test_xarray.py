"""The ``.regen`` accessors, registered by ``import arviz_regen`` through xarray's accessor API."""

from __future__ import annotations

import warnings

import xarray as xr

import arviz_regen  # noqa: F401
from arviz_regen.accessor import RegenAccessor
from arviz_regen.compat import xarray as compat_xarray


def test_accessors_are_registered_once_on_each_class():
    classes = [xr.Dataset, xr.DataArray] + ([xr.DataTree] if hasattr(xr, "DataTree") else [])
    for cls in classes:
        assert issubclass(cls.regen, RegenAccessor)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # xarray warns when an accessor name is registered twice
        assert compat_xarray.register() == classes
