"""What a newcomer trips on is answered where they look: the errors they see are in the docs, verbatim.

ArviZ raises ``AttributeError: module 'arviz' has no attribute 'hotelling_rs'`` before any code of
this package runs (it has no plugin registry), so the answer can only be in the documentation and
in the registration that building a model does for the user. Both are checked in fresh
interpreters on whichever ArviZ generation is installed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
GETTING_STARTED = ROOT / "docs" / "getting_started.md"


def _run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT)


def test_the_missing_import_error_is_answered_in_the_docs_and_a_model_registers_the_names():
    # one fresh interpreter: the bare error first, then the names after building a model
    out = _run(
        """
        import arviz as az
        try:
            az.hotelling_rs
        except AttributeError as err:
            print(f"{type(err).__name__}: {err}")
        import pymc as pm, pymc_partition as pmp
        with pm.Model():
            pmp.Partition("z", n_items=4, prior=pmp.DirichletProcess(1.0))
        print(callable(az.hotelling_rs), callable(az.regen_summary))
        """
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    message = lines[0]
    assert message == "AttributeError: module 'arviz' has no attribute 'hotelling_rs'", message
    text = GETTING_STARTED.read_text()
    assert f"`{message}`" in text
    assert "import arviz_regen" in text.split(message, 1)[1][:800]  # the answer follows
    assert lines[-1] == "True True"  # what the docs promise: building a model registers them


def test_the_transposed_data_message_in_the_docs_is_the_one_raised():
    from pymc_partition.families.base import check_data

    with pytest.raises(ValueError) as err:
        check_data(np.zeros((2, 60)), n_items=60)
    quoted = "`observed` has shape (2, 60) but n_items=60: rows must be items"
    assert str(err.value).startswith(quoted)
    assert quoted in GETTING_STARTED.read_text()
