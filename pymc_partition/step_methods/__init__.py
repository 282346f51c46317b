"""PyMC step methods for Partition variables: collapsed Gibbs, three merge-split samplers, replica exchange.

Each is a thin PyMC adapter (:mod:`.base`) around the PyMC-free sampling engine
(:mod:`pymc_partition.engine`). Importing this module installs the PyMC hooks of
:mod:`pymc_partition.compat.pymc`: :class:`GibbsPartition` joins ``pymc.step_methods.STEP_METHODS``, so
``pm.sample()`` without ``step=`` picks it for a :class:`~pymc_partition.Partition` variable;
generic steps refuse Partitions; PyMC's default convergence checks skip them.
"""

from ..engine import compile_log_marginal
from .base import PartitionStep, PartitionStepState
from .gibbs import GibbsPartition
from .hyper import PartitionHyperparameters, PartitionHyperparametersState
from .particle_merge_split import ParticleMergeSplit
from .replica_exchange import ReplicaExchange, ReplicaExchangeState
from .sequential_merge_split import SequentialMergeSplit
from .split_merge import PROPOSAL_MERGE, PROPOSAL_NONE, PROPOSAL_SPLIT, SplitMerge

__all__ = [
    "GibbsPartition",
    "PartitionHyperparameters",
    "PartitionHyperparametersState",
    "SplitMerge",
    "SequentialMergeSplit",
    "ParticleMergeSplit",
    "ReplicaExchange",
    "ReplicaExchangeState",
    "PartitionStep",
    "PartitionStepState",
    "compile_log_marginal",
    "PROPOSAL_NONE",
    "PROPOSAL_SPLIT",
    "PROPOSAL_MERGE",
]

from ..compat import pymc as _pymc_compat  # noqa: E402  (after the steps it registers)

_pymc_compat.install()
