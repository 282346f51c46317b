"""Losses between two partitions: (weighted) Binder and (generalised) variation of information.

Both are functions of the contingency table n_kl of the estimate c (clusters k, sizes n_k) against
the truth c' (clusters l, sizes m_l) of n items. With a cost ``a`` ∈ [0, 2] for separating two
items that the truth puts together, and 2 − a for joining two that it separates (Dahl, Johnson &
Müller 2022; a = 1 gives the classical losses):

- Binder (1978): the weighted number of item pairs on which c and c' disagree,

      B_a(c', c) = Σ_{i<j} [a 1{c'_i = c'_j, c_i ≠ c_j} + (2 − a) 1{c'_i ≠ c'_j, c_i = c_j}]
                 = ½ [a Σ_l m_l² + (2 − a) Σ_k n_k² − 2 Σ_kl n_kl²];

  with a = 1 this is :func:`arviz_regen.binder_loss` for a single truth. (The R package salso
  reports it multiplied by 2/n².)
- Variation of information (Meilă 2007; Wade & Ghahramani 2018), in bits,

      VI_a(c', c) = (1/n) [a Σ_l m_l log₂ m_l + (2 − a) Σ_k n_k log₂ n_k − 2 Σ_kl n_kl log₂ n_kl];

  with a = 1, H(c) + H(c') − 2 I(c, c'), a metric on partitions. For a ≠ 1 neither loss is
  symmetric: the first argument is the truth (a posterior draw), the second the estimate.

Both have the form  s [a Σ_l F(m_l) + (2 − a) Σ_k F(n_k) − 2 Σ_kl F(n_kl)]  with F(m) = m² and
s = ½ (Binder) or F(m) = m log₂ m and s = 1/n (VI); :class:`Loss` holds F as a table over
0 … n, and the compiled kernel below sums it over contingency tables in O(n) per pair of
partitions, without forming the table.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .lazy_jit import lazy_njit
from .state import canonicalize, check_labels

__all__ = ["Loss", "parse_loss", "partition_loss", "mean_loss", "loss_block_sums", "LOSS_NAMES"]

#: accepted loss names (case-insensitive) -> canonical spelling
LOSS_NAMES = {"vi": "VI", "binder": "binder"}


class Loss(NamedTuple):
    """A partition loss: ``name`` ("VI" or "binder") and the cost ``a`` ∈ [0, 2] (1: classical)."""

    name: str
    a: float

    def table(self, n):
        """F(m) for m = 0 … n: m² (Binder) or m log₂ m (VI, F(0) = 0)."""
        m = np.arange(n + 1, dtype=float)
        if self.name == "binder":
            return m * m
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(m > 0, m * np.log2(np.maximum(m, 1.0)), 0.0)

    def scale(self, n):
        """Return the factor s in front of the bracket: ½ (Binder) or 1/n (VI)."""
        return 0.5 if self.name == "binder" else 1.0 / n

    @property
    def label(self):
        """A short description, e.g. ``"VI"`` or ``"binder(a=1.5)"``."""
        return self.name if self.a == 1.0 else f"{self.name}(a={self.a:g})"


def parse_loss(loss, argname="loss"):
    """Return a :class:`Loss` from ``"VI"``, ``"binder"``, ``("VI", a)``, ``("binder", a)`` or a Loss."""
    if isinstance(loss, Loss):
        return loss
    a = 1.0
    if isinstance(loss, (tuple, list)):
        if len(loss) != 2:
            raise ValueError(f"`{argname}` must be a name or (name, a), got {loss!r}.")
        loss, a = loss
        try:
            a = float(a)
        except (TypeError, ValueError):
            raise TypeError(f"`{argname}`: the cost a must be a number in [0, 2], got {a!r}.") from None
        if not (np.isfinite(a) and 0.0 <= a <= 2.0):
            raise ValueError(
                f"`{argname}`: the cost a must lie in [0, 2] (a: separating items the truth puts "
                f"together, 2 - a: joining items it separates; 1 = classical loss), got {a!r}."
            )
    if not isinstance(loss, str) or loss.lower() not in LOSS_NAMES:
        raise ValueError(
            f"`{argname}` must be 'VI' or 'binder', or ('VI', a) / ('binder', a) with a in [0, 2]; got {loss!r}."
        )
    return Loss(LOSS_NAMES[loss.lower()], a)


@lazy_njit("void(int64[:, ::1], int64[:, ::1], float64[::1], float64[:, ::1], int64[:, ::1])", cache=True, _nrt=False)
def _joint_kernel(ests, draws, F, out, work):
    """Fill ``out`` (E, T) with Σ_kl F(n_kl) of every estimate (rows of ``ests``) against every draw.

    Labels must be canonical (0 … n − 1). Per draw, the items are grouped by their draw cluster
    (a counting sort); per estimate and draw cluster the estimate's labels are counted in a
    scratch vector, so the cost is O(n) per pair and the memory O(n). ``work`` int64 (5, n + 1),
    its row 3 zeros (the scratch counts, left zero). One signature and no allocation: nothing
    but the loops to compile.
    """
    E, n = ests.shape
    T = draws.shape[0]
    start = work[0]
    pos = work[1]
    order = work[2]
    scratch = work[3]
    touched = work[4]
    for t in range(T):
        for lab in range(n + 1):
            start[lab] = 0
        n_l = 0
        for i in range(n):
            lab = draws[t, i]
            start[lab + 1] += 1
            if lab + 1 > n_l:
                n_l = lab + 1
        for lab in range(n_l):
            start[lab + 1] += start[lab]
            pos[lab] = start[lab]
        for i in range(n):
            lab = draws[t, i]
            order[pos[lab]] = i
            pos[lab] += 1
        for e in range(E):
            acc = 0.0
            for lab in range(n_l):
                n_touched = 0
                for q in range(start[lab], start[lab + 1]):
                    k = ests[e, order[q]]
                    if scratch[k] == 0:
                        touched[n_touched] = k
                        n_touched += 1
                    scratch[k] += 1
                for q in range(n_touched):
                    k = touched[q]
                    acc += F[scratch[k]]
                    scratch[k] = 0
            out[e, t] = acc


def _joint_terms(ests, draws, F):
    """Σ_kl F(n_kl) of every estimate (rows of ``ests``) against every draw: shape (E, T) (:func:`_joint_kernel`)."""
    ests = np.ascontiguousarray(ests, dtype=np.int64)
    draws = np.ascontiguousarray(draws, dtype=np.int64)
    out = np.empty((ests.shape[0], draws.shape[0]))
    _joint_kernel(ests, draws, np.ascontiguousarray(F, dtype=np.float64), out,
                  np.zeros((5, ests.shape[1] + 1), dtype=np.int64))  # fmt: skip
    return out


def _block_terms(labels, F):
    """Σ_k F(n_k) of each label vector (rows), shape (rows,): the table against one cluster."""
    one = np.zeros((1, labels.shape[1]), dtype=np.int64)
    return _joint_terms(one, labels, F)[0]


#: (estimates × draws) entries computed per call when averaging (bounds the temporary memory)
_BLOCK = 1 << 22


def _canonical_2d(labels, n_items, argname):
    arr = check_labels(labels, n_items, name=argname)
    return np.ascontiguousarray(canonicalize(np.atleast_2d(arr)).reshape(-1, arr.shape[-1]))


def partition_loss(truth, estimate, loss="VI"):
    """Loss of ``estimate`` when the partition is ``truth``: Binder or VI, classical or weighted.

    Parameters
    ----------
    truth : array_like of int, shape (..., n_items)
        One or several label vectors (e.g. posterior draws).
    estimate : array_like of int, shape (n_items,) or (m, n_items)
        One or several estimates.
    loss : "VI", "binder", ("VI", a) or ("binder", a)
        See the module docstring; a ∈ [0, 2] is the cost of separating two items the truth puts
        together (2 − a: of joining two it separates).

    Returns
    -------
    float or numpy.ndarray
        Shape ``truth.shape[:-1]`` for one estimate, ``(m,) + truth.shape[:-1]`` for several.

    Examples
    --------
    >>> partition_loss([0, 0, 1, 1], [0, 0, 0, 0], loss="binder")  # 4 pairs joined wrongly
    4.0
    """
    spec = parse_loss(loss)
    tr = check_labels(truth, name="truth")
    n = tr.shape[-1]
    est = check_labels(estimate, n, name="estimate")
    if est.ndim > 2:
        raise ValueError(f"`estimate` must be one label vector or a 2-D stack, got shape {est.shape}.")
    lead = tr.shape[:-1]
    draws = _canonical_2d(tr, n, "truth")
    ests = _canonical_2d(est, n, "estimate")
    out = _losses(ests, draws, spec)
    out = out.reshape((ests.shape[0],) + lead)
    if est.ndim == 1:
        out = out[0]
    return float(out) if np.ndim(out) == 0 else out


#: most (estimate clusters × draw clusters) for which one estimate is scored by numpy counting
_COUNT_CELLS = 4096

#: contingency cells counted per numpy block (bounds the temporary memory)
_COUNT_BLOCK = 1 << 22


def _counted_terms(est, draws, F):
    """Σ_kl F(n_kl) of one estimate (labels 0 … K − 1) against every draw: (T,), or None.

    A contingency table per draw by ``numpy.bincount`` (nothing to compile), in blocks of draws;
    None when the tables would be too large (then the compiled kernel counts in O(n) memory).
    """
    T, n = draws.shape
    K = int(est.max()) + 1 if n else 1
    L = int(draws.max()) + 1 if draws.size else 1
    if K * L > _COUNT_CELLS:
        return None
    out = np.empty(T)
    step = max(1, _COUNT_BLOCK // (n * K * L + 1))
    for s in range(0, T, step):
        block = draws[s : s + step]
        rows = block.shape[0]
        codes = (np.arange(rows)[:, None] * L + block) * K + est[None, :]
        counts = np.bincount(codes.ravel(), minlength=rows * L * K).reshape(rows, L * K)
        out[s : s + rows] = F[counts].sum(axis=1)
    return out


def _losses(ests, draws, spec):
    """Loss matrix (E, T) of estimates against draws (labels in 0 … n − 1 each)."""
    n = draws.shape[1]
    F = spec.table(n)
    joint = _counted_terms(ests[0], draws, F) if ests.shape[0] == 1 else None
    if joint is not None:  # one estimate, few clusters: all by counting
        truth_terms = _counted_terms(np.zeros(n, dtype=np.int64), draws, F)
        est_terms = _counted_terms(np.zeros(n, dtype=np.int64), ests, F)
        joint = joint[None, :]
    else:
        joint = _joint_terms(ests, draws, F)
        truth_terms = _block_terms(draws, F)
        est_terms = _block_terms(ests, F)
    return spec.scale(n) * (spec.a * truth_terms[None, :] + (2.0 - spec.a) * est_terms[:, None] - 2.0 * joint)


def mean_loss(estimates, draws, weights, loss):
    """Weighted mean loss of each estimate over the draws (numpy core; canonical inputs).

    Parameters
    ----------
    estimates : numpy.ndarray of int, shape (E, n)
    draws : numpy.ndarray of int, shape (T, n)
    weights : numpy.ndarray, shape (T,)
        Non-negative, summing to one (e.g. visit frequencies of distinct states).
    loss : Loss

    Returns
    -------
    numpy.ndarray, shape (E,)
        Computed in blocks of estimates, so the temporary memory stays O(block × T).
    """
    estimates = np.ascontiguousarray(estimates, dtype=np.int64)
    draws = np.ascontiguousarray(draws, dtype=np.int64)
    weights = np.asarray(weights, dtype=float)
    step = max(1, _BLOCK // max(1, draws.shape[0]))
    out = np.empty(estimates.shape[0])
    for s in range(0, estimates.shape[0], step):
        out[s : s + step] = _losses(estimates[s : s + step], draws, loss) @ weights
    return out


def loss_block_sums(estimate, draws, loss="VI", weights=None):
    """Partial sums of the expected loss of ``estimate`` over one block of draws.

    The expected loss over draws held in blocks (chunks of a zarr store, dask blocks on the
    workers of a cluster) is the sum of the blocks' first entries over the sum of their second:
    the blocks are independent, their sums add.

    Parameters
    ----------
    estimate : array_like of int, shape (n_items,)
    draws : array_like of int, shape (T_block, n_items)
        Label vectors (any labels: canonicalised here).
    loss : "VI", "binder", ("VI", a), ("binder", a) or Loss
    weights : array_like, shape (T_block,), optional
        Weight of each draw (e.g. visits of distinct states); default one each.

    Returns
    -------
    numpy.ndarray, shape (2,)
        [Σ_t w_t L(draw_t, estimate), Σ_t w_t].

    Examples
    --------
    >>> loss_block_sums([0, 0, 1, 1], [[0, 0, 1, 1], [0, 0, 0, 0]], loss="binder")
    array([4., 2.])
    """
    spec = parse_loss(loss)
    est = check_labels(estimate, name="estimate")
    if est.ndim != 1:
        raise ValueError(f"`estimate` must be one label vector, got shape {est.shape}.")
    block = _canonical_2d(np.atleast_2d(np.asarray(draws)), est.shape[0], "draws")
    if block.shape[0] == 0:
        return np.zeros(2)
    w = np.ones(block.shape[0]) if weights is None else np.asarray(weights, dtype=float).reshape(-1)
    if w.shape[0] != block.shape[0]:
        raise ValueError(f"`weights` must have one entry per draw ({block.shape[0]}), got {w.shape[0]}.")
    losses = _losses(_canonical_2d(est, est.shape[0], "estimate"), block, spec)[0]
    return np.array([float(w @ losses), float(w.sum())])
