"""SALSO on thinned chains, its generator, its compiled kernels, the blockwise expected loss (issue 27, 28 item 4).

- With the chains thinned for the runs, the reported expected loss is the loss of the reported
  labels over all draws (brute force, 1e-10), the result is at least as good as the search on all
  draws with the same seed, and on few items it is the exhaustive optimum.
- Runs take their random numbers from their own generator: the same seed gives the same result
  whatever numpy's or numba's global random state.
- Both routes share one compiled search kernel (the route's function is called through its
  address), and the search refuses arrays of another dtype or layout; seeded runs give the
  results the array kernels gave (pinned).
- The expected loss from blocks of draws (``loss_block_sums``) adds up to the brute-force one; so
  does the part the estimate does not change (the truth term), summed over the epochs of the tracks.
"""

import numpy as np
import pytest

from arviz_regen.base.partition_loss import loss_block_sums, mean_loss, parse_loss, partition_loss
from arviz_regen.base.salso import salso_search, thin_chains
from arviz_regen.base.state import all_partitions, canonicalize


def sticky_chains(rng, n_items, n_chain=3, n_draw=400, n_modes=3, moves=2):
    """Chains that move ``moves`` items per draw around a few nearby modes, as Gibbs chains do."""
    base = rng.integers(0, 4, n_items)
    modes = [np.where(rng.random(n_items) < 0.25, rng.integers(0, 4, n_items), base) for _ in range(n_modes)]
    z = np.empty((n_chain, n_draw, n_items), dtype=np.int64)
    for c in range(n_chain):
        cur = modes[c % n_modes].copy()
        for t in range(n_draw):
            i = rng.integers(0, n_items, moves)
            mode = modes[rng.integers(0, n_modes)] if rng.random() < 0.1 else modes[c % n_modes]
            cur[i] = np.where(rng.random(moves) < 0.9, mode[i], rng.integers(0, 5, moves))
            z[c, t] = cur
    return canonicalize(z)


def as_states(z):
    """Distinct states, visit weights and the chains as rows of the states."""
    flat = z.reshape(-1, z.shape[-1])
    states, inv = np.unique(flat, axis=0, return_inverse=True)
    w = np.bincount(inv.ravel()) / inv.size
    return states, w, inv.reshape(z.shape[:2])


@pytest.mark.parametrize("loss", ["VI", ("binder", 1.3)])
def test_thinned_search_reports_the_exact_loss_and_is_no_worse(loss):
    z = sticky_chains(np.random.default_rng(5), 24)
    states, w, index = as_states(z)
    spec = parse_loss(loss)
    full = salso_search(states, w, spec, index=index, seed=3, n_runs=6)
    thin = salso_search(states, w, spec, index=index, seed=3, n_runs=6, search_cells=24 * 60)
    assert full.search_draws == index.size and thin.search_draws <= 0.05 * index.size
    brute = np.mean([partition_loss(d, thin.labels, loss) for d in z.reshape(-1, z.shape[-1])])
    assert thin.expected_loss == pytest.approx(brute, rel=1e-10, abs=1e-12)
    assert mean_loss(thin.labels[None], states, w, spec)[0] == pytest.approx(brute, rel=1e-10)
    assert thin.expected_loss <= full.expected_loss * (1 + 1e-10) + 1e-12
    assert thin.labels.max() >= 2  # a posterior with structure, not one cluster


def test_thinned_search_finds_the_exhaustive_optimum():
    rng = np.random.default_rng(11)
    z = sticky_chains(rng, 8, n_draw=300)
    states, w, index = as_states(z)
    parts = all_partitions(8)
    for loss in ["VI", "binder", ("VI", 0.6)]:
        spec = parse_loss(loss)
        best = mean_loss(parts, states, w, spec).min()
        res = salso_search(states, w, spec, index=index, seed=1, n_runs=4, search_cells=8 * 40)
        assert res.search_draws < index.size
        assert res.expected_loss == pytest.approx(best, rel=1e-9, abs=1e-12), loss


def test_thin_chains_weights_and_rows():
    index = np.array([[0, 0, 1, 2, 2, 2], [3, 3, 3, 1, 1, 0]])
    assert thin_chains(index, 10, cells=1000) is None
    states, w, rows = thin_chains(index, 10, cells=60)  # step 2: visits 1, 3, 5 of each chain
    np.testing.assert_array_equal(states[rows], index[:, 1::2])
    np.testing.assert_allclose(w, np.bincount(rows.ravel()) / rows.size)
    # given weights are split among a state's visits: here twice state 3's
    weights = np.array([1.0, 1.0, 1.0, 2.0]) / 5.0
    states, w, rows = thin_chains(index, 10, weights, cells=60)
    kept = {s: np.sum(rows == k) for k, s in enumerate(states)}
    visits = np.bincount(index.ravel())
    expect = np.array([weights[s] / visits[s] * kept[s] for s in states])
    np.testing.assert_allclose(w, expect / expect.sum())


def test_seeded_runs_ignore_global_random_state():
    z = sticky_chains(np.random.default_rng(2), 20, n_draw=100)
    states, w, index = as_states(z)
    out = []
    for glob in (0, 12345):
        np.random.seed(glob)  # numpy's global state; numba's is seeded by the same call in compiled code
        res = salso_search(states, w, "VI", index=index, seed=7, n_runs=5)
        out.append((res.labels, res.run_losses, res.init))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_block_sums_add_up_to_the_expected_loss():
    rng = np.random.default_rng(4)
    z = sticky_chains(rng, 15, n_chain=2, n_draw=50).reshape(-1, 15)
    est = rng.integers(0, 3, 15)
    w = rng.random(z.shape[0])
    for loss in ["VI", ("binder", 0.5)]:
        brute = sum(wt * partition_loss(d, est, loss) for wt, d in zip(w, z)) / w.sum()
        parts = sum(loss_block_sums(est, z[s : s + 17] + 3, loss, w[s : s + 17]) for s in range(0, len(z), 17))
        assert parts[0] / parts[1] == pytest.approx(brute, rel=1e-10)
    assert loss_block_sums(est, z[:4], "VI")[1] == 4.0
    with pytest.raises(ValueError, match="one entry per draw"):
        loss_block_sums(est, z[:4], "VI", np.ones(3))
    with pytest.raises(ValueError, match="one label vector"):
        loss_block_sums(z[:2], z[:4], "VI")


@pytest.mark.parametrize("along_chains", [True, False])
def test_truth_term_from_the_tracks_equals_the_sum_over_the_draws(along_chains):
    from arviz_regen.base.salso import _Search

    rng = np.random.default_rng(3)
    states, w, index = as_states(sticky_chains(rng, 30, n_draw=60, moves=3))
    spec = parse_loss("VI")
    search = _Search(spec, states, w, index if along_chains else None)
    F = search.tracks.F
    direct = sum(w[t] * F[np.bincount(states[t])].sum() for t in range(states.shape[0]))
    np.testing.assert_allclose(search.truth_term, direct, rtol=1e-12)


@pytest.mark.parametrize("route", ["draws", "psm"])
def test_runs_in_blocks_elsewhere_give_the_same_result(route):
    rng = np.random.default_rng(4)
    states, w, index = as_states(sticky_chains(rng, 20, n_draw=80, moves=3))
    if route == "psm":
        psm = np.einsum("t,tij->ij", w, (states[:, :, None] == states[:, None, :]).astype(float))
        kw = dict(loss="binder", psm=psm)
    else:
        kw = dict(draws=states, weights=w, index=index, search_visits=60)  # thinned, then finished
    blocks_seen = []

    def elsewhere(func, blocks, shared=()):  # as map_blocks: func(*block, *shared) in order
        blocks_seen.extend(blocks)
        return (func(*block, *shared) for block in blocks)

    here = salso_search(n_runs=7, seed=5, **kw)
    there = salso_search(n_runs=7, seed=5, map_runs=elsewhere, n_blocks=3, **kw)
    assert [len(b[0]) for b in blocks_seen[:3]] == [2, 2, 3]
    # thinned chains: the final sweetening on all draws is one more call, with the 7 runs' estimates
    assert [len(b[0]) for b in blocks_seen[3:]] == ([] if route == "psm" else [7])
    for name in here._fields:
        np.testing.assert_array_equal(getattr(there, name), getattr(here, name), err_msg=name)


def test_one_search_kernel_serves_both_routes():
    """The route is a function address, not part of the search kernel: one compiled callback for both routes."""
    from arviz_regen.base import salso_ops

    rng = np.random.default_rng(6)
    states, w, index = as_states(sticky_chains(rng, 12, n_chain=2, n_draw=40))
    psm = np.einsum("t,tij->ij", w, (states[:, :, None] == states[:, None, :]).astype(float))
    salso_search(states, w, "VI", index=index, seed=1, n_runs=2)
    search = salso_ops.run_op()
    salso_search(loss="binder", psm=psm, seed=1, n_runs=2)
    assert salso_ops.run_op() is search
    assert salso_ops.route_op("psm").address != salso_ops.route_op("tracks").address


def test_run_refuses_arrays_it_cannot_read_by_address():
    from arviz_regen.base import salso_ops
    from arviz_regen.base.salso import RunSettings

    cfg = RunSettings(0, 1.0, 1.0, 0.0, 1, 1, 1, 0)
    with pytest.raises(TypeError, match="'start'.*C-contiguous 1-d int64"):
        salso_ops.run(salso_ops.route_op("psm"), cfg, 0, np.zeros(4, dtype=np.int32), np.zeros(1, dtype=np.uint64))
    with pytest.raises(TypeError, match="'rng'.*C-contiguous 1-d uint64"):
        salso_ops.run(salso_ops.route_op("psm"), cfg, 0, np.zeros(4, dtype=np.int64), np.zeros(1, dtype=np.int64))


#: results of 9508e1e (array kernels, before the C callbacks): labels, expected loss, run losses,
#: scans and zealous accepts of five seeded runs on each route
PINNED = {
    "tracks": (
        [0, 0, 1, 2, 3, 3, 4, 0, 4, 0, 4, 2, 3, 0, 1, 0, 1, 0, 1, 3, 0, 4, 0, 3, 4, 2, 2, 2, 1, 0],
        1.6438352335513509,
        [1.6438352335513509, 1.6482060361502657, 1.6502462604485832, 1.6502462604485832, 1.6502462604485832],
        [9, 9, 11, 9, 11],
        [2, 1, 2, 3, 2],
    ),
    "thinned": (
        [0, 1, 2, 3, 4, 4, 5, 1, 5, 6, 5, 7, 8, 0, 9, 1, 2, 0, 9, 10, 0, 5, 1, 4, 11, 7, 3, 3, 12, 1],
        1.2112887017706175,
        [1.2298872320874314, 1.2298872320874314, 1.2298872320874314, 1.2298872320874314, 1.2298872320874314],
        [9, 12, 10, 11, 11],
        [0, 0, 0, 0, 1],
    ),
    "states": (
        [0, 0, 1, 2, 3, 3, 2, 0, 2, 0, 2, 2, 3, 0, 1, 0, 1, 0, 1, 3, 0, 2, 0, 3, 1, 2, 2, 2, 1, 0],
        79.72599999999986,
        [79.72599999999986, 79.72599999999986, 79.72599999999986, 79.72599999999986, 81.75266666666676],
        [5, 9, 7, 7, 14],
        [1, 1, 1, 0, 1],
    ),
    "psm": (
        [0, 0, 1, 2, 3, 3, 4, 0, 4, 0, 4, 5, 6, 0, 7, 0, 1, 0, 7, 3, 0, 4, 0, 3, 8, 5, 2, 2, 1, 0],
        76.91999999999994,
        [76.91999999999994, 76.91999999999994, 76.91999999999994, 76.91999999999996, 76.91999999999994],
        [12, 12, 12, 12, 12],
        [1, 2, 1, 0, 1],
    ),
}


@pytest.mark.parametrize("case", sorted(PINNED))
def test_seeded_search_results_are_pinned(case):
    """The same seed gives the same search, run by run, as the array kernels did (any route)."""
    z = sticky_chains(np.random.default_rng(11), 30, n_chain=2, n_draw=150)
    states, w, index = as_states(z)
    psm = np.einsum("t,tij->ij", w, (states[:, :, None] == states[:, None, :]).astype(float))
    kw = {
        "tracks": dict(draws=states, weights=w, loss="VI", index=index),
        "thinned": dict(draws=states, weights=w, loss=("VI", 0.6), index=index, search_cells=30 * 40),
        "states": dict(draws=states, weights=w, loss=("binder", 1.3)),
        "psm": dict(loss="binder", psm=psm),
    }[case]
    r = salso_search(seed=4, n_runs=5, **kw)
    labels, expected, run_losses, scans, accepts = PINNED[case]
    np.testing.assert_array_equal(r.labels, labels)
    np.testing.assert_array_equal(r.n_scans, scans)
    np.testing.assert_array_equal(r.zealous_accepts, accepts)
    np.testing.assert_allclose(r.run_losses, run_losses, rtol=1e-13)
    assert r.expected_loss == pytest.approx(expected, rel=1e-13)


def test_canonical_long_vector_in_numpy():
    from arviz_regen.base.salso import _canonical

    x = np.random.default_rng(3).integers(-5, 90, 70_000)  # beyond canonicalize's numpy size
    first = {}
    want = np.array([first.setdefault(v, len(first)) for v in x.tolist()])
    assert np.array_equal(_canonical(x), want) and _canonical(x).dtype == np.int64
