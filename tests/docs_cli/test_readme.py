"""The README, as a new user reads it, on whichever PyMC generation is installed.

Its example runs as written, alone (long runs shortened by one substitution, 50,000 draws ->
1,000), with no warning about a deprecated or migrated API from this project's own code; its two
set-up commands are the ones CI runs. The examples that moved to the documentation are executed
by its build (``docs/build.py``); the hierarchical one also by ``test_hierarchical_exact.py``.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from arviz_regen.xr.containers import arviz_major, is_datatree, is_inference_data  # noqa: E402

README = Path(__file__).resolve().parents[2] / "README.md"
OUR_CODE = ("pymc_partition", "arviz_regen")


def _blocks():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    return [b for b in blocks if "hierarchical clustering model" not in b]


def _is_api_warning(w):
    name = type(w.message).__name__
    return issubclass(w.category, (DeprecationWarning, FutureWarning)) or "Migration" in name


@pytest.mark.default_backend  # the user's first path, compiled as on their machine
def test_readme_examples_run_on_this_stack():
    blocks = _blocks()
    assert blocks, "README example not found"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for block in blocks:
            namespace = {}  # every example runs alone
            code = block.replace("50_000", "1_000")
            exec(compile(code, "README.md", "exec"), namespace)
    idata = namespace["idata"]
    # what this generation's users hold
    if arviz_major() >= 1:
        assert is_datatree(idata) and not is_inference_data(idata)
    else:
        assert is_inference_data(idata)
    est = namespace["est"]
    assert est.labels.shape == (namespace["data"].n_items,)
    assert np.isfinite(float(namespace["ball"].radius))
    assert np.isfinite(namespace["exact"].log_z)
    ours = [
        f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
        for w in caught
        if _is_api_warning(w) and any(f"/{pkg}/" in w.filename.replace("\\", "/") for pkg in OUR_CODE)
    ]
    assert not ours, "deprecation/migration warnings from our own code:\n" + "\n".join(ours)


MAIN_JOB = "python -m pip install -e . && pymc-partition-demo --out output"
TEST_COMMAND = 'python -m pip install -e ".[test]" && python -m pytest -q -n auto'


def test_readme_set_up_commands_are_the_ones_ci_runs():
    text = README.read_text()
    bash = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert [b.strip() for b in bash[:2]] == [MAIN_JOB, TEST_COMMAND]
    assert len(text.splitlines()) <= 220, "the README is a landing page: details go to docs/"
    ci = (README.parent / ".ci" / "run").read_text()
    assert TEST_COMMAND in ci, ".ci/run no longer runs the README's test command"


def test_readme_links_resolve():
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", text)
    assert len(targets) > 10
    missing = [t for t in targets if not (README.parent / t).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_hotelling_rs_is_registered_on_this_arviz():
    import arviz as az

    import arviz_regen

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no migration warning from reaching our functions
        assert az.hotelling_rs is arviz_regen.hotelling_rs
        assert az.coclustering is arviz_regen.coclustering
        assert az.regen_summary is arviz_regen.regen_summary
