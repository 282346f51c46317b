"""Conjugate families: per-item additive statistics and a closed-form cluster log marginal."""

from .base import ConjugateFamily
from .spike_slab import SpikeSlabNormal

__all__ = ["ConjugateFamily", "SpikeSlabNormal"]
