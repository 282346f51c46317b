"""pymc_partition: Bayesian clustering as a first-class PyMC citizen.

A partition of items is a PyMC variable (:class:`Partition`) with an exchangeable prior; the data
enter through a closed-form conjugate marginal likelihood (:class:`MarginalLikelihood`), so the
model's logp is the exact unnormalized log posterior of the partition.

``import pymc_partition`` is light (numpy and :mod:`pymc_partition.datasets` only): the names below
are loaded on first use, all at once, as an eager import would (so the PyMC hooks, among them
``GibbsPartition`` in ``pymc.step_methods.STEP_METHODS``, and the logprob registrations are in
place as soon as any of them is touched). That keeps
``pymc-partition-demo --help`` and its argument errors fast: they never import PyMC.
"""

import importlib
import importlib.util

from . import datasets

__version__ = "0.1.0"

_STATE = {"loading": False, "loaded": False}


def _import_all():
    """Import the public API (the names of ``__all__``) into the package's namespace."""
    from . import state
    from .exact import ExactPosterior, exact_posterior
    from .hyperparameter_fit import HyperparameterFit, fit_hyperparameters
    from .identifiability import IdentifiabilityWarning, UnidentifiedHyperparametersError
    from .log_likelihood import compute_log_likelihood
    from .conditional_check import compute_conditional_checks
    from .empirical_bayes import SpikeSlabFit, fit_spike_slab
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
        MixtureOfFiniteMixtures,
        PartitionPrior,
        PitmanYor,
        UniformMultinomialDirichlet,
        UniformPartition,
    )
    from .state import canonicalize, state_keys
    from .step_methods import (
        GibbsPartition,
        ParticleMergeSplit,
        PartitionHyperparameters,
        ReplicaExchange,
        SequentialMergeSplit,
        SplitMerge,
    )

    globals().update({k: v for k, v in locals().items() if not k.startswith("_")})


def __getattr__(name):
    """PEP 562: the first use of a public name loads the whole API, once.

    A submodule name imports that submodule (``from . import _exact_kernels`` inside the package, ``pmp.exact``).
    """
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in __all__ and not _STATE["loaded"] and not _STATE["loading"]:
        _STATE["loading"] = True
        try:
            _import_all()
            _STATE["loaded"] = True
        finally:
            _STATE["loading"] = False
        return globals()[name]
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


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
    "MixtureOfFiniteMixtures",
    "GibbsPartition",
    "SplitMerge",
    "SequentialMergeSplit",
    "ParticleMergeSplit",
    "ReplicaExchange",
    "PartitionHyperparameters",
    "exact_posterior",
    "compute_log_likelihood",
    "compute_conditional_checks",
    "fit_hyperparameters",
    "HyperparameterFit",
    "UnidentifiedHyperparametersError",
    "IdentifiabilityWarning",
    "ExactPosterior",
    "PartitionSpec",
    "partition_spec",
    "datasets",
    "fit_spike_slab",
    "SpikeSlabFit",
    "canonicalize",
    "state_keys",
]
