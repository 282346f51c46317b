"""One sampler step as one compiled call: the move mix, run thinned, and its result by name.

Random numbers come from an explicit generator state (:mod:`.rng`, a ``uint64[4]`` array) that
the driver owns, seeds from its numpy ``Generator`` and passes to every step, which advances it
in place: a PyMC ``random_seed`` fixes the draws, and no kernel touches numba's global generator.
The cluster log marginals carried along by the moves are recomputed by the form's ``init`` from
exact sums at the end of each step.
"""

from __future__ import annotations

from collections import namedtuple

import numba
import numpy as np

from .gibbs import gibbs_sweep
from .particle import particle_move
from .recut import recut_move
from .rng import uniform
from .sams import sams_move
from .split_merge import split_merge_move
from .state import NJIT, build_state, state_log_posterior

__all__ = [
    "MoveMix",
    "StepResult",
    "STEP_RESULT_INDEX",
    "run_step",
    "run_gibbs_step",
    "run_particle_step",
    "compiled_entry",
    "canonical_relabel",
]

MoveMix = namedtuple(
    "MoveMix",
    "n_gibbs n_split_merge n_scans gibbs_probability thin n_sams sams_split_probability sams_informed "
    "n_particles resplit_probability recut_clusters",
    defaults=(0, 0.0, False, 1, 0.0, 2),
)
MoveMix.__doc__ = """The moves of one step (built by the step methods, read by :func:`run_step`).

``thin`` times over: ``n_split_merge`` restricted-Gibbs split-merge proposals, each from a launch
state built by ``n_scans`` restricted scans, then ``n_sams`` sequentially allocated merge-split
proposals (default 0), then ``n_gibbs`` Gibbs sweeps plus one more with probability
``gibbs_probability``. The merge-split proposals pick their pair uniformly
(``sams_split_probability`` 0.0) or balanced between splits and merges (the probability of a
split), and allocate in a random or (``sams_informed``) the informed order (:mod:`.sams`);
with ``n_particles`` > 1 (at most :data:`.particle.MAX_PARTICLES`) each is a particle Gibbs
split-merge proposal with that many particles (:mod:`.particle`; :func:`run_particle_step`), a
re-split of two clusters with probability ``resplit_probability`` (with ``recut_clusters`` > 2 a
particle Gibbs re-cut of that many neighbouring clusters instead, :mod:`.recut`).
Integers are Python ints, probabilities floats and ``sams_informed`` a bool, so that every
mix has the same numba type (one compiled :func:`run_step`).
"""

StepResult = namedtuple(
    "StepResult",
    "partition_logp n_clusters proposal proposal_accepted n_proposals_accepted n_proposals n_gibbs_sweeps",
)
StepResult.__doc__ = """The fields of what :func:`run_step` returns: the sampler statistics.

The kernel returns a plain tuple in this order: boxing a named tuple out of compiled code calls
its Python constructor at every step, a few percent of a Gibbs sweep of 14 items.
:meth:`~pymc_partition.engine.PartitionKernel.step` names it with ``tuple.__new__(StepResult,
res)`` (no constructor call); :data:`STEP_RESULT_INDEX` gives each field's position.

``partition_logp`` the log posterior of the final state, ``n_clusters`` its number of clusters,
``proposal`` the kind of the last merge-split proposal of either kind (0 none, 1 split, 2 merge,
3 re-split: :mod:`.particle`)
and ``proposal_accepted`` whether it was accepted, ``n_proposals_accepted`` and ``n_proposals``
the merge-split proposals (of both kinds) accepted and made, ``n_gibbs_sweeps`` the Gibbs sweeps made.
"""

#: position of each :class:`StepResult` field in the tuple :func:`run_step` returns
STEP_RESULT_INDEX = {name: i for i, name in enumerate(StepResult._fields)}


def compiled_entry(dispatcher, args):
    """Return the compiled entry point of ``dispatcher`` for the types of ``args``, or the dispatcher.

    Calling it skips numba's typing of the arguments on every call (for the named tuples of
    :func:`run_step`, a tenth of a Gibbs sweep of the paper's 14 items). The caller must keep
    passing arguments of the same types.
    """
    sig = tuple(numba.typeof(a) for a in args)
    cres = dispatcher.overloads.get(sig)
    return getattr(cres, "entry_point", None) or dispatcher


@numba.njit(**NJIT)
def canonical_relabel(z, out):
    """Canonical labels (restricted growth string) of slot assignment ``z`` into ``out``."""
    n = z.shape[0]
    mp = np.full(n, -1, dtype=np.int64)
    nxt = 0
    for i in range(n):
        c = z[i]
        if mp[c] < 0:
            mp[c] = nxt
            nxt += 1
        out[i] = mp[c]
    return nxt


@numba.njit(**NJIT, inline="always")
def _gibbs_sweeps(rng, m, s, w, mix, block, beta=1.0):
    """``mix.n_gibbs`` Gibbs sweeps, one more with probability ``mix.gibbs_probability``; returns how many were made.

    ``beta``: the target's likelihood power (1 but in a tempered copy).
    """
    ng = mix.n_gibbs
    if mix.gibbs_probability > 0.0:
        if uniform(rng) < mix.gibbs_probability:
            ng += 1
    for _ in range(ng):
        gibbs_sweep(rng, m, s, w, block, beta)
    return ng


@numba.njit(**NJIT)
def _finish(m, s, out_labels):
    """Canonical labels into ``out_labels``, the cluster state rebuilt exactly from them, and its log posterior."""
    canonical_relabel(s.z, out_labels)
    build_state(out_labels, m, s)
    return state_log_posterior(m, s)


@numba.njit(**NJIT)
def run_gibbs_step(rng, labels, reuse, m, s, w, mix, block, out_labels):
    """:func:`run_step` for a mix of Gibbs sweeps only (``mix.n_split_merge == mix.n_sams == 0``).

    The same draws from the same generator state; it exists so that a Gibbs sampler's first call
    does not compile the split-merge move (about 40% of :func:`run_step`'s compile time).
    """
    if not reuse:
        build_state(labels, m, s)
    n_sweeps = 0
    for _ in range(mix.thin):
        n_sweeps += _gibbs_sweeps(rng, m, s, w, mix, block)
    logp = _finish(m, s, out_labels)
    return logp, s.meta[0], 0, False, 0, 0, n_sweeps  # StepResult's order


@numba.njit(**NJIT)
def run_step(rng, labels, reuse, m, s, w, mix, block, out_labels):
    """Make one step: split-merge, merge-split and Gibbs moves, ``mix.thin`` times over.

    In each round the split-merge proposals, the sequentially allocated merge-split proposals, then the Gibbs sweeps of
    ``mix`` (:class:`MoveMix`); ``block`` is the Gibbs visiting order's block size.

    Starts from the state left by the previous call if ``reuse``, else from ``labels``. Draws
    from the generator state ``rng`` (:mod:`.rng`, advanced in place). Writes canonical labels
    to ``out_labels``, rebuilds the cluster state from them exactly and returns the fields of a
    :class:`StepResult`, as a plain tuple.
    """
    if not reuse:
        build_state(labels, m, s)
    kind = 0
    accepted = False
    n_acc = 0
    n_prop = 0
    n_sweeps = 0
    for _ in range(mix.thin):
        for _ in range(mix.n_split_merge):
            kind, accepted = split_merge_move(rng, m, s, w, mix.n_scans)
            if kind > 0:
                n_prop += 1
            if accepted:
                n_acc += 1
        for _ in range(mix.n_sams):
            kind, accepted = sams_move(rng, m, s, w, mix.sams_split_probability, mix.sams_informed, 1.0)
            if kind > 0:
                n_prop += 1
            if accepted:
                n_acc += 1
        n_sweeps += _gibbs_sweeps(rng, m, s, w, mix, block)
    logp = _finish(m, s, out_labels)
    return logp, s.meta[0], kind, accepted, n_acc, n_prop, n_sweeps  # StepResult's order


@numba.njit(**NJIT)
def run_particle_step(rng, labels, reuse, m, s, w, mix, block, out_labels):
    """:func:`run_step` with particle Gibbs split-merge proposals (``mix.n_particles > 1``; :mod:`.particle`).

    ``mix.n_split_merge`` restricted-Gibbs split-merge proposals, ``mix.n_sams`` such proposals,
    then the Gibbs sweeps, ``mix.thin`` times over; with ``mix.recut_clusters`` > 2 a proposal is
    a re-cut of that many clusters (:func:`.recut.recut_move`) with probability
    ``mix.resplit_probability``. A function of its own so that the other mixes' first call does
    not compile the particle move (about 13 s of CPU).
    """
    if not reuse:
        build_state(labels, m, s)
    kind, accepted, n_acc, n_prop, n_sweeps = 0, False, 0, 0, 0
    for _ in range(mix.thin):
        for _ in range(mix.n_split_merge):
            kind, accepted = split_merge_move(rng, m, s, w, mix.n_scans)
            n_prop += kind > 0
            n_acc += accepted
        for _ in range(mix.n_sams):
            if mix.recut_clusters <= 2:
                kind, accepted = particle_move(rng, m, s, w, mix.n_particles, mix.sams_split_probability,
                                               mix.sams_informed, mix.resplit_probability)  # fmt: skip
            elif uniform(rng) < mix.resplit_probability:
                kind, accepted = recut_move(rng, m, s, w, mix.recut_clusters, mix.n_particles)
            else:
                kind, accepted = particle_move(rng, m, s, w, mix.n_particles, mix.sams_split_probability,
                                               mix.sams_informed, 0.0)  # fmt: skip
            n_prop += kind > 0
            n_acc += accepted
        n_sweeps += _gibbs_sweeps(rng, m, s, w, mix, block)
    logp = _finish(m, s, out_labels)
    return logp, s.meta[0], kind, accepted, n_acc, n_prop, n_sweeps  # StepResult's order
