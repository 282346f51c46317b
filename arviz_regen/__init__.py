"""arviz_regen: regenerative-sampling convergence diagnostics for partition-valued MCMC.

The Hotelling-RS statistic of Asgharian, Lysy & Partovi Nia (2019) and regenerative (RS)
estimates with standard errors, as ArviZ-style functions returning xarray objects. Importing the
package makes ``az.hotelling_rs`` (and the other public functions) available on the ``arviz``
namespace, next to ``az.rhat`` and ``az.ess``, and the ``.regen`` accessors on xarray objects:
:func:`register` (below) is called at import, and imports ArviZ and xarray for it. The other
public functions are imported on first use.

Layout (each tier imports only the ones above it):

- :mod:`arviz_regen.base`: array kernels, numpy in and out (numba where it pays), no xarray;
- :mod:`arviz_regen.xr`: input conversion and validation, regeneration tours, results with dims;
- :mod:`arviz_regen.estimates`, :mod:`arviz_regen.diagnostics`: the public functions, exported
  here; :mod:`arviz_regen.plots`, :mod:`arviz_regen.cli`, :mod:`arviz_regen.accessor` on top.

Public surface for packages built on this one (``pymc_partition`` uses only these):
:mod:`arviz_regen.base.state` (canonical labels, state keys), :mod:`arviz_regen.xr.containers`
(``get_group``, ``add_group``, ``group_names``, ``is_datatree``, ... on both ArviZ generations),
:func:`arviz_regen.diagnostics.online.active_monitor`, and the names of ``__all__`` below.
"""

from __future__ import annotations

import importlib

#: public name -> the submodule that defines it (loaded on first use)
_API = {
    "coclustering": "estimates.coclustering",
    "credible_ball": "estimates.credible_ball",
    "partition_loss": "base.partition_loss",
    "point_estimate": "estimates.point_estimate",
    "expected_loss": "estimates.expected_loss",
    "Consensus": "estimates.consensus",
    "binder_loss": "estimates.consensus",
    "consensus": "estimates.consensus",
    "consensus_partition": "estimates.consensus",
    "rs_estimate": "estimates.rs_estimate",
    "top_states": "estimates.rs_estimate",
    "hotelling_rs": "diagnostics.hotelling",
    "chain_agreement": "diagnostics.agreement",
    "conditional_check": "diagnostics.conditional",
    "partition_traces": "estimates.traces",
    "StopWhenConverged": "diagnostics.online",
    "checkpoint_grid": "diagnostics.online",
    "when_converged": "diagnostics.online",
    "StopWhenReached": "diagnostics.run_length",
    "when_reached": "diagnostics.run_length",
    "draws_needed": "diagnostics.run_length",
    "plot_coclustering": "plots.partition_plots",
    "plot_coclustering_trace": "plots.partition_plots",
    "plot_hotelling_rs": "plots.partition_plots",
    "plot_point_estimate": "plots.partition_plots",
    "plot_top_states": "plots.partition_plots",
    "regen_summary": "diagnostics.summary",
    "rs_mean_cov": "base.tours",
    "rs_mean_se": "base.tours",
    "batch_means": "base.batch_means",
    "NonRecurrenceWarning": "xr.regeneration",
    "combine_chains": "xr.combine",
    "SampledHyperparametersWarning": "xr.regeneration",
}

__version__ = "0.1.0"
__all__ = [
    "register",
    "StopWhenConverged",
    "when_converged",
    "StopWhenReached",
    "when_reached",
    "draws_needed",
    "checkpoint_grid",
    "hotelling_rs",
    "chain_agreement",
    "conditional_check",
    "partition_traces",
    "coclustering",
    "rs_estimate",
    "top_states",
    "consensus",
    "consensus_partition",
    "binder_loss",
    "Consensus",
    "point_estimate",
    "credible_ball",
    "expected_loss",
    "partition_loss",
    "regen_summary",
    "combine_chains",
    "plot_hotelling_rs",
    "plot_coclustering",
    "plot_coclustering_trace",
    "plot_top_states",
    "plot_point_estimate",
    "rs_mean_cov",
    "rs_mean_se",
    "batch_means",
    "NonRecurrenceWarning",
    "SampledHyperparametersWarning",
]

#: the package's modules and subpackages, imported on first attribute access
_SUBMODULES = {"base", "xr", "estimates", "diagnostics", "plots", "compat", "accessor", "cli", "testing"}


def __getattr__(name):
    """PEP 562: a public name is imported from its submodule on first use; a submodule name imports that submodule."""
    module = _API.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


def register():
    """Register with ArviZ and xarray: ``az.hotelling_rs`` & co. and the ``.regen`` accessors.

    Called once by ``import arviz_regen``; calling it again changes nothing. Either library may
    be missing: its part is then skipped. See :mod:`arviz_regen.compat.arviz` (ArviZ has no
    plugin registry: the names are set on the ``arviz`` module, never over ArviZ's own) and
    :mod:`arviz_regen.compat.xarray` (xarray's accessor API).
    """
    from .compat import arviz as _arviz
    from .compat import xarray as _xarray

    _xarray.register()
    _arviz.register()


from .compat.arviz import ARVIZ_NAMES as ARVIZ_NAMES  # noqa: E402  (the names register() puts on arviz)

register()
