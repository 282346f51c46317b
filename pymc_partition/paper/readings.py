"""The readings of the paper's prior on partitions, and the priors shown beside them.

The paper's text: the number of clusters C is uniform on 1..N and the cluster totals given C
are uniform multinomial-Dirichlet. Its printed formula (C-1)! prod n_c! / (N (N+C-1)!) read
directly as a prior on partitions is :class:`~pymc_partition.UniformMultinomialDirichlet`, which
is not uniform on C (it favours few clusters). :class:`UniformClusterCount` is a reading under
which P(C) = 1/N holds exactly. The notebook's prior-sensitivity section and the main job compare
the exact posterior under each (:func:`prior_readings`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from ..priors import PartitionPrior, _log_stirling_weighted

__all__ = ["UniformClusterCount", "prior_readings", "paper_prior", "n_clusters_pmf", "PAPER_READING"]

#: The label of the reading used as the paper's prior by the main job and the notebook.
PAPER_READING = "printed formula (UniformMultinomialDirichlet)"


class UniformClusterCount(PartitionPrior):
    r"""P(C) = 1/N exactly, uniform over the compositions of N into C positive sizes, and uniform
    over the allocations with those sizes:

    .. math:: \pi(z) \propto C!\,(C-1)!\,(N-C)!\,\prod_c n_c!
    """

    def _unnormalized_tables(self, n_items):
        c = np.arange(n_items + 1)
        log_g = gammaln(c + 1) + gammaln(np.maximum(c, 1)) + gammaln(n_items - c + 1)
        return log_g, gammaln(c + 1)


def prior_readings():
    """``{label: prior}``: the paper's prior first (:data:`PAPER_READING`), then the others."""
    from .. import priors

    return {
        PAPER_READING: priors.UniformMultinomialDirichlet(),
        "uniform on C (UniformClusterCount)": UniformClusterCount(),
        "Dirichlet process, alpha = 1": priors.DirichletProcess(1.0),
    }


def paper_prior():
    """The prior the main job and the notebook use as the paper's."""
    return prior_readings()[PAPER_READING]


def n_clusters_pmf(prior, n_items):
    """Prior probability of each number of clusters, ``P(C = 1), ..., P(C = n_items)``."""
    log_g, log_h = prior.tables(n_items)
    return np.exp(log_g[1:] + _log_stirling_weighted(log_h, n_items)[1:])
