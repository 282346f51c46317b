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
from numba.core import errors, ir, types
from numba.core.compiler import CompilerBase
from numba.core.compiler_machinery import AnalysisPass, PassManager, register_pass
from numba.core.typed_passes import (
    AnnotateTypes,
    IRLegalization,
    NativeLowering,
    NoPythonBackend,
    NoPythonSupportedFeatureValidation,
    NopythonTypeInference,
)
from numba.core.untyped_passes import FixupArgs, IRProcessing, TranslateByteCode

from .lazy_jit import gc_paused

__all__ = ["Compiler", "INNER", "compile_cfunc"]


def _same_kind(given, named):
    """Whether a value of type ``given`` keeps its value in a name typed ``named``."""
    given, named = types.unliteral(given), types.unliteral(named)
    if given == named:
        return True
    if isinstance(given, types.Integer) and isinstance(named, types.Integer):
        return given.signed == named.signed and given.bitwidth <= named.bitwidth
    return False


@register_pass(mutates_CFG=False, analysis_only=True)
class OneTypePerName(AnalysisPass):
    """Refuse a name given values of different kinds (an integer and a float, say).

    Without SSA numba types a name by unifying everything assigned to it: a loop index
    later reused for a running float sum would become a float silently. Here it is a
    ``TypingError`` at the assignment. Integers widening to a wider integer of the same
    signedness keep their values and pass.
    """

    _name = "one_type_per_name"

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        """Check every assignment to a named variable against the variable's type."""
        typemap, calltypes = state.typemap, state.calltypes
        for block in state.func_ir.blocks.values():
            for stmt in block.body:
                if not isinstance(stmt, ir.Assign) or stmt.target.name.startswith("$"):
                    continue
                value, given = stmt.value, None
                if isinstance(value, ir.Var):
                    given = typemap.get(value.name)
                elif isinstance(value, ir.Arg):
                    given = state.args[value.index]
                elif isinstance(value, (ir.Const, ir.Global, ir.FreeVar)):
                    try:
                        given = state.typingctx.resolve_value_type(value.value)
                    except ValueError:  # typed some other way by type inference: nothing to compare
                        given = None
                elif isinstance(value, ir.Expr) and value in calltypes:
                    given = calltypes[value].return_type
                named = typemap[stmt.target.name]
                if given is not None and not _same_kind(given, named):
                    raise errors.TypingError(
                        f"{stmt.target.name!r} is given a {given} but typed {named}: pointer kernels compile "
                        "without SSA, so a name must hold one kind of value (use another name)",
                        loc=stmt.loc,
                    )
        return False


class Compiler(CompilerBase):
    """numba's nopython pipeline with only the passes scalar and pointer kernels need.

    Pass it as ``pipeline_class`` to ``numba.cfunc`` or ``numba.njit``. A construct the
    dropped passes would have handled (a closure, ``literal_unroll``) fails to compile with a
    numba error rather than compiling differently. There is no SSA form: each name has one
    type, the unification of everything assigned to it, and :class:`OneTypePerName` refuses
    a name given values of different kinds.
    """

    def define_pipelines(self):
        """Return the one pipeline: bytecode to IR, type inference, lowering."""
        pm = PassManager("pointer_kernel")
        pm.add_pass(TranslateByteCode, "analyzing bytecode")
        pm.add_pass(FixupArgs, "fix up args")
        pm.add_pass(IRProcessing, "processing IR")
        pm.add_pass(NopythonTypeInference, "nopython frontend")
        pm.add_pass(OneTypePerName, "one kind of value per name")
        pm.add_pass(NoPythonSupportedFeatureValidation, "ensure features that are in use are in a valid form")
        pm.add_pass(IRLegalization, "ensure IR is legal prior to lowering")
        pm.add_pass(AnnotateTypes, "annotate types")
        pm.add_pass(NativeLowering, "native lowering")
        pm.add_pass(NoPythonBackend, "nopython mode backend")
        pm.finalize()
        return [pm]


#: ``numba.njit(**INNER)``: a kernel called only from compiled code. No Python or C entry points
#: to build, no reference counting (it allocates nothing), and no disk cache of its own: it is
#: compiled into its callers, whose cached machine code holds it
INNER = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True, "_nrt": False, "pipeline_class": Compiler}


def compile_cfunc(signature, func):
    """Return ``numba.cfunc(signature)(func)`` through :class:`Compiler`, cached on disk, without reference counting."""
    with gc_paused():
        return numba.cfunc(signature, cache=True, _nrt=False, pipeline_class=Compiler)(func)
