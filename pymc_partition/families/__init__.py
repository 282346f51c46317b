"""Conjugate families: per-item additive statistics and a closed-form cluster log marginal."""

from .base import ConjugateFamily
from .beta_bernoulli import BetaBernoulli
from .dirichlet_categorical import DirichletCategorical
from .gamma_poisson import GammaPoisson
from .normal_inverse_gamma import NormalInverseGamma
from .normal_inverse_wishart import NormalInverseWishart
from .spike_slab import SpikeSlabNormal

__all__ = [
    "ConjugateFamily",
    "SpikeSlabNormal",
    "NormalInverseGamma",
    "NormalInverseWishart",
    "BetaBernoulli",
    "DirichletCategorical",
    "GammaPoisson",
]
