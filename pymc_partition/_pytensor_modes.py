"""The pytensor mode of the package's numba-compiled graphs (and why it is not plain ``"NUMBA"``).

The families' cluster log marginals (the samplers' kernels) are compiled with pytensor's numba
backend, which never links pytensor's C BLAS. Yet compiling them
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

Graphs evaluated a few hundred times at most (the empirical-Bayes objective, a family's log
marginal when a sampler checks its predictive form) are not worth seconds of compilation in a
fresh environment: :func:`python_function` runs them with pytensor's Python linker, numpy op by
op, after the usual rewrites (stabilisation included; fusion, whose Python implementation is
slow, left out). Ops with an inner graph (``OpFromGraph``: ``pt.logaddexp`` and its gradient on
PyTensor 3) would still compile that inner graph with the C backend (seconds per graph, and a C
compiler needed), so they are inlined first.
"""

from __future__ import annotations

import functools

__all__ = ["numba_mode", "compile_function", "python_function", "untraced"]


@functools.lru_cache(maxsize=1)
def numba_mode():
    """``get_mode("NUMBA")`` without the sparse ``local_usmm`` rewrite (see the module docstring)."""
    from pytensor.compile.mode import get_mode

    _register_sparse_rewrites()
    return get_mode("NUMBA").excluding("local_usmm")


def _register_sparse_rewrites():
    """Import ``pytensor.sparse``, which registers ``local_usmm``, before it is excluded.

    PyTensor 3.3 imports it lazily; see the module docstring.
    """
    import importlib

    try:
        importlib.import_module("pytensor.sparse")
    except ImportError:  # scipy.sparse missing: then nothing registers the rewrite either
        pass


def untraced():
    """Return a context in which new PyTensor nodes keep no creation stack (``tag.trace``).

    PyTensor walks the Python stack for every node it creates (about a fifth of building a
    graph); the steps' internal graphs, never shown to a user, skip it.
    """
    import pytensor

    return pytensor.config.change_flags(traceback__limit=0)


def compile_function(inputs, outputs, mode=None, **kwargs):
    """Compile a ``pytensor.function`` in :func:`numba_mode` (or ``mode``).

    Its generated source is written outside the system temp directory (:mod:`.compat.pytensor`).
    """
    import pytensor

    from .compat.pytensor import generated_source_dir

    with generated_source_dir():
        return pytensor.function(inputs, outputs, mode=numba_mode() if mode is None else mode, **kwargs)


def python_function(inputs, outputs):
    """``pytensor.function(inputs, outputs)`` run by the Python linker: nothing is compiled.

    ``OpFromGraph`` nodes are inlined first (their inner functions would be compiled with the C
    backend otherwise). The graph of ``outputs`` is rewritten in place: build it for this call.
    Elementwise products and sums of more than two arrays are evaluated pairwise: PyTensor 2's
    Python linker evaluates them element by element in Python (``np.frompyfunc``), about 10 us
    an element.
    """
    import pytensor
    from pytensor.compile.mode import Mode

    outputs = _inline_op_from_graphs(list(inputs), outputs)
    _register_sparse_rewrites()
    # `local_usmm` searches for a C BLAS and warns (see the module docstring)
    mode = Mode(linker="py", optimizer="fast_run").excluding("fusion", "inplace", "local_usmm")
    mode = mode.register((_pairwise_elemwise(), 100))  # after every other rewrite
    return pytensor.function(inputs, outputs, mode=mode, on_unused_input="ignore")


@functools.lru_cache(maxsize=1)
def _pairwise_elemwise():
    """Return a rewrite of n-ary elementwise ops into chains of binary ones.

    Those that numpy has as binary ufuncs (``add``, ``mul``).
    """
    from pytensor.graph.rewriting.basic import in2out, node_rewriter
    from pytensor.tensor.elemwise import Elemwise

    @node_rewriter([Elemwise])
    def pairwise(fgraph, node):
        spec = getattr(node.op.scalar_op, "nfunc_spec", None)
        if spec is None or spec[1] != 2 or len(node.inputs) <= 2 or len(node.outputs) != 1:
            return None
        out = node.inputs[0]
        for x in node.inputs[1:]:
            out = node.op(out, x)
        if out.type != node.outputs[0].type:  # a broadcast pattern or dtype the chain changed
            return None
        return [out]

    return in2out(pairwise, name="pairwise_elemwise")


def _inline_op_from_graphs(inputs, outputs):
    """Return ``outputs`` with every ``OpFromGraph`` node replaced by its inner graph (nested too)."""
    from pytensor.compile.builders import OpFromGraph
    from pytensor.graph.fg import FunctionGraph

    try:  # PyTensor 3: inner graphs are frozen, bound to new inputs by this helper
        from pytensor.compile.rewriting import inline_ofg_node
    except ImportError:  # PyTensor 2
        from pytensor.graph.replace import clone_replace

        def inline_ofg_node(node):
            op = node.op
            return clone_replace(op.inner_outputs, replace=dict(zip(op.inner_inputs, node.inputs)))

    single = not isinstance(outputs, (list, tuple))
    fg = FunctionGraph(inputs, [outputs] if single else list(outputs), clone=False)
    while True:
        node = next((n for n in fg.toposort() if isinstance(n.op, OpFromGraph)), None)
        if node is None:
            break
        fg.replace_all(list(zip(node.outputs, inline_ofg_node(node))), import_missing=True)
    out = list(fg.outputs)
    return out[0] if single else out
