"""Co-clustering and consensus at scale: blocked pair sums, item subsets, bounded memory.

The pair sums are computed block by block over item rows from the items grouped by cluster;
these tests check that blocking and subsets give exactly the numbers of the whole computation,
that nothing of size pairs × states is allocated, and that the consensus search scales.
"""

import importlib
import tracemalloc
import warnings

import numpy as np
import pytest

import arviz_regen
from arviz_regen.base.pair_kernels import block_pairs, check_memory, pair_frequencies, row_blocks
from arviz_regen.base.state import canonicalize
from arviz_regen.testing import make_idata, metropolis_chain, random_partitions, zipf_probs

cc_mod = importlib.import_module("arviz_regen.estimates.coclustering")  # the module, not the function


@pytest.fixture(scope="module")
def idata():
    rng = np.random.default_rng(8)
    states = random_partitions(120, 11, rng, max_clusters=4)
    probs = zipf_probs(120, 1.4)
    idx = metropolis_chain(probs, 3, 1500, rng, stay=0.4, max_step=5)
    return make_idata(states, idx, np.log(probs))


CASES = [
    {},
    {"combined": True},
    {"cumulative": True, "n_points": 6},
    {"se_method": "batch_means"},
    {"se_method": "batch_means", "combined": True, "cumulative": True, "n_points": 4},
]


def test_row_blocks_cover_the_triangle_once():
    for n, max_pairs in [(2, 1), (7, 1), (7, 5), (40, 100), (40, 10**9)]:
        blocks = row_blocks(n, max_pairs)
        ii, jj = zip(*(block_pairs(i0, i1, n) for i0, i1 in blocks))
        iu, ju = np.triu_indices(n, 1)
        np.testing.assert_array_equal(np.concatenate(ii), iu)
        np.testing.assert_array_equal(np.concatenate(jj), ju)
        assert all(len(block_pairs(i0, i1, n)[0]) <= max_pairs or i1 == i0 + 1 for i0, i1 in blocks)
    assert row_blocks(1, 10) == []


@pytest.mark.parametrize("kwargs", CASES)
def test_blocked_pair_sums_are_exactly_the_whole(idata, kwargs, monkeypatch):
    whole = arviz_regen.coclustering(idata, **kwargs)
    monkeypatch.setattr(cc_mod, "PAIR_BLOCK_BYTES", 1)  # one item row per block
    blocked = arviz_regen.coclustering(idata, **kwargs)
    for name in ("rho", "se", "cv", "n_tours"):
        np.testing.assert_array_equal(blocked[name].values, whole[name].values)


@pytest.mark.parametrize("kwargs", CASES[:2] + CASES[3:4])
def test_items_subset_is_the_slice_of_the_whole(idata, kwargs):
    whole = arviz_regen.coclustering(idata, **kwargs)
    # labels (in the order given), a slice of labels (inclusive, as .sel), a mask, one item
    for items, pos in (
        ([7, 2, 9], [7, 2, 9]),
        (slice(3, 6), [3, 4, 5, 6]),
        (np.arange(11) % 3 == 0, [0, 3, 6, 9]),
        ([4], [4]),
    ):
        sub = arviz_regen.coclustering(idata, items=items, **kwargs)
        pos = np.array(pos)
        ref = whole.isel(item_i=pos, item_j=pos)
        for name in ("rho", "se", "cv", "n_tours"):
            np.testing.assert_array_equal(sub[name].values, ref[name].values)
        np.testing.assert_array_equal(sub.item_i.values, pos)


def test_items_argument_errors(idata):
    with pytest.raises(ValueError, match="not labels of the item dimension"):
        arviz_regen.coclustering(idata, items=[3, 99])
    with pytest.raises(ValueError, match="more than once"):
        arviz_regen.coclustering(idata, items=[3, 3])
    with pytest.raises(ValueError, match="one entry per item"):
        arviz_regen.coclustering(idata, items=np.ones(4, dtype=bool))
    with pytest.raises(ValueError, match="selects no item"):
        arviz_regen.coclustering(idata, items=np.zeros(11, dtype=bool))
    with pytest.raises(MemoryError, match="Pass `items=`"):
        check_memory(1 << 60, "A test", "Pass `items=`.")


def test_pair_frequencies_literal():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, (50, 12))
    w = rng.random(50)
    ref = np.einsum("s,sij->ij", w / w.sum(), (labels[:, :, None] == labels[:, None, :]).astype(float))
    np.testing.assert_allclose(pair_frequencies(labels, w), ref, rtol=1e-12)
    np.testing.assert_allclose(pair_frequencies(canonicalize(labels)), pair_frequencies(labels), rtol=1e-15)


def test_no_pairs_by_states_memory():
    """Many distinct states over many items: pairs × states float64 would be 190 MB."""
    rng = np.random.default_rng(1)
    n_items, n_draw = 150, 2000
    truth = rng.integers(0, 4, n_items)
    z = np.broadcast_to(truth, (1, n_draw, n_items)).copy()
    move = rng.random(z.shape) < 0.05
    z[move] = rng.integers(0, 4, size=int(move.sum()))
    z = canonicalize(z)
    pairs_states = n_items * (n_items - 1) // 2 * n_draw * 8
    out_bytes = 3 * n_items**2 * 8
    warnings.simplefilter("ignore")
    calls = (
        lambda x: arviz_regen.coclustering(x, se_method="batch_means"),
        lambda x: arviz_regen.consensus(x, method="visited", se_method="batch_means"),
        lambda x: arviz_regen.consensus(x, se_method="batch_means"),
    )
    for fn in calls:  # compile outside the trace (a fresh environment compiles the kernels here)
        fn(z[:, :40])
    for fn in calls:
        tracemalloc.start()
        fn(z)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < pairs_states / 8 and peak < 40 * out_bytes + 4 * z.nbytes


def test_binder_loss_kernel_equals_numpy_path():
    rng = np.random.default_rng(3)
    n = 400  # 79,800 pairs: above the numpy block threshold
    rho = rng.random((n, n))
    rho = (rho + rho.T) / 2
    np.fill_diagonal(rho, 1.0)
    labels = rng.integers(0, 6, (5, n))
    iu, ju = np.triu_indices(n, 1)
    w = rho[iu, ju]
    ref = w.sum() + ((labels[:, iu] == labels[:, ju]) * (1 - 2 * w)).sum(axis=1)
    np.testing.assert_allclose(arviz_regen.binder_loss(labels, rho), ref, rtol=1e-10)
    for row, want in zip(labels, ref):  # one vector: the cluster-by-cluster path
        assert arviz_regen.binder_loss(row, rho) == pytest.approx(want, rel=1e-12)


def test_consensus_salso_route_is_a_local_optimum():
    rng = np.random.default_rng(4)
    n = 130  # above SEARCH_MAX_ITEMS: SALSO on the RS co-clustering estimate
    truth = rng.integers(0, 3, n)
    z = np.broadcast_to(truth, (2, 400, n)).copy()
    move = rng.random(z.shape) < 0.08
    z[move] = rng.integers(0, 4, size=int(move.sum()))
    z = canonicalize(z)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = arviz_regen.consensus(z)
        rho = arviz_regen.coclustering(z, combined=True)["rho"].values
        visited = arviz_regen.consensus(z, method="visited")
    assert res.method == "salso"
    assert res.expected_loss <= visited.expected_loss + 1e-9
    assert res.expected_loss == pytest.approx(arviz_regen.binder_loss(res.labels, rho), rel=1e-12)
    # no single item move (to another cluster or a new one) lowers the loss
    lab = res.labels
    moves = []
    for i in range(n):
        for k in range(lab.max() + 2):
            if k != lab[i]:
                m = lab.copy()
                m[i] = k
                moves.append(m)
    assert arviz_regen.binder_loss(np.array(moves), rho).min() >= res.expected_loss - 1e-9
