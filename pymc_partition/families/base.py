"""Base class of conjugate families: additive per-item statistics and a pytensor cluster log marginal.

A family turns the data into one row of *additive* sufficient statistics per item
(:meth:`ConjugateFamily.item_stats`, numpy); a cluster's statistics are the sum of its items'
rows. :meth:`ConjugateFamily.log_marginal` maps a batch of cluster statistics ``(..., n_stats)``
to the closed-form log marginal likelihood of each cluster, written once in pytensor. The model's
logp, the exact posterior and the samplers' compiled kernels all call that one graph.

The log marginal of an all-zero (empty) statistics row is never used: callers mask empty clusters.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.tensor as pt

from .._pytensor_modes import python_function
from .._symbolic import POSITIVE, RandomParams, check_support, is_symbolic

__all__ = [
    "ConjugateFamily",
    "check_data",
    "check_positive",
    "check_probability",
    "check_finite",
    "check_stats_finite",
    "scalar_or_vector_param",
    "check_param_length",
    "check_same_length",
    "group_sums",
    "group_sums_graph",
    "CentredLocation",
]


def _symbolic_param(name, value, support=None):
    """Check a PyMC variable given as a hyperparameter: scalar or vector, float64.

    Its domain is checked when the model is evaluated (the logp is -inf outside it), and a random variable whose
    distribution reaches values outside it (``support=(outside, domain)``) now.
    """
    if support is not None:
        check_support(name, value, *support)
    if value.ndim > 2:
        raise ValueError(f"`{name}` must be a scalar, a vector or a matrix, got a {value.ndim}-d variable.")
    if value.dtype.startswith(("complex", "bool")):
        raise TypeError(f"`{name}` must be real, got a variable of dtype {value.dtype}.")
    return value if value.dtype == "float64" else value.astype("float64")


def check_positive(name, value):
    """Validate a finite, strictly positive hyperparameter (scalar or array, or a PyMC variable)."""
    if is_symbolic(value):
        return _symbolic_param(name, value, POSITIVE)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be numeric, got {value!r}.") from None
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"`{name}` must be finite and strictly positive, got {value!r}.")
    return float(arr) if arr.ndim == 0 else arr


def check_probability(name, value):
    """Validate a probability strictly inside (0, 1) (or a PyMC variable)."""
    if is_symbolic(value):
        return _symbolic_param(name, value, ((-1e-3, 1.001), "in (0, 1)"))
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be numeric, got {value!r}.") from None
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0) or np.any(arr >= 1):
        raise ValueError(f"`{name}` must lie strictly inside (0, 1), got {value!r}.")
    return float(arr) if arr.ndim == 0 else arr


def check_finite(name, value):
    """Return hyperparameter ``name`` as a finite float or float array, or a checked PyMC variable.

    Numbers must be finite (a TypeError for non-numeric values, a ValueError for NaN or infinity);
    a PyMC variable is checked by :func:`_symbolic_param` (its domain when the model is
    evaluated).
    """
    if is_symbolic(value):
        return _symbolic_param(name, value)
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be numeric, got {value!r}.") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` must be finite, got {value!r}.")
    return float(arr) if arr.ndim == 0 else arr


def _check_rows_are_items(shape, n_items):
    """Without ``item_index`` every row is one item: say so, and spot data passed transposed."""
    n_rows, n_cols = shape
    if n_rows == n_items or n_items < 1:
        return
    if n_cols == n_items:
        raise ValueError(
            f"`observed` has shape {shape} but n_items={n_items}: rows must be items (one row per "
            f"item, one column per variable). These data look transposed (items as columns): pass "
            f"`observed.T`, of shape {(n_cols, n_rows)}."
        )
    raise ValueError(
        f"`observed` has {n_rows} rows but n_items={n_items}. Without `item_index` every row is "
        "one item (rows are items, columns are variables); for several rows per item, pass "
        "`item_index`, the item of each row."
    )


def check_data(values, item_index=None, n_items=None):
    """Validate observed data and the row-to-item map.

    Parameters
    ----------
    values : array_like, shape (n_rows,) or (n_rows, n_vars)
        Observations, one row per replicate. A 1-d array is one variable.
    item_index : array_like of int, shape (n_rows,), optional
        Item of each row. ``None`` means one row per item.
    n_items : int, optional
        Number of items; defaults to ``max(item_index) + 1``.

    Returns
    -------
    values : ndarray (n_rows, n_vars) float64
    item_index : ndarray (n_rows,) int64
    n_items : int
    """
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    try:
        values = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError("`observed` must be a numeric array.") from None
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim != 2:
        raise ValueError(f"`observed` must be 1-d or 2-d (rows x variables), got {values.ndim}-d.")
    if values.shape[0] == 0 or values.shape[1] == 0:
        raise ValueError(f"`observed` is empty (shape {values.shape}).")
    if item_index is None and isinstance(n_items, (int, np.integer)) and not isinstance(n_items, bool):
        _check_rows_are_items(values.shape, int(n_items))
    bad = ~np.isfinite(values)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ValueError(
            f"`observed` holds {int(bad.sum())} NaN or infinite value(s) (first at row {r}, "
            f"column {c}); remove or impute them first."
        )
    n_rows = values.shape[0]
    if item_index is None:
        item_index = np.arange(n_rows)
    else:
        item_index = np.asarray(item_index)
        if item_index.ndim != 1:
            raise ValueError("`item_index` must be a 1-d array with one item number per row.")
        if item_index.size and not np.issubdtype(item_index.dtype, np.integer):
            raise TypeError(f"`item_index` must hold integers, got dtype {item_index.dtype}.")
        if item_index.shape[0] != n_rows:
            raise ValueError(f"`item_index` has length {item_index.shape[0]} but `observed` has {n_rows} rows.")
        item_index = item_index.astype(np.int64)
        if item_index.min() < 0:
            raise ValueError("`item_index` holds negative item numbers.")
    if n_items is None:
        n_items = int(item_index.max()) + 1
    else:
        if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)):
            raise TypeError(f"`n_items` must be an integer, got {type(n_items).__name__}.")
        if n_items < 1:
            raise ValueError(f"`n_items` must be at least 1, got {n_items}.")
        n_items = int(n_items)
        if item_index.max() >= n_items:
            raise ValueError(
                f"`item_index` names item {int(item_index.max())} but there are only {n_items} items (numbered from 0)."
            )
    counts = np.bincount(item_index, minlength=n_items)
    if np.any(counts == 0):
        empty = np.flatnonzero(counts == 0)
        raise ValueError(
            f"item(s) {empty[:10].tolist()} have no data rows in `item_index`; every item needs at least one row."
        )
    return values, item_index, n_items


def check_stats_finite(family, stats, values):
    """Refuse statistics that overflowed on finite data (squares, products of large values)."""
    if np.all(np.isfinite(stats)):
        return
    scaled = f" or scales them by its hyperparameters ({family!r})" if family._stats_params else ""
    raise ValueError(
        f"The {type(family).__name__} statistics of the data are not finite although the data "
        f"are (largest |value| {np.abs(values).max():.3g}): the family sums squares or products "
        f"of the values, which overflow beyond about 1e154{scaled}. Rescale the data (e.g. "
        "standardize each variable) and the hyperparameters with them."
    )


def scalar_or_vector_param(name, value, check, what="variable"):
    """Validate (with ``check``) a hyperparameter given as a scalar or one value per ``what``."""
    value = check(name, value)
    arr = value if is_symbolic(value) else np.asarray(value)
    if arr.ndim > 1:
        raise ValueError(f"`{name}` must be a scalar or a 1-d array (one value per {what}), got shape {arr.shape}.")
    if arr.ndim == 1 and _length(arr) == 0:
        raise ValueError(f"`{name}` is an empty array.")
    return value


def _length(value):
    """Length of a 1-d hyperparameter, ``None`` when a variable's length is not known statically."""
    if is_symbolic(value):
        return value.type.shape[0]
    return np.shape(value)[0]


def check_param_length(name, value, n_vars):
    """Refuse a 1-d hyperparameter ``name`` whose length is not the number of variables ``n_vars``.

    Scalars pass (they are broadcast to every variable), and so do variables whose length is not
    known statically.
    """
    ndim = value.ndim if is_symbolic(value) else np.ndim(value)
    if ndim == 1:
        length = _length(value)
        if length is not None and length != n_vars:
            raise ValueError(f"`{name}` has {length} values but `observed` has {n_vars} variable(s).")


def check_same_length(**params):
    """Per-variable hyperparameters given as vectors must have one common length."""
    lengths = {
        k: _length(v) for k, v in params.items()
        if (v.ndim if is_symbolic(v) else np.ndim(v)) == 1 and _length(v) is not None
    }  # fmt: skip
    if len(set(lengths.values())) > 1:
        listed = " and ".join(f"`{k}` ({n})" for k, n in lengths.items())
        raise ValueError(f"{listed} have different lengths.")


def group_sums(x, item_index, n_items):
    """Sum the rows of ``x (n_rows, k)`` by item: ``(n_items, k)``."""
    out = np.zeros((n_items, x.shape[1]))
    np.add.at(out, item_index, x)
    return out


def group_sums_graph(x, item_index, n_items):
    """:func:`group_sums` for a pytensor ``x (n_rows, k)`` (``item_index`` numbers)."""
    return pt.inc_subtensor(pt.zeros((n_items, x.shape[1]))[np.asarray(item_index)], x)


class ConjugateFamily(RandomParams):
    """Base class: a conjugate model whose cluster log marginal depends on additive statistics.

    Subclasses set ``_param_names`` and implement :meth:`_item_stats` (numpy) and
    :meth:`log_marginal` (pytensor).
    """

    _param_names: tuple = ()
    #: domain of each hyperparameter that may be a PyMC variable: "positive", "probability",
    #: "finite" (checked in the graph: the logp is -inf outside it)
    _param_domains: dict = {}
    #: hyperparameters the per-item statistics depend on (they are then a graph of them)
    _stats_params: tuple = ()
    #: the constructor derives attributes from the hyperparameters (a copy must go through it)
    _derived_from_params = False
    #: largest magnitude of a location hyperparameter whose square the log marginal needs
    #: (beyond, it overflows: refused for numbers, ``-inf`` logp for variables)
    _magnitude_limits: dict = {}

    def _check_magnitudes(self):
        """Refuse numbers beyond :attr:`_magnitude_limits` (called by the constructors)."""
        for name, limit in self._magnitude_limits.items():
            value = getattr(self, name)
            if not is_symbolic(value) and np.any(np.abs(np.asarray(value, dtype=float)) > limit):
                raise ValueError(
                    f"`{name}` must lie within +-{limit:g} for {type(self).__name__}: its squared "
                    f"distance from the data enters the marginal likelihood and overflows beyond "
                    f"that (got {value!r}). Rescale the data and the hyperparameters together."
                )

    # ------------------------------------------------------------------ random hyperparameters
    def replace_params(self, values):
        """Return a shallow copy whose hyperparameters ``values`` (name -> tensor) replace the current ones.

        Without validation: how the logp puts the model's value variables in.
        """
        cls = type(self)
        if _plain_copy(cls):  # what copy.copy does for such a class, without its generic protocol (per draw)
            new = object.__new__(cls)
            new.__dict__.update(self.__getstate__())
        else:
            import copy

            new = copy.copy(self)
            new.__dict__.pop("_np_fn", None)
        for k, v in values.items():
            setattr(new, k, v)
        return new

    def _param(self, name):
        """Return a hyperparameter for a graph: the variable itself, or its number(s) as float64."""
        value = getattr(self, name)
        return value if is_symbolic(value) else np.asarray(value, dtype=float)

    def conditions(self):
        """``[(condition, message)]`` on the random hyperparameters (graph conditions)."""
        out = []
        for k in self.random_params:
            v, domain = getattr(self, k), self._param_domains.get(k, "finite")
            if domain == "positive":
                out.append((pt.all(v > 0), f"{k} > 0"))
            elif domain == "probability":
                out.append((pt.all(pt.and_(v > 0, v < 1)), f"0 < {k} < 1"))
            if k in self._magnitude_limits:
                limit = self._magnitude_limits[k]
                out.append((pt.all(pt.le(pt.abs(v), np.float64(limit))), f"|{k}| <= {limit:g}"))
        return out

    def item_stats_graph(self, values, item_index, n_items):
        """Per-item statistics as a pytensor graph.

        Of (possibly shared) data and of the hyperparameters in ``_stats_params``; equal to :meth:`item_stats` (tested).
        """
        return self._item_stats_graph(pt.as_tensor_variable(values), np.asarray(item_index), int(n_items))

    def _item_stats_graph(self, values, item_index, n_items):  # pragma: no cover - abstract
        raise NotImplementedError

    def draw_data(self, rng, labels, item_index, n_vars):
        """Return the data drawn given a partition: each cluster's parameters from the prior, then its rows.

        Parameters
        ----------
        rng : numpy.random.Generator
        labels : ndarray (n_items,) of int
            The partition (any labels).
        item_index : ndarray (n_rows,) of int
            Item of each row.
        n_vars : int

        Returns
        -------
        ndarray (n_rows, n_vars)
            A draw from ``p(y | z, hyperparameters)``, the distribution the marginal likelihood is
            the density of (the cluster parameters integrated out by drawing them).
        """
        if self.is_random:
            raise TypeError(f"{type(self).__name__}.draw_data needs numbers for {list(self.random_params)}.")
        labels = np.asarray(labels, dtype=np.int64)
        item_index = np.asarray(item_index, dtype=np.int64)
        out = np.empty((item_index.size, n_vars))
        row_cluster = labels[item_index]
        for c in np.unique(labels):
            rows = np.flatnonzero(row_cluster == c)
            out[rows] = self._draw_cluster(rng, item_index[rows], n_vars)
        return out

    def _draw_cluster(self, rng, item_index, n_vars):  # pragma: no cover - abstract
        """Rows ``(len(item_index), n_vars)`` of one cluster (``item_index``: the rows' items)."""
        raise NotImplementedError(f"{type(self).__name__} cannot draw data yet.")

    #: the same draw as a numba kernel ``kernel(rng, labels, item_index, out, *params)``
    #: (:mod:`.numba_draws`): what PyTensor's numba backend runs (:mod:`pymc_partition.numba_random`);
    #: a family without one is drawn by ``rng_fn`` in object mode there, with PyTensor's warning
    _draw_kernel = None

    def _draw_kernel_shapes(self, n_vars):
        """Name and shape of each parameter of :attr:`_draw_kernel`, in its order.

        Scalar and vector hyperparameters are broadcast to these shapes (default: one value per variable).
        """
        return tuple((k, (n_vars,)) for k in self._param_names)

    def item_stats(self, values, item_index=None, n_items=None):
        """Per-item additive sufficient statistics.

        Parameters
        ----------
        values : array_like, shape (n_rows,) or (n_rows, n_vars)
        item_index : array_like of int, shape (n_rows,), optional
        n_items : int, optional

        Returns
        -------
        ndarray, shape (n_items, n_stats)
            Row ``i`` holds item ``i``'s statistics; a cluster's statistics are the sum of rows.
        """
        values, item_index, n_items = check_data(values, item_index, n_items)
        self._check_values(values)
        with np.errstate(over="ignore", invalid="ignore"):
            stats = np.ascontiguousarray(self._item_stats(values, item_index, n_items), dtype=float)
        check_stats_finite(self, stats, values)
        return stats

    def _check_values(self, values):
        """Family-specific checks of the observed values (support)."""

    def _item_stats(self, values, item_index, n_items):  # pragma: no cover - abstract
        raise NotImplementedError

    def log_marginal(self, stats):  # pragma: no cover - abstract
        """Log marginal likelihood of clusters from summed statistics.

        Parameters
        ----------
        stats : TensorVariable, shape (..., n_stats)

        Returns
        -------
        TensorVariable, shape (...)
        """
        raise NotImplementedError

    def predictive_form(self, item_stats):
        """Return a specialised form of the log predictive ``lm(S + x_i) - lm(S)`` for the samplers.

        Parameters
        ----------
        item_stats : ndarray (n_items, n_stats)

        Returns
        -------
        PredictiveForm or None
            Compiled functions computing the log predictive from cached per-cluster quantities
            (see :mod:`pymc_partition.predictive`), or ``None`` (the default, or when the form
            does not cover these data), in which case the samplers evaluate :meth:`log_marginal`'s
            compiled graph per candidate. :meth:`log_marginal` stays the definition: the samplers
            check a form against it on the model's data before using it.
        """
        return None

    def log_marginal_numpy(self, stats):
        """Evaluate :meth:`log_marginal` on a numpy array ``(..., n_stats)``.

        The graph is run by pytensor's Python linker, numpy op by op on the whole batch
        (:func:`~pymc_partition._pytensor_modes.python_function`): nothing is compiled, where
        numba would take seconds per family in a fresh environment; call it on many rows at once.
        """
        stats = np.asarray(stats, dtype=float)
        fn = getattr(self, "_np_fn", None)
        if fn is None:
            s = pt.matrix("stats")
            fn = python_function([s], self.log_marginal(s))
            self._np_fn = fn
        flat = stats.reshape(-1, stats.shape[-1])
        return np.asarray(fn(flat)).reshape(stats.shape[:-1])

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_np_fn", None)
        return state

    def __repr__(self):
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._param_names)
        return f"{type(self).__name__}({args})"


class CentredLocation:
    """Mixin of the Gaussian families: their statistics are sums over the data less a fixed centre.

    The centre is the prior mean ``mu0`` when it is a number, else the mean of the first data summed.

    Raw sums of squares of data far from zero cancel: at ``1e8`` times the spread a variance
    computed from them has no correct digit. About the prior mean (the data mean for
    ``from_data``) or the data mean (a random ``mu0``) the sums keep the spread's digits, and
    a shift of the data and ``mu0`` together changes nothing. The centre is fixed once and
    shared by the copies :meth:`with_values` and :meth:`replace_params` make, so statistics
    and log marginal agree when ``mu0`` takes other values; the log marginal reads
    ``mu0 - centre``.
    """

    def _set_centre(self):
        mu0 = self.mu0
        # a random mu0 has no number: the first data summed give it (see _fix_centre)
        self._centre_cell = _Centre(None if is_symbolic(mu0) else np.array(mu0, dtype=float))

    @property
    def centre(self):
        """The number(s) subtracted from the data before summing (per variable, or a scalar)."""
        return self._fix_centre(None)

    def _fix_centre(self, values):
        """Fix the centre now if it is not yet, and return it.

        The centre is each variable's mean of ``values`` (numbers), or 0 when there are none (statistics given by hand,
        or only a graph of the data).
        """
        cell = self._centre_cell
        if cell.value is None:
            cell.value = _data_mean(values)
        return cell.value

    def _centred(self, values):
        return values - self._fix_centre(values)

    def _mu0_from_centre(self):
        """``mu0 - centre`` for the graph (a tensor when ``mu0`` is random)."""
        return self._param("mu0") - self.centre

    def with_values(self, **values):
        new = super().with_values(**values)
        new._centre_cell = self._centre_cell  # the statistics were summed about this centre
        return new


class _Centre:
    """The centre of a :class:`CentredLocation` family, one object shared with its copies.

    So a centre fixed by any of them holds for all.
    """

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _data_mean(values):
    """Each variable's mean of finite 2-d ``values``, or 0 for a graph or ``None``.

    The midrange stands in for the mean where the mean's sum would overflow.
    """
    if values is None or is_symbolic(values):
        return np.float64(0.0)
    values = np.asarray(values, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        mean = values.mean(axis=0)
    if not np.all(np.isfinite(mean)):
        mean = 0.5 * values.min(axis=0) + 0.5 * values.max(axis=0)
    return mean


@functools.cache
def _plain_copy(cls):
    """Whether ``copy.copy`` of a ``cls`` instance is a new object with its ``__getstate__`` dictionary.

    No copying hook of its own beyond :class:`ConjugateFamily`'s ``__getstate__``, no ``__new__``, no ``__slots__``.
    """
    return (
        cls.__getstate__ is ConjugateFamily.__getstate__
        and cls.__reduce_ex__ is object.__reduce_ex__
        and cls.__reduce__ is object.__reduce__
        and cls.__new__ is object.__new__
        and not hasattr(cls, "__copy__")
        and not hasattr(cls, "__setstate__")
        and not any("__slots__" in c.__dict__ for c in cls.__mro__)
    )
