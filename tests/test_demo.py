"""The command-line demo (the README's first command): simulated data, real data, subprocess."""

import os
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import arviz as az  # noqa: E402
import pytest  # noqa: E402

from pymc_partition.demo import main  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CSV = REPO.parent / "shared" / "data" / "arabidopsis_messerli2007.csv"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIGURES = ["figure1_exact_posterior.png", "figure1_coclustering_matrix.png", "figure2_convergence.png"]
SAMPLERS = ["gibbs", "split_merge"]


def _check_outputs(out, chains, draws):
    for name in FIGURES:
        path = out / name
        assert path.is_file() and path.stat().st_size > 1000, name
        assert path.read_bytes()[:8] == PNG_MAGIC, name
    for s in SAMPLERS:
        idata = az.from_netcdf(out / f"idata_{s}.nc")
        assert idata.posterior["z"].shape == (chains, draws, 14)
        assert {"partition_logp", "n_clusters"} <= set(idata.sample_stats.data_vars)
        assert (out / f"convergence_{s}.csv").is_file()
    assert (out / "comparison.csv").is_file()


def _check_printed(text):
    assert "Empirical Bayes" in text
    assert "Exact posterior over all B(14) = 190,899,322 partitions" in text
    assert "MAP probability" in text and "top-10 mass" in text
    for label in ("Gibbs", "split-merge (badly mixing)"):
        assert f"Convergence table: {label}" in text
    assert text.count("hotelling_rs[k=10]") >= 2 and "r_hat" in text
    assert "written to" in text


def test_demo_simulated(tmp_path, capsys):
    out = tmp_path / "output"
    assert main(["--draws", "1000", "--chains", "2", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "simulated from the paper's fitted model" in text
    _check_printed(text)
    _check_outputs(out, chains=2, draws=1000)


@pytest.mark.skipif(not CSV.is_file(), reason=f"Arabidopsis CSV not available at {CSV}")
def test_demo_real_data(tmp_path, capsys):
    out = tmp_path / "output"
    assert main(["--data", str(CSV), "--draws", "1000", "--chains", "2", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    _check_printed(text)
    assert "MAP probability 0.651" in text  # the exact posterior on the real data
    assert "ColWT, sex3" in text
    _check_outputs(out, chains=2, draws=1000)


def test_demo_missing_data_file(tmp_path, capsys):
    assert main(["--data", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "not found" in err and "bclust" in err


def test_demo_module_subprocess(tmp_path):
    """``python -m pymc_partition.demo`` (what the console script runs), with progress bars."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["MPLBACKEND"] = "Agg"
    out = tmp_path / "output"
    proc = subprocess.run(
        [sys.executable, "-m", "pymc_partition.demo", "--draws", "300", "--chains", "1", "--out", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_printed(proc.stdout)
    _check_outputs(out, chains=1, draws=300)
