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

from ..base.state import check_labels, is_canonical, keys_to_labels, state_keys
from .containers import arviz_major, get_group, is_datatree, is_inference_data

__all__ = ["PartitionDraws", "RegenData", "load_partition", "select_items", "to_regen_data", "LOGP_RTOL"]

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
        ``partition_logp`` of each unique state (taken from the draws), None if not available
        or if it is not a function of the state (see ``logp_spread``).
    logp_name : str
    logp_spread : float or None
        Largest difference of ``partition_logp`` between two draws of the same state beyond
        :data:`LOGP_RTOL`, None when it is a function of the state: hyperparameters sampled
        alongside (hierarchical draws). Tools that need a fixed target refuse such draws
        (:meth:`require_logp`); the others take them.
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
    logp_spread: float | None = None
    _labels: np.ndarray | None = field(default=None, repr=False)
    _logp_draws: np.ndarray | None = field(default=None, repr=False)

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

    def labels_of(self, columns):
        """Labels of the unique states at the item positions ``columns``, (n_states, len(columns)).

        Not canonical in general (a subset of items); built from the keys without forming the
        full label array when it has not been built yet.
        """
        columns = np.asarray(columns, dtype=np.int64)
        if self._labels is not None or columns.size == self.n_items:
            lab = self.labels
            return lab if np.array_equal(columns, np.arange(self.n_items)) else lab[:, columns]
        return keys_to_labels(self.keys, self.n_items, columns)

    def counts(self):
        """Visit counts of each state per chain, shape (n_chain, n_states)."""
        out = np.zeros((self.n_chain, self.n_states), dtype=np.int64)
        for c in range(self.n_chain):
            out[c] = np.bincount(self.index[c], minlength=self.n_states)
        return out

    @property
    def logp_draws(self):
        """``partition_logp`` of every draw, shape (n_chain, n_draw), or None if not available.

        Also None when it is not a function of the state: a trace of the joint chain.
        """
        if self.logp is not None:
            return self.logp[self.index]
        return self._logp_draws

    def require_logp(self, what):
        if self.logp_spread is not None:
            raise ValueError(varying_logp_message(what, self.logp_name, self.logp_spread))
        if self.logp is None:
            raise ValueError(
                f"{what} needs the log unnormalized posterior of each state, but "
                f"`sample_stats['{self.logp_name}']` was not found. Record it while sampling "
                "(the pymc_partition step methods do), pass `logp_var=` naming the "
                "sample_stats variable that holds it, or pass the values as `logp=` (chain, draw)."
            )
        return self.logp

    def state_index_of(self, labels, argname="labels"):
        """Index of a given label vector among the visited states (ValueError if not visited)."""
        lab = np.asarray(labels)
        if lab.shape != (self.n_items,):
            raise ValueError(f"`{argname}` must be one label vector of length {self.n_items}, got shape {lab.shape}.")
        key = state_keys(lab[None, :])
        pos = np.searchsorted(self.keys, key[0])
        if pos >= self.n_states or self.keys[pos] != key[0]:
            raise ValueError(f"`{argname}` is not a state visited by any chain.")
        return int(pos)


def varying_logp_message(what, logp_name, spread):
    """Say why ``what`` cannot use draws whose log posterior is not a function of the partition.

    It also says what reports on them instead.
    """
    return (
        f"{what} needs a chain on the partition with a fixed target, but "
        f"sample_stats[{logp_name!r}] differs between draws of the same partition (by up to "
        f"{spread:.3g}): it is the log posterior given other quantities sampled alongside, e.g. "
        "hyperparameters updated in a compound step. Then a visit to a partition does not "
        "restart the chain (no regeneration) and the states cannot be ranked by it. For these "
        "draws regen_summary (arviz-regen-summary) decides by the chain-agreement test with "
        "R-hat and ESS of traces that see the partition (n_clusters, partition_logp, distances "
        "to reference partitions); coclustering, point_estimate, credible_ball, consensus and "
        "the plots of them take the draws as they are (batch-means standard errors). To "
        "diagnose the partition sampler itself, sample again with the hyperparameters fixed "
        "(e.g. at their posterior means)."
    )


# ---------------------------------------------------------------------------------------------
# Input conversion: InferenceData, DataTree, Dataset, DataArray, dict, arrays  ->  RegenData
# ---------------------------------------------------------------------------------------------

#: group names of the ArviZ schema read here
_GROUPS = ("posterior", "sample_stats")

_INPUT_HELP = (
    "Accepted: arviz.InferenceData, xarray.DataTree (groups `posterior`, `sample_stats`), an "
    "xarray.Dataset or DataArray of labels (chain, draw, item), a dict {name: array (chain, draw, "
    "item)}, or a numpy array (chain, draw, item) or (draw, item); with the last four, pass the "
    "log posterior as `logp=` (chain, draw)."
)


@dataclass
class RegenData:
    """The groups this package reads, after conversion: an InferenceData-like view.

    ``posterior`` holds the labels; ``sample_stats`` (or None) the per-draw statistics, among them
    the log posterior. ``groups()`` lists the groups present, as for InferenceData.
    """

    posterior: xr.Dataset
    sample_stats: xr.Dataset | None = None

    def groups(self):
        return [g for g in _GROUPS if getattr(self, g) is not None]


def _legacy_arviz():
    """Return the ArviZ 0.x module (with InferenceData) if it is installed and importable, else None."""
    if arviz_major() != 0:
        return None
    try:
        import arviz as az
    except Exception:  # broken by a foreign plotting backend
        return None
    return az


def _single_name(var_names, default="x"):
    if isinstance(var_names, str):
        return var_names
    if var_names is not None and len(list(var_names)) == 1 and isinstance(list(var_names)[0], str):
        return list(var_names)[0]
    return default


def _label_dataarray(values, name, argname):
    """Labels (chain, draw, item) or, for one chain, (draw, item) as a DataArray."""
    ndim = getattr(values, "ndim", None)
    if ndim is None:
        values = np.asarray(values)
        ndim = values.ndim
    if ndim == 2:
        values = values[None]
    elif ndim != 3:
        raise ValueError(
            f"`{argname}`: labels must have shape (chain, draw, item) or, for one chain, "
            f"(draw, item); got {ndim} dimension(s), shape {tuple(getattr(values, 'shape', ()))}."
        )
    return xr.DataArray(values, dims=("chain", "draw", f"{name}_dim_0"), name=name)


def _dict_to_dataset(mapping, argname, what):
    """Convert a dict {name: array (chain, draw, ...)} to a Dataset (ArviZ's dims: ``<name>_dim_<i>``)."""
    data_vars = {}
    for key, val in mapping.items():
        if not isinstance(key, str):
            raise TypeError(f"`{argname}`: {what} keys must be variable names (str), got {key!r}.")
        if isinstance(val, xr.DataArray):
            data_vars[key] = val
            continue
        if getattr(val, "ndim", None) is None:  # lists; dask and numpy arrays stay as they are
            val = np.asarray(val)
        if val.ndim < 2:
            raise ValueError(
                f"`{argname}`: {what}[{key!r}] must have dims (chain, draw, ...), got shape "
                f"{tuple(val.shape)}. Add the chain axis for a single chain (`x[None]`)."
            )
        dims = ("chain", "draw") + tuple(f"{key}_dim_{i}" for i in range(val.ndim - 2))
        data_vars[key] = xr.Variable(dims, val)
    try:
        return xr.Dataset(data_vars)
    except ValueError as err:  # e.g. conflicting chain/draw sizes between entries
        raise ValueError(f"`{argname}`: the {what} arrays do not fit together: {err}") from err


#: the default ``logp_var``: the name the pymc_partition step methods record
DEFAULT_LOGP_VAR = "partition_logp"


def _logp_candidates(names, logp_var):
    """Return ``logp_var`` and the per-variable ``partition_logp_<var>`` among ``names``.

    The per-variable names are those of the default name: how the step methods name it in a model with several
    partitions.
    """
    prefix = f"{DEFAULT_LOGP_VAR}_"
    extra = [n for n in names if logp_var == DEFAULT_LOGP_VAR and str(n).startswith(prefix)]
    return [n for n in names if n == logp_var] + extra


def resolve_logp_var(stats, logp_var, name):
    """Return the sample_stats variable holding the log posterior of partition ``name``.

    ``logp_var`` if present; when it is the default ``"partition_logp"`` and absent,
    ``"partition_logp_<name>"``: in a model with several Partition variables each step records
    its log posterior under its variable's name (one sample_stats variable per partition).
    """
    if stats is None or logp_var in stats.data_vars or logp_var != DEFAULT_LOGP_VAR:
        return logp_var
    suffixed = f"{DEFAULT_LOGP_VAR}_{name}"
    return suffixed if suffixed in stats.data_vars else logp_var


def _stats_from_dataset(ds, logp_var):
    """Return the log posterior carried in a posterior-like Dataset, as a sample_stats Dataset."""
    names = [
        n for n in _logp_candidates(list(ds.data_vars), logp_var)
        if set(ds[n].dims) <= {"chain", "draw"}
    ]  # fmt: skip
    return ds[names] if names else None


def _to_groups(data, var_names, logp_var, argname):
    """Posterior and sample_stats Datasets of any accepted input (no selection yet)."""
    if isinstance(data, RegenData):
        return data
    if is_inference_data(data):
        groups = data.groups()
        if "posterior" not in groups:
            raise ValueError(f"`{argname}` has no posterior group (groups: {groups}).")
        return RegenData(data.posterior, data.sample_stats if "sample_stats" in groups else None)
    if is_datatree(data):
        children = list(data.children)
        if "posterior" in children:
            stats = get_group(data, "sample_stats") if "sample_stats" in children else None
            return RegenData(get_group(data, "posterior"), stats)
        if data.has_data:  # a tree holding the posterior at its root
            ds = data.to_dataset()
            return RegenData(ds, _stats_from_dataset(ds, logp_var))
        raise ValueError(
            f"`{argname}` is a DataTree without a `posterior` group (groups: {children}); "
            "the labels must be in `posterior`."
        )
    if isinstance(data, xr.Dataset):
        return RegenData(data, _stats_from_dataset(data, logp_var))
    if isinstance(data, xr.DataArray):
        name = data.name if data.name is not None else _single_name(var_names)
        if data.ndim == 2 and "chain" not in data.dims:
            data = data.expand_dims(chain=1)
        return RegenData(data.to_dataset(name=name))
    if isinstance(data, dict):
        if "posterior" in data and all(isinstance(v, dict) for v in data.values()):
            unknown = set(data) - set(_GROUPS)
            if unknown:
                warnings.warn(f"`{argname}`: groups {sorted(unknown)} are not used.", UserWarning, stacklevel=4)
            post = _dict_to_dataset(data["posterior"], argname, "posterior")
            stats = data.get("sample_stats")
            return RegenData(post, None if stats is None else _dict_to_dataset(stats, argname, "sample_stats"))
        ds = _dict_to_dataset(data, argname, "dict")
        return RegenData(ds, _stats_from_dataset(ds, logp_var))
    if isinstance(data, (np.ndarray, list, tuple)) or type(data).__module__.startswith("dask"):
        name = _single_name(var_names)
        return RegenData(_label_dataarray(data, name, argname).to_dataset())
    # anything else (a file path, a sampler's fit object, ...): ArviZ's converters
    az = _legacy_arviz()
    if az is not None:
        try:
            idata = az.convert_to_inference_data(data)
        except Exception as err:  # ArviZ raises a plain ValueError/TypeError with its own wording
            raise TypeError(f"`{argname}`: cannot convert {type(data).__name__} ({err}). {_INPUT_HELP}") from err
        return _to_groups(idata, var_names, logp_var, argname)
    try:
        from arviz_base import convert_to_datatree
    except ImportError:
        convert_to_datatree = None
    if convert_to_datatree is not None:
        try:
            tree = convert_to_datatree(data)
        except Exception as err:
            raise TypeError(f"`{argname}`: cannot convert {type(data).__name__} ({err}). {_INPUT_HELP}") from err
        return _to_groups(tree, var_names, logp_var, argname)
    raise TypeError(f"`{argname}`: unsupported input type {type(data).__name__}. {_INPUT_HELP}")


def _logp_dataarray(logp, posterior, argname="logp"):
    """``logp=`` (chain, draw), (draw,) for one chain, or a DataArray, on the posterior's coords."""
    if isinstance(logp, str):
        raise TypeError(
            f"`{argname}` must be an array of log posterior values; to name a variable, use `logp_var={logp!r}`."
        )
    missing = [d for d in ("chain", "draw") if d not in posterior.dims]
    if missing:
        raise ValueError(f"the posterior has no {missing} dimension(s) (dims: {tuple(posterior.dims)}).")
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    if isinstance(logp, xr.DataArray):
        if logp.dims == ("draw",) and n_chain == 1:
            logp = logp.expand_dims(chain=posterior["chain"].values if "chain" in posterior.coords else 1)
        if set(logp.dims) != {"chain", "draw"}:
            raise ValueError(f"`{argname}` must have dims (chain, draw), got {logp.dims}.")
        logp = logp.transpose("chain", "draw")
        for dim in ("chain", "draw"):
            if logp.sizes[dim] != posterior.sizes[dim]:
                raise ValueError(
                    f"`{argname}` has {logp.sizes[dim]} {dim}s but the posterior has {posterior.sizes[dim]}."
                )
            if (
                dim in logp.coords
                and dim in posterior.coords
                and not np.array_equal(logp[dim].values, posterior[dim].values)
            ):
                raise ValueError(f"`{argname}`: its {dim} coordinates differ from the posterior's.")
        values = logp.data
    else:
        values = logp if getattr(logp, "ndim", None) is not None else np.asarray(logp)
        shape = tuple(values.shape)
        if values.ndim == 1 and n_chain == 1 and shape[0] == n_draw:
            values = values[None]
        elif shape != (n_chain, n_draw):
            raise ValueError(
                f"`{argname}` has shape {shape} but the posterior has (chain, draw) = "
                f"({n_chain}, {n_draw}): pass one log posterior value per draw, shape (chain, draw) "
                "(or (draw,) for one chain)."
            )
    if not (np.issubdtype(values.dtype, np.floating) or np.issubdtype(values.dtype, np.integer)):
        raise TypeError(f"`{argname}` must hold real numbers, got dtype {values.dtype}.")
    coords = {d: posterior[d].values for d in ("chain", "draw") if d in posterior.coords}
    return xr.DataArray(values, dims=("chain", "draw"), coords=coords)


#: dimensions ``coords=`` may select on: the sample, not the items (a subset of items is another
#: state space, on which the recorded log posterior is no longer a function of the state)
_COORD_DIMS = ("chain", "draw")


def _check_coords(coords, dims, what):
    """Validate ``coords=`` against ``dims``; scalars become lists so no dimension is dropped."""
    if coords is None:
        return {}
    if not hasattr(coords, "items"):
        raise TypeError(
            f"`coords` must be a dict like {{'chain': [0, 2]}} or {{'draw': slice(1000, None)}}, "
            f"got {type(coords).__name__}."
        )
    out = {}
    for dim, sel in coords.items():
        if dim not in dims:
            raise ValueError(f"`coords`: {dim!r} is not a dimension of {what} (dims: {tuple(dims)}).")
        if dim not in _COORD_DIMS:
            raise ValueError(
                f"`coords` selects chains and draws only, not {dim!r}: the diagnostics are about "
                "whole partitions. Select items in the result instead, e.g. "
                "`rho.sel(item_i=..., item_j=...)`."
            )
        if not isinstance(sel, slice) and np.ndim(sel) == 0:
            sel = [sel]  # keep the dimension: select one chain, not drop the chain axis
        out[dim] = sel
    return out


def _select(obj, sel, what):
    """``obj.sel`` of the entries of ``sel`` that are dims of ``obj``, with clear errors."""
    sel = {d: s for d, s in sel.items() if d in obj.dims}
    if not sel:
        return obj
    try:
        out = obj.sel(sel)
    except (KeyError, IndexError, ValueError, TypeError) as err:
        raise ValueError(
            f"`coords` {sel} could not be selected from {what}: {err!r}. Coordinates are labels, "
            "as in az.rhat: e.g. {'chain': [0, 2]} or {'draw': slice(1000, None)}."
        ) from err
    empty = [d for d in sel if out.sizes[d] == 0]
    if empty:
        raise ValueError(f"`coords` {sel} selects no {' and no '.join(empty)} from {what}.")
    return out


def to_regen_data(data, argname="data", *, logp=None, coords=None, logp_var="partition_logp", var_names=None):
    """Any accepted input as a :class:`RegenData` view, ``logp=`` merged and ``coords`` applied.

    ``logp`` (if given) becomes ``sample_stats[logp_var]``, replacing any recorded one; ``coords``
    selects on both groups (each on the dimensions it has).
    """
    view = _to_groups(data, var_names, logp_var, argname)
    stats = view.sample_stats
    if logp is not None:
        lp = _logp_dataarray(logp, view.posterior)
        stats = (
            xr.Dataset({logp_var: lp})
            if stats is None
            else stats.drop_vars(logp_var, errors="ignore").assign({logp_var: lp})
        )
    posterior = view.posterior
    if coords is not None:
        sel = _check_coords(coords, posterior.dims, "the posterior")
        posterior = _select(posterior, sel, "the posterior")
        if stats is not None:
            stats = _select(stats, sel, "sample_stats")
    if posterior is view.posterior and stats is view.sample_stats:
        return view
    return RegenData(posterior, stats)


def to_inference_data(data, argname="data", *, logp=None, coords=None, logp_var="partition_logp"):
    """Return the posterior/sample_stats of any accepted input (see :func:`to_regen_data`).

    Returns an InferenceData-like :class:`RegenData` view (``groups()``, ``posterior``,
    ``sample_stats``); it does not need ArviZ for DataTree, Dataset, dict or array inputs.
    """
    return to_regen_data(data, argname, logp=logp, coords=coords, logp_var=logp_var)


def _first_draws_canonical(da, item_dim):
    if 0 in da.shape:  # no draws: named by load_partition's check, not an IndexError here
        return True
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
            raise ValueError(f"`var_names`: {name!r} is not in the posterior; available: {list(posterior.data_vars)}.")
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
    shaped = [n for n, da in posterior.data_vars.items() if da.ndim == 3 and da.dims[:2] == ("chain", "draw")]
    if not candidates and len(shaped) == 1:
        return shaped[0]  # the only (chain, draw, item) variable: its dtype is checked next, clearly
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
    if labels.size and labels.min() < 0:
        # read as a label like any other, a -1 ("unassigned") joins every other -1 in one
        # cluster: such draws then share a state with draws of another log posterior
        raise ValueError(
            f"The posterior labels hold {int((labels < 0).sum())} negative value(s) (e.g. "
            f"{int(labels.min())}): partition labels are cluster numbers 0, 1, 2, ..., as "
            "pm.sample records them. A negative label usually marks an unassigned item, which a "
            "partition does not have: give such items clusters of their own (or drop those "
            "draws) first."
        )
    flat = labels.reshape(-1, labels.shape[-1])
    canon = is_canonical(flat)
    keys = state_keys(flat, assume_canonical=bool(canon.all()))
    return keys.reshape(labels.shape[:-1]), canon.reshape(labels.shape[:-1])


def _keys_dtype(n_items):
    probe = state_keys(np.zeros((1, n_items), dtype=np.int64), assume_canonical=True)
    return probe.dtype


#: labels turned into state keys per block (numpy input): bounds the temporaries (int64 copies,
#: canonical checks) to a few hundred kB, below the allocator's threshold for fresh memory from
#: the system, so blocks reuse the same memory instead of faulting in new pages each
_KEY_BLOCK = 1 << 16

#: keys compared per step when finding the distinct states (bounds the gathered copies)
_UNIQUE_STEP = 1 << 12


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
        values = np.asarray(da.values)
        lead = values.shape[:-1]
        flat = values.reshape(-1, n_items)
        # blocks of draws bound the temporaries to _KEY_BLOCK labels; the keys go straight into place
        step = max(1, _KEY_BLOCK // max(1, n_items))
        keys = np.empty(flat.shape[0], dtype=_keys_dtype(n_items))
        canon = np.empty(flat.shape[0], dtype=bool)
        for s in range(0, flat.shape[0], step):
            keys[s : s + step], canon[s : s + step] = _keys_block(flat[s : s + step])
        keys, canon = keys.reshape(lead), canon.reshape(lead)
    return np.asarray(keys), np.asarray(canon)


def unique_keys(keys):
    """Return ``numpy.unique(keys, return_index=True, return_inverse=True)`` for 1-d keys, with fewer copies.

    The same sorted distinct keys, first occurrences and inverse, from one stable argsort: the keys
    are compared in sorted order a block at a time rather than copied whole (``numpy.unique``
    makes three copies of them, each hundreds of MB for long chains of many items).
    """
    keys = np.asarray(keys).reshape(-1)
    perm = np.argsort(keys, kind="stable")  # as numpy.unique's with return_index (mergesort)
    new = np.empty(perm.size, dtype=bool)
    new[:1] = True
    for s in range(1, perm.size, _UNIQUE_STEP):
        e = min(perm.size, s + _UNIQUE_STEP)
        new[s:e] = keys[perm[s:e]] != keys[perm[s - 1 : e - 1]]
    first = perm[new]
    inverse = np.empty(perm.size, dtype=np.intp)
    inverse[perm] = np.cumsum(new) - 1
    return keys[first], first, inverse


def _check_labels_dtype(da, name):
    if np.issubdtype(da.dtype, np.integer):
        return da
    if np.issubdtype(da.dtype, np.floating):
        # netCDF round trips may give floats; accept only exact integers
        return da
    raise TypeError(f"posterior variable {name!r} must hold integer labels, got dtype {da.dtype}.")


def _align_on(stat, labels, what, against):
    """Return ``stat`` (chain, draw) in the order of ``labels``' coordinates.

    Paired by coordinate, not position (reversed draws, swapped chains); other coordinates are refused.
    """
    for dim in ("chain", "draw"):
        if dim not in stat.coords or dim not in labels.coords:
            continue
        mine, theirs = stat.indexes[dim], labels.indexes[dim]
        if mine.equals(theirs):
            continue
        if len(mine) != len(theirs) or not mine.is_unique or set(mine) != set(theirs):
            raise ValueError(
                f"{what} and {against} have different {dim!r} coordinates "
                f"({np.asarray(mine)[:5].tolist()}... against {np.asarray(theirs)[:5].tolist()}...): "
                "they are not the same draws."
            )
        stat = stat.sel({dim: theirs})
    return stat


def load_partition(data, var_names=None, logp_var="partition_logp", argname="data", *, logp=None, coords=None):
    """Reduce the draws of a partition variable to pooled unique states.

    Parameters
    ----------
    data : InferenceData, DataTree, Dataset, DataArray, dict, numpy array or convertible
        InferenceData (ArviZ 0.x) or ``xarray.DataTree`` (arviz-base): labels in ``posterior``,
        the log posterior in ``sample_stats[logp_var]``. A posterior-like Dataset (the log
        posterior, if any, as its variable ``logp_var``), a DataArray, a dict
        ``{name: array (chain, draw, item)}`` or an array ``(chain, draw, item)`` /
        ``(draw, item)`` (one chain): the log posterior comes from ``logp=``. Anything else goes
        through ArviZ's converters (``az.convert_to_inference_data``, or
        ``arviz_base.convert_to_datatree`` where ArviZ 0.x is not installed).
    var_names : str or list of one str, optional
        The partition variable; found automatically when exactly one posterior variable holds
        canonical integer labels with dims ``(chain, draw, item)``. For an unnamed array it names
        the variable (default ``"x"``).
    logp_var : str
        ``sample_stats`` variable holding the log unnormalized posterior of the state. When it
        is the default ``"partition_logp"`` and absent, ``"partition_logp_<var_name>"`` is used
        (the name the step methods give it in a model with several Partition variables).
    logp : array_like (chain, draw) or (draw,), or DataArray, optional
        The log unnormalized posterior of every draw; replaces ``sample_stats[logp_var]``.
    coords : dict, optional
        Selection applied before any reduction, by coordinate labels as in ``az.rhat``:
        ``{"chain": [0, 2]}``, ``{"draw": slice(1000, None)}``.

    Returns
    -------
    PartitionDraws

    Raises
    ------
    ValueError, TypeError
        Unsupported input, missing posterior group, labels that are not (chain, draw, item) or not
        integers, ``logp`` of the wrong shape, ``coords`` naming an unknown dimension or label.

    Warns
    -----
    UserWarning
        When labels are not canonical (they are canonicalized: only the partition matters).

    Notes
    -----
    When two draws of the same state disagree on ``logp_var`` beyond a relative 1e-6, the log
    posterior depends on something else sampled alongside (random hyperparameters): the chain
    on the partition alone is not the Markov chain with a fixed target that regeneration needs.
    The draws are returned all the same, with ``logp=None`` and ``logp_spread`` set; the tools
    that need the target refuse them (:meth:`PartitionDraws.require_logp`), the others take them.
    """
    if isinstance(data, PartitionDraws):  # already reduced (internal reuse, e.g. the summary)
        if logp is not None or coords is not None:
            raise ValueError("`logp` and `coords` cannot be applied to already reduced draws.")
        return data
    view = to_regen_data(data, argname, logp=logp, logp_var=logp_var, var_names=var_names)
    posterior = view.posterior
    name = select_partition_var(posterior, var_names)
    da = posterior[name]
    if da.ndim != 3 or "chain" not in da.dims or "draw" not in da.dims:
        raise ValueError(f"posterior variable {name!r} must have dims (chain, draw, <item dim>), got {da.dims}.")
    item_dim = [d for d in da.dims if d not in ("chain", "draw")][0]
    sel = _check_coords(coords, da.dims, f"the posterior variable {name!r}")
    da = _select(da, sel, f"posterior[{name!r}]")
    for dim in ("chain", "draw"):
        if dim in da.coords and da.sizes[dim] > 1 and not da.indexes[dim].is_unique:
            raise ValueError(
                f"posterior[{name!r}] has repeated {dim!r} coordinates "
                f"({np.asarray(da[dim].values)[:5].tolist()}...): a damaged or partly written store "
                "(missing chunks read as fill values) or draws concatenated twice. Save the draws again."
            )
    empty = [d for d in ("chain", "draw", item_dim) if da.sizes[d] == 0]
    if empty:
        raise ValueError(
            f"posterior variable {name!r} has no {' and no '.join(empty)} (sizes "
            f"{dict(da.sizes)}{', after the selection `coords`' if sel else ''}): there are no "
            "draws to diagnose."
        )
    # integer labels, or floats holding integers (netCDF round trips): checked chunk-wise
    da = _check_labels_dtype(da, name)
    try:
        keys, canon = compute_keys(da, item_dim)
    except TypeError as err:  # non-integral floats, found chunk by chunk
        raise TypeError(
            f"posterior variable {name!r} must hold integer labels (floats are accepted only when "
            f"they are whole numbers): {err}"
        ) from err
    if not canon.all():  # a subset of items is rarely canonical: no news
        bad = np.argwhere(~canon)
        c, d = bad[0]
        warnings.warn(
            f"{(~canon).sum()} draws of {name!r} are not canonical label vectors (first at chain "
            f"index {c}, draw index {d}); they were canonicalized, i.e. read as partitions.",
            UserWarning,
            stacklevel=3,
        )
    ukeys, first, inverse = unique_keys(keys)
    index = inverse.reshape(keys.shape).astype(np.int64)

    logp_values = logp_draws = spread = None
    stats = view.sample_stats
    logp_var = resolve_logp_var(stats, logp_var, name)
    if stats is not None and logp_var in stats.data_vars:
        lp_da = stats[logp_var]
        if set(lp_da.dims) != {"chain", "draw"}:
            raise ValueError(f"sample_stats[{logp_var!r}] must have dims (chain, draw), got {lp_da.dims}.")
        lp_da = _select(lp_da, sel, f"sample_stats[{logp_var!r}]")
        lp_da = _align_on(lp_da, da, f"sample_stats[{logp_var!r}]", f"posterior[{name!r}]")
        lp = np.asarray(lp_da.transpose("chain", "draw").values)
        if not (np.issubdtype(lp.dtype, np.floating) or np.issubdtype(lp.dtype, np.integer)):
            raise TypeError(f"sample_stats[{logp_var!r}] must hold real numbers, got dtype {lp.dtype}.")
        lp = lp.astype(float)
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
        logp_values = flat[first]
        dev = np.abs(flat - logp_values[inverse])
        tol = LOGP_RTOL * np.maximum(1.0, np.abs(logp_values[inverse]))
        if np.any(dev > tol):
            # hierarchical draws: kept per draw (a trace of the joint chain); the tools that
            # need a fixed target refuse them through require_logp, the others never look
            spread, logp_draws, logp_values = float(dev.max()), lp, None
    n_items = int(da.sizes[item_dim])
    n_items = int(da.sizes[item_dim])
    return PartitionDraws(
        name=name,
        item_dim=item_dim,
        chain=np.asarray(da["chain"].values) if "chain" in da.coords else np.arange(keys.shape[0]),
        draw=np.asarray(da["draw"].values) if "draw" in da.coords else np.arange(keys.shape[1]),
        n_items=n_items,
        keys=ukeys,
        index=index,
        logp=logp_values,
        logp_name=logp_var,
        item_coord=np.asarray(da[item_dim].values) if item_dim in da.coords else np.arange(n_items),
        logp_spread=spread,
        _logp_draws=logp_draws,
    )


def select_items(pdraws, items, argname="items"):
    """Item positions named by ``items``: coordinate labels, a slice of labels or a boolean mask.

    ``None``: all items. Labels are those of the item dimension (positions 0 … n − 1 when it has
    no coordinate); the order given is kept; unknown or repeated labels are errors.
    """
    n = pdraws.n_items
    if items is None:
        return np.arange(n)
    import pandas as pd

    index = pd.Index(pdraws.item_coord)
    if isinstance(items, slice):
        try:
            sel = index.slice_indexer(items.start, items.stop, items.step)
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"`{argname}`: the slice {items!r} does not select item labels: {err}") from err
        pos = np.arange(n)[sel]
    else:
        arr = np.asarray(items)
        if arr.ndim == 0:
            arr = arr[None]
        if arr.dtype == bool:
            if arr.shape != (n,):
                raise ValueError(
                    f"`{argname}`: a boolean mask must have one entry per item ({n}), got shape {arr.shape}."
                )
            pos = np.flatnonzero(arr)
        else:
            pos = index.get_indexer(arr)
            if np.any(pos < 0):
                missing = arr[pos < 0][:5].tolist()
                raise ValueError(
                    f"`{argname}`: {missing} are not labels of the item dimension {pdraws.item_dim!r} "
                    f"(labels: {index[:5].tolist()}{' ...' if n > 5 else ''})."
                )
    if pos.size == 0:
        raise ValueError(f"`{argname}` selects no item.")
    if np.unique(pos).size != pos.size:
        raise ValueError(f"`{argname}` names some items more than once.")
    return pos.astype(np.int64)


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
