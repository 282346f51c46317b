"""The Arabidopsis notebook runs top to bottom (few draws), and the committed copy is a full run."""

import json
import os
import shutil
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "arabidopsis_convergence.ipynb"
CSV = REPO.parent / "shared" / "data" / "arabidopsis_messerli2007.csv"
DRAWS = 2000


def _errors(nb):
    return [
        "".join(o.get("traceback", [])) or o.get("ename", "")
        for c in nb.cells if c.cell_type == "code"
        for o in c.get("outputs", []) if o.get("output_type") == "error"
    ]  # fmt: skip


def test_notebook_runs(tmp_path, monkeypatch):
    """Execute a temporary copy with PMP_NOTEBOOK_DRAWS=2000 (real data if present, else simulated)."""
    work = tmp_path / "notebooks"
    work.mkdir()
    copy = work / NOTEBOOK.name
    shutil.copy(NOTEBOOK, copy)
    nb = nbformat.read(copy, as_version=4)
    for cell in nb.cells:  # start from a clean notebook
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    monkeypatch.setenv("PMP_NOTEBOOK_DRAWS", str(DRAWS))
    # the CSV's default path is relative to the real notebooks folder: give the absolute one
    # (a missing file makes the notebook fall back to simulated data, as in CI)
    monkeypatch.setenv("PMP_ARABIDOPSIS_CSV", str(CSV))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(work)}}
    )
    client.execute()
    assert not _errors(nb)
    text = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert f"DRAWS={DRAWS:,}" in text
    assert "image/png" in text  # the figures were drawn
    assert ("Arabidopsis data from" in text) == CSV.is_file()
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    assert "this notebook" in json.dumps(last.outputs)  # the closing comparison table


def test_committed_notebook_is_a_full_run():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "commit the notebook executed"
    assert not _errors(nb)
    text = json.dumps([c.outputs for c in code])
    assert "DRAWS=50,000" in text and "Arabidopsis data from" in text
    assert "DISCUSSION_PLACEHOLDER" not in json.dumps([c.source for c in nb.cells])
    assert NOTEBOOK.stat().st_size < 2_000_000
