"""The one-evaluation numpy path of Hotelling-RS against the streaming compiled kernel."""

from __future__ import annotations

import numpy as np
import pytest

from arviz_regen.base.hotelling_t2 import DEFAULT_TOL, _hotelling_kernel, _t2_at_end, t2_core


def _tours(rng, R, kmax, degenerate):
    lengths = rng.geometric(0.3, R).astype(float)
    counts = np.zeros((R, kmax))
    counts[:, 0] = 1.0
    for j in range(1, kmax):
        counts[:, j] = rng.binomial(lengths.astype(int) - 1 + 1, 0.1 / j) * (lengths > 1)
    if degenerate == "unvisited":
        counts[:, kmax - 1] = 0.0  # a top state never visited: zero variance
    elif degenerate == "collinear":
        counts[:, 2] = counts[:, 1]  # two states always visited together: rank deficient
    elif degenerate == "complete":  # every state of the tours counted: the visits sum to the length
        counts[:, kmax - 1] = lengths - counts[:, : kmax - 1].sum(axis=1)
        counts[:, kmax - 1] = np.maximum(counts[:, kmax - 1], 0.0)
        lengths = counts.sum(axis=1)
    elif degenerate == "proportional":
        counts[:, 1] = 2 * lengths  # tour sums exactly proportional to the lengths
    return counts, lengths


@pytest.mark.parametrize("degenerate", ["none", "unvisited", "collinear", "proportional", "complete"])
@pytest.mark.parametrize("seed", range(4))
def test_numpy_end_equals_kernel(seed, degenerate):
    rng = np.random.default_rng(seed)
    kmax = 6
    counts, lengths = _tours(rng, int(rng.integers(3, 400)), kmax, degenerate)
    q = np.concatenate([[1.0], rng.uniform(0.05, 1.0, kmax - 1)])
    ks = np.array([2, 3, 5, 6], dtype=np.int64)
    R = lengths.size
    want = _hotelling_kernel(counts, lengths, q, ks, np.array([R], dtype=np.int64), DEFAULT_TOL)
    got = _t2_at_end(counts, lengths, q, ks, DEFAULT_TOL)
    np.testing.assert_array_equal(got[2], want[2])  # the same states kept
    np.testing.assert_allclose(got[0], want[0], rtol=1e-7, equal_nan=True)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-9, equal_nan=True)
    # t2_core at the end (numpy) agrees with t2_core evaluated along the way (kernel)
    end = t2_core(counts, lengths, q, ks)
    along = t2_core(counts, lengths, q, ks, eval_r=np.array([max(1, R // 2), R]))
    np.testing.assert_allclose(end["t2"][:, 0], along["t2"][:, 1], rtol=1e-9, equal_nan=True)
    np.testing.assert_array_equal(end["df"][:, 0], along["df"][:, 1])
