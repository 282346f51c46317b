"""Sequentially allocated merge-split sampler (Dahl & Newcomb 2022) for a Partition variable."""

from __future__ import annotations

from pymc.step_methods.compound import Competence

from ..engine import MoveMix
from ..model_spec import is_partition_rv
from .base import PartitionStep, _check_count, _check_probability
from .split_merge import PROPOSAL_MERGE, PROPOSAL_NONE, PROPOSAL_SPLIT, SplitMerge

__all__ = ["SequentialMergeSplit", "sams_mix"]


def sams_mix(step, n_proposals, n_gibbs_scans, gibbs_probability, split_probability, order, thin):
    """Check a merge-split step's options, set them on ``step`` and return its :class:`MoveMix`.

    The options of :class:`SequentialMergeSplit` (also :class:`~.replica_exchange.ReplicaExchange`'s
    moves of each copy).
    """
    step.n_proposals = _check_count("n_proposals", n_proposals)
    step.n_gibbs_scans = _check_count("n_gibbs_scans", n_gibbs_scans)
    step.gibbs_probability = _check_probability("gibbs_probability", gibbs_probability)
    if split_probability is not None:
        split_probability = _check_probability("split_probability", split_probability)
        if split_probability in (0.0, 1.0):
            raise ValueError(
                f"`split_probability` must lie strictly between 0 and 1 (a move needs its reverse), "
                f"got {split_probability}; None draws the pair uniformly."
            )
    step.split_probability = split_probability
    if order not in ("random", "informed"):
        raise ValueError(f"`order` must be 'random' or 'informed', got {order!r}.")
    step.order = order
    if step.n_proposals == 0 and step.n_gibbs_scans == 0 and step.gibbs_probability == 0:
        raise ValueError(
            f"{type(step).__name__} would never update the partition: n_proposals, "
            "n_gibbs_scans and gibbs_probability are all zero. Set n_proposals >= 1 or "
            "n_gibbs_scans >= 1."
        )
    return MoveMix(n_gibbs=step.n_gibbs_scans, n_split_merge=0, n_scans=0,
                   gibbs_probability=step.gibbs_probability,
                   thin=_check_count("thin", thin, minimum=1), n_sams=step.n_proposals,
                   sams_split_probability=split_probability or 0.0,
                   sams_informed=order == "informed")  # fmt: skip


class SequentialMergeSplit(PartitionStep):
    r"""Sequentially allocated merge-split sampler (SAMS) for a Partition variable.

    A proposal picks two distinct items ``i, j`` uniformly at random and lets ``S`` be the other
    items of their clusters. If ``i`` and ``j`` share a cluster, the proposal splits it: ``i``
    and ``j`` start two clusters and the items of ``S``, in a uniformly random order, join one
    of them in turn, item ``k`` with probability proportional to
    :math:`\exp\{\log h(n_c + 1) - \log h(n_c)\}\, p(x_k \mid \text{items already there})` over
    the two clusters ``c`` (:math:`\log \pi(z) = \log g(C) + \sum_c \log h(n_c)` the exchangeable
    prior). The product :math:`q` of these probabilities enters the Metropolis-Hastings ratio

    .. math::

        a = \min\Big(1, \frac{\pi(z^{split}) L(z^{split})}{\pi(z) L(z)}\,
        \frac{1}{q(z^{split}\mid z, \sigma)}\Big),

    :math:`\sigma` the allocation order. Otherwise the proposal merges the two clusters, accepted
    with :math:`\min(1, \frac{\pi(z^{merge})L(z^{merge})}{\pi(z)L(z)}\, q(z\mid z^{merge},
    \sigma))`, where :math:`q(z \mid z^{merge}, \sigma)` is the probability that allocating
    ``S`` in a fresh random order :math:`\sigma` recreates the current split. The order is drawn
    independently of the state and shared by a move and its reverse, so each proposal is an exact
    Metropolis-Hastings update. Unlike :class:`SplitMerge` (Jain & Neal's restricted Gibbs
    scans) a proposal costs one pass over ``S``, two predictive evaluations per item of ``S``,
    where a Gibbs sweep makes one per item and cluster.

    Two options change how a proposal is drawn, each keeping it exact. ``split_probability``
    balances splits and merges: ``i`` is drawn uniformly, then ``j`` uniformly among the other
    items of ``i``'s cluster with probability ``split_probability`` (a split), else among the
    items outside it (a merge), and the Hastings ratio includes the probability of drawing the
    same pair in the proposed state. (Uniform pairs split with probability about
    :math:`\sum_c (n_c/n)^2`, a few per cent with tens of clusters.) ``order="informed"``
    allocates ``S`` in decreasing order of :math:`|\log p(x_k \mid x_i) - \log p(x_k \mid x_j)|`,
    the items the two anchors tell apart first: a function of the pair and of ``S``, which a
    split and its reverse merge share. A merge is rejected as soon as its acceptance is out of
    reach (the reverse split's probability only decreases as ``S`` is allocated), so hopeless
    merges cost one log marginal.

    Each step performs ``n_proposals`` such proposals, then ``n_gibbs_scans`` full collapsed
    Gibbs sweeps (as :class:`GibbsPartition`), plus one more Gibbs sweep with probability
    ``gibbs_probability``. Every piece leaves the posterior invariant, so any mix is exact.

    Parameters
    ----------
    vars : list
        A list holding the one ``Partition`` variable to sample.
    n_proposals : int, default 3
        Merge-split proposals per step, >= 0.
    n_gibbs_scans : int, default 1
        Full Gibbs sweeps per step, >= 0. The merge-split proposals move whole clusters; the
        Gibbs sweeps move single items between them.
    gibbs_probability : float, default 0.0
        Probability of one extra Gibbs sweep per step, in [0, 1].
    split_probability : float, optional
        Probability that a proposal is a split, in (0, 1) (balanced pairs); None (default)
        draws the pair uniformly, as Dahl & Newcomb.
    order : {"random", "informed"}, default "random"
        Allocation order of ``S``: uniformly random, or informed by the two anchors.
    thin : int, default 1
        Steps per draw (thinning inside the step, as for :class:`SplitMerge`).
    specialize : bool, default True
        Use the family's specialised predictive form (see :class:`GibbsPartition`).
    model : pymc.Model, optional
    rng : RandomGenerator, optional

    Notes
    -----
    A step must update something: ``n_proposals``, ``n_gibbs_scans`` and ``gibbs_probability``
    cannot all be zero. With ``n_gibbs_scans=0`` and ``gibbs_probability=0`` the sampler uses
    merge-split proposals alone, which is irreducible where every partition has positive
    posterior probability (any partition is reached by merging everything, then splitting).

    Sampler statistics per draw (``idata.sample_stats``), as for :class:`SplitMerge`:

    ``partition_logp`` (float), ``n_clusters`` (int)
        As for :class:`GibbsPartition`.
    ``proposal`` (int)
        Kind of the step's last proposal: 0 = none, 1 = split, 2 = merge
        (``SequentialMergeSplit.PROPOSAL_*``).
    ``proposal_accepted`` (bool)
        Whether that proposal was accepted.
    ``n_proposals_accepted`` (int)
        Proposals accepted for the draw (their ratio to ``n_proposals`` is the acceptance rate).
    ``n_proposals`` (int)
        Proposals made for the draw (``thin * n_proposals``, fewer only with one item).
    ``n_gibbs_sweeps`` (int)
        Gibbs sweeps performed for the draw.

    In a model with several Partition variables each name ends in ``_<variable name>``.

    References
    ----------
    Dahl, D. B. (2003). An improved merge-split sampler for conjugate Dirichlet process mixture
    models. Technical report 1086, Department of Statistics, University of Wisconsin.

    Dahl, D. B. and Newcomb, S. (2022). Sequentially allocated merge-split samplers for conjugate
    Bayesian nonparametric models. Journal of Statistical Computation and Simulation 92(7),
    1487-1511.


    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partition as pmp
    >>> x = np.r_[np.zeros(3), np.ones(3) * 4.0] + np.arange(6) * 0.1   # two groups of 3
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", n_items=6, prior=pmp.DirichletProcess(1.0))
    ...     y = pmp.MarginalLikelihood("y", partition=z, observed=x,
    ...                                family=pmp.NormalInverseGamma.from_data(x, n_clusters=2))
    ...     step = pmp.SequentialMergeSplit([z], n_proposals=3, n_gibbs_scans=1)
    ...     idata = pm.sample(draws=200, tune=0, chains=2, step=step, random_seed=1,
    ...                       progressbar=False, compute_convergence_checks=False)
    >>> idata.posterior["z"].shape
    (2, 200, 6)
    """

    name = "sequential_merge_split"

    PROPOSAL_NONE = PROPOSAL_NONE
    PROPOSAL_SPLIT = PROPOSAL_SPLIT
    PROPOSAL_MERGE = PROPOSAL_MERGE

    stats_dtypes_shapes = SplitMerge.stats_dtypes_shapes

    def __init__(self, vars=None, *, n_proposals=3, n_gibbs_scans=1, gibbs_probability=0.0,
                 split_probability=None, order="random", thin=1, specialize=True, model=None,
                 rng=None, initial_point=None, compile_kwargs=None, blocked=True):  # fmt: skip
        mix = sams_mix(self, n_proposals, n_gibbs_scans, gibbs_probability, split_probability, order, thin)
        self._setup(vars, model, rng, blocked, mix, specialize=specialize, initial_point=initial_point)

    @staticmethod
    def competence(var, has_grad):
        if is_partition_rv(var):
            return Competence.PREFERRED
        return Competence.INCOMPATIBLE
