"""Pointwise log-likelihood of a clustering model: one entry per item, for ``az.loo``.

The marginal likelihood of a partition is one number per draw, so PyMC's
``pm.compute_log_likelihood`` gives ``az.loo`` nothing to leave out. Here item ``i``'s entry is
its log predictive density given the partition and the rest of its cluster,

    log p(y_i | z, y_{c(i) minus i}) = log m(S_c) - log m(S_c - s_i)

(``S_c`` the summed statistics of the cluster holding ``i``, ``s_i`` its own; for a singleton
``log m(s_i)``). With these entries the importance-sampling identity of leave-one-out holds
exactly, ``1 / p(y_i | y_{-i}) = E[1 / p(y_i | z, y_{c(i) minus i}) | y]``, because
``p(z | y_{-i})`` is proportional to ``p(z | y) / p(y_i | z, y_{-i})``: PSIS-LOO then estimates the
predictive density of each item's data (all its rows) left out.

With random hyperparameters ``theta`` the entry of a draw is the same density at that draw's
``theta`` (``m`` depends on the family's hyperparameters, the statistics may too), and the identity
holds with ``(z, theta)`` in place of ``z``: ``p(z, theta | y_{-i})`` is proportional to
``p(z, theta | y) / p(y_i | z, theta, y_{c(i) minus i})``. Parameters of the partition's prior
(a Dirichlet process's ``alpha``) do not enter the entries at all.

Memory is bounded by a chunk of draws (:data:`CHUNK_BYTES` per intermediate array), whatever the
number of draws: only the result holds every draw and item.
"""

from __future__ import annotations

import numpy as np

__all__ = ["compute_log_likelihood", "item_log_predictive", "CHUNK_BYTES"]

#: bytes of one (rows, statistics) intermediate array: the clusters' summed statistics, the
#: statistics of each cluster without one of its items, and the log marginal's own temporaries
#: of about that size (a few per row for a matrix-valued family)
CHUNK_BYTES = 1 << 22


def _rows_per_chunk(n_stats):
    return max(1, CHUNK_BYTES // (8 * max(int(n_stats), 1)))


def _block(labels, item_stats, log_marginal):
    """``(s, N)`` log predictives of ``s`` label vectors (labels in ``0..N-1``).

    One call of ``log_marginal(rows, row_state)`` for the occupied clusters and each shared cluster without one of its
    items (``row_state``: the label vector each row belongs to). ``item_stats``: ``(N, k)``, or ``(s, N, k)`` when they
    differ between the label vectors.
    """
    s, n = labels.shape
    flat = (np.arange(s)[:, None] * n + labels).ravel()  # cluster of each (state, item)
    order = np.argsort(flat, kind="stable")
    new = np.r_[True, flat[order][1:] != flat[order][:-1]]
    first = np.flatnonzero(new)
    cluster_of = np.empty(flat.size, dtype=np.int64)
    cluster_of[order] = np.cumsum(new) - 1
    sizes = np.diff(np.r_[first, flat.size])
    # summed statistics of each occupied cluster: (s N, k) rows at most, no (s, N, N) array
    mine = item_stats.reshape(-1, item_stats.shape[-1]) if item_stats.ndim == 3 else None
    own = mine[order] if mine is not None else item_stats[order % n]
    cluster = np.add.reduceat(own, first, axis=0)
    del own
    shared = np.flatnonzero(sizes[cluster_of] > 1)
    rest = cluster[cluster_of[shared]] - (mine[shared] if mine is not None else item_stats[shared % n])
    rows = np.concatenate([cluster, rest])
    row_state = np.concatenate([flat[order][first] // n, shared // n])
    lm = np.asarray(log_marginal(rows, row_state), dtype=float)
    out = lm[: first.size][cluster_of]
    out[shared] -= lm[first.size :]
    return out.reshape(s, n)


def item_log_predictive(labels, item_stats, log_marginal):
    """``(S, N)`` log predictive of each item given the rest of its cluster, per state.

    Parameters
    ----------
    labels : ndarray (S, N) of int
        Label vectors (any labels in ``0..N-1``).
    item_stats : ndarray (N, k)
        Per-item additive statistics of one likelihood term.
    log_marginal : callable
        ``(rows, k) -> (rows,)`` cluster log marginal (``family.log_marginal_numpy``).
    """
    labels = np.asarray(labels, dtype=np.int64)
    item_stats = np.asarray(item_stats, dtype=float)
    S, N = labels.shape
    out = np.empty((S, N))
    per = max(1, _rows_per_chunk(item_stats.shape[1]) // max(N, 1))
    for start in range(0, S, per):
        out[start : start + per] = _block(labels[start : start + per], item_stats, lambda rows, _: log_marginal(rows))
    return out


def _chunks(n, size):
    for start in range(0, n, size):
        yield start, min(n, start + size)


def _state_keys(flat_labels, n_items):
    """Keys of the canonical label vectors, computed chunk by chunk (no canonical copy of all)."""
    from .state import canonicalize, state_keys

    per = max(1, _rows_per_chunk(1) // max(n_items, 1))
    parts = [
        state_keys(canonicalize(np.asarray(flat_labels[a:b], dtype=np.int64)), assume_canonical=True)
        for a, b in _chunks(flat_labels.shape[0], per)
    ]
    return np.concatenate(parts)


def _fixed_term(flat_labels, term, out):
    """Fill ``out`` (draws, N) for a term with fixed numbers.

    Evaluated once per visited state, the states in chunks, each chunk's values written to the draws that visited them.
    """
    from .state import keys_to_labels

    n_items = flat_labels.shape[1]
    keys = _state_keys(flat_labels, n_items)
    ukeys, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(ukeys.size + 1))
    per = max(1, _rows_per_chunk(term.item_stats.shape[1]) // n_items)
    for a, b in _chunks(ukeys.size, per):
        values = item_log_predictive(keys_to_labels(ukeys[a:b], n_items), term.item_stats,
                                     term.family.log_marginal_numpy)  # fmt: skip
        draws = order[bounds[a] : bounds[b]]
        out[draws] = values[inverse[draws] - a]


def _random_term(flat_labels, reader, draws_of, out, n_draw):
    """Fill ``out`` (draws, N) for a term whose numbers depend on random variables.

    Each draw at its own values (``draws_of[name]``: (chain * draw, ...) posterior values, ``n_draw`` draws per chain),
    in chunks of draws.
    """
    from .state import canonicalize

    n_items = flat_labels.shape[1]
    n_stats = reader.numbers([draws_of[name][:1] for name in reader.names])[0].shape[-1]
    for a, b in _chunks(flat_labels.shape[0], max(1, _rows_per_chunk(n_stats) // n_items)):
        stats, params = reader.numbers([draws_of[name][a:b] for name in reader.names])
        labels = canonicalize(np.asarray(flat_labels[a:b], dtype=np.int64))

        def log_marginal(rows, row_state, params=params):
            return reader.log_marginal(rows, [p[row_state] for p in params])

        with np.errstate(invalid="ignore"):  # a NaN is reported below, with the draw
            out[a:b] = _block(labels, stats if reader.stats_vary else stats[0], log_marginal)
        bad = ~np.all(np.isfinite(out[a:b]), axis=1)
        if bad.any():
            t = a + int(np.argmax(bad))
            at = {name: np.asarray(draws_of[name][t]).tolist() for name in reader.names}
            raise ValueError(
                f"The pointwise log likelihood of {reader.name!r} is not finite at chain index "
                f"{t // n_draw}, draw index {t % n_draw}, where {at}: a hyperparameter outside "
                "its domain? Check these posterior draws."
            )


def _draws_of(posterior, names, term_name):
    """Posterior values of ``names`` as (chain * draw, ...) arrays, or a ValueError naming them."""
    missing = [n for n in names if n not in posterior]
    if missing:
        raise ValueError(
            f"{term_name!r} depends on the random variable(s) {missing}, whose draws are not in "
            "the posterior: each draw's pointwise log likelihood needs them (sample them, or "
            "keep them in the posterior)."
        )
    out = {}
    for name in names:
        da = posterior[name]
        da = da.transpose("chain", "draw", *[d for d in da.dims if d not in ("chain", "draw")])
        values = np.asarray(da.values, dtype=float)
        out[name] = values.reshape((-1,) + values.shape[2:])
    return out


def sampled_posterior(idata):
    """Return the posterior group of what ``pm.sample`` returned (InferenceData or DataTree).

    Else a TypeError / ValueError saying what was passed instead.
    """
    from arviz_regen.xr.containers import get_group, group_names, is_datatree, is_inference_data

    if not (is_inference_data(idata) or is_datatree(idata)):
        raise TypeError(
            f"`idata` must be what pm.sample returned (InferenceData or DataTree), got {type(idata).__name__}."
        )
    if "posterior" not in group_names(idata):
        raise ValueError("`idata` has no posterior group: sample the model first.")
    return get_group(idata, "posterior")


def compute_log_likelihood(idata, *, var_names=None, extend_inferencedata=True, model=None):
    """Pointwise (per item) log-likelihood of every ``MarginalLikelihood`` term, for ``az.loo``.

    Parameters
    ----------
    idata : InferenceData or xarray.DataTree
        With the partition's draws in ``posterior`` (what ``pm.sample`` returned), and those of
        any random variable the terms' hyperparameters depend on.
    var_names : list of str, optional
        ``MarginalLikelihood`` variables to compute (default: all of them).
    extend_inferencedata : bool
        Add the results to the ``log_likelihood`` group of ``idata`` (created if absent) and
        return ``idata``; else return a Dataset.
    model : pymc.Model, optional
        Defaults to the model on the context stack.

    Returns
    -------
    InferenceData, xarray.DataTree or xarray.Dataset
        One variable per term, dims ``(chain, draw, <item dim>)``: item ``i``'s log predictive
        density given the partition and the rest of its cluster, at the draw's hyperparameters
        (see the module docstring for why PSIS-LOO then estimates ``log p(y_i | y_{-i})``, item
        ``i``'s data left out).

    Raises
    ------
    ValueError
        If the posterior lacks a partition of the model, or a named term is not a
        ``MarginalLikelihood``, or lacks the draws of a random variable a term depends on.

    Notes
    -----
    Random hyperparameters are read from each draw of the posterior: a term with fixed numbers
    is evaluated once per visited partition, one whose family (or statistics) depend on random
    variables once per draw. The partition's prior (e.g. a random Dirichlet-process ``alpha``)
    does not enter. Intermediate arrays are bounded by :data:`CHUNK_BYTES` each, whatever the
    number of draws.
    """
    import pymc as pm
    import xarray as xr

    from arviz_regen.xr.containers import add_group, get_group, group_names

    from .model_spec import (
        RandomHyperparameterError,
        TermDrawReader,
        find_partition_vars,
        likelihood_term,
        likelihood_terms,
    )

    model = pm.modelcontext(model)
    posterior = sampled_posterior(idata)
    results = {}
    for rv in find_partition_vars(model):
        if rv.name not in posterior:
            continue
        terms = [t for t in likelihood_terms(model, rv) if var_names is None or t.name in var_names]
        if not terms:
            continue
        da = posterior[rv.name]
        item_dim = [d for d in da.dims if d not in ("chain", "draw")][0]
        n_items = int(rv.type.shape[-1])  # static: Partition(n_items=...)
        if da.sizes[item_dim] != n_items:
            raise ValueError(
                f"The posterior's {rv.name!r} has {da.sizes[item_dim]} items, the model's "
                f"{n_items}: these draws are not from this model."
            )
        da = da.transpose("chain", "draw", item_dim)
        flat_labels = np.asarray(da.values).reshape(-1, da.sizes[item_dim])
        for obs in terms:
            out = np.empty(flat_labels.shape)
            try:
                term = likelihood_term(model, rv, obs)
            except RandomHyperparameterError:
                reader = TermDrawReader(model, rv, obs)
                _random_term(flat_labels, reader, _draws_of(posterior, reader.names, obs.name), out, da.sizes["draw"])
            else:
                _fixed_term(flat_labels, term, out)
            results[obs.name] = xr.DataArray(
                out.reshape(da.shape), dims=("chain", "draw", item_dim),
                coords={d: da.coords[d] for d in ("chain", "draw", item_dim) if d in da.coords},
            )  # fmt: skip
    if var_names is not None:
        missing = sorted(set(var_names) - set(results))
        if missing:
            raise ValueError(f"{missing} are not pmp.MarginalLikelihood terms of a partition in the posterior.")
    if not results:
        raise ValueError("The posterior holds no partition with a pmp.MarginalLikelihood term.")
    ds = xr.Dataset(results)
    if not extend_inferencedata:
        return ds
    if "log_likelihood" in group_names(idata):
        ds = get_group(idata, "log_likelihood").assign(results)
    return add_group(idata, "log_likelihood", ds, replace=True)
