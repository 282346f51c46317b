"""Consensus point estimate of the partition from a co-clustering matrix.

Loss minimized: Binder's loss with equal costs. For a point estimate c and the posterior
co-clustering probabilities ρ_ij, the posterior expected loss is

    E[L(c)] = Σ_{i<j} [ 1{c_i = c_j} (1 − ρ_ij) + 1{c_i ≠ c_j} ρ_ij ]
            = Σ_{i<j} ρ_ij − 2 Σ_{i<j} (ρ_ij − ½) 1{c_i = c_j},

i.e. the expected number of pairs of items on which c and the truth disagree. Minimizing it
maximizes Σ_{i<j} (ρ_ij − ½) 1{c_i = c_j}: put i and j together when ρ_ij > ½, "on balance".

Search: all partitions for n ≤ ``max_exhaustive`` items; local search (single-item moves and
cluster merges until no improvement) started from every cut of the average-linkage tree on
1 − ρ (and any given candidates) up to :data:`SEARCH_MAX_ITEMS` items (its cost grows like n⁴);
beyond, the SALSO search on ρ (:mod:`arviz_regen.base.salso`, Binder's loss scored on ρ in O(n) per
item move), started also from the candidates; or the best among given candidates (e.g. visited
states) only. Expected losses of many label vectors are computed without any
(vectors × pairs) array.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..base.lazy_jit import lazy_njit
from ..base.pair_counts import group
from ..base.seeds import random_seed_argument
from ..base.state import all_partitions, canonicalize

#: largest number of items for which ``method="auto"`` uses the linkage-started local search
#: (its cost grows steeply with the items); SALSO above
SEARCH_MAX_ITEMS = 100

#: (label vectors × pairs) entries per numpy block in :func:`binder_loss` (small problems)
_BINDER_BLOCK = 1 << 19

#: pairs above which :func:`binder_loss` uses the compiled kernel (O(co-clustered pairs) per vector)
_BINDER_KERNEL_PAIRS = 1 << 16

__all__ = ["binder_loss", "consensus_partition", "consensus", "Consensus"]


class Consensus(NamedTuple):
    """Result of :func:`consensus_partition`: canonical labels, expected Binder loss, method."""

    labels: np.ndarray
    expected_loss: float
    method: str


def _check_coclustering(rho):
    if hasattr(rho, "data_vars") and "rho" in getattr(rho, "data_vars", {}):
        rho = rho["rho"]
    rho = np.asarray(rho, dtype=float)
    if rho.ndim != 2 or rho.shape[0] != rho.shape[1]:
        raise ValueError(f"`coclustering` must be a square (items × items) matrix, got shape {rho.shape}.")
    if not np.all(np.isfinite(rho)):
        raise ValueError("`coclustering` has non-finite entries (too few tours?).")
    if np.any(rho < -1e-12) or np.any(rho > 1 + 1e-12) or not np.allclose(rho, rho.T):
        raise ValueError("`coclustering` must be symmetric with entries in [0, 1].")
    return rho


def binder_loss(labels, coclustering):
    """Posterior expected Binder loss (equal costs) of one or several label vectors.

    Parameters
    ----------
    labels : array_like of int, shape (..., n_items)
    coclustering : array_like, shape (n_items, n_items)
        Co-clustering probabilities ρ_ij (or a :func:`arviz_regen.coclustering` Dataset
        without chain dimension).

    Returns
    -------
    float or numpy.ndarray, shape labels.shape[:-1]
        Σ_{i<j} [1{same}(1 − ρ_ij) + 1{different} ρ_ij].
    """
    rho = _check_coclustering(coclustering)
    labels = np.asarray(labels)
    if labels.shape[-1] != rho.shape[0]:
        raise ValueError(f"`labels` has {labels.shape[-1]} items but `coclustering` has {rho.shape[0]}.")
    n = rho.shape[0]
    lead = labels.shape[:-1]
    flat = labels.reshape(-1, n)
    if flat.shape[0] == 1:  # one vector: block sums of ρ per cluster (numpy, nothing to compile)
        out = np.array([_binder_one(flat[0], rho)]).reshape(lead)
    elif n * (n - 1) // 2 > _BINDER_KERNEL_PAIRS:
        out = _binder_rows(np.ascontiguousarray(canonicalize(flat)), np.ascontiguousarray(rho))
    else:  # blocks of label vectors: the same numbers as one big array, bounded memory
        iu, ju = np.triu_indices(n, 1)
        w = rho[iu, ju]
        step = max(1, _BINDER_BLOCK // max(1, iu.size))
        out = np.empty(flat.shape[0])
        for s in range(0, flat.shape[0], step):
            same = flat[s : s + step, iu] == flat[s : s + step, ju]
            out[s : s + step] = w.sum() + (same * (1.0 - 2.0 * w)).sum(axis=-1)
    out = out.reshape(lead)
    return float(out) if np.ndim(out) == 0 else out


def _binder_one(labels, rho):
    """Σ_{i<j} ρ_ij + Σ_{i<j together} (1 − 2ρ_ij) for one label vector, cluster by cluster."""
    off_diag = (rho.sum() - np.trace(rho)) / 2.0
    order = np.argsort(labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    together = 0.0
    for idx in np.split(order, cuts):
        if idx.size > 1:
            block = rho[np.ix_(idx, idx)]
            pairs = idx.size * (idx.size - 1) / 2.0
            together += pairs - (block.sum() - np.trace(block))
    return float(off_diag + together)


@lazy_njit(cache=True)
def _binder_rows(labels, rho):
    """Σ_{i<j} ρ_ij + Σ_{i<j together} (1 − 2ρ_ij) per row: O(n + pairs together) each."""
    m, n = labels.shape
    base = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            base += rho[i, j]
    out = np.empty(m)
    order = np.empty(n, dtype=np.int64)
    cstart = np.empty(n + 1, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    for r in range(m):
        group(labels[r], order, cstart, pos)
        acc = base
        for i in range(n):
            for q in range(pos[i] + 1, cstart[labels[r, i] + 1]):
                acc += 1.0 - 2.0 * rho[i, order[q]]
        out[r] = acc
    return out


_all_partitions = all_partitions  # old private name (tests import it)


def _local_search(labels, W):
    """Improve labels by best single-item moves and positive merges; W = ρ − ½ with zero diag."""
    labels = canonicalize(labels)
    n = labels.size
    while True:
        improved = False
        # single-item moves: gain(i -> c) = Σ_{j∈c} W_ij − Σ_{j∈c(i), j≠i} W_ij
        while True:
            C = labels.max() + 1
            onehot = np.zeros((n, C + 1))
            onehot[np.arange(n), labels] = 1.0
            score = W @ onehot  # score[i, c] = Σ_{j∈c} W_ij (W_ii = 0); column C: new singleton
            current = score[np.arange(n), labels]
            gain = score - current[:, None]
            gain[np.arange(n), labels] = 0.0
            i, c = np.unravel_index(np.argmax(gain), gain.shape)
            if gain[i, c] <= 1e-12:
                break
            labels = labels.copy()
            labels[i] = c
            labels = canonicalize(labels)
            improved = True
        # merges: gain(a, b) = Σ_{i∈a, j∈b} W_ij
        C = labels.max() + 1
        if C > 1:
            onehot = np.zeros((n, C))
            onehot[np.arange(n), labels] = 1.0
            B = onehot.T @ W @ onehot
            np.fill_diagonal(B, -np.inf)
            a, b = np.unravel_index(np.argmax(B), B.shape)
            if B[a, b] > 1e-12:
                labels = canonicalize(np.where(labels == b, a, labels))
                improved = True
        if not improved:
            return labels


def _linkage_candidates(rho):
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    n = rho.shape[0]
    dist = np.clip(1.0 - rho, 0.0, None)
    np.fill_diagonal(dist, 0.0)
    Z = linkage(squareform(dist, checks=False), method="average")
    cuts = [fcluster(Z, t, criterion="maxclust") for t in range(1, n + 1)]
    return canonicalize(np.array(cuts))


def consensus_partition(coclustering, *, candidates=None, method="auto", max_exhaustive=9, random_seed=None, seed=None):
    """Partition minimizing the posterior expected Binder loss (equal costs).

    Parameters
    ----------
    coclustering : array_like (n_items, n_items) or co-clustering Dataset (no chain dim)
        Co-clustering probabilities ρ_ij.
    candidates : array_like of int, shape (m, n_items), optional
        Label vectors (e.g. visited states) used as starting points (``method="search"``) or as
        the only choices (``method="candidates"``).
    method : {"auto", "exhaustive", "search", "salso", "candidates"}
        "auto": exhaustive when n_items ≤ ``max_exhaustive``, "search" up to
        :data:`SEARCH_MAX_ITEMS` items, else "salso" (the SALSO search on ρ, with the candidates
        as extra starts).
    max_exhaustive : int
        Largest n_items enumerated exhaustively (B(9) = 21,147 partitions).
    random_seed : int or numpy.random.Generator, optional
        Seed of the SALSO search (default 0, fixed: the same ρ gives the same result).
    seed : int, optional
        Deprecated name of ``random_seed`` (a ``DeprecationWarning``; removed in the next release).

    Returns
    -------
    Consensus
        ``labels`` (canonical), ``expected_loss`` and the ``method`` used.
    """
    seed = random_seed_argument(random_seed, seed, default=0)
    rho = _check_coclustering(coclustering)
    n = rho.shape[0]
    if method not in ("auto", "exhaustive", "search", "salso", "candidates"):
        raise ValueError(f"`method` must be 'auto', 'exhaustive', 'search', 'salso' or 'candidates', got {method!r}.")
    if candidates is not None:
        candidates = np.atleast_2d(np.asarray(candidates))
        if candidates.shape[-1] != n:
            raise ValueError(f"`candidates` must have {n} labels per row, got shape {candidates.shape}.")
        candidates = canonicalize(candidates)
    if method == "candidates":
        if candidates is None:
            raise ValueError("`method='candidates'` needs `candidates`.")
        loss = binder_loss(candidates, rho)
        best = int(np.argmin(loss))
        return Consensus(candidates[best], float(loss[best]), "candidates")
    if method == "exhaustive" or (method == "auto" and n <= max_exhaustive):
        if n > 12:
            raise ValueError(f"Exhaustive search over B({n}) partitions is too large; use method='search'.")
        allp = _all_partitions(n)
        loss = binder_loss(allp, rho)
        best = int(np.argmin(loss))
        return Consensus(allp[best], float(loss[best]), "exhaustive")
    if method == "salso" or (method == "auto" and n > SEARCH_MAX_ITEMS):
        from ..base.salso import salso_search

        res = salso_search(loss="binder", psm=rho, starts=candidates, seed=seed)
        return Consensus(res.labels, float(binder_loss(res.labels, rho)), "salso")
    W = rho - 0.5
    np.fill_diagonal(W, 0.0)
    starts = _linkage_candidates(rho)
    if candidates is not None:
        starts = np.concatenate([starts, candidates])
    best_labels, best_loss = None, np.inf
    for start in starts:
        lab = _local_search(start, W)
        loss = binder_loss(lab, rho)
        if loss < best_loss - 1e-12:
            best_labels, best_loss = lab, loss
    return Consensus(best_labels, float(best_loss), "search")


def consensus(
    data,
    var_names=None,
    *,
    method="auto",
    n_candidates=50,
    regeneration=None,
    se_method="auto",
    logp_var="partition_logp",
    logp=None,
    coords=None,
):
    """Consensus partition of a sample: Binder-optimal partition for the pooled RS ρ̂.

    ρ̂ is :func:`arviz_regen.coclustering` with ``combined=True``: the pooled regenerative
    estimate, or, when the regeneration state recurs too rarely (a flat posterior), the plain
    co-clustering frequencies over all draws (with a warning; see ``se_method``).

    Parameters
    ----------
    data : InferenceData or convertible
    var_names : str or list of one str, optional
    method : {"auto", "exhaustive", "search", "salso", "visited"}
        "visited": the visited state with the smallest expected loss (among all visited
        states); otherwise as :func:`consensus_partition`, with the ``n_candidates`` most
        visited states as extra starting points for the search.
    n_candidates : int
    regeneration, se_method, logp_var
        See :func:`arviz_regen.coclustering`.

    Returns
    -------
    Consensus
    """
    from ..xr.draws import load_partition
    from .coclustering import coclustering

    pdraws = load_partition(data, var_names, logp_var=logp_var, logp=logp, coords=coords)
    ds = coclustering(pdraws, combined=True, regeneration=regeneration, se_method=se_method)
    rho = ds["rho"].values
    if method == "visited":
        loss = binder_loss(pdraws.labels, rho)  # no (states × pairs) array
        best = int(np.argmin(loss))
        return Consensus(pdraws.labels[best], float(loss[best]), "visited")
    counts = pdraws.counts().sum(axis=0)
    frequent = pdraws.labels[np.argsort(-counts, kind="stable")[:n_candidates]]
    return consensus_partition(rho, candidates=frequent, method=method)
