"""The compile pipeline of the pointer-style kernels (:mod:`arviz_regen.base.kernel_compiler`) and ``gc_paused``.

- a kernel compiled through the shortened pipeline computes what numba's default pipeline
  compiles (loops, branches, a name rebound to another type, a call to an inner kernel);
- a construct that needs a pass it leaves out (a closure, ``literal_unroll``) is refused with
  a numba error, never compiled differently, and so is a name given an integer and a float
  (without SSA numba would type it as a float silently);
- ``gc_paused`` pauses the cyclic collector for its block, nested or not, and restores the
  state it found, also when the block raises; a lazily jitted kernel's first call runs with it.
"""

import gc

import numba
import numpy as np
import pytest
from numba import literal_unroll, types

from arviz_regen.base.addresses import describe, float64_at, int64_at
from arviz_regen.base.kernel_compiler import INNER, Compiler, compile_cfunc
from arviz_regen.base.lazy_jit import gc_paused, lazy_njit

SIG = types.float64(types.int64, types.int64)


def _scale(x, k):
    return 2.0 * x + k


def _kernel(meta, n):
    m = int64_at(meta)
    lab = int64_at(m[0])
    val = float64_at(m[4])
    best = -1  # an int, then an array entry
    best_s = np.inf
    total = 0.0
    for i in range(n):
        if lab[i] < 0:
            continue
        s = _inner(val[i], lab[i])
        total += s
        if s < best_s:
            best_s = s
            best = lab[i]
    j = 0
    while j < n and val[j] > 0.0:
        j += 1
    return total + 1000.0 * best + 0.5 * j


_inner = numba.njit(**INNER)(_scale)


def test_the_shortened_pipeline_computes_what_the_default_one_does():
    ours = numba.cfunc(SIG, _nrt=False, pipeline_class=Compiler)(_kernel)
    default = numba.cfunc(SIG, _nrt=False)(_kernel)
    rng = np.random.default_rng(4)
    for n in (0, 1, 7, 50):
        lab = rng.integers(-1, 5, n).astype(np.int64)
        val = rng.normal(size=n)
        meta = describe((lab, val), (("lab", np.int64, 1), ("val", np.float64, 1)))
        got = ours.ctypes(meta.ctypes.data, n)
        assert got == default.ctypes(meta.ctypes.data, n)
        keep = lab >= 0
        s = 2.0 * val[keep] + lab[keep]
        best = lab[keep][np.argmin(s)] if keep.any() else -1
        stop = int(np.argmax(val <= 0.0)) if (val <= 0.0).any() else n
        assert got == pytest.approx(s.sum() + 1000.0 * best + 0.5 * stop)


def _closure(x):
    def add(y):
        return y + x

    return add(2)


def _unrolled(x):
    s = 0.0
    for v in literal_unroll((1, 2.0)):
        s += v * x
    return s


@pytest.mark.parametrize("func", [_closure, _unrolled])
def test_what_needs_a_left_out_pass_is_refused(func):
    with pytest.raises(numba.core.errors.NumbaError):
        numba.cfunc(types.float64(types.int64), pipeline_class=Compiler)(func)


def _int_then_float(x):
    s = 0
    for _ in range(x):
        s = s + 0.5
    return s


def _signed_then_unsigned(x):
    z = x + 1
    for _ in range(3):
        z = np.uint64(z) * np.uint64(3)
    return z


@pytest.mark.parametrize("func, name", [(_int_then_float, "'s'"), (_signed_then_unsigned, "'z'")])
def test_a_name_given_two_kinds_of_value_is_refused(func, name):
    with pytest.raises(numba.core.errors.TypingError, match=name + " is given a .* but typed"):
        numba.cfunc(types.float64(types.int64), pipeline_class=Compiler)(func)


def test_compile_cfunc_gives_a_callable_callback_and_leaves_the_collector_on():
    assert gc.isenabled()
    op = compile_cfunc(types.int64(types.int64, types.int64), lambda a, b: a * b + 1)
    assert op.ctypes(6, 7) == 43
    assert gc.isenabled()


def test_gc_paused_nests_and_restores_the_state_it_found():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("in the block")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # was off: stays off
    finally:
        gc.enable()


def test_a_lazy_kernels_first_call_runs_with_the_collector_paused():
    seen = []

    @lazy_njit
    def twice(x):
        return 2 * x

    real = twice.dispatcher

    class Spy:
        def __call__(self, *args):
            seen.append(gc.isenabled())
            return real(*args)

    twice._dispatcher = Spy()
    assert (twice(3), twice(4)) == (6, 8)
    assert seen == [False, True] and gc.isenabled()


def test_a_numba_without_the_pass_classes_gets_the_default_pipeline(monkeypatch):
    import importlib
    import sys

    import arviz_regen.base.kernel_compiler as kc

    monkeypatch.setitem(sys.modules, "arviz_regen.base._kernel_pipeline", None)  # its import now fails
    try:
        fallback = importlib.reload(kc)
        assert fallback.Compiler is None and "pipeline_class" not in fallback.INNER
        inner = numba.njit(**fallback.INNER)(_scale)

        def outer(x, k):
            return inner(x, k) + 1.0

        assert fallback.compile_cfunc(SIG, outer).ctypes(3, 2) == 9.0
    finally:
        monkeypatch.undo()
        importlib.reload(kc)
    assert kc.Compiler is Compiler
