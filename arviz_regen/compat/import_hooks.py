"""Run a function once a module has been imported, now or whenever it is (a post-import hook).

``import arviz_regen`` registers ``az.hotelling_rs`` on ArviZ and the ``.regen`` accessors on
xarray. Importing ArviZ and xarray for that took 3-10 s, which every use paid, even
``arviz-regen-summary --fail-below 2`` before refusing its argument. :func:`when_imported` lets
the package register without importing them: at once if the module is loaded, else right after
its import, wherever that happens. It wraps the module's loader for that one import (the module,
its spec and everything else are the real ones) and then steps aside.
"""

from __future__ import annotations

import sys
import threading
import warnings

__all__ = ["when_imported"]

_lock = threading.Lock()


class _Loader:
    """The module's own loader, calling ``callbacks(module)`` after it has executed the module."""

    def __init__(self, loader, callbacks):
        self._loader = loader
        self._callbacks = callbacks

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self._loader
        for callback in self._callbacks:
            try:
                callback(module)
            except Exception as err:  # noqa: BLE001 - the user's import must not fail for us
                warnings.warn(f"{callback.__module__}.{callback.__name__} failed after importing "
                              f"{module.__name__}: {type(err).__name__}: {err}", RuntimeWarning,
                              stacklevel=2)  # fmt: skip

    def __getattr__(self, name):  # resource readers, get_source, ...: the module's loader's
        return getattr(self._loader, name)


class _Finder:
    """Finds nothing itself: wraps the loader of the specs other finders return for watched names."""

    def __init__(self):
        self.callbacks = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.callbacks:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec  # a namespace package or an old-style loader: nothing to wrap
        with _lock:
            callbacks = self.callbacks.pop(fullname, [])
        if callbacks:
            spec.loader = _Loader(spec.loader, callbacks)
        return spec


_finder = _Finder()


def when_imported(name, callback):
    """Call ``callback(module)`` when the top-level module ``name`` is imported (now if it is).

    Nothing happens if the module cannot be imported (``sys.modules[name] = None``, missing).
    """
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    if name in sys.modules:  # set to None: made unimportable on purpose
        return
    with _lock:
        _finder.callbacks.setdefault(name, []).append(callback)
        if _finder not in sys.meta_path:
            sys.meta_path.insert(0, _finder)
