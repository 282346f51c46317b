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

Other priors (a user-defined ``h``) fall back to :func:`pymc_partition.distribution.sample_prior_labels`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["gibbs_type_coefficients", "draw_gibbs_type"]

NEG_INF = -np.inf


def gibbs_type_coefficients(log_h, rtol=1e-9):
    """``(a, b)`` with ``h(n+1)/h(n) = b n + a`` for ``n = 1..N-1``, or ``None`` if ``h`` is not so."""
    log_h = np.asarray(log_h, dtype=float)
    n_items = log_h.shape[0] - 1
    if n_items < 3:
        ratio = np.exp(np.diff(log_h[1:]))
        if n_items == 2:  # one ratio: any line through it (b = 0)
            return float(ratio[0]), 0.0
        return 1.0, 0.0
    with np.errstate(over="ignore"):
        ratio = np.exp(np.diff(log_h[1:]))  # n = 1..N-1
    if not np.all(np.isfinite(ratio)):
        return None
    b = ratio[1] - ratio[0]
    a = ratio[0] - b
    n = np.arange(1, n_items, dtype=float)
    fit = b * n + a
    if np.allclose(fit, ratio, rtol=rtol, atol=0.0):
        return float(a), float(b)
    return None


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
def _draw(log_g, a, b, log_h1, block, ck, seed, n_draws):
    np.random.seed(seed)
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
                u = np.random.random()
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


def draw_gibbs_type(log_g, log_h, coefficients, rng, n_draws):
    """``n_draws`` exact draws (canonical labels) from the Gibbs-type prior with these tables.

    The checkpoints of ``W`` (``O(N^2)`` time, ``O(N^1.5)`` memory) are cached for the last
    few tables; each call then costs ``O(N (C + sqrt(N)))`` for its ``C``-block draws.
    """
    log_g = np.ascontiguousarray(log_g, dtype=np.float64)
    n = log_g.shape[0] - 1
    a, b = (float(x) for x in coefficients)
    log_h1 = float(log_h[1])
    block = max(1, int(np.ceil(np.sqrt(n))))
    ck = _cached_checkpoints(log_g, a, b, log_h1, block)
    seed = int(rng.integers(0, 2**62))
    return _draw(log_g, a, b, log_h1, block, ck, seed, int(n_draws))
