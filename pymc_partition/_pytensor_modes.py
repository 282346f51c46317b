"""The pytensor mode of the package's numba-compiled graphs (and why it is not plain ``"NUMBA"``).

The empirical-Bayes objective and the families' cluster log marginals (the samplers' kernels) are
compiled with pytensor's numba backend, which never links pytensor's C BLAS. Yet compiling them
in plain ``mode="NUMBA"`` printed, on every pip-installed machine, "PyTensor could not link to a
BLAS installation ... severely degraded": the rewrite ``local_usmm`` (sparse matrices only) runs in
every mode, and its pattern constraint reads ``config.blas__ldflags``, whose first access searches
the system for a C BLAS and warns when none is found. Excluding that rewrite, which cannot apply
to these dense graphs, keeps the numba compilations from starting the search; the warning then
appears only when a C-backend graph really asks for BLAS, which is when it is true. Nothing is
silenced: pytensor's detection and its warning are left as they are.

PyTensor 3.3 registers ``local_usmm`` only when ``pytensor.sparse`` is imported (lazily): excluding
the name before that import leaves an empty entry in the rewrite database, and the later import
then fails ("The tag ... is already present"), which surfaced as "Rewrite failure" errors in the
log and broken sparse graphs. So the sparse module is imported first, where it exists.
"""

from __future__ import annotations

import functools

__all__ = ["numba_mode", "compile_function"]


@functools.lru_cache(maxsize=1)
def numba_mode():
    """``get_mode("NUMBA")`` without the sparse ``local_usmm`` rewrite (see the module docstring)."""
    import importlib

    from pytensor.compile.mode import get_mode

    try:  # registers `local_usmm` before it is excluded (PyTensor 3.3 imports it lazily)
        importlib.import_module("pytensor.sparse")
    except ImportError:  # scipy.sparse missing: then nothing registers the rewrite either
        pass
    return get_mode("NUMBA").excluding("local_usmm")


def compile_function(inputs, outputs, mode=None, **kwargs):
    """``pytensor.function`` in :func:`numba_mode` (or ``mode``), its generated source written
    outside the system temp directory (:mod:`._pytensor_sources`)."""
    import pytensor

    from ._pytensor_sources import generated_source_dir

    with generated_source_dir():
        return pytensor.function(inputs, outputs, mode=numba_mode() if mode is None else mode, **kwargs)
