r"""Exact posterior over partitions for small numbers of items.

For a model with a :class:`~pymc_partition.Partition` variable and conjugate
:class:`~pymc_partition.MarginalLikelihood` terms, the unnormalized log posterior of a partition
``z`` with blocks ``B_1..B_C`` is

.. math:: \log_g[C] + \sum_c \big(\log_h[|B_c|] + \log m(B_c)\big)

with ``log m(B)`` the family's closed-form log marginal likelihood of the summed statistics of
block ``B``. :func:`exact_posterior` computes

- the block weights ``w[B] = log_h[|B|] + log m(B)`` of all ``2^n`` subsets, evaluated by the
  family's own pytensor graph in large batches (the one formula the model and samplers use);
- the log normalizing constant and the co-clustering matrix by a dynamic program over subsets
  (sum over the block holding the lowest item, O(3^n), tracking the number of blocks because the
  prior depends on it), and the exact posterior of the number of clusters;
- on request, the ``k`` most probable partitions by enumeration of all ``B(n)`` restricted growth
  strings (O(1) work per state from the block weights, two threads), and the MAP partition by a
  max-product version of the dynamic program.
"""

from __future__ import annotations

import contextlib
import time

import numba
import numpy as np

from . import _exact_kernels as K
from .state import bell_number, bits_per_label, canonicalize, check_labels, keys_to_labels

__all__ = ["exact_posterior", "ExactPosterior", "MAX_DP_ITEMS", "MAX_ENUM_ITEMS", "MAX_TOP_K"]

#: Largest ``n_items`` for log Z and co-clustering (2^20 subsets; ~0.3 GB and tens of seconds).
MAX_DP_ITEMS = 20
#: Largest ``n_items`` for ``top(k)`` enumeration (B(15) = 1.4e9 states; B(16) = 1.0e10, seven
#: times as many, would take minutes).
MAX_ENUM_ITEMS = 15
#: Largest ``k`` for ``top(k)``: each thread keeps a heap of ``k`` states (16 bytes each).
MAX_TOP_K = 10_000_000

_BATCH_ROWS = 1 << 16  # rows per call of the family's compiled log marginal
_DP_CHUNK = 64  # subsets per dynamically scheduled chunk of a DP level
#: Up to this many items the DP runs on one thread: it takes milliseconds, and the n barriers
#: between levels cost more than they save when the cores are shared with other work.
_DP_SERIAL_ITEMS = 15
_LOW_BITS = 14  # subsets are built as (high part) + (low part) with a 2^14-row low table


def _check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"`{name}` must be an integer, got {type(value).__name__}.")
    value = int(value)
    if value < low or (high is not None and value > high):
        rng = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValueError(f"`{name}` must be {rng}, got {value}.")
    return value


class _Progress:
    """Minimal rich progress bar, a no-op when disabled (numba kernels report between calls)."""

    def __init__(self, enabled, description, total):
        self.bar = None
        if enabled:
            try:
                from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
            except ImportError:  # pragma: no cover - rich comes with pymc
                return
            self.bar = Progress(
                TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(), transient=False,
            )  # fmt: skip
            self.bar.start()
            self.task = self.bar.add_task(description, total=total)

    def advance(self, amount=1):
        if self.bar is not None:
            self.bar.advance(self.task, amount)

    def close(self):
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


@contextlib.contextmanager
def _dp_threads(n):
    """Use dynamic chunking for the level-parallel dynamic programs.

    Only those of more than ``_DP_SERIAL_ITEMS`` items run in parallel: see :func:`_dp_kernel`.
    """
    with numba.parallel_chunksize(_DP_CHUNK):
        yield


def _dp_kernel(name, n):
    """Return the compiled dynamic program ``name``: serial up to ``_DP_SERIAL_ITEMS`` items, else parallel.

    Threads do not pay at those sizes, and the serial compilation takes half the time.
    """
    return getattr(K, name + "_serial" if n <= _DP_SERIAL_ITEMS else name)


def _popcount_table(n):
    """``pc[mask]`` (int64) for all ``2^n`` masks."""
    pc = np.zeros(1 << n, dtype=np.int64)
    for b in range(n):
        pc[1 << b : 2 << b] = pc[: 1 << b] + 1
    return pc


def _subset_sums(x):
    """All ``2^m`` subset sums of the rows of ``x`` (m, s): row ``mask`` = sum of rows in ``mask``.

    Built incrementally: ``out[mask] = out[mask without its highest bit] + x[highest bit]``.
    """
    m, s = x.shape
    out = np.zeros((1 << m, s))
    for b in range(m):
        out[1 << b : 2 << b] = out[: 1 << b] + x[b]
    return out


def block_log_weights(family, item_stats, log_h, progress=None):
    """Log weights ``w[B] = log_h[|B|] + log m(B)`` of all ``2^n`` blocks (``w[0] = 0``).

    Parameters
    ----------
    family : ConjugateFamily
        Its :meth:`~ConjugateFamily.log_marginal_numpy` scores batches of summed statistics.
    item_stats : ndarray, shape (n_items, n_stats)
        Additive per-item statistics.
    log_h : ndarray, shape (n_items + 1,)
        Prior size table.

    Returns
    -------
    ndarray, shape (2**n_items,)
    """
    item_stats = np.asarray(item_stats, dtype=float)
    n, n_stats = item_stats.shape
    low = min(n, _LOW_BITS)
    # mask = high << low | low_mask: stats = high-part sum + low-part sum, so only two small
    # subset-sum tables live in memory and each batch is one broadcast add
    lo = _subset_sums(item_stats[:low])
    hi = _subset_sums(item_stats[low:])
    lo[0] = item_stats[0]  # the empty block is never used; score a harmless row instead of zeros
    logml = np.empty(1 << n)
    per = max(1, _BATCH_ROWS >> low)
    for h0 in range(0, hi.shape[0], per):
        h1 = min(h0 + per, hi.shape[0])
        rows = (hi[h0:h1, None, :] + lo[None, :, :]).reshape(-1, n_stats)
        logml[h0 << low : h1 << low] = family.log_marginal_numpy(rows)
        if progress is not None:
            progress.advance(h1 - h0)
    logml[0] = 0.0  # the empty block: never used
    if not np.all(np.isfinite(logml)):
        from .families.evaluability import check_log_marginals

        B = int(np.flatnonzero(~np.isfinite(logml))[0])
        items = [i for i in range(n) if B >> i & 1]
        block = item_stats[items].sum(axis=0, keepdims=True)
        check_log_marginals(family, block, logml[B : B + 1], lambda row: f"the block of items {items}")
    w = np.asarray(log_h, dtype=float)[_popcount_table(n)] + logml
    w[0] = 0.0
    return w


class ExactPosterior:
    """Exact posterior over the partitions of a small number of items.

    Built by :func:`exact_posterior`; see there. ``log_z``, ``coclustering`` and
    ``n_clusters_pmf`` are computed on construction by the subset dynamic program;
    :meth:`top` enumerates all ``B(n)`` states the first time it is called (and caches at least
    ``top_k`` of them); :attr:`map` uses a max-product dynamic program unless :meth:`top` has
    already run.

    Attributes
    ----------
    name : str
        Name of the partition variable.
    n_items : int
        Number of items ``n``.
    n_states : int
        Number of partitions of ``n`` items (the Bell number ``B(n)``, exact Python int).
    log_z : float
        ``log sum_z exp(log_g[C] + sum_c (log_h[n_c] + log m(B_c)))``, the log normalizing
        constant of the unnormalized posterior (the model's logp), i.e. the log marginal
        likelihood of the data under the model.
    coclustering : ndarray, shape (n, n)
        ``P(z_i = z_j | y)``; the diagonal is 1.
    n_clusters_pmf : ndarray, shape (n + 1,)
        ``P(C = c | y)`` at index ``c`` (index 0 is 0).
    block_log_weights : ndarray, shape (2**n,)
        ``w[B] = log_h[|B|] + log m(B)`` for every subset bit mask ``B`` (``w[0] = 0``).
    timings : dict
        Seconds spent in each stage (``"block_weights"``, ``"dp"``, ``"enumeration"``, ...).
    """

    def __init__(self, spec, *, top_k=100, progressbar=True):
        n = spec.n_items
        self.name = spec.name
        self.n_items = n
        self.n_states = bell_number(n)
        self.spec = spec
        self.log_g = np.asarray(spec.log_g, dtype=float)
        self.log_h = np.asarray(spec.log_h, dtype=float)
        self._top_k = min(int(top_k), self.n_states)
        self._progressbar = bool(progressbar)
        self._top = None  # (scores, keys) of the enumerated best states, most probable first
        self._map = None
        self.timings = {}

        big = n >= 17  # progress bars only where the wait is noticeable
        t0 = time.perf_counter()
        prog = _Progress(self._progressbar and big, "block weights", 1 << max(0, n - _LOW_BITS))
        try:
            self.block_log_weights = block_log_weights(spec.family, spec.item_stats, self.log_h, prog)
        finally:
            prog.close()
        t1 = time.perf_counter()
        self.timings["block_weights"] = t1 - t0
        self._sum_product()
        self.timings["dp"] = time.perf_counter() - t1

    # ------------------------------------------------------------------ dynamic programs
    def _levels(self):
        n = self.n_items
        pc = _popcount_table(n)
        order = np.argsort(pc, kind="stable").astype(np.int64)
        level_start = np.zeros(n + 2, dtype=np.int64)
        level_start[1:] = np.cumsum(np.bincount(pc, minlength=n + 1))
        return pc, order, level_start

    def _sum_product(self):
        n = self.n_items
        w = self.block_log_weights
        pc, order, level_start = self._levels()
        with _dp_threads(n):
            E, F = _dp_kernel("partition_function_dp", n)(w, pc, order, level_start, n)
        s = K.log_scales(E)
        finite = np.isfinite(self.log_g)
        gmax = float(self.log_g[finite].max())
        eg = np.where(finite, np.exp(self.log_g - gmax), 0.0)
        full = (1 << n) - 1
        tot = float(eg @ F[full])
        if not (tot > 0 and np.isfinite(s[full])):
            raise FloatingPointError("Every partition has zero posterior weight.")
        self.log_z = float(s[full] + gmax + np.log(tot))
        with np.errstate(divide="ignore"):
            self.n_clusters_pmf = np.exp(self.log_g + s[full] + np.log(F[full]) - self.log_z)
        self.n_clusters_pmf[0] = 0.0
        # log sum_C g(C + 1) f[T][C]: the rest T of the items holds the other C blocks
        log_rest = K._log_weighted_rows(s, F, eg, gmax, 1)
        del F
        u = K.block_probabilities(w, log_rest, self.log_z, n)
        u = K.superset_sums(u, n)
        idx = 1 << np.arange(n)
        co = u[idx[:, None] | idx[None, :]]
        # the diagonal sums P(B) over all blocks holding item i: 1 up to rounding
        self._diag_error = float(np.max(np.abs(np.diag(co) - 1.0)))
        np.fill_diagonal(co, 1.0)
        self.coclustering = np.clip(co, 0.0, 1.0)

    def _max_product(self):
        n = self.n_items
        pc, order, level_start = self._levels()
        w = self.block_log_weights
        with _dp_threads(n):
            M = _dp_kernel("max_partition_dp", n)(w, pc, order, level_start, n)
        C = int(np.argmax(self.log_g + M[(1 << n) - 1]))
        # blocks come out in order of their lowest item: the labels are canonical
        return K.trace_max_partition(w, M, C, n)

    # ------------------------------------------------------------------ scoring
    def log_posterior(self, labels):
        """Unnormalized log posterior (the model's logp) of label vector(s) ``(..., n_items)``.

        Any labels are accepted (only which items share a label matters).
        """
        arr = check_labels(labels, self.n_items)
        n = self.n_items
        flat = arr.reshape(-1, n)
        # relabel by first appearance so block numbers are 0..C-1, then OR the item bits
        flat = canonicalize(flat)
        rows = np.repeat(np.arange(flat.shape[0]), n)
        masks = np.zeros((flat.shape[0], n), dtype=np.int64)
        np.add.at(masks, (rows, flat.ravel()), np.tile(1 << np.arange(n), flat.shape[0]))
        w = self.block_log_weights
        C = flat.max(axis=1) + 1
        out = self.log_g[C] + np.where(masks > 0, w[masks], 0.0).sum(axis=1)
        return out.reshape(arr.shape[:-1]) if arr.ndim > 1 else float(out[0])

    def probability(self, labels):
        """Exact posterior probability of label vector(s) ``(..., n_items)``."""
        return np.exp(self.log_posterior(labels) - self.log_z)

    # ------------------------------------------------------------------ enumeration
    def _check_enumerable(self):
        if self.n_items > MAX_ENUM_ITEMS:
            raise ValueError(
                f"Enumerating all B({self.n_items}) = {self.n_states:.3g} partitions is not "
                f"feasible: top(k) is limited to n_items <= {MAX_ENUM_ITEMS} "
                f"(B({MAX_ENUM_ITEMS}) = {bell_number(MAX_ENUM_ITEMS):.3g}). log_z, coclustering, "
                "n_clusters_pmf and map are still exact."
            )

    def _enumerate(self, k):
        """Enumerate every state and keep the ``k`` best; sets ``self._top``."""
        n = self.n_items
        t0 = time.perf_counter()
        n_threads = numba.get_num_threads()
        p = max(1, min(n - 1, 7))  # prefix length: B(7) = 877 subtrees to share between threads
        prefixes = _rgs(p)
        # leaves below a prefix with C blocks and m items to go: L(m, C) = C L(m-1, C) + L(m-1, C+1)
        m = n - p
        L = [[1] * (n + 2)]
        for _ in range(m):
            prev = L[-1]
            L.append([c * prev[c] + prev[c + 1] for c in range(n + 1)] + [0])
        sizes = np.array([L[m][int(r.max()) + 1] for r in prefixes], dtype=float)
        # largest subtrees first, handed out one at a time: balanced even when the other
        # core is busy with someone else's work
        order = np.argsort(-sizes, kind="stable")
        prefixes = np.ascontiguousarray(prefixes[order])
        cum = np.concatenate([[0.0], np.cumsum(sizes[order])])
        n_batches = 40 if (self._progressbar and self.n_states > 10**7) else 1
        bounds = np.searchsorted(cum, np.linspace(0, cum[-1], n_batches + 1), side="left")
        bounds[0], bounds[-1] = 0, len(prefixes)
        hs = np.full((n_threads, k), -np.inf)
        hk = np.zeros((n_threads, k), dtype=np.uint64)
        hsize = np.zeros(n_threads, dtype=np.int64)
        leaves = np.zeros(n_threads, dtype=np.int64)
        bits = bits_per_label(n)
        prog = _Progress(n_batches > 1, f"enumerating B({n}) partitions", n_batches)
        try:
            with numba.parallel_chunksize(1):
                for b in range(n_batches):
                    if bounds[b + 1] > bounds[b]:
                        K.enumerate_prefixes(
                            self.block_log_weights, self.log_g, n, bits, prefixes,
                            bounds[b], bounds[b + 1], hs, hk, hsize, leaves,
                        )  # fmt: skip
                    prog.advance()
        finally:
            prog.close()
        if int(leaves.sum()) != self.n_states:  # pragma: no cover - internal consistency
            raise RuntimeError(f"enumerated {int(leaves.sum())} states, expected {self.n_states}")
        scores = np.concatenate([hs[t, : hsize[t]] for t in range(n_threads)])
        keys = np.concatenate([hk[t, : hsize[t]] for t in range(n_threads)])
        order = np.lexsort((keys, -scores))[:k]  # most probable first, ties by key
        self._top = (scores[order], keys[order])
        self.timings["enumeration"] = time.perf_counter() - t0

    def top(self, k=10):
        """Return the ``k`` most probable partitions and their exact posterior probabilities.

        Enumerates all ``B(n)`` partitions on the first call (or when ``k`` exceeds what is
        cached), keeping the best ``max(k, top_k)``.

        Parameters
        ----------
        k : int
            Number of states, ``1 <= k <= min(n_states, MAX_TOP_K)``.

        Returns
        -------
        labels : ndarray of int64, shape (k, n_items)
            Canonical label vectors, most probable first (exact ties ordered by state key).
        probs : ndarray, shape (k,)
            Their posterior probabilities ``exp(log_posterior - log_z)``.

        Raises
        ------
        ValueError
            If ``k`` is out of range, or ``n_items > MAX_ENUM_ITEMS``.
        """
        k = _check_int("k", k, 1)
        if k > self.n_states:
            raise ValueError(f"`k` = {k} exceeds the number of partitions B({self.n_items}) = {self.n_states}.")
        if k > MAX_TOP_K:
            raise ValueError(f"`k` = {k} exceeds MAX_TOP_K = {MAX_TOP_K} (memory for the heaps).")
        self._check_enumerable()
        if self._top is None or self._top[0].shape[0] < k:
            self._enumerate(max(k, min(self._top_k, MAX_TOP_K)))
        scores, keys = self._top
        labels = keys_to_labels(keys[:k], self.n_items)
        return labels, np.exp(scores[:k] - self.log_z)

    @property
    def map(self):
        """The most probable partition (canonical labels, shape ``(n_items,)``).

        Taken from :meth:`top` if it has run, else from a max-product dynamic program over
        subsets (O(3^n), so also available up to ``MAX_DP_ITEMS``). With exact ties, one of the
        tied states.
        """
        if self._top is not None:
            return keys_to_labels(self._top[1][:1], self.n_items)[0]
        if self._map is None:
            t0 = time.perf_counter()
            self._map = self._max_product()
            self.timings["map"] = time.perf_counter() - t0
        return self._map.copy()

    @property
    def map_probability(self):
        """Posterior probability of :attr:`map`."""
        return float(self.probability(self.map))

    def __repr__(self):
        return (
            f"ExactPosterior({self.name!r}, n_items={self.n_items}, n_states={self.n_states}, log_z={self.log_z:.6g})"
        )


def _rgs(p):
    """All restricted growth strings of length ``p`` (int64 array ``(B(p), p)``)."""
    rows = [[0]]
    for _ in range(p - 1):
        rows = [r + [c] for r in rows for c in range(max(r) + 2)]
    return np.array(rows, dtype=np.int64).reshape(-1, p)


def exact_posterior(model=None, var=None, *, top_k=100, progressbar=True, point=None):
    """Exact posterior over the partitions of a ``Partition`` variable (small ``n_items``).

    Parameters
    ----------
    model : pymc.Model, optional
        A model with a :class:`~pymc_partition.Partition` and at least one
        :class:`~pymc_partition.MarginalLikelihood` on it; defaults to the model on the context
        stack.
    var : str or TensorVariable, optional
        The partition variable, needed if the model has several.
    top_k : int
        How many of the most probable states :meth:`ExactPosterior.top` keeps when it first
        enumerates (later calls with ``k <= top_k`` are free).
    progressbar : bool
        Show progress bars for the long stages (enumeration of more than 1e7 states, the
        dynamic program for 17 items or more).
    point : dict, optional
        Values of the model's value variables where random hyperparameters are fixed (needed
        when the prior or likelihood has any, e.g. ``{"alpha_log__": np.log(2.0)}`` beside the
        rest of ``model.initial_point()``): the result is then the posterior of the partition
        *given* those values.

    Returns
    -------
    ExactPosterior
        With ``log_z``, ``coclustering``, ``n_clusters_pmf`` computed, and ``top(k)``,
        ``map``, ``log_posterior(labels)``, ``probability(labels)``.

    Raises
    ------
    ValueError
        If ``n_items > MAX_DP_ITEMS`` (20), before any work; if the model has no partition or
        no marginal likelihood on it. ``top(k)`` refuses ``n_items > MAX_ENUM_ITEMS`` (15).

    Notes
    -----
    Costs: ``2^n`` block log marginals (one batched pytensor call per 65,536 blocks), then
    ``O(3^n n)`` for the dynamic program (14 items: a few milliseconds; 20 items: tens of
    seconds and ~0.3 GB), and ``B(n)`` states for the enumeration (B(14) = 1.9e8 in about two
    seconds on two cores). Numba kernels are compiled on first use and cached on disk.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pymc_partition as pmp
    >>> x = np.r_[np.zeros(3), np.ones(3) * 4.0] + np.arange(6) * 0.1   # two groups of 3
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", n_items=6, prior=pmp.DirichletProcess(1.0))
    ...     y = pmp.MarginalLikelihood("y", partition=z, observed=x,
    ...                                family=pmp.NormalInverseGamma.from_data(x, n_clusters=2))
    >>> exact = pmp.exact_posterior(model)       # all B(6) = 203 partitions
    >>> labels, probs = exact.top(3)             # the three most probable, best first
    >>> labels[0]
    array([0, 0, 0, 1, 1, 1])
    >>> bool(probs[0] > 0.5 and exact.coclustering[0, 1] > exact.coclustering[0, 3])
    True
    """
    from .model_spec import partition_spec  # PyMC, only for a model (ExactPosterior takes a spec)

    top_k = _check_int("top_k", top_k, 1)
    spec = partition_spec(model, var, point=point)
    if spec.n_items > MAX_DP_ITEMS:
        raise ValueError(
            f"The exact posterior is limited to n_items <= {MAX_DP_ITEMS} (the dynamic program "
            f"needs 2^n_items subsets and O(3^n_items) work); {spec.name!r} has "
            f"{spec.n_items} items. Use MCMC (pmp.GibbsPartition / pmp.SplitMerge) instead."
        )
    return ExactPosterior(spec, top_k=top_k, progressbar=progressbar)
