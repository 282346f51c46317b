"""Input conversion and validation: from anything ArviZ accepts to per-draw state indices.

Every diagnostic of this package is a function of the visited *states*, not of the raw labels.
So the only pass over the (possibly dask-backed, possibly large) label array turns each label
vector into a compact state key chunk by chunk; everything downstream works on small numpy
arrays: the pooled unique states, the state index of every draw, and the log posterior.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ._state import check_labels, is_canonical, keys_to_labels, state_keys

__all__ = ["PartitionDraws", "load_partition", "LOGP_RTOL"]

#: relative tolerance for two draws of the same state to disagree on ``partition_logp``
LOGP_RTOL = 1e-6


@dataclass
class PartitionDraws:
    """The draws of one partition variable reduced to state indices.

    Attributes
    ----------
    name : str
        Posterior variable holding the labels.
    item_dim : str
        Name of its item dimension.
    chain, draw : numpy.ndarray
        Coordinate values of the ``chain`` and ``draw`` dimensions.
    n_items : int
    keys : numpy.ndarray, shape (n_states,)
        Sorted unique state keys (pooled over chains).
    index : numpy.ndarray of int64, shape (n_chain, n_draw)
        Index into ``keys`` of the state of every draw.
    logp : numpy.ndarray or None, shape (n_states,)
        ``partition_logp`` of each unique state (taken from the draws), None if not available.
    logp_name : str
    """

    name: str
    item_dim: str
    chain: np.ndarray
    draw: np.ndarray
    n_items: int
    keys: np.ndarray
    index: np.ndarray
    logp: np.ndarray | None
    logp_name: str
    item_coord: np.ndarray | None = None
    _labels: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_chain(self):
        return self.index.shape[0]

    @property
    def n_draw(self):
        return self.index.shape[1]

    @property
    def n_states(self):
        return self.keys.shape[0]

    @property
    def labels(self):
        """Canonical label vectors of the unique states, shape (n_states, n_items)."""
        if self._labels is None:
            self._labels = keys_to_labels(self.keys, self.n_items)
        return self._labels

    def counts(self):
        """Visit counts of each state per chain, shape (n_chain, n_states)."""
        out = np.zeros((self.n_chain, self.n_states), dtype=np.int64)
        for c in range(self.n_chain):
            out[c] = np.bincount(self.index[c], minlength=self.n_states)
        return out

    def require_logp(self, what):
        if self.logp is None:
            raise ValueError(
                f"{what} needs the log unnormalized posterior of each state, but "
                f"`sample_stats['{self.logp_name}']` was not found. Record it while sampling "
                "(the pymc_partition step methods do), or pass `logp_var=` naming the "
                "sample_stats variable that holds it."
            )
        return self.logp

    def state_index_of(self, labels, argname="labels"):
        """Index of a given label vector among the visited states (ValueError if not visited)."""
        lab = np.asarray(labels)
        if lab.shape != (self.n_items,):
            raise ValueError(
                f"`{argname}` must be one label vector of length {self.n_items}, got shape {lab.shape}."
            )
        key = state_keys(lab[None, :])
        pos = np.searchsorted(self.keys, key[0])
        if pos >= self.n_states or self.keys[pos] != key[0]:
            raise ValueError(f"`{argname}` is not a state visited by any chain.")
        return int(pos)


def to_inference_data(data, argname="data"):
    """InferenceData from anything :func:`arviz.convert_to_inference_data` accepts."""
    import arviz as az

    if isinstance(data, az.InferenceData):
        return data
    try:
        return az.convert_to_inference_data(data)
    except Exception as err:  # ArviZ raises a plain ValueError/TypeError with its own wording
        raise TypeError(
            f"`{argname}` must be an InferenceData or anything arviz.convert_to_inference_data "
            f"accepts; got {type(data).__name__} ({err})."
        ) from err


def _first_draws_canonical(da, item_dim):
    first = da.isel(draw=0).transpose("chain", item_dim).values
    return bool(np.all(is_canonical(first)))


def select_partition_var(posterior, var_names):
    """Name of the one posterior variable holding partition labels."""
    if isinstance(var_names, str):
        var_names = [var_names]
    if var_names is not None:
        var_names = list(var_names)
        if len(var_names) != 1:
            raise ValueError(
                f"`var_names` must name exactly one partition variable, got {var_names}. "
                "Call the function once per partition."
            )
        name = var_names[0]
        if name not in posterior.data_vars:
            raise ValueError(
                f"`var_names`: {name!r} is not in the posterior; available: {list(posterior.data_vars)}."
            )
        return name
    candidates = []
    for name, da in posterior.data_vars.items():
        if da.ndim != 3 or da.dims[:2] != ("chain", "draw"):
            continue
        if not (np.issubdtype(da.dtype, np.integer)):
            continue
        if _first_draws_canonical(da, da.dims[2]):
            candidates.append(name)
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise ValueError(
            "`var_names` is None and no posterior variable looks like a partition (integer "
            "canonical labels with dims (chain, draw, item)); available: "
            f"{list(posterior.data_vars)}. Pass `var_names=`."
        )
    raise ValueError(
        f"`var_names` is None and several posterior variables look like partitions: {candidates}. "
        "Pass `var_names=` to pick one."
    )


def _keys_block(labels):
    """Chunk kernel: (..., n_items) labels -> (state keys, canonical flags)."""
    labels = check_labels(labels, name="posterior labels")  # int64; integral floats accepted
    flat = labels.reshape(-1, labels.shape[-1])
    canon = is_canonical(flat)
    keys = state_keys(flat, assume_canonical=bool(canon.all()))
    return keys.reshape(labels.shape[:-1]), canon.reshape(labels.shape[:-1])


def _keys_dtype(n_items):
    probe = state_keys(np.zeros((1, n_items), dtype=np.int64), assume_canonical=True)
    return probe.dtype


def compute_keys(da, item_dim):
    """State keys (chain, draw) of a label DataArray, chunk-wise when it is dask-backed."""
    n_items = da.sizes[item_dim]
    da = da.transpose("chain", "draw", item_dim)
    if da.chunks is not None:
        # keys need whole label vectors: one chunk along the item dimension, any chunks elsewhere
        da = da.chunk({item_dim: -1})
        keys, canon = xr.apply_ufunc(
            _keys_block,
            da,
            input_core_dims=[[item_dim]],
            output_core_dims=[[], []],
            dask="parallelized",
            output_dtypes=[_keys_dtype(n_items), bool],
        )
        import dask

        keys, canon = dask.compute(keys.data, canon.data)
    else:
        keys, canon = _keys_block(np.asarray(da.values))
    return np.asarray(keys), np.asarray(canon)


def _check_labels_dtype(da, name):
    if np.issubdtype(da.dtype, np.integer):
        return da
    if np.issubdtype(da.dtype, np.floating):
        # netCDF round trips may give floats; accept only exact integers
        return da
    raise TypeError(f"posterior variable {name!r} must hold integer labels, got dtype {da.dtype}.")


def load_partition(data, var_names=None, logp_var="partition_logp", argname="data"):
    """Reduce the draws of a partition variable to pooled unique states.

    Parameters
    ----------
    data : InferenceData or convertible
    var_names : str or list of one str, optional
        The partition variable; found automatically when exactly one posterior variable holds
        canonical integer labels with dims ``(chain, draw, item)``.
    logp_var : str
        ``sample_stats`` variable holding the log unnormalized posterior of the state.

    Returns
    -------
    PartitionDraws

    Warns
    -----
    UserWarning
        When labels are not canonical (they are canonicalized: only the partition matters) and
        when two draws of the same state disagree on ``logp_var`` beyond a relative 1e-6 (the
        value of the first draw is used).
    """
    if isinstance(data, PartitionDraws):  # already reduced (internal reuse, e.g. the summary)
        return data
    idata = to_inference_data(data, argname)
    if "posterior" not in idata.groups():
        raise ValueError(f"`{argname}` has no posterior group.")
    posterior = idata.posterior
    name = select_partition_var(posterior, var_names)
    da = posterior[name]
    if da.ndim != 3 or "chain" not in da.dims or "draw" not in da.dims:
        raise ValueError(
            f"posterior variable {name!r} must have dims (chain, draw, <item dim>), got {da.dims}."
        )
    item_dim = [d for d in da.dims if d not in ("chain", "draw")][0]
    # integer labels, or floats holding integers (netCDF round trips): checked chunk-wise
    da = _check_labels_dtype(da, name)
    keys, canon = compute_keys(da, item_dim)
    if not canon.all():
        bad = np.argwhere(~canon)
        c, d = bad[0]
        warnings.warn(
            f"{(~canon).sum()} draws of {name!r} are not canonical label vectors (first at chain "
            f"index {c}, draw index {d}); they were canonicalized, i.e. read as partitions.",
            UserWarning,
            stacklevel=3,
        )
    ukeys, first, inverse = np.unique(keys.ravel(), return_index=True, return_inverse=True)
    index = inverse.reshape(keys.shape).astype(np.int64)

    logp = None
    if "sample_stats" in idata.groups() and logp_var in idata.sample_stats.data_vars:
        lp_da = idata.sample_stats[logp_var]
        if set(lp_da.dims) != {"chain", "draw"}:
            raise ValueError(
                f"sample_stats[{logp_var!r}] must have dims (chain, draw), got {lp_da.dims}."
            )
        lp = np.asarray(lp_da.transpose("chain", "draw").values, dtype=float)
        if lp.shape != keys.shape:
            raise ValueError(
                f"sample_stats[{logp_var!r}] has shape {lp.shape} but the posterior of {name!r} "
                f"has {keys.shape} (chain, draw)."
            )
        flat = lp.ravel()
        if not np.all(np.isfinite(flat)):
            nbad = int((~np.isfinite(flat)).sum())
            raise ValueError(
                f"sample_stats[{logp_var!r}] has {nbad} non-finite values; a visited state must "
                "have a finite log posterior."
            )
        logp = flat[first]
        dev = np.abs(flat - logp[inverse])
        tol = LOGP_RTOL * np.maximum(1.0, np.abs(logp[inverse]))
        if np.any(dev > tol):
            warnings.warn(
                f"sample_stats[{logp_var!r}] differs between draws of the same state (max abs "
                f"difference {dev.max():.3g}); it should be a function of the state. The value "
                "of each state's first draw is used.",
                UserWarning,
                stacklevel=3,
            )
    chain = np.asarray(posterior["chain"].values) if "chain" in posterior.coords else np.arange(keys.shape[0])
    draw = np.asarray(posterior["draw"].values) if "draw" in posterior.coords else np.arange(keys.shape[1])
    return PartitionDraws(
        name=name,
        item_dim=item_dim,
        chain=chain,
        draw=draw,
        n_items=int(da.sizes[item_dim]),
        keys=ukeys,
        index=index,
        logp=logp,
        logp_name=logp_var,
        item_coord=(
            np.asarray(posterior[item_dim].values)
            if item_dim in posterior.coords
            else np.arange(int(da.sizes[item_dim]))
        ),
    )


def rank_states(pdraws, mask=None):
    """State indices ordered by decreasing ``logp`` (ties: by key, so the order is deterministic).

    ``mask`` restricts to a subset of states (e.g. those visited by one chain).
    """
    logp = pdraws.require_logp("Ranking states")
    cand = np.arange(pdraws.n_states) if mask is None else np.flatnonzero(mask)
    order = np.lexsort((np.arange(cand.size), -logp[cand]))  # keys are sorted: index order = key order
    return cand[order]


def regeneration_state(pdraws, regeneration=None, argname="regeneration"):
    """Index of the regeneration state.

    ``None``: the most probable visited state by ``logp`` (pooled), or the most visited state
    when ``logp`` is missing (with a warning); ``"mode"``: the most visited state pooled over
    chains; a label vector: that state (it must have been visited).
    """
    if regeneration is None:
        if pdraws.logp is not None:
            return int(rank_states(pdraws)[0])
        warnings.warn(
            f"sample_stats[{pdraws.logp_name!r}] not found: regenerating at the most visited state "
            "instead of the most probable one.",
            UserWarning,
            stacklevel=3,
        )
        regeneration = "mode"
    if isinstance(regeneration, str):
        if regeneration == "mode":
            return int(np.argmax(pdraws.counts().sum(axis=0)))
        if regeneration == "logp":
            return int(rank_states(pdraws)[0])
        raise ValueError(f"`{argname}` must be None, 'logp', 'mode' or a label vector, got {regeneration!r}.")
    return pdraws.state_index_of(regeneration, argname)
