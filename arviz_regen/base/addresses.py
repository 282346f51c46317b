"""The one module of ``arviz_regen`` where compiled code handles raw addresses: why, and what keeps it safe.

The kernels of the SALSO search (:mod:`arviz_regen.base.salso_ops`) and of the cluster tracks
(:mod:`arviz_regen.base.track_scan`) are numba C callbacks taking scalars only: the addresses of
their arrays, described by one int64 array ``meta`` (:func:`describe`), read through plain
pointers (:data:`int64_at` and the others). A C callback is compiled once, with no Python entry
point that unboxes arrays or named tuples, and pointer indexing compiles to far less code than
numba's array structures. That is the reason: a first call in a fresh environment (no numba
disk cache) compiles them all (``benchmarks/bench_first_run.py`` measures it; the figures are in
the performance page of the docs).

What keeps it safe, all here:

- :func:`describe`, the one place where addresses are taken, refuses an array of the wrong
  dtype, number of dimensions or layout (not C-contiguous) before anything compiled can read it;
- the callers keep the described arrays referenced for as long as the kernels run (the search
  holds them in its buffers, the scan in local names around the call).

Importing this module imports numba: only the compiled paths import it, on their first use.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

__all__ = ["describe", "caller", "int64_at", "int32_at", "float64_at", "uint64_at"]


def describe(arrays, layout):
    """Return the ``meta`` array of ``arrays``: four int64 entries each, its address and up to three dimensions.

    Parameters
    ----------
    arrays : sequence of numpy.ndarray
    layout : sequence of (name, dtype, ndim)
        What each array must be; ``name`` is for the error message.

    Raises
    ------
    TypeError
        An array is not a C-contiguous array of its dtype and number of dimensions.
    ValueError
        Not one array per entry of ``layout``, or more than three dimensions.
    """
    if len(arrays) != len(layout):
        raise ValueError(f"{len(arrays)} arrays for a layout of {len(layout)}.")
    meta = np.zeros(4 * len(layout), dtype=np.int64)
    for s, (arr, (name, dtype, ndim)) in enumerate(zip(arrays, layout)):
        if ndim > 3:
            raise ValueError(f"array {name!r}: at most three dimensions can be described, not {ndim}.")
        if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.ndim != ndim or not arr.flags.c_contiguous:
            what = f"{arr.dtype} {arr.shape}" if isinstance(arr, np.ndarray) else type(arr).__name__
            raise TypeError(f"array {name!r}: {what} is not a C-contiguous {ndim}-d {np.dtype(dtype)}")
        meta[4 * s] = arr.ctypes.data
        meta[4 * s + 1 : 4 * s + 1 + ndim] = arr.shape
    return meta


def _pointer_at(dtype):
    """Make an intrinsic that reads an address (int64) as a pointer to ``dtype``."""

    @intrinsic
    def pointer_at(typingctx, address):
        sig = types.CPointer(dtype)(address)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

        return sig, codegen

    return pointer_at


#: compiled code only: ``int64_at(address)[i]`` reads (or writes) the int64 at address + 8 i
int64_at = _pointer_at(types.int64)
int32_at = _pointer_at(types.int32)
float64_at = _pointer_at(types.float64)
uint64_at = _pointer_at(types.uint64)


def caller(signature):
    """Make an intrinsic ``call(address, *args)`` that calls the C function at ``address`` with ``signature``.

    For compiled code only: ``address`` is that of a numba C callback of this signature
    (``numba.cfunc(signature)(f).address``); the arguments are cast to the signature's types. One
    indirect call, where a numba first-class function would also lower a fallback through Python
    at every call site.
    """
    restype, argtypes = signature.return_type, signature.args

    def typer(typingctx, address, *args):
        if len(args) != len(argtypes):
            return None
        sig = restype(address, *args)

        def codegen(context, builder, sig_, llargs):
            fnty = ir.FunctionType(context.get_value_type(restype), [context.get_value_type(t) for t in argtypes])
            fn = builder.inttoptr(llargs[0], fnty.as_pointer())
            vals = [context.cast(builder, v, ty, to) for v, ty, to in zip(llargs[1:], sig_.args[1:], argtypes)]
            return builder.call(fn, vals)

        return sig, codegen

    # an intrinsic's parameters are named (no *args): one per argument of the signature
    names = ", ".join(f"a{k}" for k in range(len(argtypes)))
    scope = {"typer": typer}
    exec(f"def call(typingctx, address, {names}):\n    return typer(typingctx, address, {names})", scope)
    return intrinsic(scope["call"])
