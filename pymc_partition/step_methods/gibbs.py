"""Collapsed Gibbs sampler for a Partition variable."""

from __future__ import annotations

import numpy as np
from pymc.step_methods.compound import Competence

from ..engine import MoveMix
from ..model_spec import is_partition_rv
from .base import PartitionStep, _check_count

__all__ = ["GibbsPartition"]


class GibbsPartition(PartitionStep):
    r"""Collapsed Gibbs sampler for a :class:`~pymc_partition.Partition` variable.

    Each step performs ``n_sweeps`` sweeps; a sweep visits every item once, in a fresh random
    order, and draws its cluster from the full conditional over all existing clusters and one
    new cluster. (Up to 64 items the order is a uniformly random permutation; beyond, the blocks
    of 64 consecutive items come in a random order and the items of a block one after the other,
    which keeps memory accesses sequential: ``kernels.visiting_order``.) With the other items'
    clusters of sizes :math:`n_c` (item removed), summed statistics :math:`S_c` and :math:`C`
    clusters, the conditional is proportional to

    .. math::

        \exp\{\log h(n_c+1) - \log h(n_c) + \log m(S_c + x_i) - \log m(S_c)\}
        \quad\text{(existing cluster } c\text{)},\qquad
        \exp\{\log g(C+1) - \log g(C) + \log h(1) + \log m(x_i)\}
        \quad\text{(new cluster)},

    with :math:`\log \pi(z) = \log g(C) + \sum_c \log h(n_c)` the exchangeable prior and
    :math:`\log m` the family's cluster log marginal likelihood. The sweep runs in compiled numba
    code. The difference :math:`\log m(S_c + x_i) - \log m(S_c)` comes from the family's
    predictive form (:meth:`~pymc_partition.ConjugateFamily.predictive_form`): per-cluster
    quantities cached and updated as items move, constants folded, count-only terms tabulated
    (and, for ``NormalInverseWishart``, a Cholesky factor updated by rank one), so a candidate
    costs a few operations per variable; families without one evaluate their pytensor graph,
    compiled with pytensor's numba backend, per candidate. Either way one item costs
    :math:`O(C d)`.

    Parameters
    ----------
    vars : list
        A list holding the one ``Partition`` variable to sample (random or value variable).
    n_sweeps : int, default 1
        Gibbs sweeps per step, at least 1.
    thin : int, default 1
        Steps per draw (thinning inside the step): each draw is the state after ``thin`` steps,
        i.e. ``thin * n_sweeps`` sweeps. PyMC's per-draw cost (larger through the pipe with
        ``cores > 1`` than in one process) is paid once per draw, so thinning inside the step
        amortises it when a sweep is cheap.
    specialize : bool, default True
        Use the family's specialised predictive form
        (:meth:`~pymc_partition.ConjugateFamily.predictive_form`), checked against the family's
        pytensor graph on the model's data when the step is built; ``False`` evaluates the
        compiled graph for every candidate (slower, same chain).
    model : pymc.Model, optional
    rng : RandomGenerator, optional
        Replaced per chain by ``pm.sample`` (``random_seed``).

    Notes
    -----
    Sampler statistics per draw (``idata.sample_stats``):

    ``partition_logp`` (float)
        Exact unnormalized log posterior of the state after the step: log prior plus log
        marginal likelihood, equal to ``model.compile_logp()`` there (recomputed from scratch
        at the end of each step). When the prior or the family has random hyperparameters
        (sampled by another step, e.g. NUTS), it is the log posterior of the partition *given*
        the hyperparameters of that draw, read from the point at every step: then it is not a
        function of the partition alone, and ``az.hotelling_rs`` refuses such draws.
    ``n_clusters`` (int)
        Number of clusters of the state.
    ``n_gibbs_sweeps`` (int)
        Gibbs sweeps performed for the draw (``thin * n_sweeps``).

    In a model with several Partition variables each name ends in ``_<variable name>``
    (``partition_logp_z2``), one set per partition.

    The drawn labels are canonical (restricted growth strings). ``GibbsPartition`` is the step
    ``pm.sample()`` picks for a Partition variable when no ``step=`` is given.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partition as pmp
    >>> x = np.r_[np.zeros(3), np.ones(3) * 4.0] + np.arange(6) * 0.1   # two groups of 3
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", n_items=6, prior=pmp.DirichletProcess(1.0))
    ...     y = pmp.MarginalLikelihood("y", partition=z, observed=x,
    ...                                family=pmp.NormalInverseGamma.from_data(x, n_clusters=2))
    ...     idata = pm.sample(draws=200, tune=0, chains=2, step=pmp.GibbsPartition([z]),
    ...                       random_seed=1, progressbar=False, compute_convergence_checks=False)
    >>> idata.posterior["z"].shape                   # (chain, draw, item): canonical labels
    (2, 200, 6)
    >>> int(idata.sample_stats["n_clusters"].median())
    2

    Real runs are longer (thousands of draws, several chains): let
    :func:`arviz_regen.regen_summary` say whether they were long enough.
    """

    name = "gibbs_partition"

    stats_dtypes_shapes = {
        "partition_logp": (np.float64, []),
        "n_clusters": (np.int64, []),
        "n_gibbs_sweeps": (np.int64, []),
    }

    def __init__(
        self,
        vars=None,
        *,
        n_sweeps=1,
        thin=1,
        specialize=True,
        model=None,
        rng=None,
        initial_point=None,
        compile_kwargs=None,
        blocked=True,
    ):
        self.n_sweeps = _check_count("n_sweeps", n_sweeps, minimum=1)
        mix = MoveMix(n_gibbs=self.n_sweeps, n_split_merge=0, n_scans=0, gibbs_probability=0.0,
                      thin=_check_count("thin", thin, minimum=1))  # fmt: skip
        self._setup(vars, model, rng, blocked, mix, specialize=specialize, initial_point=initial_point)

    @staticmethod
    def competence(var, has_grad):
        if is_partition_rv(var):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE
