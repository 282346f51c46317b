"""A verdict at any number of items: traces that see the partition and the chain-agreement test.

Replicates are chains of :class:`arviz_regen.testing.BlockModel` (200 items wandering around 4
blocks; no partition ever recurs): correct chains at several mixing speeds, and chains trapped
in two modes of equal size (the same blocks with items swapped: n_clusters and partition_logp
have the same distribution in both). Thresholds come from the Monte Carlo error of a rejection
rate over n replicates: 3 binomial standard deviations, 3·sqrt(α(1 − α)/n). The co-clustering
family is tested on the pairs of a random 100 of the 200 items (``max_items=100``) to keep the
file fast; the traces always see all 200. Seeds are fixed.
"""

import warnings

import numpy as np
import pytest

import arviz_regen
from arviz_regen.base.anova import anova_f
from arviz_regen.base.autocorrelation import integrated_time
from arviz_regen.diagnostics.agreement import chain_agreement
from arviz_regen.estimates.traces import k_medoids, partition_traces
from arviz_regen.testing import BlockModel, block_chain
from arviz_regen.xr.containers import get_group

ALPHA = 0.05
N_DRAW = 600
MODEL = BlockModel(200)


def _tol(n, p=ALPHA):
    return 3 * np.sqrt(p * (1 - p) / n)


def _runs(n_rep, seed, **kwargs):
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the item subset for the pairs; undecided runs
        for r in range(n_rep):
            idata = block_chain(MODEL, 4, N_DRAW, np.random.default_rng(seed + r), **kwargs)
            out.append(chain_agreement(idata, max_items=100, random_seed=r))
    return out


def _rates(runs):
    p = np.array(
        [[float(ds[v].values) for v in ("p_value_all", "p_value_traces", "p_value_coclustering")] for ds in runs]
    )
    return (p < ALPHA).mean(axis=0), np.mean([not ds.attrs["decided"] for ds in runs])


def test_level_on_correct_chains_at_three_mixing_speeds():
    # integrated autocorrelation time of an item (2 − rho)/rho: 1, 3 and 7 draws. 40 runs per
    # speed: each speed within 3 sd of alpha over 40 runs, all of them within 3 sd over 120
    # (benchmarks/bench_diagnostic_calibration.py has 200 runs per speed and slower ones)
    n = 40
    rates, undecided = [], []
    for rho in (1.0, 0.5, 0.25):
        rej, und = _rates(_runs(n, int(1000 * rho), rho=rho))
        assert np.all(rej <= ALPHA + _tol(n)), (rho, rej)
        rates.append(rej)
        undecided.append(und)
    assert np.all(np.mean(rates, axis=0) <= ALPHA + _tol(3 * n)), rates
    assert max(undecided) <= 0.1


def test_too_short_for_the_autocorrelation_is_undecided_not_a_pass():
    # rho = 0.05: an item moves every 20 draws (integrated time 39); the traces need batches
    # of about 400 draws, four per chain: 600 draws cannot decide
    runs = _runs(10, 77, rho=0.05)
    assert all(not ds.attrs["decided"] and np.isnan(ds.p_value_all.values) for ds in runs)
    assert "too short for their autocorrelation" in runs[0].attrs["reason"]
    idata = block_chain(MODEL, 4, N_DRAW, 78, rho=0.05)
    with pytest.warns(UserWarning, match="undecided.*no verdict, not a pass"):
        chain_agreement(idata, max_items=100)
    table = arviz_regen.regen_summary(idata, pairs=False)
    assert table.attrs["verdict_status"] == "NOT REACHED" and "decided by chain_agreement" in table.attrs["verdict"]


def test_batches_shorter_than_the_rule_are_liberal():
    # the batch-length rule is what holds the level: batches of one autocorrelation time
    # (instead of ten) reject correct chains far more often than alpha: about 40 % of the time
    # (72 of 180 runs), so 40 runs fall below the 3-sigma bound (7 rejections) with probability
    # 0.002 (20 runs: 0.016, and the draws of 0.2 gave 3 of 20)
    n = 40
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(n):
            idata = block_chain(MODEL, 4, N_DRAW, np.random.default_rng(900 + r), rho=0.1)
            out.append(float(chain_agreement(idata, max_items=100, batch_tau=1.0, random_seed=r).p_value_all))
    assert np.mean(np.array(out) < ALPHA) > ALPHA + _tol(n)


def test_power_on_chains_trapped_in_modes_of_equal_size():
    runs = _runs(12, 5000, rho=0.5, modes=[0, 0, 1, 1])
    rej, _ = _rates(runs)
    assert np.all(rej == 1.0)
    # where R-hat of n_clusters and partition_logp sees nothing and the distance traces see it
    idata = block_chain(MODEL, 4, N_DRAW, 5000, rho=0.5, modes=[0, 0, 1, 1])
    table = arviz_regen.regen_summary(idata, n_permutations=99)
    assert (table.loc[["n_clusters", "partition_logp"], "r_hat"] < 1.01).all()
    assert (table.loc[["vi_ref0", "vi_ref1", "binder_ref0", "binder_ref1"], "r_hat"] > 1.1).all()
    assert table.attrs["verdict_status"] == "FAIL" and "decided by chain_agreement" in table.attrs["verdict"]
    # the pairs that disagree are those the two modes put differently (half of blocks 0/1, 2/3)
    ds = runs[0]
    assert int(ds.n_pairs_disagreeing) > 0
    i, j = ds.worst_pair.values
    homes = MODEL.homes
    assert (homes[0, i] == homes[0, j]) != (homes[1, i] == homes[1, j])


def test_power_on_one_chain_of_four_trapped():
    runs = _runs(12, 6000, rho=0.5, modes=[0, 0, 0, 1])
    assert _rates(runs)[0][0] == 1.0


# ------------------------------------------------------------------------------------------
# the cores
# ------------------------------------------------------------------------------------------


def test_anova_f_matches_the_formula():
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(5, 12))
    groups = np.repeat(np.arange(4), 3)
    f = anova_f(Y, groups, 4)
    for r in range(5):
        means = np.array([Y[r, groups == g].mean() for g in range(4)])
        between = 3 * ((means - Y[r].mean()) ** 2).sum() / 3
        within = sum(((Y[r, groups == g] - means[g]) ** 2).sum() for g in range(4)) / 8
        np.testing.assert_allclose(f[r], between / within)
    # no variation: NaN; all variation between groups: infinite
    const = anova_f(np.ones((1, 12)), groups, 4)
    step = anova_f(np.repeat(np.arange(4.0), 3)[None], groups, 4)
    assert np.isnan(const[0]) and np.isinf(step[0])


def test_permutation_max_f_matches_the_numpy_core():
    from arviz_regen.base.anova import max_f

    rng = np.random.default_rng(2)
    Y = rng.normal(size=(30, 16))
    groups = np.repeat(np.arange(4), 4)
    perms = np.stack([rng.permutation(16) for _ in range(7)])
    grand = Y.sum(axis=1)
    total = ((Y - Y.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    got = max_f(Y, total, grand, np.ascontiguousarray(groups[perms]), 4)
    want = [anova_f(Y, groups[p], 4).max() for p in perms]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_integrated_time_of_an_ar1_chain():
    rng = np.random.default_rng(3)
    e = rng.normal(size=(8, 20_000))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0] / np.sqrt(1 - 0.8**2)
    for t in range(1, e.shape[1]):
        x[:, t] = 0.8 * x[:, t - 1] + e[:, t]
    tau = integrated_time(x)  # truth (1 + 0.8) / (1 − 0.8) = 9
    assert abs(np.mean(tau) - 9.0) < 0.7
    assert np.isnan(integrated_time(np.ones(50)))


def test_k_medoids_finds_two_separated_groups():
    pts = np.r_[np.zeros(5), np.ones(4) * 10.0] + np.arange(9) * 0.01
    D = np.abs(pts[:, None] - pts[None, :])
    med = k_medoids(D, 2)
    assert sorted(pts[med] < 5) == [False, True]


def test_partition_traces_see_the_whole_partition():
    idata = block_chain(MODEL, 4, 300, 9, rho=0.5, modes=[0, 0, 1, 1])
    tr = partition_traces(idata)
    assert set(tr.data_vars) >= {"vi_ref0", "vi_ref1", "binder_ref0", "binder_ref1", "n_clusters", "partition_logp"}
    labels = tr.reference_labels.values
    # one reference in each mode: closer to the chains of that mode than to the others
    d = tr.vi_ref0.mean("draw").values
    assert (d[:2].max() < d[2:].min()) or (d[2:].max() < d[:2].min())
    from arviz_regen import partition_loss

    draw = np.asarray(get_group(idata, "posterior")["z"].values[1, 7])
    np.testing.assert_allclose(tr.binder_ref1.values[1, 7], partition_loss(draw, labels[1], "binder"))
    np.testing.assert_allclose(tr.vi_ref0.values[1, 7], partition_loss(draw, labels[0], "VI"))
