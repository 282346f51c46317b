"""Degenerate inputs: each gets a clear error, or a warning with a defined result (SPEC §4)."""

import numpy as np
import pytest

import arviz_regen
from arviz_regen.testing import iid_chain, make_idata
from arviz_regen.xr.containers import from_dict
from arviz_regen.xr.regeneration import NonRecurrenceWarning

STATES = np.array([[0, 0, 0, 0], [0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 0], [0, 1, 2, 3], [0, 0, 0, 1]])
PROBS = np.array([0.3, 0.22, 0.18, 0.14, 0.1, 0.06])
LOGP = np.log(PROBS)


def _idata(idx, logp=LOGP):
    return make_idata(STATES, np.asarray(idx), logp)


@pytest.fixture(scope="module")
def good_idx():
    return iid_chain(PROBS, 3, 1500, np.random.default_rng(0))


def test_fewer_than_two_tours(good_idx):
    idx = good_idx.copy()
    row = idx[1]
    row[row == 0] = 1
    row[[100, 700]] = 0  # chain 1: two visits to the top state, i.e. a single whole tour
    with pytest.warns(UserWarning, match="recurs too rarely"):
        ds = arviz_regen.hotelling_rs(_idata(idx), k=[2, 3], method="chi2", n_bootstrap=99)
    assert ds.n_tours.values[1] == 1
    assert np.all(np.isnan(ds.t2.values[1])) and np.all(np.isnan(ds.p_value.values[1]))
    assert np.all(ds.df.values[1] == 0)
    assert np.all(np.isfinite(ds.p_value.values[[0, 2]]))
    # never visiting it at all: zero tours, same defined result
    idx[1][idx[1] == 0] = 1
    with pytest.warns(UserWarning, match="recurs too rarely"):
        ds = arviz_regen.hotelling_rs(_idata(idx), k=3, method="chi2", n_bootstrap=99)
    assert ds.n_tours.values[1] == 0 and np.isnan(ds.p_value.values[1]) and ds.df.values[1] == 0


def test_pooled_top_state_never_visited_by_a_chain(good_idx):
    idx = good_idx.copy()
    idx[2][idx[2] == 1] = 4  # chain 2 never visits the rank-1 state
    with pytest.warns(UserWarning, match=r"rank 1 \(0 tours\)"):
        ds = arviz_regen.hotelling_rs(_idata(idx), k=3, method="chi2", n_bootstrap=99)
    assert ds.df.values[2] == 1 and ds.df.values[0] == 2
    assert np.isfinite(ds.p_value.values[2])
    # documented rule: the statistic of the remaining states (ranks 0 and 2)
    sub = np.where(idx[2] == 2, 1, np.where(idx[2] == 1, 2, idx[2]))  # relabel so ranks are 0, 1
    states = STATES.copy()
    states[[1, 2]] = states[[2, 1]]
    logp = LOGP.copy()
    logp[[1, 2]] = logp[[2, 1]]
    ref = arviz_regen.hotelling_rs(make_idata(states, sub[None], logp), k=2, method="chi2", n_bootstrap=99)
    np.testing.assert_allclose(ds.t2.values[2], ref.t2.values[0], rtol=1e-9)
    # per-chain ranking instead: no warning, full df
    ds2 = arviz_regen.hotelling_rs(_idata(idx), k=3, pooled=False, method="chi2", n_bootstrap=99)
    assert np.all(ds2.df.values == 2)


def test_singular_sigma_few_tours():
    rng = np.random.default_rng(1)
    # top state visited 4 times: 3 tours, so rank(Σ̂) ≤ 2 and K = 5 cannot be tested in full
    idx = rng.choice(np.arange(1, 6), size=(1, 400), p=PROBS[1:] / PROBS[1:].sum())
    idx[0, [10, 120, 250, 390]] = 0
    with pytest.warns(UserWarning, match="singular"):
        ds = arviz_regen.hotelling_rs(_idata(idx), k=5, method="chi2", n_bootstrap=99)
    assert ds.n_tours.values[0] == 3
    assert ds.df.values[0] == 1  # rank 2 -> df = rank - 1
    assert np.isfinite(ds.p_value.values[0]) and 0 <= ds.p_value.values[0] <= 1


def test_singular_sigma_deterministic_cycle():
    # a periodic chain 0,1,2,0,1,2,…: every tour is identical, Σ̂ = 0, nothing can be tested
    idx = np.tile([0, 1, 2], 100)[None]
    with pytest.warns(UserWarning, match="no degrees of freedom"):
        ds = arviz_regen.hotelling_rs(_idata(idx), k=3, method="chi2", n_bootstrap=99)
    assert ds.df.values[0] == 0 and np.isnan(ds.p_value.values[0])


def test_k_larger_than_visited_states(good_idx):
    idx = np.where(good_idx >= 4, 0, good_idx)  # only states 0-3 visited
    with pytest.warns(UserWarning, match="larger than the 4 visited states"):
        with pytest.warns(UserWarning, match="singular"):
            ds = arviz_regen.hotelling_rs(_idata(idx), k=[2, 10], method="chi2", n_bootstrap=99)
    assert list(ds.k.values) == [2, 10]
    # K reduced to 4 visited states; they cover every draw, so one more state is dependent
    assert np.all(ds.df.sel(k=10).values == 2)
    assert np.all(np.isfinite(ds.p_value.values))


def test_only_one_visited_state():
    idx = np.zeros((2, 50), dtype=int)
    with pytest.warns(UserWarning):
        ds = arviz_regen.hotelling_rs(_idata(idx), k=2, method="chi2", n_bootstrap=99)
    assert np.all(ds.df.values == 0) and np.all(np.isnan(ds.p_value.values))


def test_missing_partition_logp(good_idx):
    labels = STATES[good_idx]
    idata = from_dict({"posterior": {"z": labels}})
    with pytest.raises(ValueError, match="partition_logp"):
        arviz_regen.hotelling_rs(idata, method="chi2", n_bootstrap=99)
    # co-clustering does not need it: regenerates at the most visited state, with a warning
    with pytest.warns(UserWarning, match="most visited"):
        cc = arviz_regen.coclustering(idata)
    assert cc.attrs["regeneration_state"] == STATES[0].tolist()
    with pytest.warns(UserWarning, match="no Hotelling-RS test, the chain-agreement test decides"):
        table = arviz_regen.regen_summary(idata)
    assert "n_clusters" in table.index and not any("hotelling" in r for r in table.index)
    assert "chain_agreement" in table.index and "decided by chain_agreement" in table.attrs["verdict"]
    # another name for the log posterior
    idata2 = from_dict({"posterior": {"z": labels}, "sample_stats": {"lp_part": LOGP[good_idx]}})
    ds = arviz_regen.hotelling_rs(idata2, logp_var="lp_part", k=3, method="chi2", n_bootstrap=99)
    assert np.all(ds.df.values == 2)


def test_non_canonical_labels(good_idx):
    labels = STATES[good_idx].copy()
    relabelled = labels * 7 + 3  # same partitions, arbitrary label values
    idata = from_dict({"posterior": {"z": relabelled}, "sample_stats": {"partition_logp": LOGP[good_idx]}})
    with pytest.warns(UserWarning, match="not canonical"):
        ds = arviz_regen.hotelling_rs(idata, var_names="z", k=3, method="chi2", n_bootstrap=99)
    ref = arviz_regen.hotelling_rs(_idata(good_idx), k=3, method="chi2", n_bootstrap=99)
    np.testing.assert_allclose(ds.t2.values, ref.t2.values)


def test_logp_not_a_function_of_the_state(good_idx):
    logp = LOGP[good_idx] + np.random.default_rng(2).normal(0, 0.01, good_idx.shape)
    idata = from_dict({"posterior": {"z": STATES[good_idx]}, "sample_stats": {"partition_logp": logp}})
    # e.g. hyperparameters sampled alongside: no valid regeneration, and the message says why;
    # what needs no fixed target takes the draws (tests/arviz_regen/xr/test_regeneration_sampled_hyper.py)
    with pytest.raises(ValueError, match="fixed target.*differs between draws of the same partition"):
        arviz_regen.hotelling_rs(idata, k=2, method="chi2", n_bootstrap=99)
    with pytest.warns(NonRecurrenceWarning, match="hyperparameters were sampled"):
        assert arviz_regen.coclustering(idata).attrs["se_method"] == "batch_means"


def test_non_finite_logp(good_idx):
    logp = LOGP[good_idx].copy()
    logp[0, 3] = np.nan
    idata = from_dict({"posterior": {"z": STATES[good_idx]}, "sample_stats": {"partition_logp": logp}})
    with pytest.raises(ValueError, match="non-finite"):
        arviz_regen.hotelling_rs(idata, method="chi2", n_bootstrap=99)


def test_argument_errors(good_idx):
    idata = _idata(good_idx)
    with pytest.raises(ValueError, match="at least 2"):
        arviz_regen.hotelling_rs(idata, k=1, method="chi2", n_bootstrap=99)
    with pytest.raises(TypeError, match="`k`"):
        arviz_regen.hotelling_rs(idata, k=2.5, method="chi2", n_bootstrap=99)
    with pytest.raises(ValueError, match="repeated"):
        arviz_regen.hotelling_rs(idata, k=[3, 3], method="chi2", n_bootstrap=99)
    with pytest.raises(ValueError, match="not in the posterior"):
        arviz_regen.hotelling_rs(idata, var_names="w", method="chi2", n_bootstrap=99)
    with pytest.raises(ValueError, match="exactly one"):
        arviz_regen.hotelling_rs(idata, var_names=["z", "z"], method="chi2", n_bootstrap=99)
    with pytest.raises(TypeError, match="`pooled`"):
        arviz_regen.hotelling_rs(idata, pooled="yes", method="chi2", n_bootstrap=99)
    with pytest.raises(TypeError, match="callable"):
        arviz_regen.rs_estimate(idata, 3)
    with pytest.raises(ValueError, match="one value"):
        arviz_regen.rs_estimate(idata, lambda lab: np.ones(2))
    with pytest.raises(TypeError, match="`data`"):
        arviz_regen.hotelling_rs(object(), method="chi2", n_bootstrap=99)


def test_ambiguous_or_missing_partition_variable(good_idx):
    labels = STATES[good_idx]
    two = from_dict(
        {"posterior": {"z": labels, "w": labels.copy()}, "sample_stats": {"partition_logp": LOGP[good_idx]}}
    )
    with pytest.raises(ValueError, match="several posterior variables"):
        arviz_regen.hotelling_rs(two, method="chi2", n_bootstrap=99)
    assert np.isfinite(arviz_regen.hotelling_rs(two, var_names="w", k=2, method="chi2", n_bootstrap=99).t2.values).all()
    none = from_dict({"posterior": {"mu": np.random.default_rng(0).normal(size=(2, 10))}})
    with pytest.raises(ValueError, match="no posterior variable looks like a partition"):
        arviz_regen.hotelling_rs(none, method="chi2", n_bootstrap=99)


def test_too_few_tours_in_estimates():
    idx = np.array([[1, 2, 0, 1, 1, 2, 1]])
    # insisting on regenerative estimates: NaN where there is no tour, with a warning
    with pytest.warns(UserWarning, match="Fewer than two whole regeneration tours"):
        cc = arviz_regen.coclustering(_idata(idx), se_method="regenerative")
    assert np.all(np.isnan(cc.se.values[0][~np.eye(4, dtype=bool)]))
    assert np.all(np.isnan(cc.rho.values[0]))
    with pytest.warns(UserWarning, match="Fewer than two"):
        est = arviz_regen.rs_estimate(_idata(idx), lambda lab: lab.max(-1) + 1, se_method="regenerative")
    assert np.isnan(est.se.values[0])
    # the default falls back to plain means with batch-means se, saying so once
    with pytest.warns(NonRecurrenceWarning, match="visited too rarely") as rec:
        cc = arviz_regen.coclustering(_idata(idx))
    assert len(rec) == 1 and cc.attrs["se_method"] == "batch_means"
    same = (STATES[idx[0]][:, :, None] == STATES[idx[0]][:, None, :]).mean(axis=0)
    np.testing.assert_allclose(cc.rho.values[0], same)
    assert np.all(np.isfinite(cc.se.values))
    with pytest.warns(NonRecurrenceWarning):
        est = arviz_regen.rs_estimate(_idata(idx), lambda lab: lab.max(-1) + 1)
    assert est.estimate.values[0] == pytest.approx((STATES[idx[0]].max(-1) + 1).mean())
    assert np.isfinite(est.se.values[0]) and est.attrs["se_method"] == "batch_means"
    with pytest.raises(ValueError, match="se_method"):
        arviz_regen.rs_estimate(_idata(idx), lambda lab: lab.max(-1) + 1, se_method="bm")


def test_explicit_regeneration_state(good_idx):
    idata = _idata(good_idx)
    a = arviz_regen.coclustering(idata, regeneration=STATES[1])
    assert a.attrs["regeneration_state"] == STATES[1].tolist()
    with pytest.raises(ValueError, match="not a state visited"):
        arviz_regen.coclustering(idata, regeneration=[0, 1, 1, 1])
    with pytest.raises(ValueError, match="`regeneration`"):
        arviz_regen.coclustering(idata, regeneration="best")


def test_consensus_argument_errors():
    with pytest.raises(ValueError, match="square"):
        arviz_regen.consensus_partition(np.ones((2, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        arviz_regen.consensus_partition(np.array([[1, 0.2], [0.9, 1]]))
    with pytest.raises(ValueError, match="candidates"):
        arviz_regen.consensus_partition(np.eye(3), method="candidates")
    res = arviz_regen.consensus_partition(np.eye(3), candidates=[[0, 0, 0], [0, 1, 2]], method="candidates")
    assert res.labels.tolist() == [0, 1, 2]
