"""Compile a family's pytensor cluster log marginal into a numba dispatcher.

The family's :meth:`~pymc_partition.ConjugateFamily.log_marginal` graph stays the single source of
truth: it is compiled once per family (and statistics width) with pytensor's numba backend, and
the resulting numba dispatcher (``fn.vm.jit_fn``) is called from compiled code with no Python
dispatch per call: by the graph predictive form (:mod:`pymc_partition.predictive.graph`, one call
per candidate cluster) when a family has no specialised form, and to check a specialised form
against the graph (:func:`pymc_partition.predictive.check_form`).

Calling convention of the dispatcher (checked experimentally with pytensor 2.38): it takes the
function's inputs as arrays (here one C-contiguous float64 vector of summed statistics) and
returns a tuple of 0-d arrays, so a kernel reads ``lm(stats)[0].item()``.

Compiling the graph costs seconds (most of a first ``pm.sample`` in a fresh environment), and a
family with a specialised predictive form never calls it from
compiled code. Checking that form and computing the items' singleton log marginals use
:func:`reference_log_marginal` instead: the same graph run by pytensor's Python linker
(:func:`~pymc_partition._pytensor_modes.python_function`), which compiles nothing and
evaluates a batch of rows at numpy speed.
"""

from __future__ import annotations

import pickle
import threading

import numba
import numpy as np
import pytensor.tensor as pt

from .._pytensor_modes import compile_function, python_function
from ..predictive._types import LM_SIG, addresses, quiet_compile

__all__ = [
    "compile_log_marginal",
    "reference_log_marginal",
    "family_key",
    "compile_density",
    "scalar_code",
    "CompiledDensity",
    "structure_reference",
]

_CACHE: dict = {}
_LOCK = threading.Lock()


def family_key(family, n_stats):
    """Return a hashable key identifying a family's log marginal for a statistics width."""
    try:
        blob = pickle.dumps(family, protocol=4)
    except Exception:  # unpicklable family: fall back to identity
        blob = ("id", id(family))
    return (type(family).__module__, type(family).__qualname__, blob, int(n_stats))


def reference_log_marginal(family, n_stats):
    """``family.log_marginal`` of a batch of statistics rows, with nothing compiled.

    Parameters
    ----------
    family : ConjugateFamily
    n_stats : int
        Width of the statistics vector.

    Returns
    -------
    ReferenceLogMarginal
        ``f(stats)``: a float for one vector ``(n_stats,)``, an array for rows ``(m, n_stats)``.
        Cached per process for equal families, like :func:`compile_log_marginal`.
    """
    return _cached(("reference",) + family_key(family, n_stats),
                   lambda: ReferenceLogMarginal(family, n_stats))  # fmt: skip


def structure_reference(family, n_stats):
    """:func:`reference_log_marginal` with the family's hyperparameters as inputs of the graph.

    One graph per family structure (type, the hyperparameters' shapes, the rest of its state) serves
    every value of the hyperparameters: models of one structure on new data (whose numbers, e.g.
    ``from_data``'s, differ each time) build nothing. For random hyperparameters, whose values
    come from the reader's graph anyway; a family whose constructor derives quantities from its
    hyperparameters gets :func:`reference_log_marginal`.

    Returns
    -------
    callable
        ``f(stats)`` as :func:`reference_log_marginal`'s.
    """
    names = tuple(getattr(family, "_param_names", ()))
    if not names or getattr(family, "_derived_from_params", True) or not hasattr(family, "replace_params"):
        return reference_log_marginal(family, n_stats)
    values = [np.asarray(getattr(family, k), dtype=np.float64) for k in names]
    centre = getattr(getattr(family, "_centre_cell", None), "value", None)  # CentredLocation's, from the data
    if centre is not None:
        values.append(np.asarray(centre, dtype=np.float64))
    template = _with_inputs(family, names, [("hyperparameter", v.shape) for v in values])
    key = ("reference-structure",) + family_key(template, n_stats)
    if key[-2][0] == "id":  # unpicklable: no structure to share
        return reference_log_marginal(family, n_stats)
    shapes = [v.shape for v in values]
    reference = _cached(key, lambda: ReferenceLogMarginal(family, n_stats, inputs=(names, shapes)))
    return reference.at(values)


def _with_inputs(family, names, values):
    """Return a copy of ``family`` with hyperparameters ``names`` (then its centre, if it has one) set to ``values``."""
    new = family.replace_params(dict(zip(names, values)))
    if len(values) > len(names):
        from ..families.base import _Centre

        new._centre_cell = _Centre(values[len(names)])
    return new


def _cached(key, build):
    """``_CACHE[key]``, built by ``build()`` on first use (once, under the lock)."""
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            hit = _CACHE[key] = build()
    return hit


class ReferenceLogMarginal:
    """A family's log marginal run by pytensor's Python linker (:func:`reference_log_marginal`).

    With ``inputs = (names, shapes)``, those hyperparameters (and a centre, for one shape more) are
    inputs of the graph (:func:`structure_reference`): :meth:`at` gives the function at values of them.
    """

    batched = True  # takes rows (m, n_stats) in one call

    def __init__(self, family, n_stats, inputs=None):
        rows = pt.matrix("stats", dtype="float64")
        self._values = ()
        if inputs:
            names, shapes = inputs
            inputs = [pt.tensor(f"input_{k}", dtype="float64", shape=sh) for k, sh in enumerate(shapes)]
            family = _with_inputs(family, names, inputs)
        else:
            inputs = []
        out = pt.as_tensor_variable(family.log_marginal(rows))
        if out.ndim != 1:
            raise ValueError(
                f"{type(family).__name__}.log_marginal must map statistics rows (m, n_stats) to "
                f"m values, got a {out.ndim}-d result."
            )
        self.n_stats = int(n_stats)
        self.function = python_function([rows, *inputs], pt.cast(out, "float64"))

    def at(self, values):
        """Return this function at the hyperparameters ``values`` (in the order of ``params``)."""
        import copy

        bound = copy.copy(self)
        bound._values = tuple(np.asarray(v, dtype=np.float64) for v in values)
        return bound

    def __call__(self, stats):
        stats = np.asarray(stats, dtype=np.float64)
        if stats.shape[-1:] != (self.n_stats,) or stats.ndim > 2:
            raise ValueError(
                f"Expected statistics of shape (n_stats,) or (m, n_stats) with n_stats = "
                f"{self.n_stats}, got {stats.shape}."
            )
        out = np.asarray(self.function(np.atleast_2d(stats), *self._values), dtype=np.float64)
        return float(out[0]) if stats.ndim == 1 else out


def _build(family, n_stats):
    stats = pt.vector("stats", dtype="float64")
    out = pt.as_tensor_variable(family.log_marginal(stats))
    if out.ndim != 0:
        raise ValueError(
            f"{type(family).__name__}.log_marginal must map a statistics vector (n_stats,) to a "
            f"scalar, got a {out.ndim}-d result."
        )
    out = pt.cast(out, "float64")
    fn = compile_function([stats], out, on_unused_input="ignore")
    if len(fn.input_storage) != 1:
        raise NotImplementedError(
            f"{type(family).__name__}.log_marginal depends on shared variables; the compiled "
            "partition samplers only support families whose hyperparameters are constants."
        )
    jit_fn = fn.vm.jit_fn
    # check the calling convention once, on a harmless input
    try:
        res = jit_fn(np.ones(n_stats))
    except Exception:  # a probe outside the family's domain: nothing to check
        return fn, jit_fn
    if not (isinstance(res, tuple) and len(res) == 1 and np.ndim(res[0]) == 0):
        raise RuntimeError(
            "Unexpected calling convention of pytensor's numba backend: expected a 1-tuple of "
            f"0-d arrays, got {type(res).__name__}."
        )
    return fn, jit_fn


def compile_log_marginal(family, n_stats):
    """Numba dispatcher computing ``family.log_marginal`` of one statistics vector.

    Parameters
    ----------
    family : ConjugateFamily
    n_stats : int
        Width of the statistics vector.

    Returns
    -------
    CompiledLogMarginal
        ``.dispatcher`` is ``lm(stats: float64[::1]) -> float64``, compiled with the signature
        :data:`~pymc_partition.predictive._types.LM_SIG` so that compiled code calls it as a
        first-class function (one compiled kernel serves every family); ``.addresses`` is how the kernels receive it. It
        wraps pytensor's dispatcher ``fn.vm.jit_fn``, which returns a 1-tuple of 0-d arrays.
        Compiled once per process for equal families (cached by the family's pickled state).
    """

    def build():
        fn, jit_fn = _build(family, n_stats)
        return CompiledLogMarginal(fn, jit_fn, _wrap(jit_fn))

    return _cached(family_key(family, n_stats), build)


class CompiledLogMarginal:
    """A family's log marginal compiled for the kernels.

    Attributes
    ----------
    function : pytensor Function (NUMBA mode)
    jit_fn : numba dispatcher of pytensor's graph, returning a 1-tuple of 0-d arrays
    dispatcher : numba dispatcher ``lm(stats) -> float`` with signature ``LM_SIG``
    addresses : int64 array ``[cfunc wrapper address, jit address]`` of ``dispatcher``, the
        form the kernels take it in (valid in this process only; the objects above keep the
        compiled code alive, and the cache keeps them for the life of the process)
    """

    def __init__(self, function, jit_fn, dispatcher):
        self.function = function
        self.jit_fn = jit_fn
        self.dispatcher = dispatcher
        self.addresses = addresses(dispatcher, LM_SIG)

    def __call__(self, stats):
        return self.dispatcher(np.ascontiguousarray(stats, dtype=np.float64))

    def __reduce__(self):  # never ship addresses to another process: recompile there
        raise TypeError("CompiledLogMarginal is process-local; recompile it with compile_log_marginal.")


def _wrap(jit_fn):
    """Return a first-class numba function ``lm(stats) -> float`` around pytensor's dispatcher."""

    @numba.njit(LM_SIG, nogil=True)
    def lm(stats):
        return jit_fn(stats)[0].item()

    return lm


class CompiledDensity:
    """A log density ``f(theta, rest, S, sizes) -> float`` for the kernels.

    The signature is :data:`~.kernels.hyper.DENSITY_SIG`; it wraps a numba dispatcher with pytensor's calling convention
    (one 0-d array in a tuple, :func:`compile_density`). With ``clusters``, the dispatcher returns a second output, a
    vector ``h``, and the density adds ``clusters(h, S)`` (the clusters' log marginals by a predictive form's code).
    With ``scalar`` (:func:`scalar_code`), that function of the same graph is called instead, its first output a float.

    Attributes
    ----------
    jit_fn : the wrapped dispatcher (kept alive: the addresses point into it)
    clusters : numba dispatcher ``clusters(h, S) -> float`` or None
    scalar : numba dispatcher or None
    dispatcher : numba dispatcher with the signature ``DENSITY_SIG``
    addresses : int64 ``[cfunc wrapper address, jit address]`` (process-local)
    """

    def __init__(self, jit_fn, clusters=None, scalar=None):
        from .kernels.hyper import DENSITY_SIG

        self.jit_fn = jit_fn
        self.clusters = clusters
        self.scalar = scalar
        if scalar is not None and clusters is None:

            @numba.njit(DENSITY_SIG, nogil=True)
            def density(theta, rest, S, sizes):
                return scalar(theta, rest, S, sizes)[0]

        elif scalar is not None:

            @numba.njit(DENSITY_SIG, nogil=True)
            def density(theta, rest, S, sizes):
                out = scalar(theta, rest, S, sizes)
                return out[0] + clusters(out[1], S)

        elif clusters is None:

            @numba.njit(DENSITY_SIG, nogil=True)
            def density(theta, rest, S, sizes):
                return jit_fn(theta, rest, S, sizes)[0].item()

        else:  # the graph's second output: the hyperparameters ``clusters`` reads with the statistics

            @numba.njit(DENSITY_SIG, nogil=True)
            def density(theta, rest, S, sizes):
                out = jit_fn(theta, rest, S, sizes)
                return out[0].item() + clusters(out[1], S)

        self.dispatcher = density
        self.addresses = addresses(density, DENSITY_SIG)

    def __call__(self, theta, rest, S, sizes):
        as_f = lambda a, d: np.ascontiguousarray(a, dtype=np.float64).reshape((-1,) * d)  # noqa: E731
        S = np.ascontiguousarray(S, dtype=np.float64)
        return self.dispatcher(as_f(theta, 1), as_f(rest, 1), S.reshape(S.shape[0], -1),
                               np.ascontiguousarray(sizes, dtype=np.int64))  # fmt: skip

    def __reduce__(self):  # addresses are process-local
        raise TypeError("CompiledDensity is process-local; compile it again in this process.")


def compile_density(jit_fn, clusters=None, fgraph=None):
    """Wrap a numba dispatcher of a density as a :class:`CompiledDensity` the kernels call.

    The dispatcher is ``jit_fn(theta, rest, S, sizes) -> (0-d array,)`` (pytensor's numba backend, inputs in that
    order), or ``(0-d array, h)`` with ``clusters(h, S)`` to add; compiled once per dispatcher in a process (the
    cache keeps the dispatcher alive, so its id stays its own). ``fgraph``, the compiled function's graph: the
    density calls its :func:`scalar_code` when it has one.
    """

    def build():
        scalar = scalar_code(fgraph, 1 + (clusters is not None)) if fgraph is not None else None
        with quiet_compile():
            if scalar is not None:
                try:
                    return CompiledDensity(jit_fn, clusters, scalar)
                except Exception:  # noqa: BLE001 - code numba does not compile: PyTensor's function serves
                    pass
            return CompiledDensity(jit_fn, clusters)

    return _cached(("density", id(jit_fn), id(clusters)), build)


def scalar_code(fgraph, n_outputs):
    """Return a numba function of a compiled graph of scalars, without an array per node, or None.

    PyTensor 2's numba backend gives every node of a graph of scalars (an index into an input vector, a fused
    scalar expression, a vector of scalars) a 0-d array of its own: a hyperparameters' density of a dozen nodes
    costs 0.3 us an evaluation, three times its arithmetic, and the slice sampler evaluates it about ten times a
    draw. This is the same graph as straight-line code calling the same compiled scalar functions (the results are
    the graph's, bit for bit): ``f(*inputs)`` returns the outputs in a tuple, scalars as numbers. None when a node
    is of another kind (PyTensor 3 turns such graphs into scalar code itself), or the first output is not a float64
    scalar, or there are not ``n_outputs`` outputs.
    """
    from pytensor.compile.ops import DeepCopyOp
    from pytensor.graph.basic import Constant
    from pytensor.tensor.basic import MakeVector
    from pytensor.tensor.elemwise import Elemwise
    from pytensor.tensor.subtensor import Subtensor

    outputs = fgraph.outputs
    if len(outputs) != n_outputs or outputs[0].ndim != 0 or outputs[0].dtype != "float64":
        return None
    nodes = fgraph.toposort()

    def scalars(vs):
        return all(v.ndim == 0 for v in vs)

    def kind(node):
        op, ins, outs = node.op, node.inputs, node.outputs
        if (isinstance(op, Subtensor) and len(ins) == 2 and ins[0] in fgraph.inputs and ins[0].ndim == 1
                and isinstance(ins[1], Constant) and scalars(outs)):  # fmt: skip
            return "index"
        if isinstance(op, Elemwise) and scalars(ins + outs) and not any(v in fgraph.inputs for v in ins):
            return "scalar"
        if isinstance(op, MakeVector) and scalars(ins):
            return "vector"
        if isinstance(op, DeepCopyOp):
            return "copy"
        return None

    kinds = [kind(node) for node in nodes]
    if None in kinds:
        return None
    try:
        return _scalar_source(fgraph, nodes, kinds)
    except Exception:  # noqa: BLE001 - an op whose scalar code numba cannot take: PyTensor's function serves
        return None


def _scalar_source(fgraph, nodes, kinds):
    """Compile the straight-line code of :func:`scalar_code` for ``nodes`` of ``kinds``."""
    from pytensor.graph.basic import Constant
    from pytensor.link.numba.dispatch.basic import numba_funcify
    from pytensor.scalar import get_scalar_type

    env = {"np": np}
    names = {v: f"x{i}" for i, v in enumerate(fgraph.inputs)}

    def ref(v, label):
        if v not in names:
            if not (isinstance(v, Constant) and v.ndim == 0):
                raise NotImplementedError(v)
            names[v] = label
            env[label] = np.asarray(v.data)[()]  # a numpy scalar of the constant's dtype: a literal to numba
        return names[v]

    lines = []
    for k, (node, how) in enumerate(zip(nodes, kinds)):
        ins, outs = node.inputs, node.outputs
        args = [ref(v, f"c{k}_{j}") for j, v in enumerate(ins)] if how != "index" else []
        if how == "index":
            rhs = f"{names[ins[0]]}[{int(ins[1].data)}]"
        elif how == "scalar":
            scalar_node = node.op.scalar_op.make_node(*[get_scalar_type(dtype=v.dtype)() for v in ins])
            env[f"f{k}"] = numba_funcify(node.op.scalar_op, node=scalar_node)
            rhs = f"f{k}({', '.join(args)})"
        elif how == "vector":
            env[f"d{k}"] = np.dtype(outs[0].dtype)
            rhs = f"np.array([{', '.join(args)}], dtype=d{k})"
        else:
            rhs = args[0]
        targets = [f"v{k}_{j}" for j in range(len(outs))]
        lines.append(f"    {', '.join(targets)}{',' if len(outs) > 1 else ''} = {rhs}")
        names.update(zip(outs, targets))
    inputs = ", ".join(names[v] for v in fgraph.inputs)
    results = "".join(f"{ref(o, f'r{j}')}, " for j, o in enumerate(fgraph.outputs))
    source = f"def scalar_code({inputs}):\n" + "\n".join(lines) + f"\n    return ({results})\n"
    exec(compile(source, "<scalar_code>", "exec"), env)
    return numba.njit(nogil=True)(env["scalar_code"])
