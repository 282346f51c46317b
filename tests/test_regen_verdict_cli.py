"""The verdict in the summary table and ``arviz-regen-summary --fail-below`` exit statuses."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import arviz_regen
from arviz_regen.cli import EXIT_ERROR, EXIT_FAIL, EXIT_NO_VERDICT, EXIT_OK, _verdict, main
from arviz_regen.state import canonicalize
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
    assert "hotelling_rs[k=2]" in verdict and "hotelling_rs[k=3]" in verdict
    assert "p_value_all" in out  # the table is printed first
    # the verdict agrees with the table; without --fail-below the table alone, status 0
    table = arviz_regen.regen_summary(one_wrong_chain, k=[2, 3], n_bootstrap=199)
    assert (table.loc[["hotelling_rs[k=2]", "hotelling_rs[k=3]"], "p_value_all"] < 0.05).all()
    assert table.loc["hotelling_rs[k=2]", "p_value[2]"] < 0.05
    assert main([path, "-k", "2", "3", *B]) == EXIT_OK
    assert "verdict" not in capsys.readouterr().out


def test_fail_below_passes_correct_iid_chains(good, tmp_path, capsys):
    path = _save(good, tmp_path, "good")
    assert main([path, "-k", "2", "3", "5", *B, "--fail-below", "0.05"]) == EXIT_OK
    verdict = capsys.readouterr().out.strip().splitlines()[-1]
    assert verdict.startswith("verdict: PASS at alpha=0.05")
    table = arviz_regen.regen_summary(good, k=[2, 3, 5], n_bootstrap=199)
    assert (table.loc[[f"hotelling_rs[k={k}]" for k in (2, 3, 5)], "p_value_all"] >= 0.05).all()
    # --method chi2 changes the per-chain p-values only; --seed reproduces them
    assert main([path, "-k", "3", *B, "--method", "chi2", "--round", "6"]) == EXIT_OK
    out = capsys.readouterr().out
    ref = arviz_regen.hotelling_rs(good, k=[3], method="chi2", n_bootstrap=199)
    assert f"{ref.p_value.values[0, 0]:.6f}"[:-1] in out
    runs = []
    for _ in range(2):
        assert main([path, "-k", "3", *B, "--seed", "7", "--round", "6"]) == EXIT_OK
        runs.append(capsys.readouterr().out)
    assert runs[0] == runs[1]


def test_fail_below_no_verdict_without_recurring_states(flat, tmp_path, capsys):
    path = _save(flat, tmp_path, "flat")
    status = main([path, "-k", "2", "3", *B, "--fail-below", "0.05"])
    assert status == EXIT_NO_VERDICT  # never 0 for a verdict that was not reached
    captured = capsys.readouterr()
    verdict = captured.out.strip().splitlines()[-1]
    assert verdict.startswith("verdict: NOT REACHED") and "hotelling_rs[k=2]" in verdict
    assert "NOT REACHED" in captured.err and "recurs too rarely" in captured.err
    # without --fail-below: the table, status 0, and a warning that there is no verdict
    assert main([path, "-k", "2", *B]) == EXIT_OK
    assert "NOT REACHED" in capsys.readouterr().err
    with pytest.warns(UserWarning, match="recurs too rarely"):
        table = arviz_regen.regen_summary(flat, k=[2, 3], n_bootstrap=199)
    row = table.loc["hotelling_rs[k=2]"]
    assert np.isnan(row["p_value_all"]) and np.isnan(row["p_value[0]"])
    assert row["n_tours_min"] == 0 and row["tours_visiting_min"] == 0


def test_fail_below_without_log_posterior_and_errors(good, tmp_path, capsys):
    from arviz_regen._containers import from_datasets, get_group

    no_logp = from_datasets({
        "posterior": get_group(good, "posterior"),
        "sample_stats": get_group(good, "sample_stats").drop_vars("partition_logp"),
    })  # fmt: skip
    path = _save(no_logp, tmp_path, "nologp")
    assert main([path, *B, "--fail-below", "0.05"]) == EXIT_NO_VERDICT
    assert "NOT REACHED" in capsys.readouterr().out
    good_path = _save(good, tmp_path, "good")
    for alpha in ("1.5", "0", "abc"):
        assert main([good_path, "--fail-below", alpha]) == EXIT_ERROR
        assert "argument --fail-below" in capsys.readouterr().err
    assert main([good_path, "--n-bootstrap", "5", "--fail-below", "0.05"]) == EXIT_ERROR
    assert "argument --n-bootstrap: must be at least 19, got 5" in capsys.readouterr().err
    assert main([good_path, "--method", "exact"]) == EXIT_ERROR
    assert main([str(tmp_path / "missing.nc"), "--fail-below", "0.05"]) == EXIT_ERROR


def test_unexpected_error_is_status_2_not_1(good, tmp_path, capsys, monkeypatch):
    import arviz_regen.summary

    def broken(*args, **kwargs):
        raise IndexError("boom")

    monkeypatch.setattr(arviz_regen.summary, "regen_summary", broken)
    assert main([_save(good, tmp_path, "good"), "--fail-below", "0.05"]) == EXIT_ERROR  # 1 would read "failed"
    assert "internal error: IndexError: boom" in capsys.readouterr().err


def test_verdict_rules():
    def table(*p):
        return pd.DataFrame({"p_value_all": p}, index=[f"hotelling_rs[k={k}]" for k in range(2, 2 + len(p))])

    assert _verdict(table(0.2, 0.05), 0.05)[0] == EXIT_OK  # at least alpha passes
    status, line = _verdict(table(0.2, 0.0496), 0.05)  # judged on unrounded p-values
    assert status == EXIT_FAIL and "hotelling_rs[k=3]" in line and "hotelling_rs[k=2]" not in line
    status, line = _verdict(table(np.nan, 0.01), 0.05)  # a failure is a verdict even if another K has none
    assert status == EXIT_FAIL and "no verdict for hotelling_rs[k=2]" in line
    assert _verdict(table(np.nan, 0.5), 0.05)[0] == EXIT_NO_VERDICT
    assert _verdict(pd.DataFrame({"mean": [1.0]}, index=["n_clusters"]), 0.05)[0] == EXIT_NO_VERDICT


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
heavy = sorted(m for m in ("arviz", "xarray", "dask", "numba", "scipy", "pandas") if m in sys.modules)
print("RESULT " + json.dumps([codes, heavy, time.perf_counter() - t0]))
"""


def test_cli_refuses_bad_numbers_at_once_without_heavy_imports(tmp_path):
    """--fail-below 2 took about 10 s to be refused (``import arviz_regen`` imported ArviZ), and
    --chunk-draws -5 answered with a dask internal message: each is an argument error now,
    before anything heavy is imported."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "-c", _LIGHT_CHECK], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    codes, heavy, seconds = json.loads(proc.stdout.split("RESULT ")[-1])
    assert codes == [EXIT_ERROR] * 4 + [EXIT_OK] and heavy == []
    assert seconds < 5  # generous on a loaded machine: the point is that nothing heavy is imported
    for text in ("argument --fail-below: ALPHA must be strictly between 0 and 1, got 2",
                 "argument --chunk-draws: must be at least 1, got -5", "argument -k: must be at least 2, got 1",
                 "argument --seed: must be at least 0, got -1"):  # fmt: skip
        assert text in proc.stderr
