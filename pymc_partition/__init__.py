"""pymc_partition: Bayesian clustering as a first-class PyMC citizen.

A partition of items is a PyMC variable (:class:`Partition`) with an exchangeable prior; the data
enter through a closed-form conjugate marginal likelihood (:class:`MarginalLikelihood`), so the
model's logp is the exact unnormalized log posterior of the partition.
"""

from . import datasets, state
from .exact import ExactPosterior, exact_posterior
from .empirical_bayes import SpikeSlabFit, compare_with_paper, fit_spike_slab
from .distribution import Partition, PartitionRV
from .families import (
    BetaBernoulli,
    ConjugateFamily,
    DirichletCategorical,
    GammaPoisson,
    NormalInverseGamma,
    NormalInverseWishart,
    SpikeSlabNormal,
)
from .likelihood import MarginalLikelihood
from .model_spec import PartitionSpec, partition_spec
from .priors import (
    DirichletProcess,
    PartitionPrior,
    PitmanYor,
    UniformMultinomialDirichlet,
    UniformPartition,
)
from .state import canonicalize, state_keys
from .step_methods import GibbsPartition, SplitMerge

__version__ = "0.1.0"

__all__ = [
    "Partition",
    "PartitionRV",
    "MarginalLikelihood",
    "ConjugateFamily",
    "SpikeSlabNormal",
    "NormalInverseGamma",
    "NormalInverseWishart",
    "BetaBernoulli",
    "DirichletCategorical",
    "GammaPoisson",
    "PartitionPrior",
    "UniformMultinomialDirichlet",
    "DirichletProcess",
    "PitmanYor",
    "UniformPartition",
    "GibbsPartition",
    "SplitMerge",
    "exact_posterior",
    "ExactPosterior",
    "PartitionSpec",
    "partition_spec",
    "datasets",
    "fit_spike_slab",
    "SpikeSlabFit",
    "compare_with_paper",
    "canonicalize",
    "state_keys",
]
