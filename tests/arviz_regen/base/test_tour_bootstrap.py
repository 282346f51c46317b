"""The tour bootstrap's random draws against their exact distributions."""

from __future__ import annotations

import numpy as np
import pytest
from gof import chi_square_gof
from scipy import stats

from arviz_regen.base.tour_bootstrap import _binomial, permuted_sums, tour_types

# A chi-square goodness-of-fit p-value below 1e-4 fails a case: a correct sampler does so with
# probability 1e-4 per case (seeds are fixed, so a pass is reproducible, not luck re-drawn).
P_FAIL = 1e-4


@pytest.mark.parametrize(
    "m, p",
    [(5, 0.3), (40, 0.62), (3, 0.999), (900, 0.25), (50_000, 0.0625), (7, 1.0), (0, 0.4), (12, 0.0), (200, 1e-4)],
)
def test_binomial_is_exact(m, p):
    rng = np.random.default_rng(int(m * 1000 + p * 1e4))
    draws = np.array([_binomial(rng, m, p) for _ in range(20_000)])
    support = np.arange(m + 1)
    assert draws.min() >= 0 and draws.max() <= m
    assert chi_square_gof(draws, support, stats.binom.pmf(support, m, p))[0] > P_FAIL


def test_permuted_sums_keep_the_margins_and_split_conservatively():
    # pooled tours, one column per type: a frequent type A (300 tours), a frequent type B (40),
    # three rare ones (fewer than the chains: placed one by one in the shuffled free places)
    counts = np.array([[1, 1, 0, 0]] * 300 + [[1, 0, 1, 0]] * 40 + [[1, 0, 0, 1], [1, 0, 0, 2], [1, 0, 0, 4]])
    lengths = np.array([1] * 300 + [4] * 40 + [9, 12, 3])
    types = tour_types(counts.astype(float), lengths)
    n_tours = np.array([120, 100, 80, 43])
    n_rep = 4000
    top, whole = permuted_sums(types, n_tours, n_rep, seed=3)
    # each chain keeps its number of tours; the chains together keep the pooled sums
    np.testing.assert_array_equal(top[..., 0], np.broadcast_to(n_tours, (n_rep, 4)))
    np.testing.assert_array_equal(top.sum(axis=1), np.broadcast_to(counts.sum(axis=0), (n_rep, 4)))
    np.testing.assert_array_equal(whole.sum(axis=1), np.full(n_rep, lengths.sum()))
    np.testing.assert_array_equal(whole, top[..., 1] + 4 * top[..., 2] + _rare_lengths(top[..., 3]))
    # the types are split in the order of tour_types (B sorts before A): B's tours in chain 0
    # are Binomial(40, 120/343), wider than the exact Hypergeometric (conservative, see
    # permuted_sums)
    support = np.arange(41)
    assert chi_square_gof(top[:, 0, 2], support, stats.binom.pmf(support, 40, 120 / 343))[0] > P_FAIL
    assert top[:, 0, 2].var() > stats.hypergeom(343, 40, 120).var()


def _rare_lengths(code_sum):
    """Lengths of the rare tours in a chain from the sum of their codes 1, 2, 4 (lengths 9, 12, 3)."""
    c = code_sum.astype(np.int64)
    return 9 * (c & 1) + 12 * ((c >> 1) & 1) + 3 * ((c >> 2) & 1)
