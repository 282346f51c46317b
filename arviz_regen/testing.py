"""Synthetic partition chains with a known target, for tests, benchmarks and examples.

A small "universe" of distinct partitions with known probabilities stands in for a posterior:
exact (iid) draws, and a reversible Metropolis chain that is as sticky as wanted but leaves the
target invariant, are both cheap, so calibration and coverage can be checked by simulation.
"""

from __future__ import annotations

import numpy as np

from ._containers import from_dict
from ._numba import lazy_njit
from .state import canonicalize, state_keys

__all__ = ["random_partitions", "iid_chain", "metropolis_chain", "make_idata", "zipf_probs"]


def random_partitions(n_states, n_items, rng, max_clusters=None):
    """``n_states`` distinct canonical label vectors of ``n_items`` items (random partitions)."""
    rng = np.random.default_rng(rng)
    max_clusters = max_clusters or n_items
    out, seen = [], set()
    while len(out) < n_states:
        n_c = rng.integers(1, max_clusters + 1)
        lab = canonicalize(rng.integers(0, n_c, size=n_items))
        key = int(state_keys(lab[None], assume_canonical=True)[0]) if n_items <= 16 else lab.tobytes()
        if key not in seen:
            seen.add(key)
            out.append(lab)
    return np.array(out)


def zipf_probs(n_states, exponent=1.5):
    """Decreasing probabilities p_i ∝ i^(−exponent)."""
    p = np.arange(1, n_states + 1, dtype=float) ** -exponent
    return p / p.sum()


def iid_chain(probs, n_chain, n_draw, rng):
    """Exact draws: state indices ``(n_chain, n_draw)`` iid from ``probs``."""
    rng = np.random.default_rng(rng)
    return rng.choice(len(probs), size=(n_chain, n_draw), p=np.asarray(probs) / np.sum(probs))


@lazy_njit(cache=True)
def _metropolis(logp, start, steps, unif, stay_u, stay):
    n_chain, n_draw = steps.shape
    S = logp.shape[0]
    out = np.empty((n_chain, n_draw), dtype=np.int64)
    for c in range(n_chain):
        x = start[c]
        for t in range(n_draw):
            if stay_u[c, t] >= stay:
                y = (x + steps[c, t]) % S
                if np.log(unif[c, t]) < logp[y] - logp[x]:
                    x = y
            out[c, t] = x
    return out


def metropolis_chain(probs, n_chain, n_draw, rng, *, stay=0.8, max_step=3, start=None):
    """Reversible, sticky Metropolis chain on state indices with stationary law ``probs``.

    Proposal: with probability ``1 − stay`` a symmetric step ±1 … ±``max_step`` on the cycle of
    states, accepted with min(1, p_y / p_x); otherwise stay. Detailed balance holds for ``probs``.
    ``start``: initial states (default: drawn from ``probs``, i.e. a stationary start).
    """
    rng = np.random.default_rng(rng)
    probs = np.asarray(probs, dtype=float)
    logp = np.log(probs / probs.sum())
    mag = rng.integers(1, max_step + 1, size=(n_chain, n_draw))
    steps = np.where(rng.random((n_chain, n_draw)) < 0.5, mag, -mag).astype(np.int64)
    unif = rng.random((n_chain, n_draw))
    stay_u = rng.random((n_chain, n_draw))
    if start is None:
        start = rng.choice(probs.size, size=n_chain, p=probs / probs.sum())
    start = np.broadcast_to(np.asarray(start, dtype=np.int64), (n_chain,)).copy()
    return _metropolis(logp, start, steps, unif, stay_u, float(stay))


def make_idata(states, index, logp_states, var_name="z", logp_shift=0.0):
    """Draws in the SPEC layout from state labels and per-draw state indices: an InferenceData
    on ArviZ 0.x, a DataTree on ArviZ 1.x (what that generation's ``pm.sample`` returns).

    Parameters
    ----------
    states : (n_states, n_items) canonical labels
    index : (n_chain, n_draw) state index of each draw
    logp_states : (n_states,) log unnormalized probabilities
    logp_shift : float
        Constant added to ``partition_logp`` (it is unnormalized).
    """
    states = np.asarray(states, dtype=np.int64)
    index = np.asarray(index)
    labels = states[index]
    groups = {
        "posterior": {var_name: labels},
        "sample_stats": {
            "partition_logp": np.asarray(logp_states, dtype=float)[index] + logp_shift,
            "n_clusters": labels.max(axis=-1) + 1,
        },
    }
    return from_dict(groups, dims={var_name: [f"{var_name}_dim_0"]})
