"""The partition step methods' shared PyMC adapter around the engine.

A step reads the model once (:mod:`pymc_partition.model_spec`), builds a
:class:`~pymc_partition.engine.PartitionKernel` from the spec and its move mix, and then speaks
PyMC: point to labels and back, stats named after the variable, random numbers from the
generator PyMC gives each chain (which seeds the engine's generator state), competence, progress
bar. Everything compiled lives in the engine; the steps only translate.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from .._pytensor_modes import untraced
from ..engine import PartitionKernel
from ..engine.kernels import STEP_RESULT_INDEX
from ..engine.kernels.rng import rng_state
from ..model_spec import (
    DataWatch,
    HyperparameterReader,
    RandomHyperparameterError,
    find_partition_vars,
    initial_values,
    is_partition_rv,
    partition_graphs,
    partition_spec,
)
from . import progress

__all__ = ["PartitionStep", "PartitionStepState", "is_partition_rv"]


@dataclass_state
class PartitionStepState(StepMethodState):
    """Mutable sampling state of a partition step (reset between sequential chains)."""

    n_steps: int
    rng_state: np.ndarray  # the engine's generator state (uint64[4]), seeded from ``rng``, advanced by each step


def _check_count(name, value, minimum=0):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{name}` must be an integer, got {value!r}.")
    if value < minimum:
        raise ValueError(f"`{name}` must be at least {minimum}, got {value}.")
    return int(value)


def _check_probability(name, value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a number in [0, 1], got {value!r}.") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"`{name}` must lie in [0, 1], got {value}.")
    return value


class PartitionStep(BlockedStep):
    """Base class: PyMC's view of a :class:`~pymc_partition.engine.PartitionKernel`.

    It samples one :class:`~pymc_partition.Partition` variable.

    Subclasses set :attr:`name` and :attr:`stats_dtypes_shapes` (whose keys are fields of
    :class:`~pymc_partition.engine.StepResult`) and pass their move mix
    (:class:`~pymc_partition.engine.MoveMix`) to :meth:`_setup`.

    In a model with several Partition variables every stat name gets the variable's name as a
    suffix (``partition_logp_z2``): PyMC would otherwise stack the same-named stats of the steps
    into one variable with an extra dimension.
    """

    name = "partition_step"
    default_blocked = False  # several partitions: PyMC builds one step per partition
    default_tune_steps = 0  # nothing to tune (PyMC >= 6: pm.sample() then runs no tuning steps)
    _state_class = PartitionStepState
    _result_index = STEP_RESULT_INDEX  # where the engine's result holds each stat

    stats_dtypes_shapes = {
        "partition_logp": (np.float64, []),
        "n_clusters": (np.int64, []),
    }

    def _setup(self, vars, model, rng, blocked, mix, specialize=True, initial_point=None):
        model = pm.modelcontext(model)
        rv = self._partition_rv(vars, model)
        self._model, self._rv, self._mix = model, rv, mix
        # the pm.Data the numbers come from: a reused step rebuilds them when pm.set_data changed them
        self._data = DataWatch(partition_graphs(model, rv))
        self._build_engine(initial_point, specialize)
        self.vars = [model.rvs_to_values[rv]]
        self.blocked = blocked
        self.thin = mix.thin
        self.n_items = self.engine.n_items
        self.rng = get_random_generator(rng)
        self.rng_state = rng_state(self.rng)
        self.n_steps = 0
        self.tune = False
        self._value_name = self.vars[0].name
        self._rv_name = rv.name
        self._chain = None  # the engine's last state (labels): reused when PyMC passes it back
        # several partitions: one set of stats per variable, suffixed with its name
        self._stat_suffix = f"_{rv.name}" if len(find_partition_vars(model)) > 1 else ""
        self._stat_names = {k: k + self._stat_suffix for k in type(self).stats_dtypes_shapes}
        self._stat_index = tuple(
            (name, self._result_index[field]) for field, name in self._stat_names.items()
        )  # where each stat sits in the engine's result, looked up by name once
        self.stats_dtypes_shapes = {self._stat_names[k]: v for k, v in type(self).stats_dtypes_shapes.items()}
        self.stats_dtypes = [{k: dtype for k, (dtype, _) in self.stats_dtypes_shapes.items()}]

    def _build_engine(self, initial_point, specialize):
        """Read the model's current numbers and compile the engine on them."""
        with untraced():  # internal graphs: no creation stacks
            self._build_engine_untraced(initial_point, specialize)

    def _build_engine_untraced(self, initial_point, specialize):
        model, rv = self._model, self._rv
        self._reader = None
        try:
            spec = partition_spec(model, rv)  # raises without a MarginalLikelihood
        except RandomHyperparameterError:
            # random hyperparameters: start from the initial point, read them at every step
            self._reader = HyperparameterReader(model, rv)
            start = initial_point if initial_point is not None else initial_values(model, self._reader.names)
            spec = self._reader.spec(model, rv, start)  # the reader's call: nothing more compiled
        self.engine = PartitionKernel.from_spec(spec, self._mix, specialize=specialize,
                                                shared_reference=self._reader is not None)  # fmt: skip
        if self._reader is not None and not self.engine.refreshable:
            raise NotImplementedError(
                f"{type(self).__name__} updates random hyperparameters through the family's "
                f"specialised predictive form, which {type(spec.family).__name__} lacks for these "
                "data (e.g. replicate rows); fix the hyperparameters at numbers."
            )
        self.specialize = self.engine.specialize
        self._data.mark()

    def refresh_data(self):
        """Rebuild the engine if ``pm.set_data`` changed the data since it was built.

        Called when a chain starts, and before the step is sent to worker processes: a step reused for another
        ``pm.sample`` samples the model's current data. Returns whether it rebuilt.
        """
        if self._model is None or not self._data.changed():
            return False
        self._chain = None
        self._build_engine(None, self.specialize)
        return True

    def __getstate__(self):
        self.refresh_data()  # pickled for worker processes: their copy holds the current numbers
        state = self.__dict__.copy()
        state["_model"] = None  # the workers never see pm.set_data: nothing to watch there
        return state

    def _partition_rv(self, vars, model):
        name = type(self).__name__
        if vars is None:
            raise TypeError(f"{name} needs the Partition variable, e.g. {name}([z]).")
        vars = vars if isinstance(vars, (list, tuple)) else [vars]
        if len(vars) != 1:
            raise ValueError(
                f"{name} samples exactly one pmp.Partition variable; got {len(vars)} variables. "
                "Use one step per partition."
            )
        rv = model.values_to_rvs[get_value_vars_from_user_vars(vars, model)[0]]
        if not is_partition_rv(rv):
            kind = type(rv.owner.op).__name__ if rv.owner is not None else type(rv).__name__
            raise TypeError(f"{name} samples pmp.Partition variables, but {rv.name!r} is a {kind}.")
        return rv

    @property
    def family(self):
        """The family at the current hyperparameters."""
        return self.engine.family

    @property
    def predictive_form(self):
        """The predictive form the engine evaluates (``.name == "graph"``: the family's graph)."""
        return self.engine.predictive_form

    # ------------------------------------------------------------------ PyMC protocol
    def setup_chain(self, rng, tune, draws):
        """Start a chain (PyMC >= 6.3).

        Its generator, and no state carried over from another chain this instance served.
        """
        self.rng = get_random_generator(rng, copy=False)
        self.rng_state = rng_state(self.rng)  # four words of the chain's generator: its own stream
        self._chain = None
        self.refresh_data()

    def set_rng(self, rng):
        """Start a chain (PyMC < 6.3, which calls this instead of :meth:`setup_chain`)."""
        self.setup_chain(rng, 0, 0)

    def step(self, point):
        if self._reader is not None and (numbers := self._reader.read(point)) is not None:
            try:
                self.engine.refresh(numbers)  # the engine rebuilds its state from the labels
            except Exception:
                self._reader.forget()  # the engine never took these numbers: read them again next time
                raise
        raw = point[self._value_name]
        state = self._chain
        if state is None or not (raw is state or np.array_equal(raw, state)):
            state = self.engine.init(raw)  # new labels: the engine rebuilds its state from them
        state, res = self.engine.step(state, self.rng_state)  # advances rng_state in place
        self._chain = state  # PyMC passes these labels back next time: the engine continues
        self.n_steps += 1
        new_point = point.copy()
        new_point[self._value_name] = state
        return new_point, [{name: res[i] for name, i in self._stat_index}]

    def reset_tuning(self):
        """Nothing to tune: the samplers have no adaptive parameters."""
        return None

    def stop_tuning(self):
        self.tune = False

    def _progressbar_config(self, n_chains=1):
        return progress.config(self._stat_names, self._rv_name if self._stat_suffix else "", n_chains)

    def _make_progressbar_update_functions(self):
        return (progress.updater(self._stat_names),)

    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE
