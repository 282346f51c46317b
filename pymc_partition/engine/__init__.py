"""The partition samplers' engine: compiled kernels and the object that drives them, no PyMC.

:mod:`.kernel`
    :class:`PartitionKernel`, built from a :class:`~pymc_partition.spec.PartitionSpec` and a
    :class:`MoveMix`: ``init(labels) -> state``, ``step(state, rng) -> (state, result)``,
    ``refresh(numbers)``. The PyMC step methods (:mod:`pymc_partition.step_methods`) adapt it
    to PyMC; tests and benchmarks drive it directly.
:mod:`.replica`
    :class:`ReplicaExchangeKernel`: a :class:`PartitionKernel` and tempered copies of its
    posterior, stepped together (replica exchange).
:mod:`.compile`
    The family's pytensor log marginal compiled for the kernels (numba backend).
:mod:`.kernels`
    The numba kernels, one module per concept (cluster state, slots, Gibbs sweep, split-merge
    move, one step).

Nothing here imports PyMC (a test checks it).
"""

from .compile import compile_log_marginal
from .kernel import PartitionKernel
from .kernels import MoveMix, StepResult
from .replica import ReplicaExchangeKernel, ReplicaStepResult

__all__ = [
    "PartitionKernel",
    "ReplicaExchangeKernel",
    "ReplicaStepResult",
    "MoveMix",
    "StepResult",
    "compile_log_marginal",
]
