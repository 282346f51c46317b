"""The shortened numba pipeline of :mod:`arviz_regen.base.kernel_compiler`, on numba's pass classes.

These classes are not numba's public API: :mod:`~arviz_regen.base.kernel_compiler` imports this
module in a ``try`` and uses numba's default pipeline when the import fails.
"""

from __future__ import annotations

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

__all__ = ["Compiler", "OneTypePerName"]


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
