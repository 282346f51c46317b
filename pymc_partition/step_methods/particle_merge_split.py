"""Particle Gibbs split-merge sampler (Bouchard-Côté, Doucet & Roth 2017) for a Partition variable."""

from __future__ import annotations

from pymc.step_methods.compound import Competence

from ..engine.kernels.particle import MAX_PARTICLES
from ..engine.kernels.state import PARTICLE_ROWS
from .base import _check_count, _check_probability
from .sequential_merge_split import SequentialMergeSplit, sams_mix

__all__ = ["ParticleMergeSplit"]


class ParticleMergeSplit(SequentialMergeSplit):
    r"""Particle Gibbs split-merge sampler for a Partition variable: SAMS with ``n_particles`` particles.

    A proposal draws two items ``i, j`` and an allocation order of the other items ``S`` of their
    clusters as :class:`SequentialMergeSplit` does. Instead of one sequential allocation,
    ``n_particles`` allocations of ``S`` run side by side (a particle filter over the items of
    ``S``, in that order): each item joins a side of each particle with its sequential-allocation
    probability, and before each item the particles are resampled by the weight of their last
    step, the normaliser :math:`w = \sum_{c} h(n_c + 1)/h(n_c)\, p(x_k \mid c)` of the two sides'
    weights. The product over items of the particles' mean weight, :math:`\hat Z`, is an
    unbiased estimate of the posterior mass of all the splits of the two clusters' union
    relative to the two anchors alone.

    If ``i`` and ``j`` share a cluster, a particle drawn by its final weight is the proposed
    split, accepted with probability :math:`\min(1, \hat Z c / \pi(z^{merge}) L(z^{merge}))`;
    otherwise the filter runs conditionally on the current split (one particle follows it and is
    never resampled away) and the merge is accepted with probability
    :math:`\min(1, \pi(z^{merge}) L(z^{merge}) / \hat Z c)`, :math:`c` the factors common to
    every split. This is a Metropolis-Hastings move on the space extended by the particles
    (Andrieu, Doucet & Holenstein 2010), exact for every number of particles; with one particle
    it is :class:`SequentialMergeSplit`'s move. With more, the estimate of the splits' mass is
    less noisy, so a split whose items are many and ambiguous (each sequential allocation of it
    improbable) is still accepted when the data favour it, and likewise its merge.

    With probability ``resplit_probability`` a proposal is a re-split instead: ``i`` is drawn
    uniformly and ``j`` among the items outside its cluster with probability proportional to
    :math:`\exp\{\log p(x_j \mid x_i) - \log p(x_j)\}` (relative to the largest, floored at
    :math:`e^{-30}`): a neighbouring cluster, mostly. The conditional filter runs from the current
    split of the two clusters and a particle drawn by its final weight (which includes the
    probability of drawing the same pair) becomes their new split (particle Gibbs, always
    accepted: it leaves invariant the posterior restricted to the splits of the two clusters'
    union that keep ``i`` and ``j`` apart). Many items change sides at once, so a cluster that
    grows or shrinks at a neighbour's expense, which Gibbs sweeps move one item at a time,
    moves in blocks, and a cluster holding two groups can hand one of them to a neighbour.

    With ``recut_clusters`` M > 2 a re-split is a re-cut of M clusters instead
    (:mod:`pymc_partition.engine.kernels.recut`): anchors ``a_0`` uniformly, then each next one
    outside the clusters already chosen with the same weights relative to ``a_0``; the union of
    their clusters is re-cut into M clusters, one per anchor, by a conditional particle filter
    with ancestor sampling (Lindsten, Jordan & Schön 2014: before each item the path that follows
    the current cut may continue from another particle's past, with probability proportional to
    that particle's weight times the posterior of its past joined with the current cut's
    future), and a particle drawn by its final weight, which includes the probability of drawing
    the same anchors from its cut, becomes the new cut: particle Gibbs again, always accepted,
    exact. It keeps the number of clusters; it re-draws how three or more neighbouring clusters
    share their items in one move.

    A merge whose posterior ratio is below :math:`e^{-20}` is screened out before any filter
    runs (delayed acceptance: the ratio is split into an odd function of the posterior ratio,
    flat within :math:`e^{\pm 20}`, and the rest, each accepted in turn), so hopeless merges
    cost one log marginal, as in :class:`SequentialMergeSplit`.

    Each step performs ``n_proposals`` such proposals, then ``n_gibbs_scans`` Gibbs sweeps, plus
    one more with probability ``gibbs_probability``.

    Parameters
    ----------
    vars : list
        A list holding the one ``Partition`` variable to sample.
    n_particles : int, default 8
        Particles per proposal, in [1, 32]. A proposal costs about ``n_particles`` times a
        :class:`SequentialMergeSplit` proposal.
    n_proposals, n_gibbs_scans, gibbs_probability, thin, specialize, model, rng
        As for :class:`SequentialMergeSplit` (defaults 3, 1, 0.0, 1, True).
    split_probability : float or None, default 0.5
        Probability that a proposal is a split, in (0, 1) (balanced pairs, as for
        :class:`SequentialMergeSplit`); None draws the pair uniformly.
    order : {"random", "informed"}, default "informed"
        Allocation order of ``S`` (as for :class:`SequentialMergeSplit`).
    resplit_probability : float, default 0.5
        Probability, in [0, 1], that a proposal is a re-split of two clusters rather than a
        split or merge (1: re-splits only; clusters are then created and emptied by the Gibbs
        sweeps alone).
    recut_clusters : int, default 2
        Clusters re-cut together by a re-split (2: two clusters; more: a re-cut of that many,
        with ``2 * n_particles * recut_clusters`` at most 128).

    Notes
    -----
    Sampler statistics per draw: those of :class:`SequentialMergeSplit`; ``proposal`` is 3
    (``ParticleMergeSplit.PROPOSAL_RESPLIT``) for a re-split, ``proposal_accepted`` then says
    whether the split changed, and re-splits count in ``n_proposals`` and
    ``n_proposals_accepted`` likewise.

    References
    ----------
    Bouchard-Côté, A., Doucet, A. and Roth, A. (2017). Particle Gibbs split-merge sampling for
    Bayesian inference in mixture models. Journal of Machine Learning Research 18(28), 1-39.

    Andrieu, C., Doucet, A. and Holenstein, R. (2010). Particle Markov chain Monte Carlo
    methods. Journal of the Royal Statistical Society B 72(3), 269-342.

    Lindsten, F., Jordan, M. I. and Schön, T. B. (2014). Particle Gibbs with ancestor
    sampling. Journal of Machine Learning Research 15, 2145-2184.

    Christen, J. A. and Fox, C. (2005). Markov chain Monte Carlo using an approximation. Journal
    of Computational and Graphical Statistics 14(4), 795-810.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partition as pmp
    >>> rng = np.random.default_rng(2)
    >>> x = np.r_[rng.normal(-2.5, 1, 15), rng.normal(2.5, 1, 15)]   # two groups of 15
    >>> family = pmp.NormalInverseGamma.from_data(x, n_clusters=2)
    >>> with pm.Model():
    ...     z = pmp.Partition("z", n_items=30, prior=pmp.DirichletProcess(1.0))
    ...     y = pmp.MarginalLikelihood("y", partition=z, observed=x, family=family)
    ...     idata = pm.sample(draws=100, tune=0, chains=2, random_seed=3, progressbar=False,
    ...                       step=pmp.ParticleMergeSplit([z], n_particles=4),
    ...                       compute_convergence_checks=False)
    >>> int(idata.sample_stats["n_proposals_accepted"].sum()) > 0
    True
    """

    name = "particle_merge_split"

    PROPOSAL_RESPLIT = 3

    def __init__(self, vars=None, *, n_particles=8, n_proposals=3, n_gibbs_scans=1, gibbs_probability=0.0,
                 split_probability=0.5, order="informed", resplit_probability=0.5, recut_clusters=2, thin=1,
                 specialize=True, model=None, rng=None, initial_point=None, compile_kwargs=None,
                 blocked=True):  # fmt: skip
        self.n_particles = _check_count("n_particles", n_particles, minimum=1)
        if self.n_particles > MAX_PARTICLES:
            raise ValueError(f"`n_particles` must be at most {MAX_PARTICLES}, got {self.n_particles}.")
        mix = sams_mix(self, n_proposals, n_gibbs_scans, gibbs_probability, split_probability, order, thin)
        self.resplit_probability = _check_probability("resplit_probability", resplit_probability)
        self.recut_clusters = _check_count("recut_clusters", recut_clusters, minimum=2)
        if self.recut_clusters > 2 and 2 * self.n_particles * self.recut_clusters > PARTICLE_ROWS:
            raise ValueError(f"`2 * n_particles * recut_clusters` must be at most {PARTICLE_ROWS}, got "
                             f"{2 * self.n_particles * self.recut_clusters}.")  # fmt: skip
        mix = mix._replace(n_particles=self.n_particles, resplit_probability=self.resplit_probability,
                           recut_clusters=self.recut_clusters)  # fmt: skip
        self._setup(vars, model, rng, blocked, mix, specialize=specialize, initial_point=initial_point)

    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE  # never chosen by pm.sample() by itself
