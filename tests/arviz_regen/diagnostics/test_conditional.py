"""``arviz_regen.conditional_check``: level and power of the test on terms with a known law, the
xarray result, the accessor, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import arviz_regen
from arviz_regen.base.conditional import TAU_FACTOR, batch_length, batch_means_cov, conditional_test
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
