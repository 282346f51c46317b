"""Synthetic partition chains with a known target, for tests, benchmarks and examples.

A small "universe" of distinct partitions with known probabilities stands in for a posterior:
exact (iid) draws, and a reversible Metropolis chain that is as sticky as wanted but leaves the
target invariant, are both cheap, so calibration and coverage can be checked by simulation.
"""

from __future__ import annotations

import numpy as np

from .base.lazy_jit import lazy_njit
from .base.state import canonicalize, state_keys
from .xr.containers import from_dict

__all__ = [
    "random_partitions",
    "iid_chain",
    "metropolis_chain",
    "spread_order",
    "excursion_chain",
    "two_basin_chain",
    "gibbs_chain",
    "make_idata",
    "zipf_probs",
    "BlockModel",
    "block_chain",
]


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


def spread_order(n_states):
    """Places on a cycle of ``n_states`` for the states ranked 0, 1, 2, …: far apart.

    Rank 0 sits at place 0; each next rank takes the free place farthest (on the cycle) from the
    places already taken (ties: the lowest place). The most probable states thus lie far apart
    along the path of a chain that moves by small steps on the cycle.
    """
    n_states = int(n_states)
    taken = [0]
    free = np.ones(n_states, dtype=bool)
    free[0] = False
    places = np.arange(n_states)
    dist = np.minimum(places, n_states - places)  # distance to the taken set so far
    while len(taken) < n_states:
        cand = np.flatnonzero(free)
        nxt = int(cand[np.argmax(dist[cand])])
        taken.append(nxt)
        free[nxt] = False
        d_new = np.abs(places - nxt)
        dist = np.minimum(dist, np.minimum(d_new, n_states - d_new))
    return np.array(taken, dtype=np.int64)


def excursion_chain(probs, n_chain, n_draw, rng, *, stay=0.5, max_step=1):
    """Return a correct chain that reaches its top states only through long excursions.

    The states (indexed by rank: ``probs`` decreasing) are laid out on a cycle by
    :func:`spread_order`, so that between two top states lie many improbable ones; the chain is
    :func:`metropolis_chain` on that cycle (reversible, stationary law ``probs``, stationary
    start). From the most probable state (the regeneration state) the chain must cross a
    valley of improbable states to reach the next top state, and it then stays in that region
    for a long, highly variable time: the visits to each top state come in a few large clumps.

    Returns
    -------
    numpy.ndarray of int64, shape (n_chain, n_draw)
        The rank of the state of every draw (0: the most probable).
    """
    probs = np.asarray(probs, dtype=float)
    place = spread_order(probs.size)  # place[rank]
    rank_at = np.empty_like(place)
    rank_at[place] = np.arange(place.size)
    idx = metropolis_chain(probs[rank_at], n_chain, n_draw, rng, stay=stay, max_step=max_step)
    return rank_at[idx]


def two_basin_chain(probs, n_chain, n_draw, rng, *, cross=1e-3):
    """Return a correct chain that switches rarely between two basins of states.

    States of even rank form one basin, odd ranks the other (so each basin holds top states).
    Each draw proposes, with probability ``1 − cross``, a state uniform in the current basin and,
    with probability ``cross``, one uniform in the other basin; Metropolis acceptance with
    ``probs``. The proposal is symmetric (both basins have ``len(probs) / 2`` states), so the
    chain is reversible with stationary law ``probs``; it starts from it. The basins are crossed
    about ``cross`` × acceptance times per draw.

    Returns
    -------
    numpy.ndarray of int64, shape (n_chain, n_draw)
    """
    rng = np.random.default_rng(rng)
    probs = np.asarray(probs, dtype=float)
    if probs.size % 2:
        raise ValueError("`probs` needs an even number of states (two basins of equal size).")
    logp = np.log(probs / probs.sum())
    basin = np.arange(probs.size) % 2
    members = np.stack([np.flatnonzero(basin == b) for b in (0, 1)])
    m = members.shape[1]
    x = rng.choice(probs.size, size=n_chain, p=probs / probs.sum())
    out = np.empty((n_chain, n_draw), dtype=np.int64)
    for t in range(n_draw):
        u = rng.random((3, n_chain))
        b = basin[x] ^ (u[0] < cross)
        y = members[b, np.minimum((u[1] * m).astype(np.int64), m - 1)]
        x = np.where(np.log(u[2]) < logp[y] - logp[x], y, x)
        out[:, t] = x
    return out


def gibbs_chain(states, logp_states, n_chain, n_draw, rng, *, thin=1):
    """Exact single-item Gibbs sampler on a complete universe of partitions.

    ``states`` must hold every partition of its items (canonical labels, e.g. all 4,140 of 8
    items) with log unnormalized probabilities ``logp_states``. Each step picks an item at
    random and draws its cluster from its full conditional (every existing cluster of the
    other items, or a new one): the random-scan Gibbs sampler, reversible with stationary law
    ∝ exp(logp). Stationary start; ``thin`` steps per draw.

    Returns
    -------
    numpy.ndarray of int64, shape (n_chain, n_draw)
        State indices.
    """
    rng = np.random.default_rng(rng)
    states = np.asarray(states, dtype=np.int64)
    logp = np.asarray(logp_states, dtype=float)
    S, n = states.shape
    where = {tuple(row): j for j, row in enumerate(states.tolist())}
    nb = np.full((S, n, n + 1), -1, dtype=np.int64)
    for j, row in enumerate(states.tolist()):
        for i in range(n):
            others = sorted({row[a] for a in range(n) if a != i})
            for c, lab in enumerate(others + [max(row) + 1]):
                moved = list(row)
                moved[i] = lab
                key = tuple(canonicalize(np.array([moved]))[0].tolist())
                if key not in where:
                    raise ValueError("`states` is not closed under single-item moves (not every partition).")
                nb[j, i, c] = where[key]
    w = np.where(nb >= 0, np.exp(logp[np.maximum(nb, 0)] - logp.max()), 0.0)
    cum = np.cumsum(w, axis=-1)
    p = np.exp(logp - logp.max())
    x = rng.choice(S, size=n_chain, p=p / p.sum())
    out = np.empty((n_chain, n_draw), dtype=np.int64)
    rows = np.arange(n_chain)
    for t in range(n_draw):
        for _ in range(thin):
            i = rng.integers(0, n, size=n_chain)
            c = cum[x, i]
            k = np.minimum((c < rng.random(n_chain)[:, None] * c[:, -1:]).sum(axis=1), n)
            x = nb[x, i, k]
        out[rows, t] = x
    return out


def make_idata(states, index, logp_states, var_name="z", logp_shift=0.0):
    """Make draws in the SPEC layout from state labels and per-draw state indices.

    An InferenceData on ArviZ 0.x, a DataTree on ArviZ 1.x (what that generation's ``pm.sample`` returns).

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


@lazy_njit(cache=True)
def _block_kernel(rng, homes, cum_other, rho, switch, modes, n_draw, burn):
    """Labels (chain, draw, item) of :func:`block_chain` (not canonical).

    ``rng``: a numpy ``Generator`` (numba draws from it: no global seeding).
    """
    n_chain = modes.shape[0]
    n_items = homes.shape[1]
    n_lab = cum_other.shape[0]
    out = np.empty((n_chain, n_draw, n_items), dtype=np.int64)
    lab = np.empty(n_items, dtype=np.int64)
    for c in range(n_chain):
        mode = modes[c]
        for i in range(n_items):  # labels start from the target given the mode
            lab[i] = -1
        for t in range(-burn, n_draw):
            if switch > 0.0 and rng.random() < switch:
                mode = 1 - mode
            for i in range(n_items):
                if lab[i] < 0 or rng.random() < rho:
                    # fresh draw: the home block with probability cum_other[0], else another label
                    u = rng.random()
                    if u < cum_other[0]:
                        lab[i] = homes[mode, i]
                    else:
                        k = 1
                        while k < n_lab - 1 and u >= cum_other[k]:
                            k += 1
                        # labels other than home: a cyclic shift of the label set past home
                        lab[i] = (homes[mode, i] + k) % n_lab
            if t >= 0:
                for i in range(n_items):
                    out[c, t, i] = lab[i]
    return out


class BlockModel:
    """Partitions of many items that never recur: items wander around a block structure.

    Each item has a home among ``n_blocks`` blocks of equal size and, at every draw, with
    probability ``rho`` it redraws its label: its home block with probability ``1 − eps``,
    otherwise, uniformly, one of the other blocks or of ``n_extra`` small extra clusters. Items move
    independently, so with a few hundred items no partition is ever visited twice, and the number of
    clusters varies (the extra clusters come and go).
    ``rho`` sets the speed of mixing (integrated autocorrelation time (2 − rho)/rho for an item).

    Two modes: mode 0 puts item i in block ``i // block_size``; mode 1 is the same structure
    with items swapped between blocks (half of each even block with half of the next one), a
    genuinely different partition with the same block sizes. The two are images of each other
    under a permutation of the items, so every item-exchangeable statistic (the number of
    clusters, cluster sizes, the log of an exchangeable prior such as ``partition_logp`` here)
    has the same distribution in both: chains trapped in different modes look alike to R-hat of
    ``n_clusters`` and ``partition_logp``.

    ``partition_logp`` is the log of the Chinese restaurant process prior with α = 1 (up to a
    constant), Σ_c log Γ(n_c): a label-invariant function of the partition, as a sampler records.
    """

    def __init__(self, n_items=200, n_blocks=4, n_extra=6, eps=0.1):
        if n_items % (2 * n_blocks):
            raise ValueError("`n_items` must be a multiple of 2 * n_blocks (blocks of equal, even size).")
        self.n_items, self.n_blocks, self.n_extra, self.eps = int(n_items), int(n_blocks), int(n_extra), float(eps)
        size = n_items // n_blocks
        home_a = np.arange(n_items) // size
        home_b = home_a.copy()
        half = size // 2
        for blk in range(0, n_blocks - 1, 2):  # swap half of block blk with half of block blk + 1
            a = np.arange(blk * size, blk * size + half)
            b = np.arange((blk + 1) * size, (blk + 1) * size + half)
            home_b[a], home_b[b] = blk + 1, blk
        self.homes = np.stack([home_a, home_b]).astype(np.int64)
        n_lab = n_blocks + n_extra
        # label offsets past home (cyclically): 0 (home) with probability 1 − eps, each other
        # label (the other blocks, the extra clusters) with eps / (n_lab − 1)
        p = np.full(n_lab, eps / (n_lab - 1))
        p[0] = 1.0 - eps
        self._cum = np.cumsum(p)
        self._cum[-1] = 1.0

    def chains(self, n_chain, n_draw, rng, *, rho=0.5, switch=0.0, modes=None, burn=None):
        """Canonical labels ``(n_chain, n_draw, n_items)`` and ``partition_logp`` ``(n_chain, n_draw)``.

        Parameters
        ----------
        rho : float
            Probability that an item redraws its label at a draw (1: independent draws).
        switch : float
            Probability per draw that the chain switches mode (0: each chain stays in its mode).
            With ``switch > 0`` and a random start every chain targets the 50/50 mixture of the
            two modes: a correct sampler whose mode switches are rare when ``switch`` is small.
        modes : array_like of int, optional
            Starting mode of each chain (default: 0 for all when ``switch == 0``, random otherwise).
        burn : int, optional
            Draws discarded first (default 20/rho, plus 5/switch with switching): a stationary start.
        """
        rng = np.random.default_rng(rng)
        if modes is None:
            modes = rng.integers(0, 2, size=n_chain) if switch > 0 else np.zeros(n_chain, dtype=np.int64)
        modes = np.broadcast_to(np.asarray(modes, dtype=np.int64), (n_chain,)).copy()
        if burn is None:
            burn = int(20 / rho) + (int(5 / switch) if switch > 0 else 0)
        raw = _block_kernel(rng, self.homes, self._cum, float(rho), float(switch), modes, int(n_draw), int(burn))
        labels = canonicalize(raw)
        return labels, _crp_logp(labels)


def _crp_logp(labels):
    """Σ_c log Γ(n_c) of each label vector (…, n_items)."""
    from math import lgamma

    flat = labels.reshape(-1, labels.shape[-1])
    n_lab = int(flat.max()) + 1
    sizes = np.zeros((flat.shape[0], n_lab), dtype=np.int64)
    np.add.at(sizes, (np.repeat(np.arange(flat.shape[0]), flat.shape[1]), flat.ravel()), 1)
    table = np.array([0.0] + [lgamma(m) for m in range(1, flat.shape[1] + 1)])
    return table[sizes].sum(axis=1).reshape(labels.shape[:-1])


def block_chain(model, n_chain, n_draw, rng, *, var_name="z", **kwargs):
    """Draws of :meth:`BlockModel.chains` as an InferenceData / DataTree (``make_idata`` layout)."""
    labels, logp = model.chains(n_chain, n_draw, rng, **kwargs)
    groups = {
        "posterior": {var_name: labels},
        "sample_stats": {"partition_logp": logp, "n_clusters": labels.max(axis=-1) + 1},
    }
    return from_dict(groups, dims={var_name: [f"{var_name}_dim_0"]})
