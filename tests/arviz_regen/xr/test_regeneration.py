"""States that stop recurring: one clear warning and batch-means estimates instead of NaN.

Also the regeneration engine itself (tours, visit counts, kernels, pooling, Dataset layout) and
the batch-means core: literal transcriptions of the formulas, agreement between the streaming
co-clustering kernel and the numpy core, and coverage of 95% intervals on a slowly mixing chain
with a known target. Fixed seeds; coverage tolerance 3 binomial standard deviations.
"""

import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import arviz_regen  # noqa: E402
from arviz_regen.xr.draws import load_partition  # noqa: E402
from arviz_regen.plots.partition_plots import similarity_order  # noqa: E402
from arviz_regen.base.batch_means import batch_means, batch_sums  # noqa: E402
from arviz_regen.base.pair_kernels import pair_rs_kernel  # noqa: E402
from arviz_regen.xr.regeneration import (  # noqa: E402
    MIN_TOURS,
    NonRecurrenceWarning,
    assemble,
    estimate,
    find_tours,
    state_rs_kernel,
)
from arviz_regen.base.state import canonicalize  # noqa: E402
from arviz_regen.testing import iid_chain, make_idata, metropolis_chain, random_partitions  # noqa: E402
from arviz_regen.base.tours import regeneration_times, rs_mean_se, tour_sums  # noqa: E402

N_ITEMS, N_CHAIN, N_DRAW = 40, 2, 40_000

STATES = np.array([[0, 0, 0, 0], [0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 0], [0, 1, 2, 3], [0, 0, 0, 1]])
PROBS = np.array([0.3, 0.22, 0.18, 0.14, 0.1, 0.06])


# ------------------------------------------------------------------------------------------
# literal transcriptions
# ------------------------------------------------------------------------------------------


def literal_bm(chains, r=3):
    """Replicated (lugsail) batch means of chains (m, n), loops as printed in batch_means.py."""
    chains = np.atleast_2d(np.asarray(chains, dtype=float))
    m, n = chains.shape
    mu = chains.mean()
    b = max(int(np.floor(np.sqrt(n))), 1)

    def var(bs):
        a = n // bs
        dev = [(chains[c, k * bs : (k + 1) * bs].mean() - mu) ** 2 for c in range(m) for k in range(a)]
        return bs * sum(dev) / (m * a - 1) if m * a >= 2 else np.nan

    v = var(b)
    if r > 1 and b // r >= 1:
        lug = 2 * v - var(b // r)
        v = lug if lug >= 0 else v
    return mu, np.sqrt(v / (m * n))


def pair_indicators(labels):
    """1{i, j together} per draw, pairs in triu order: (..., n_pairs)."""
    iu, ju = np.triu_indices(labels.shape[-1], 1)
    return (labels[..., iu] == labels[..., ju]).astype(float)


def frequencies(labels):
    """Plain co-clustering frequencies (n_items, n_items) of labels (n_draw, n_items)."""
    n = labels.shape[-1]
    return np.stack([(labels == labels[:, i : i + 1]).mean(axis=0) for i in range(n)])


# ------------------------------------------------------------------------------------------
# the 40-item flat posterior: every draw a new partition
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flat():
    rng = np.random.default_rng(40)
    n_clus = rng.integers(2, N_ITEMS + 1, size=(N_CHAIN * N_DRAW, 1))
    labels = canonicalize((rng.random((N_CHAIN * N_DRAW, N_ITEMS)) * n_clus).astype(np.int64))
    index = np.arange(N_CHAIN * N_DRAW).reshape(N_CHAIN, N_DRAW)
    idata = make_idata(labels, index, np.zeros(len(labels)))  # flat: constant partition_logp
    pdraws = load_partition(idata)
    assert pdraws.n_states == N_CHAIN * N_DRAW  # all distinct
    return idata, pdraws, labels.reshape(N_CHAIN, N_DRAW, N_ITEMS)


def _one_warning(record):
    ours = [w for w in record if issubclass(w.category, NonRecurrenceWarning)]
    assert len(ours) == 1, [str(w.message) for w in record]
    msg = str(ours[0].message)
    assert "visited too rarely" in msg and "batch-means" in msg
    assert "more draws" in msg and "fewer items" in msg and "number of clusters" in msg
    return msg


def test_flat_coclustering_is_the_plain_frequencies(flat):
    idata, pdraws, labels = flat
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cc = arviz_regen.coclustering(idata)
    _one_warning(rec)
    assert cc.attrs["se_method"] == "batch_means"
    assert set(cc.data_vars) == {"rho", "se", "cv", "n_tours"}
    assert cc.rho.dims == ("chain", "item_i", "item_j") and cc.n_tours.dims == ("chain",)
    assert np.all(cc.n_tours.values == 0)
    for c in range(N_CHAIN):
        np.testing.assert_allclose(cc.rho.values[c], frequencies(labels[c]), rtol=1e-12)
    off = ~np.eye(N_ITEMS, dtype=bool)
    assert np.all(np.isfinite(cc.se.values)) and np.all(cc.se.values[:, off] > 0)
    # the streaming kernel's batch-means se equals the numpy core on a few pairs' indicators
    ind = pair_indicators(labels[:, :, :4])  # items 0-3: pairs (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
    iu, ju = np.triu_indices(4, 1)
    for c in range(N_CHAIN):
        _, se = batch_means(ind[c])
        np.testing.assert_allclose(cc.se.values[c, iu, ju], se, rtol=1e-9)
    # pooled chains: replicated batch means, same frequencies
    with pytest.warns(NonRecurrenceWarning):
        pooled = arviz_regen.coclustering(pdraws, combined=True)
    np.testing.assert_allclose(pooled.rho.values, frequencies(labels.reshape(-1, N_ITEMS)), rtol=1e-12)
    _, se01 = literal_bm(ind[:, :, 0])
    np.testing.assert_allclose(pooled.se.values[0, 1], se01, rtol=1e-9)
    # asking for it explicitly: same numbers, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonRecurrenceWarning)
        explicit = arviz_regen.coclustering(pdraws, combined=True, se_method="batch_means")
    np.testing.assert_array_equal(explicit.rho.values, pooled.rho.values)
    # insisting on regeneration: the old NaN, with its own warning
    with pytest.warns(UserWarning, match="Fewer than two whole regeneration tours"):
        nan = arviz_regen.coclustering(pdraws, combined=True, se_method="regenerative")
    assert np.isnan(nan.rho.values).all() and nan.attrs["se_method"] == "regenerative"


def test_flat_rs_estimate_top_states_consensus(flat):
    idata, pdraws, labels = flat
    n_clus = labels.max(axis=-1) + 1
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = arviz_regen.rs_estimate(idata, lambda lab: lab.max(axis=-1) + 1)
    _one_warning(rec)
    assert est.attrs["se_method"] == "batch_means" and est.estimate.dims == ("chain",)
    for c in range(N_CHAIN):
        mean, se = literal_bm(n_clus[c])
        assert est.estimate.values[c] == pytest.approx(mean, rel=1e-12)
        assert est.se.values[c] == pytest.approx(se, rel=1e-9)

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        top = arviz_regen.top_states(pdraws, k=5)
    _one_warning(rec)
    assert top.attrs["se_method"] == "batch_means"
    assert "visit frequency" in top.probability.attrs["long_name"]
    # every state is visited once in one chain: frequency 1/N_DRAW there, 0 in the other
    assert np.all(np.isfinite(top.probability.values)) and np.all(np.isfinite(top.se.values))
    np.testing.assert_allclose(top.probability.values.sum(axis=0), 1.0 / N_DRAW)
    assert np.all(np.isfinite(top.logp_probability.values))

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = arviz_regen.consensus(pdraws)
    _one_warning(rec)
    ref = arviz_regen.consensus_partition(
        frequencies(labels.reshape(-1, N_ITEMS)), candidates=pdraws.labels[:50], method="search"
    )
    assert res.expected_loss == pytest.approx(ref.expected_loss, rel=1e-9)
    assert res.labels.shape == (N_ITEMS,) and np.isfinite(res.expected_loss)


def test_flat_plots_never_empty_or_crash(flat):
    import matplotlib.pyplot as plt

    _, pdraws, _ = flat
    with pytest.warns(NonRecurrenceWarning):
        ax = arviz_regen.plot_coclustering(pdraws)
    assert len(ax.images) == 1 and np.all(np.isfinite(ax.images[0].get_array()))
    with pytest.warns(NonRecurrenceWarning):
        ax = arviz_regen.plot_top_states(pdraws, k=5)
    assert all(np.isfinite(line.get_ydata()).all() for line in ax.lines)
    assert ax.get_ylabel() == "cumulative visit frequency" and ax.texts  # labelled fallback
    with pytest.warns(NonRecurrenceWarning):
        axes = arviz_regen.plot_coclustering_trace(pdraws, n_points=10)
    for axi in axes:
        assert "batch means" in axi.get_title()
        assert np.isfinite(np.concatenate([line.get_ydata() for line in axi.lines])).any()
    # NaN estimates (regeneration insisted on): a clear error, not a crash inside scipy ...
    with pytest.warns(UserWarning, match="Fewer than two"):
        nan = arviz_regen.coclustering(pdraws, combined=True, se_method="regenerative")
    with pytest.raises(ValueError, match="undefined"):
        arviz_regen.plot_coclustering(nan)
    with pytest.raises(ValueError, match="undefined"):
        similarity_order(nan.rho.values)
    # ... and empty panels that say why
    cum = arviz_regen.coclustering(pdraws, cumulative=True, n_points=5, se_method="regenerative")
    axes = arviz_regen.plot_coclustering_trace(cum)
    assert all("regeneration tours" in axi.texts[0].get_text() for axi in axes)
    with pytest.warns(UserWarning, match="Fewer than two"):
        top = arviz_regen.top_states(pdraws, k=3, se_method="regenerative")
    ax = arviz_regen.plot_top_states(top)
    assert "regeneration tours" in ax.texts[0].get_text()
    plt.close("all")


# ------------------------------------------------------------------------------------------
# the switch
# ------------------------------------------------------------------------------------------


def _chain_with_tours(n_tours, lead=5):
    """Top state 0 visited n_tours + 1 times after ``lead`` draws of state 1."""
    return np.array([1] * lead + [0, 1, 2] * (n_tours + 1))


def test_auto_threshold_per_chain_and_pooled():
    idx = np.stack([_chain_with_tours(MIN_TOURS), _chain_with_tours(MIN_TOURS)])
    f = lambda lab: lab.max(axis=-1) + 1  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonRecurrenceWarning)
        ok = arviz_regen.rs_estimate(make_idata(STATES, idx, np.log(PROBS)), f)
    assert ok.attrs["se_method"] == "regenerative" and np.all(ok.n_tours.values == MIN_TOURS)
    short = np.stack([_chain_with_tours(MIN_TOURS - 1, lead=8)] * 2)
    with pytest.warns(NonRecurrenceWarning, match=f"whole tours per chain: {MIN_TOURS - 1}, {MIN_TOURS - 1}"):
        bm = arviz_regen.rs_estimate(make_idata(STATES, short, np.log(PROBS)), f)
    assert bm.attrs["se_method"] == "batch_means"
    # pooled, the same chains have enough tours together
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonRecurrenceWarning)
        comb = arviz_regen.rs_estimate(make_idata(STATES, short, np.log(PROBS)), f, combined=True)
    assert comb.attrs["se_method"] == "regenerative" and comb.n_tours.values == 2 * (MIN_TOURS - 1)


def test_chain_away_from_the_others_is_named():
    good = iid_chain(PROBS, 1, 600, np.random.default_rng(3))[0]
    stuck = np.where(good == 0, 1, good)  # never visits the top state
    idata = make_idata(STATES, np.stack([good, stuck]), np.log(PROBS))
    with pytest.warns(NonRecurrenceWarning, match="stuck away") as rec:
        cc = arviz_regen.coclustering(idata)
    assert "position [1]" in str(rec[0].message)
    assert cc.attrs["se_method"] == "batch_means" and np.all(np.isfinite(cc.rho.values))


# ------------------------------------------------------------------------------------------
# batch means: formulas, kernel, coverage
# ------------------------------------------------------------------------------------------


def test_batch_means_core_equals_literal():
    rng = np.random.default_rng(1)
    x = np.cumsum(rng.normal(size=(2, 1003)), axis=1) * 0.05 + rng.normal(size=(2, 1003))
    for r in (1, 3):
        for c in range(2):
            mean, se = batch_means(x[c], r=r)
            ref = literal_bm(x[c], r=r)
            assert mean == pytest.approx(ref[0], rel=1e-12) and se == pytest.approx(ref[1], rel=1e-9)
        # several chains: replicated batch means around the grand mean
        pooled = batch_sums(x[0] - 3.0, r=r)
        pooled = type(pooled)(*(np.stack(f) for f in zip(pooled, batch_sums(x[1] - 3.0, r=r)))).pooled()
        mean, se = pooled.mean_se()
        ref = literal_bm(x - 3.0, r=r)
        assert mean[0] == pytest.approx(ref[0], rel=1e-10) and se[0] == pytest.approx(ref[1], rel=1e-9)
    # vectorised over functions, and cumulative equals truncated
    pos = np.array([0, 2, 3, 8, 9, 50, 500, 1002])
    cm, cse = batch_sums(x.T, pos).mean_se()
    for e, p in enumerate(pos):
        m, s = batch_sums(x.T[: p + 1]).mean_se()
        np.testing.assert_allclose(cm[e], m[0], rtol=1e-12)
        np.testing.assert_allclose(cse[e], s[0], rtol=1e-9)
    assert np.isnan(cse[0]).all() and np.isfinite(cse[1:]).all()  # one draw, one batch: NaN


def test_pair_kernel_equals_numpy_core():
    rng = np.random.default_rng(2)
    idx = metropolis_chain(PROBS, 2, 700, rng, stay=0.7, max_step=2)
    idata = make_idata(STATES, idx, np.log(PROBS))
    ind = pair_indicators(STATES[idx])  # (chain, draw, pair)
    iu, ju = np.triu_indices(4, 1)
    for combined in (False, True):
        cc = arviz_regen.coclustering(idata, se_method="batch_means", combined=combined, cumulative=True, n_points=9)
        for e, d in enumerate(cc.draw.values):
            if combined:
                ref = [literal_bm(ind[:, : d + 1, p]) for p in range(iu.size)]
                got_m, got_s = cc.rho.values[e, iu, ju], cc.se.values[e, iu, ju]
            else:
                ref = [literal_bm(ind[1, : d + 1, p]) for p in range(iu.size)]
                got_m, got_s = cc.rho.values[1, e, iu, ju], cc.se.values[1, e, iu, ju]
            np.testing.assert_allclose(got_m, [m for m, _ in ref], rtol=1e-12)
            np.testing.assert_allclose(got_s, [s for _, s in ref], rtol=1e-9)
    assert cc.attrs["se_method"] == "batch_means"
    # and the rs_estimate route on the same indicators gives the same numbers
    est = arviz_regen.rs_estimate(idata, pair_indicators, se_method="batch_means", combined=True)
    np.testing.assert_allclose(est.se.values, cc.se.values[-1, iu, ju], rtol=1e-9)


@pytest.fixture(scope="module")
def sticky():
    """Many replicate chains of a slowly mixing reversible chain over 8 partitions of 6 items."""
    states = random_partitions(8, 6, np.random.default_rng(2019))
    probs = np.array([0.3, 0.2, 0.15, 0.12, 0.09, 0.07, 0.04, 0.03])
    idx = metropolis_chain(probs, 400, 10_000, np.random.default_rng(6), stay=0.8, max_step=2)
    return states, probs, idx


def test_batch_means_intervals_cover_on_slowly_mixing_chain(sticky):
    states, probs, idx = sticky
    n_rep = idx.shape[0]
    nclus = (states.max(axis=1) + 1)[idx[:20]].astype(float)
    centred = nclus - nclus.mean()
    ac1 = np.mean(centred[:, 1:] * centred[:, :-1]) / np.mean(centred * centred)
    assert ac1 > 0.8  # slowly mixing: integrated autocorrelation time ≈ 17 draws
    pdraws = load_partition(make_idata(states, idx, np.log(probs)))
    tol = 3 * np.sqrt(0.95 * 0.05 / n_rep)
    est = arviz_regen.rs_estimate(pdraws, lambda lab: lab.max(axis=-1) + 1, se_method="batch_means")
    truth = probs @ (states.max(axis=1) + 1)
    covered = np.abs(est.estimate.values - truth) <= 1.96 * est.se.values
    assert abs(covered.mean() - 0.95) < tol
    rho = np.einsum("s,sij->ij", probs, (states[:, :, None] == states[:, None, :]).astype(float))
    cc = arviz_regen.coclustering(pdraws, se_method="batch_means")
    iu, ju = np.triu_indices(6, 1)
    for p in np.argsort(np.abs(rho[iu, ju] - 0.5))[:2]:
        i, j = iu[p], ju[p]
        covered = np.abs(cc.rho.values[:, i, j] - rho[i, j]) <= 1.96 * cc.se.values[:, i, j]
        assert abs(covered.mean() - 0.95) < tol


# ------------------------------------------------------------------------------------------
# the engine
# ------------------------------------------------------------------------------------------


def test_engine_tours_visit_counts_and_completed():
    idx = metropolis_chain(PROBS, 3, 500, np.random.default_rng(4), stay=0.5, max_step=2)
    tours = find_tours(idx, 0, n_states=6)
    top = np.array([0, 2, 1])
    for c, (counts, lengths) in enumerate(tours.visit_counts(top)):
        tau = [t for t in range(500) if idx[c, t] == 0]
        ref = [[sum(idx[c, t] == s for t in range(tau[r], tau[r + 1])) for s in top] for r in range(len(tau) - 1)]
        np.testing.assert_array_equal(counts, ref)
        np.testing.assert_array_equal(lengths, np.diff(tau))
    # one ranked list per chain (own regeneration states)
    own = find_tours(idx, [0, 1, 2], n_states=6)
    per = own.visit_counts([np.array([0, 3]), np.array([1, 0]), np.array([2, 5])])
    assert all(cnt.shape[1] == 2 and np.all(cnt[:, 0] == 1) for cnt, _ in per)
    # tours completed by each draw: what hotelling_rs reports along the draws
    hot = arviz_regen.hotelling_rs(make_idata(STATES, idx, np.log(PROBS)), k=2, cumulative="lookahead")
    np.testing.assert_array_equal(tours.completed(), hot.n_tours.values)
    np.testing.assert_array_equal(tours.tours_at([10, 499])[:, 1], tours.n_tours)


def test_engine_kernels_pooling_and_layout():
    idx = iid_chain(PROBS, 3, 400, np.random.default_rng(5))
    tours = find_tours(idx, 0)
    values = pair_indicators(STATES)  # (states, pairs)
    a = tours.rs_sums(state_rs_kernel(values))
    b = tours.rs_sums(pair_rs_kernel(STATES))
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    mean, se = a.pooled().mean_se()
    s_all, n_all = zip(*(tour_sums(values[row], regeneration_times(row == 0)) for row in idx))
    for (s, n), s_ref, n_ref in zip(tours.tour_sums(values), s_all, n_all):
        np.testing.assert_array_equal(s, s_ref)
        np.testing.assert_array_equal(n, n_ref)
    ref_m, ref_s = rs_mean_se(np.concatenate(s_all), np.concatenate(n_all))
    np.testing.assert_allclose(mean[0], ref_m, rtol=1e-12)
    np.testing.assert_allclose(se[0], ref_s, rtol=1e-9)
    m2, s2, nt = estimate(tours, "regenerative", state_values=values, combined=True, positions=[50, 399])
    np.testing.assert_allclose(m2[-1], ref_m, rtol=1e-12)
    assert nt.shape == (2,) and nt[-1] == tours.n_tours.sum()
    pdraws = load_partition(make_idata(STATES, idx, np.log(PROBS)))
    m3, s3, nt3 = estimate(tours, "batch_means", state_values=values, positions=[50, 399])
    ds = assemble(pdraws, {"x": (("pair",), m3), "n_tours": ((), nt3)}, combined=False, positions=[50, 399])
    assert ds.x.dims == ("chain", "draw", "pair") and list(ds.draw.values) == [50, 399]
    assert ds.n_tours.dims == ("chain", "draw")
    end = assemble(pdraws, {"x": (("pair",), m3[:, -1:])}, combined=False)
    assert end.x.dims == ("chain", "pair") and "draw" not in end.dims
