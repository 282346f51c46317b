"""The main job, ``pymc-partition-demo`` (the README's first command; pymc_partition.paper.cli):
simulated data, real data, subprocess, argument checking before any heavy import, no global
matplotlib or logging state left behind."""

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import arviz as az  # noqa: E402
import pytest  # noqa: E402

from pymc_partition.datasets import ARABIDOPSIS_ENV  # noqa: E402
from pymc_partition.paper.cli import main  # noqa: E402
from pymc_partition.paper.job import run  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
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
    assert (out / "comparison.csv").is_file() and (out / "prior_readings.csv").is_file()


def _check_printed(text):
    assert "Empirical Bayes" in text
    assert "Exact posterior over all B(14) = 190,899,322 partitions" in text
    assert "MAP probability" in text and "top-10 mass" in text
    for reading in (
        "MixtureOfFiniteMixtures",
        "UniformMultinomialDirichlet",
        "UniformClusterCount",
        "Dirichlet process",
    ):
        assert reading in text  # the exact posterior under each reading of the prior
    for label in ("Gibbs", "split-merge (badly mixing)"):
        assert f"Convergence table: {label}" in text
    # each table ends with its verdict line, saying which test decided (Hotelling-RS where the
    # states recur; the badly mixing sampler may have too few tours in a short run)
    assert text.count("   verdict: ") >= 2 and text.count("decided by ") >= 2
    assert "hotelling_rs[k=10]" in text and "r_hat" in text and "vi_ref0" in text
    assert "written to" in text


def test_demo_simulated(tmp_path, capsys, monkeypatch):
    import matplotlib.pyplot as plt

    monkeypatch.delenv(ARABIDOPSIS_ENV, raising=False)  # no --data, no variable: simulated data
    out = tmp_path / "output"
    backend, level, figures = matplotlib.get_backend(), logging.getLogger("pymc").level, plt.get_fignums()
    assert main(["--draws", "1000", "--chains", "2", "--out", str(out), "--no-progress"]) == 0
    # no global state changed: backend, PyMC's logger, pyplot's figures
    assert (matplotlib.get_backend(), logging.getLogger("pymc").level, plt.get_fignums()) == (backend, level, figures)
    text = capsys.readouterr().out
    assert "Sequential sampling" not in text
    assert "simulated from the paper's fitted model" in text
    _check_printed(text)
    # the EB fit is compared with the values the data were simulated from, not the paper's table
    eb_table = text.split("== Exact posterior")[0]
    assert "simulated from" in eb_table and "within 2 s.e." in eb_table
    assert "agree" not in eb_table and "paper:" not in text
    assert "paper (section 4.2)" not in text and "Against the paper" not in text  # nothing to compare
    _check_outputs(out, chains=2, draws=1000)
    assert not (out / "paper_comparison.csv").exists()
    # the same folder again: refused at once, the first run's files kept
    stamp = (out / "idata_gibbs.nc").stat().st_mtime_ns
    code, err = _exit_code(["--draws", "1000", "--chains", "2", "--out", str(out), "--no-progress"], capsys)
    assert code == 2 and "idata_gibbs.nc" in err and "--force" in err
    assert (out / "idata_gibbs.nc").stat().st_mtime_ns == stamp


def test_demo_real_data(tmp_path, capsys, arabidopsis_path):
    out = tmp_path / "output"
    argv = ["--data", str(arabidopsis_path), "--draws", "1000", "--chains", "2", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    _check_printed(text)
    assert "agree" in text.split("== Exact posterior")[0]  # real data: the paper's table
    # the exact posterior on the real data under the paper's prior (the text's MFM reading)
    assert "MAP probability 0.434, top-10 mass 0.823" in text
    assert "ColWT, sex3" in text
    # the headline numbers under each reading beside the paper's, and the closing comparison
    assert "paper (section 4.2)" in text and "0.430" in text and "0.800" in text
    closing = text.split("== Against the paper")[1]
    for reading in ("MixtureOfFiniteMixtures", "UniformMultinomialDirichlet"):
        assert f"MAP probability, {reading}" in closing or any(
            line.startswith("MAP probability") and reading in line for line in closing.splitlines()
        )
    assert "EB estimates (s.e.)" in closing and "yes" in closing
    _check_outputs(out, chains=2, draws=1000)
    assert (out / "paper_comparison.csv").is_file()


def _exit_code(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    return info.value.code, capsys.readouterr().err


def test_demo_missing_data_file(tmp_path, capsys):
    code, err = _exit_code(["--data", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o")], capsys)
    assert code == 2
    assert "not found" in err and "bclust" in err and ARABIDOPSIS_ENV in err
    assert not (tmp_path / "o").exists()  # nothing done


def test_demo_data_from_environment_variable(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(ARABIDOPSIS_ENV, str(tmp_path / "missing.csv"))
    code, err = _exit_code(["--out", str(tmp_path / "o")], capsys)
    assert code == 2 and f"{ARABIDOPSIS_ENV}=" in err and "missing.csv" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--chains", "-1"], "argument --chains: must be at least 1, got -1"),
        (["--cores", "0"], "argument --cores: must be at least 1, got 0"),
        (["--draws", "0"], "argument --draws: must be at least 100, got 0"),
        (["--draws", "1e3"], "argument --draws: expected an integer"),
        (["--seed", "-1"], "argument --seed: must be at least 0, got -1"),
        (["--dpi", "0"], "argument --dpi: must be between 10 and 1000, got 0"),
        (["--data", "x.csv", "--simulate"], "not allowed with argument"),
    ],
)
def test_demo_bad_arguments(argv, message, capsys):
    code, err = _exit_code(argv, capsys)
    assert code == 2 and message in err


def test_demo_bad_csv_and_output(tmp_path, capsys):
    # a CSV written by R with row.names = FALSE: the first column holds numbers
    bad = tmp_path / "norownames.csv"
    bad.write_text('"maltose.MX1","b"\n0.33,1\n-0.001,2\n6.2,3\n')
    code, err = _exit_code(["--data", str(bad)], capsys)
    assert code == 2 and "row names" in err and 'write.csv(gaelle, "arabidopsis_messerli2007.csv")' in err
    afile = tmp_path / "afile"
    afile.write_text("x")
    code, err = _exit_code(["--simulate", "--out", str(afile)], capsys)
    assert code == 2 and "not a folder" in err


def test_demo_refuses_to_replace_earlier_outputs_without_force(tmp_path, capsys, monkeypatch):
    """A folder holding the job's files is refused before any work (nothing replaced); --force
    replaces them, and a stale real-data comparison does not survive a simulated run."""
    out = tmp_path / "output"
    out.mkdir()
    (out / "idata_gibbs.nc").write_text("a user's earlier draws")
    (out / "figure2_convergence.png").write_text("an earlier figure")
    (out / "notes.txt").write_text("not ours")
    calls = []
    monkeypatch.setattr("pymc_partition.paper.job._run", lambda *args: calls.append(args))
    monkeypatch.delenv(ARABIDOPSIS_ENV, raising=False)
    code, err = _exit_code(["--out", str(out), "--no-progress"], capsys)
    assert code == 2 and "idata_gibbs.nc, figure2_convergence.png" in err and "--force" in err
    assert (out / "idata_gibbs.nc").read_text() == "a user's earlier draws" and not calls
    with pytest.raises(ValueError, match="already holds idata_gibbs.nc"):
        run(out=out)
    assert not calls
    assert main(["--out", str(out), "--no-progress", "--force"]) == 0 and len(calls) == 1
    assert main(["--out", str(tmp_path / "new"), "--no-progress"]) == 0 and len(calls) == 2
    # --force on simulated data: a comparison with the paper from an earlier real-data run goes
    (out / "paper_comparison.csv").write_text("stale")
    monkeypatch.undo()

    def simulate(seed):
        raise RuntimeError("stop before any heavy work")

    monkeypatch.setattr("pymc_partition.paper.workflow.simulate_data", simulate)
    with pytest.raises(RuntimeError, match="stop before"):
        run(out=out, overwrite=True)
    assert not (out / "paper_comparison.csv").exists() and (out / "notes.txt").exists()


@pytest.mark.parametrize(
    "kwargs, match",
    [({"chains": -1}, "chains"), ({"cores": 0}, "cores"), ({"draws": 50}, "draws"),
     ({"random_seed": -2}, "random_seed"), ({"chains": 2.0}, "integer"), ({"k": []}, "k")],
)  # fmt: skip
def test_run_checks_arguments_first(kwargs, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        run(out=tmp_path / "o", **kwargs)
    assert not (tmp_path / "o").exists()


_LIGHT_CHECK = """
import json, sys, time
t0 = time.perf_counter()
from pymc_partition.paper.cli import main
codes = []
for argv in (["--help"], ["--chains", "-1"], ["--cores", "0"], ["--data", "/nonexistent/x.csv"]):
    try:
        main(argv)
    except SystemExit as e:
        codes.append(e.code)
heavy = sorted(m for m in ("pymc", "pytensor", "arviz", "numba", "matplotlib", "scipy") if m in sys.modules)
print("RESULT " + json.dumps([codes, heavy, time.perf_counter() - t0]))
"""


def test_cli_help_and_errors_are_fast_and_import_nothing_heavy(tmp_path):
    """--help and argument errors: right exit codes, quickly, and PyMC etc. never imported."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop(ARABIDOPSIS_ENV, None)
    proc = subprocess.run([sys.executable, "-c", _LIGHT_CHECK], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")][-1]
    codes, heavy, _seconds = json.loads(line[len("RESULT ") :])
    assert codes == [0, 2, 2, 2]
    assert heavy == [], f"argument parsing imported {heavy}"
    # the console script itself (what a user types), when installed next to this interpreter
    script = shutil.which("pymc-partition-demo", path=os.path.dirname(sys.executable))
    if script:
        for argv, code in ((["--help"], 0), (["--chains", "-1"], 2)):
            proc = subprocess.run([script, *argv], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
            assert proc.returncode == code, proc.stderr[-2000:]


def test_demo_module_subprocess(tmp_path):
    """``python -m pymc_partition.demo`` (the console script's main), with progress bars; nothing
    left in the system temp directory (PyTensor's generated source goes to its compile folder)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["MPLBACKEND"] = "Agg"
    env.pop(ARABIDOPSIS_ENV, None)
    env["TMPDIR"] = str(tmp_path / "tmp")  # PyTensor's generated source must not land there
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "output"
    proc = subprocess.run(
        [sys.executable, "-m", "pymc_partition.demo", "--draws", "300", "--chains", "1", "--out", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_printed(proc.stdout)
    _check_outputs(out, chains=1, draws=300)
    assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == []
