"""``arviz_regen.conditional_check``: level and power of the test on terms with a known law, the
xarray result, the accessor, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import arviz_regen
from arviz_regen.base.conditional import (
    CHECK_TAU_FACTOR,
    HOTELLING_MIN_DF,
    TAU_FACTOR,
    batch_length,
    batch_lengths,
    batch_means_cov,
    conditional_test,
)
from arviz_regen.xr.containers import from_dict

CHECKS = ["a", "b", "c"]
MIX = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.3], [0.0, 0.0, 1.0]])


def _ar1(rng, shape, phi):
    """AR(1) rows along axis -2 (draws), correlated across the last axis, stationary."""
    e = rng.normal(size=shape) @ MIX
    x = np.empty(shape)
    x[..., 0, :] = e[..., 0, :] / np.sqrt(1 - phi**2)
    for t in range(1, shape[-2]):
        x[..., t, :] = phi * x[..., t - 1, :] + e[..., t, :]
    return x


@pytest.mark.parametrize("n_chains, phi", [(4, 0.0), (1, 0.0), (4, 0.9)])
def test_level(n_chains, phi):
    """Rejection rate at 0.05 of mean-zero terms within 3 binomial SEs of 5 % (400 runs)."""
    rng = np.random.default_rng(17)
    runs = 400
    x = _ar1(rng, (runs, n_chains, 600, 3), phi)
    p = np.array([[*r.p_value, r.p_value_all] for r in map(conditional_test, x)])
    rate = (p < 0.05).mean(axis=0)
    se = np.sqrt(0.05 * 0.95 / runs)
    assert np.all(np.abs(rate - 0.05) < 3 * se), rate


def test_power_and_mcse():
    rng = np.random.default_rng(2)
    x = _ar1(rng, (4, 1000, 3), 0.5)
    res = conditional_test(x + np.array([0.0, 0.0, 0.15]))
    assert res.p_value[2] < 1e-3 and res.p_value_all < 1e-3
    # the MCSE of an AR(1) mean: sqrt(var * (1 + phi) / (1 - phi) / n), here var of e @ MIX / (1 - phi^2)
    var = (MIX**2).sum(axis=0) / (1 - 0.25)
    want = np.sqrt(var * 3.0 / 4000)
    np.testing.assert_allclose(res.mcse, want, rtol=0.25)


def _ar1_replicates(rng, n_chains, n_draws, n_rep, rho):
    """``(n_chains, n_draws, n_rep)`` stationary AR(1) paths with unit innovations, independent."""
    e = rng.normal(size=(n_chains, n_draws, n_rep))
    x = np.empty_like(e)
    x[:, 0] = e[:, 0] / np.sqrt(1 - rho**2)
    for t in range(1, n_draws):
        x[:, t] = rho * x[:, t - 1] + e[:, t]
    return x


def test_batch_means_bias_on_ar1_matches_theory():
    """Batches of ``4 tau`` draws: the expected estimate is ``1 - (G/b)(A - 1/a)/(A - 1)`` of the
    long-run variance (``G = (tau^2 - 1) / (2 tau)``, ``a`` batches per chain, ``A`` in all), 0.873
    here; white noise is unbiased. 2,000 replicates, each estimate's SD about 0.2 of the long-run
    variance: the tolerance 0.015 is 3.4 Monte Carlo SEs (scaling by ``A`` instead of ``A - 1``
    moves the mean by 0.02; no bias at all by 0.13). This bias, times the slow part's share, is
    the conditional check's small excess at 200 items (``docs/maths/conditional_check.md``, "The
    200-item level")."""
    rng = np.random.default_rng(20261127)
    M, N, R, tau = 4, 600, 2000, 15.0
    rho = (tau - 1) / (tau + 1)
    b = int(4 * tau)
    a = N // b
    A = M * a
    sigma2 = 1 / (1 - rho) ** 2  # long-run variance of an AR(1) with unit innovations
    want = 1 - (tau**2 - 1) / (2 * tau) / b * (A - 1 / a) / (A - 1)
    for x, target, truth in (
        (_ar1_replicates(rng, M, N, R, rho), want, sigma2),
        (rng.normal(size=(M, N, R)), 1.0, 1.0),
    ):
        # replicates as independent "checks": each chunk's diagonal holds one estimate per replicate
        est = np.concatenate([np.diag(batch_means_cov(x[:, :, i : i + 250], b=b)[0]) for i in range(0, R, 250)])
        ratio = est / truth
        assert abs(ratio.mean() - target) < 0.015, (ratio.mean(), target)
    assert abs(want - 0.873) < 0.001


def test_state_tau_covers_a_slow_component():
    """Terms with a small slow part (4 % of their variance per draw, an AR(1) of 30 autocorrelation
    times: more than half of the long-run variance) look white to their own autocorrelations; the
    state's time (``state_tau``, from a trace of the slow coordinate) gives batches that see it."""
    from arviz_regen.base.autocorrelation import integrated_time

    rng = np.random.default_rng(9)
    runs, chains, draws, share, phi = 200, 4, 1000, 0.04, 1.0 - 2.0 / 31.0  # tau = (1 + phi) / (1 - phi) = 30
    e = rng.normal(size=(runs, chains, draws + 300))
    slow = np.empty_like(e)
    slow[..., 0] = e[..., 0]
    for t in range(1, e.shape[-1]):  # unit-variance AR(1), burnt in
        slow[..., t] = phi * slow[..., t - 1] + np.sqrt(1 - phi**2) * e[..., t]
    slow = slow[..., 300:]
    x = np.sqrt(share) * slow[..., None] + np.sqrt(1 - share) * rng.normal(size=(runs, chains, draws, 2))
    sigma2 = 1 - share + share * 30.0  # the long-run variance of each check
    state = slow + 0.5 * rng.normal(size=slow.shape)  # a noisy trace of the slow coordinate
    own, with_state = [], []
    for r in range(runs):
        tau = float(np.nanmax(integrated_time(state[r])))
        own.append(conditional_test(x[r]).mcse ** 2 * chains * draws / sigma2)
        with_state.append(conditional_test(x[r], state_tau=tau).mcse ** 2 * chains * draws / sigma2)
    # batches of sqrt(N): 0.77, about 40 % of the slow part missed; of four times the state's time
    # 0.94, the 1 / (2 x 4) of the slow part's share the maths predicts (SE of the mean about 0.02)
    assert np.mean(own) < 0.82
    assert 0.88 < np.mean(with_state) < 1.1
    with pytest.raises(ValueError, match="state_tau"):
        conditional_test(x[0], state_tau=-1.0)
    assert batch_length(x[0], state_tau=8.0) == 4 * 8 and conditional_test(x[0], state_tau=8.0).df == 4 * 31 - 1


def _slow_ar1(rng, shape, tau, burn=300):
    """Unit-variance AR(1) rows of integrated time ``tau`` along the last axis, burnt in."""
    from scipy.signal import lfilter

    phi = (tau - 1.0) / (tau + 1.0)
    e = rng.normal(size=shape[:-1] + (shape[-1] + burn,))
    return lfilter([np.sqrt(1 - phi**2)], [1.0, -phi], e, axis=-1)[..., burn:]


def test_check_tau_covers_each_checks_slow_test_function():
    """Check ``a``'s terms carry a slow part (4 % of their variance per draw, two thirds of the
    long-run variance) that follows its test function ``f_a`` (time 50), as the ``cluster_size``
    check's follow the sum of squared cluster sizes; check ``b``'s are white. The terms' own times
    miss it: ``a``'s variance is underestimated and its p-value liberal. With ``check_tau`` (the
    test functions' times, mean over chains, as ``compute_conditional_checks`` stores them)
    ``a``'s batches see it and all checks together hold their level (400 runs)."""
    from arviz_regen.base.autocorrelation import integrated_time

    rng = np.random.default_rng(1)
    runs, chains, draws, share, tau_slow = 400, 4, 1000, 0.04, 50.0
    slow = _slow_ar1(rng, (runs, chains, draws), tau_slow)
    x = np.sqrt(1 - share) * rng.normal(size=(runs, chains, draws, 2))
    x[..., 0] += np.sqrt(share) * slow
    f = np.stack([slow + 0.3 * rng.normal(size=slow.shape), rng.normal(size=slow.shape)], axis=-1)
    tau = np.nanmean(integrated_time(np.moveaxis(f, -1, -2)), axis=1)  # (runs, checks)
    old = [conditional_test(x[r]) for r in range(runs)]
    new = [conditional_test(x[r], check_tau=tau[r]) for r in range(runs)]
    sigma2 = 1 - share + share * tau_slow  # a's long-run variance
    ratio = [np.mean([r.mcse[0] ** 2 * chains * draws / sigma2 for r in res]) for res in (old, new)]
    # own times: 0.62, a third of the slow part missed; four of f_a's times: 0.92, the 1 / (2 x 4) of
    # the slow part's share the maths predicts (SE of the mean about 0.01)
    assert ratio[0] < 0.7 and 0.85 < ratio[1] < 1.05, ratio
    se = np.sqrt(0.05 * 0.95 / runs)
    assert np.mean([r.p_value[0] < 0.05 for r in old]) > 0.05 + 3 * se
    assert np.mean([r.p_value_all < 0.05 for r in new]) < 0.05 + 3 * se
    assert {r.combination for r in new} == {"bonferroni"}
    # a's batches about four of f_a's times (46; Geyer's estimate on 1,000 draws runs low), b's the
    # terms' own
    b = np.array([r.batch for r in new])
    assert np.median(b[:, 0]) > 4 * 35 and np.all(b[:, 1] == [batch_length(x[r]) for r in range(runs)])


def test_check_tau_batches_and_combination():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 1000, 3))
    # each check's own batch length: CHECK_TAU_FACTOR times its time, capped at a quarter of a chain
    b = batch_lengths(x, check_tau=[10.0, np.nan, 1e4])
    assert list(b) == [int(CHECK_TAU_FACTOR * 10), batch_length(x), 250]
    res = conditional_test(x, check_tau=[10.0, np.nan, 1e4])
    assert res.combination == "bonferroni" and list(res.df_each) == [4 * 25 - 1, 4 * (1000 // b[1]) - 1, 15]
    assert res.df == 15 and res.p_value_all == pytest.approx(min(1.0, 3 * res.p_value.min()))
    # state_tau raises every check's batches
    assert list(batch_lengths(x, state_tau=20.0, check_tau=[10.0, np.nan, 1.0])) == [80, 80, 80]
    # many batches at the longest: Hotelling at that length, as without check_tau
    long = rng.normal(size=(4, 8000, 3))
    res = conditional_test(long, check_tau=[2.0, 3.0, np.nan])
    assert res.combination == "hotelling" and res.df >= HOTELLING_MIN_DF
    same = conditional_test(long, state_tau=res.batch.max() / 4)
    assert res.p_value_all == pytest.approx(same.p_value_all)
    # a stuck chain is still caught, a zero check passes
    stuck = np.concatenate([np.full((2, 200, 1), 0.3), np.zeros((2, 200, 1))], axis=2)
    res = conditional_test(stuck, check_tau=[5.0, 5.0])
    assert res.p_value[0] == 0.0 and res.p_value[1] == 1.0 and res.p_value_all == 0.0
    for bad in ([1.0, 2.0], [1.0, -2.0, 3.0], [1.0, np.inf, 3.0], "slow"):
        with pytest.raises(ValueError, match="check_tau"):
            conditional_test(x, check_tau=bad)


def test_degenerate_terms():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 400, 1))
    both = np.concatenate([x, 2 * x], axis=2)  # collinear checks: rank 1
    res = conditional_test(both)
    assert res.rank == 1 and np.isfinite(res.p_value_all)
    stuck = np.full((2, 50, 2), 0.3)  # a chain stuck where the terms are not zero
    assert conditional_test(stuck).p_value_all == 0.0
    assert conditional_test(np.zeros((2, 50, 2))).p_value_all == 1.0
    few = conditional_test(rng.normal(size=(1, 2, 3)))  # one batch: nothing to compare
    assert np.isnan(few.p_value_all)
    x = rng.normal(size=(3, 100, 2))
    cov, n_batches = batch_means_cov(x, b=10)
    assert cov.shape == (2, 2) and n_batches == 30
    # by default batches of at least TAU_FACTOR autocorrelation times (about one for white noise)
    b = batch_length(x)
    assert TAU_FACTOR <= b <= 50 and batch_means_cov(x)[1] == 3 * (100 // b)


def _idata(rng, shift=0.0):
    terms = rng.normal(size=(4, 500, 3)) + shift
    idata = from_dict({"posterior": {"z": rng.integers(0, 2, (4, 500, 5))}})
    from arviz_regen.xr.containers import add_group

    ds = xr.Dataset({"z": xr.DataArray(terms, dims=("chain", "draw", "check"), coords={"check": CHECKS})})
    return add_group(idata, "conditional_checks", ds)


def test_result_and_accessor():
    rng = np.random.default_rng(5)
    idata = _idata(rng)
    res = arviz_regen.conditional_check(idata)
    assert list(res["z"].coords["check"].values) == CHECKS + ["all"]
    assert res["z"].attrs["df"] == 4 * 22 - 1 and res["z"].attrs["rank"] == 3
    stat = arviz_regen.conditional_check(idata, kind="statistic")["z"]
    mean, mcse = (arviz_regen.conditional_check(idata, kind=k)["z"] for k in ("mean", "mcse"))
    np.testing.assert_allclose(stat[:3], mean[:3] / mcse[:3])
    da = idata["conditional_checks"]["z"] if hasattr(idata, "children") else idata.conditional_checks["z"]
    np.testing.assert_allclose(arviz_regen.conditional_check(da.rename("z"))["z"], res["z"])
    if hasattr(xr, "DataTree") and hasattr(idata, "children"):
        np.testing.assert_allclose(idata.regen.conditional_check()["z"], res["z"])
    shifted = arviz_regen.conditional_check(_idata(rng, shift=0.1))
    assert float(shifted["z"].sel(check="all")) < 1e-3
    # the state's time, stored with the terms, sets longer batches
    slow = _idata(rng)
    slow["conditional_checks"]["z"].attrs["state_tau"] = 10.0
    assert arviz_regen.conditional_check(slow)["z"].attrs["df"] == 4 * (500 // 40) - 1
    slow["conditional_checks"]["z"].attrs["state_tau"] = "slow"
    with pytest.raises(ValueError, match="state_tau"):
        arviz_regen.conditional_check(slow)
    # terms from before check_tau: scored as before, with a note; with it, per-check batches
    assert "check_tau" in res["z"].attrs["note"] and res["z"].attrs["combination"] == "hotelling"
    timed = _idata(rng)
    timed["conditional_checks"]["z"].attrs["check_tau"] = [10.0, float("nan"), 1e4]
    out = arviz_regen.conditional_check(timed)["z"]
    assert "adjusted_check" in out.attrs["note"] and out.attrs["combination"] == "bonferroni"
    assert out.attrs["batch"][0] == 40 and out.attrs["df_each"][0] == 4 * (500 // 40) - 1
    assert out.attrs["capped"] == "c"
    timed["conditional_checks"]["z"].attrs["check_tau"] = [1.0, 2.0]
    with pytest.raises(ValueError, match="check_tau"):
        arviz_regen.conditional_check(timed)


def test_adjusted_combination_from_the_attributes():
    """The terms' attributes name the combination (``compute_conditional_checks`` writes them): the
    result is the kernel's on the same arrays, with its regression in the attributes; terms without
    them keep the combination before it (and say so); bad names are refused."""
    rng = np.random.default_rng(8)
    idata = _idata(rng)
    da = idata["conditional_checks"]["z"]
    da.attrs.update(check_tau=[10.0, 25.0, 200.0], adjusted_check="c", raw_checks="a")
    res = arviz_regen.conditional_check(idata)["z"]
    want = conditional_test(da.values, check_tau=[10.0, 25.0, 200.0], adjusted=2, raw=[0])
    assert res.attrs["combination"] == "adjusted" and "note" not in res.attrs
    assert float(res.sel(check="all")) == pytest.approx(want.p_value_all)
    np.testing.assert_allclose(res.values[:3], want.p_value)
    assert res.attrs["adjusted_check"] == "c" and res.attrs["raw_checks"] == "a"
    # beta over the coordinate: a coefficient per regressor, NaN at the adjusted check and at all
    np.testing.assert_allclose(res.attrs["beta"], [*want.beta, np.nan, np.nan])
    assert res.attrs["adjusted_t"] == pytest.approx(want.adjusted_t) and res.attrs["adjusted_df"] == want.adjusted_df
    assert res.attrs["df"] == want.df and res.attrs["capped"] == "c"
    # a list of names, and the cap
    da.attrs.update(raw_checks=["a", "b"], min_batches=8)
    res = arviz_regen.conditional_check(idata)["z"]
    want = conditional_test(da.values, check_tau=[10.0, 25.0, 200.0], adjusted=2, raw=[0, 1], min_batches=8)
    assert float(res.sel(check="all")) == pytest.approx(want.p_value_all) and res.attrs["batch"][2] == 500 // 8
    assert res.attrs["raw_checks"] == "a,b" and res.attrs["capped"] == "b,c"
    # the statistic of all checks together is Hotelling's only
    assert np.isnan(arviz_regen.conditional_check(idata, kind="statistic")["z"].sel(check="all"))
    # the verdict reads the combined p-value, and notes terms without the combination
    from arviz_regen.diagnostics.verdict import conditional_check_adapter

    assert conditional_check_adapter(idata).p_value == pytest.approx(want.p_value_all)
    for bad, match in (
        ({"adjusted_check": "log_post"}, "adjusted_check"),
        ({"raw_checks": "a, x"}, "raw_checks"),
        ({"raw_checks": "c"}, "raw"),
        ({"min_batches": 1}, "min_batches"),
    ):
        broken = _idata(rng)
        broken["conditional_checks"]["z"].attrs.update({"adjusted_check": "c", "raw_checks": "a", **bad})
        with pytest.raises(ValueError, match=match):
            arviz_regen.conditional_check(broken)
    lone = _idata(rng)
    lone["conditional_checks"]["z"].attrs["raw_checks"] = "a"
    with pytest.raises(ValueError, match="adjusted_check"):
        arviz_regen.conditional_check(lone)
    old = _idata(rng)
    old["conditional_checks"]["z"].attrs["check_tau"] = [10.0, 25.0, 200.0]
    check = conditional_check_adapter(old)
    assert "no adjusted combination" in check.note and check.status == "decided"


def test_bad_input():
    rng = np.random.default_rng(6)
    bare = from_dict({"posterior": {"z": rng.integers(0, 2, (2, 10, 4))}})
    with pytest.raises(ValueError, match="compute_conditional_checks"):
        arviz_regen.conditional_check(bare)
    with pytest.raises(TypeError, match="DataArray"):
        arviz_regen.conditional_check(np.zeros((2, 10, 3)))
    bad = xr.DataArray(np.full((2, 10, 3), np.nan), dims=("chain", "draw", "check"), name="z")
    with pytest.raises(ValueError, match="NaN"):
        arviz_regen.conditional_check(bad)
    with pytest.raises(ValueError, match="dims"):
        arviz_regen.conditional_check(xr.DataArray(np.zeros((2, 10)), dims=("chain", "draw"), name="z"))
    with pytest.raises(ValueError, match="kind"):
        arviz_regen.conditional_check(bad, kind="rhat")
    with pytest.raises(ValueError, match="w"):
        arviz_regen.conditional_check(bad, var_names=["w"])
