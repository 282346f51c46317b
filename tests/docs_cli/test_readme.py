"""The README's examples, run as written on whichever PyMC generation is installed.

The hierarchical example runs in ``test_hierarchical_exact.py``. Long runs are shortened by one
substitution (50,000 draws -> 1,000); everything else is the README's text. No warning about a
deprecated or migrated API may come from this project's own code.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

from arviz_regen.xr.containers import arviz_major, is_datatree, is_inference_data  # noqa: E402

README = Path(__file__).resolve().parents[2] / "README.md"
OUR_CODE = ("pymc_partition", "arviz_regen")


def _blocks():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    return [b for b in blocks if "hierarchical clustering model" not in b]


def _is_api_warning(w):
    name = type(w.message).__name__
    return issubclass(w.category, (DeprecationWarning, FutureWarning)) or "Migration" in name


def test_readme_examples_run_on_this_stack():
    blocks = _blocks()
    assert len(blocks) >= 3, "README examples not found"
    namespace = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for block in blocks:
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


def test_hotelling_rs_is_registered_on_this_arviz():
    import arviz as az

    import arviz_regen

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no migration warning from reaching our functions
        assert az.hotelling_rs is arviz_regen.hotelling_rs
        assert az.coclustering is arviz_regen.coclustering
        assert az.regen_summary is arviz_regen.regen_summary


