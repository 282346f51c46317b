"""Replica exchange of one partition's posterior: a :class:`~.kernel.PartitionKernel` and tempered copies.

:class:`ReplicaExchangeKernel` steps like a :class:`~.kernel.PartitionKernel` (``init``,
``step(state, rng)`` returning the cold copy's canonical labels and its statistics) and runs
:func:`.kernels.tempering.run_tempered_step`: the move mix on every copy at its likelihood power,
then exchanges between adjacent temperatures. The tempered copies are auxiliary variables the
kernel keeps between steps; :meth:`~ReplicaExchangeKernel.reset` (a new chain) restarts them from
the next step's labels.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..predictive._types import make_context, quiet_compile
from . import kernels
from .kernels.rng import is_rng_state, rng_state
from .kernels.step import StepResult, compiled_entry
from .kernels.tempering import run_tempered_step

__all__ = ["ReplicaExchangeKernel", "ReplicaStepResult", "REPLICA_RESULT_INDEX", "geometric_ladder"]

ReplicaStepResult = namedtuple("ReplicaStepResult", StepResult._fields + ("n_swaps_accepted", "n_swaps"))
ReplicaStepResult.__doc__ = """What :meth:`ReplicaExchangeKernel.step` returns: the cold copy's statistics.

:class:`~.kernels.StepResult`'s fields (``proposal`` and ``proposal_accepted`` those of the cold
copy's last merge-split proposal; ``n_proposals_accepted``, ``n_proposals`` and
``n_gibbs_sweeps`` counted over every copy), then ``n_swaps_accepted`` and ``n_swaps``, the
exchanges between adjacent temperatures accepted and proposed in the step.
"""

#: position of each :class:`ReplicaStepResult` field in the tuple the kernel returns
REPLICA_RESULT_INDEX = {name: i for i, name in enumerate(ReplicaStepResult._fields)}


def geometric_ladder(n_replicas, beta_min):
    """``n_replicas`` likelihood powers from 1 down to ``beta_min``, evenly spaced in log.

    Parameters
    ----------
    n_replicas : int
        At least 1 (1: ``[1.0]``, no tempered copy).
    beta_min : float
        The hottest copy's power, in (0, 1).

    Returns
    -------
    ndarray of float64
    """
    if n_replicas == 1:
        return np.ones(1)
    return np.geomspace(1.0, beta_min, n_replicas)


def check_ladder(betas):
    """Return ``betas`` as a float64 array after checking it is a valid ladder (1 first, strictly decreasing, >= 0)."""
    try:
        b = np.array(betas, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise TypeError(f"`betas` must be a sequence of numbers, got {betas!r}.") from None
    if b.size == 0 or b[0] != 1.0:
        raise ValueError(f"`betas` must start at 1.0 (the posterior, the copy recorded), got {b.tolist()}.")
    if not np.all(np.isfinite(b)) or np.any(np.diff(b) >= 0) or b[-1] < 0:
        raise ValueError(f"`betas` must decrease strictly from 1.0 and stay >= 0, got {b.tolist()}.")
    return b


class ReplicaExchangeKernel:
    """Replica exchange across tempered copies of a :class:`~.kernel.PartitionKernel`'s posterior.

    Parameters
    ----------
    base : PartitionKernel
        Its spec, predictive form and move mix (``n_split_merge`` must be 0: merge-split proposals
        are the sequentially allocated ones, ``n_sams``). Its cluster state is the first copy's.
    betas : sequence of float
        Likelihood powers, ``1.0`` first, strictly decreasing, ``>= 0``
        (:func:`geometric_ladder`).

    Attributes
    ----------
    base : PartitionKernel
    betas : ndarray
    swap_accepted, swap_proposed : ndarray of int64 (R - 1,)
        Running counts of exchanges between temperatures ``t`` and ``t + 1`` since the kernel
        was built (:attr:`swap_rates` their ratio): where the ladder is too sparse.
    """

    def __init__(self, base, betas):
        if base.mix.n_split_merge:
            raise ValueError(
                "Replica exchange tempers the Gibbs sweeps and the sequentially allocated merge-split "
                "proposals; the restricted-Gibbs split-merge move (n_split_merge) is not tempered."
            )
        self.base = base
        self.betas = check_ladder(betas)
        self.n_items = base.n_items
        self.name = base.name
        R = self.betas.size
        self.swap_accepted = np.zeros(max(R - 1, 0), np.int64)
        self.swap_proposed = np.zeros(max(R - 1, 0), np.int64)
        self._copy_at = np.arange(R, dtype=np.int64)
        m0, s0, self._work = base.bundles
        form = base.predictive_form
        lm_addr = base.log_marginal.addresses if form.name == "graph" else np.zeros(2, np.int64)
        models, states = [m0], [s0]
        for _ in range(R - 1):
            st, _ = kernels.allocate(self.n_items, base.item_stats.shape[1], form.cache_width)
            ctx = make_context(form.params, st.stats, st.cache, form.aux, lm_addr)
            models.append(m0._replace(ctx=ctx))
            states.append(st)
        self._models, self._states = tuple(models), tuple(states)
        self._entry = None
        self._current = None  # the cold copy's labels as the kernel returned them last
        self._fresh = True  # the tempered copies start from the next step's labels
        # compile (or load) now, on a throw-away state: compile time is not step time
        labels = np.zeros(self.n_items, np.int64)
        idle = base.mix._replace(n_gibbs=0, n_sams=0, gibbs_probability=0.0)
        self._run(rng_state(0), labels, False, True, self._models, self._states, self._work, idle,
                  base.block, labels.copy(), self.betas, self._copy_at.copy(),
                  self.swap_accepted.copy(), self.swap_proposed.copy())  # fmt: skip

    def _run(self, *args):
        with quiet_compile():
            res = run_tempered_step(*args)
        self._entry = compiled_entry(run_tempered_step, args)
        return res

    @property
    def mix(self):
        """The move mix each copy makes per round."""
        return self.base.mix

    @property
    def swap_rates(self):
        """Acceptance rate of exchanges between each pair of adjacent temperatures (NaN: none proposed)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.swap_accepted / self.swap_proposed

    def reset(self):
        """Start a new chain: the tempered copies restart from the next step's labels, the copies in ladder order."""
        self._fresh = True
        self._current = None
        self._copy_at[:] = np.arange(self.betas.size)

    def init(self, labels):
        """Return the state at ``labels`` (canonical int64 labels, as :meth:`PartitionKernel.init`)."""
        return self.base.init(labels)

    def load_replicas(self, labels):
        """Set every copy's partition, in temperature order (``(R, n)`` labels; row 0 the cold copy).

        The inverse of :meth:`replica_labels` (a saved chain resumes exactly); ``None`` is :meth:`reset`.
        """
        if labels is None:
            self.reset()
            return
        labels = np.asarray(labels)
        if labels.shape != (self.betas.size, self.n_items) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"The copies' labels must be integers of shape {(self.betas.size, self.n_items)}, "
                             f"got {labels.dtype} {labels.shape}.")  # fmt: skip
        self._copy_at[:] = np.arange(self.betas.size)
        for t in range(self.betas.size):
            z = self.init(labels[t])
            kernels.build_state(z, self._models[t], self._states[t])
        self._fresh = False
        self._current = None

    def replica_labels(self):
        """Canonical labels of every copy, in temperature order (``(R, n)``; row 0 the cold copy).

        ``None`` before the first step of a chain (the copies start from its labels).
        """
        if self._fresh:
            return None
        out = np.empty((self.betas.size, self.n_items), np.int64)
        for t, r in enumerate(self._copy_at):
            kernels.canonical_relabel(self._states[r].z, out[t])
        return out

    def step(self, state, rng):
        """One step from ``state`` (the cold copy's labels); as :meth:`PartitionKernel.step`.

        Returns
        -------
        (ndarray, ReplicaStepResult)
        """
        if not is_rng_state(rng):
            rng = rng_state(rng)  # an integer or a Generator (anything else: a TypeError naming it)
        reuse = state is self._current
        fresh = self._fresh
        self._current = None
        self.base._current = None  # the base's cluster state is a copy's: never reused by the base
        out = np.empty(self.n_items, np.int64)
        args = (rng, state, reuse, fresh, self._models, self._states, self._work, self.base.mix, self.base.block,
                out, self.betas, self._copy_at, self.swap_accepted, self.swap_proposed)  # fmt: skip
        res = self._run(*args) if self._entry is None else self._entry(*args)
        self._fresh = False
        self._current = out
        return out, tuple.__new__(ReplicaStepResult, res)

    # delegated to the base kernel: what the step methods read
    @property
    def family(self):
        """The family (fixed: replica exchange takes no random hyperparameters)."""
        return self.base.family

    @property
    def predictive_form(self):
        """The predictive form the kernels evaluate."""
        return self.base.predictive_form

    @property
    def specialize(self):
        """Whether the base kernel was asked for the family's specialised form."""
        return self.base.specialize

    @property
    def refreshable(self):
        """False: the tempered copies are exact only at fixed hyperparameters."""
        return False

    def __getstate__(self):
        state = self.__dict__.copy()
        for key in ("_models", "_entry", "_current", "_work"):
            state.pop(key, None)
        state["_states"] = [s._asdict() for s in self._states[1:]]
        return state

    def __setstate__(self, state):
        from .kernels.state import State

        hot = [State(**s) for s in state.pop("_states")]
        self.__dict__.update(state)
        m0, s0, self._work = self.base.bundles
        form = self.base.predictive_form
        lm_addr = self.base.log_marginal.addresses if form.name == "graph" else np.zeros(2, np.int64)
        self._models = (m0,) + tuple(
            m0._replace(ctx=make_context(form.params, st.stats, st.cache, form.aux, lm_addr)) for st in hot
        )
        self._states = (s0, *hot)
        self._entry = None
        self._current = None
        self._fresh = True

    def __repr__(self):
        return f"ReplicaExchangeKernel({self.name!r}, n_items={self.n_items}, betas={self.betas.round(4).tolist()})"
