"""``PartitionRV`` and ``MarginalLikelihoodRV`` on PyTensor's numba backend, without object mode.

PyTensor compiles a ``RandomVariable`` for numba from a *core* function drawing one value,
``core(rng, *dist_params)``, that it looks up with ``numba_core_rv_funcify(op, node)`` and loops
over batch dimensions (PyTensor 2.38 and 3.3 alike); an Op without one runs its ``rng_fn`` in
object mode, with a UserWarning. The cores here call numba kernels:

- the partition: :func:`pymc_partition.prior_draws.draw_prior`, the kernel ``rng_fn`` calls too,
  so both backends draw the same partitions from the same generator state;
- the data: the family's ``_draw_kernel`` (:mod:`pymc_partition.families.numba_draws`), with the
  fixed hyperparameters compiled in as constants and the random ones read from the inputs.

Importing PyTensor's numba dispatch takes seconds, so the cores are registered when a graph is
first compiled for numba: a rewrite in the ``"numba"`` rewrite set, which only the numba linker
asks for, registers them (and changes nothing).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
from numba import njit

from .compat.pytensor import on_numba_compile

__all__ = ["register_numba_draws"]

_REGISTERED = []


def _source_hash(*modules):
    """Hash of this module's and the kernels' source files.

    PyTensor's on-disk cache of a compiled graph must not outlive a change of the code compiled into it.
    """
    digest = hashlib.sha256()
    for module in (sys.modules[__name__], *modules):
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()


def _cache_key(*parts):
    """Return an integer key (what ``numba_core_rv_funcify`` may return) identifying a core function."""
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:15], 16)


def _partition_core(op, node):
    """Core of ``PartitionRV``: one draw from the tables ``log_g``, ``log_h``."""
    from pytensor.link.numba.dispatch.basic import numba_njit

    from . import prior_draws
    from .prior_draws import draw_prior

    @numba_njit
    def partition_draw(rng, log_g, log_h):
        # writable C-contiguous copies, as rng_fn passes: one compiled specialization of the kernel
        return draw_prior(log_g.copy(), log_h.copy(), rng, 1)[0]

    return partition_draw, _cache_key("partition", _source_hash(prior_draws))


# every hyperparameter reaches the kernel as a fresh float64 scalar, vector or matrix, whether it
# is a compiled-in constant (read-only) or an input (a scalar or 0-d array): one specialization
@njit(cache=True)
def _as_scalar(x):
    return np.asarray(x, dtype=np.float64).item()


@njit(cache=True)
def _as_vector(x, n):
    out = np.empty(n)
    out[:] = np.asarray(x, dtype=np.float64)
    return out


@njit(cache=True)
def _as_matrix(x, n):
    out = np.empty((n, n))
    out[:, :] = np.asarray(x, dtype=np.float64)
    return out


_AS_SHAPE = ("as_scalar({})", "as_vector({}, {})", "as_matrix({}, {})")


def _marginal_likelihood_core(op, node):
    """Core of ``MarginalLikelihoodRV``: data given the labels, from the family's numba kernel.

    The generated function takes the Op's inputs (labels, item statistics, the random
    hyperparameters in ``op.param_names`` order, the rows' items) and calls the kernel with every
    hyperparameter broadcast to the shape the kernel expects.
    """
    from pytensor.link.numba.cache import compile_numba_function_src
    from pytensor.link.numba.dispatch.basic import numba_njit

    from .families import numba_draws

    family = op.family
    if family._draw_kernel is None:
        raise NotImplementedError(f"{type(family).__name__} has no numba draw kernel.")
    n_rows, n_vars = op._supp_shape_from_params(None)
    random = [f"p{i}" for i in range(len(op.param_names))]
    env = {"np": np, "kernel": family._draw_kernel, "as_scalar": _as_scalar,
           "as_vector": _as_vector, "as_matrix": _as_matrix}  # fmt: skip
    args, key = [], [type(family).__qualname__, _source_hash(numba_draws), n_rows, n_vars]
    for name, shape in family._draw_kernel_shapes(n_vars):
        if name in op.param_names:
            value = random[op.param_names.index(name)]
            key.append((name, shape, value))
        else:
            env[f"c_{name}"] = np.array(family._param(name), dtype=np.float64, order="C")
            value = f"c_{name}"
            key.append((name, shape, env[value].shape, env[value].tobytes()))  # compiled in
        args.append(_AS_SHAPE[len(shape)].format(value, *shape[:1]))
    src = f"""
def marginal_likelihood_draw(rng, z, item_stats, {"".join(p + ", " for p in random)}item_index):
    out = np.empty(({n_rows}, {n_vars}))
    kernel(rng, z, item_index, out, {", ".join(args)})
    return out
"""
    fn = compile_numba_function_src(src, "marginal_likelihood_draw", env)
    return numba_njit(fn), _cache_key(*key)


def register_numba_draws():
    """Register the numba cores of ``PartitionRV`` and ``MarginalLikelihoodRV`` (once)."""
    if _REGISTERED:
        return
    from pytensor.link.numba.dispatch.random import numba_core_rv_funcify

    from .distribution import PartitionRV
    from .likelihood import MarginalLikelihoodRV

    numba_core_rv_funcify.register(PartitionRV)(_partition_core)
    numba_core_rv_funcify.register(MarginalLikelihoodRV)(_marginal_likelihood_core)
    _REGISTERED.append(True)


# registered when a graph is first compiled for numba (importing the numba dispatch takes seconds)
on_numba_compile("register_numba_draws_rewrite", register_numba_draws)
