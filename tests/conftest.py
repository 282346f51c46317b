"""Shared fixtures: the Arabidopsis CSV beside the repository (never copied into it)."""

from pathlib import Path

import pytest

ARABIDOPSIS_CSV = (
    Path(__file__).resolve().parents[1].parent / "shared" / "data" / "arabidopsis_messerli2007.csv"
)


@pytest.fixture(scope="session")
def arabidopsis_path():
    if not ARABIDOPSIS_CSV.is_file():
        pytest.skip(
            f"Arabidopsis CSV not found at {ARABIDOPSIS_CSV} (export bclust's `gaelle` data set "
            "from R; see pymc_partition.datasets.load_arabidopsis)."
        )
    return ARABIDOPSIS_CSV


@pytest.fixture(scope="session")
def arabidopsis(arabidopsis_path):
    from pymc_partition.datasets import load_arabidopsis

    return load_arabidopsis(arabidopsis_path)
