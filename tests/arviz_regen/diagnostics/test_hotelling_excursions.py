"""Per-chain Hotelling-RS p-values where the top states are reached only through long excursions.

Replicates are correct chains (:func:`arviz_regen.testing.excursion_chain`: 30 partitions,
π ∝ 1/rank, the most probable states far apart on a cycle walked by a sticky reversible
Metropolis chain, stationary start, 10,000 draws): each top state is visited in a few clumps of
hundreds of draws. One chain is one replicate of the per-chain test. Thresholds come from the
Monte Carlo error of a rejection rate over n replicates: 3 binomial standard deviations,
3·sqrt(α(1 − α)/n) (a rate above α + that bound is a liberal test with Monte Carlo error
below 0.2%). Seeds are fixed.
"""

import warnings

import numpy as np
import pytest

import arviz_regen
from arviz_regen.base.hotelling_t2 import t2_core
from arviz_regen.base.tour_t2 import quadratic_form, tour_t2_test
from arviz_regen.diagnostics.hotelling import MIN_TOURS_VISITING
from arviz_regen.testing import excursion_chain, iid_chain, make_idata, random_partitions, spread_order
from arviz_regen.xr.regeneration import find_tours

KS = np.array([2, 3, 5, 10])
N_STATES = 30
PROBS = 1.0 / np.arange(1, N_STATES + 1)
PROBS /= PROBS.sum()
Q = PROBS[: KS.max()] / PROBS[0]
ALPHA = 0.05
N_DRAW = 10_000

#: (stay, max_step) of the walk: slow (3 tours per top state), fast (6-7), sticky with jumps (5-6)
DESIGNS = [(0.5, 1), (0.0, 1), (0.8, 3)]


def _tol(n, p=ALPHA):
    return 3 * np.sqrt(p * (1 - p) / n)


def _per_chain(index, method="bootstrap"):
    """p-values (chains, K) and tours visiting each top state (chains, Kmax) of every chain."""
    tours = find_tours(index, 0, N_STATES)
    p, visiting = [], []
    for c, (counts, _lengths) in enumerate(tours.visit_counts(np.arange(KS.max()))):
        if method == "bootstrap":
            p.append(tour_t2_test(counts, Q, KS, n_rep=499, seed=c)[1])
        else:
            p.append(t2_core(counts, _lengths, Q, KS)["p_value"][:, 0])
        visiting.append((counts > 0).sum(axis=0))
    return np.array(p), np.array(visiting)


@pytest.fixture(scope="module", params=DESIGNS, ids=lambda d: f"stay{d[0]}-step{d[1]}")
def excursions(request):
    stay, step = request.param
    index = excursion_chain(PROBS, 800, N_DRAW, np.random.default_rng(int(100 * stay) + step), stay=stay, max_step=step)
    return index


def test_spread_order_puts_top_states_far_apart():
    place = spread_order(N_STATES)
    assert sorted(place.tolist()) == list(range(N_STATES))
    gap = np.abs(place[1] - place[0])
    assert min(gap, N_STATES - gap) == N_STATES // 2  # rank 1 opposite the regeneration state
    # every one of the top 4 states is at least 7 steps from the others on the cycle
    d = np.abs(place[:4, None] - place[None, :4])
    d = np.minimum(d, N_STATES - d)
    assert d[np.triu_indices(4, 1)].min() >= 7


def test_design_visits_top_states_in_few_large_clumps(excursions):
    tours = find_tours(excursions[:100], 0, N_STATES)
    clump, n_visiting = [], []
    for counts, _ in tours.visit_counts(np.arange(2)):
        hit = counts[:, 1] > 0
        n_visiting.append(hit.sum())
        if hit.any():
            clump.append(counts[hit, 1].mean())
    # rank 1 has 1/2 the probability of the regeneration state, yet is visited in a median of
    # at most 7 of some 2,400 tours, 100+ draws at a time (iid draws: 830 tours, 1.5 at a time)
    assert np.median(n_visiting) <= 8 and np.median(clump) >= 100


def test_per_chain_p_values_hold_their_level(excursions):
    p, visiting = _per_chain(excursions)
    n = p.shape[0]
    rej = (p < ALPHA).mean(axis=0)  # undecided (NaN) chains do not reject
    assert np.all(rej <= ALPHA + _tol(n)), rej
    # also where no warning is raised: every top state of the test in at least 5 whole tours
    for j, K in enumerate(KS):
        ok = visiting[:, 1:K].min(axis=1) >= MIN_TOURS_VISITING
        if ok.sum() >= 100:
            assert (p[ok, j] < ALPHA).mean() <= ALPHA + _tol(ok.sum()), (K, ok.sum())
    # NaN only where a top state was never visited within the chain's whole tours
    never = np.stack([visiting[:, 1:K].min(axis=1) == 0 for K in KS], axis=1)
    np.testing.assert_array_equal(np.isnan(p), never)


def test_chi2_limit_is_liberal_on_the_same_chains():
    # the test above can fail: the paper's χ² reference on the fastest design rejects far more
    index = excursion_chain(PROBS, 400, N_DRAW, np.random.default_rng(1), stay=0.0, max_step=1)
    p, _ = _per_chain(index, method="chi2")
    rej = (p < ALPHA).mean(axis=0)
    assert np.all(rej[1:] > ALPHA + _tol(400)), rej


# the power on iid chains with the top state over-visited by 10 % is
# test_hotelling_power.py::test_bootstrap_power_when_top_state_is_over_visited (the same chains,
# seeds and bootstrap: it was computed twice)


def test_level_on_iid_chains_is_nominal():
    # within 3 sd (0.046) of alpha over 200 chains: a bootstrap rejecting 15 % fails (p = 0.98)
    n = 200
    p, _ = _per_chain(iid_chain(PROBS, n, N_DRAW, np.random.default_rng(4)))
    assert np.all(np.abs((p < ALPHA).mean(axis=0) - ALPHA) <= _tol(n))


def test_verdict_of_four_chains_holds_its_level():
    states = random_partitions(N_STATES, 8, np.random.default_rng(1))
    n = 60
    p_all = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(n):
            index = excursion_chain(PROBS, 4, N_DRAW, np.random.default_rng(500 + r), stay=0.0, max_step=1)
            ds = arviz_regen.hotelling_rs(
                make_idata(states, index, np.log(PROBS)), k=list(KS), n_bootstrap=199, random_seed=r
            )
            p_all.append(ds.p_value_all.values)
    assert np.all((np.array(p_all) < ALPHA).mean(axis=0) <= ALPHA + _tol(n))


# ------------------------------------------------------------------------------------------
# the core: T² against brute force, degenerate tours never a silent NaN
# ------------------------------------------------------------------------------------------


def test_quadratic_form_matches_pseudo_inverse():
    rng = np.random.default_rng(5)
    for m in (1, 3, 6):
        A = rng.normal(size=(40, m))
        S = A.T @ A / 40
        d = rng.normal(size=m)
        np.testing.assert_allclose(quadratic_form(d, S, np.ones(m)), d @ np.linalg.solve(S, d), rtol=1e-10)
    # collinear coordinates: finite inside the range of S, infinite outside
    y = rng.poisson(2.0, size=50).astype(float)
    Y = np.stack([y, 2 * y], axis=1)
    S = np.cov(Y.T, bias=True)
    inside = np.array([0.3, 0.6])
    np.testing.assert_allclose(quadratic_form(inside, S, np.ones(2)), inside[0] ** 2 / S[0, 0], rtol=1e-8)
    assert np.isinf(quadratic_form(np.array([0.3, 0.5]), S, np.ones(2)))
    # a coordinate that does not vary: infinite if the deviation moves it, ignored otherwise
    S0 = np.diag([1.0, 0.0])
    assert np.isinf(quadratic_form(np.array([0.1, 0.2]), S0, np.ones(2)))
    assert quadratic_form(np.array([0.5, 0.0]), S0, np.ones(2)) == pytest.approx(0.25)


def test_observed_t2_matches_hotelling_formula():
    rng = np.random.default_rng(6)
    counts = np.column_stack([np.ones(300), rng.poisson([0.5, 0.3, 0.2], size=(300, 3))])
    q = np.array([1.0, 0.5, 0.3, 0.2])
    t2, p, undecided = tour_t2_test(counts, q, [2, 4], n_rep=99, seed=0)
    y = counts[:, 1:]
    d = y.mean(axis=0) - q[1:]
    S = np.cov(y.T, bias=True)
    np.testing.assert_allclose(t2[1], 300 * d @ np.linalg.solve(S, d), rtol=1e-10)
    np.testing.assert_allclose(t2[0], 300 * d[0] ** 2 / S[0, 0], rtol=1e-10)
    assert not undecided.any() and np.all((p > 0) & (p <= 1))


def test_identical_tours_warn_and_decide():
    states = random_partitions(3, 5, np.random.default_rng(7))
    # a periodic chain 0 1 0 1 …: every tour identical, rank 1 as often as rank 0 although
    # q_1 = 0.5: the paper's T² has no degrees of freedom, the tour T² is infinite
    idx = np.tile([0, 1], 500)[None, :]
    idata = make_idata(states, idx, np.log([0.5, 0.25, 0.25]))
    with pytest.warns(UserWarning, match="no degrees of freedom") as rec:
        ds = arviz_regen.hotelling_rs(idata, k=2, n_bootstrap=99)
    assert any("t2_tours" in str(w.message) for w in rec)
    assert np.isnan(ds.t2.values[0]) and np.isnan(ds.log_z.values[0])
    assert np.isinf(ds.t2_tours.values[0]) and ds.p_value.values[0] == pytest.approx(1 / 100)
    # the same chain when the two states are equally probable: T² = 0, no rejection
    with pytest.warns(UserWarning, match="no degrees of freedom"):
        ok = arviz_regen.hotelling_rs(make_idata(states, idx, np.log([0.4, 0.4, 0.2])), k=2, n_bootstrap=99)
    assert ok.t2_tours.values[0] == 0.0 and ok.p_value.values[0] == 1.0


def test_top_state_never_visited_in_whole_tours_is_undecided_with_a_warning():
    states = random_partitions(4, 5, np.random.default_rng(8))
    rng = np.random.default_rng(9)
    idx = rng.choice(4, size=(2, 2_000), p=[0.4, 0.3, 0.2, 0.1])
    idx[1][idx[1] == 2] = 0  # chain 1 never visits rank 2
    with pytest.warns(UserWarning, match="never visited within a chain's whole tours"):
        ds = arviz_regen.hotelling_rs(
            make_idata(states, idx, np.log([0.4, 0.3, 0.2, 0.1])), k=[2, 3, 4], n_bootstrap=99
        )
    p = ds.p_value.transpose("chain", "k").values
    assert np.isfinite(p[0]).all() and np.isfinite(p[1, 0]) and np.isnan(p[1, 1:]).all()
    assert np.isnan(ds.t2_tours.values[1, 1:]).all()
