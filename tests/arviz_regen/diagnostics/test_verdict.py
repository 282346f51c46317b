"""One verdict, calibrated: the combination of checks, one chain, rare switching (issue 25).

Rates are checked against α + 3 binomial standard deviations of their run count; seeds are
fixed. The full simulation (500+ runs per design) is ``benchmarks/bench_verdict_calibration.py``.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import arviz_regen
from arviz_regen.base.tour_tests import simes
from arviz_regen.diagnostics.conditional import NO_ADJUSTED
from arviz_regen.diagnostics.verdict import CONDITIONAL_HINT, Check, combine_checks, decide
from arviz_regen.testing import (
    gibbs_chain,
    iid_chain,
    make_idata,
    random_partitions,
    two_basin_chain,
)

ALPHA = 0.05
N_STATES = 30
PROBS = 1.0 / np.arange(1, N_STATES + 1)
PROBS /= PROBS.sum()
STATES = random_partitions(N_STATES, 8, np.random.default_rng(1))
STATS = pd.DataFrame({"sd": [1.0], "r_hat": [1.001], "ess_bulk": [900.0]}, index=["n_clusters"])


def _tol(n, p=ALPHA):
    return 3 * np.sqrt(p * (1 - p) / n)


def test_combinations_hold_their_level_under_dependence():
    from scipy.stats import norm

    rng = np.random.default_rng(0)
    n = 40_000
    for rho in (0.0, 0.5, 0.9):
        z = np.sqrt(rho) * rng.normal(size=(n, 1)) + np.sqrt(1 - rho) * rng.normal(size=(n, 4))
        p = norm.sf(z)  # one-sided p-values, uniform under the null, positively dependent
        assert (simes(p.T) < ALPHA).mean() <= ALPHA + _tol(n), rho  # across K
        assert (np.array([combine_checks(row) for row in p[:5000]]) < ALPHA).mean() <= ALPHA + _tol(5000)
        # the minimum over the four is what the old verdict took: far above the level
        if rho < 0.9:
            assert (p.min(axis=1) < ALPHA).mean() > ALPHA + 5 * _tol(n)
    # Bonferroni also under negative dependence (p and 1 − p)
    u = rng.random(n)
    assert (np.array([combine_checks([a, 1 - a]) for a in u[:5000]]) < ALPHA).mean() <= ALPHA + _tol(5000)


def test_combination_edges():
    assert np.isnan(combine_checks([np.nan, np.nan]))
    assert combine_checks([0.3, np.nan]) == pytest.approx(0.3)
    assert combine_checks([0.3, 0.6]) == pytest.approx(0.6) and combine_checks([0.9, 0.6]) == 1.0
    assert simes(np.array([0.01, np.nan, 0.5])) == pytest.approx(0.02)  # NaN: not run
    assert np.isnan(simes(np.array([np.nan, np.nan])))


def test_further_checks_plug_in_and_the_line_says_which_failed():
    wrong = Check(
        "conditional_check",
        1e-4,
        "the draws are not from this model's posterior (a wrong target)",
        "decided",
        "z: 0.0001",
    )
    fine = Check("hotelling_rs", 0.6, "wrong proportions", "decided", "states recur")
    v = decide([fine, wrong], STATS, 4)
    assert v.status == "FAIL" and v.method == "conditional_check" and "a wrong target" in v.line
    assert v.p_value == pytest.approx(2e-4)  # Bonferroni over the two decided checks
    # absent: named with what to call, and the verdict still comes from the others
    absent = Check("conditional_check", np.nan, "", "absent", f"no conditional_checks group: {CONDITIONAL_HINT}")
    v = decide([fine, absent], STATS, 4)
    assert v.status == "PASS" and "pmp.compute_conditional_checks(idata, model=model)" in v.line
    # undecided: no pass
    v = decide([fine, absent._replace(status="undecided", note="too few draws")], STATS, 4)
    assert v.status == "NOT REACHED" and "too few draws" in v.line
    assert decide([absent], STATS, 4).status == "NOT REACHED"  # nothing decided


def test_one_chain_is_not_reached_never_a_pass(tmp_path, capsys):
    idata = make_idata(STATES, iid_chain(PROBS, 1, 2000, np.random.default_rng(3)), np.log(PROBS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = arviz_regen.regen_summary(idata, k=[2, 5], n_bootstrap=99)
    assert table.attrs["verdict_status"] == "NOT REACHED"
    assert "not checked: R-hat of n_clusters" in table.attrs["verdict"] and "one chain" in table.attrs["verdict"]
    # a constant trace (no R-hat either) is not "not checked": only a trace that varies is
    stats = pd.DataFrame({"sd": [0.0], "r_hat": [np.nan], "ess_bulk": [np.nan]}, index=["n_clusters"])
    assert decide([Check("x", 0.5, "", "decided", "")], stats, 2).status == "PASS"
    # the CLI: status 3 with --fail-below
    path = tmp_path / "one.nc"
    idata.to_netcdf(str(path))
    from arviz_regen.cli import EXIT_NO_VERDICT, main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([str(path), "--fail-below", "0.05", "--n-bootstrap", "99"]) == EXIT_NO_VERDICT
    assert "NOT REACHED" in capsys.readouterr().out


def test_p_value_all_holds_its_level_under_rare_switching():
    # two basins crossed about 5 times per chain in 10,000 draws: 30 % of runs rejected before
    n = 80
    idx = two_basin_chain(PROBS, 4 * n, 10_000, 11, cross=1e-3).reshape(n, 4, 10_000)
    basin = (np.arange(N_STATES) % 2)[idx]
    assert 2 <= np.median(np.abs(np.diff(basin, axis=-1)).sum(axis=-1)) <= 10
    p, rare = [], 0
    for r in range(n):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ds = arviz_regen.hotelling_rs(
                make_idata(STATES, idx[r], np.log(PROBS)), k=[2, 5], n_bootstrap=199, random_seed=r
            )
        rare += any("switch rarely" in str(w.message) for w in caught)
        p.append(ds.p_value_all.values)
    assert np.all((np.array(p) < ALPHA).mean(axis=0) <= ALPHA + _tol(n))
    assert rare >= 0.8 * n  # said, not silent


def test_trapped_chain_is_still_caught_by_p_value_all():
    # one chain of four confined to the even ranks (its tours never visit the odd ones)
    from arviz_regen.testing import metropolis_chain

    n, hits = 20, 0
    for r in range(n):
        rng = np.random.default_rng(200 + r)
        idx = metropolis_chain(PROBS, 4, 5_000, rng, stay=0.5, max_step=3)
        mode = np.arange(0, N_STATES, 2)
        idx[3] = mode[metropolis_chain(PROBS[mode] / PROBS[mode].sum(), 1, 5_000, rng, stay=0.5, max_step=3)[0]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = arviz_regen.hotelling_rs(make_idata(STATES, idx, np.log(PROBS)), k=[2, 5], n_bootstrap=199)
        hits += simes(ds.p_value_all.values) < ALPHA
    assert hits >= 0.9 * n


def test_simulated_chains_keep_their_target():
    # the two designs of the calibration benchmark are correct samplers: visit frequencies of a
    # long run match the target within 4 standard errors (batch means of 50 batches)
    def check(index, probs):
        T = index.shape[1]
        freq = np.stack([(index == s).mean(axis=1) for s in range(probs.size)], axis=1).mean(axis=0)
        batches = [index[:, b * (T // 50) : (b + 1) * (T // 50)] for b in range(50)]
        bm = np.stack([[(bt == s).mean() for s in range(probs.size)] for bt in batches])
        se = bm.std(axis=0, ddof=1) / np.sqrt(50)
        assert np.all(np.abs(freq - probs) <= 4 * se + 1e-3), np.abs(freq - probs) / se

    check(two_basin_chain(PROBS, 40, 20_000, 5, cross=1e-2), PROBS)
    from arviz_regen.base.state import canonicalize

    # every partition of 4 items (15), random log probabilities: the exact Gibbs sampler
    labels = np.array(np.meshgrid(*[range(4)] * 4, indexing="ij")).reshape(4, -1).T
    labels = np.unique(canonicalize(labels), axis=0)
    assert labels.shape[0] == 15
    lp = np.random.default_rng(2).normal(size=15)
    probs = np.exp(lp) / np.exp(lp).sum()
    check(gibbs_chain(labels, lp, 40, 5_000, 6), probs)
    with pytest.raises(ValueError, match="not closed"):
        gibbs_chain(labels[:10], lp[:10], 2, 10, 0)


def test_summary_reads_the_conditional_check_when_present(monkeypatch):
    import xarray as xr

    from arviz_regen.xr.containers import add_group

    def idata():
        return make_idata(STATES, iid_chain(PROBS, 2, 2000, np.random.default_rng(4)), np.log(PROBS))

    def run(data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return arviz_regen.regen_summary(data, k=[2, 5], n_bootstrap=99)

    # absent: the line says so and what to call; the verdict comes from the other checks
    table = run(idata())
    assert table.attrs["verdict_status"] == "PASS" and CONDITIONAL_HINT in table.attrs["verdict"]
    assert "conditional_check" not in table.index
    # present: its combined p-value ("all") is one more check (stand-in for the real function,
    # which another module provides)
    data = idata()
    add_group(data, "conditional_checks", xr.Dataset({"z": (("chain", "draw", "check"), np.zeros((2, 2000, 2)))}))

    def fake(data, p=1e-5):
        return xr.Dataset({"z": ("check", [0.3, 0.2, p])}, coords={"check": ["a", "b", "all"]})

    monkeypatch.setattr(arviz_regen, "conditional_check", fake, raising=False)
    table = run(data)
    assert table.attrs["verdict_status"] == "FAIL" and table.attrs["decided_by"] == "conditional_check"
    assert "a wrong target" in table.attrs["verdict"] and table.loc["conditional_check", "p_value_all"] == 1e-5
    assert "check_tau" not in table.attrs["verdict"]

    # terms from an older pymc_partition (no check_tau): the line says to recompute them
    def old(data):
        return fake(data).assign(z=lambda ds: ds.z.assign_attrs(note="old"))

    monkeypatch.setattr(arviz_regen, "conditional_check", old, raising=False)
    assert "lack check_tau" in run(data).attrs["verdict"]

    # terms from before the adjusted combination: the line says so too
    def before(data):
        return fake(data).assign(z=lambda ds: ds.z.assign_attrs(note=NO_ADJUSTED))

    monkeypatch.setattr(arviz_regen, "conditional_check", before, raising=False)
    line = run(data).attrs["verdict"]
    assert "no adjusted combination" in line and "lack check_tau" not in line
    monkeypatch.setattr(arviz_regen, "conditional_check", lambda d: fake(d, np.nan), raising=False)
    table = run(data)  # too few draws for its batch means: no pass
    assert (
        table.attrs["verdict_status"] == "NOT REACHED"
        and "conditional_check could not decide" in table.attrs["verdict"]
    )


def test_r_hat_well_above_one_says_the_chains_sit_apart_not_run_longer():
    """R-hat of 2 (digits' chains, issue 30) is not "not enough draws": the chains sit in different
    states and more draws help only once they cross; 1.03 still asks for a longer run."""
    undecided = Check("chain_agreement", np.nan, "", "undecided", "the chains are too short")
    absent = Check("hotelling_rs", np.nan, "", "absent", "states do not recur enough")
    for r_hat, apart in ((2.06, True), (1.03, False)):
        stats = pd.DataFrame({"sd": [1.0], "r_hat": [r_hat], "ess_bulk": [50.0]}, index=["n_clusters"])
        v = decide([absent, undecided], stats, 4)
        assert v.status == "NOT REACHED"
        assert ("sit in different states" in v.line) == apart and ("not enough draws, run longer" in v.line) != apart
        assert "[; " not in v.line and "[hotelling_rs not run: states do not recur enough; chain_agreement" in v.line
