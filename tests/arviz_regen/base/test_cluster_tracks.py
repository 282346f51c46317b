"""Cluster tracks along chains (:mod:`arviz_regen.base.cluster_tracks`) against direct sums over draws.

For random sticky chains (a few items move per draw, sometimes none, sometimes all) and random
estimate labels, every per-item sum the SALSO search reads from the tracks, Σ over the draws of
w_t G(n_{t,k,l_t(i)}), equals the sum over the draws; the segments of an item cover each chain
exactly once. Integer weights make both sides exact.
"""

import numpy as np
import pytest

from arviz_regen.base.cluster_match import WORK_ROWS, group_and_match
from arviz_regen.base.cluster_tracks import build_tracks
from arviz_regen.base.state import canonicalize


def sticky_chains(rng, n, n_chain, m):
    out = np.empty((n_chain, m, n), dtype=np.int64)
    for c in range(n_chain):
        cur = rng.integers(0, 4, n)
        for t in range(m):
            k = rng.choice([0, 0, 1, 2, n])
            cur = cur.copy()
            cur[rng.integers(0, n, k)] = rng.integers(0, 7, k)
            out[c, t] = canonicalize(cur)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_track_sums_equal_draw_sums(seed):
    rng = np.random.default_rng(seed)
    n, n_chain, m = int(rng.integers(2, 16)), int(rng.integers(1, 4)), int(rng.integers(1, 80))
    z = sticky_chains(rng, n, n_chain, m)
    ulabels, index = np.unique(z.reshape(-1, n), axis=0, return_inverse=True)
    seq = index.ravel()
    first = np.zeros((n_chain, m), dtype=bool)
    first[:, 0] = True
    w = rng.integers(1, 5, seq.size).astype(float)  # integer weights: exact sums both ways
    tr = build_tracks(ulabels, seq, first.ravel(), w)
    E = tr.epoch_weight.size
    assert np.array_equal(np.diff(tr.epoch_start) > 0, np.ones(tr.epoch_start.size - 1, dtype=bool))
    np.testing.assert_array_equal(
        tr.epoch_track, np.repeat(np.arange(tr.epoch_start.size - 1), np.diff(tr.epoch_start))
    )
    for i in range(n):  # an item's segments cover every chain once: their weights add up to all
        segs = range(tr.seg_ptr[i], tr.seg_ptr[i + 1])
        covered = sum(tr.epoch_weight[tr.seg_g1[s] : tr.seg_g2[s]].sum() for s in segs)
        assert covered == w.sum()
        for s in segs:
            assert tr.epoch_start[tr.seg_track[s]] <= tr.seg_g1[s] < tr.seg_g2[s] <= tr.epoch_start[tr.seg_track[s] + 1]
    G = rng.normal(size=n + 1)
    est = rng.integers(0, 3, n)
    cnt = np.zeros((E, 3), dtype=np.int64)  # members of each estimate cluster per epoch
    for i in range(n):
        for s in range(tr.seg_ptr[i], tr.seg_ptr[i + 1]):
            cnt[tr.seg_g1[s] : tr.seg_g2[s], est[i]] += 1
    draws = ulabels[seq]
    for i in range(n):
        for k in range(3):
            direct = sum(w[t] * G[np.sum((est == k) & (draws[t] == draws[t, i]))] for t in range(seq.size))
            via = sum(
                (
                    tr.epoch_weight[g] * G[cnt[g, k]]
                    for s in range(tr.seg_ptr[i], tr.seg_ptr[i + 1])
                    for g in range(tr.seg_g1[s], tr.seg_g2[s])
                ),
                0.0,
            )
            np.testing.assert_allclose(via, direct, rtol=1e-12)


def test_matching_moves_only_what_changed():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        lu = canonicalize(rng.integers(0, 4, n))
        lv = lu.copy()
        k = int(rng.integers(0, n + 1))
        lv[rng.integers(0, n, k)] = rng.integers(0, 6, k)
        lv = canonicalize(lv)
        work = np.zeros((WORK_ROWS, n + 1), dtype=np.int64)
        work[0, :n], work[1, :n] = lu, lv
        count = group_and_match(np.int64(lu.max() + 1), np.int64(lv.max() + 1), True, work)
        moved = work[10, :n].astype(bool)
        assert count == moved.sum()
        still = ~moved  # two unmoved items are together in lv iff they were in lu
        same_u = lu[still][:, None] == lu[still][None, :]
        same_v = lv[still][:, None] == lv[still][None, :]
        np.testing.assert_array_equal(same_u, same_v)
        if np.array_equal(lu, lv):
            assert count == 0


@pytest.mark.parametrize("seed", range(3))
def test_draws_each_their_own_chain_skip_the_scan_with_the_same_tracks(seed):
    from arviz_regen.base.cluster_tracks import _scanned_tracks, _separate_tracks

    rng = np.random.default_rng(seed)
    n, T = int(rng.integers(1, 12)), int(rng.integers(1, 40))
    ulabels = np.stack([canonicalize(rng.integers(0, 5, n)) for _ in range(T)])
    seq = rng.integers(0, T, T + 5)
    w = rng.random(seq.size)
    fast = _separate_tracks(ulabels[seq], w)
    scanned = _scanned_tracks(ulabels, seq, np.ones(seq.size, dtype=np.int64), w)
    for name in fast._fields:
        np.testing.assert_array_equal(getattr(fast, name), getattr(scanned, name), err_msg=name)
    np.testing.assert_array_equal(
        build_tracks(ulabels, seq, np.ones(seq.size, dtype=bool), w).seg_track, fast.seg_track
    )
