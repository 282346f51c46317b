"""Shared fixtures: the Arabidopsis CSV, never copied into the repository.

Found by ``pymc_partition.datasets.arabidopsis_path`` like everywhere else: the environment
variable ``PMP_ARABIDOPSIS_CSV`` (a file or its folder), else
``../shared/data/arabidopsis_messerli2007.csv`` beside the clone. Tests that need it are skipped
when it is missing; a ``PMP_ARABIDOPSIS_CSV`` naming a missing file is an error, not a skip.

PyTensor's backend, compiled only where a test is about it: in PyTensor's default mode each
distinct graph PyMC compiles (``model.compile_logp()``, the initial point, NUTS or Metropolis on
the other variables) costs a C compilation with gcc on PyMC 5 (seconds each from an empty compile
folder, as on a clean machine) or a numba compilation on PyMC 6. A test folder whose tests check
what the code computes opts in to ``FAST_COMPILE`` (the Python linker: nothing compiled) with an
autouse fixture in its ``conftest.py`` that requests ``pytensor_fast_compile``; the package's
own kernels keep their explicit modes. Tests marked ``default_backend`` keep PyTensor's default
mode: NUTS runs of thousands of draws (their gradients run faster compiled than the compilation
costs), the warnings of PyMC's default compilation path, the numba random draws, and the user's
main path once per stack (the README's example, ``pm.sample`` checked against the exact log
posterior).

One BLAS thread. The tests multiply small matrices (the bootstrap's replicate weights by the tour
types, PyTensor's gemms): a second BLAS thread gains nothing there and, when the cores are busy (as
with both stacks' suites side by side in ``.ci/run``), spins for its share of work: a quarter of the
CPU of the Hotelling-RS test files went there. Set before the next library loads (the environment,
inherited by the tests' subprocesses too) and for those loaded already (threadpoolctl, a PyMC
dependency). Numba's threads are left alone: tests compare its parallel kernels on one and more.
"""

import os

import pytest
from threadpoolctl import threadpool_limits

if "OPENBLAS_NUM_THREADS" not in os.environ:  # unless asked otherwise
    for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
    threadpool_limits(1, user_api="blas")

from pymc_partition.datasets import ARABIDOPSIS_ENV
from pymc_partition.datasets import arabidopsis_path as _resolve


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "default_backend: run in PyTensor's default mode (C on PyMC 5, numba on PyMC 6), not FAST_COMPILE",
    )


@pytest.fixture
def pytensor_fast_compile(request):
    """PyTensor in ``FAST_COMPILE`` for the test, unless it is marked ``default_backend``."""
    if request.node.get_closest_marker("default_backend"):
        yield
        return
    import pytensor

    with pytensor.config.change_flags(mode="FAST_COMPILE"):
        yield


@pytest.fixture(scope="session")
def arabidopsis_path():
    path = _resolve()  # raises FileNotFoundError if PMP_ARABIDOPSIS_CSV names a missing file
    if path is None:
        pytest.skip(
            f"Arabidopsis CSV not found (set {ARABIDOPSIS_ENV}=/path/to/arabidopsis_messerli2007.csv; "
            "export bclust's `gaelle` data set from R, see pymc_partition.datasets.load_arabidopsis)."
        )
    return path


@pytest.fixture(scope="session")
def arabidopsis(arabidopsis_path):
    from pymc_partition.datasets import load_arabidopsis

    return load_arabidopsis(arabidopsis_path)


def _foreign_modules():
    """Modules of the two packages loaded from another tree than this checkout's.

    An installed copy of the packages (e.g. an editable install of another checkout) still
    serves module paths that this tree no longer has, so a stale import would test that copy.
    """
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = []
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in ("arviz_regen", "pymc_partition") and getattr(module, "__file__", None):
            if root not in Path(module.__file__).resolve().parents:
                out.append(f"{name} from {module.__file__}")
    return out


@pytest.fixture(scope="session", autouse=True)
def _modules_come_from_this_tree():
    yield
    assert not _foreign_modules(), "imported from another tree:\n" + "\n".join(_foreign_modules())
