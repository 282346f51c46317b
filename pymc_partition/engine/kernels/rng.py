"""An explicit random generator for compiled kernels: its state is an array the caller owns.

numba's ``np.random`` functions draw from one generator per thread, seeded globally
(``np.random.seed``): a kernel seeded that way shares its stream with every other kernel of the
thread, and reseeding it costs the Mersenne Twister's 624-word initialisation at each call.
Passing a ``numpy.random.Generator`` instead costs an unboxing at every call. Here the state
is a ``uint64[4]`` array (xoshiro256**, Blackman & Vigna 2018) that the kernel advances in
place: one array argument, no global state, the same stream for the same seed on any thread::

    state = rng_state(np.random.default_rng(1))   # or rng_state(seed)
    u = uniform(state)                            # inside compiled code

Draws: :func:`uniform` in ``[0, 1)`` (53 bits), :func:`exponential`, :func:`normal` (polar
method), :func:`gamma` (Marsaglia & Tsang 2000, with the ``U^(1/a)`` boost below shape 1) and
:func:`beta` (ratio of gammas).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .state import NJIT

__all__ = ["rng_state", "next_u64", "uniform", "exponential", "normal", "gamma", "beta"]

_MASK = (1 << 64) - 1


def rng_state(seed):
    """Return a fresh ``uint64[4]`` generator state from an integer seed or a numpy Generator.

    Parameters
    ----------
    seed : int or numpy.random.Generator
        An integer is expanded by SplitMix64 (the seeding its authors recommend); a Generator
        gives four raw 64-bit words (and advances).

    Returns
    -------
    ndarray of uint64, shape (4,)
    """
    if isinstance(seed, np.random.Generator):
        state = seed.bit_generator.random_raw(4).astype(np.uint64)
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        x, words = int(seed) & _MASK, []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & _MASK
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
            words.append(z ^ (z >> 31))
        state = np.array(words, dtype=np.uint64)
    else:
        raise TypeError(f"`seed` must be an integer or a numpy Generator, got {type(seed).__name__}.")
    if not state.any():  # the one state xoshiro never leaves
        state[0] = np.uint64(1)
    return state


@numba.njit(**NJIT, inline="always")
def _rotl(x, k):
    return (x << numba.uint64(k)) | (x >> numba.uint64(64 - k))


@numba.njit(**NJIT)
def next_u64(s):
    """Return the next 64-bit word of xoshiro256** with state ``s`` (advanced in place)."""
    result = _rotl(s[1] * numba.uint64(5), 7) * numba.uint64(9)
    t = s[1] << numba.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@numba.njit(**NJIT)
def uniform(s):
    """Uniform on ``[0, 1)``, 53 random bits."""
    return float(next_u64(s) >> numba.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(**NJIT)
def exponential(s):
    """Draw a standard exponential."""
    return -math.log1p(-uniform(s))


@numba.njit(**NJIT)
def normal(s):
    """Draw a standard normal (Marsaglia's polar method, one of the pair)."""
    while True:
        u = 2.0 * uniform(s) - 1.0
        v = 2.0 * uniform(s) - 1.0
        r = u * u + v * v
        if 0.0 < r < 1.0:
            return u * math.sqrt(-2.0 * math.log(r) / r)


@numba.njit(**NJIT)
def gamma(s, shape, scale):
    """Gamma(``shape``, ``scale``) (Marsaglia & Tsang 2000; below shape 1, ``Gamma(shape + 1) U^(1/shape)``)."""
    boost = 1.0
    a = shape
    if a < 1.0:
        boost = math.exp(math.log1p(-uniform(s)) / a)  # U^(1/a) with U in (0, 1]
        a += 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = normal(s)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform(s)
        if u < 1.0 - 0.0331 * x * x * x * x or math.log(u) < 0.5 * x * x + d * (1.0 - v + math.log(v)):
            return d * v * boost * scale


@numba.njit(**NJIT)
def beta(s, a, b):
    """Beta(``a``, ``b``) as ``X / (X + Y)`` with ``X ~ Gamma(a)``, ``Y ~ Gamma(b)``."""
    x = gamma(s, a, 1.0)
    y = gamma(s, b, 1.0)
    return x / (x + y)
