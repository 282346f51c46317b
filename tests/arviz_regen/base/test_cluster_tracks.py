"""Cluster tracks along chains (:mod:`arviz_regen.base.cluster_tracks`) against direct sums over draws.

For random sticky chains (a few items move per draw, sometimes none, sometimes all) and random
estimate labels, every per-item sum the SALSO search reads from the tracks, Σ over the draws of
w_t G(n_{t,k,l_t(i)}), equals the sum over the draws; the segments of an item cover each chain
exactly once. Integer weights make both sides exact.
"""

import numba
import numpy as np
import pytest

from arviz_regen.base.addresses import int64_at
from arviz_regen.base.cluster_match import WORK_ROWS, group_and_match, match_rows
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


@numba.njit
def _match_by_address(n_u, n_v, work):
    """The matching as the scan runs it: on the rows of ``work`` as pointers (:mod:`arviz_regen.base.track_scan`)."""
    w, row = np.int64(work.ctypes.data), 8 * work.shape[1]
    lu, lv, ou, cu = int64_at(w), int64_at(w + row), int64_at(w + 2 * row), int64_at(w + 3 * row)
    ov, cv, fp, overlap = int64_at(w + 4 * row), int64_at(w + 5 * row), int64_at(w + 6 * row), int64_at(w + 7 * row)
    owner, owner_n, moved = int64_at(w + 8 * row), int64_at(w + 9 * row), int64_at(w + 10 * row)
    n = work.shape[1] - 1
    return match_rows(n_u, n_v, True, n, lu, lv, ou, cu, ov, cv, fp, overlap, owner, owner_n, moved)


def test_matching_moves_only_what_changed():
    """On arrays and on pointers alike (the same rows filled)."""
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
        by_address = work.copy()
        count = group_and_match(np.int64(lu.max() + 1), np.int64(lv.max() + 1), True, work)
        assert _match_by_address(np.int64(lu.max() + 1), np.int64(lv.max() + 1), by_address) == count
        np.testing.assert_array_equal(by_address, work)
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


def test_scan_refuses_scratch_of_the_wrong_shape():
    from arviz_regen.base.track_scan import scan

    n, T = 4, 3
    i8 = np.int64
    good = [
        np.zeros(T, dtype=i8), np.ones(T, dtype=i8), np.ones(T), np.zeros((2, n), dtype=i8),
        np.zeros(1, dtype=i8), np.zeros(1), np.zeros((4, 1), dtype=i8), np.zeros((3, n + 1), dtype=i8),
        np.zeros((2, 8), dtype=i8), np.zeros((WORK_ROWS, n + 1), dtype=i8), np.zeros(3, dtype=i8),
    ]  # fmt: skip
    assert scan(good, False) == (T, n * T, T)  # each draw a chain of its own, one cluster: one track, n segments
    for at, bad in ((7, np.zeros((3, n), dtype=np.int64)), (9, np.zeros((WORK_ROWS, n), dtype=np.int64))):
        with pytest.raises(ValueError, match="wrong shape"):
            scan(good[:at] + [bad] + good[at + 1 :], False)
    with pytest.raises(TypeError, match="'seq'"):
        scan([good[0].astype(np.int32)] + good[1:], False)
