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
"""

from __future__ import annotations

import numpy as np

__all__ = ["compute_log_likelihood", "item_log_predictive"]

_ROWS_PER_CHUNK = 1 << 21  # (state, item) rows per batch of log marginals


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
    k = item_stats.shape[1]
    out = np.empty((S, N))
    per = max(1, _ROWS_PER_CHUNK // max(N, 1))
    for start in range(0, S, per):
        lab = labels[start : start + per]
        s = lab.shape[0]
        flat = (np.arange(s)[:, None] * N + lab).ravel()
        sizes = np.bincount(flat, minlength=s * N)
        mine = np.tile(item_stats, (s, 1))
        cluster = np.empty((s * N, k))
        for j in range(k):  # column-wise bincount: fast, no (s, N, N) array
            cluster[:, j] = np.bincount(flat, weights=mine[:, j], minlength=s * N)
        own = cluster[flat]
        lm_own = log_marginal(own)
        shared = sizes[flat] > 1
        lm_rest = np.zeros(s * N)
        if shared.any():
            lm_rest[shared] = log_marginal(own[shared] - mine[shared])
        out[start : start + s] = (lm_own - lm_rest).reshape(s, N)
    return out


def compute_log_likelihood(idata, *, var_names=None, extend_inferencedata=True, model=None):
    """Pointwise (per item) log-likelihood of every ``MarginalLikelihood`` term, for ``az.loo``.

    Parameters
    ----------
    idata : InferenceData or xarray.DataTree
        With the partition's draws in ``posterior`` (what ``pm.sample`` returned).
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
        density given the partition and the rest of its cluster (see the module docstring for
        why PSIS-LOO then estimates ``log p(y_i | y_{-i})``, item ``i``'s data left out).

    Raises
    ------
    ValueError
        If the posterior lacks a partition of the model, or a named term is not a
        ``MarginalLikelihood``.
    """
    import pymc as pm
    import xarray as xr

    from arviz_regen._containers import add_group, get_group, group_names, is_datatree, is_inference_data

    from .model_spec import find_partition_vars, partition_spec
    from .state import canonicalize, keys_to_labels, state_keys

    model = pm.modelcontext(model)
    if not (is_inference_data(idata) or is_datatree(idata)):
        raise TypeError(
            f"`idata` must be what pm.sample returned (InferenceData or DataTree), got "
            f"{type(idata).__name__}."
        )
    if "posterior" not in group_names(idata):
        raise ValueError("`idata` has no posterior group: sample the model first.")
    posterior = get_group(idata, "posterior")
    results = {}
    for rv in find_partition_vars(model):
        if rv.name not in posterior:
            continue
        spec = partition_spec(model, rv)
        terms = [t for t in spec.terms if var_names is None or t.name in var_names]
        if not terms:
            continue
        da = posterior[rv.name]
        item_dim = [d for d in da.dims if d not in ("chain", "draw")][0]
        if da.sizes[item_dim] != spec.n_items:
            raise ValueError(
                f"The posterior's {rv.name!r} has {da.sizes[item_dim]} items, the model's "
                f"{spec.n_items}: these draws are not from this model."
            )
        labels = canonicalize(da.transpose("chain", "draw", item_dim).values.astype(np.int64))
        keys = state_keys(labels.reshape(-1, spec.n_items), assume_canonical=True)
        ukeys, inverse = np.unique(keys, return_inverse=True)
        states = keys_to_labels(ukeys, spec.n_items)
        for term in terms:
            per_state = item_log_predictive(states, term.item_stats, term.family.log_marginal_numpy)
            values = per_state[inverse].reshape(labels.shape)
            results[term.name] = xr.DataArray(
                values, dims=("chain", "draw", item_dim),
                coords={d: da.coords[d] for d in ("chain", "draw", item_dim) if d in da.coords},
            )  # fmt: skip
    if var_names is not None:
        missing = sorted(set(var_names) - set(results))
        if missing:
            raise ValueError(
                f"{missing} are not pmp.MarginalLikelihood terms of a partition in the posterior."
            )
    if not results:
        raise ValueError("The posterior holds no partition with a pmp.MarginalLikelihood term.")
    ds = xr.Dataset(results)
    if not extend_inferencedata:
        return ds
    if "log_likelihood" in group_names(idata):
        ds = get_group(idata, "log_likelihood").assign(results)
    return add_group(idata, "log_likelihood", ds, replace=True)
