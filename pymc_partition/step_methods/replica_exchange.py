"""Replica exchange (parallel tempering) across tempered copies of a Partition's posterior."""

from __future__ import annotations

import numpy as np
from pymc.step_methods.compound import Competence
from pymc.step_methods.state import dataclass_state

from ..engine import PartitionKernel
from ..engine.replica import REPLICA_RESULT_INDEX, ReplicaExchangeKernel, check_ladder, geometric_ladder
from ..model_spec import RandomHyperparameterError, partition_spec
from .base import PartitionStep, PartitionStepState, _check_count
from .sequential_merge_split import SequentialMergeSplit, sams_mix

__all__ = ["ReplicaExchange", "ReplicaExchangeState"]


@dataclass_state
class ReplicaExchangeState(PartitionStepState):
    """Sampling state of a :class:`ReplicaExchange` step: a partition step's, and every copy's partition."""

    replicas: np.ndarray | None  # (R, n) labels, coldest first; None before a chain's first step


class ReplicaExchange(PartitionStep):
    r"""Replica exchange (parallel tempering) of a Partition variable's posterior.

    The step runs ``R`` copies of the partition in one compiled call. Copy ``t`` targets the
    posterior with its marginal likelihood raised to the power :math:`\beta_t`,

    .. math::

        \pi_t(z) \propto \pi(z)\, L(z)^{\beta_t}, \qquad 1 = \beta_0 > \beta_1 > \dots > \beta_{R-1} \ge 0,

    :math:`\pi` the partition prior and :math:`L` the collapsed marginal likelihood of the data.
    The copy at :math:`\beta_0 = 1` is the posterior, and it alone is recorded; hotter copies
    see a flatter likelihood and cross between modes more easily. Each step, every copy makes
    ``n_proposals`` sequentially allocated merge-split proposals and ``n_gibbs_scans`` Gibbs
    sweeps (as :class:`SequentialMergeSplit`, with every predictive weight and acceptance ratio
    for its power), then adjacent temperatures (all even or all odd pairs, chosen at random)
    propose to exchange their partitions, accepted with probability

    .. math::

        \min\Big(1, \exp\{(\beta_t - \beta_{t+1})\,(\log L(z_{t+1}) - \log L(z_t))\}\Big)

    (the prior factors cancel). Each piece leaves the joint target :math:`\prod_t \pi_t(z_t)`
    invariant, so the recorded copy samples the posterior exactly, whatever the ladder; the
    ladder sets how often a partition found by a hot copy reaches the cold one (read
    :attr:`swap_rates`: exchange rates near zero between two temperatures mean the ladder is too
    sparse there).

    The hyperparameters must be fixed numbers: the tempered copies' targets depend on them, and
    a hyperparameter step would see only the recorded copy, so the joint target would not be
    left invariant. A model with random hyperparameters is refused.

    Parameters
    ----------
    vars : list
        A list holding the one ``Partition`` variable to sample.
    n_replicas : int, default 8
        Number of copies ``R`` (>= 1; 1 is :class:`SequentialMergeSplit` with its options).
    beta_min : float, default 0.8
        The hottest copy's power, in (0, 1); the powers are spaced evenly in log between 1 and it.
        The defaults keep neighbours exchanging on data of a few hundred to a few thousand items,
        where neighbours whose powers differ by 10% or more often fail to exchange.
    betas : sequence of float, optional
        The powers themselves (1.0 first, strictly decreasing, >= 0); overrides ``n_replicas`` and
        ``beta_min``.
    n_proposals : int, default 3
        Merge-split proposals per copy and step, >= 0.
    n_gibbs_scans : int, default 1
        Gibbs sweeps per copy and step, >= 0.
    gibbs_probability : float, default 0.0
        Probability of one extra Gibbs sweep per copy and step, in [0, 1].
    split_probability : float, optional
        As for :class:`SequentialMergeSplit` (balanced pairs); None draws the pair uniformly.
    order : {"random", "informed"}, default "random"
        As for :class:`SequentialMergeSplit`.
    thin : int, default 1
        Rounds (every copy's moves, then exchanges) per draw.
    specialize : bool, default True
        Use the family's specialised predictive form (see :class:`GibbsPartition`).
    model : pymc.Model, optional
    rng : RandomGenerator, optional

    Attributes
    ----------
    betas : ndarray
        The likelihood powers, coldest first.
    swap_rates : ndarray
        Acceptance rate of the exchanges between temperatures ``t`` and ``t + 1`` so far.

    Notes
    -----
    A step costs about ``R`` times a :class:`SequentialMergeSplit` step with the same options.
    The compiled step is specialised to the number of copies: the first use of each ``R`` compiles
    it (a few seconds, then cached on disk).

    Sampler statistics per draw (``idata.sample_stats``): those of :class:`SequentialMergeSplit`
    (``partition_logp``, ``n_clusters``, ``proposal`` and ``proposal_accepted`` of the recorded
    copy; ``n_proposals_accepted``, ``n_proposals`` and ``n_gibbs_sweeps`` summed over the
    copies), and

    ``n_swaps_accepted`` (int), ``n_swaps`` (int)
        Exchanges between adjacent temperatures accepted and proposed for the draw.

    In a model with several Partition variables each name ends in ``_<variable name>``.

    References
    ----------
    Geyer, C. J. (1991). Markov chain Monte Carlo maximum likelihood. In Computing Science and
    Statistics: Proceedings of the 23rd Symposium on the Interface, 156-163.

    Earl, D. J. and Deem, M. W. (2005). Parallel tempering: theory, applications, and new
    perspectives. Physical Chemistry Chemical Physics 7, 3910-3916.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partition as pmp
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(-3, 1, 10), rng.normal(3, 1, 10)]        # two groups of 10
    >>> with pm.Model():
    ...     z = pmp.Partition("z", n_items=20, prior=pmp.DirichletProcess(1.0))
    ...     y = pmp.MarginalLikelihood("y", partition=z, observed=x,
    ...                                family=pmp.NormalInverseGamma.from_data(x, n_clusters=2))
    ...     step = pmp.ReplicaExchange([z], n_replicas=3, beta_min=0.2)   # powers 1, 0.45, 0.2
    ...     idata = pm.sample(draws=100, tune=0, chains=2, step=step, random_seed=1,
    ...                       progressbar=False, compute_convergence_checks=False)
    >>> int(idata.sample_stats["n_swaps"].sum()) > 0 and bool((step.swap_rates > 0).all())
    True
    """

    name = "replica_exchange"

    stats_dtypes_shapes = {
        **SequentialMergeSplit.stats_dtypes_shapes,
        "n_swaps_accepted": (np.int64, []),
        "n_swaps": (np.int64, []),
    }
    _result_index = REPLICA_RESULT_INDEX
    _state_class = ReplicaExchangeState

    def __init__(self, vars=None, *, n_replicas=8, beta_min=0.8, betas=None, n_proposals=3, n_gibbs_scans=1,
                 gibbs_probability=0.0, split_probability=None, order="random", thin=1, specialize=True,
                 model=None, rng=None, initial_point=None, compile_kwargs=None, blocked=True):  # fmt: skip
        if betas is None:
            n_replicas = _check_count("n_replicas", n_replicas, minimum=1)
            try:
                beta_min = float(beta_min)
            except (TypeError, ValueError):
                raise TypeError(f"`beta_min` must be a number in (0, 1), got {beta_min!r}.") from None
            if not 0.0 < beta_min < 1.0:
                raise ValueError(f"`beta_min` must lie strictly between 0 and 1, got {beta_min}.")
            betas = geometric_ladder(n_replicas, beta_min)
        self.betas = check_ladder(betas)
        mix = sams_mix(self, n_proposals, n_gibbs_scans, gibbs_probability, split_probability, order, thin)
        self._setup(vars, model, rng, blocked, mix, specialize=specialize, initial_point=initial_point)

    def _build_engine_untraced(self, initial_point, specialize):
        self._reader = None  # fixed hyperparameters only
        try:
            spec = partition_spec(self._model, self._rv)  # raises without a MarginalLikelihood
        except RandomHyperparameterError as err:
            raise NotImplementedError(
                f"ReplicaExchange needs the hyperparameters of {self._rv.name!r} fixed at numbers: "
                "the tempered copies' targets depend on them and a hyperparameter step would see "
                "only the recorded copy, so the chain would not sample the posterior. Fix them "
                "(e.g. at pmp.fit_hyperparameters' estimates) or use SequentialMergeSplit. "
                f"({err})"
            ) from None
        base = PartitionKernel.from_spec(spec, self._mix, specialize=specialize)
        self.engine = ReplicaExchangeKernel(base, self.betas)
        self.specialize = base.specialize
        self._data.mark()

    @property
    def swap_rates(self):
        """Acceptance rate of the exchanges between adjacent temperatures (this step object's, all chains)."""
        return self.engine.swap_rates

    @property
    def replicas(self):
        """Every copy's partition, coldest first (``(R, n)`` labels; None before a chain's first step).

        Set it (with the generator state, through ``sampling_state``) to resume a chain exactly.
        """
        return self.engine.replica_labels()

    @replicas.setter
    def replicas(self, labels):
        self.engine.load_replicas(labels)
        self._chain = None

    def setup_chain(self, rng, tune, draws):
        """Start a chain: its generator, and the tempered copies restarted from its first labels."""
        super().setup_chain(rng, tune, draws)
        self.engine.reset()

    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE  # never chosen by pm.sample() by itself
