"""arviz_regen: regenerative-sampling convergence diagnostics for partition-valued MCMC.

The Hotelling-RS statistic of Asgharian, Lysy & Partovi Nia (2019) and regenerative (RS)
estimates with standard errors, as ArviZ-style functions returning xarray objects. Importing the
package makes ``az.hotelling_rs`` (and the other public functions) available on the ``arviz``
namespace, next to ``az.rhat`` and ``az.ess``, and the ``.regen`` accessors on xarray objects: at
once when ArviZ and xarray are loaded, else as soon as they are. The functions themselves are
imported on first use.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

from ._after_import import when_imported

#: public name -> the submodule that defines it (loaded on first use: ``import arviz_regen``
#: imports neither ArviZ nor xarray, so ``arviz-regen-summary`` answers its arguments at once)
_API = {
    "coclustering": "coclustering",
    "credible_ball": "credible_ball",
    "partition_loss": "partition_loss",
    "point_estimate": "point_estimate",
    "Consensus": "consensus",
    "binder_loss": "consensus",
    "consensus": "consensus",
    "consensus_partition": "consensus",
    "rs_estimate": "estimates",
    "top_states": "estimates",
    "hotelling_rs": "hotelling",
    "chain_agreement": "agreement",
    "conditional_check": "diagnostics.conditional",
    "partition_traces": "traces",
    "StopWhenConverged": "online",
    "checkpoint_grid": "online",
    "when_converged": "online",
    "plot_coclustering": "plots",
    "plot_coclustering_trace": "plots",
    "plot_hotelling_rs": "plots",
    "plot_point_estimate": "plots",
    "plot_top_states": "plots",
    "regen_summary": "summary",
    "rs_mean_cov": "tours",
    "rs_mean_se": "tours",
    "batch_means": "batch_means",
    "NonRecurrenceWarning": "regeneration",
    "SampledHyperparametersWarning": "regeneration",
}

__version__ = "0.1.0"
__all__ = [
    "StopWhenConverged",
    "when_converged",
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
    "conditional_check",
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


class _Package(types.ModuleType):
    """The package's module type: after importing a submodule, the import system binds it on
    the package (``arviz_regen.consensus = <module>``); where a public function has its
    submodule's name (``consensus``, ``coclustering``, ``point_estimate``, ...), the name stays
    the function's, as with eager ``from .consensus import consensus``."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _API.get(name) == name:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


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
