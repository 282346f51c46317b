"""check_data: rows are items, and data passed transposed are named as such (the user's path too)."""

import re

import numpy as np
import pymc as pm
import pytest

import pymc_partition as pmp
from pymc_partition.families.base import check_data


def test_transposed_data_are_named_and_the_transpose_suggested():
    x = np.zeros((2, 60))
    with pytest.raises(ValueError, match=re.escape("look transposed")) as err:
        check_data(x, n_items=60)
    assert "rows must be items" in str(err.value) and "`observed.T`, of shape (60, 2)" in str(err.value)
    assert "item_index" not in str(err.value)  # the user never passed it


def test_rows_other_than_items_without_item_index():
    for rows in (50, 70):
        with pytest.raises(ValueError, match=rf"has {rows} rows but n_items=60\. Without `item_index` every row"):
            check_data(np.zeros((rows, 3)), n_items=60)


def test_rows_that_are_items_pass():
    values, item_index, n_items = check_data(np.zeros((60, 2)), n_items=60)
    assert values.shape == (60, 2) and n_items == 60 and item_index.tolist() == list(range(60))


def test_model_with_transposed_data_says_so():
    x = np.random.default_rng(0).normal(size=(2, 60))
    with pm.Model(), pytest.raises(ValueError, match=r"look transposed.*observed\.T"):
        z = pmp.Partition("z", n_items=60, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, observed=x, family=pmp.NormalInverseGamma())
