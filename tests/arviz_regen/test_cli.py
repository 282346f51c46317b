"""The verdict of the summary table and ``arviz-regen-summary --fail-below`` exit statuses."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import arviz_regen
from arviz_regen.base.state import canonicalize
from arviz_regen.cli import EXIT_ERROR, EXIT_FAIL, EXIT_NO_VERDICT, EXIT_OK, main
from arviz_regen.testing import iid_chain, make_idata, random_partitions, zipf_probs

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # R-hat of a constant

B = ["--n-bootstrap", "199"]
STATES = random_partitions(12, 6, np.random.default_rng(8))
PROBS = zipf_probs(12, 1.2)
WRONG = PROBS[[0, 2, 1, *range(3, 12)]]  # ranks 1 and 2 swapped


def _save(idata, tmp_path, name):
    path = tmp_path / f"{name}.nc"
    idata.to_netcdf(str(path))
    return str(path)


@pytest.fixture(scope="module")
def good():
    """Three exact (iid) chains from the target: they have converged."""
    return make_idata(STATES, iid_chain(PROBS, 3, 2000, np.random.default_rng(1)), np.log(PROBS))


@pytest.fixture(scope="module")
def one_wrong_chain():
    """Chains 0 and 1 from the target, chain 2 visits ranks 1 and 2 in swapped proportions."""
    rng = np.random.default_rng(1)
    idx = np.concatenate([iid_chain(PROBS, 2, 2000, rng), iid_chain(WRONG, 1, 2000, rng)])
    return make_idata(STATES, idx, np.log(PROBS))


@pytest.fixture(scope="module")
def flat():
    """The 40-item flat posterior: every draw a new partition, so no state recurs."""
    rng = np.random.default_rng(40)
    n_chain, n_draw, n_items = 2, 500, 40
    n_clus = rng.integers(2, n_items + 1, size=(n_chain * n_draw, 1))
    labels = canonicalize((rng.random((n_chain * n_draw, n_items)) * n_clus).astype(np.int64))
    index = np.arange(n_chain * n_draw).reshape(n_chain, n_draw)
    return make_idata(labels, index, np.zeros(len(labels)))


def test_fail_below_fails_a_chain_with_wrong_frequencies(one_wrong_chain, tmp_path, capsys):
    path = _save(one_wrong_chain, tmp_path, "bad")
    assert main([path, "-k", "2", "3", *B, "--fail-below", "0.05"]) == EXIT_FAIL
    out = capsys.readouterr().out
    verdict = out.strip().splitlines()[-1]
    assert verdict.startswith("verdict: FAIL at alpha=0.05")
    assert "decided by hotelling_rs: states recur" in verdict
    assert "p_value_all" in out  # the table is printed first
    # the verdict agrees with the table and with the per-chain test of the wrong chain
    table = arviz_regen.regen_summary(one_wrong_chain, k=[2, 3], n_bootstrap=199)
    assert (table.loc[["hotelling_rs[k=2]", "hotelling_rs[k=3]"], "p_value_all"] < 0.05).all()
    assert table.attrs["verdict_status"] == "FAIL" and table.attrs["decided_by"] == "hotelling_rs"
    assert arviz_regen.hotelling_rs(one_wrong_chain, k=2, n_bootstrap=199).p_value.values[2] < 0.05
    # without --fail-below: the same table and verdict line, status 0
    assert main([path, "-k", "2", "3", *B]) == EXIT_OK
    assert capsys.readouterr().out.strip().splitlines()[-1] == verdict


def test_fail_below_passes_correct_iid_chains(good, tmp_path, capsys):
    path = _save(good, tmp_path, "good")
    assert main([path, "-k", "2", "3", "5", *B, "--fail-below", "0.05"]) == EXIT_OK
    verdict = capsys.readouterr().out.strip().splitlines()[-1]
    assert verdict.startswith("verdict: PASS at alpha=0.05") and "decided by hotelling_rs" in verdict
    table = arviz_regen.regen_summary(good, k=[2, 3, 5], n_bootstrap=199)
    assert (table.loc[[f"hotelling_rs[k={k}]" for k in (2, 3, 5)], "p_value_all"] >= 0.05).all()
    assert (table["r_hat"].dropna() <= 1.01).all()
    # per-chain p-values are not printed (no multiplicity control: not a verdict)
    assert not any(str(c).startswith("p_value[") for c in table.columns)
    # --method chi2 changes the per-chain p-values only, so not the table; --seed reproduces it
    assert main([path, "-k", "3", *B, "--method", "chi2", "--round", "6"]) == EXIT_OK
    chi2_out = capsys.readouterr().out
    assert main([path, "-k", "3", *B, "--round", "6"]) == EXIT_OK
    assert capsys.readouterr().out == chi2_out
    runs = []
    for _ in range(2):
        assert main([path, "-k", "3", *B, "--seed", "7", "--round", "6"]) == EXIT_OK
        runs.append(capsys.readouterr().out)
    assert runs[0] == runs[1]


def test_without_recurring_states_chain_agreement_decides(flat, tmp_path, capsys):
    path = _save(flat, tmp_path, "flat")
    assert main([path, "-k", "2", "3", *B, "--fail-below", "0.05"]) == EXIT_OK
    captured = capsys.readouterr()
    verdict = captured.out.strip().splitlines()[-1]
    assert verdict.startswith("verdict: PASS") and "decided by chain_agreement: states do not recur" in verdict
    table = arviz_regen.regen_summary(flat, k=[2, 3], n_bootstrap=199)
    assert "chain_agreement" in table.index and not any(str(r).startswith("hotelling_rs") for r in table.index)
    assert table.loc["chain_agreement", "p_value_all"] >= 0.05
    assert {"vi_ref0", "binder_ref1", "n_clusters", "partition_logp"} <= set(table.index)


def test_rhat_above_limit_is_never_a_pass(flat, tmp_path, capsys):
    # the flat chains, but chain 1 shifted towards more clusters: a trace R-hat fails while
    # the test of too few batches cannot decide or does not reject -> never PASS
    from arviz_regen.xr.containers import get_group

    labels = get_group(flat, "posterior")["z"].values.copy()
    rng = np.random.default_rng(3)
    labels[1] = canonicalize(
        np.where(rng.random(labels[1].shape) < 0.3, rng.integers(0, 40, labels[1].shape), labels[1])
    )
    idata = make_idata(
        labels.reshape(-1, labels.shape[-1]),
        np.arange(labels.shape[0] * labels.shape[1]).reshape(labels.shape[:2]),
        np.zeros(labels.shape[0] * labels.shape[1]),
    )
    table = arviz_regen.regen_summary(idata, n_bootstrap=199)
    assert (table["r_hat"] > 1.01).any()
    assert table.attrs["verdict_status"] != "PASS"


def test_fail_below_without_log_posterior_and_errors(good, tmp_path, capsys):
    from arviz_regen.xr.containers import from_datasets, get_group

    no_logp = from_datasets({
        "posterior": get_group(good, "posterior"),
        "sample_stats": get_group(good, "sample_stats").drop_vars("partition_logp"),
    })  # fmt: skip
    path = _save(no_logp, tmp_path, "nologp")
    assert main([path, *B, "--fail-below", "0.05"]) == EXIT_OK
    assert "decided by chain_agreement: no log posterior" in capsys.readouterr().out
    good_path = _save(good, tmp_path, "good")
    for alpha in ("1.5", "0", "abc"):
        assert main([good_path, "--fail-below", alpha]) == EXIT_ERROR
        assert "argument --fail-below" in capsys.readouterr().err
    assert main([good_path, "--n-bootstrap", "5", "--fail-below", "0.05"]) == EXIT_ERROR
    assert "argument --n-bootstrap: must be at least 19, got 5" in capsys.readouterr().err
    assert main([good_path, "--method", "exact"]) == EXIT_ERROR
    assert main([str(tmp_path / "missing.nc"), "--fail-below", "0.05"]) == EXIT_ERROR


def test_unexpected_error_is_status_2_not_1(good, tmp_path, capsys, monkeypatch):
    from arviz_regen.diagnostics import summary as summary_module

    def broken(*args, **kwargs):
        raise IndexError("boom")

    monkeypatch.setattr(summary_module, "regen_summary", broken)
    assert main([_save(good, tmp_path, "good"), "--fail-below", "0.05"]) == EXIT_ERROR  # 1 would read "failed"
    assert "internal error: IndexError: boom" in capsys.readouterr().err


def test_verdict_rules():
    import xarray as xr

    from arviz_regen.base.tour_tests import simes
    from arviz_regen.diagnostics.verdict import agreement_check, decide, hotelling_check

    def hot(p, n_tours=(50, 60)):
        return xr.Dataset(
            {"p_value_all": (("k",), np.array(p, dtype=float)), "n_tours": (("chain",), np.array(n_tours))},
            coords={"k": [2, 3][: len(p)], "chain": [0, 1]},
        )

    def verdict(p, stats, agree=None, n_tours=(50, 60)):
        return decide([hotelling_check(hot(p, n_tours)), agreement_check(agree, 2)], stats, 2)

    stats = pd.DataFrame(
        {"sd": [1.0, 1.0], "r_hat": [1.001, 1.004], "ess_bulk": [900.0, 800.0]}, index=["n_clusters", "vi_ref0"]
    )
    assert verdict([0.2, 0.3], stats).status == "PASS"
    # the K values are combined (Simes), not their minimum taken: 0.0496 at one K is no FAIL
    v = verdict([0.2, 0.0496], stats)
    assert v.status == "PASS" and v.p_value == pytest.approx(float(simes(np.array([0.2, 0.0496]))))
    v = verdict([0.2, 0.004], stats)
    assert v.status == "FAIL" and "k=3: 0.004" in v.line and v.exit_status == EXIT_FAIL
    assert "hotelling_rs (p=" in v.line and "wrong proportions" in v.line  # which check and what it means
    assert verdict([np.nan, 0.01], stats).status == "FAIL"  # a failure is a verdict
    assert verdict([np.nan, np.nan], stats).status == "NOT REACHED"
    # a failing R-hat or too small an ESS beside a test that does not reject: never a pass
    bad = stats.assign(r_hat=[1.03, 1.0])
    v = verdict([0.4, 0.5], bad)
    assert (
        v.status == "NOT REACHED"
        and "R-hat of n_clusters is 1.030 > 1.01" in v.line
        and v.exit_status == EXIT_NO_VERDICT
    )
    v = verdict([0.4, 0.5], stats.assign(ess_bulk=[150.0, 900.0]))
    assert v.status == "NOT REACHED" and "bulk ESS of n_clusters" in v.line
    # but a rejection is a FAIL whatever R-hat says
    assert verdict([0.001, 0.5], bad).status == "FAIL"
    # too few tours: the chain-agreement test decides, and says why
    agree = xr.Dataset(
        {"p_value_all": 0.3, "p_value_traces": 0.3, "p_value_coclustering": 0.5, "n_pairs_disagreeing": 0}
    )
    agree.attrs.update(decided=1)
    v = verdict([0.018, 0.5], stats, agree, n_tours=(2, 0))
    assert v.status == "PASS" and v.method == "chain_agreement" and "chain 1 has 0 whole tours" in v.line
    agree.attrs.update(decided=0, reason="the chains are too short")
    v = verdict([0.018, 0.5], stats, agree, n_tours=(2, 0))
    assert v.status == "NOT REACHED" and "too short" in v.line


def test_plot_hotelling_rs_says_when_there_is_no_test(flat):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with pytest.warns(UserWarning, match="recurs too rarely"):
        axes = arviz_regen.plot_hotelling_rs(flat, k=[2, 3], n_points=5, n_bootstrap=199)
    for axi in axes:
        assert any("no test: too few tours" in t.get_text() for t in axi.texts)
        assert not any(np.isfinite(line.get_ydata()).any() for line in axi.lines[:-1])
    plt.close("all")


_LIGHT_CHECK = """
import json, sys, time
t0 = time.perf_counter()
from arviz_regen.cli import main
codes = [main(argv) for argv in (["x.nc", "--fail-below", "2"], ["x.nc", "--chunk-draws", "-5"],
                                 ["x.nc", "-k", "1"], ["x.nc", "--seed", "-1"], ["--help"])]
heavy = sorted(m for m in ("dask", "zarr", "pymc", "pytensor", "pymc_partition") if m in sys.modules)
print("RESULT " + json.dumps([codes, heavy, time.perf_counter() - t0]))
"""


def test_cli_refuses_bad_numbers_before_reading_data(tmp_path):
    """Bad arguments are refused before any data is read: --chunk-draws -5 answered with a dask
    internal message, now each is an argument error, before dask (or anything of PyMC) is
    imported. (``import arviz_regen`` imports ArviZ and xarray to register with them: see
    ``benchmarks/bench_import.py`` for what that costs the command.)"""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "-c", _LIGHT_CHECK], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    codes, heavy, _ = json.loads(proc.stdout.split("RESULT ")[-1])
    assert codes == [EXIT_ERROR] * 4 + [EXIT_OK] and heavy == []
    for text in ("argument --fail-below: ALPHA must be strictly between 0 and 1, got 2",
                 "argument --chunk-draws: must be at least 1, got -5", "argument -k: must be at least 2, got 1",
                 "argument --seed: must be at least 0, got -1"):  # fmt: skip
        assert text in proc.stderr
