"""Compiled densities of the hyperparameters (pymc_partition.engine.compile): the scalar code of a graph of scalars."""

from __future__ import annotations

import numba
import numpy as np
import pytensor
import pytensor.tensor as pt

from pymc_partition._pytensor_modes import numba_mode
from pymc_partition.engine.compile import compile_density, scalar_code

_PYTENSOR_2 = pytensor.__version__.startswith("2.")


def _function(outputs):
    theta, rest, S, sizes = pt.dvector("theta"), pt.dvector("rest"), pt.dmatrix("S"), pt.lvector("sizes")
    outs = outputs(theta, rest, S, sizes)
    return pytensor.function([theta, rest, S, sizes], outs, mode=numba_mode(), on_unused_input="ignore")


def _scalars(theta, rest, S, sizes):
    # a density's shape: priors' terms in theta's entries (switches, casts, transforms), the hyperparameters a
    # predictive form reads as one vector
    s, p = pt.exp(theta[0]), pt.sigmoid(theta[1])
    lp = pt.switch(s >= 0, -0.5 * (s / rest[0]) ** 2 + theta[0], -np.inf) + rest[1] * pt.log1p(-p) + pt.log(p)
    return [pt.cast(lp, "float64"), pt.stack([s, p])]


@numba.njit
def _clusters(h, S):
    return h[0] * S.sum() - h[1]


def test_scalar_code_is_the_graph_bit_for_bit():
    fn = _function(_scalars)
    code = scalar_code(fn.maker.fgraph, 2)
    if not _PYTENSOR_2:  # PyTensor 3 compiles graphs of scalars to scalar code itself
        return
    assert code is not None
    rng = np.random.default_rng(0)
    S, sizes = np.ones((3, 2)), np.ones(3, np.int64)
    density = compile_density(fn.vm.jit_fn, _clusters, fn.maker.fgraph)
    assert density.scalar is not None
    for _ in range(200):
        theta, rest = rng.normal(scale=3.0, size=2), np.abs(rng.normal(size=2)) + 0.1
        want = fn.vm.jit_fn(theta, rest, S, sizes)
        got = code(theta, rest, S, sizes)
        assert float(want[0]) == got[0] and np.array_equal(want[1], got[1])
        assert density.dispatcher(theta, rest, S, sizes) == float(want[0]) + _clusters(want[1], S)


def test_scalar_code_refuses_other_graphs():
    """A node over arrays (the likelihood's sum over clusters), or outputs of another layout: no scalar code."""
    fn = _function(lambda theta, rest, S, sizes: [pt.cast(pt.sum(S) * theta[0], "float64")])
    assert scalar_code(fn.maker.fgraph, 1) is None
    assert scalar_code(_function(_scalars).maker.fgraph, 1) is None  # two outputs, one expected
    density = compile_density(fn.vm.jit_fn, None, fn.maker.fgraph)
    assert density.scalar is None
    theta, S = np.array([0.5]), np.ones((2, 2))
    assert density.dispatcher(theta, np.zeros(0), S, np.ones(2, np.int64)) == 2.0
