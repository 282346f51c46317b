"""Exact prior draws of a partition in ``O(N)`` per draw (after ``O(N^2)`` per batch), Gibbs-type priors.

All built-in priors are of Gibbs type: the size weight grows linearly,
``h(n + 1) / h(n) = b n + a`` (paper's prior ``n + 1``, Dirichlet process ``n``, Pitman-Yor
``n - d``, mixture of finite mixtures ``n + gamma``, uniform ``1``). The total weight of all
completions of a partial partition of the first ``i`` items into ``C`` blocks then depends on
``(i, C)`` only,

    W(N, C) = g(C),    W(i, C) = (b i + a C) W(i + 1, C) + h(1) W(i + 1, C + 1),

so the items can be seated one at a time: item ``i + 1`` joins block ``c`` with probability
``(b n_c + a) W(i + 1, C) / W(i, C)`` and opens a new block with ``h(1) W(i + 1, C + 1) / W(i, C)``.
The table ``W`` has ``O(N^2)`` entries, too many to keep at 20,000 items; it is kept at every
``B``-th row (``B ~ sqrt(N)``) and the rows of one block are recomputed from the next
checkpoint when the draws reach it (all draws advance through a block together), so memory is
``O(N^1.5)``; the checkpoints take ``O(N^2)`` time once per prior (cached), and a batch of draws
then ``O(N (C + sqrt(N)))`` (a block's rows are only recomputed for the block counts its draws
can reach) plus ``O(N)`` per draw: joining block ``c`` with weight ``b n_c + a`` is a two-way
mixture of O(1) choices.

Other priors (a user-defined ``h``) are drawn by the generic sampler (:func:`_draw_generic`,
``O(N^3)`` per batch and ``O(N^2)`` per draw). :func:`draw_prior` chooses between the two; the
random generator is passed into the kernels, so ``PartitionRV.rng_fn`` and PyTensor's numba
backend (:mod:`pymc_partition.numba_random`) draw the same partitions from the same generator state.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import njit

__all__ = ["gibbs_type_coefficients", "draw_prior"]

NEG_INF = -np.inf


def gibbs_type_coefficients(log_h, rtol=1e-9):
    """Return ``(a, b)`` with ``h(n+1)/h(n) = b n + a`` for ``n = 1..N-1``, or ``None`` if ``h`` is not so."""
    ok, a, b = _gibbs_coefficients(np.ascontiguousarray(log_h, dtype=np.float64), float(rtol))
    return (a, b) if ok else None


@njit(cache=True)
def _gibbs_coefficients(log_h, rtol):
    """``(is_gibbs_type, a, b)``; see :func:`gibbs_type_coefficients`."""
    n_items = log_h.shape[0] - 1
    if n_items == 1:
        return True, 1.0, 0.0
    if n_items == 2:  # one ratio: any line through it (b = 0)
        return True, np.exp(log_h[2] - log_h[1]), 0.0
    ratio = np.exp(log_h[2:] - log_h[1:-1])  # n = 1..N-1
    if not np.all(np.isfinite(ratio)):
        return False, 0.0, 0.0
    b = ratio[1] - ratio[0]
    a = ratio[0] - b
    for n in range(1, n_items):
        if not abs(b * n + a - ratio[n - 1]) <= rtol * abs(ratio[n - 1]):  # np.allclose, atol=0
            return False, 0.0, 0.0
    return True, a, b


@njit(cache=True)
def _log_add(x, y):
    if x == NEG_INF:
        return y
    if y == NEG_INF:
        return x
    if x > y:
        return x + np.log1p(np.exp(y - x))
    return y + np.log1p(np.exp(x - y))


@njit(cache=True)
def _fill_rows(rows, top, i_top, i_low, a, b, log_h1, c_low):
    """``rows[i - i_low, C] = W(i, C)`` for ``i = i_top .. i_low`` (descending), from ``top = W(i_top, .)``.

    Only ``C <= c_low + (i - i_low) + 1`` is computed at row ``i``: draws with at most ``c_low``
    blocks at row ``i_low`` cannot have more there, and each row needs one more column of the
    next (pass ``c_low = N`` for whole rows).
    """
    n_c = top.shape[0]
    rows[i_top - i_low, :] = top
    for i in range(i_top - 1, i_low - 1, -1):
        nxt = rows[i + 1 - i_low]
        cur = rows[i - i_low]
        for C in range(min(n_c, c_low + (i - i_low) + 2)):
            join = NEG_INF
            w = b * i + a * C
            if C >= 1 and w > 0.0:
                join = np.log(w) + nxt[C]
            new = log_h1 + nxt[C + 1] if C + 1 < n_c else NEG_INF
            cur[C] = _log_add(join, new)


@njit(cache=True)
def _checkpoints(log_g, a, b, log_h1, block):
    """``W`` at rows ``0, block, 2 block, ..., N`` (full width ``N + 2``)."""
    n = log_g.shape[0] - 1
    n_c = n + 2
    n_ck = n // block + 2
    ck = np.full((n_ck, n_c), NEG_INF)
    top = np.full(n_c, NEG_INF)
    top[: n + 1] = log_g
    rows = np.full((block + 1, n_c), NEG_INF)
    i_top = n
    k_top = (n + block - 1) // block  # checkpoint index of row N (rows are k * block, capped at N)
    ck[k_top] = top
    for k in range(k_top - 1, -1, -1):
        i_low = k * block
        _fill_rows(rows, top, i_top, i_low, a, b, log_h1, n)
        top = rows[0].copy()
        ck[k] = top
        i_top = i_low
    return ck


@njit(cache=True)
def _draw(log_g, a, b, log_h1, block, ck, rng, n_draws):
    n = log_g.shape[0] - 1
    n_c = n + 2
    labels = np.zeros((n_draws, n), dtype=np.int64)
    # labels of the items that joined an existing block, in order: block c appears n_c - 1 times
    joiners = np.zeros((n_draws, n), dtype=np.int64)
    n_blocks = np.zeros(n_draws, dtype=np.int64)
    rows = np.full((block + 1, n_c), NEG_INF)
    k_top = (n + block - 1) // block
    for k in range(k_top):
        i_low = k * block
        i_top = min(n, i_low + block)
        _fill_rows(rows, ck[k + 1], i_top, i_low, a, b, log_h1, n_blocks.max())
        for d in range(n_draws):
            lab = labels[d]
            joined = joiners[d]
            for i in range(i_low, i_top):  # place item i; i items are already placed
                C = n_blocks[d]
                p_new = np.exp(log_h1 + rows[i + 1 - i_low, C + 1] - rows[i - i_low, C])
                u = rng.random()
                if C == 0 or u < p_new:
                    lab[i] = C
                    n_blocks[d] = C + 1
                    continue
                # join block c with probability proportional to b n_c + a = b (n_c - 1) + (a + b),
                # a mixture of "the block of a uniform earlier joiner" (weight b (i - C)) and "a
                # uniform block" (weight (a + b) C), both O(1); a + b = h(2) / h(1) > 0
                n_joined = i - C
                v = (u - p_new) / (1.0 - p_new) * (b * n_joined + (a + b) * C)
                if v < b * n_joined:
                    c = joined[min(int(v / b), n_joined - 1)]
                else:
                    c = min(int((v - b * n_joined) / (a + b)), C - 1)
                lab[i] = c
                joined[n_joined] = c
    return labels


_CHECKPOINTS: dict = {}  # the last few tables' checkpoints: PyMC asks for one draw per call
_CACHE_SIZE = 4


def _cached_checkpoints(log_g, a, b, log_h1, block):
    key = (log_g.tobytes(), a, b, log_h1, block)
    ck = _CHECKPOINTS.pop(key, None)
    if ck is None:
        ck = _checkpoints(log_g, a, b, log_h1, block)
    _CHECKPOINTS[key] = ck
    while len(_CHECKPOINTS) > _CACHE_SIZE:
        _CHECKPOINTS.pop(next(iter(_CHECKPOINTS)))
    return ck


@njit(cache=True)
def _draw_gibbs_type(log_g, log_h, a, b, rng, n_draws):
    n = log_g.shape[0] - 1
    log_h1 = log_h[1]
    block = max(1, int(math.ceil(math.sqrt(n))))
    # numba keeps no state between calls: the checkpoints are looked up in Python, which costs
    # less than recomputing them from 16 items on (docs/performance.md, "Figures behind the code")
    with numba.objmode(ck="float64[:, ::1]"):
        ck = _cached_checkpoints(log_g, a, b, log_h1, block)
    return _draw(log_g, a, b, log_h1, block, ck, rng, n_draws)


@njit(cache=True)
def _log_binom(m, k):
    return math.lgamma(m + 1.0) - math.lgamma(k + 1.0) - math.lgamma(m - k + 1.0)


@njit(cache=True)
def _prefix_weights(log_g, log_h):
    """``V[m, j]``: log total weight of completing a partition with ``m`` items left, ``j`` blocks used."""
    n = log_g.shape[0] - 1
    V = np.full((n + 1, n + 1), NEG_INF)
    V[0, 1:] = log_g[1:]
    terms = np.empty(n)
    for m in range(1, n + 1):
        for j in range(n - m + 1):
            # the block of the first item left has k items: binom(m-1, k-1) h(k) V[m-k, j+1]
            top = NEG_INF
            for k in range(1, m + 1):
                terms[k - 1] = _log_binom(m - 1, k - 1) + log_h[k] + V[m - k, j + 1]
                top = max(top, terms[k - 1])
            if top > NEG_INF:
                V[m, j] = top + np.log(np.sum(np.exp(terms[:m] - top)))
    return V


@njit(cache=True)
def _draw_generic(log_g, log_h, rng, n_draws):
    """Draw exactly from any exchangeable prior, block by block.

    The block of the first item left has size ``k`` with probability proportional to ``binom(m-1, k-1) h(k) V[m-k,
    j+1]`` and its other members are a uniform subset of the items left.
    """
    n = log_g.shape[0] - 1
    V = _prefix_weights(log_g, log_h)
    labels = np.empty((n_draws, n), dtype=np.int64)
    left = np.empty(n, dtype=np.int64)
    logw = np.empty(n)
    for d in range(n_draws):
        lab = labels[d]
        lab[:] = -1
        j = 0
        m = n
        while m > 0:
            i = 0
            for item in range(n):  # the items left, in order: left[0] opens block j
                if lab[item] < 0:
                    left[i] = item
                    i += 1
            for k in range(1, m + 1):
                logw[k - 1] = _log_binom(m - 1, k - 1) + log_h[k] + V[m - k, j + 1]
            w = np.exp(logw[:m] - np.max(logw[:m]))
            u = rng.random() * np.sum(w)
            size = m
            acc = 0.0
            for k in range(1, m + 1):
                acc += w[k - 1]
                if u < acc:
                    size = k
                    break
            lab[left[0]] = j
            for t in range(1, size):  # partial Fisher-Yates on left[1:m]
                # an index from a uniform double, as in _draw: Generator.integers costs seconds
                # of compilation in every graph that links this kernel
                s = min(t + int(rng.random() * (m - t)), m - 1)
                left[t], left[s] = left[s], left[t]
                lab[left[t]] = j
            m -= size
            j += 1
    return labels


@njit(cache=True)
def draw_prior(log_g, log_h, rng, n_draws):
    """``n_draws`` exact draws (canonical labels, ``(n_draws, N)``) from the prior with these tables.

    Parameters
    ----------
    log_g, log_h : ndarray (N + 1,) float64
        The prior's normalized tables (:meth:`pymc_partition.priors.PartitionPrior.tables`).
    rng : numpy.random.Generator
        Advanced in place (numba shares the generator's state).
    n_draws : int

    Notes
    -----
    Gibbs-type priors (all built-in ones) are drawn in ``O(N (C + sqrt N))`` per batch after the
    ``O(N^2)`` checkpoints, kept for the last few tables (PyMC asks for one draw per call); other
    priors by the generic ``O(N^3)`` + ``O(N^2)``-per-draw sampler.
    """
    if np.isnan(log_g).any() or np.isnan(log_h).any() or not np.isfinite(log_g[1:]).any():
        raise ValueError(
            "The partition prior's parameters are outside their domain (its tables are not "
            "finite); check the priors of its random parameters."
        )
    is_gibbs, a, b = _gibbs_coefficients(log_h, 1e-9)
    if is_gibbs:
        return _draw_gibbs_type(log_g, log_h, a, b, rng, n_draws)
    return _draw_generic(log_g, log_h, rng, n_draws)
