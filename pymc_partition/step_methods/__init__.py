"""PyMC step methods for Partition variables: collapsed Gibbs and restricted-Gibbs split-merge.

Importing this module appends :class:`GibbsPartition` to ``pymc.step_methods.STEP_METHODS``, so ``pm.sample()``
without ``step=`` picks it for a :class:`~pymc_partition.Partition` variable, and installs the
hooks of :mod:`.pymc_hooks` (generic steps refuse Partitions; PyMC's default convergence checks
skip them).
"""

from pymc.step_methods import STEP_METHODS as _STEP_METHODS  # pm.STEP_METHODS is deprecated in PyMC 6

from . import pymc_hooks as _pymc_hooks
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

if GibbsPartition not in _STEP_METHODS:
    _STEP_METHODS.append(GibbsPartition)

# generic steps refuse Partitions; PyMC's default convergence checks skip them (see pymc_hooks)
_pymc_hooks.install()
