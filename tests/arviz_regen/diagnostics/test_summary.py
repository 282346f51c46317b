"""regen_summary printed as a user prints it: every column, and the verdict line that lives in attrs."""

import warnings

import pandas as pd
import pytest

import arviz_regen
from arviz_regen.testing import BlockModel, block_chain


@pytest.fixture(scope="module")
def table():
    idata = block_chain(BlockModel(40), 4, 300, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # too short to decide: the verdict says so
        return arviz_regen.regen_summary(idata, n_permutations=49)


def test_printed_table_ends_with_the_verdict(table):
    verdict = table.attrs["verdict"]
    assert verdict.startswith("verdict: ")
    with pd.option_context("display.width", 80, "display.max_columns", 20):  # a script's defaults
        printed = str(table)
    assert printed.rstrip().endswith(verdict)
    assert repr(table) == printed


def test_printed_table_shows_every_column(table):
    with pd.option_context("display.width", 80, "display.max_columns", 5):
        printed = str(table)
    assert "..." not in printed.replace(table.attrs["verdict"], "")
    for column in table.columns:
        assert column in printed


def test_notebook_view_shows_the_verdict(table):
    assert "verdict: " in table._repr_html_()


def test_derived_tables_are_plain_dataframes(table):
    assert type(table.loc[["n_clusters"]]) is pd.DataFrame
    assert type(table.round(2)) is pd.DataFrame
    assert isinstance(table, pd.DataFrame)
