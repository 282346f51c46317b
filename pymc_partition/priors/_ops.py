"""One formula, two backends: the array functions the prior tables are written with.

A prior's tables are written once against ``xp``, which is :data:`NUMPY` for fixed parameters
(exact numbers for the exact posterior and the samplers) or :data:`PYTENSOR` when a parameter is a
PyMC variable (a graph, so that the model logp and its gradient in the parameter are right).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln as _np_gammaln
from scipy.special import logsumexp as _np_logsumexp

from .._symbolic import is_symbolic

__all__ = ["NUMPY", "PYTENSOR", "is_symbolic", "backend_of"]


class _Numpy:
    symbolic = False
    log = staticmethod(np.log)
    log1p = staticmethod(np.log1p)
    gammaln = staticmethod(_np_gammaln)
    cumsum = staticmethod(np.cumsum)
    maximum = staticmethod(np.maximum)
    where = staticmethod(np.where)

    @staticmethod
    def asarray(x):
        return np.asarray(x, dtype=float)

    @staticmethod
    def concatenate(parts):
        return np.concatenate([np.atleast_1d(np.asarray(p, dtype=float)) for p in parts])

    @staticmethod
    def logsumexp(x, axis):
        with np.errstate(divide="ignore", invalid="ignore"):
            return _np_logsumexp(x, axis=axis)


class _Pytensor:
    symbolic = True

    def __getattr__(self, name):
        import pytensor.tensor as pt

        fn = {"where": pt.switch}.get(name) or getattr(pt, name)
        setattr(self, name, fn)
        return fn

    @staticmethod
    def asarray(x):
        import pytensor.tensor as pt

        return pt.as_tensor_variable(np.asarray(x, dtype=float) if not is_symbolic(x) else x)

    @staticmethod
    def concatenate(parts):
        import pytensor.tensor as pt

        return pt.concatenate([pt.atleast_1d(pt.as_tensor_variable(p)).astype("float64") for p in parts])

    @staticmethod
    def logsumexp(x, axis):
        import pytensor.tensor as pt

        return pt.logsumexp(x, axis=axis)


NUMPY = _Numpy()
PYTENSOR = _Pytensor()


def backend_of(*values):
    """:data:`PYTENSOR` if any value is symbolic, else :data:`NUMPY`."""
    return PYTENSOR if any(is_symbolic(v) for v in values) else NUMPY
