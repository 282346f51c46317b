"""The Python-linker functions used where compiling costs more than it saves."""

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.op import HasInnerGraph

from pymc_partition._pytensor_modes import python_function


def test_python_function_inlines_inner_graphs_and_matches_numpy():
    """``pt.logaddexp`` and its gradient are OpFromGraph nodes on PyTensor 3: left in, their
    inner functions would be compiled with the C backend. They are inlined, and the values are
    numpy's to rounding."""
    x, y = pt.dvector("x"), pt.dvector("y")
    out = pt.sum(pt.logaddexp(x, y) * pt.sigmoid(x))
    fn = python_function([x, y], [out, pytensor.gradient.grad(out, x)])
    assert not [n for n in fn.maker.fgraph.toposort() if isinstance(n.op, HasInnerGraph)]
    assert "py" in type(fn.maker.linker).__name__.lower() or "perform" in type(fn.maker.linker).__name__.lower()

    a, b = np.array([-30.0, -1.0, 0.5, 30.0]), np.array([-29.0, 2.0, 0.5, -40.0])
    val, grad = fn(a, b)
    sig = 1.0 / (1.0 + np.exp(-a))
    lae = np.logaddexp(a, b)
    np.testing.assert_allclose(val, np.sum(lae * sig), rtol=1e-13)
    want = np.exp(a - lae) * sig + lae * sig * (1.0 - sig)
    np.testing.assert_allclose(grad, want, rtol=1e-12)
