"""Shared machinery of the partition step methods (PyMC ``BlockedStep`` subclasses).

A step reads the model once at construction (:func:`~pymc_partition.partition_spec`: the prior's
``log_g``/``log_h`` tables, the family and the per-item statistics), compiles the family's
pytensor log marginal with the numba backend (:mod:`.compile`), takes the family's specialised
predictive form if it has one and it agrees with the graph on the model's data
(:mod:`pymc_partition.predictive`; else the graph's), and runs each PyMC step as one call of a
compiled kernel (:mod:`.kernels`). Random numbers come from ``self.rng``, the numpy Generator
PyMC sets per chain: each step draws a seed from it for numba's generator.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.step_methods.state import dataclass_state
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from ..distribution import PartitionRV
from ..model_spec import RandomHyperparameterError, find_partition_vars, partition_spec
from ..predictive import FormMismatch, check_form, graph_form
from ..predictive._types import make_context
from ..state import canonicalize
from . import kernels
from .compile import compile_log_marginal
from .hyperparameters import Hyperparameters

__all__ = ["PartitionStep", "PartitionStepState", "is_partition_rv"]


def is_partition_rv(var):
    """Whether ``var`` (a random variable) is a :class:`~pymc_partition.Partition`."""
    owner = getattr(var, "owner", None)
    return owner is not None and isinstance(owner.op, PartitionRV)


@dataclass_state
class PartitionStepState(StepMethodState):
    """Mutable sampling state of a partition step (reset between sequential chains)."""

    n_steps: int


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
    """Base class: a compiled sampler for one :class:`~pymc_partition.Partition` variable.

    Subclasses set :attr:`name` and :attr:`stats_dtypes_shapes` (whose keys are fields of
    :class:`~.kernels.StepResult`), and pass their move mix (:class:`~.kernels.MoveMix`) to
    :meth:`_setup`.

    In a model with several Partition variables every stat name gets the variable's name as a
    suffix (``partition_logp_z2``): PyMC would otherwise stack the same-named stats of the steps
    into one variable with an extra dimension.
    """

    name = "partition_step"
    default_blocked = False  # several partitions: PyMC builds one step per partition
    _state_class = PartitionStepState

    stats_dtypes_shapes = {
        "partition_logp": (np.float64, []),
        "n_clusters": (np.int64, []),
    }

    def _setup(self, vars, model, rng, blocked, mix, specialize=True, initial_point=None):
        model = pm.modelcontext(model)
        if vars is None:
            name = type(self).__name__
            raise TypeError(f"{name} needs the Partition variable, e.g. {name}([z]).")
        if not isinstance(vars, (list, tuple)):
            vars = [vars]
        if len(vars) != 1:
            raise ValueError(
                f"{type(self).__name__} samples exactly one pmp.Partition variable; got "
                f"{len(vars)} variables. Use one step per partition."
            )
        self._mix = mix
        self.thin = mix.thin
        if not isinstance(specialize, (bool, np.bool_)):
            raise TypeError(f"`specialize` must be True or False, got {specialize!r}.")
        self.specialize = bool(specialize)
        value_vars = get_value_vars_from_user_vars(vars, model)
        rv = model.values_to_rvs[value_vars[0]]
        if not is_partition_rv(rv):
            raise TypeError(
                f"{type(self).__name__} samples pmp.Partition variables, but {rv.name!r} is a "
                f"{type(rv.owner.op).__name__ if rv.owner is not None else type(rv).__name__}."
            )
        self._hyper = None
        try:
            spec = partition_spec(model, rv)  # raises without a MarginalLikelihood
        except RandomHyperparameterError:
            # random hyperparameters: start from the initial point, read them at every step
            start = initial_point if initial_point is not None else model.initial_point()
            spec = partition_spec(model, rv, point=start)
            self._hyper = Hyperparameters(model, rv)
            self._hyper.read(start)
        self.vars = value_vars
        self.blocked = blocked
        self.rng = get_random_generator(rng)
        self.n_steps = 0
        self.tune = False
        self._value_name = value_vars[0].name
        self._rv_name = rv.name
        # several partitions: one set of stats per variable, suffixed with its name
        several = len(find_partition_vars(model)) > 1
        self._stat_suffix = f"_{rv.name}" if several else ""
        self._stat_names = {k: k + self._stat_suffix for k in type(self).stats_dtypes_shapes}
        # where each stat sits in the kernel's result (looked up by name once)
        self._stat_index = tuple(
            (name, kernels.STEP_RESULT_INDEX[field]) for field, name in self._stat_names.items()
        )
        self.stats_dtypes_shapes = {
            self._stat_names[k]: v for k, v in type(self).stats_dtypes_shapes.items()
        }
        self.stats_dtypes = [{k: dtype for k, (dtype, _) in self.stats_dtypes_shapes.items()}]
        self.n_items = int(spec.n_items)
        self.family = spec.family
        self._X = np.ascontiguousarray(spec.item_stats, dtype=np.float64)
        self._log_g = np.ascontiguousarray(spec.log_g, dtype=np.float64)
        self._log_h = np.ascontiguousarray(spec.log_h, dtype=np.float64)
        self._lm = None
        self._model = None
        self._entry = None  # the compiled kernel for our argument types (skips numba's dispatch)
        self._last = None
        self._block = kernels.BLOCK  # Gibbs visiting order (tests shrink it to reach the blocks)
        self._compile()
        if self._hyper is not None and self.predictive_form.name == "graph":
            raise NotImplementedError(
                f"{type(self).__name__} updates random hyperparameters through the family's "
                f"specialised predictive form, which {type(self.family).__name__} lacks for these "
                "data (e.g. replicate rows); fix the hyperparameters at numbers."
            )

    # ------------------------------------------------------------------ compiled state
    def _compile(self):
        """Compile the family's log marginal, choose the predictive form and warm the kernel up."""
        self._lm = compile_log_marginal(self.family, self._X.shape[1])
        self.predictive_form = self._choose_form()
        self._item_lm = kernels.item_log_marginals(self._X, self._lm.addresses)
        self._state, self._work = kernels.allocate(
            self.n_items, self._X.shape[1], self.predictive_form.cache_width
        )
        self._model = self._bundle()
        # warm the kernel up on a throw-away state so that compile time is not sampling time
        n = self.n_items
        labels = np.zeros(n, np.int64)
        idle = self._mix._replace(n_gibbs=0, n_split_merge=0)
        self._call_kernel(0, labels, False, np.empty(n, np.int64), idle)
        self._last = None

    def _choose_form(self):
        """The family's specialised predictive form if it has one that agrees with its graph on
        these data (:func:`~pymc_partition.predictive.check_form`), else the graph's."""
        if self.specialize:
            build = getattr(self.family, "predictive_form", None)
            form = build(self._X) if build is not None else None
            if form is not None:
                try:
                    check_form(form, self._lm, self._X)
                except FormMismatch as err:
                    warnings.warn(
                        f"{err} {type(self).__name__} evaluates the graph instead (slower).",
                        RuntimeWarning,
                        stacklevel=4,
                    )
                else:
                    return form
        return graph_form(self._X)

    def _bundle(self):
        form, st = self.predictive_form, self._state
        # the context holds the addresses of form.params, form.aux, st.stats and st.cache: the
        # step keeps them alive and never replaces them
        ctx = make_context(form.params, st.stats, st.cache, form.aux, self._lm.addresses)
        return kernels.Model(
            X=self._X, item_lm=self._item_lm, log_g=self._log_g, log_h=self._log_h,
            lm_addr=self._lm.addresses, form_addr=form.addresses, ctx=ctx,
        )  # fmt: skip

    def _call_kernel(self, seed, labels, reuse, out, mix=None):
        args = (
            seed, labels, reuse, self._model, self._state, self._work,
            self._mix if mix is None else mix, self._block, out,
        )  # fmt: skip
        if self._entry is None:
            res = kernels.run_step(*args)
            self._entry = kernels.compiled_entry(kernels.run_step, args)
            return res
        return self._entry(*args)

    def __getstate__(self):
        state = self.__dict__.copy()
        # compiled code and its addresses are process-local: rebuilt after unpickling
        state["_lm"] = None
        state["_model"] = None
        state["_entry"] = None
        state["_last"] = None
        return state

    # ------------------------------------------------------------------ PyMC interface
    def _input_labels(self, point):
        labels = np.asarray(point[self._value_name])
        if labels.shape != (self.n_items,):
            raise ValueError(
                f"{self._rv_name!r} has shape {labels.shape}, expected ({self.n_items},)."
            )
        if not np.issubdtype(labels.dtype, np.integer):
            raise TypeError(f"{self._rv_name!r} must hold integer labels, got {labels.dtype}.")
        # canonical form (any labelling of the same partition is accepted)
        return np.ascontiguousarray(canonicalize(labels.astype(np.int64)), dtype=np.int64)

    def step(self, point):
        if self._model is None:  # after unpickling in another process
            self._lm = compile_log_marginal(self.family, self._X.shape[1])
            self._model = self._bundle()
        raw = point[self._value_name]
        last = self._last
        # the cluster state left by the previous step is reused when the labels are the ones it
        # returned (PyMC passes them back unchanged) and the hyperparameters did not change;
        # otherwise it is rebuilt from the labels
        reuse = last is not None and (raw is last or np.array_equal(raw, last))
        if self._hyper is not None and self._refresh(point):
            reuse = False
        labels = last if reuse else self._input_labels(point)
        seed = self.rng.bit_generator.random_raw() >> 32  # a 32-bit seed for numba's generator
        out = np.empty(self.n_items, np.int64)
        self._last = None
        res = self._call_kernel(seed, labels, reuse, out)
        self._last = out
        self.n_steps += 1
        new_point = point.copy()
        new_point[self._value_name] = out
        return new_point, [self._stats(res)]

    def _refresh(self, point):
        """Copy the numbers at the current hyperparameters into the kernels' arrays (in place:
        the kernels hold their addresses). Returns whether anything changed."""
        new = self._hyper.read(point)
        if new is None:
            return False
        log_g, log_h, stats, family, item_lm = new
        form = family.predictive_form(stats)
        old = self.predictive_form
        if form.params.shape != old.params.shape or form.aux.shape != old.aux.shape:
            raise RuntimeError("The predictive form changed shape with the hyperparameters.")
        self._log_g[:] = log_g
        self._log_h[:] = log_h
        self._X[:] = stats
        self._item_lm[:] = item_lm
        old.params[:] = form.params
        old.aux[:] = form.aux
        self.family = family
        return True

    def _stats(self, res):
        """The step's stats from the kernel's result (the fields of a
        :class:`~.kernels.StepResult`, found by name in :meth:`_setup`)."""
        return {name: res[i] for name, i in self._stat_index}

    def reset_tuning(self):
        """Nothing to tune: the samplers have no adaptive parameters."""
        return None

    def stop_tuning(self):
        self.tune = False

    def _progressbar_config(self, n_chains=1):
        from rich.progress import TextColumn
        from rich.table import Column

        n_clusters, logp = self._stat_names["n_clusters"], self._stat_names["partition_logp"]
        of = f" {self._rv_name}" if self._stat_suffix else ""  # one column per partition
        columns = [
            TextColumn(f"{{task.fields[{n_clusters}]}}", table_column=Column(f"Clusters{of}", ratio=1)),
            TextColumn(
                f"{{task.fields[{logp}]:0.2f}}", table_column=Column(f"Partition logp{of}", ratio=1)
            ),
        ]
        stats = {n_clusters: [0] * n_chains, logp: [0.0] * n_chains}
        if _monitor() is not None:  # a StopWhenConverged callback: show its state while sampling
            columns.append(TextColumn("{task.fields[monitor]}", table_column=Column("Monitor", ratio=2)))
            stats["monitor"] = [""] * n_chains
        return columns, stats

    def _make_progressbar_update_functions(self):
        show_monitor = _monitor() is not None
        names = [self._stat_names[k] for k in ("n_clusters", "partition_logp")]

        def update_stats(step_stats):
            out = {k: step_stats[k] for k in names}
            if show_monitor:
                mon = _monitor()
                out["monitor"] = mon.status if mon is not None else ""
            return out

        return (update_stats,)

    @staticmethod
    def competence(var, has_grad):
        return Competence.INCOMPATIBLE


def _monitor():
    from arviz_regen.online import active_monitor

    return active_monitor()
