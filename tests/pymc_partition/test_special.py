"""The log rising factorial ``log Gamma(x + n) - log Gamma(x)`` on every backend, against exact sums."""

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from pymc_partition._special import STIRLING_FROM, log_rising, log_rising_scalar, log_rising_tensor
from pymc_partition.priors._ops import NUMPY

XS = [1e-300, 1e-100, 1e-8, 0.3, 1.0, 7.5, 29.999, STIRLING_FROM, 30.001, 1e3, 1e8, 1e16, 1e100, 1e300]
NS = [0, 1, 2, 10, 100, 1000]


def _exact(x, n):
    """``sum_{i < n} log(x + i)`` for an integer ``n``; correctly rounded sum (fsum)."""
    return math.fsum(math.log(x + i) for i in range(n))


def _half(x):
    """``log Gamma(x + 1/2) - log Gamma(x)``: the difference of log-gammas below x = 1000 (both
    under 7e3: rounding under 1e-12), else its asymptotic series to ``x^-5`` (next term
    17 / (14336 x^7), under 1e-23)."""
    if x < 1e3:
        return math.lgamma(x + 0.5) - math.lgamma(x)
    u = 1.0 / x
    return 0.5 * math.log(x) - u / 8 + u**3 / 192 - u**5 / 640


@pytest.fixture(scope="module")
def graph():
    x, n = pt.dscalar("x"), pt.dscalar("n")
    out = log_rising_tensor(x, n)
    return pytensor.function([x, n], [out, pytensor.grad(out, x)])


def test_log_rising_is_exact_for_every_x_on_every_backend(graph):
    """Every backend within 2e-14 (relative) of the exact sum, from x = 1e-300 to 1e300 (the
    difference of log-gammas was off by about 40 at x = 1e16: lgamma's rounding error), and
    the gradient is the exact sum_i 1 / (x + i)."""
    for x in XS:
        for n in NS:
            want = _exact(x, n)
            tol = 2e-14 * max(1.0, abs(want))
            got, grad = graph(x, float(n))
            for value in (float(log_rising(np.float64(x), np.float64(n), NUMPY)), float(got),
                          log_rising_scalar(x, float(n))):  # fmt: skip
                assert abs(value - want) <= tol, (x, n, value, want)
            dwant = math.fsum(1.0 / (x + i) for i in range(n))
            # PyTensor 2's digamma is good to about 1e-11 (PyTensor 3's to rounding); beyond
            # x = 1e150 the chain rule's n / x^2 underflows: the gradient (about n / x) is then
            # right to about n / x absolutely, which no sampler can tell from exact
            dtol = 1e-9 * dwant if x < 1e150 else 2.0 * n / x
            assert abs(float(grad) - dwant) <= dtol, (x, n, grad, dwant)


def test_log_rising_half_integer_steps():
    """``n = k + 1/2`` (the Normal-Inverse-Gamma's ``alpha0 + n/2``): the recursion from the
    half step, exact for every x."""
    for x in XS:
        for k in (0, 1, 10, 999):
            want = _half(x) + _exact(x + 0.5, k)
            tol = 1e-12 * max(1.0, abs(want))
            n = k + 0.5
            for value in (float(log_rising(np.float64(x), np.float64(n), NUMPY)), log_rising_scalar(x, n)):
                assert abs(value - want) <= tol, (x, n, value, want)


def test_log_rising_vectorised_and_continuous_at_the_switch():
    """Broadcasts like numpy, and the two branches meet at x = 30 within rounding."""
    x = np.array([[STIRLING_FROM * (1 - 1e-12)], [STIRLING_FROM]])
    n = np.array([0.0, 0.5, 3.0, 1e6])
    values = log_rising(x, n, NUMPY)
    assert values.shape == (2, 4)
    np.testing.assert_allclose(values[0], values[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(values[:, 0], 0.0)
