"""The sampling engine of one partition: compiled once from a spec, stepped by whoever drives it.

A :class:`PartitionKernel` holds what its compiled kernels read (:mod:`.kernels`): the spec's
numbers in arrays it owns, the family's compiled log marginal (:mod:`.compile`), the predictive
form (the family's specialised one when it agrees with the graph on these data, else the graph's;
:mod:`pymc_partition.predictive`) and the cluster state, all passed to compiled code by address.
It knows nothing of PyMC: the partition steps (:mod:`pymc_partition.step_methods`) are adapters
around it, and tests and benchmarks drive it directly::

    kernel = PartitionKernel.from_spec(spec, MoveMix(n_gibbs=1, n_split_merge=0, n_scans=0,
                                                     gibbs_probability=0.0, thin=1))
    state = kernel.init(labels)
    rng = rng_state(random_seed)                  # the generator state (kernels.rng), owned here
    for _ in range(n_draws):
        state, result = kernel.step(state, rng)   # result.partition_logp, result.n_clusters, ...

A chain's state is its canonical labels: the int64 array :meth:`~PartitionKernel.init` or
:meth:`~PartitionKernel.step` made (treat it as read only). A step continues from the cluster
state the kernel holds when it is given the array the kernel returned last (nothing changed
since), and otherwise rebuilds it from the labels. (A plain array, not an object holding one:
an object built per step costs a noticeable share of a Gibbs step of a few items.)
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..predictive import FormMismatch, check_form, graph_form
from ..predictive._types import make_context, quiet_compile
from ..state import canonicalize
from . import kernels
from .compile import compile_log_marginal, reference_log_marginal, structure_reference
from .kernels import MoveMix, StepResult
from .kernels.rng import is_rng_state, rng_state

__all__ = ["PartitionKernel"]


class PartitionKernel:
    """Compiled sampler of one partition (collapsed Gibbs sweeps and merge-split moves).

    Build it with :meth:`from_spec`. Attributes read by its users:

    Attributes
    ----------
    name : str
        The partition variable's name (in messages).
    n_items : int
    mix : MoveMix
        The moves of one step.
    family : ConjugateFamily
        The family at the current hyperparameters.
    predictive_form : PredictiveForm
        The form the kernels evaluate (``.name == "graph"``: the family's compiled graph).
    log_marginal : CompiledLogMarginal
        The family's log marginal compiled with numba (on first access).
    item_stats : ndarray (n_items, n_stats)
        Per-item statistics (owned by the kernel: a refresh overwrites them in place).
    block : int
        Block size of the Gibbs visiting order (:func:`.kernels.visiting_order`).
    """

    @classmethod
    def from_spec(cls, spec, mix, specialize=True, shared_reference=False):
        """Compile the kernel of a :class:`~pymc_partition.spec.PartitionSpec`.

        Parameters
        ----------
        spec : PartitionSpec
            Its arrays are copied: :meth:`refresh` never writes into the spec.
        mix : MoveMix
            The moves of one step.
        specialize : bool, default True
            Use the family's specialised predictive form when it agrees with the family's graph
            on these data (else, with a RuntimeWarning, the graph); False always uses the graph.
        shared_reference : bool, default False
            Check the family on a graph taking its hyperparameters as inputs, shared by every
            family of its structure (:func:`~.compile.structure_reference`), rather than one built
            for its numbers: for random hyperparameters, read at every step anyway.
        """
        if not isinstance(mix, MoveMix):
            raise TypeError(f"`mix` must be a MoveMix, got {type(mix).__name__}.")
        if not isinstance(specialize, (bool, np.bool_)):
            raise TypeError(f"`specialize` must be True or False, got {specialize!r}.")
        self = cls.__new__(cls)
        self.name = spec.name
        self.n_items = int(spec.n_items)
        self.mix = mix
        self.specialize = bool(specialize)
        self.family = spec.family
        self.block = kernels.BLOCK
        self.item_stats = np.array(spec.item_stats, dtype=np.float64, order="C")
        self._log_g = np.array(spec.log_g, dtype=np.float64, order="C")
        self._log_h = np.array(spec.log_h, dtype=np.float64, order="C")
        self._log_marginal = None
        # the graph, run without compiling it: singletons, the evaluability check, the form check
        build = structure_reference if shared_reference else reference_log_marginal
        reference = build(self.family, self.item_stats.shape[1])
        self._item_lm = np.ascontiguousarray(reference(self.item_stats), dtype=np.float64)
        self._ones = np.ones_like(self._item_lm)
        self._check_evaluable(reference)
        self.predictive_form = self._choose_form(reference)
        self._state, self._work = kernels.allocate(
            self.n_items, self.item_stats.shape[1], self.predictive_form.cache_width
        )
        self._link()
        # compile (or load) the kernel now, on a throw-away state: compile time is not step time
        idle = mix._replace(n_gibbs=0, n_split_merge=0, n_sams=0)
        labels = np.zeros(self.n_items, np.int64)
        self._run(rng_state(0), labels, False, self._model, self._state, self._work, idle, self.block, labels.copy())
        return self

    @property
    def log_marginal(self):
        """The family's log marginal compiled with numba (:class:`~.compile.CompiledLogMarginal`).

        Compiled on first use: only the graph's predictive form calls it from compiled code.
        """
        if self._log_marginal is None:
            self._log_marginal = compile_log_marginal(self.family, self.item_stats.shape[1])
        return self._log_marginal

    def _check_evaluable(self, reference):
        """Refuse hyperparameters the family cannot be evaluated at on these data, naming the culprit.

        Each item alone and all items together are checked, before any step could score NaN.
        """
        from ..families.evaluability import check_log_marginals

        check_log_marginals(self.family, self.item_stats, self._item_lm, lambda i: f"item {i} alone")
        total = self.item_stats.sum(axis=0, keepdims=True)
        check_log_marginals(self.family, total, [reference(total[0])], lambda i: "all items together")

    def _choose_form(self, reference):
        """Choose the family's specialised predictive form if it agrees with its graph, else the graph's.

        The form must agree on these data (:func:`~pymc_partition.predictive.check_form`, against the graph evaluated
        without compiling it).
        """
        if self.specialize:
            build = getattr(self.family, "predictive_form", None)
            form = build(self.item_stats) if build is not None else None
            if form is not None:
                try:
                    check_form(form, reference, self.item_stats)
                except FormMismatch as err:
                    warnings.warn(f"{err} The sampler evaluates the graph instead (slower).",
                                  RuntimeWarning, stacklevel=4)  # fmt: skip
                else:
                    return form
        return graph_form(self.item_stats)

    def _link(self):
        """Bundle the arrays for the kernels, by address (process-local: redone after unpickling).

        The kernel keeps every array whose address it hands out and never replaces one, so the addresses stay valid.
        """
        form, st = self.predictive_form, self._state
        # only the graph's form calls the compiled graph (through the context)
        lm_addr = self.log_marginal.addresses if form.name == "graph" else np.zeros(2, np.int64)
        ctx = make_context(form.params, st.stats, st.cache, form.aux, lm_addr)
        self._model = kernels.Model(
            X=self.item_stats, item_lm=self._item_lm, log_g=self._log_g, log_h=self._log_h,
            form_addr=form.addresses, ctx=ctx,
        )  # fmt: skip
        self._entry = None  # the compiled kernel for our argument types (skips numba's dispatch)
        self._singles = None  # the same for the singleton log marginals (:meth:`_singletons`)
        self._current = None  # the state the cluster arrays hold, if any

    def _run(self, *args):
        """Call the kernel; keep its compiled entry point for these argument types after the first call.

        The first call goes through numba's dispatcher; keeping the entry point skips the dispatch on every later step.
        """
        merge_split = self.mix.n_split_merge > 0 or self.mix.n_sams > 0
        run = kernels.run_step if merge_split else kernels.run_gibbs_step
        if self.mix.n_particles > 1:  # particle Gibbs split-merge: compiled only when asked for
            run = kernels.run_particle_step
        with quiet_compile():
            res = run(*args)
        self._entry = kernels.compiled_entry(run, args)
        return res

    # ------------------------------------------------------------------ stepping
    def init(self, labels):
        """Return the state at ``labels``: its canonical labels, a new int64 array.

        ``labels`` is any labelling of a partition of the ``n_items`` items, as integers.
        """
        labels = np.asarray(labels)
        if labels.shape != (self.n_items,):
            raise ValueError(f"{self.name!r} has shape {labels.shape}, expected ({self.n_items},).")
        if not np.issubdtype(labels.dtype, np.integer):
            raise TypeError(f"{self.name!r} must hold integer labels, got {labels.dtype}.")
        return np.ascontiguousarray(canonicalize(labels.astype(np.int64)), dtype=np.int64)

    def step(self, state, rng):
        """One step of the move mix from ``state``.

        Parameters
        ----------
        state : ndarray of int64
            Canonical labels from :meth:`init` or a previous :meth:`step`.
        rng : ndarray of uint64 (4,), int or numpy.random.Generator
            The generator state the kernels draw from (:func:`~.kernels.rng.rng_state`),
            advanced in place: a chain keeps one and passes it to every step. An integer or a
            Generator seeds a fresh state for this step alone.

        Returns
        -------
        (ndarray, StepResult)
            The new state (a new array of canonical labels) and the step's statistics by name.
        """
        if not is_rng_state(rng):
            try:
                rng = rng_state(rng)
            except TypeError:
                raise TypeError(
                    "`rng` must be a generator state (uint64[4], from rng_state), a numpy "
                    f"Generator or an integer seed, got {type(rng).__name__}."
                ) from None
        reuse = state is self._current  # the cluster arrays hold this state exactly
        self._current = None  # until the kernel returns: an exception leaves them undefined
        out = np.empty(self.n_items, np.int64)
        # the entry point kept by the first call, called here directly (a Python call less)
        args = (rng, state, reuse, self._model, self._state, self._work, self.mix, self.block, out)
        res = self._run(*args) if self._entry is None else self._entry(*args)
        self._current = out
        return out, tuple.__new__(StepResult, res)  # named without calling its constructor

    # ------------------------------------------------------------------ hyperparameters
    @property
    def refreshable(self):
        """Whether :meth:`refresh` can take new hyperparameters.

        Only through a specialised form (the graph's is compiled with the family's numbers in it).
        """
        return self.predictive_form.name != "graph"

    def refresh(self, numbers):
        """Take the numbers at new hyperparameters, in place.

        The kernels hold the arrays' addresses: nothing is recompiled; the next step rebuilds its cluster state.

        Parameters
        ----------
        numbers : HyperparameterNumbers
            ``log_g``, ``log_h``, ``item_stats``, ``family`` and ``item_lm`` (each item's
            singleton log marginal) at the new values (:mod:`pymc_partition.spec`); ``item_lm``
            None to compute them here with the predictive form (compiled, no graph).
        """
        stats, old = numbers.item_stats, self.predictive_form
        # a reader whose statistics are numbers hands over the same read-only array each time: known by identity
        # (taken before, by an engine found refreshable then)
        seen = stats is self.__dict__.get("_stats_seen")
        if not seen and not self.refreshable:
            raise NotImplementedError(
                f"The sampler of {self.name!r} evaluates the family's graph, compiled with its "
                "hyperparameters fixed: it cannot take new ones."
            )
        same_stats = seen or np.array_equal(stats, self.item_stats)
        if same_stats and getattr(old, "reparam", None) is not None:  # (pickled before it existed)
            params, aux = old.reparam(numbers.family), None  # only what the hyperparameters change
        else:
            form = numbers.family.predictive_form(stats)
            params, aux = (None, None) if form is None else (form.params, form.aux)
        if params is None or params.shape != old.params.shape or (aux is not None and aux.shape != old.aux.shape):
            raise RuntimeError("The predictive form changed shape with the hyperparameters.")
        self._current = None
        self._log_g[:] = numbers.log_g
        self._log_h[:] = numbers.log_h
        if not same_stats:
            self.item_stats[:] = stats
        if not seen:
            self._stats_seen = stats if not stats.flags.writeable else None
        old.params[:] = params
        if aux is not None:
            old.aux[:] = aux
        self.family = numbers.family
        if numbers.item_lm is not None:
            self._item_lm[:] = numbers.item_lm
        elif self._singles is not None:  # the compiled pass kept by the first call (per draw: no Python call more)
            self._check_singletons(self._singles(*self._singles_args))
        else:
            self._singletons()

    def _singletons(self):
        """Compute each item's singleton log marginal with the form, at its current ``params``.

        Overwrites the cluster state (the next step rebuilds it from the labels); refuses values that are not finite,
        naming the hyperparameter at fault.
        """
        if self._singles is not None:
            total = self._singles(*self._singles_args)
        else:
            # the form's own pass if it has one, else its init and pred through their addresses (one call per item)
            singles = getattr(self.predictive_form, "singles", None)  # (a form pickled before it existed: None)
            m = self._model
            if singles is not None:
                args = (m.ctx, np.int64(0), self._item_lm)
            else:
                from .kernels.hyper import singleton_log_marginals as singles

                args = (self._state.stats, m.ctx, m.form_addr, self._work.slot, self._item_lm)
            with quiet_compile():
                total = singles(*args)
            self._singles, self._singles_args = kernels.compiled_entry(singles, args), args
        self._check_singletons(total)

    def _check_singletons(self, total=None):
        """Refuse singleton log marginals that are not finite, naming the hyperparameter at fault.

        ``total``: their sum, as the compiled pass returns it (finite when they all are); None to take it here.
        """
        if total is None:  # their dot product with ones (cheaper than .sum() at a few items)
            total = self._item_lm.dot(self._ones)
        if not math.isfinite(total):
            from ..families.evaluability import check_log_marginals

            check_log_marginals(self.family, self.item_stats, self._item_lm, lambda i: f"item {i} alone")

    # ------------------------------------------------------------------ tests, pickling
    @property
    def bundles(self):
        """``(Model, State, Work)``: the bundles the kernels run on (for kernel-level tests)."""
        return self._model, self._state, self._work

    def __getstate__(self):
        state = self.__dict__.copy()
        # compiled code and addresses are process-local: rebuilt by __setstate__
        for key in ("_log_marginal", "_model", "_entry", "_singles", "_singles_args", "_current"):
            state.pop(key, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._log_marginal = None
        self._link()

    def __repr__(self):
        return (f"PartitionKernel({self.name!r}, n_items={self.n_items}, "
                f"form={self.predictive_form.name!r}, mix={self.mix})")  # fmt: skip
