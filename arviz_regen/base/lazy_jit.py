"""Lazy numba (and other heavy) imports: ``import arviz_regen`` must not import numba.

``@lazy_njit(cache=True)`` replaces ``@numba.njit(cache=True)``. It returns a :class:`LazyDispatcher`,
a small proxy that imports numba and builds the real ``numba.njit(...)`` dispatcher only when it
is first needed; compilation itself then happens on the first call, as with plain ``njit``, and
with ``cache=True`` the machine code is cached on disk beside the module (``__pycache__``).

Kernels calling kernels. Inside compiled code numba resolves a global name at compile time
through ``numba.typeof``; for an object it does not know, ``typeof`` reads the object's
``_numba_type_`` attribute. The proxy's ``_numba_type_`` builds its real dispatcher and returns
``numba.types.Dispatcher(real)``, exactly the type a plain ``@numba.njit`` global has, so a
kernel (lazy or plain ``@numba.njit``) can call a lazily-jitted kernel through a module global or
receive it as an argument, and numba compiles and links the callee as usual. Module globals are
never rewritten.

:func:`lazy_import` gives the same deferral for modules used only inside functions
(``stats = lazy_import("scipy.stats")``): the module is imported on first attribute access.

:func:`gc_paused` pauses Python's cyclic garbage collector while numba compiles: the compiler
allocates millions of short-lived objects, and every collection they trigger walks all the
objects of the process (with xarray and pandas loaded, a noticeable part of a first call). A
lazily jitted kernel's first call runs with it paused.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import threading

__all__ = ["LazyDispatcher", "lazy_njit", "lazy_import", "LazyModule", "scipy_stats", "gc_paused"]

_lock = threading.RLock()
_gc_lock = threading.Lock()
#: pauses in progress (threads may compile at once; the collector resumes after the last) and
#: whether the collector was enabled before the first
_gc_state = {"depth": 0, "was_enabled": False}


@contextlib.contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector for the block (if it was enabled), then resume it.

    Nothing is lost: objects freed by reference counting are freed as usual, and cycles made
    meanwhile are collected after the block.
    """
    with _gc_lock:
        if _gc_state["depth"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["depth"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["depth"] -= 1
            if _gc_state["depth"] == 0 and _gc_state["was_enabled"]:
                gc.enable()


def _import_numba():
    try:
        return importlib.import_module("numba")
    except ImportError as err:  # numba is a hard dependency; say what needs it
        raise ImportError("arviz_regen needs numba for its compiled kernels (`pip install numba`).") from err


class LazyDispatcher:
    """Proxy for ``numba.njit(*args, **kwargs)(py_func)``, built on first use.

    Calling it, reading a dispatcher attribute (``signatures``, ``py_func`` works without
    numba), or numba typing it (as a global or argument of compiled code) builds the real
    dispatcher; after that every call goes straight to it.
    """

    __slots__ = ("py_func", "_njit_args", "_njit_kwargs", "_dispatcher", "_called", "__dict__", "__weakref__")

    def __init__(self, py_func, njit_args=(), njit_kwargs=None):
        self.py_func = py_func
        self._njit_args = tuple(njit_args)
        self._njit_kwargs = dict(njit_kwargs or {})
        self._dispatcher = None
        self._called = False
        functools.update_wrapper(self, py_func)

    @property
    def dispatcher(self):
        """The real numba dispatcher (created on first access; compiled on first call)."""
        disp = self._dispatcher
        if disp is None:
            with _lock:
                if self._dispatcher is None:
                    numba = _import_numba()
                    self._dispatcher = numba.njit(*self._njit_args, **self._njit_kwargs)(self.py_func)
                disp = self._dispatcher
        return disp

    @property
    def is_loaded(self):
        """Whether the real dispatcher exists yet (numba imported for this function)."""
        return self._dispatcher is not None

    # numba's typeof() falls back to this attribute: makes the proxy usable inside njit code
    @property
    def _numba_type_(self):
        return self.dispatcher._numba_type_

    def __call__(self, *args, **kwargs):
        disp = self._dispatcher
        if disp is None:
            disp = self.dispatcher
        if not self._called:  # the first call compiles (or loads from disk): see gc_paused
            with gc_paused():
                out = disp(*args, **kwargs)
            self._called = True
            return out
        return disp(*args, **kwargs)

    def __getattr__(self, name):
        # only reached for names not found normally: forward to the dispatcher
        # (signatures, inspect_types, overloads, ...). Never for private/dunder lookups,
        # so copy/pickle probing does not build the dispatcher.
        if name.startswith("__") or name in LazyDispatcher.__slots__:
            raise AttributeError(name)
        return getattr(self.dispatcher, name)

    def __reduce__(self):
        # pickle by reference (module + qualified name), like a plain function or dispatcher
        return (_resolve, (self.py_func.__module__, self.py_func.__qualname__))

    def __repr__(self):
        state = "loaded" if self._dispatcher is not None else "not loaded"
        return f"<lazy numba.njit {self.py_func.__module__}.{self.py_func.__qualname__} ({state})>"


def _resolve(module, qualname):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def lazy_njit(*args, **kwargs):
    """Drop-in for ``numba.njit`` that defers importing numba to the first use.

    ``@lazy_njit``, ``@lazy_njit(cache=True)`` and ``@lazy_njit("f8(f8[:])", cache=True)`` all
    work; the arguments are passed to ``numba.njit`` unchanged.
    """
    if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], str):
        return LazyDispatcher(args[0])

    def decorate(func):
        return LazyDispatcher(func, args, kwargs)

    return decorate


class LazyModule:
    """Module proxy: ``import_module(name)`` on first attribute access."""

    def __init__(self, name):
        self.__dict__["_name"] = name
        self.__dict__["_module"] = None

    def _load(self):
        mod = self.__dict__["_module"]
        if mod is None:
            mod = importlib.import_module(self.__dict__["_name"])
            self.__dict__["_module"] = mod
        return mod

    def __getattr__(self, attr):
        return getattr(self._load(), attr)

    def __dir__(self):
        return dir(self._load())

    def __repr__(self):
        state = "loaded" if self.__dict__["_module"] is not None else "not loaded"
        return f"<lazy module {self.__dict__['_name']!r} ({state})>"


def lazy_import(name):
    """Return a stand-in for ``import name`` that imports the module on first attribute access."""
    return LazyModule(name)


#: ``from ._numba import scipy_stats as stats``: a one-line stand-in for ``from scipy import stats``
scipy_stats = lazy_import("scipy.stats")
