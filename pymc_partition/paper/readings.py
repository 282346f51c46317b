"""The readings of the paper's prior on partitions, and the priors shown beside them.

The paper's text: the number of clusters is uniform on 1..N and the cluster totals given it are
uniform multinomial-Dirichlet. Its printed formula (C-1)! prod n_c! / (N (N+C-1)!) is then the
probability of a *labelled* allocation into C components, some possibly empty; summed over the
labellings of each partition and over C, it is the mixture of finite mixtures with K uniform on
1..N and Dirichlet(1) weights (:class:`~pymc_partition.MixtureOfFiniteMixtures`): the paper's
prior as its text describes it (:data:`PAPER_READING`). Read directly as a prior on partitions,
the printed formula is :class:`~pymc_partition.UniformMultinomialDirichlet`
(:data:`PRINTED_READING`), which favours few clusters. :class:`UniformClusterCount` is a reading
under which the number of non-empty clusters is exactly uniform. The notebook's prior-sensitivity
section and the main job compare the exact posterior under each (:func:`prior_readings`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from ..priors.base import PartitionPrior, log_stirling_weighted

__all__ = [
    "UniformClusterCount",
    "prior_readings",
    "paper_prior",
    "n_clusters_pmf",
    "PAPER_READING",
    "PRINTED_READING",
]

#: The reading the main job and the notebook use as the paper's prior (its text's description).
PAPER_READING = "paper's text: MixtureOfFiniteMixtures (K uniform on 1..N, Dirichlet(1))"

#: The printed formula read directly as a prior on partitions.
PRINTED_READING = "printed formula: UniformMultinomialDirichlet"


class UniformClusterCount(PartitionPrior):
    r"""P(C) = 1/N exactly for the number C of non-empty clusters.

    Uniform over the compositions of N into C positive sizes, and uniform over the allocations with those sizes:

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
        PAPER_READING: priors.MixtureOfFiniteMixtures(k_prior="uniform", gamma=1.0),
        PRINTED_READING: priors.UniformMultinomialDirichlet(),
        "uniform number of clusters: UniformClusterCount": UniformClusterCount(),
        "Dirichlet process, alpha = 1": priors.DirichletProcess(1.0),
    }


def paper_prior():
    """Return the prior the main job and the notebook use as the paper's (:data:`PAPER_READING`)."""
    return prior_readings()[PAPER_READING]


def n_clusters_pmf(prior, n_items):
    """Prior probability of each number of non-empty clusters, ``P(C = 1), ..., P(C = n_items)``."""
    log_g, log_h = prior.tables(n_items)
    return np.exp(log_g[1:] + log_stirling_weighted(log_h, n_items)[1:])
