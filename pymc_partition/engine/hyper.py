"""The engine of the parameters hanging off a partition: exact updates given the labels, no PyMC.

A :class:`HyperparameterKernel` holds the per-item statistics, a compiled conditional log density
(:class:`~.compile.CompiledDensity`) and the layout of ``theta`` (which coordinates are slice
sampled, which are DP concentrations drawn by Escobar-West), and updates ``theta`` in one compiled
call (:func:`.kernels.hyper.run_hyper_update`)::

    kernel = HyperparameterKernel(density, item_stats, n_theta=2, slice_index=[1],
                                  escobar_west=[(0, 2.0, 1.0, True)])
    rng = rng_state(seed)                   # the generator state, advanced by each step
    theta, lp, n_evals = kernel.step(labels, theta, rest, rng, tune=False)

The PyMC adapter (:class:`pymc_partition.step_methods.PartitionHyperparameters`) maps a point to
``theta`` and ``rest`` and back; tests drive the kernel directly.
"""

from __future__ import annotations

import numpy as np

from .kernels.hyper import EW_COLUMNS, HyperModel, HyperState, run_hyper_update
from .kernels.rng import rng_state
from .kernels.step import compiled_entry

__all__ = ["HyperparameterKernel"]

#: stepping-out limit of the slice sampler, in widths per side (the update is exact for any)
MAX_STEPS = 32


class HyperparameterKernel:
    """Exact updates of a parameter vector ``theta`` given a partition.

    Parameters
    ----------
    density : CompiledDensity or None
        ``f(theta, rest, S, sizes)``: the conditional log density of ``theta`` up to a constant
        given the clusters' summed statistics ``S`` and sizes; None when no coordinate is slice
        sampled.
    item_stats : ndarray (n_items, k)
        Per-item statistics (summed per cluster for ``S``); :meth:`set_item_stats` replaces them.
    n_theta : int
        Length of ``theta``.
    slice_index : sequence of int
        Coordinates updated by slice sampling, in this order (after the Escobar-West ones).
    escobar_west : sequence of (index, shape, rate, log_scale)
        DP concentrations with a Gamma(shape, rate) prior, drawn by Escobar & West's update;
        ``log_scale`` when ``theta[index]`` holds the log of the concentration.
    width : float, default 1.0
        Initial slice width on the transformed scale (adapted during tuning).
    """

    def __init__(self, density, item_stats, n_theta, slice_index=(), escobar_west=(), width=1.0):
        self.density = density
        self.item_stats = np.ascontiguousarray(item_stats, dtype=np.float64)
        if self.item_stats.ndim != 2:
            raise ValueError("`item_stats` must be a 2-d array (items x statistics).")
        self.n_theta = int(n_theta)
        self.slice_index = np.asarray(slice_index, dtype=np.int64).reshape(-1)
        self.ew = np.asarray(escobar_west, dtype=np.float64).reshape(-1, len(EW_COLUMNS))
        taken = np.concatenate([self.slice_index, self.ew[:, 0].astype(np.int64)])
        if np.unique(taken).size != taken.size or (taken < 0).any() or (taken >= self.n_theta).any():
            raise ValueError(f"Each coordinate of theta (0..{self.n_theta - 1}) may be updated "
                             f"once; got slice {self.slice_index.tolist()}, Escobar-West "
                             f"{self.ew[:, 0].astype(int).tolist()}.")  # fmt: skip
        if self.slice_index.size and density is None:
            raise ValueError("Slice-sampled coordinates need a `density`.")
        self.set_density(density)
        self.widths = np.full(self.n_theta, float(width))
        self.reset_tuning()

    def set_density(self, density):
        """Take the (compiled, process-local) log density, e.g. again after unpickling."""
        self.density = density
        self._addr = density.addresses if density is not None else np.zeros(2, np.int64)
        self._model = HyperModel(self.item_stats, self._addr, self.slice_index, self.ew, MAX_STEPS)
        self._entry = None

    def __getstate__(self):
        state = self.__dict__.copy()
        # compiled code and addresses are process-local: the owner gives them again (set_density)
        for key in ("density", "_addr", "_model", "_entry"):
            state.pop(key, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.set_density(None)

    def reset_tuning(self):
        """Forget the moves seen so far (the widths adapt afresh from their current values)."""
        self.move_sums = np.zeros(self.n_theta)
        self.move_counts = np.zeros(self.n_theta)

    def set_item_stats(self, item_stats):
        """Take new per-item statistics (same shape), in place."""
        self.item_stats[:] = item_stats

    def step(self, labels, theta, rest, rng, tune=False):
        """One update of ``theta`` given canonical ``labels``.

        Parameters
        ----------
        labels : ndarray of int64 (n_items,)
            Canonical labels of the partition.
        theta : ndarray of float64
            Current values; updated in place (and returned).
        rest : ndarray of float64
            The other variables the density reads.
        rng : ndarray of uint64 (4,), int or numpy.random.Generator
            The generator state (:func:`~.kernels.rng.rng_state`), advanced in place; an integer
            or a Generator seeds a fresh state for this update alone.
        tune : bool
            Adapt the slice widths.

        Returns
        -------
        (theta, log_density, n_evals)
            ``log_density`` is the density at the new ``theta`` (NaN without slice coordinates).
        """
        if self.slice_index.size and self.density is None:
            raise RuntimeError("The kernel has no log density (unpickled?): call set_density first.")
        if not (type(rng) is np.ndarray and rng.dtype == np.uint64 and rng.shape == (4,)):
            rng = rng_state(rng)
        # named without calling the named tuple's constructor (a Python call less per step)
        state = tuple.__new__(HyperState, (theta, rest, self.widths, self.move_sums, self.move_counts))
        args = (rng, labels, self._model, state, bool(tune))
        if self._entry is None:
            from ..predictive._types import quiet_compile

            with quiet_compile():
                lp, n = run_hyper_update(*args)
            self._entry = compiled_entry(run_hyper_update, args)
        else:
            lp, n = self._entry(*args)
        return theta, lp, n

    def __repr__(self):
        return (f"HyperparameterKernel(n_theta={self.n_theta}, slice={self.slice_index.tolist()}, "
                f"escobar_west={self.ew[:, 0].astype(int).tolist()})")  # fmt: skip
