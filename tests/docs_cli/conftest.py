"""The documentation's code runs with PyMC's graphs in ``FAST_COMPILE`` (see ``tests/conftest.py``).

The docstring examples, the gallery's set-up cell and the demo check what the code computes and
prints, not PyTensor's backend; the README's example, the user's first path, runs in the default
mode (marked ``default_backend``), and the notebook and the demo's subprocess run as a user
starts them.
"""

import pytest


@pytest.fixture(autouse=True)
def _pytensor_mode(pytensor_fast_compile):
    yield
