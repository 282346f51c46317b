"""Compiled (numba) kernels of the partition samplers, one module per concept.

:mod:`.state`
    The bundles a kernel sees (:class:`Model`, :class:`State`, :class:`Work`: named tuples of
    preallocated arrays), their allocation, and the cluster state rebuilt from labels.
:mod:`.slots`
    Slot bookkeeping: the active list and free stack of cluster slots, items moving in and out.
:mod:`.gibbs`
    The collapsed Gibbs sweep and its visiting order.
:mod:`.conditional`
    Every item's full conditional at a fixed partition, without moving it: the per-draw terms of
    the conditional (discrete Stein) check.
:mod:`.split_merge`
    The restricted-Gibbs split-merge move: launch state, restricted scans, the move and its
    proposal probability.
:mod:`.sams`
    The sequentially allocated merge-split move (Dahl & Newcomb 2022): sequential allocation,
    the move and its proposal probability.
:mod:`.particle`
    Particle Gibbs split-merge (Bouchard-Côté, Doucet & Roth 2017): the sequential allocation
    run by several particles, resampled, conditional on the current split for a merge.
:mod:`.recut`
    Particle Gibbs re-cut of several neighbouring clusters at once (their number kept).
:mod:`.tempering`
    Replica exchange: the move mix on tempered copies (likelihood to a power) and exchanges
    between adjacent temperatures (:func:`run_tempered_step`).
:mod:`.step`
    One step as one call (:func:`run_step`) of a :class:`MoveMix`, returning the fields
    of a :class:`StepResult` (:func:`run_gibbs_step` for a mix of Gibbs sweeps only, which
    compiles without the split-merge move).

To add a move: write it in its own module on the three bundles (use :mod:`.slots` to move items
so that the statistics, form caches and log marginals stay consistent), give :class:`MoveMix` a
field for how often it runs and call it from :func:`run_step`. Every kernel is compiled with
:data:`NJIT` (``cache=True``). Numba's disk cache does not see changes in *other* modules a
kernel calls: after editing a callee, clear the ``__pycache__`` of this package.
"""

from .gibbs import BLOCK, gibbs_sweep, visiting_order
from .particle import MAX_PARTICLES, particle_filter, particle_move
from .recut import recut_filter, recut_move
from .sams import sams_informed_order, sams_log_q, sams_move, sequential_allocation
from .split_merge import restricted_scan, split_merge_log_q, split_merge_move
from .state import (
    NJIT,
    Model,
    State,
    Work,
    allocate,
    build_state,
    state_log_posterior,
)
from .step import (
    STEP_RESULT_INDEX,
    MoveMix,
    StepResult,
    canonical_relabel,
    compiled_entry,
    run_gibbs_step,
    run_particle_step,
    run_step,
)
from .tempering import run_tempered_step

__all__ = [
    "Model",
    "State",
    "Work",
    "MoveMix",
    "StepResult",
    "STEP_RESULT_INDEX",
    "NJIT",
    "BLOCK",
    "allocate",
    "compiled_entry",
    "run_step",
    "run_gibbs_step",
    "run_particle_step",
    "run_tempered_step",
    "build_state",
    "state_log_posterior",
    "canonical_relabel",
    "visiting_order",
    "gibbs_sweep",
    "split_merge_move",
    "restricted_scan",
    "split_merge_log_q",
    "sams_move",
    "sequential_allocation",
    "sams_log_q",
    "sams_informed_order",
    "particle_move",
    "particle_filter",
    "MAX_PARTICLES",
    "recut_move",
    "recut_filter",
]
