"""The step of the parameters that hang off a partition.

PyMC's view of a :class:`~pymc_partition.engine.hyper.HyperparameterKernel`.
"""

from __future__ import annotations

import copy

import numpy as np
import pymc as pm
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from .._pytensor_modes import untraced
from .._symbolic import hyperparameter_owners, hyperparameter_role
from ..engine.compile import compile_density
from ..engine.hyper import HyperparameterKernel
from ..engine.kernels.rng import rng_state
from ..model_spec import hyperparameter_block

__all__ = ["PartitionHyperparameters", "PartitionHyperparametersState"]


@dataclass_state
class PartitionHyperparametersState(StepMethodState):
    """Mutable sampling state of :class:`PartitionHyperparameters`."""

    widths: np.ndarray
    move_sums: np.ndarray
    move_counts: np.ndarray
    rng_state: np.ndarray
    tune: bool


class PartitionHyperparameters(BlockedStep):
    r"""Exact updates, given the partition, of the parameters that hang off it.

    A partition's prior parameters (DP ``alpha``, Pitman-Yor ``alpha`` and ``d``, the mixture of
    finite mixtures' ``gamma`` and ``k_param``) depend on the data only through the number of
    clusters and their sizes, and its family's hyperparameters (those outside the per-item
    statistics, e.g. ``mu0``, ``kappa0``, ``sigma2_theta``, ``p``) only through the clusters'
    summed statistics. Their conditional given the partition is therefore an ``O(C)`` log density:
    the model's own terms in them (priors, hyperpriors, PyMC's Jacobians, read from the model
    graph and compiled once with pytensor's numba backend) plus the partition's prior term and
    likelihood written on the clusters. Each step, in one compiled call:

    - a DP concentration with a constant ``pm.Gamma(a, b)`` prior and no other role in the model
      is drawn by Escobar & West's (1995) auxiliary-variable Gibbs update;
    - every other coordinate (scalars and each entry of a vector, on PyMC's transformed scale)
      by univariate slice sampling with stepping out and shrinkage (Neal 2003), its width adapted
      during tuning (twice the mean absolute move) and fixed afterwards.

    ``pm.sample()`` assigns this step, ahead of NUTS, to every continuous variable tagged as such
    a parameter when the model was built (and NUTS to every other continuous variable); pass
    ``pm.NUTS([...])`` in ``step=`` to sample them with NUTS instead. Variables that scale the
    per-item statistics (``SpikeSlabNormal``'s ``mu``, ``sigma2``, ``sigma2_eta``) stay with NUTS:
    their conditional needs every item.

    Parameters
    ----------
    vars : list
        Continuous variables (random or value variables) of one partition's prior or family.
    width : float, default 1.0
        Initial slice width on the transformed scale.
    model : pymc.Model, optional
    rng : RandomGenerator, optional

    Notes
    -----
    Sampler statistics per draw: ``hyper_logp``, the conditional log density (up to a constant)
    at the new values (NaN when every variable is drawn by Escobar-West), and ``hyper_n_evals``,
    how many times the draw evaluated it.
    """

    name = "partition_hyperparameters"
    default_blocked = True
    _state_class = PartitionHyperparametersState

    stats_dtypes_shapes = {
        "hyper_logp": (np.float64, []),
        "hyper_n_evals": (np.int64, []),
    }

    def __init__(self, vars=None, *, width=1.0, model=None, rng=None, initial_point=None,
                 compile_kwargs=None, blocked=True):  # fmt: skip
        model = pm.modelcontext(model)
        if vars is None:
            raise TypeError("PartitionHyperparameters needs the variables to sample.")
        vars = get_value_vars_from_user_vars(vars if isinstance(vars, list | tuple) else [vars], model)
        bad = [v.name for v in vars if not str(v.dtype).startswith("float")]
        if bad:
            raise TypeError(f"PartitionHyperparameters samples continuous variables; {bad} are not.")
        self._model, self._width = model, width
        self._build(vars, initial_point)
        self.vars = vars
        self.blocked = blocked
        self._start_stream(get_random_generator(rng))
        self.tune = True

    def _build(self, vars, initial_point=None):
        """Read the block out of the model at its current data and compile its kernel."""
        model = self._model
        start = initial_point if initial_point is not None else model.initial_point()
        with untraced():  # internal graphs: no creation stacks
            self.block = hyperparameter_block(model, vars, start)
        block = self.block
        density = (compile_density(block.density_jit, block.density_clusters, block.density_function.maker.fgraph)
                   if block.slice_index else None)  # fmt: skip
        self.kernel = HyperparameterKernel(
            density, self.block.item_stats, len(self.block.theta(start)),
            slice_index=self.block.slice_index, escobar_west=self.block.escobar_west, width=self._width,
        )  # fmt: skip
        self._initial_widths = self.kernel.widths.copy()
        self._stats_values = None
        self.block.data.mark()

    def refresh_data(self):
        """Rebuild the block if ``pm.set_data`` changed the data since it was built.

        Called when a chain starts, and before the step is sent to worker processes: a step reused for another
        ``pm.sample`` samples the model's current data. Returns whether it rebuilt.
        """
        if self._model is None or not self.block.data.changed():
            return False
        self._build(self.vars)
        return True

    # the kernel's arrays, as the sampling state sees them (written in place: the kernel keeps them)
    widths = property(lambda self: self.kernel.widths,
                      lambda self, v: self.kernel.widths.__setitem__(slice(None), v))  # fmt: skip
    move_sums = property(lambda self: self.kernel.move_sums,
                         lambda self, v: self.kernel.move_sums.__setitem__(slice(None), v))  # fmt: skip
    move_counts = property(lambda self: self.kernel.move_counts,
                           lambda self, v: self.kernel.move_counts.__setitem__(slice(None), v))  # fmt: skip

    # ------------------------------------------------------------------ pickling (cores > 1)
    def __getstate__(self):
        self.refresh_data()  # pickled for worker processes: their copy holds the current numbers
        state = self.__dict__.copy()
        state["_model"] = None  # the workers never see pm.set_data: nothing to watch there
        block = state["block"] = copy.copy(self.block)
        block.density_jit = None  # numba code is process-local; the pytensor function is not
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.block.slice_index:
            self.block.density_jit = self.block.density_function.vm.jit_fn
            clusters = getattr(self.block, "density_clusters", None)  # (pickled before it existed: None)
            fgraph = self.block.density_function.maker.fgraph
            self.kernel.set_density(compile_density(self.block.density_jit, clusters, fgraph))

    # ------------------------------------------------------------------ PyMC protocol
    def setup_chain(self, rng, tune, draws):
        """Start a chain (PyMC >= 6.3): its generator, fresh widths, tuning if ``tune``, the model's current data."""
        self.refresh_data()
        self._start_stream(get_random_generator(rng, copy=False))
        self.reset_tuning()
        self.tune = bool(tune)

    def set_rng(self, rng):
        """Start a chain (PyMC < 6.3)."""
        self.refresh_data()
        self._start_stream(get_random_generator(rng, copy=False))

    def _start_stream(self, rng):
        """Take the chain's generator and seed the kernel's generator state from it.

        The kernel advances that state in place; part of the sampling state.
        """
        self.rng = rng
        self.rng_state = rng_state(rng)

    def reset_tuning(self):
        """Widths back to their initial values, tuning on."""
        self.kernel.widths[:] = self._initial_widths
        self.kernel.reset_tuning()
        self.tune = True

    def stop_tuning(self):
        self.tune = False

    def step(self, point):
        block = self.block
        if block.stats_names:
            values = [np.asarray(point[n]) for n in block.stats_names]
            if self._stats_values is None or not all(
                    np.array_equal(a, b) for a, b in zip(values, self._stats_values)):  # fmt: skip
                self.kernel.set_item_stats(block.item_stats_at(point))
                self._stats_values = [v.copy() for v in values]
        theta = block.theta(point)
        labels = np.ascontiguousarray(point[block.partition], dtype=np.int64)
        theta, lp, n = self.kernel.step(labels, theta, block.rest(point), self.rng_state, self.tune)
        if block.slice_index and not lp > -np.inf:
            at = {k: np.asarray(point[k]).tolist() for k in block.names + block.rest_names}
            raise ValueError(
                f"The conditional log density of {block.names} given the partition is {lp} at "
                f"{at} (transformed values): start from a point inside the parameters' domain "
                "(initvals=), or give them priors that keep them inside."
            )
        return block.unravel(theta, point), [{"hyper_logp": lp, "hyper_n_evals": n}]

    @staticmethod
    def competence(var, has_grad):
        # a variable shared by several partitions is left to NUTS: its conditional needs them all
        if (hyperparameter_role(var) == "cluster" and str(var.dtype).startswith("float")
                and hyperparameter_owners(var) <= 1):  # fmt: skip
            return Competence.IDEAL
        return Competence.INCOMPATIBLE
