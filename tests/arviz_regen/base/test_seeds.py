"""``random_seed`` everywhere; the old name ``seed`` still works for a release, with a warning."""

from __future__ import annotations

import numpy as np
import pytest

import arviz_regen
from arviz_regen.base.seeds import random_seed_argument, seed_attribute


def test_the_argument_and_its_old_name():
    assert random_seed_argument(3, None) == 3
    assert random_seed_argument(None, None, default=0) == 0
    with pytest.warns(DeprecationWarning, match="`seed` is deprecated"):
        assert random_seed_argument(None, 5) == 5
    with pytest.raises(TypeError, match="not both"):
        random_seed_argument(1, 2)


def test_seed_attribute_fits_netcdf():
    """Integers of 64 bits as they are, larger ones (numpy's advised 128-bit seeds) as their digits."""
    assert seed_attribute(7) == 7 and type(seed_attribute(np.int64(7))) is int
    assert seed_attribute(2**63 - 1) == 2**63 - 1 and seed_attribute(2**63) == str(2**63)
    assert int(seed_attribute(2**127 + 5)) == 2**127 + 5
    assert seed_attribute(None) is None and seed_attribute(np.random.default_rng(1), missing=-1) == -1
    assert seed_attribute(True) is None


@pytest.fixture(scope="module")
def draws():
    rng = np.random.default_rng(11)
    return rng.integers(0, 3, size=(2, 60, 9))


def test_point_estimate_old_name_gives_the_same_draws(draws):
    new = arviz_regen.point_estimate(draws, random_seed=7, n_runs=3)
    with pytest.warns(DeprecationWarning, match="`seed` is deprecated"):
        old = arviz_regen.point_estimate(draws, seed=7, n_runs=3)
    np.testing.assert_array_equal(new["labels"].values, old["labels"].values)
    assert new.attrs["seed"] == old.attrs["seed"] == 7


def test_consensus_partition_old_name_gives_the_same_result():
    rng = np.random.default_rng(2)
    x = rng.random((40, 40))
    rho = (x + x.T) / 2
    np.fill_diagonal(rho, 1.0)
    new = arviz_regen.consensus_partition(rho, method="salso", random_seed=4)
    with pytest.warns(DeprecationWarning):
        old = arviz_regen.consensus_partition(rho, method="salso", seed=4)
    np.testing.assert_array_equal(new.labels, old.labels)
    default = arviz_regen.consensus_partition(rho, method="salso")
    np.testing.assert_array_equal(
        default.labels, arviz_regen.consensus_partition(rho, method="salso", random_seed=0).labels
    )
