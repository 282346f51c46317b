"""SALSO search for the partition minimising a posterior expected loss (numpy/numba core).

Dahl, Johnson & Müller (2022), "Search Algorithms and Loss Functions for Bayesian Clustering",
JCGS 31(4). Each run starts from a sequential allocation of the items in random order (each to
the cluster, or a new one, that minimises the expected loss of the partial partition), from
uniformly random labels, from a posterior draw (our addition: see ``prob_draw``) or from a given
start, then sweetens it (scans reassigning each item to its best cluster until a scan changes
nothing) and tries zealous updates (destroy a cluster, reallocate its items sequentially,
sweeten; kept only if the expected loss drops). The best of several runs is returned.

The expected loss is the average over the draws (weights: visit frequencies), never formed as
an items × items × draws array. For a loss of the form
s [a Σ_l F(m_l) + (2 − a) Σ_k F(n_k) − 2 Σ_kl F(n_kl)] (:mod:`arviz_regen.base.partition_loss`)
moving item i into cluster k changes it by s [(2 − a) G(n_k) − 2 Σ_t w_t G(n_{t,k,l_t(i)})]
plus terms that do not depend on k, with G(m) = F(m + 1) − F(m); n_{t,k,l} counts the items
of estimate cluster k in cluster l of draw t. Two ways to score a move:

- "draws": the clusters of the draws are followed along each chain as tracks
  (:mod:`arviz_regen.base.cluster_tracks`): a track's members change only where a sampler moves an
  item, so the counts n_{t,k,l} are kept per epoch of a track (draws with the same members),
  with running sums of w G(n) along each track. An item's term is then a sum over its segments
  (one per chain and per move of the item) of differences of running sums: O(segments · K) per
  item instead of O(draws · K), and moving an item updates the epochs it belongs to. Any loss.
- "psm": for Binder the sum over draws is Σ_t w_t G(n_{t,k,l_t(i)}) = 2 Σ_{j∈k} ρ_ij + 1 with
  ρ the co-clustering matrix: O(n) per item, for any ρ (e.g. regenerative estimates).

Both routes run the same search (:func:`arviz_regen.base.salso_ops.run`, compiled once), which calls the route's own
function for scores, moves and losses (:mod:`arviz_regen.base.salso_ops`) through a pointer: a
search compiles only the route it uses, and the route's code is not compiled again into the search.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .cluster_tracks import build_tracks
from .partition_loss import Loss, parse_loss
from .state import _canonicalize_rows_numpy, check_labels

__all__ = ["SalsoResult", "salso_search", "thin_chains", "SEARCH_DEFAULTS", "SEARCH_CELLS", "SEARCH_VISITS", "INITS"]

#: default search settings: those of the R package salso, with a bound on the scans, and a
#: quarter of the runs started from posterior draws
SEARCH_DEFAULTS = {"n_runs": 16, "max_zealous": 10, "max_scans": 50, "prob_sequential": 0.5, "prob_draw": 0.25}

#: how a run started (``SalsoResult.init``)
INITS = ("sequential", "random", "draw", "given")

#: largest memory (bytes) of the "draws" route's counts and running sums (epochs × estimate
#: clusters) before asking for a smaller ``max_clusters``
MAX_CMS_BYTES = 1 << 30


#: route codes (``_Search.route``)
_PSM, _TRACKS = 0, 1


class RunBuffers(NamedTuple):
    """Working arrays of one SALSO run (:func:`arviz_regen.base.salso_ops.run`), reused across runs.

    ``lab`` (n,) labels (−1: unallocated); ``size`` (room for the clusters,) cluster sizes;
    ``acc`` (room + 1,) scores; ``imap`` (n + room + 1,) label maps; ``work`` int64 (4, n)
    scratch (orders, pending items, representatives, a saved partition).
    """

    lab: np.ndarray
    size: np.ndarray
    acc: np.ndarray
    imap: np.ndarray
    work: np.ndarray


class RunSettings(NamedTuple):
    """What a SALSO run (:func:`arviz_regen.base.salso_ops.run`) needs besides its buffers and start.

    ``meta`` the address of the description of the buffers, the table G(m) = F(m + 1) − F(m)
    and the route's arrays (:func:`arviz_regen.base.salso_ops.describe`); ``a``,
    ``scale``, ``truth_term`` the loss (:mod:`arviz_regen.base.partition_loss`); ``kcap`` the
    most clusters; ``k_random`` the clusters of random starts; ``max_scans``, ``max_zealous``.
    """

    meta: int
    a: float
    scale: float
    truth_term: float
    kcap: int
    k_random: int
    max_scans: int
    max_zealous: int


class RunStats(NamedTuple):
    """What one run returns.

    Its ``loss``, ``scans``, zealous ``attempts`` and ``accepts``; ``ok`` 0 when it needed more clusters than its
    buffers hold (rerun with more: same generator state, same path).
    """

    loss: float
    scans: int
    attempts: int
    accepts: int
    ok: int


class SalsoResult(NamedTuple):
    """Result of :func:`salso_search`.

    ``labels`` (canonical) and ``expected_loss`` (over all draws) of the estimate; ``run_losses``
    the loss of each run (over the draws searched on: see ``search_draws``); ``n_scans``,
    ``zealous_attempts``, ``zealous_accepts``, ``init`` per run (an index into :data:`INITS`:
    sequential allocation, random labels, a posterior draw, a given start); ``max_clusters`` the
    cap used; ``route`` "draws" or "psm"; ``search_draws`` the draws (visits) the runs searched
    on (fewer than all when thinned) and ``polish_moves`` the items the final sweetening on all
    draws moved (0 without thinning).
    """

    labels: np.ndarray
    expected_loss: float
    run_losses: np.ndarray
    n_scans: np.ndarray
    zealous_attempts: np.ndarray
    zealous_accepts: np.ndarray
    init: np.ndarray
    max_clusters: int
    route: str
    search_draws: int = 0
    polish_moves: int = 0


def _canonical(labels):
    """Return the canonical form of one label vector, computed in numpy.

    As :func:`arviz_regen.base.state.canonicalize` gives it, without compiling its kernel for
    vectors of more than 65,536 items (a search's result is one vector, however long).
    """
    lab = check_labels(labels)
    return _canonicalize_rows_numpy(np.ascontiguousarray(lab).reshape(1, -1))[0]


def _tables(spec, n):
    F = spec.table(n)
    return F, np.ascontiguousarray(np.diff(F))


def _truth_term(tracks, F):
    """Return Σ_t w_t Σ_l F(m_tl), the part of the expected loss that the estimate does not change.

    Summed over the epochs of the tracks (weight times F of the members, constant over an
    epoch): O(segments + epochs), not O(draws × items).
    """
    E = tracks.epoch_weight.size
    # an item's segment adds one member to epochs g1 … g2 − 1 of one track (consecutive epochs)
    members = np.cumsum(np.bincount(tracks.seg_g1, minlength=E + 1) - np.bincount(tracks.seg_g2, minlength=E + 1))
    return float(tracks.epoch_weight @ F[members[:E]])


def _states_are_cheaper(index, n_states, n):
    """Whether tracks over the distinct states (each on its own) have no more segments than along the chains.

    Along the chains an item has a segment per chain plus one per change of its cluster, at
    least the number of state changes K over all items: ≥ n·C + K segments. Over the states it
    has one per state: n·S. Few states visited over and over (a chain jumping between them)
    are cheaper as states, the same expected loss (the states carry their visit weights).
    """
    changes = int(np.count_nonzero(index[:, 1:] != index[:, :-1]))
    return n * n_states <= n * index.shape[0] + changes


class _TrackRoute:
    """The "draws" route's data for :func:`_track_op`, rebuilt for more estimate clusters."""

    def __init__(self, draws, weights, index, spec):
        T, n = draws.shape
        if index is not None and _states_are_cheaper(np.atleast_2d(np.asarray(index)), T, n):
            index = None
        if index is None:  # each state on its own, with its weight
            seq, first, w_draw = np.arange(T), np.ones(T, dtype=bool), weights
        else:
            index = np.atleast_2d(np.asarray(index, dtype=np.int64))
            visits = np.bincount(index.ravel(), minlength=T)
            seq = index.ravel()
            first = np.zeros(index.shape, dtype=bool)
            first[:, 0] = True
            first = first.ravel()
            with np.errstate(invalid="ignore", divide="ignore"):
                w_draw = (weights / visits)[seq]
        self.tracks = build_tracks(draws, seq, first, w_draw)
        # to n + 1: the running sums take G(n) where all n items share a cluster (never read)
        self.F, self.G = _tables(spec, n + 1)
        self.Gm = np.concatenate([[0.0], self.G[:-1]])  # G(m − 1), m ≥ 1
        self.n_epochs = self.tracks.epoch_weight.size
        self.n_tracks = self.tracks.epoch_start.size - 1
        self.data = None

    def resize(self, k_alloc):
        E, n_tr = self.n_epochs, self.n_tracks
        need = E * k_alloc * 4 * 2 + (E + n_tr) * k_alloc * 8 * 2
        if need > MAX_CMS_BYTES:
            raise MemoryError(
                f"The SALSO counts and running sums would take {need / 2**30:.1f} GiB ({E} epochs "
                f"of cluster tracks x {k_alloc} estimate clusters): pass a smaller `max_clusters`, "
                "or thin the draws."
            )
        t = self.tracks
        self.data = (
            np.concatenate([t.seg_ptr, t.epoch_start]),
            np.stack([t.seg_track, t.seg_g1, t.seg_g2], axis=1).astype(np.int32),
            np.ascontiguousarray(t.epoch_weight, dtype=np.float64), np.stack([self.G, self.Gm, self.F[: self.G.size]]),
            np.zeros((2, E, k_alloc), dtype=np.int32), np.zeros((2, E + n_tr, k_alloc)),
            np.zeros((2, n_tr, k_alloc), dtype=np.int64),
        )  # fmt: skip
        return self.data


#: label cells (visits × items) the SALSO runs search on: beyond, the chains are thinned for the
#: runs, and the best of their estimates is sweetened on all draws (see :func:`salso_search`)
SEARCH_CELLS = 1 << 22

#: visits the SALSO runs search on at most, whatever the items (few items moving often cost
#: about as much per visit as many items moving rarely)
SEARCH_VISITS = 2000

#: distinct run results scored on all draws when the runs searched on thinned chains
N_FINALISTS = 3


def thin_chains(index, n_items, weights=None, cells=None, visits=None):
    """Return the states visited by the chains, thinned, or None.

    At most ``cells`` label cells and ``visits`` visits (defaults :data:`SEARCH_CELLS`, :data:`SEARCH_VISITS`).

    ``index`` (chains, draws) the state of each visit; every ``step``-th visit of each chain is
    kept (deterministic: the same seed searches the same draws). Returns (states, weights,
    sub_index): the kept states (indices into the distinct states), their weights (each state's
    weight split equally among its visits, summed over the kept visits, normalised) and the
    thinned chains as rows of the kept states; None when nothing needs thinning.
    """
    cells = SEARCH_CELLS if cells is None else cells
    visits = SEARCH_VISITS if visits is None else visits
    index = np.atleast_2d(np.asarray(index, dtype=np.int64))
    step = max(-(-index.size * max(1, n_items) // max(1, cells)), -(-index.size // max(1, visits)))
    if step <= 1:
        return None
    sub = index[:, step // 2 :: step]
    states, inv = np.unique(sub, return_inverse=True)
    inv = inv.reshape(sub.shape)
    kept = np.bincount(inv.ravel(), minlength=states.size).astype(float)
    if weights is not None:  # each state's weight per visit, times its kept visits
        kept *= np.asarray(weights, dtype=float)[states] / np.bincount(index.ravel())[states]
    return states, kept / kept.sum(), inv


class _Search:
    """One set of draws (or a co-clustering matrix) prepared for SALSO runs: buffers grown on demand."""

    def __init__(self, spec, draws=None, weights=None, index=None, psm=None, kcap=None):
        self.spec = spec
        if psm is not None:
            self.n = n = psm.shape[0]
            _, self.G = _tables(Loss("binder", 1.0), n)
            self.scale, self.route, self.psm = 0.5, _PSM, psm
            self.truth_term = float(np.triu(psm, 1).sum())  # Σ_{i<j} ρ_ij
            self.k_random = int(round(np.sqrt(n)))
        else:
            T, self.n = draws.shape
            self.draws, self.w = draws, weights
            self.tracks = _TrackRoute(draws, weights, index, spec)
            self.G, self.scale, self.route = self.tracks.G, spec.scale(self.n), _TRACKS
            self.truth_term = _truth_term(self.tracks.tracks, self.tracks.F)
            self.k_random = int((draws.max(axis=1) + 1).max())
        self.kcap = max(1, min(self.n if kcap is None else int(kcap), self.n))
        self.k_random = max(1, min(self.kcap, self.k_random))
        self.k_alloc = min(self.kcap, max(2 * self.k_random, 8))
        self.buf = self.cfg = self.data = self.meta = self.op = None

    def run(self, init, start, seed, max_scans, max_zealous):
        """One run from its own generator; more cluster columns and a rerun when it runs out."""
        from . import salso_ops  # imports numba: on the first run, not with the package

        n = self.n
        while True:
            if self.buf is None or self.buf.size.shape[0] < self.k_alloc:
                k = self.k_alloc
                if self.route == _PSM:
                    d, layout, self.op = (
                        (self.psm, np.zeros((2, n, k))),
                        salso_ops.PSM_ARRAYS,
                        salso_ops.route_op("psm"),
                    )
                else:
                    d, layout, self.op = self.tracks.resize(k), salso_ops.TRACK_ARRAYS, salso_ops.route_op("tracks")
                self.buf = RunBuffers(
                    np.full(n, -1, dtype=np.int64),
                    np.zeros(k, dtype=np.int64),
                    np.zeros(k + 1),
                    np.zeros(n + k + 1, dtype=np.int64),
                    np.empty((4, n), dtype=np.int64),
                )
                # the arrays the route function reads by address: kept alive by self.buf and self.data
                self.data = d
                self.meta = salso_ops.describe((*self.buf, self.G, *d), salso_ops.BUFFERS + layout)
                self.cfg = RunSettings(
                    int(self.meta.ctypes.data), float(self.spec.a), float(self.scale),
                    float(self.truth_term), self.kcap, self.k_random, 0, 0,
                )  # fmt: skip
            cfg = self.cfg._replace(max_scans=int(max_scans), max_zealous=int(max_zealous))
            out = salso_ops.run(self.op, cfg, init, np.ascontiguousarray(start, dtype=np.int64),
                                np.array([seed], dtype=np.uint64))  # fmt: skip
            if out.ok:
                return out, self.buf.lab.copy()
            self.k_alloc = min(self.kcap, 2 * self.k_alloc)


def salso_search(
    draws=None,
    weights=None,
    loss="VI",
    *,
    psm=None,
    index=None,
    max_clusters=None,
    n_runs=SEARCH_DEFAULTS["n_runs"],
    max_zealous=SEARCH_DEFAULTS["max_zealous"],
    max_scans=SEARCH_DEFAULTS["max_scans"],
    prob_sequential=SEARCH_DEFAULTS["prob_sequential"],
    prob_draw=SEARCH_DEFAULTS["prob_draw"],
    starts=None,
    seed=None,
    search_cells=None,
    search_visits=None,
    map_runs=None,
    n_blocks=None,
):
    """SALSO search minimising the expected loss over the draws (or a co-clustering matrix).

    Parameters
    ----------
    draws : numpy.ndarray of int, shape (T, n)
        Canonical label vectors (distinct states, say).
    weights : numpy.ndarray, shape (T,), optional
        Their posterior weights (normalised here); default equal.
    loss : "VI", "binder", ("VI", a), ("binder", a) or Loss
    psm : numpy.ndarray, shape (n, n), optional
        Binder only: search on this co-clustering matrix instead of the draws (e.g. the
        regenerative estimate); the loss is then Σ_{i<j} [a ρ_ij 1{apart} + (2 − a)(1 − ρ_ij)
        1{together}].
    index : numpy.ndarray of int, shape (n_chain, n_draw), optional
        The chains as rows of ``draws`` (each state's weight then split equally among its
        visits): the clusters are followed along the chains, so scoring costs O(moves) instead
        of O(draws) (see the module docstring). When the visits exceed ``search_visits`` or
        the visits times the items ``search_cells``, the runs search on the chains thinned to that size
        (:func:`thin_chains`); the best distinct estimates of the runs are then scored on all
        draws and the best is sweetened on all draws (single-item moves until none lowers the
        expected loss over all draws), so the result is a local optimum of the exact expected
        loss, reported exactly.
    max_clusters : int, optional
        Largest number of clusters of the estimate; default no limit.
    n_runs, max_zealous, max_scans
        Runs (random restarts), zealous updates per run, sweetening scans per sweetening phase.
    prob_sequential, prob_draw
        How a run starts: by sequential allocation with probability ``prob_sequential``, from a
        posterior draw (picked by weight; not on the psm route) with probability ``prob_draw``,
        else from random labels. Draw starts are our addition to SALSO: a loss like VI with
        a < 1 can have a cliff-edge optimum (clusters worth forming only whole, from items
        whose pairs are not worth joining one by one) that sequential allocation cannot build
        but a draw near a mode holds.
    starts : numpy.ndarray of int, shape (m, n), optional
        Extra runs starting from these label vectors (then sweetened and zealously updated).
    seed : int or numpy.random.Generator, optional
        Each run draws its random numbers from its own generator, seeded from this one.
    search_cells, search_visits : int, optional
        Label cells and visits the runs search on at most (defaults :data:`SEARCH_CELLS`,
        :data:`SEARCH_VISITS`); see ``index``.
    map_runs : callable, optional
        Runs the runs elsewhere: ``map_runs(func, blocks, shared=shared)`` yields
        ``func(*block, *shared)`` for each block in order (as
        :func:`arviz_regen.xr.distributed.map_blocks` with a client does, on the workers of a
        ``dask.distributed`` cluster). The runs are split into ``n_blocks`` blocks (default 1) of
        consecutive runs; each block searches on its own copy of the draws. The final sweetening
        on all draws (see ``index``) is one more call. The result is the same as without (each
        run has its own generator and start, drawn beforehand).
    n_blocks : int, optional
        See ``map_runs``.

    Returns
    -------
    SalsoResult
    """
    spec = parse_loss(loss)
    rng = np.random.default_rng(seed)
    full = None
    search_draws = 0
    if psm is not None:
        if spec.name != "binder":
            raise ValueError("A co-clustering matrix (`psm`) determines the Binder loss only, not VI.")
        psm = np.ascontiguousarray(psm, dtype=float)
        n, route, w = psm.shape[0], "psm", None
        on = (None, None, None, psm)  # what the runs search on (see _run_block)
    else:
        draws = np.ascontiguousarray(draws, dtype=np.int64)
        T, n = draws.shape
        w = np.full(T, 1.0 / T) if weights is None else np.asarray(weights, dtype=float)
        w = np.ascontiguousarray(w / w.sum())
        route = "draws"
        thin = None if index is None else thin_chains(index, n, w, search_cells, search_visits)
        if thin is None:
            on = (draws, w, index, None)
            search_draws = T if index is None else int(np.asarray(index).size)
        else:
            states, w_sub, sub_index = thin
            on = (np.ascontiguousarray(draws[states]), w_sub, sub_index, None)
            search_draws = int(sub_index.size)
            full = (draws, w, index)
    kcap = max(1, min(n if max_clusters is None else int(max_clusters), n))  # as _Search's
    start_rows = [] if starts is None else list(np.atleast_2d(np.asarray(starts, dtype=np.int64)))
    for s in start_rows:
        if s.shape != (n,):
            raise ValueError(f"`starts` must be label vectors of length {n}, got shape {s.shape}.")
    n_total = int(n_runs) + len(start_rows)
    if n_total < 1:
        raise ValueError("`n_runs` must be positive (or give `starts`).")
    seeds = rng.integers(0, 2**63 - 1, size=n_total)
    no_start = np.zeros(max(n, 1), dtype=np.int64)
    p_draw = float(prob_draw) if route == "draws" else 0.0
    if not (0.0 <= float(prob_sequential) <= 1.0 and 0.0 <= p_draw and float(prob_sequential) + p_draw <= 1.0 + 1e-12):
        raise ValueError(
            f"`prob_sequential` ({prob_sequential!r}) and `prob_draw` ({prob_draw!r}) must be "
            "probabilities summing to at most 1."
        )
    runs = []  # (init, start, seed) of each run: drawn first, the runs are then independent
    for r in range(n_total):
        start = no_start
        if r < len(start_rows):
            init = 3
            start = np.minimum(_canonical(start_rows[r]), kcap - 1)  # clusters above the cap merged
        else:
            u = rng.random()
            init = 0 if u < prob_sequential else 2 if u < prob_sequential + p_draw else 1
            if init == 2:
                start = np.minimum(on[0][rng.choice(on[0].shape[0], p=on[1])], kcap - 1)
        runs.append((init, start, int(seeds[r])))
    shared = (spec, *on, max_clusters, int(max_scans), int(max_zealous))
    if map_runs is None:
        outs = _run_block(runs, *shared)
    else:  # blocks of consecutive runs, each block a task searching on its own copy of the draws
        cuts = np.linspace(0, n_total, min(n_total, max(1, int(n_blocks or 1))) + 1).astype(int)
        blocks = [(runs[a:b],) for a, b in zip(cuts[:-1], cuts[1:])]
        outs = [out for block in map_runs(_run_block, blocks, shared=shared) for out in block]
    stats = np.zeros((n_total, 5))
    results = []
    for r, ((out, labels), (init, _, _)) in enumerate(zip(outs, runs)):
        stats[r] = (out.loss, out.scans, out.attempts, out.accepts, init)
        results.append(labels)
    order = np.argsort(stats[:, 0], kind="stable")
    best_labels, best_loss, polish_moves = results[order[0]], float(stats[order[0], 0]), 0
    if full is not None:  # on the workers too when the runs were: it searches all draws
        finish = ([results[r] for r in order], int(rng.integers(0, 2**63 - 1)))
        shared = (full, spec, kcap, max_scans)
        [done] = [_finish(*finish, *shared)] if map_runs is None else map_runs(_finish, [finish], shared=shared)
        best_labels, best_loss, polish_moves = done
    return SalsoResult(
        labels=_canonical(best_labels),
        expected_loss=float(best_loss),
        run_losses=stats[:, 0],
        n_scans=stats[:, 1].astype(np.int64),
        zealous_attempts=stats[:, 2].astype(np.int64),
        zealous_accepts=stats[:, 3].astype(np.int64),
        init=stats[:, 4].astype(np.int64),
        max_clusters=kcap,
        route=route,
        search_draws=search_draws,
        polish_moves=int(polish_moves),
    )


def _run_block(runs, spec, draws, weights, index, psm, max_clusters, max_scans, max_zealous):
    """Run ``runs`` ((init, start, seed) each) on a search of their own; return [(RunStats, labels)]."""
    search = _Search(spec, draws, weights, index, psm=psm, kcap=max_clusters)
    return [search.run(init, start, seed, max_scans, max_zealous) for init, start, seed in runs]


def _finish(ranked, seed, full, spec, kcap, max_scans):
    """Finish the runs searched on thinned chains.

    Their best distinct estimates are scored on all draws and the best is sweetened on all draws (no zealous updates:
    single-item moves from a near-optimum are few).
    """
    from .partition_loss import mean_loss

    draws, w, index = full
    finalists = []
    for lab in ranked:
        lab = _canonical(lab)
        if not any(np.array_equal(lab, f) for f in finalists):
            finalists.append(lab)
        if len(finalists) == N_FINALISTS:
            break
    exact = mean_loss(np.stack(finalists), draws, w, spec)
    best = finalists[int(np.argmin(exact))]
    search = _Search(spec, draws, w, index, kcap=kcap)
    search.k_alloc = min(search.kcap, max(search.k_alloc, 2 * (int(best.max()) + 1)))
    out, labels = search.run(3, best, seed, max_scans, 0)
    return labels, out.loss, int(np.count_nonzero(_canonical(labels) != best))
