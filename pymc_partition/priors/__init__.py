"""Exchangeable priors on partitions (see :mod:`.base` for the ``log_g``/``log_h`` tables).

Parameters may be numbers or PyMC variables; the tables are then a pytensor graph of them.
"""

from .base import PartitionPrior, check_n_items, log_stirling_weighted
from .classic import DirichletProcess, PitmanYor, UniformMultinomialDirichlet, UniformPartition
from .mfm import MixtureOfFiniteMixtures

# names used before the priors became a package
_check_n_items = check_n_items
_log_stirling_weighted = log_stirling_weighted

__all__ = [
    "PartitionPrior",
    "UniformMultinomialDirichlet",
    "DirichletProcess",
    "PitmanYor",
    "UniformPartition",
    "MixtureOfFiniteMixtures",
]
