"""PyMC's own graphs compile in ``FAST_COMPILE`` here (see ``tests/conftest.py``).

These tests check the partition steps, priors and families, whose numba kernels and
numba-linked graphs the package compiles with its own explicit modes; the graphs PyMC compiles on
the way are PyMC's and PyTensor's business. Mark a test ``default_backend`` when it is about
PyTensor's default backend or runs long NUTS chains.
"""

import pytest


@pytest.fixture(autouse=True)
def _pytensor_mode(pytensor_fast_compile):
    yield
