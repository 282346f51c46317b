"""arviz_regen: regenerative-sampling convergence diagnostics for partition-valued MCMC.

The Hotelling-RS statistic of Asgharian, Lysy & Partovi Nia (2019) and regenerative (RS)
estimates with standard errors, as ArviZ-style functions returning xarray objects. Importing the
package makes ``az.hotelling_rs`` (and the other public functions) available on the ``arviz``
namespace, next to ``az.rhat`` and ``az.ess``, and the ``.regen`` accessors on xarray objects: at
once when ArviZ and xarray are loaded, else as soon as they are. The functions themselves are
imported on first use.

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
import importlib.util

from .compat.import_hooks import when_imported

#: public name -> the submodule that defines it (loaded on first use: ``import arviz_regen``
#: imports neither ArviZ nor xarray, so ``arviz-regen-summary`` answers its arguments at once)
_API = {
    "coclustering": "estimates.coclustering",
    "credible_ball": "estimates.credible_ball",
    "partition_loss": "base.partition_loss",
    "point_estimate": "estimates.point_estimate",
    "Consensus": "estimates.consensus",
    "binder_loss": "estimates.consensus",
    "consensus": "estimates.consensus",
    "consensus_partition": "estimates.consensus",
    "rs_estimate": "estimates.rs_estimate",
    "top_states": "estimates.rs_estimate",
    "hotelling_rs": "diagnostics.hotelling",
    "chain_agreement": "diagnostics.agreement",
    "partition_traces": "estimates.traces",
    "StopWhenConverged": "diagnostics.online",
    "checkpoint_grid": "diagnostics.online",
    "when_converged": "diagnostics.online",
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
    "SampledHyperparametersWarning": "xr.regeneration",
}

__version__ = "0.1.0"
__all__ = [
    "StopWhenConverged",
    "when_converged",
    "checkpoint_grid",
    "hotelling_rs",
    "chain_agreement",
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
    "partition_loss",
    "regen_summary",
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

#: names added to the ``arviz`` namespace on import (ArviZ has no plugin registry)
ARVIZ_NAMES = [
    "hotelling_rs",
    "chain_agreement",
    "partition_traces",
    "coclustering",
    "rs_estimate",
    "regen_summary",
    "plot_hotelling_rs",
    "plot_coclustering",
    "plot_coclustering_trace",
    "plot_top_states",
]


def __getattr__(name):
    """PEP 562: a public name is imported from its submodule on first use; a submodule name
    imports that submodule."""
    module = _API.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
    if not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


def _register_with_arviz(az):
    for name in ARVIZ_NAMES:
        existing = getattr(az, name, None)
        # never shadow a name ArviZ itself defines
        if existing is None or getattr(existing, "__module__", "").startswith("arviz_regen"):
            setattr(az, name, __getattr__(name))


def _register_accessors(xr):
    importlib.import_module(f"{__name__}.accessor")  # registers `.regen` on xarray's objects


# ArviZ has no plugin registry: the names go onto its namespace, now or when it is imported
# (a broken ArviZ, e.g. by a foreign plotting backend, fails its own import: nothing to extend)
when_imported("arviz", _register_with_arviz)
when_imported("xarray", _register_accessors)
