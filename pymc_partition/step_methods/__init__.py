"""PyMC step methods for Partition variables: collapsed Gibbs and restricted-Gibbs split-merge.

Importing this module appends :class:`GibbsPartition` to ``pm.STEP_METHODS``, so ``pm.sample()``
without ``step=`` picks it for a :class:`~pymc_partition.Partition` variable.
"""

import pymc as pm

from .base import PartitionStep, PartitionStepState
from .compile import compile_log_marginal
from .gibbs import GibbsPartition
from .split_merge import PROPOSAL_MERGE, PROPOSAL_NONE, PROPOSAL_SPLIT, SplitMerge

__all__ = [
    "GibbsPartition",
    "SplitMerge",
    "PartitionStep",
    "PartitionStepState",
    "compile_log_marginal",
    "PROPOSAL_NONE",
    "PROPOSAL_SPLIT",
    "PROPOSAL_MERGE",
]

if GibbsPartition not in pm.STEP_METHODS:
    pm.STEP_METHODS.append(GibbsPartition)

# Canonical labels make ``z[0]`` constant (always 0), so the R-hat that ``pm.sample`` computes in
# its default convergence checks divides 0 by 0 for that coordinate and numpy warns from inside
# ArviZ. The NaN itself is harmless (PyMC's check skips it); silence only that warning, only
# where ArviZ's diagnostics raise it.
import warnings as _warnings

_warnings.filterwarnings(
    "ignore",
    message="invalid value encountered in scalar divide",
    category=RuntimeWarning,
    module=r"arviz\.stats\.diagnostics",
)
