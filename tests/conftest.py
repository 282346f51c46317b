"""Shared fixtures: the Arabidopsis CSV, never copied into the repository.

Found by ``pymc_partition.datasets.arabidopsis_path`` like everywhere else: the environment
variable ``PMP_ARABIDOPSIS_CSV`` (a file or its folder), else
``../shared/data/arabidopsis_messerli2007.csv`` beside the clone. Tests that need it are skipped
when it is missing; a ``PMP_ARABIDOPSIS_CSV`` naming a missing file is an error, not a skip.
"""

import pytest

from pymc_partition.datasets import ARABIDOPSIS_ENV, arabidopsis_path as _resolve


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
