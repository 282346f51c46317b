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
