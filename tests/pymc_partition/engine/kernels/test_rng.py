"""The kernels' explicit generator (``engine.kernels.rng``): its draws follow their laws (one
Kolmogorov-Smirnov test each at a fixed seed; a correct generator fails one with probability
1e-4) and its stream is a function of its state alone."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from scipy import stats

from pymc_partition.engine.kernels import rng as krng


@numba.njit
def _draws(s, kind, a, b, n):
    out = np.empty(n)
    for i in range(n):
        if kind == 0:
            out[i] = krng.uniform(s)
        elif kind == 1:
            out[i] = krng.exponential(s)
        elif kind == 2:
            out[i] = krng.normal(s)
        elif kind == 3:
            out[i] = krng.gamma(s, a, b)
        else:
            out[i] = krng.beta(s, a, b)
    return out


@pytest.mark.parametrize(
    "kind, a, b, law",
    [
        (0, 0.0, 0.0, stats.uniform()),
        (1, 0.0, 0.0, stats.expon()),
        (2, 0.0, 0.0, stats.norm()),
        (3, 0.3, 2.0, stats.gamma(0.3, scale=2.0)),
        (3, 1.0, 1.0, stats.gamma(1.0)),
        (3, 7.5, 0.5, stats.gamma(7.5, scale=0.5)),
        (4, 3.2, 14.0, stats.beta(3.2, 14.0)),
        (4, 1.0, 1.0, stats.beta(1.0, 1.0)),
    ],
)
def test_draws_follow_their_law(kind, a, b, law):
    x = _draws(krng.rng_state(20261127 + kind), kind, a, b, 20000)
    assert stats.kstest(x, law.cdf).pvalue > 1e-4


def test_the_stream_is_a_function_of_the_state():
    s1, s2 = krng.rng_state(5), krng.rng_state(5)
    first = _draws(s1, 0, 0.0, 0.0, 10)
    np.testing.assert_array_equal(first, _draws(s2, 0, 0.0, 0.0, 10))
    assert not np.array_equal(first, _draws(s1, 0, 0.0, 0.0, 10))  # advanced in place
    assert not np.array_equal(krng.rng_state(5), krng.rng_state(6))
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    np.testing.assert_array_equal(krng.rng_state(g1), krng.rng_state(g2))
    with pytest.raises(TypeError, match="integer or a numpy Generator"):
        krng.rng_state(1.5)


@numba.njit
def _ints_and_orders(s, n, k, reps):
    ints = np.empty(reps, np.int64)
    orders = np.empty((reps, k), np.int64)
    for r in range(reps):
        ints[r] = krng.randint(s, n)
        for t in range(k):
            orders[r, t] = t
        krng.shuffle(s, orders[r], k)
    return ints, orders


def test_randint_and_shuffle_are_uniform():
    """``randint(n)`` over its n values and ``shuffle`` over the 4! orders: chi-square tests at
    a fixed seed (a correct generator fails one with probability 1e-4)."""
    ints, orders = _ints_and_orders(krng.rng_state(11), 7, 4, 24000)
    assert ints.min() == 0 and ints.max() == 6
    assert stats.chisquare(np.bincount(ints, minlength=7)).pvalue > 1e-4
    codes = orders @ (4 ** np.arange(4))
    _, counts = np.unique(codes, return_counts=True)
    assert counts.size == 24 and stats.chisquare(counts).pvalue > 1e-4
    assert (np.sort(orders, axis=1) == np.arange(4)).all()


def test_is_rng_state():
    assert krng.is_rng_state(krng.rng_state(1))
    for bad in (np.zeros(4, np.int64), np.zeros(5, np.uint64), np.zeros(8, np.uint64)[::2], [1, 2, 3, 4], 3):
        assert not krng.is_rng_state(bad)
