"""The one module where compiled code handles raw addresses: why, and what keeps it safe.

Kernels receive compiled functions as pairs of integers ``[cfunc wrapper address, jit address]``
and rebuild a first-class numba function from them (``*_from_addresses``). Passing a dispatcher
as an argument instead makes numba look its addresses up on *every* call of the kernel (tens of
microseconds), and a kernel taking dispatcher arguments is not cached on disk. Every family's
functions have the same types, so the kernels compile once and are cached on disk.

A form's functions are called a few times per item, so their arguments are kept small: instead
of arrays they receive a *context*, an int64 vector holding the addresses and shapes of the
arrays they read and write (:func:`make_context`), viewed as arrays again by :func:`unpack` at
no cost; the kernels hand them their scratch arrays by address too (:func:`address_of`,
:func:`int_view`, :func:`float_view`).

Why not something numba checks: passing the arrays themselves (and the slot list and output) to
the form's function instead of the context more than doubles the cost of the call, and passing
the dispatcher as an argument costs as much (``benchmarks/bench_form_boundary.py``, CPU time:
2.2-2.3x the context's time for NormalInverseGamma with two variables, 20,000 items, four
candidates per call). Each array crosses the call as a structure of seven to nine words with its
reference count touched twice. The difference is about 30% of a whole Gibbs sweep of that model
(``pred`` alone; ``remove`` and ``add`` would add theirs), far over the 5% a checked boundary may
cost, so the addresses stay, confined to this module.

What keeps it safe instead, all here:

- :func:`make_context` and :func:`call_pred` take the arrays' addresses through
  :func:`arviz_regen.base.addresses.describe`, which refuses an array of the wrong dtype,
  dimensions or layout before anything can be called (the pointers compiled code reads them
  through are that module's too); :func:`make_context` also refuses wrong shapes, and the
  context it returns *owns* its arrays (its memory's owner holds them): they live as long as the
  context, whatever the caller drops;
- :func:`addresses` refuses a compiled function whose return type is not the signature's;
- the kernels' own scratch arrays (:func:`address_of`) live in the bundles the caller holds for
  the whole call.
"""

from __future__ import annotations

import contextlib
import warnings

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from arviz_regen.base.addresses import describe, float64_at, int64_at

__all__ = [
    "LM_SIG",
    "PRED_SIG",
    "REMOVE_SIG",
    "ADD_SIG",
    "INIT_SIG",
    "addresses",
    "address_of",
    "quiet_compile",
    "make_context",
    "context_arrays",
    "call_pred",
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


class _Owner(bytearray):
    """The memory of a context, holding the arrays whose addresses it stores (``arrays``)."""


def make_context(params, stats, cache, aux, lm_addr):
    """Return the int64 context vector of a form's arrays (all float64, C-contiguous).

    ``stats (slots, k)`` and ``cache (slots, w)`` are the per-slot statistics and form caches
    (their last row is scratch), ``aux (n, a)`` the per-item terms, ``params`` the constants,
    ``lm_addr`` the compiled log marginal's addresses (int64, two entries; zeros for none).

    The context keeps the five arrays alive (its buffer's owner refers to them), so it stays
    valid as long as it exists. Wrong dtypes, dimensions, layouts or shapes raise here, before
    any compiled function could read through it.
    """
    meta = describe([params, stats, cache, aux], [("params", np.float64, 1), ("stats", np.float64, 2),
                                                  ("cache", np.float64, 2), ("aux", np.float64, 2)])  # fmt: skip
    for name, arr in (("stats", stats), ("cache", cache)):
        if not arr.flags.writeable:
            raise ValueError(f"`{name}` must be writeable: the form's functions update it.")
    if stats.shape[0] != cache.shape[0] or stats.shape[0] < 1:
        raise ValueError("`stats` and `cache` must have one row per slot each (at least one).")
    lm_addr = np.asarray(lm_addr)
    if lm_addr.dtype != np.int64 or lm_addr.shape != (2,):
        raise TypeError(f"`lm_addr` must be int64 of shape (2,), got {lm_addr.dtype} {lm_addr.shape}.")
    owner = _Owner(8 * _CONTEXT_SIZE)
    owner.arrays = (params, stats, cache, aux, lm_addr.copy())
    ctx = np.frombuffer(owner, dtype=np.int64)  # its base refers to ``owner``: the arrays live
    # ``meta``: each array's address, then its dimensions (four entries per array)
    ctx[_PARAMS], ctx[_N_PARAMS] = meta[0], meta[1]
    ctx[_STATS], ctx[_N_SLOTS], ctx[_N_STATS] = meta[4], meta[5], meta[6]
    ctx[_CACHE], ctx[_WIDTH] = meta[8], meta[10]
    ctx[_AUX], ctx[_N_ITEMS], ctx[_AUX_WIDTH] = meta[12], meta[13], meta[14]
    ctx[_LM : _LM + 2] = lm_addr
    return ctx


def context_arrays(ctx):
    """``(params, stats, cache, aux)`` a context made by :func:`make_context` holds."""
    owner = getattr(getattr(ctx, "base", None), "obj", None)
    if not isinstance(owner, _Owner):
        raise TypeError("not a context made by make_context")
    return owner.arrays[:4]


def call_pred(pred, ctx, slots, out):
    """Return ``pred(ctx, slots, len(slots), i, out)`` as a function of item ``i``, arrays checked.

    ``pred`` is a form's dispatcher of signature :data:`PRED_SIG`. The arrays are checked once
    here (they must not be replaced afterwards), the item and slot range at each call.
    """
    params, stats, cache, aux = context_arrays(ctx)
    meta = describe([slots, out], [("slots", np.int64, 1), ("out", np.float64, 1)])
    if not out.flags.writeable:
        raise TypeError("`out` must be writeable.")
    if out.shape[0] < slots.shape[0]:
        raise ValueError(f"`out` has {out.shape[0]} entries for {slots.shape[0]} slots.")
    m, n_slots, n_items = slots.shape[0], stats.shape[0], aux.shape[0]
    slots_addr, out_addr = int(meta[0]), int(meta[4])

    def call(i):
        if not 0 <= i < n_items:
            raise IndexError(f"item {i} out of range for {n_items} items.")
        if m and not (0 <= slots.min() and slots.max() < n_slots):
            raise IndexError(f"slots {slots} out of range for {n_slots} slots.")
        pred(ctx, slots_addr, m, i, out_addr)

    return call


_f8_pointer, _i8_pointer = float64_at, int64_at  # (arviz_regen.base.addresses's pointers)


@numba.njit(nogil=True, cache=True, inline="always")
def unpack(ctx):
    """``(params, stats, cache, aux)`` viewed from a context (no copy, no reference counting)."""
    params = numba.carray(_f8_pointer(ctx[_PARAMS]), ctx[_N_PARAMS])
    stats = numba.carray(_f8_pointer(ctx[_STATS]), (ctx[_N_SLOTS], ctx[_N_STATS]))
    cache = numba.carray(_f8_pointer(ctx[_CACHE]), (ctx[_N_SLOTS], ctx[_WIDTH]))
    aux = numba.carray(_f8_pointer(ctx[_AUX]), (ctx[_N_ITEMS], ctx[_AUX_WIDTH]))
    return params, stats, cache, aux


@numba.njit(nogil=True, cache=True, inline="always")
def address_of(a):
    """Return the address of array ``a``'s data, for :func:`int_view` / :func:`float_view` in a callee.

    The caller keeps ``a`` for the whole call.
    """
    return np.int64(a.ctypes.data)


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
