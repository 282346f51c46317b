"""Partition states: canonical labels (restricted growth strings) and compact state keys.

A partition of ``n`` items is stored as a vector of canonical labels: item 0 has label 0 and each
next item has either a label already used or the next unused one. Two label vectors describe the
same partition iff their canonical forms are equal, so everything that stores or compares states
works on canonical labels and on the keys built from them here.

This is the one implementation, in the lower layer (``arviz_regen`` needs nothing from PyMC);
:mod:`pymc_partition.state` re-exports it. The compiled kernel is jitted lazily (numba is
imported on first use, not by ``import arviz_regen``).
"""

from __future__ import annotations

import numpy as np

from .lazy_jit import lazy_njit

__all__ = [
    "canonicalize",
    "is_canonical",
    "n_clusters",
    "cluster_sizes",
    "state_keys",
    "keys_to_labels",
    "bell_number",
    "check_labels",
    "bits_per_label",
]
# all_partitions (below) stays out of __all__, which pymc_partition.state re-exports one to one


@lazy_njit(cache=True)
def _canonicalize_rows(labels):
    n_rows, n = labels.shape
    out = np.empty((n_rows, n), dtype=np.int64)
    for r in range(n_rows):
        # labels may be arbitrary integers: map by first appearance with a small linear table
        seen = np.empty(n, dtype=labels.dtype)
        n_seen = 0
        for i in range(n):
            lab = labels[r, i]
            found = -1
            for k in range(n_seen):
                if seen[k] == lab:
                    found = k
                    break
            if found < 0:
                seen[n_seen] = lab
                found = n_seen
                n_seen += 1
            out[r, i] = found
    return out


#: Up to this many labels in one call, :func:`canonicalize` runs in numpy: a short call should not
#: wait for numba to compile :func:`_canonicalize_rows` in a fresh environment.
_NUMPY_LABELS = 1 << 16


def _canonicalize_rows_numpy(labels):
    """:func:`_canonicalize_rows` in numpy.

    A stable sort groups each row's equal labels, and a group's canonical label is the rank of its first position among
    its row's groups.
    """
    n_rows, n = labels.shape
    order = np.argsort(labels, axis=1, kind="stable")
    srt = np.take_along_axis(labels, order, axis=1)
    starts = np.ones((n_rows, n), dtype=bool)
    starts[:, 1:] = srt[:, 1:] != srt[:, :-1]
    group = np.cumsum(starts.ravel()) - 1  # group of each sorted label, numbered over all rows
    first = order.ravel()[starts.ravel()]  # first position of each group (the sort is stable)
    row = np.repeat(np.arange(n_rows), starts.sum(axis=1))
    is_first = np.zeros((n_rows, n), dtype=np.int64)
    is_first[row, first] = 1
    rank = (np.cumsum(is_first, axis=1) - 1)[row, first]
    out = np.empty((n_rows, n), dtype=np.int64)
    np.put_along_axis(out, order, rank[group].reshape(n_rows, n), axis=1)
    return out


def check_labels(labels, n_items=None, name="labels"):
    """Validate a label array and return it as an int64 array.

    Parameters
    ----------
    labels : array_like of int
        One label vector ``(n_items,)`` or a stack of them ``(..., n_items)``.
    n_items : int, optional
        Expected length of the last axis.
    name : str
        Argument name used in error messages.
    """
    arr = np.asarray(labels)
    if arr.ndim == 0:
        raise ValueError(f"`{name}` must have at least one dimension (one label per item).")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            if arr.max() >= 2.0**63:  # beyond int64 (the cast would wrap to negative numbers)
                if arr.min() < 0:
                    raise ValueError(
                        f"`{name}` holds labels beyond the int64 range ({arr.max():g}) and negative "
                        "ones: partition labels are cluster numbers 0, 1, 2, ..."
                    )
                # only which items share a label matters: number the distinct values instead
                arr = np.unique(arr, return_inverse=True)[1].reshape(arr.shape)
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"`{name}` must hold integer labels, got dtype {arr.dtype}.")
    if n_items is not None and arr.shape[-1] != n_items:
        raise ValueError(f"`{name}` has {arr.shape[-1]} labels on its last axis but the partition has {n_items} items.")
    if arr.shape[-1] < 1:
        raise ValueError(f"`{name}` must label at least one item.")
    return arr.astype(np.int64, copy=False)


def canonicalize(labels):
    """Return the canonical (restricted growth string) form of label vectors.

    Parameters
    ----------
    labels : array_like of int, shape (..., n_items)
        Any integer labels; only which items share a label matters.

    Returns
    -------
    numpy.ndarray of int64, same shape
        Labels numbered 0, 1, 2, ... in order of first appearance along the last axis.

    Examples
    --------
    >>> from arviz_regen.base.state import canonicalize
    >>> canonicalize([3, 3, 7, 1, 7])
    array([0, 0, 1, 2, 1])
    """
    arr = check_labels(labels)
    shape = arr.shape
    flat = np.ascontiguousarray(arr.reshape(-1, shape[-1]))
    kernel = _canonicalize_rows_numpy if flat.size <= _NUMPY_LABELS else _canonicalize_rows
    return kernel(flat).reshape(shape)


def is_canonical(labels):
    """Whether every label vector along the last axis is a restricted growth string.

    Returns a boolean array with the leading shape of ``labels``.
    """
    arr = check_labels(labels)
    if arr.shape[-1] == 0:
        return np.ones(arr.shape[:-1], dtype=bool)
    running_max = np.maximum.accumulate(arr, axis=-1)
    prev_max = np.concatenate([np.full(arr.shape[:-1] + (1,), -1, dtype=np.int64), running_max[..., :-1]], axis=-1)
    return np.all((arr >= 0) & (arr <= prev_max + 1), axis=-1)


def n_clusters(labels):
    """Return the number of clusters of each canonical label vector (shape ``labels.shape[:-1]``)."""
    arr = check_labels(labels)
    return arr.max(axis=-1) + 1


def cluster_sizes(labels):
    """Sizes of the clusters of one canonical label vector, in label order."""
    arr = check_labels(labels)
    if arr.ndim != 1:
        raise ValueError("`labels` must be a single label vector for cluster_sizes.")
    return np.bincount(arr)


def bits_per_label(n_items):
    """Bits per label in a packed state key of ``n_items`` items (at least 1)."""
    return max(1, int(np.ceil(np.log2(max(n_items, 2)))))


def state_keys(labels, assume_canonical=False):
    """Compact hashable keys for partition states.

    Two label vectors get the same key iff they describe the same partition. When the labels
    fit in 64 bits (``n_items * ceil(log2(n_items)) <= 64``, e.g. up to 16 items) the keys are
    ``uint64`` integers; otherwise they are fixed-width byte strings (numpy ``void``), which
    ``numpy.unique`` and dicts handle just as well.

    Parameters
    ----------
    labels : array_like of int, shape (..., n_items)
    assume_canonical : bool
        Skip canonicalization when the labels are known to be canonical.

    Returns
    -------
    numpy.ndarray, shape ``labels.shape[:-1]``
    """
    arr = check_labels(labels)
    if not assume_canonical:
        arr = canonicalize(arr)
    n = arr.shape[-1]
    bits = bits_per_label(n)
    if n * bits <= 64:
        shifts = (np.arange(n, dtype=np.uint64) * np.uint64(bits)).astype(np.uint64)
        return np.bitwise_or.reduce(arr.astype(np.uint64) << shifts, axis=-1)
    small = arr.astype(np.uint8 if n <= 256 else np.uint16 if n <= 65536 else np.uint32)
    small = np.ascontiguousarray(small)
    return small.view(np.dtype((np.void, small.dtype.itemsize * n))).reshape(arr.shape[:-1])


def keys_to_labels(keys, n_items, columns=None):
    """Invert :func:`state_keys`: canonical label vectors ``(..., n_items)`` from keys.

    ``columns`` (item positions): only those labels, shape ``(..., len(columns))``, without
    building the full int64 array first.
    """
    keys = np.asarray(keys)
    bits = bits_per_label(n_items)
    if keys.dtype == np.uint64:
        shifts = (np.arange(n_items, dtype=np.uint64) * np.uint64(bits)).astype(np.uint64)
        if columns is not None:
            shifts = shifts[np.asarray(columns)]
        mask = np.uint64((1 << bits) - 1)
        return ((keys[..., None] >> shifts) & mask).astype(np.int64)
    width = keys.dtype.itemsize // n_items
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[width]
    small = np.ascontiguousarray(keys).view(dtype).reshape(keys.shape + (n_items,))
    if columns is not None:
        small = small[..., np.asarray(columns)]
    return small.astype(np.int64)


def bell_number(n):
    """Return the number of partitions of ``n`` items (exact Python int)."""
    if n < 0:
        raise ValueError("`n` must be non-negative.")
    row = [1]
    for _ in range(n):
        new = [row[-1]]
        for v in row:
            new.append(new[-1] + v)
        row = new
    return row[0]


def all_partitions(n):
    """All partitions of ``n`` items as restricted growth strings, shape (B(n), n).

    Rows are canonical label vectors in lexicographic order; ``bell_number(n)`` of them
    (B(9) = 21,147, B(12) = 4,213,597: meant for exhaustive checks on small problems).
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"`n` must be a positive int, got {n!r}.")
    rows = np.zeros((1, 1), dtype=np.int64)
    for _ in range(1, n):
        mx = rows.max(axis=1)
        reps = mx + 2  # each prefix extends with labels 0 … max + 1
        base = np.repeat(rows, reps, axis=0)
        offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
        rows = np.concatenate([base, offsets[:, None]], axis=1)
    return rows
