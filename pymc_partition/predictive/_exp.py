"""An exponential for non-positive arguments that LLVM can vectorise (1 ulp from ``math.exp``).

``math.exp`` is a call into the C library, which keeps a loop over variables scalar; this one is
a few multiply-adds and a bit cast, so a loop calling it runs on vector registers (the
spike-and-slab log marginal takes an exponential per variable). Cody-Waite
range reduction ``x = k log 2 + r`` with ``|r| <= log(2)/2``, the Taylor polynomial of ``e^r`` to
degree 13 (truncation below ``5e-18`` relative), and ``2^k`` assembled from its bits. Arguments
below -708 give ``e^-708`` (about ``3e-308``), which is all the callers need: they add it to 1.
Tested against ``numpy.exp`` over the whole range.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

__all__ = ["exp_nonpositive"]

_LOG2E = 1.4426950408889634
_LN2_HI = 0.693147180369123816490  # log(2) split so that k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_C = [1.0 / math.factorial(k) for k in range(14)]
C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13 = _C


@intrinsic
def _float_from_bits(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@numba.njit(nogil=True, cache=True, inline="always")
def exp_nonpositive(x):
    """``e^x`` for ``x <= 0`` (``x < -708`` gives ``e^-708``), within 1 ulp of ``math.exp``."""
    x = max(x, -708.0)
    k = math.floor(x * _LOG2E + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = C13
    p = p * r + C12
    p = p * r + C11
    p = p * r + C10
    p = p * r + C9
    p = p * r + C8
    p = p * r + C7
    p = p * r + C6
    p = p * r + C5
    p = p * r + C4
    p = p * r + C3
    p = p * r + C2
    p = p * r + C1
    p = p * r + C0
    return p * _float_from_bits((np.int64(k) + 1023) << 52)
