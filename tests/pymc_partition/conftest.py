"""PyTensor's backend for the pymc_partition tests: compiled only where a test is about it.

Most tests here check the partition steps, priors and families, whose numba kernels and
numba-linked graphs the package compiles with its own explicit modes. The graphs PyMC compiles on
the way (``model.compile_logp()``, the initial point, NUTS or Metropolis on the other variables)
are PyMC's and PyTensor's business, yet in PyTensor's default mode each distinct graph costs a C
compilation with gcc on PyMC 5 (seconds, from an empty compile folder as on a clean machine) or a
numba compilation on PyMC 6. Those tests run in ``FAST_COMPILE`` (the Python linker: nothing
compiled); the tests marked ``default_backend`` keep PyTensor's default mode: NUTS runs of
thousands of draws (their gradients run faster compiled than the compilation costs), the
warnings of PyMC's default compilation path, the numba random draws, and one run of the main
user path (``pm.sample`` and ``model.compile_logp()`` checked against the steps' exact log
posterior) on each stack.
"""

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "default_backend: run in PyTensor's default mode (C on PyMC 5, numba on PyMC 6), not FAST_COMPILE",
    )


@pytest.fixture(autouse=True)
def _pytensor_mode(request):
    if request.node.get_closest_marker("default_backend"):
        yield
        return
    import pytensor

    with pytensor.config.change_flags(mode="FAST_COMPILE"):
        yield
