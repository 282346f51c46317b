"""The conditional-check notebook: the committed ``.ipynb`` is an executed run of its jupytext
source (same cells), without errors, and shows what it claims: exact Gibbs passes, the sampler
of a wrong posterior fails on the conditional check while R-hat stays at most 1.01."""

import json
import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
jupytext = pytest.importorskip("jupytext")

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "notebooks" / "conditional_check.py"
NOTEBOOK = REPO / "notebooks" / "conditional_check.ipynb"


def test_committed_notebook_is_a_run_of_the_source():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    source = jupytext.read(SOURCE)
    assert [(c.cell_type, c.source) for c in nb.cells] == [(c.cell_type, c.source) for c in source.cells]
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code), "commit the notebook executed"
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = json.dumps(outputs)
    assert "exact Gibbs" in text and "verdict: PASS" in text
    assert "verdict: FAIL" in text and "conditional_check" in text
    r_hats = [float(x) for x in re.findall(r"\s(1\.0\d\d)\s", text)]
    assert r_hats and max(r_hats) <= 1.01
    assert NOTEBOOK.stat().st_size < 500_000
