"""``notebooks/_build_notebook.py`` builds the notebook from its jupytext source, never replaces
the committed real-data notebook with a run on simulated data or with an unexecuted copy, and says
which data it used (kernel runs are faked here; tests/docs_cli/test_notebook.py runs the real thing)."""

import hashlib
import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("nbformat")
jupytext = pytest.importorskip("jupytext")

import nbformat  # noqa: E402
from nbformat.v4 import new_output  # noqa: E402

from pymc_partition import datasets  # noqa: E402
from pymc_partition.datasets import ARABIDOPSIS_ENV  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BUILDER = REPO / "notebooks" / "_build_notebook.py"
SOURCE = REPO / "notebooks" / "arabidopsis_convergence.py"


def _load_builder():
    spec = importlib.util.spec_from_file_location("_build_notebook_under_test", BUILDER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def builder(monkeypatch, tmp_path):
    mod = _load_builder()
    # the "committed" notebook is a scratch copy: the real one is never at risk here
    committed = tmp_path / "committed.ipynb"
    committed.write_text('{"committed": true}')
    monkeypatch.setattr(mod, "NOTEBOOK", committed)
    monkeypatch.setenv(ARABIDOPSIS_ENV, "")  # restored after the test (main sets it for the kernel)
    monkeypatch.setenv("PYTHONPATH", "")  # likewise (execute() points the kernel at this checkout)
    return mod


@pytest.fixture
def no_data(monkeypatch, tmp_path):
    monkeypatch.delenv(ARABIDOPSIS_ENV, raising=False)
    monkeypatch.setattr(datasets, "_checkout_default", lambda: tmp_path / "absent.csv")


def _fake_execute(printed):
    def execute(nb, cwd, timeout=3600):
        code = [c for c in nb.cells if c.cell_type == "code"]
        code[0].outputs = [new_output("stream", name="stdout", text=printed)]
        return nb

    return execute


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_build_reads_the_jupytext_source():
    builder = _load_builder()
    assert builder.SOURCE == SOURCE
    nb = builder.build()
    source = jupytext.read(SOURCE)
    assert [(c.cell_type, c.source) for c in nb.cells] == [(c.cell_type, c.source) for c in source.cells]
    assert nb.metadata["jupytext"]["formats"] == "ipynb,py:percent"  # paired in Jupyter
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    text = SOURCE.read_text()
    # the builder recognizes the data a run used from what the data cell prints
    assert builder.REAL_DATA_MARKER in text and builder.SIMULATED_MARKER in text
    assert "arabidopsis_path()" in text  # the one resolver, no hard-coded path
    assert "BLAS" not in text and "filterwarnings" not in text  # warnings are not hidden


def test_without_execute_never_writes_over_the_committed_notebook(builder, capsys, tmp_path):
    before = _digest(builder.NOTEBOOK)
    with pytest.raises(SystemExit) as info:
        builder.main([])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--execute" in err and "--out" in err
    assert _digest(builder.NOTEBOOK) == before
    other = tmp_path / "plain.ipynb"
    assert builder.main(["--out", str(other)]) == 0
    nb = nbformat.read(other, as_version=4)
    assert len(nb.cells) == len(jupytext.read(SOURCE).cells)


def test_refuses_simulated_over_committed(builder, no_data, monkeypatch, capsys):
    monkeypatch.setattr(builder, "execute", lambda *a, **k: pytest.fail("must refuse before running"))
    before = _digest(builder.NOTEBOOK)
    with pytest.raises(SystemExit) as info:
        builder.main(["--execute"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "refusing" in err and "SIMULATED" in err and "--allow-simulated" in err and ARABIDOPSIS_ENV in err
    assert _digest(builder.NOTEBOOK) == before


def test_allow_simulated_and_other_out_say_so(builder, no_data, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(builder, "execute", _fake_execute("NOTE: this run uses data SIMULATED from ..."))
    other = tmp_path / "elsewhere.ipynb"
    assert builder.main(["--execute", "--out", str(other)]) == 0
    assert "data used: SIMULATED" in capsys.readouterr().err and other.is_file()
    assert builder.main(["--execute", "--allow-simulated"]) == 0
    assert "data used: SIMULATED" in capsys.readouterr().err
    assert _digest(builder.NOTEBOOK) != hashlib.sha256(b'{"committed": true}').hexdigest()


def test_real_data_run_points_the_kernel_at_the_file(builder, monkeypatch, capsys, tmp_path):
    csv = tmp_path / "a.csv"
    csv.write_text("sample,a\nx.1,1\n")
    seen = {}

    def execute(nb, cwd, timeout=3600):
        import os

        seen["env"] = os.environ[ARABIDOPSIS_ENV]  # what the kernel inherits
        return _fake_execute(f"Arabidopsis data from {seen['env']}")(nb, cwd)

    monkeypatch.setattr(builder, "execute", execute)
    assert builder.main(["--execute", "--data", str(csv)]) == 0
    assert seen["env"] == str(csv.resolve())
    assert f"data used: {csv.resolve()}" in capsys.readouterr().err


def test_run_that_fell_back_to_simulated_is_not_written(builder, monkeypatch, capsys, tmp_path):
    csv = tmp_path / "a.csv"
    csv.write_text("sample,a\nx.1,1\n")
    monkeypatch.setattr(builder, "execute", _fake_execute("NOTE: ... SIMULATED ..."))
    before = _digest(builder.NOTEBOOK)
    with pytest.raises(SystemExit) as info:
        builder.main(["--execute", "--data", str(csv)])
    assert info.value.code == 2 and "left unchanged" in capsys.readouterr().err
    assert _digest(builder.NOTEBOOK) == before


def test_missing_data_path_is_an_error(builder, capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        builder.main(["--execute", "--data", str(tmp_path / "nope.csv")])
    assert info.value.code == 2 and "not found" in capsys.readouterr().err
