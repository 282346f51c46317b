"""Numba types of the compiled log marginal and of the predictive forms, and how kernels get them.

Kernels receive compiled functions as pairs of integers ``[cfunc wrapper address, jit address]``
and rebuild a first-class numba function from them (``*_from_addresses``). Passing a dispatcher
as an argument instead makes numba look its addresses up on *every* call of the kernel (tens of
microseconds), and a kernel taking dispatcher arguments is not cached on disk. Every family's
functions have the same types, so the kernels compile once and are cached on disk.

A form's functions are called a few times per item, so their arguments are kept small: instead
of arrays (numba passes each as a structure of seven to nine words) they receive a *context*, an
int64 vector holding the addresses and shapes of the arrays they read and write
(:func:`make_context`), viewed as arrays again by :func:`unpack` at no cost. The owner of the
arrays keeps them alive while the context is in use.
"""

from __future__ import annotations

import contextlib
import warnings

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

__all__ = [
    "LM_SIG",
    "PRED_SIG",
    "REMOVE_SIG",
    "ADD_SIG",
    "INIT_SIG",
    "addresses",
    "quiet_compile",
    "make_context",
    "unpack",
    "lm_of",
    "int_view",
    "float_view",
    "lm_from_addresses",
    "pred_from_addresses",
    "remove_from_addresses",
    "add_from_addresses",
    "init_from_addresses",
]


@contextlib.contextmanager
def quiet_compile():
    """Compile without numba's warning that first-class function types are experimental.

    They are the documented way to pass compiled functions around, and the warning says nothing
    to our users. A global filter set at import is not enough: kernels compile on first use,
    possibly inside ``warnings.catch_warnings()`` blocks (pytest runs every test in one).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore",
            message="First-class function type feature is experimental",
            category=numba.core.errors.NumbaExperimentalFeatureWarning,
        )
        yield


f8 = numba.float64
i8 = numba.int64
F1 = numba.types.Array(f8, 1, "C")
I1 = numba.types.Array(i8, 1, "C")

#: ``lm(stats) -> float``: a family's cluster log marginal (its pytensor graph, compiled)
LM_SIG = f8(F1)
#: ``pred(ctx, slots_addr, m, i, out_addr)``: log predictive of item ``i`` for ``m`` slots
PRED_SIG = numba.void(I1, i8, i8, i8, i8)
#: ``remove(ctx, c, i) -> float``
REMOVE_SIG = f8(I1, i8, i8)
#: ``add(ctx, c, i, lp)``
ADD_SIG = numba.void(I1, i8, i8, f8)
#: ``init(ctx, c) -> float``: rebuild slot ``c``'s cache, return its log marginal
INIT_SIG = f8(I1, i8)

# context layout
(_PARAMS, _N_PARAMS, _STATS, _N_SLOTS, _N_STATS, _CACHE, _WIDTH, _AUX, _N_ITEMS, _AUX_WIDTH) = range(10)
_LM = 10  # two entries: the compiled log marginal's addresses
_CONTEXT_SIZE = 12


def make_context(params, stats, cache, aux, lm_addr):
    """Return the int64 context vector of a form's arrays (all float64, C-contiguous).

    ``stats (slots, k)`` and ``cache (slots, w)`` are the per-slot statistics and form caches
    (their last row is scratch), ``aux (n, a)`` the per-item terms, ``params`` the constants,
    ``lm_addr`` the compiled log marginal's addresses.
    """
    for name, arr, ndim in (("params", params, 1), ("stats", stats, 2), ("cache", cache, 2),
                            ("aux", aux, 2)):  # fmt: skip
        if arr.dtype != np.float64 or arr.ndim != ndim or not arr.flags.c_contiguous:
            raise TypeError(f"`{name}` must be a C-contiguous float64 array with {ndim} dims.")
    if stats.shape[0] != cache.shape[0]:
        raise ValueError("`stats` and `cache` must have one row per slot each.")
    ctx = np.zeros(_CONTEXT_SIZE, dtype=np.int64)
    ctx[_PARAMS], ctx[_N_PARAMS] = params.ctypes.data, params.shape[0]
    ctx[_STATS], ctx[_N_SLOTS], ctx[_N_STATS] = stats.ctypes.data, *stats.shape
    ctx[_CACHE], ctx[_WIDTH] = cache.ctypes.data, cache.shape[1]
    ctx[_AUX], ctx[_N_ITEMS], ctx[_AUX_WIDTH] = aux.ctypes.data, *aux.shape
    ctx[_LM : _LM + 2] = lm_addr
    return ctx


def _pointer_intrinsic(dtype):
    ptr_type = types.CPointer(dtype)

    @intrinsic
    def as_pointer(typingctx, addr):
        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(ptr_type))

        return ptr_type(types.int64), codegen

    return as_pointer


_f8_pointer = _pointer_intrinsic(types.float64)
_i8_pointer = _pointer_intrinsic(types.int64)


@numba.njit(nogil=True, cache=True, inline="always")
def unpack(ctx):
    """``(params, stats, cache, aux)`` viewed from a context (no copy, no reference counting)."""
    params = numba.carray(_f8_pointer(ctx[_PARAMS]), ctx[_N_PARAMS])
    stats = numba.carray(_f8_pointer(ctx[_STATS]), (ctx[_N_SLOTS], ctx[_N_STATS]))
    cache = numba.carray(_f8_pointer(ctx[_CACHE]), (ctx[_N_SLOTS], ctx[_WIDTH]))
    aux = numba.carray(_f8_pointer(ctx[_AUX]), (ctx[_N_ITEMS], ctx[_AUX_WIDTH]))
    return params, stats, cache, aux


@numba.njit(nogil=True, cache=True, inline="always")
def int_view(addr, m):
    """Return the int64 array of length ``m`` at address ``addr``."""
    return numba.carray(_i8_pointer(addr), m)


@numba.njit(nogil=True, cache=True, inline="always")
def float_view(addr, m):
    """Return the float64 array of length ``m`` at address ``addr``."""
    return numba.carray(_f8_pointer(addr), m)


def addresses(dispatcher, sig):
    """``[cfunc wrapper address, jit address]`` of ``dispatcher`` compiled for ``sig`` (int64).

    Compiles ``sig`` on first use (or loads it from numba's disk cache): a form's functions are
    compiled only for the family a sampler uses, not for every family when the package is
    imported. The compiled return type must be ``sig``'s, as the kernels call it through ``sig``.
    """
    from numba.experimental.function_type import _get_jit_address, _get_wrapper_address

    cres = dispatcher.overloads.get(tuple(sig.args))
    if cres is None:
        with quiet_compile():
            dispatcher.compile(sig)
        cres = dispatcher.overloads[tuple(sig.args)]
    if cres.signature.return_type != sig.return_type:
        raise TypeError(
            f"{dispatcher.py_func.__qualname__} returns {cres.signature.return_type}, but the kernels call it as {sig}."
        )
    out = np.array([_get_wrapper_address(dispatcher, sig), _get_jit_address(dispatcher, sig)], dtype=np.int64)
    if (out <= 0).any():
        raise RuntimeError(f"Could not get the address of the compiled function {dispatcher}.")
    return out


def _from_addresses(sig):
    fn_type = numba.types.FunctionType(sig)

    @intrinsic
    def build(typingctx, c_addr, jit_addr):
        def codegen(context, builder, signature, args):
            sfunc = cgutils.create_struct_proxy(fn_type)(context, builder)
            voidptr = context.get_value_type(numba.types.voidptr)
            sfunc.c_addr = builder.inttoptr(args[0], voidptr)
            sfunc.py_addr = ir.Constant(voidptr, None)
            sfunc.jit_addr = builder.inttoptr(args[1], voidptr)
            return sfunc._getvalue()

        return fn_type(c_addr, jit_addr), codegen

    return build


#: ``lm_from_addresses(c_addr, jit_addr)`` inside compiled code: the first-class function ``lm``
lm_from_addresses = _from_addresses(LM_SIG)
pred_from_addresses = _from_addresses(PRED_SIG)
remove_from_addresses = _from_addresses(REMOVE_SIG)
add_from_addresses = _from_addresses(ADD_SIG)
init_from_addresses = _from_addresses(INIT_SIG)


@numba.njit(nogil=True, cache=True, inline="always")
def lm_of(ctx):
    """Return the compiled log marginal named by a context."""
    return lm_from_addresses(ctx[_LM], ctx[_LM + 1])
