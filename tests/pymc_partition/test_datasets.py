"""Tests of pymc_partition.datasets: the Arabidopsis loader and the spike-and-slab simulator."""

import csv
from pathlib import Path

import numpy as np
import pytest

from pymc_partition import datasets
from pymc_partition.datasets import (
    ARABIDOPSIS_ENV,
    ClusteringData,
    arabidopsis_path,
    load_arabidopsis,
    simulate_spike_slab,
)
from pymc_partition.state import is_canonical


def _write(path, rows):
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return path


# ------------------------------------------------------------------------------- loader


def test_shapes_and_names(arabidopsis):
    d = arabidopsis
    assert isinstance(d, ClusteringData)
    assert d.values.shape == (55, 43) and d.values.dtype == np.float64
    assert d.item_index.shape == (55,) and d.item_index.dtype == np.int64
    assert d.n_items == 14 and len(d.item_names) == 14
    assert len(d.variable_names) == 43 and d.variable_names[0] == "maltose.MX1"
    assert len(d.row_names) == 55 and d.row_names[0] == "ColWT.1"
    assert d.true_labels is None
    assert np.all(np.isfinite(d.values))


def test_item_order_is_first_appearance(arabidopsis, arabidopsis_path):
    with open(arabidopsis_path, newline="") as fh:
        samples = [row[0] for row in list(csv.reader(fh))[1:]]
    expected = list(dict.fromkeys(s.rsplit(".", 1)[0] for s in samples))
    assert arabidopsis.item_names == expected
    assert arabidopsis.item_names[0] == "ColWT"
    assert set(arabidopsis.item_names) == {
        "ColWT",
        "d172",
        "d263",
        "isa2",
        "sex4",
        "dpe2",
        "mex1",
        "sex3",
        "pgm",
        "sex1",
        "WsWT",
        "tpt",
        "RLDWT",
        "ke103",
    }
    # first appearance order: the first row of item k comes after the first row of item k-1
    first_rows = [int(np.flatnonzero(arabidopsis.item_index == k)[0]) for k in range(14)]
    assert first_rows == sorted(first_rows)
    for row, name in zip(arabidopsis.item_index, arabidopsis.row_names):
        assert arabidopsis.item_names[row] == name.rsplit(".", 1)[0]


def test_replicates(arabidopsis):
    counts = dict(zip(arabidopsis.item_names, arabidopsis.replicate_counts))
    assert counts["ColWT"] == 3
    assert all(c == 4 for k, c in counts.items() if k != "ColWT")
    assert sum(counts.values()) == 55


def test_values_match_file(arabidopsis, arabidopsis_path):
    with open(arabidopsis_path, newline="") as fh:
        rows = list(csv.reader(fh))
    assert float(rows[1][1]) == arabidopsis.values[0, 0]
    assert float(rows[-1][-1]) == arabidopsis.values[-1, -1]


def test_directory_path(arabidopsis_path, arabidopsis):
    d = load_arabidopsis(arabidopsis_path.parent)
    np.testing.assert_array_equal(d.values, arabidopsis.values)


@pytest.fixture
def no_data_anywhere(tmp_path, monkeypatch):
    """Neither PMP_ARABIDOPSIS_CSV nor the file beside the clone."""
    monkeypatch.delenv(ARABIDOPSIS_ENV, raising=False)
    monkeypatch.setattr(datasets, "_checkout_default", lambda: tmp_path / "absent" / "a.csv")


@pytest.mark.parametrize("path", [None, "/nonexistent/dir/arabidopsis_messerli2007.csv"])
def test_missing_path_explains_source(path, no_data_anywhere):
    with pytest.raises(FileNotFoundError) as info:
        load_arabidopsis(path)
    msg = str(info.value)
    for word in ("bclust", "gaelle", "Messerli", "write.csv", "data(gaelle)", "55", "43", ARABIDOPSIS_ENV):
        assert word in msg
    if path is None:  # says where it looked
        assert "absent" in msg and f"{ARABIDOPSIS_ENV} unset" in msg


# ------------------------------------------------------------------------------- resolver


def _tiny_csv(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("sample,a\nx.1,1\nx.2,2\ny.1,3\n")
    return path


def test_resolver_order(tmp_path, monkeypatch):
    explicit = _tiny_csv(tmp_path / "explicit" / "e.csv")
    from_env = _tiny_csv(tmp_path / "env" / datasets.ARABIDOPSIS_FILENAME)
    default = _tiny_csv(tmp_path / "default" / "d.csv")
    monkeypatch.setattr(datasets, "_checkout_default", lambda: default)
    monkeypatch.delenv(ARABIDOPSIS_ENV, raising=False)
    assert arabidopsis_path() == default.resolve()
    assert arabidopsis_path(use_default=False) is None
    monkeypatch.setenv(ARABIDOPSIS_ENV, str(from_env.parent))  # a folder stands for its CSV
    assert arabidopsis_path() == from_env.resolve()
    assert arabidopsis_path(explicit) == explicit.resolve()
    assert load_arabidopsis().item_names == ["x", "y"]  # no path: the resolver's answer
    monkeypatch.setenv(ARABIDOPSIS_ENV, "")  # empty counts as unset
    assert arabidopsis_path() == default.resolve()


def test_resolver_errors(tmp_path, monkeypatch, no_data_anywhere):
    assert arabidopsis_path() is None
    with pytest.raises(FileNotFoundError, match="No Arabidopsis data found"):
        arabidopsis_path(required=True)
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        arabidopsis_path(tmp_path / "nope.csv")  # a path given is never replaced by nothing
    monkeypatch.setenv(ARABIDOPSIS_ENV, str(tmp_path / "gone.csv"))
    with pytest.raises(FileNotFoundError, match=f"{ARABIDOPSIS_ENV}=.*gone.csv"):
        arabidopsis_path()


def test_checkout_default_is_beside_the_clone():
    root = Path(datasets.__file__).resolve().parents[1]
    assert datasets._checkout_default() == root.parent / "shared" / "data" / "arabidopsis_messerli2007.csv"


def test_csv_without_row_names_is_rejected(tmp_path):
    # write.csv(gaelle, ..., row.names = FALSE): the first column is the first metabolite, whose
    # values used to be read as sample names ('0.33' -> item '0', '-0.001' -> item '-0', ...)
    path = tmp_path / "norownames.csv"
    path.write_text('"maltose.MX1","L.ascorbic"\n0.333,0.36\n-0.001,1.27\n6.02,0.5\n0.9,-1\n')
    with pytest.raises(ValueError) as info:
        load_arabidopsis(path)
    msg = str(info.value)
    assert "maltose.MX1" in msg and "'0.333'" in msg and "row names" in msg
    assert 'write.csv(gaelle, "arabidopsis_messerli2007.csv")' in msg
    # R's default row names of a data frame that lost them ("1", "2", ...) are numbers too
    path.write_text('"","a"\n"1",0.5\n"2",0.7\n')
    with pytest.raises(ValueError, match="row names"):
        load_arabidopsis(path)


def test_r_default_layout_and_dotted_names(tmp_path):
    # write.csv(gaelle, ...) gives an empty first header cell and quoted strings
    path = tmp_path / "g.csv"
    path.write_text('"","a","b"\n"x.y.1",1,2\n"z.1",3,4\n"x.y.2",5,6e-1\n')
    d = load_arabidopsis(path)
    assert d.item_names == ["x.y", "z"]
    np.testing.assert_array_equal(d.item_index, [0, 1, 0])
    np.testing.assert_allclose(d.values, [[1, 2], [3, 4], [5, 0.6]])
    assert d.variable_names == ["a", "b"]


@pytest.mark.parametrize(
    "bad_row, match",
    [
        (["s.2", "1.0", "abc"], r"line 3.*'b'.*non-numeric"),
        (["s.2", "NA", "1"], r"line 3.*'a'.*non-numeric"),
        (["s.2", "nan", "1"], r"line 3.*'a'.*missing or non-finite"),
        (["s.2", "", "1"], r"line 3.*'a'"),
        (["s.2", "1"], r"line 3.*2 cells"),
    ],
)
def test_bad_cells(tmp_path, bad_row, match):
    path = _write(tmp_path / "bad.csv", [["sample", "a", "b"], ["s.1", "1", "2"], bad_row])
    with pytest.raises(ValueError, match=match):
        load_arabidopsis(path)


def test_empty_file(tmp_path):
    path = _write(tmp_path / "empty.csv", [["sample", "a"]])
    with pytest.raises(ValueError, match="no data rows"):
        load_arabidopsis(path)


# ------------------------------------------------------------------------------- simulator


def test_simulate_defaults_shape_and_reproducible():
    a = simulate_spike_slab(random_seed=3)
    b = simulate_spike_slab(random_seed=3)
    c = simulate_spike_slab(random_seed=4)
    assert a.values.shape == (56, 43) and a.n_items == 14
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.true_labels, b.true_labels)
    assert not np.array_equal(a.values, c.values)
    assert a.true_labels.shape == (14,) and is_canonical(a.true_labels)
    assert a.true_labels.max() + 1 == round(np.sqrt(14))  # documented default
    # rows grouped by item, names parse back with the loader's convention
    assert a.row_names[:2] == ["item0.1", "item0.2"]
    assert [a.item_names[i] for i in a.item_index] == [n.rsplit(".", 1)[0] for n in a.row_names]


def test_simulate_options():
    d = simulate_spike_slab(n_items=5, n_vars=3, n_replicates=[1, 2, 3, 1, 2], labels=[7, 7, 2, 9, 2], random_seed=0)
    np.testing.assert_array_equal(d.true_labels, [0, 0, 1, 2, 1])
    np.testing.assert_array_equal(d.replicate_counts, [1, 2, 3, 1, 2])
    assert d.values.shape == (9, 3)
    for k in (1, 3, 6):
        e = simulate_spike_slab(n_items=6, n_vars=2, n_clusters=k, random_seed=k)
        assert e.true_labels.max() + 1 == k
    from pymc_partition.priors import UniformMultinomialDirichlet

    f = simulate_spike_slab(n_items=8, n_vars=2, prior=UniformMultinomialDirichlet(), random_seed=1)
    assert is_canonical(f.true_labels)


def test_simulate_moments():
    # p = 1: every cluster shifted; singletons: item-mean variance = sigma2/r + sigma2_eta + sigma2_theta
    d = simulate_spike_slab(
        n_items=400,
        n_vars=50,
        n_replicates=2,
        mu=1.0,
        sigma2=0.5,
        sigma2_eta=0.3,
        sigma2_theta=2.0,
        p=1.0,
        labels=np.arange(400),
        random_seed=0,
    )
    y = d.values.reshape(400, 2, 50)
    assert abs(y.mean() - 1.0) < 0.05
    within = 0.5 * ((y[:, 0] - y[:, 1]) ** 2).mean()
    assert abs(within - 0.5) < 0.03
    assert abs(y.mean(axis=1).var() - (0.25 + 0.3 + 2.0)) < 0.15


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(n_items=0), "n_items"),
        (dict(n_items=2.5), "n_items"),
        (dict(n_vars=0), "n_vars"),
        (dict(n_replicates=0), "n_replicates"),
        (dict(n_items=3, n_replicates=[1, 2]), "n_replicates"),
        (dict(sigma2=0.0), "sigma2"),
        (dict(sigma2_eta=-1.0), "sigma2_eta"),
        (dict(sigma2_theta=np.inf), "sigma2_theta"),
        (dict(mu="a"), "mu"),
        (dict(p=1.5), "`p`"),
        (dict(n_items=3, labels=[0, 1]), "labels"),
        (dict(n_items=3, n_clusters=4), "n_clusters"),
        (dict(n_clusters=2, labels=np.zeros(14, int)), "at most one"),
        (dict(prior="dp"), "prior"),
    ],
)
def test_simulate_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        simulate_spike_slab(**kwargs)
