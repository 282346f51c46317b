"""``.regen`` accessors on xarray objects: the plugin route of the DataTree (arviz-stats) world.

arviz-stats exposes its diagnostics as ``dt.azstats.<method>`` through xarray's accessor API;
a plugin registers its own accessor name. Importing :mod:`arviz_regen` registers ``regen``
(:func:`arviz_regen.compat.xarray.register`) on

- ``xarray.DataTree`` (arviz-base's InferenceData successor, groups ``posterior`` and
  ``sample_stats``): ``dt.regen.hotelling_rs(k=[2, 5])``, ``dt.regen.coclustering()``,
  ``dt.regen.summary()``, ``dt.regen.point_estimate(loss="VI")``; the log posterior comes from
  ``sample_stats``;
- ``xarray.Dataset`` (a posterior-like Dataset): ``idata.posterior.regen.hotelling_rs(logp=lp)``,
  the log posterior from ``logp=`` or from a variable named ``logp_var`` in the Dataset;
- ``xarray.DataArray`` (the labels themselves): ``posterior["z"].regen.coclustering()``.

Every method forwards to the public function of the same name (``summary`` to
:func:`arviz_regen.regen_summary`) with the object as ``data``; all arguments (``var_names``,
``k``, ``logp``, ``coords``, ...) are passed through unchanged. An ``az.InferenceData`` has no
accessor API: call the functions directly, ``arviz_regen.hotelling_rs(idata)``.
"""

from __future__ import annotations

__all__ = ["RegenAccessor", "ACCESSOR_NAME"]

ACCESSOR_NAME = "regen"

#: accessor method -> public function of arviz_regen
_METHODS = {
    "hotelling_rs": "hotelling_rs",
    "chain_agreement": "chain_agreement",
    "conditional_check": "conditional_check",
    "partition_traces": "partition_traces",
    "coclustering": "coclustering",
    "rs_estimate": "rs_estimate",
    "top_states": "top_states",
    "consensus": "consensus",
    "point_estimate": "point_estimate",
    "credible_ball": "credible_ball",
    "summary": "regen_summary",
    "plot_hotelling_rs": "plot_hotelling_rs",
    "plot_coclustering": "plot_coclustering",
    "plot_coclustering_trace": "plot_coclustering_trace",
    "plot_top_states": "plot_top_states",
    "plot_point_estimate": "plot_point_estimate",
}


def _forwarder(method, target):
    def forward(self, *args, **kwargs):
        import arviz_regen  # at call time: no import cycle with the package __init__

        return getattr(arviz_regen, target)(self._obj, *args, **kwargs)

    forward.__name__ = forward.__qualname__ = method
    forward.__doc__ = (
        f"``arviz_regen.{target}(obj, *args, **kwargs)`` of this object; see "
        f":func:`arviz_regen.{target}` for the arguments and the result."
    )
    return forward


class RegenAccessor:
    """Regenerative-sampling diagnostics of the partition draws held by this xarray object."""

    def __init__(self, xarray_obj):
        self._obj = xarray_obj

    def __repr__(self):
        return f"<arviz_regen accessor on {type(self._obj).__name__}: {', '.join(_METHODS)}>"


for _method, _target in _METHODS.items():
    setattr(RegenAccessor, _method, _forwarder(_method, _target))
del _method, _target


class DatasetRegenAccessor(RegenAccessor):
    """``ds.regen``: diagnostics of a posterior-like Dataset (pass ``logp=`` unless it holds it)."""


class DataArrayRegenAccessor(RegenAccessor):
    """``da.regen``: diagnostics of a label DataArray (chain, draw, item); pass ``logp=``."""


class DataTreeRegenAccessor(RegenAccessor):
    """``dt.regen``: diagnostics of a DataTree with ``posterior`` and ``sample_stats`` groups."""
