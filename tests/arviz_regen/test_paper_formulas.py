"""arviz_regen equals a literal transcription of the paper's / SPEC section 4 formulas.

Hand-made short sequences of states; the reference implementations below loop over draws and
tours and invert matrices exactly as printed, with no shared code with the package.
"""

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import arviz_regen
from arviz_regen.base.tours import (
    cumulative_rs_mean_se,
    prefix_sums,
    regeneration_times,
    rs_from_sums,
    rs_mean_cov,
    rs_mean_se,
    tour_sums,
)
from arviz_regen.estimates.consensus import _all_partitions
from arviz_regen.testing import make_idata

# five distinct partitions of 4 items (canonical labels) and their log unnormalized posterior
STATES = np.array([[0, 0, 0, 0], [0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 0], [0, 1, 2, 3]])
LOGP = np.array([-1.0, -1.3, -1.7, -2.5, -3.0]) + 10.0
# hand-made chain of state ids: 13 visits to state 0 (12 whole tours), draws before the first
# visit and after the last are not used
SEQ = [
    3,
    2,
    0,
    1,
    2,
    0,
    0,
    1,
    1,
    0,
    2,
    2,
    1,
    0,
    1,
    0,
    2,
    1,
    3,
    0,
    1,
    2,
    2,
    0,
    1,
    0,
    0,
    2,
    1,
    1,
    0,
    3,
    1,
    4,
    0,
    2,
    1,
    0,
    1,
    1,
    2,
    3,
]
SEQ2 = [
    1,
    0,
    2,
    1,
    0,
    1,
    1,
    0,
    0,
    2,
    0,
    1,
    3,
    2,
    0,
    2,
    1,
    0,
    1,
    2,
    0,
    4,
    1,
    1,
    0,
    0,
    2,
    1,
    3,
    0,
    1,
    0,
    2,
    2,
    0,
    1,
    1,
    1,
    0,
    2,
    0,
    1,
]


def literal_hotelling(x, K):
    """SPEC section 4, steps 1-5, as printed (pooled ranking = this chain's visited states)."""
    visited = sorted(set(x), key=lambda s: -LOGP[s])
    S = visited[:K]
    q = [math.exp(LOGP[s] - LOGP[S[0]]) for s in S]
    taus = [t for t in range(len(x)) if x[t] == S[0]]
    R = len(taus) - 1
    s_r, N_r = [], []
    for r in range(1, R + 1):
        tour = x[taus[r - 1] : taus[r]]
        s_r.append([sum(1.0 / q[i] for xt in tour if xt == S[i]) for i in range(K)])
        N_r.append(len(tour))
    s_r, N_r = np.array(s_r), np.array(N_r, dtype=float)
    gbar = s_r.sum(axis=0) / N_r.sum()
    Nbar = N_r.mean()
    Sigma = sum(np.outer(s_r[r] - N_r[r] * gbar, s_r[r] - N_r[r] * gbar) for r in range(R)) / (R * Nbar**2)
    Si = np.linalg.inv(Sigma)
    one = np.ones(K)
    w = Si @ one / (one @ Si @ one)
    Zinv = w @ gbar
    T2 = R * (gbar - Zinv) @ Si @ (gbar - Zinv)
    return {
        "t2": T2,
        "p": stats.chi2.sf(T2, K - 1),
        "R": R,
        "log_z": LOGP[S[0]] - math.log(Zinv),
        "gbar": gbar,
        "Sigma": Sigma,
    }


def literal_rs(x, f, regen):
    """RS mean and se (univariate eq. regvar) of per-draw values f(x_t)."""
    taus = [t for t in range(len(x)) if x[t] == regen]
    R = len(taus) - 1
    s = np.array([sum(f(x[t]) for t in range(taus[r - 1], taus[r])) for r in range(1, R + 1)])
    N = np.array([taus[r] - taus[r - 1] for r in range(1, R + 1)], dtype=float)
    mean = s.sum(axis=0) / N.sum()
    var = sum((s[r] - N[r] * mean) ** 2 for r in range(R)) / (R * N.mean() ** 2)
    return mean, np.sqrt(var / R), R


@pytest.fixture(scope="module")
def idata():
    return make_idata(STATES, np.array([SEQ, SEQ2]), LOGP)


@pytest.mark.parametrize("K", [2, 3, 4])
def test_hotelling_equals_literal(idata, K):
    ds = arviz_regen.hotelling_rs(idata, k=K, pooled=False, method="chi2", n_bootstrap=99)
    for c, seq in enumerate([SEQ, SEQ2]):
        ref = literal_hotelling(seq, K)
        assert ds.n_tours.values[c] == ref["R"]
        assert ds.df.values[c] == K - 1
        np.testing.assert_allclose(ds.t2.values[c], ref["t2"], rtol=1e-9)
        np.testing.assert_allclose(ds.p_value.values[c], ref["p"], rtol=1e-8)
        np.testing.assert_allclose(ds.log_z.values[c], ref["log_z"], rtol=1e-10)


def test_pooled_k_dimension_and_order(idata):
    ds = arviz_regen.hotelling_rs(idata, k=[2, 3, 4], method="chi2", n_bootstrap=99)
    assert ds.t2.dims == ("chain", "k")
    assert ds.n_tours.dims == ("chain",)
    assert list(ds.k.values) == [2, 3, 4]
    for K in (2, 3, 4):
        single = arviz_regen.hotelling_rs(idata, k=K, method="chi2", n_bootstrap=99)
        np.testing.assert_allclose(ds.t2.sel(k=K).values, single.t2.values, rtol=1e-12)
    # pooled ranking uses the states of both chains; here both visit the same top states
    np.testing.assert_allclose(ds.sel(k=3).t2.values[0], literal_hotelling(SEQ, 3)["t2"], rtol=1e-9)


def test_cumulative_equals_literal_prefixes(idata):
    K = 3
    ds = arviz_regen.hotelling_rs(idata, k=K, cumulative="lookahead", pooled=False, method="chi2", n_bootstrap=99)
    assert ds.t2.dims == ("chain", "draw")
    seq = SEQ
    checked = 0
    for t in range(len(seq)):
        prefix = seq[: t + 1]
        n_visits = sum(1 for v in prefix if v == 0)
        assert ds.n_tours.values[0, t] == max(n_visits - 1, 0)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                ref = literal_hotelling(prefix, K) if n_visits >= K + 1 else None
        except (np.linalg.LinAlgError, RuntimeWarning, ValueError):
            ref = None
        if ref is not None and np.isfinite(ref["t2"]) and ds.df.values[0, t] == K - 1:
            # the top states of the full run are those of the prefix here (states 0, 1, 2)
            np.testing.assert_allclose(ds.t2.values[0, t], ref["t2"], rtol=1e-7)
            checked += 1
        if n_visits < 2:
            assert np.isnan(ds.p_value.values[0, t]) and ds.df.values[0, t] == 0
    assert checked >= 10
    last = arviz_regen.hotelling_rs(idata, k=K, pooled=False, method="chi2", n_bootstrap=99)
    np.testing.assert_allclose(ds.t2.values[:, -1], last.t2.values, rtol=1e-9)


def test_cumulative_matches_truncated_runs():
    rng = np.random.default_rng(5)
    idx = rng.choice(5, size=(2, 600), p=[0.35, 0.25, 0.2, 0.12, 0.08])
    full = make_idata(STATES, idx, LOGP)
    cum = arviz_regen.hotelling_rs(full, k=[2, 4], cumulative="lookahead", method="chi2", n_bootstrap=99)
    for t in (80, 250, 599):
        part = arviz_regen.hotelling_rs(
            make_idata(STATES, idx[:, : t + 1], LOGP), k=[2, 4], method="chi2", n_bootstrap=99
        )
        np.testing.assert_allclose(cum.t2.isel(draw=t).values, part.t2.values, rtol=1e-8)
        np.testing.assert_array_equal(cum.df.isel(draw=t).values, part.df.values)


def test_tours_core_functions():
    x = np.array(SEQ)
    tau = regeneration_times(x == 0)
    vals = np.stack([x == 1, x == 2], axis=1).astype(float)
    s, n = tour_sums(vals, tau)
    assert s.shape == (tau.size - 1, 2) and n.sum() == tau[-1] - tau[0]
    gbar, sigma = rs_mean_cov(s, n)
    mean1, se1, R = literal_rs(list(x), lambda v: float(v == 1), 0)
    np.testing.assert_allclose(gbar[0], mean1)
    np.testing.assert_allclose(np.sqrt(sigma[0, 0] / R), se1)
    mean, se = rs_mean_se(s, n)
    np.testing.assert_allclose(se[0], se1)
    cm, cse = cumulative_rs_mean_se(s, n)
    np.testing.assert_allclose(cm[-1], mean)
    np.testing.assert_allclose(cse[-1], se)
    assert np.isnan(cse[0]).all()
    sums = prefix_sums(s, n)
    m2, se2 = rs_from_sums(*(a[-1] for a in sums), n.size)
    np.testing.assert_allclose(m2, mean)
    np.testing.assert_allclose(se2, se)


def test_rs_estimate_equals_literal(idata):
    nclus = lambda lab: lab.max(axis=-1) + 1  # noqa: E731
    ds = arviz_regen.rs_estimate(idata, nclus)
    for c, seq in enumerate([SEQ, SEQ2]):
        mean, se, R = literal_rs(seq, lambda v: STATES[v].max() + 1, 0)
        np.testing.assert_allclose(ds.estimate.values[c], mean)
        np.testing.assert_allclose(ds.se.values[c], se)
        assert ds.n_tours.values[c] == R
    # pooled chains: all tours of both chains together
    comb = arviz_regen.rs_estimate(idata, nclus, combined=True)
    s_all, n_all = [], []
    for seq in (SEQ, SEQ2):
        x = np.array(seq)
        s, n = tour_sums((STATES[x].max(axis=1) + 1).astype(float), regeneration_times(x == 0))
        s_all.append(s)
        n_all.append(n)
    m, se = rs_mean_se(np.concatenate(s_all), np.concatenate(n_all))
    np.testing.assert_allclose(comb.estimate.values, m)
    np.testing.assert_allclose(comb.se.values, se)


def test_coclustering_equals_literal(idata):
    ds = arviz_regen.coclustering(idata)
    assert ds.rho.dims == ("chain", "item_i", "item_j")
    for c, seq in enumerate([SEQ, SEQ2]):
        for i in range(4):
            for j in range(4):
                if i == j:
                    assert ds.rho.values[c, i, j] == 1 and ds.se.values[c, i, j] == 0
                    continue
                mean, se, _ = literal_rs(seq, lambda v, i=i, j=j: float(STATES[v, i] == STATES[v, j]), 0)
                np.testing.assert_allclose(ds.rho.values[c, i, j], mean, rtol=1e-12)
                np.testing.assert_allclose(ds.se.values[c, i, j], se, rtol=1e-9)
                np.testing.assert_allclose(ds.cv.values[c, i, j], se / max(mean, 1 - mean), rtol=1e-9)


def test_coclustering_cumulative_equals_truncated():
    rng = np.random.default_rng(9)
    idx = rng.choice(5, size=(2, 500), p=[0.35, 0.25, 0.2, 0.12, 0.08])
    full = make_idata(STATES, idx, LOGP)
    cum = arviz_regen.coclustering(full, cumulative=True, n_points=7, combined=True)
    assert cum.rho.dims == ("draw", "item_i", "item_j") and cum.sizes["draw"] == 7
    assert cum.draw.values[-1] == 499
    for pos, d in enumerate(cum.draw.values):
        if d < 20:
            continue
        part = arviz_regen.coclustering(make_idata(STATES, idx[:, : d + 1], LOGP), combined=True)
        np.testing.assert_allclose(cum.rho.values[pos], part.rho.values, rtol=1e-12)
        np.testing.assert_allclose(cum.se.values[pos], part.se.values, rtol=1e-8)


def test_binder_loss_and_exhaustive_consensus():
    rng = np.random.default_rng(3)
    bell = [1, 1, 2, 5, 15, 52, 203, 877, 4140]
    for n in range(1, 9):
        assert len(_all_partitions(n)) == bell[n]
    parts = _all_partitions(6)
    assert len({tuple(p) for p in parts}) == len(parts)
    # ρ from a mixture of a few partitions
    comps = parts[rng.choice(len(parts), 4, replace=False)]
    w = rng.dirichlet(np.ones(4))
    rho = np.einsum("s,sij->ij", w, (comps[:, :, None] == comps[:, None, :]).astype(float))
    lab = comps[0]
    literal = sum((1 - rho[i, j]) if lab[i] == lab[j] else rho[i, j] for i in range(6) for j in range(i + 1, 6))
    assert arviz_regen.binder_loss(lab, rho) == pytest.approx(literal)
    res = arviz_regen.consensus_partition(rho)
    assert res.method == "exhaustive"
    assert res.expected_loss == pytest.approx(arviz_regen.binder_loss(parts, rho).min())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_consensus_search_finds_optimum(seed):
    rng = np.random.default_rng(seed)
    n = 8
    parts = _all_partitions(n)
    comps = parts[rng.choice(len(parts), 6, replace=False)]
    w = rng.dirichlet(np.ones(6))
    rho = np.einsum("s,sij->ij", w, (comps[:, :, None] == comps[:, None, :]).astype(float))
    exact = arviz_regen.consensus_partition(rho, method="exhaustive")
    found = arviz_regen.consensus_partition(rho, method="search")
    assert found.expected_loss == pytest.approx(exact.expected_loss, abs=1e-12)


def test_consensus_from_data(idata):
    vis = arviz_regen.consensus(idata, method="visited")
    rho = arviz_regen.coclustering(idata, combined=True).rho.values
    losses = arviz_regen.binder_loss(STATES, rho)
    assert vis.expected_loss == pytest.approx(losses.min())
    best = arviz_regen.consensus(idata)
    assert best.expected_loss <= vis.expected_loss + 1e-12


def test_rs_estimate_cumulative_equals_truncated():
    rng = np.random.default_rng(11)
    idx = rng.choice(5, size=(2, 400), p=[0.35, 0.25, 0.2, 0.12, 0.08])
    f = lambda lab: np.stack([lab.max(axis=-1) + 1, (lab[:, 0] == lab[:, 1])], axis=-1)  # noqa: E731
    cum = arviz_regen.rs_estimate(make_idata(STATES, idx, LOGP), f, cumulative=True, n_points=None, name="g")
    assert cum.estimate.dims == ("chain", "draw", "g_dim_0") and cum.sizes["draw"] == 400
    for t in (50, 233, 399):
        part = arviz_regen.rs_estimate(make_idata(STATES, idx[:, : t + 1], LOGP), f)
        np.testing.assert_allclose(cum.estimate.isel(draw=t).values, part.estimate.values, rtol=1e-12)
        np.testing.assert_allclose(cum.se.isel(draw=t).values, part.se.values, rtol=1e-8)


def test_per_chain_ranking_cumulative_and_many_items():
    # more than 16 items: state keys are byte strings instead of integers
    from arviz_regen.testing import metropolis_chain, random_partitions, zipf_probs

    rng = np.random.default_rng(12)
    states = random_partitions(25, 20, rng)
    probs = zipf_probs(25, 1.3)
    idx = metropolis_chain(probs, 2, 3000, rng, stay=0.5, max_step=3)
    idata = make_idata(states, idx, np.log(probs))
    cum = arviz_regen.hotelling_rs(idata, k=[2, 4], cumulative="lookahead", pooled=False, method="chi2", n_bootstrap=99)
    last = arviz_regen.hotelling_rs(idata, k=[2, 4], pooled=False, method="chi2", n_bootstrap=99)
    np.testing.assert_allclose(cum.t2.isel(draw=-1).values, last.t2.values, rtol=1e-9)
    # the same chain written with integer-keyed (≤ 16 items) labels gives the same statistic
    small = random_partitions(25, 8, np.random.default_rng(13))
    ref = arviz_regen.hotelling_rs(
        make_idata(small, idx, np.log(probs)), k=[2, 4], pooled=False, method="chi2", n_bootstrap=99
    )
    np.testing.assert_allclose(last.t2.values, ref.t2.values, rtol=1e-12)
