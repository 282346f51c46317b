"""How the pointer-style kernels are compiled: numba's nopython pipeline less the passes they never need.

The kernels of the SALSO search (:mod:`arviz_regen.base.salso_ops`) and the scan of the cluster
tracks (:mod:`arviz_regen.base.track_scan`) are C callbacks on scalars and plain pointers
(:mod:`arviz_regen.base.addresses`): no closures, ``with`` blocks, literal unrolling, inlined
overloads, array expressions or ``raise``. A first call in a fresh environment (no numba disk
cache) compiles them, and about half of that is numba's own Python-side passes, each walking the
kernel's IR. :class:`Compiler` runs only the passes such code needs (bytecode to IR, type
inference, legalisation, lowering). The others (closure inlining, rewrites, dead-branch pruning,
literal handling, inlining of ``inline="always"`` functions) find nothing to do in them; SSA
form, which keeps apart values of different types given to one name, is replaced by a check
that each name holds one kind of value (:class:`OneTypePerName`). LLVM optimises the lowered
code as before.

:func:`compile_cfunc` also pauses Python's cyclic garbage collector while numba compiles
(:func:`arviz_regen.base.lazy_jit.gc_paused`): the compiler allocates millions of short-lived
objects, and each collection they trigger walks every object of the process.

Importing this module imports numba: only the compiled paths import it, on their first use.
"""

from __future__ import annotations

import numba

from .lazy_jit import gc_paused

try:  # numba's pass classes are not public API: a numba that moves them gets its default pipeline
    from ._kernel_pipeline import Compiler, OneTypePerName
except ImportError:  # pragma: no cover - depends on the installed numba
    Compiler = OneTypePerName = None


__all__ = ["Compiler", "INNER", "compile_cfunc"]


#: ``numba.njit(**INNER)``: a kernel called only from compiled code. No Python or C entry points
#: to build, no reference counting (it allocates nothing), and no disk cache of its own: it is
#: compiled into its callers, whose cached machine code holds it
INNER = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True, "_nrt": False}
if Compiler is not None:
    INNER["pipeline_class"] = Compiler


def compile_cfunc(signature, func):
    """Return ``numba.cfunc(signature)(func)``, cached on disk, without reference counting.

    It compiles through :class:`Compiler`, or numba's default pipeline when this numba does not
    have the pass classes :class:`Compiler` is built of (the same machine code, compiled slower).
    """
    options = {} if Compiler is None else {"pipeline_class": Compiler}
    with gc_paused():
        return numba.cfunc(signature, cache=True, _nrt=False, **options)(func)
