"""The per-pair interval sums (:mod:`arviz_regen.base.pair_sums`) against their literal definitions.

Chains of small partitions, sticky (a few items move per draw, sometimes none, sometimes all)
and not, with runs of identical states; every quantity is compared exactly (integer sums)
with numpy transcriptions of the definitions: batch sums of the pair indicators for batch
means, tour sums for regenerative estimates, at the end of the chain and along it, for every
block of item rows and any order of the items.
"""

import numpy as np
import pytest

from arviz_regen.base.batch_means import batch_plan
from arviz_regen.base.pair_kernels import block_pairs, pair_bm_kernel, pair_rs_kernel
from arviz_regen.base.state import canonicalize
from arviz_regen.base.tours import completed_tours, regeneration_times


def sticky_chain(rng, n, m, n_states_max=None):
    """(index (m,), unique labels): each draw moves 0, 1, 2 or all items of the previous one."""
    cur = rng.integers(0, 4, n)
    draws = []
    for _ in range(m):
        k = rng.choice([0, 0, 1, 2, n])
        cur = cur.copy()
        cur[rng.integers(0, n, k)] = rng.integers(0, 6, k)
        draws.append(canonicalize(cur))
    ulabels, index = np.unique(np.array(draws), axis=0, return_inverse=True)
    return index.ravel().astype(np.int64), ulabels


def indicators(ulabels, index, perm, i0, i1):
    """1{together} per draw for the pairs of positions (i, j > i), i0 ≤ i < i1: (m, P)."""
    n = ulabels.shape[1]
    ii, jj = block_pairs(i0, i1, n)
    lab = ulabels[index][:, perm]
    return (lab[:, ii] == lab[:, jj]).astype(float)


def literal_bm(x, m_eval, r=3):
    """(total, sb, sbb, sb_r, sbb_r) of the first m_eval draws of x (m, P), as printed."""
    b, a, b_r, a_r = (int(v[0]) for v in batch_plan(np.array([m_eval]), r))
    xs = x[:m_eval]

    def sums(size, count):
        if count == 0:
            return np.zeros(x.shape[1]), np.zeros(x.shape[1])
        B = np.stack([xs[k * size : (k + 1) * size].sum(axis=0) for k in range(count)])
        return B.sum(axis=0), (B * B).sum(axis=0)

    sb, sbb = sums(b, a)
    sb_r, sbb_r = sums(max(b_r, 1), a_r)
    return xs.sum(axis=0), sb, sbb, sb_r, sbb_r


def literal_rs(x, tau, R):
    """(Σs, Σs², ΣNs) over the first R tours of x (m, P)."""
    s = np.stack([x[tau[r] : tau[r + 1]].sum(axis=0) for r in range(R)]) if R else np.zeros((0, x.shape[1]))
    N = np.diff(tau)[:R].astype(float)
    return s.sum(axis=0), (s * s).sum(axis=0), (N[:, None] * s).sum(axis=0)


def cases():
    rng = np.random.default_rng(17)
    for trial in range(12):
        n = int(rng.integers(2, 14))
        m = int(rng.choice([1, 2, 7, 60, 300]))
        yield trial, n, m, int(rng.integers(0, 2**31))


@pytest.mark.parametrize("method", ["changes", "runs"])
@pytest.mark.parametrize("trial, n, m, seed", list(cases()))
def test_batch_sums_literal(trial, n, m, seed, method):
    rng = np.random.default_rng(seed)
    index, ulabels = sticky_chain(rng, n, m)
    perm = rng.permutation(n) if trial % 2 else np.arange(n)
    positions = np.unique(rng.integers(0, m, 3))
    blocks = [(0, n)] + ([(0, 1), (1, n // 2 + 1), (n // 2 + 1, n - 1)] if n > 3 else [])
    for i0, i1 in blocks:
        x = indicators(ulabels, index, perm, i0, i1)
        got = pair_bm_kernel(ulabels, rows=(i0, i1), perm=perm, method=method)(index, None)
        want = literal_bm(x, m)
        for g, w in zip((got.total, got.sb, got.sbb, got.sb_r, got.sbb_r), want):
            np.testing.assert_array_equal(g[0], w)
        got = pair_bm_kernel(ulabels, rows=(i0, i1), perm=perm, method=method)(index, positions)
        for e, p in enumerate(positions):
            want = literal_bm(x, p + 1)
            for g, w in zip((got.total, got.sb, got.sbb, got.sb_r, got.sbb_r), want):
                np.testing.assert_array_equal(g[e], w)


@pytest.mark.parametrize("method", ["changes", "runs"])
@pytest.mark.parametrize("trial, n, m, seed", list(cases()))
def test_tour_sums_literal(trial, n, m, seed, method):
    rng = np.random.default_rng(seed)
    index, ulabels = sticky_chain(rng, n, m)
    perm = rng.permutation(n) if trial % 2 else np.arange(n)
    for regen in np.unique(rng.choice(index, 3)):
        is_regen = index == regen
        tau = regeneration_times(is_regen)
        R = max(tau.size - 1, 0)
        eval_r = np.unique(np.concatenate([completed_tours(is_regen)[rng.integers(0, m, 3)], [R]]))
        for i0, i1 in [(0, n)] + ([(1, n - 1)] if n > 2 else []):
            x = indicators(ulabels, index, perm, i0, i1)
            kernel = pair_rs_kernel(ulabels, rows=(i0, i1), perm=perm, method=method)
            got = kernel(index, tau, np.array([R]))
            for g, w in zip(got, literal_rs(x, tau, R)):
                np.testing.assert_array_equal(g[0], w)
            got = kernel(index, tau, eval_r)
            for e, r in enumerate(eval_r):
                for g, w in zip(got, literal_rs(x, tau, r)):
                    np.testing.assert_array_equal(g[e], w)


def test_no_tours_and_single_draw():
    ulabels = np.array([[0, 0, 1], [0, 1, 1]])
    index = np.array([0, 1, 1, 0])
    got = pair_rs_kernel(ulabels)(index, np.array([2]), np.array([0]))
    assert all(np.all(g == 0) and g.shape == (1, 3) for g in got)
    got = pair_bm_kernel(ulabels)(index[:1], None)
    np.testing.assert_array_equal(got.total[0], [1, 0, 0])
    assert got.a[0] == 1 and got.b_r[0] == 0


@pytest.mark.parametrize("route", ["dense", "states", "changes"])
def test_chain_frequencies_literal(route, monkeypatch):
    from arviz_regen.base import pair_kernels
    from arviz_regen.base.pair_kernels import chain_frequencies, pair_frequencies

    if route != "dense":
        monkeypatch.setattr(pair_kernels, "DENSE_FLOPS", -1)
    monkeypatch.setattr(pair_kernels, "STATES_SLACK_NS", {"dense": 0.0, "states": np.inf, "changes": -np.inf}[route])
    rng = np.random.default_rng(5)
    chains = [sticky_chain(rng, 9, 80) for _ in range(3)]
    labels = np.concatenate([ul[idx] for idx, ul in chains])  # (3 * 80, 9)
    ulabels, index = np.unique(labels, axis=0, return_inverse=True)
    index = index.reshape(3, 80)
    # every route counts exact integers: the same floats as the literal count over the draws
    want = (labels[:, :, None] == labels[:, None, :]).sum(axis=0) / labels.shape[0]
    np.testing.assert_array_equal(chain_frequencies(index, ulabels), want)
    np.testing.assert_array_equal(chain_frequencies(index, 3 * ulabels + 20), want)  # labels renumbered
    visits = np.bincount(index.ravel(), minlength=ulabels.shape[0])
    np.testing.assert_allclose(pair_frequencies(ulabels, visits), want, rtol=0, atol=1e-14)


def test_chain_frequencies_route_choice(monkeypatch):
    from arviz_regen.base import pair_kernels
    from arviz_regen.base.pair_kernels import _cheaper_by_states, _dense_counts, kernel_labels

    monkeypatch.setattr(pair_kernels, "STATES_SLACK_NS", 0.0)  # the cost estimates alone

    rng = np.random.default_rng(8)
    index, ulabels = sticky_chain(rng, 12, 50)
    assert _dense_counts(index[None], kernel_labels(ulabels)) is not None  # few items and states
    # 300 items in 2 clusters, one moving per draw: every state has ~22,000 pairs together but
    # a change flips ~300: along the changes
    n, m = 300, 1000
    lab = np.zeros((m, n), dtype=np.int64)
    lab[0, n // 2 :] = 1
    for t in range(1, m):
        lab[t] = lab[t - 1]
        lab[t, rng.integers(0, n)] ^= 1
    ulabels, index = np.unique(canonicalize(lab), axis=0, return_inverse=True)
    index = index.reshape(1, m)
    visits = np.bincount(index.ravel())
    assert _dense_counts(index, ulabels) is None
    assert not _cheaper_by_states(index, ulabels, visits)
    # three states visited in long runs: two changes, the states are cheaper
    runs = np.repeat(index[:, :3], 300, axis=1)
    assert _cheaper_by_states(runs, ulabels, np.bincount(runs[0], minlength=visits.size))

    # in blocks of 10 states: the states' sum stops once it passes the changes' estimate
    monkeypatch.setattr(pair_kernels, "STATES_BLOCK_CELLS", 10 * n)
    blocks, together = [], pair_kernels._together
    monkeypatch.setattr(pair_kernels, "_together", lambda ul: blocks.append(len(ul)) or together(ul))
    assert not _cheaper_by_states(index, ulabels, visits)
    assert sum(blocks) < (visits > 0).sum() / 2  # ~22,000 pairs per state against ~300 per change
    blocks.clear()
    assert _cheaper_by_states(runs, ulabels, np.bincount(runs[0], minlength=visits.size))
    assert sum(blocks) == np.unique(runs[0]).size  # cheaper: every visited state summed
    # the pairs together of a block: one bincount, or one per row for sparse labels
    rows = ulabels[:25]
    want = sum(float((c * (c - 1) // 2).sum()) for c in map(np.bincount, rows))
    assert together(rows).sum() == want == together(rows * 10_000).sum()


def test_coclustering_sums_literal():
    from arviz_regen.base.pair_kernels import coclustering_sums

    rng = np.random.default_rng(9)
    index, ulabels = sticky_chain(rng, 7, 400)
    regen = np.bincount(index).argmax()
    tau = regeneration_times(index == regen)
    R = tau.size - 1
    x = indicators(ulabels, index, np.arange(7), 0, 7)
    s1, s2, sns, sn, snn, n_tours = coclustering_sums(index, ulabels, regen)
    for got, want in zip((s1, s2, sns), literal_rs(x, tau, R)):
        np.testing.assert_array_equal(got[0], want)
    N = np.diff(tau)
    assert n_tours[0] == R and sn[0] == N.sum() and snn[0] == (N * N).sum()
    draws = np.array([50, 200, 399])
    s1, _, _, sn, _, n_tours = coclustering_sums(index, ulabels, regen, eval_draws=draws)
    np.testing.assert_array_equal(n_tours, completed_tours(index == regen)[draws])
    for e, r in enumerate(n_tours):
        np.testing.assert_array_equal(s1[e], literal_rs(x, tau, r)[0])
        assert sn[e] == N[:r].sum()


def test_together_of_small_integer_labels_does_not_overflow():
    """Joint keys of two uint8 label arrays exceed 255: they are built in int64."""
    from arviz_regen.base.pair_sums import _together

    rng = np.random.default_rng(1)
    a, b = (rng.integers(0, 200, size=(20, 500)).astype(np.uint8) for _ in range(2))
    want = [float((c * (c - 1) // 2).sum()) for c in map(np.bincount, a.astype(np.int64) * 200 + b)]
    np.testing.assert_array_equal(_together(a, b), want)
