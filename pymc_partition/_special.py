"""Log-gamma ratios that stay exact for every legal parameter, written once for each backend.

Priors and families are full of ``log Gamma(x + n) - log Gamma(x)``: the Dirichlet process's
``log(alpha (alpha + 1) ... (alpha + N - 1))``, the Beta-Bernoulli's ``log B(a + s, b + n - s) -
log B(a, b)``. Written as a difference of two log-gammas it loses everything once ``x`` is large:
``lgamma(1e16)`` is about 3.7e17, whose rounding error (about 40) is the whole answer, so the log
prior of 10 singletons under a Dirichlet process came out -15.6 at ``alpha = 1e16`` instead of
about 0, +460 at 1e20 and NaN at 1e308. :func:`log_rising` switches to Stirling's series for
``x >= 30``, where the difference is formed from ``log1p(n / x)`` and ``log(x + n)`` (relative
rounding only), with the series' error below ``1/(1680 x^7)`` (3e-14 at x = 30); below 30 the
difference of log-gammas is exact to rounding (both are below about 72 + log-gamma(x + n)).

Each branch is evaluated only at inputs inside its own range (the other branch sees the
threshold), so neither overflows nor turns into NaN, which would leak into gradients through a
switch. ``n = 0`` gives exactly 0: PyTensor may rewrite ``b + (n - s)`` as ``(b + n) - s``, where
a tiny ``b`` is lost and ``lgamma(0)`` is infinite.

:func:`log_rising` takes the array backend of :mod:`pymc_partition.priors._ops` (numpy or
pytensor); :func:`log_rising_scalar` is the same formula for numba kernels (the samplers'
predictive forms).
"""

from __future__ import annotations

import math

import numba

__all__ = ["log_rising", "log_rising_tensor", "log_rising_scalar", "STIRLING_FROM"]

#: Smallest x for Stirling's series (error below 1/(1680 x^7) = 3e-14)
STIRLING_FROM = 30.0


def _stirling_correction(y):
    """``lgamma(y) - ((y - 1/2) log y - y + log(2 pi)/2)`` for ``y >= 30``.

    Three terms (in powers of ``1/y``, which underflow quietly where powers of ``y`` would overflow).
    """
    u = 1.0 / y
    u2 = u * u
    return u * (1.0 / 12.0 - u2 * (1.0 / 360.0 - u2 / 1260.0))


def log_rising(x, n, xp):
    """``log Gamma(x + n) - log Gamma(x)`` (the log rising factorial), for ``x > 0``, ``n >= 0``.

    Parameters
    ----------
    x, n : array_like or tensors (broadcast together)
    xp : :data:`~pymc_partition.priors._ops.NUMPY` or :data:`~pymc_partition.priors._ops.PYTENSOR`
    """
    big = x >= STIRLING_FROM
    xs = xp.where(big, STIRLING_FROM, x)  # the log-gamma branch sees x < 30
    xb = xp.where(big, x, STIRLING_FROM)  # Stirling's sees x >= 30
    empty = xp.eq(n, 0) if xp.symbolic else (n == 0)
    arg = xp.where(empty, 1.0, xs + n)
    small = xp.gammaln(arg) - xp.gammaln(xs)
    large = (
        (xb - 0.5) * xp.log1p(n / xb) + n * xp.log(xb + n) - n
        + _stirling_correction(xb + n) - _stirling_correction(xb)
    )  # fmt: skip
    return xp.where(empty, 0.0, xp.where(big, large, small))


def log_rising_tensor(x, n):
    """:func:`log_rising` of pytensor tensors (the families' graphs)."""
    from .priors._ops import PYTENSOR

    return log_rising(x, n, PYTENSOR)


@numba.njit(cache=True, nogil=True)
def log_rising_scalar(x, n):
    """:func:`log_rising` for numbers, in numba code."""
    if n == 0.0:
        return 0.0
    if x < STIRLING_FROM:
        return math.lgamma(x + n) - math.lgamma(x)
    y = x + n
    return (
        (x - 0.5) * math.log1p(n / x) + n * math.log(y) - n
        + _stirling_correction_nb(y) - _stirling_correction_nb(x)
    )  # fmt: skip


@numba.njit(cache=True, nogil=True, inline="always")
def _stirling_correction_nb(y):
    u = 1.0 / y
    u2 = u * u
    return u * (1.0 / 12.0 - u2 * (1.0 / 360.0 - u2 / 1260.0))
