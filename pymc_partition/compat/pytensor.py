"""PyTensor: where it writes the source it generates, and a hook run when it compiles for numba.

Generated source (:func:`generated_source_dir`), not in the system temporary directory.

PyTensor writes the source of every function it generates for its numba backend (and, on
PyTensor 2, for several C-backend helpers) to a file, and keeps the file after compiling: its name
goes into the code object (tracebacks, numba read it back). By default each file is a new
``tempfile.NamedTemporaryFile`` in the system temporary directory, never removed: a run of the
main job left about 40 there. :func:`generated_source_dir` sends them to a folder of PyTensor's
compile directory instead, for the graphs this package compiles and for the whole main job:

- PyTensor >= 3.3 has the setting for it, ``config.generated_src_dir`` (files named by their
  content, so the folder holds one file per distinct function, and PyTensor prunes those unused
  for a week). It is set for the duration of the block unless the user set it.
- Older PyTensor has no setting: the two functions that write the files take the folder through
  their module's ``NamedTemporaryFile`` for the duration of the block. Those files are named at
  random, so the ones this process wrote are removed when it exits, and files left in the folder
  by processes that could not (killed, or worker processes that exit without ``atexit``) are
  removed once they are a week old.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import threading
import time
from pathlib import Path

__all__ = ["generated_source_dir", "source_folder", "needs_tempfile_redirect", "on_numba_compile"]

#: Files of older PyTensor in the folder older than this were left by an ended process
_STALE_SECONDS = 7 * 24 * 3600
#: Modules of older PyTensor that write generated source through ``NamedTemporaryFile``
_WRITERS = ("pytensor.link.utils", "pytensor.link.numba.cache")
_PREFIX = "pmp_src_"

_lock = threading.RLock()
_depth = 0
_written = []  # files written by this process (older PyTensor), removed at exit
_saved = {}


@functools.lru_cache(maxsize=1)
def source_folder():
    """Return the folder: ``generated_src`` in PyTensor's compile directory (created)."""
    from pytensor import config

    folder = Path(config.compiledir) / "generated_src"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _has_setting():
    from pytensor import config

    try:
        config.generated_src_dir  # noqa: B018 - PyTensor >= 3.3
    except AttributeError:
        return False
    return True


def _remove_written():
    for name in _written:
        with contextlib.suppress(OSError):
            os.unlink(name)
    _written.clear()


@functools.lru_cache(maxsize=1)
def _start_older_pytensor():
    """Once per process: remove stale files of ended processes, register the exit clean-up."""
    cutoff = time.time() - _STALE_SECONDS
    for entry in source_folder().glob(f"{_PREFIX}*"):
        with contextlib.suppress(OSError):
            if entry.stat().st_mtime < cutoff:
                entry.unlink()
    atexit.register(_remove_written)


def _redirected(real):
    folder = str(source_folder())

    def named_temporary_file(*args, **kwargs):
        if kwargs.get("dir") is None and len(args) < 5:  # (mode, buffering, encoding, newline, suffix)
            kwargs["dir"] = folder
            kwargs.setdefault("prefix", _PREFIX)
            # PyTensor 2's module cache removes empty folders of its compile directory (this one
            # is empty when earlier processes removed their files at exit): made again if so
            os.makedirs(folder, exist_ok=True)
        f = real(*args, **kwargs)
        if kwargs.get("dir") == folder and not kwargs.get("delete", True):
            _written.append(f.name)
        return f

    return named_temporary_file


@contextlib.contextmanager
def generated_source_dir():
    """Inside the block, PyTensor writes generated source to :func:`source_folder` (re-entrant)."""
    global _depth
    from pytensor import config

    if _has_setting():
        if config.generated_src_dir:  # the user's choice
            yield
            return
        with config.change_flags(generated_src_dir=str(source_folder())):
            yield
        return
    import importlib

    with _lock:
        if _depth == 0:
            _start_older_pytensor()
            for name in _WRITERS:
                module = importlib.import_module(name)
                real = getattr(module, "NamedTemporaryFile", None)
                if real is not None:
                    _saved[name] = real
                    module.NamedTemporaryFile = _redirected(real)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for name, real in _saved.items():
                    importlib.import_module(name).NamedTemporaryFile = real
                _saved.clear()


def needs_tempfile_redirect():
    """Whether the installed PyTensor lacks ``config.generated_src_dir`` (PyTensor < 3.3).

    Then :func:`generated_source_dir` redirects ``NamedTemporaryFile`` in :data:`_WRITERS`.
    """
    return not _has_setting()


def on_numba_compile(name, callback):
    """Call ``callback()`` whenever PyTensor rewrites a graph for its numba linker (idempotent).

    Why a hook: registering numba implementations of Ops (``numba_core_rv_funcify``) needs
    PyTensor's numba dispatch, whose import takes seconds; a graph compiled for numba runs the
    ``"numba"`` rewrite set first, so a rewrite there registers them just in time, and changes
    nothing in the graph. PyTensor 2.38 and 3.x have ``optdb`` and that tag
    (``tests/pymc_partition/compat/test_pytensor.py`` fails when that changes).
    """
    from pytensor.compile import optdb
    from pytensor.graph import node_rewriter
    from pytensor.graph.rewriting.basic import dfs_rewriter
    from pytensor.tensor.random.op import RandomVariable

    if name in optdb:
        return

    @node_rewriter([RandomVariable])
    def run_callback(fgraph, node):
        callback()
        return None

    run_callback.__name__ = name
    optdb.register(name, dfs_rewriter(run_callback), "numba", position=99)  # any position before the linker
