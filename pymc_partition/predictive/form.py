"""A family's log predictive as compiled functions, and its check against the pytensor graph.

The samplers never need a cluster's log marginal ``lm(S)`` per candidate, only the log predictive
of one item joining a cluster, ``lm(S + x_i) - lm(S)``. A :class:`PredictiveForm` computes it from
a small per-cluster *cache* (quantities of ``S`` that do not depend on the item: hyperparameter
constants folded, count-only terms looked up in tables, a Cholesky factor updated by rank one) and
per-item terms computed once (``aux``). Four functions with fixed numba signatures
(:mod:`._types`) act on the kernels' arrays, named by a context vector ``ctx``
(:func:`~._types.make_context`: ``params``, the slots' summed statistics ``stats`` and caches
``cache``, ``aux``, the compiled graph ``lm``):

``pred(ctx, slots_addr, m, i, out_addr)``
    log predictive of item ``i`` joining each cluster in the slots listed at ``slots_addr``
    (``m`` of them, none holding ``i``), written at ``out_addr``: one call per item for all its
    candidates, so that the call overhead is not paid per candidate;
``remove(ctx, c, i) -> lp``
    called after the kernel subtracted item ``i``'s statistics from ``stats[c]``: brings
    ``cache[c]`` up to date and returns the log predictive of ``i`` joining what is left;
``add(ctx, c, i, lp)``
    called after the kernel added item ``i``'s statistics to ``stats[c]``; ``lp`` is the log
    predictive ``pred`` gave for that move;
``init(ctx, c) -> lm``
    rebuilds ``cache[c]`` from the summed statistics ``stats[c]`` alone and returns the cluster's
    log marginal ``lm(S)`` (the kernels' per-step rebuild and split-merge's acceptance ratios use
    it, so they never call the graph).

``stats`` and ``cache`` have one spare last row the functions may use as scratch memory.

The family's pytensor ``log_marginal`` stays the definition: a form is a faster evaluation of
the same formula, checked against the compiled graph by :func:`check_form` (the samplers run it on
the model's own data when they are built and fall back to the graph if it disagrees) and, to
1e-10 on random inputs, by the test suite.
"""

from __future__ import annotations

import numpy as np

from ._types import ADD_SIG, INIT_SIG, PRED_SIG, REMOVE_SIG, addresses, call_pred, make_context

__all__ = ["PredictiveForm", "check_form", "FormMismatch"]


class FormMismatch(ValueError):
    """A predictive form disagrees with the family's pytensor graph."""


class PredictiveForm:
    """A family's log predictive ``lm(S + x_i) - lm(S)`` as compiled (numba) functions.

    Parameters
    ----------
    name : str
        Short name shown in messages and benchmarks.
    params : ndarray (p,)
        Constants of the family folded into one vector (layout private to the form).
    aux : ndarray (n_items, a)
        Per-item terms computed once.
    cache_width : int
        Floats cached per cluster.
    pred, remove, add, init : numba dispatchers
        Compiled with the signatures of :mod:`pymc_partition.predictive._types`
        (``PRED_SIG``, ``REMOVE_SIG``, ``ADD_SIG``, ``INIT_SIG``).
    reparam : callable, optional
        ``reparam(family) -> params``: the ``params`` of the family at other hyperparameters on
        the same item statistics (same shape; ``aux`` unchanged). Lets a sampler take new
        hyperparameters without rebuilding what depends on the data alone.
    singles : numba dispatcher, optional
        ``singles(ctx, c, out)``: every item's log marginal alone into ``out`` (float64, one per
        item), in one compiled pass, using slot ``c`` as scratch (its statistics and cache are
        overwritten). A sampler taking new hyperparameters needs them at each refresh.
    """

    def __init__(self, name, params, aux, cache_width, pred, remove, add, init, reparam=None, singles=None):
        self.name = str(name)
        self.params = np.ascontiguousarray(params, dtype=np.float64)
        self.aux = np.ascontiguousarray(aux, dtype=np.float64)
        if self.aux.ndim != 2:
            raise ValueError("`aux` must be a 2-d array (one row per item).")
        self.cache_width = max(int(cache_width), 1)
        self.pred, self.remove, self.add, self.init = pred, remove, add, init
        self.reparam = reparam
        self.singles = singles
        self._addresses = None

    @property
    def addresses(self):
        """int64 ``(8,)``: ``[pred, remove, add, init]`` as (wrapper, jit) address pairs.

        Process-local; computed on first use (after unpickling too).
        """
        if self._addresses is None:
            self._addresses = np.concatenate([
                addresses(self.pred, PRED_SIG),
                addresses(self.remove, REMOVE_SIG),
                addresses(self.add, ADD_SIG),
                addresses(self.init, INIT_SIG),
            ])  # fmt: skip
        return self._addresses

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_addresses"] = None
        return state

    def __repr__(self):
        return f"PredictiveForm({self.name!r}, cache_width={self.cache_width})"


def check_form(form, lm, X, n_trials=12, rng=None, rtol=1e-8):
    """Check a predictive form against the compiled graph on clusters drawn from ``X``.

    For random clusters ``S`` (sums of item rows, sizes from 1 to half the items) and items
    ``x_i`` outside them, checks ``init`` against ``lm(S)``, ``pred`` and ``remove`` against
    ``lm(S + x_i) - lm(S)`` and ``add`` through the predictive of a further item. ``lm(S)`` is the
    family's graph, evaluated without compiling it
    (:func:`~pymc_partition.engine.compile.reference_log_marginal`) or compiled
    (:func:`~pymc_partition.engine.compile.compile_log_marginal`, which a graph form needs).

    Raises
    ------
    FormMismatch
        With the largest discrepancy, if any value differs by more than
        ``rtol * (1 + |lm(S)| + |lm(S + x_i)|)`` (the rounding of the graph's difference).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, k = X.shape
    if n < 3:
        return 0.0
    rng = np.random.default_rng(0) if rng is None else rng
    stats = np.zeros((4, k))  # rows: S, then S + x_i (+ x_j); the last row is scratch
    cache = np.zeros((4, form.cache_width))
    # a graph form calls the compiled graph; a specialised one never does (any callable ``lm``)
    lm_addr = getattr(lm, "addresses", None)
    ctx = make_context(form.params, stats, cache, form.aux,
                       np.zeros(2, np.int64) if lm_addr is None else lm_addr)  # fmt: skip
    form.addresses  # compiles the form's functions with their declared signatures
    slots, out = np.zeros(2, np.int64), np.zeros(2)
    call = call_pred(form.pred, ctx, slots, out)

    def pred(slot, item):
        slots[:] = slot
        call(item)
        return out[0] if out[0] == out[1] else np.nan  # the same slot twice: the same value

    trials = []
    for t in range(n_trials):
        size = 1 + int(rng.integers(0, max(1, n // 2)))
        size = min(size if t % 3 else 1 + t % 4, n - 2)
        members = rng.choice(n, size=size + 2, replace=False)
        i, j, members = members[0], members[1], members[2:]
        S = X[members].sum(axis=0)
        trials.append((size, i, j, S))
    rows = np.array([r for _, i, j, S in trials for r in (S, S + X[i], S + X[i] + X[j])])
    # a graph run by the Python linker takes every row in one call (one numpy op per node, not 36)
    lms = np.asarray(lm(rows)) if getattr(lm, "batched", False) else np.array([lm(r) for r in rows])
    worst = 0.0
    where = None
    for t, (size, i, j, S) in enumerate(trials):
        lm_s, lm_si, lm_sij = (float(v) for v in lms[3 * t : 3 * t + 3])
        want_i = lm_si - lm_s
        want_j = lm_sij - lm_si
        scale = 1.0 + abs(lm_s) + abs(lm_si) + abs(lm_sij)
        stats[0] = S
        err = abs(form.init(ctx, 0) - lm_s) / scale
        if not err <= worst:
            worst, where = err, ("init (the log marginal)", size, form.init(ctx, 0), lm_s)
        got = {"pred": pred(0, i)}
        stats[1] = S + X[i] + X[j]
        form.init(ctx, 1)
        stats[1] -= X[j]
        form.remove(ctx, 1, j)  # back to S + x_i
        stats[1] -= X[i]
        got["remove"] = form.remove(ctx, 1, i)  # back to S
        stats[1] += X[i]
        form.add(ctx, 1, i, want_i)  # S + x_i again
        got_j = pred(1, j)
        for name, value in got.items():
            err = abs(value - want_i) / scale
            if not err <= worst:  # catches NaN too
                worst, where = err, (name, size, value, want_i)
        err = abs(got_j - want_j) / scale
        if not err <= worst:
            worst, where = err, ("add then pred", size, got_j, want_j)
    if not worst <= rtol:
        name, size, value, want = where
        raise FormMismatch(
            f"The predictive form {form.name!r} disagrees with the family's pytensor graph: "
            f"{name} gave {value!r} where lm(S + x) - lm(S) = {want!r} (cluster of {size} items; "
            f"relative error {worst:.2e} > {rtol:.0e})."
        )
    return worst
