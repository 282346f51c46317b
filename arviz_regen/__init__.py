"""arviz_regen: regenerative-sampling convergence diagnostics for partition-valued MCMC.

The Hotelling-RS statistic of Asgharian, Lysy & Partovi Nia (2019) and regenerative (RS)
estimates with standard errors, as ArviZ-style functions returning xarray objects. Importing the
package makes ``az.hotelling_rs`` (and the other public functions) available on the ``arviz``
namespace, next to ``az.rhat`` and ``az.ess``.
"""

from __future__ import annotations

from .agreement import chain_agreement
from .coclustering import coclustering
from .credible_ball import credible_ball
from .partition_loss import partition_loss
from .point_estimate import point_estimate
from .consensus import Consensus, binder_loss, consensus, consensus_partition
from .estimates import rs_estimate, top_states
from .hotelling import hotelling_rs
from .online import StopWhenConverged, checkpoint_grid, when_converged
from .plots import (
    plot_coclustering,
    plot_coclustering_trace,
    plot_hotelling_rs,
    plot_point_estimate,
    plot_top_states,
)
from .summary import regen_summary
from .tours import rs_mean_cov, rs_mean_se
from .traces import partition_traces
from .batch_means import batch_means
from .regeneration import NonRecurrenceWarning
from . import accessor as _accessor  # noqa: F401  (registers the xarray `.regen` accessors)

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


def _register_with_arviz():
    try:
        import arviz as az
    except Exception:  # ArviZ missing or broken (e.g. by a foreign plotting backend): nothing to extend
        return

    for name in ARVIZ_NAMES:
        existing = getattr(az, name, None)
        # never shadow a name ArviZ itself defines
        if existing is None or getattr(existing, "__module__", "").startswith("arviz_regen"):
            setattr(az, name, globals()[name])


_register_with_arviz()
