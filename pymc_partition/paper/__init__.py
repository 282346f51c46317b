"""The reproduction of the paper's illustration, in one place.

Asgharian, Lysy & Partovi Nia (2019), *A Convergence Diagnostic for Bayesian Clustering*,
section 4 (the Arabidopsis data):

- :mod:`~pymc_partition.paper.constants`: every number the paper prints, and our run settings;
- :mod:`~pymc_partition.paper.readings`: the readings of the paper's prior on partitions;
- :mod:`~pymc_partition.paper.workflow`: data, model, exact posteriors, both samplers, diagnostics;
- :mod:`~pymc_partition.paper.comparison`: paper-versus-ours tables;
- :mod:`~pymc_partition.paper.figures`: Figures 1 and 2, drawn with :mod:`arviz_regen.plots`;
- :mod:`~pymc_partition.paper.job` and :mod:`~pymc_partition.paper.cli`: the main job,
  ``pymc-partition-demo``.

The library modules of :mod:`pymc_partition` hold no number of the paper. Importing this package
is cheap (its constants); the other modules are imported on use.
"""

from . import constants

__all__ = ["constants"]
