"""The Arabidopsis notebook: its jupytext source runs top to bottom (few draws; real data if
``pymc_partition.datasets.arabidopsis_path`` finds them, else simulated), and the committed
``.ipynb`` is a full real-data run of that same source."""

import json
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
jupytext = pytest.importorskip("jupytext")

from pymc_partition.datasets import ARABIDOPSIS_ENV, arabidopsis_path  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "notebooks" / "arabidopsis_convergence.py"
NOTEBOOK = REPO / "notebooks" / "arabidopsis_convergence.ipynb"
DRAWS = 2000


def _errors(nb):
    return [
        "".join(o.get("traceback", [])) or o.get("ename", "")
        for c in nb.cells if c.cell_type == "code"
        for o in c.get("outputs", []) if o.get("output_type") == "error"
    ]  # fmt: skip


def _stderr(nb):
    return "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code"
        for o in c.get("outputs", []) if o.get("output_type") == "stream" and o.get("name") == "stderr"
    )  # fmt: skip


def test_notebook_source_runs(tmp_path, monkeypatch):
    """Execute the source with PMP_NOTEBOOK_DRAWS=2000 (real data if found, else simulated)."""
    csv = arabidopsis_path()  # what the notebook's own call finds, given the same environment
    nb = jupytext.read(SOURCE)
    monkeypatch.setenv("PMP_NOTEBOOK_DRAWS", str(DRAWS))
    monkeypatch.setenv(ARABIDOPSIS_ENV, str(csv) if csv is not None else "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    assert not _errors(nb)
    outputs = [c.get("outputs", []) for c in nb.cells]
    text = json.dumps(outputs)
    assert f"DRAWS={DRAWS:,}" in text
    assert "image/png" in text  # the figures were drawn
    assert ("Arabidopsis data from" in text) == (csv is not None)
    assert ("SIMULATED" in text) == (csv is None)
    assert "BLAS" not in _stderr(nb)  # the numba backend needs no C BLAS: no such warning
    # every table reads as plain text too (no "<pandas.io.formats.style.Styler ...>")
    plain = [o["data"]["text/plain"] for out in outputs for o in out if "text/plain" in o.get("data", {})]
    assert plain and not any("Styler" in p for p in plain)
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    closing = "".join(o["data"]["text/plain"] for o in last.outputs if "data" in o)
    assert "this run" in closing and "MAP probability" in closing  # the closing comparison table


def test_committed_notebook_is_a_full_run_of_the_source():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "commit the notebook executed"
    assert not _errors(nb)
    text = json.dumps([c.outputs for c in code])
    assert "DRAWS=50,000" in text and "Arabidopsis data from" in text
    assert "pymc 6." in text and "arviz 1." in text, "commit it executed on PyMC 6 / ArviZ 1.x"
    assert NOTEBOOK.stat().st_size < 2_000_000
    # paired: the committed notebook's cells are the source's (rebuild with _build_notebook.py)
    source = jupytext.read(SOURCE)
    assert [(c.cell_type, c.source) for c in nb.cells] == [(c.cell_type, c.source) for c in source.cells]
