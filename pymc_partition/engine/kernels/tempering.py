"""Replica exchange (parallel tempering) of the partition posterior, in one compiled step.

``R`` copies of the partition, copy ``r`` at likelihood power ``beta_t`` (``1 = beta_0 >
beta_1 > ... > beta_{R-1} >= 0``): the joint target is ``prod_t pi(z_t) L(z_t)^beta_t``, ``pi`` the
partition prior (``log pi = log_g[C] + sum_c log_h[n_c]``) and ``L`` the marginal likelihood
(the product of the clusters' log marginals ``clm``). Its first factor is the posterior, so the
copy at ``beta_0 = 1`` (the *cold* copy) is recorded and the others are auxiliary.

Each round, every copy makes the move mix (:class:`~.step.MoveMix`: merge-split proposals and
Gibbs sweeps, each with its weights and acceptance ratios for the copy's power, so each leaves
its factor invariant), then adjacent temperatures ``t, t + 1`` (all even ``t`` or all odd ``t``,
chosen at random) propose to exchange their states, accepted with probability
``min(1, exp((beta_t - beta_{t+1}) (log L(z_{t+1}) - log L(z_t))))``: the Metropolis ratio of
the joint target (the prior factors cancel). The states are not copied: the temperatures are
relabelled (``copy_at[t]`` is the copy at temperature ``t``), which is the same move.

Every piece leaves the joint target invariant, so the cold copy's draws have the posterior as
their stationary law whatever the ladder; the ladder only sets how well it mixes. (The
restricted-Gibbs split-merge move is not tempered: a mix with ``n_split_merge > 0`` is refused by
the callers.)
"""

from __future__ import annotations

import math

import numba

from .rng import randint, uniform
from .sams import sams_move
from .state import NJIT, build_state, state_log_posterior
from .step import _gibbs_sweeps, canonical_relabel

__all__ = ["log_likelihood", "run_tempered_step", "swap_round"]


@numba.njit(**NJIT)
def log_likelihood(s):
    """Return the marginal likelihood's log at state ``s``: the sum of its clusters' log marginals."""
    tot = 0.0
    for a in range(s.meta[0]):
        tot += s.clm[s.active[a]]
    return tot


@numba.njit(**NJIT)
def swap_round(rng, states, betas, copy_at, swap_acc, swap_prop):
    """Propose exchanges of adjacent temperatures (all even or all odd pairs); returns (accepted, proposed).

    ``swap_acc[t]`` and ``swap_prop[t]`` count the exchanges between temperatures ``t`` and ``t + 1``.
    """
    R = betas.shape[0]
    n_acc = 0
    n_prop = 0
    for t in range(randint(rng, 2), R - 1, 2):
        a = copy_at[t]
        b = copy_at[t + 1]
        log_acc = (betas[t] - betas[t + 1]) * (log_likelihood(states[b]) - log_likelihood(states[a]))
        swap_prop[t] += 1
        n_prop += 1
        if log_acc >= 0.0 or math.log(uniform(rng)) < log_acc:
            copy_at[t] = b
            copy_at[t + 1] = a
            swap_acc[t] += 1
            n_acc += 1
    return n_acc, n_prop


@numba.njit(**NJIT)
def run_tempered_step(rng, labels, reuse, fresh, models, states, w, mix, block, out_labels, betas, copy_at,
                      swap_acc, swap_prop):  # fmt: skip
    """One replica-exchange step; the cold copy's canonical labels into ``out_labels``.

    Parameters
    ----------
    rng : ndarray of uint64 (4,)
        The generator state (:mod:`.rng`), advanced in place.
    labels : ndarray of int64 (n,)
        The cold copy's labels, read unless ``reuse`` (the cold copy's cluster state holds them).
    reuse, fresh : bool
        ``fresh``: the tempered copies start from ``labels`` too (a new chain).
    models, states : tuples of Model and State (R,)
        One per copy (each model's context points to its copy's state); ``w`` is shared scratch.
    mix : MoveMix
        The moves each copy makes per round (``mix.n_split_merge`` must be 0), ``mix.thin`` rounds.
    block : int
        The Gibbs visiting order's block size.
    betas : ndarray of float64 (R,)
        Decreasing likelihood powers, ``betas[0] == 1``.
    copy_at : ndarray of int64 (R,)
        The copy at each temperature (updated in place by the exchanges).
    swap_acc, swap_prop : ndarray of int64 (R - 1,)
        Running counts of accepted and proposed exchanges per adjacent pair (updated in place).

    Returns
    -------
    tuple
        :class:`~.step.StepResult`'s fields for the cold copy (merge-split proposals and Gibbs
        sweeps counted over every copy), then the exchanges accepted and proposed in this step.
    """
    R = betas.shape[0]
    if fresh:
        for r in range(R):
            build_state(labels, models[r], states[r])
    elif not reuse:
        build_state(labels, models[copy_at[0]], states[copy_at[0]])
    kind = 0
    accepted = False
    n_acc = 0
    n_prop = 0
    n_sweeps = 0
    n_swaps = 0
    n_swap_acc = 0
    for _ in range(mix.thin):
        for t in range(R):
            r = copy_at[t]
            m = models[r]
            s = states[r]
            beta = betas[t]
            for _ in range(mix.n_sams):
                k, acc = sams_move(rng, m, s, w, mix.sams_split_probability, mix.sams_informed, beta)
                if k > 0:
                    n_prop += 1
                    if t == 0:
                        kind, accepted = k, acc
                if acc:
                    n_acc += 1
            n_sweeps += _gibbs_sweeps(rng, m, s, w, mix, block, beta)
        if R > 1:
            a, b = swap_round(rng, states, betas, copy_at, swap_acc, swap_prop)
            n_swap_acc += a
            n_swaps += b
    # every copy rebuilt exactly from its labels (no drift in the carried log marginals)
    for t in range(1, R):
        r = copy_at[t]
        canonical_relabel(states[r].z, w.order)
        build_state(w.order, models[r], states[r])
    cold = copy_at[0]
    canonical_relabel(states[cold].z, out_labels)
    build_state(out_labels, models[cold], states[cold])
    logp = state_log_posterior(models[cold], states[cold])
    return logp, states[cold].meta[0], kind, accepted, n_acc, n_prop, n_sweeps, n_swap_acc, n_swaps
