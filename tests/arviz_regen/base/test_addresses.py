"""The one module where compiled code handles raw addresses (:mod:`arviz_regen.base.addresses`).

- ``describe`` records each array's address and dimensions, and refuses an array of another
  dtype, number of dimensions or layout (not C-contiguous), a missing array and more than three
  dimensions, before any address can reach compiled code;
- the pointer intrinsics read and write the described arrays, and ``caller`` calls a C callback
  through its address with the arguments cast to its signature.
"""

import numba
import numpy as np
import pytest
from numba import types

from arviz_regen.base.addresses import caller, describe, float64_at, int32_at, int64_at

LAYOUT = (("a", np.int64, 1), ("b", np.float64, 2), ("c", np.int32, 3))


def arrays():
    return np.arange(5, dtype=np.int64), np.zeros((2, 3)), np.ones((2, 2, 4), dtype=np.int32)


def test_describe_records_addresses_and_dimensions():
    a, b, c = arrays()
    meta = describe((a, b, c), LAYOUT)
    assert meta.dtype == np.int64 and meta.shape == (12,)
    assert meta[0] == a.ctypes.data and list(meta[1:4]) == [5, 0, 0]
    assert meta[4] == b.ctypes.data and list(meta[5:8]) == [2, 3, 0]
    assert meta[8] == c.ctypes.data and list(meta[9:12]) == [2, 2, 4]


@pytest.mark.parametrize(
    "which, bad, match",
    [
        (0, np.arange(5, dtype=np.int32), "'a': int32 .* C-contiguous 1-d int64"),  # dtype
        (1, np.zeros(6), "'b': float64 \\(6,\\) is not a C-contiguous 2-d float64"),  # dimensions
        (1, np.zeros((3, 2)).T, "'b'.*C-contiguous"),  # layout: a transposed view
        (2, np.ones((2, 4, 4), dtype=np.int32)[:, :, ::2], "'c'.*C-contiguous"),  # strided
        (0, [0, 1, 2], "'a': list"),  # not an array
    ],
)
def test_describe_refuses_what_compiled_code_cannot_read(which, bad, match):
    given = list(arrays())
    given[which] = bad
    with pytest.raises(TypeError, match=match):
        describe(given, LAYOUT)


def test_describe_refuses_a_wrong_count_or_four_dimensions():
    with pytest.raises(ValueError, match="2 arrays for a layout of 3"):
        describe(arrays()[:2], LAYOUT)
    with pytest.raises(ValueError, match="at most three dimensions"):
        describe([np.zeros((1, 1, 1, 1))], [("d", np.float64, 4)])


def test_pointers_read_and_write_the_described_arrays_and_caller_calls_by_address():
    sig = types.float64(types.int64, types.float64)

    @numba.cfunc(sig)
    def scaled(k, x):
        return k * x

    call = caller(sig)

    @numba.njit
    def kernel(meta, f):
        m = int64_at(meta.ctypes.data)
        a, b, c = int64_at(m[0]), float64_at(m[4]), int32_at(m[8])
        b[m[6] - 1] = a[m[1] - 1] + c[0]  # b[0, 2] = a[4] + c[0, 0, 0]
        a[0] = 7
        return call(f, 3, b[2])  # an int literal cast to int64, as the signature says

    a, b, c = arrays()
    meta = describe((a, b, c), LAYOUT)
    assert kernel(meta, scaled.address) == 15.0
    assert b[0, 2] == 5.0 and a[0] == 7
