"""The regeneration engine: tours of every chain, sums over them, pooling, RS estimates, Datasets.

Every regenerative quantity of this package is built the same way. The draws of a partition
variable are reduced to a state index per draw (:func:`arviz_regen.xr.draws.load_partition`); a
regeneration state δ is chosen (per chain, or one for all chains); the visits
τ_0 < … < τ_R to δ cut each chain into R whole tours (:class:`Tours`). A function of the state
enters only through its per-tour sums s_r and the tour lengths N_r, accumulated as the running
sums Σs, Σs², ΣNs, ΣN, ΣN² (:class:`RSSums`) after any number of tours, so that

- an estimate at the end of a chain, or at each of many draws (the tours completed by then:
  :meth:`Tours.tours_at`), is a lookup in the same running sums;
- pooling chains is a sum over the chain axis (:meth:`RSSums.pooled`): all chains regenerate at
  the same state, so their tours are iid together;
- the RS mean and standard error (univariate eq. regvar) follow from the five sums
  (:func:`arviz_regen.base.tours.rs_from_sums`).

The per-tour sums come from *state values* (an array ``(n_states, ...)``: one value per visited
state, :func:`state_rs_kernel`) or from a *kernel*, a function
``kernel(index, tau, eval_r) -> (Σs, Σs², ΣNs)`` of one chain that never materializes one value
per draw (the co-clustering kernel of :mod:`arviz_regen.estimates.coclustering` sums n(n−1)/2 pair
indicators over runs of identical states). Hotelling-RS uses :meth:`Tours.visit_counts`.

When the regeneration state recurs too rarely (fewer than :data:`MIN_TOURS` whole tours), the
same functions fall back to plain means over the draws with batch-means standard errors
(:mod:`arviz_regen.base.batch_means`), through the same two routes (state values or a streaming
kernel ``kernel(index, positions) -> BatchSums``); :func:`resolve_se_method` makes that choice and
says so in one :class:`NonRecurrenceWarning`. :func:`assemble` builds the output Dataset with the
dimension names every public function shares: ``chain``, ``draw``, then the function's own
(``k``, ``rank``, ``item_i``/``item_j``, ``<name>_dim_0`` …).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import xarray as xr

from ..base.batch_means import LUGSAIL_R, batch_sums
from ..base.tours import completed_tours, regeneration_times, rs_from_sums, tour_sums, tour_visit_counts
from .draws import regeneration_state

__all__ = [
    "MIN_TOURS",
    "SE_METHODS",
    "NonRecurrenceWarning",
    "SampledHyperparametersWarning",
    "Tours",
    "RSSums",
    "Regeneration",
    "find_tours",
    "eval_positions",
    "state_rs_kernel",
    "state_bm_kernel",
    "resolve_se_method",
    "regenerate",
    "estimate",
    "assemble",
]

#: Fewest whole tours (per chain, or pooled with ``combined=True``) for regenerative estimates
#: under ``se_method="auto"``. The RS standard error is itself estimated from the R tours (about
#: R − 1 degrees of freedom), so with few tours it is unreliable: for Gaussian tour sums ±1.96 se
#: covers 92% at R = 10 (t quantile 2.26), 88% at R = 5, 81% at R = 3; in our simulation (iid
#: draws over 8 states, n_clusters and a co-clustering indicator) 95% RS intervals covered
#: 70-73% at a median 4 tours, 83-85% at 8, 90-92% at 17 and 92-93% at 35. Below 10 tours the
#: regeneration state is "visited too rarely": batch means over the draws are used instead
#: (whose error does not depend on returns to one state). At and above it RS is kept: for a
#: chain whose autocorrelation time is long compared with √n, RS standard errors from a few
#: dozen tours are more honest than batch means with batches of √n draws.
MIN_TOURS = 10

#: accepted values of the ``se_method`` keyword
SE_METHODS = ("auto", "regenerative", "batch_means")


class NonRecurrenceWarning(UserWarning):
    """The regeneration state recurs too rarely: batch-means estimates are used instead."""


class SampledHyperparametersWarning(NonRecurrenceWarning):
    """The log posterior differs between draws of the same partition (hyperparameters sampled alongside).

    Visits to a state are not regenerations, batch-means estimates are used instead.
    """


class RSSums(NamedTuple):
    """Running sums over whole tours behind RS estimates; leading dims ``lead``.

    ``s1, s2, sns`` (lead + fshape): Σ s_r, Σ s_r², Σ N_r s_r; ``sn, snn`` (lead): Σ N_r, Σ N_r²;
    ``n_tours`` (lead): R.
    """

    s1: np.ndarray
    s2: np.ndarray
    sns: np.ndarray
    sn: np.ndarray
    snn: np.ndarray
    n_tours: np.ndarray

    def pooled(self, axis=0):
        """Pool chains (``axis``): the tours of all chains together."""
        return RSSums(*(np.asarray(a).sum(axis=axis) for a in self))

    def mean_se(self):
        """RS mean and standard error (NaN mean without tours, NaN se with fewer than two)."""
        return rs_from_sums(self.s1, self.s2, self.sns, self.sn, self.snn, self.n_tours)


def _cum0(a):
    """Return the running sums with a leading zero row: row r is the sum of the first r rows."""
    a = np.asarray(a, dtype=float)
    return np.concatenate([np.zeros((1,) + a.shape[1:]), np.cumsum(a, axis=0)], axis=0)


@dataclass(frozen=True)
class Tours:
    """Regeneration times of every chain.

    Attributes
    ----------
    index : numpy.ndarray of int64, shape (n_chain, n_draw)
        State index of every draw.
    regen : numpy.ndarray of int64, shape (n_chain,)
        Regeneration state of each chain (the same for all chains unless given per chain).
    tau : tuple of numpy.ndarray
        Visits τ_0 < … < τ_R to the regeneration state, one array per chain.
    n_states : int
        Number of states the indices refer to.
    """

    index: np.ndarray
    regen: np.ndarray
    tau: tuple
    n_states: int

    @property
    def n_chain(self):
        return self.index.shape[0]

    @property
    def n_draw(self):
        return self.index.shape[1]

    @property
    def n_tours(self):
        """Whole tours of each chain, shape (n_chain,)."""
        return np.array([max(t.size - 1, 0) for t in self.tau], dtype=np.int64)

    def lengths(self, c):
        """Tour lengths N_r of chain ``c`` (int64, shape (R,))."""
        return np.diff(self.tau[c])

    def completed(self):
        """Whole tours completed by each draw, shape (n_chain, n_draw).

        Tour r is complete at the draw τ_r that starts the next one, so the count at draw t is
        (visits to δ at draws ≤ t) − 1, floored at 0.
        """
        return np.stack([completed_tours(self.index[c] == self.regen[c]) for c in range(self.n_chain)])

    def eval_tours(self, c, positions=None):
        """Tours completed by each draw in ``positions`` for chain ``c`` (default: all of them)."""
        if positions is None:
            return np.array([max(self.tau[c].size - 1, 0)], dtype=np.int64)
        return completed_tours(self.index[c] == self.regen[c])[np.asarray(positions, dtype=np.int64)]

    def tours_at(self, positions=None):
        """Tours completed by each evaluation draw, shape (n_chain, E) (E = 1 without positions)."""
        return np.stack([self.eval_tours(c, positions) for c in range(self.n_chain)])

    def tour_sums(self, state_values):
        """Per-chain tour sums of per-state values: a list of ``(s (R, ...), N (R,))``."""
        values = np.asarray(state_values, dtype=float)
        out = []
        for c in range(self.n_chain):
            tau = self.tau[c]
            out.append(tour_sums(values[self.index[c]] if tau.size > 1 else values[:0], tau))
        return out

    def visit_counts(self, states):
        """Visits of ranked states per tour and the tour lengths, per chain (for Hotelling-RS).

        Parameters
        ----------
        states : array_like of int, shape (K,), or a sequence of one such array per chain
            State indices in rank order (typically the top states; rank 0 the regeneration state).

        Returns
        -------
        list of (counts, lengths)
            counts (R_c, K) float: visits to the state of rank i during tour r; lengths (R_c,) float.
        """
        per_chain = isinstance(states, (list, tuple)) and len(states) > 0 and np.ndim(states[0]) == 1
        if per_chain and len(states) != self.n_chain:
            raise ValueError(f"`states` must give one array per chain ({self.n_chain}), got {len(states)}.")
        out = []
        for c in range(self.n_chain):
            st = np.asarray(states[c] if per_chain else states, dtype=np.int64)
            rank_of = np.full(self.n_states, -1, dtype=np.int64)
            rank_of[st] = np.arange(st.size)
            out.append(tour_visit_counts(rank_of[self.index[c]], self.tau[c], st.size))
        return out

    def rs_sums(self, kernel, positions=None):
        """:class:`RSSums` of every chain, leading dims (n_chain, E).

        Parameters
        ----------
        kernel : callable
            ``kernel(index, tau, eval_r) -> (Σs, Σs², ΣNs)`` for one chain: running sums over
            its first ``eval_r[e]`` tours (sorted), leading dimension len(eval_r); see
            :func:`state_rs_kernel`.
        positions : array_like of int, optional
            Evaluation draws (tours completed by each); default the end of the chains.
        """
        parts, sn, snn, nt = [], [], [], []
        for c in range(self.n_chain):
            eval_r = self.eval_tours(c, positions)
            parts.append(kernel(self.index[c], self.tau[c], eval_r))
            n = self.lengths(c).astype(float)
            sn.append(_cum0(n)[eval_r])
            snn.append(_cum0(n * n)[eval_r])
            nt.append(eval_r)
        s1, s2, sns = (np.stack([p[i] for p in parts]) for i in range(3))
        return RSSums(s1, s2, sns, np.stack(sn), np.stack(snn), np.stack(nt))


def find_tours(index, regen, n_states=None):
    """:class:`Tours` of every chain.

    Parameters
    ----------
    index : array_like of int, shape (n_chain, n_draw)
        State index of every draw.
    regen : int or array_like of int, shape (n_chain,)
        Regeneration state, for all chains or per chain.
    n_states : int, optional
        Number of states (default: ``index.max() + 1``).
    """
    index = np.ascontiguousarray(index, dtype=np.int64)
    if index.ndim != 2:
        raise ValueError(f"`index` must be (chain, draw), got shape {index.shape}.")
    regen = np.broadcast_to(np.asarray(regen, dtype=np.int64), (index.shape[0],)).copy()
    tau = tuple(regeneration_times(index[c] == regen[c]) for c in range(index.shape[0]))
    if n_states is None:
        n_states = int(index.max()) + 1 if index.size else 0
    return Tours(index, regen, tau, int(n_states))


def eval_positions(n_draw, n_points):
    """``n_points`` evenly spaced draw indices including the last (None: every draw)."""
    if n_points is None:
        return np.arange(n_draw)
    if int(n_points) < 1:
        raise ValueError(f"`n_points` must be a positive int or None, got {n_points!r}.")
    return np.unique(np.linspace(0, n_draw - 1, int(n_points)).round().astype(np.int64))


def state_rs_kernel(state_values):
    """RS kernel of per-state values ``(n_states, ...)`` (one value per draw, summed by tour)."""
    values = np.asarray(state_values, dtype=float)

    def kernel(index, tau, eval_r):
        s, _ = tour_sums(values[index] if tau.size > 1 else values[:0], tau)
        s = np.asarray(s, dtype=float)
        n = np.diff(tau).astype(float) if tau.size > 1 else np.zeros(0)
        nb = np.expand_dims(n, tuple(range(1, s.ndim)))
        return _cum0(s)[eval_r], _cum0(s * s)[eval_r], _cum0(nb * s)[eval_r]

    return kernel


def state_bm_kernel(state_values, r=LUGSAIL_R):
    """Batch-means kernel of per-state values: ``kernel(index, positions) -> BatchSums``."""
    values = np.asarray(state_values, dtype=float)

    def kernel(index, positions):
        return batch_sums(values[index], positions, r=r)

    return kernel


def resolve_se_method(tours, se_method="auto", *, combined=False, what="estimates", min_tours=MIN_TOURS, stacklevel=3):
    """Return the standard-error method to use: ``"regenerative"`` or ``"batch_means"``.

    ``"auto"`` keeps regenerative sampling when every chain (``combined=False``) or the pooled
    chains (``combined=True``) complete at least ``min_tours`` whole tours (see
    :data:`MIN_TOURS`); otherwise it falls back to batch means with one
    :class:`NonRecurrenceWarning` that says what happened and what to do. ``what`` names the
    calling function in that message; ``stacklevel`` is passed to :func:`warnings.warn` (3: the
    caller of the public function that calls this).
    """
    if se_method not in SE_METHODS:
        raise ValueError(f"`se_method` must be one of {SE_METHODS}, got {se_method!r}.")
    if se_method != "auto":
        return se_method
    n_tours = tours.n_tours
    have = int(n_tours.sum()) if combined or not n_tours.size else int(n_tours.min())
    if have >= min_tours:
        return "regenerative"
    if combined:
        detail = f"{have} whole tour{'s' if have != 1 else ''} pooled over {tours.n_chain} chain(s)"
        need = f"at least {min_tours} pooled"
    else:
        detail = "whole tours per chain: " + ", ".join(str(int(r)) for r in n_tours)
        need = f"at least {min_tours} in every chain"
    if not combined and n_tours.max() >= min_tours:
        few = [int(c) for c in np.flatnonzero(n_tours < min_tours)]
        why = (
            f"Other chains do return to it, so chain(s) at position {few} may be stuck away from "
            "them: a convergence problem (see hotelling_rs and the per-chain estimates)."
        )
    else:
        why = (
            f"{tours.n_states} distinct states in {tours.n_chain} x {tours.n_draw} draws: the chains "
            "rarely return to any one state (too few draws, or a flat or high-dimensional posterior)."
        )
    warnings.warn(
        f"{what}: the regeneration state was visited too rarely for regenerative estimates "
        f"({detail}; {need} needed). {why} Falling back to plain means over the draws with "
        "batch-means standard errors (attrs['se_method'] = 'batch_means'). To get regenerative "
        "estimates, run more draws or cluster fewer items; or ask a coarser question whose answer "
        "recurs, such as the co-clustering of a few items or the number of clusters "
        "(rs_estimate). Pass se_method='batch_means' to choose this explicitly (no warning).",
        NonRecurrenceWarning,
        stacklevel=stacklevel,
    )
    return "batch_means"


class Regeneration(NamedTuple):
    """What :func:`regenerate` decides for one public call: tours, se method, attrs."""

    tours: Tours
    se_method: str
    state: int

    def attrs(self, pdraws, combined):
        """Attributes shared by every output Dataset."""
        return {
            "var_name": pdraws.name,
            "regeneration_state": pdraws.labels[self.state].tolist(),
            "se_method": self.se_method,
            "min_tours": MIN_TOURS,
            "combined": int(bool(combined)),
        }


def regenerate(pdraws, regeneration=None, *, se_method="auto", combined=False, what="estimates", stacklevel=4):
    """Regeneration state, tours and se method for a :class:`~arviz_regen.xr.draws.PartitionDraws`.

    ``regeneration``: see :func:`arviz_regen.xr.draws.regeneration_state` (an explicit
    ``se_method="batch_means"`` without ``logp`` regenerates at the most visited state silently:
    the tours are then only counted, for ``n_tours``). ``combined``, ``what``, ``stacklevel``:
    see :func:`resolve_se_method` (``stacklevel`` 4: the caller of the public function).
    """
    if se_method not in SE_METHODS:
        raise ValueError(f"`se_method` must be one of {SE_METHODS}, got {se_method!r}.")
    if pdraws.logp_spread is not None:
        return _regenerate_hierarchical(pdraws, regeneration, se_method, what, stacklevel + 1)
    if regeneration is None and se_method == "batch_means" and pdraws.logp is None:
        regeneration = "mode"
    state = regeneration_state(pdraws, regeneration)
    tours = find_tours(pdraws.index, state, pdraws.n_states)
    method = resolve_se_method(tours, se_method, combined=combined, what=what, stacklevel=stacklevel)
    return Regeneration(tours, method, int(state))


def _regenerate_hierarchical(pdraws, regeneration, se_method, what, stacklevel):
    """:func:`regenerate` for draws whose log posterior is not a function of the partition.

    A visit to a state restarts the joint chain only if the hyperparameters sampled alongside
    restart too, which nothing guarantees: no regenerative estimate, batch means over the draws
    (tours at the most visited state, or the one given, are still counted for ``n_tours``).
    """
    if se_method == "regenerative" or (isinstance(regeneration, str) and regeneration == "logp"):
        pdraws.require_logp(f"{what} (regenerative estimates, regeneration at the top state)")
    if se_method == "auto":
        warnings.warn(
            f"{what}: sample_stats[{pdraws.logp_name!r}] differs between draws of the same "
            f"partition (by up to {pdraws.logp_spread:.3g}): hyperparameters were sampled "
            "alongside, so a visit to a partition does not restart the chain. Plain means over "
            "the draws with batch-means standard errors instead (attrs['se_method'] = "
            "'batch_means'); pass se_method='batch_means' to choose this explicitly (no warning).",
            SampledHyperparametersWarning,
            stacklevel=stacklevel,
        )
    state = regeneration_state(pdraws, "mode" if regeneration is None else regeneration)
    return Regeneration(find_tours(pdraws.index, state, pdraws.n_states), "batch_means", int(state))


def estimate(tours, se_method, *, state_values=None, rs_kernel=None, bm_kernel=None, positions=None, combined=False):
    """Mean, standard error and whole tours of a function of the state, per chain or pooled.

    Parameters
    ----------
    tours : Tours
    se_method : {"regenerative", "batch_means"}
    state_values : array_like, shape (n_states, ...), optional
        Values of the function at each state; or give the kernels instead.
    rs_kernel, bm_kernel : callable, optional
        Streaming kernels (see :meth:`Tours.rs_sums` and :func:`state_bm_kernel`).
    positions : array_like of int, optional
        Evaluation draws (cumulative mode); default the end of the chains.
    combined : bool
        Pool the chains.

    Returns
    -------
    mean, se : numpy.ndarray, shape (n_chain, E, ...) or (E, ...) when combined
    n_tours : numpy.ndarray of int, shape (n_chain, E) or (E,)
        Whole tours completed by each evaluation draw (whatever the method).
    """
    shift = None
    if state_values is not None:
        vals = np.asarray(state_values, dtype=float)
        # a constant shift leaves batch-means variances unchanged and keeps their sums exact
        shift = vals.mean(axis=0) if vals.shape[0] else np.zeros(vals.shape[1:])
        rs_kernel = state_rs_kernel(vals)
        bm_kernel = state_bm_kernel(vals - shift)
    n_tours = tours.tours_at(positions)
    if se_method == "regenerative":
        sums = tours.rs_sums(rs_kernel, positions)
        if combined:
            sums = sums.pooled()
        mean, se = sums.mean_se()
    elif se_method == "batch_means":
        parts = [bm_kernel(tours.index[c], positions) for c in range(tours.n_chain)]
        sums = type(parts[0])(*(np.stack(f) for f in zip(*parts)))
        if combined:
            sums = sums.pooled()
        mean, se = sums.mean_se()
        if shift is not None:
            mean = mean + shift
    else:
        raise ValueError(f"`se_method` must be 'regenerative' or 'batch_means', got {se_method!r}.")
    if combined:
        n_tours = n_tours.sum(axis=0)
    return mean, se, n_tours


def assemble(pdraws, per_draw, *, combined, positions=None, static=None, coords=None, attrs=None):
    """Output Dataset with the shared dimension names.

    Parameters
    ----------
    pdraws : PartitionDraws
    per_draw : dict
        name -> (core_dims, array) with array shape (n_chain, E) + core (or (E,) + core when
        ``combined``): dims become (``chain``) ``draw`` + core_dims; ``draw`` is dropped when
        ``positions`` is None (E = 1, the end of the chains).
    combined : bool
    positions : array_like of int, optional
        Evaluation draws: the ``draw`` coordinate.
    static : dict, optional
        name -> (dims, array) stored as is (e.g. state labels by ``rank``).
    coords, attrs : dict, optional
    """
    lead = (() if combined else ("chain",)) + ("draw",)
    all_coords = {} if combined else {"chain": pdraws.chain}
    if positions is not None:
        all_coords["draw"] = pdraws.draw[np.asarray(positions)]
    all_coords.update(coords or {})
    data_vars = {name: (lead + tuple(core), np.asarray(val)) for name, (core, val) in per_draw.items()}
    data_vars.update({name: (tuple(dims), np.asarray(val)) for name, (dims, val) in (static or {}).items()})
    ds = xr.Dataset(data_vars, coords=all_coords)
    if positions is None:
        ds = ds.isel(draw=0)
    ds.attrs.update(attrs or {})
    return ds
