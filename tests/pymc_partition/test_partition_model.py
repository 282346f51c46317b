"""The clustering model as a PyMC model: logp against brute force, input validation of
MarginalLikelihood, and the partition-state helpers."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

import pymc_partition as pmp
from pymc_partition.model_spec import partition_spec
from pymc_partition.state import (
    bell_number,
    canonicalize,
    cluster_sizes,
    is_canonical,
    keys_to_labels,
    n_clusters,
    state_keys,
)

HYPER = dict(mu=0.1, sigma2=0.4, sigma2_eta=0.3, sigma2_theta=2.5, p=0.3)


def all_partitions(n):
    rows = [[0]]
    for _ in range(n - 1):
        rows = [r + [c] for r in rows for c in range(max(r) + 2)]
    return np.array(rows, dtype=np.int64).reshape(-1, n)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(42)
    reps = [2, 3, 1, 2, 2]
    item_index = np.repeat(np.arange(5), reps)
    shift = np.array([-1.0, -1.0, 0.5, 1.0, 1.0])[item_index, None]
    values = shift + rng.normal(0, 0.6, (len(item_index), 3))
    return values, item_index


def spike_slab_brute(values, item_index, z, prior):
    """Log posterior by the multivariate normal mixture over all replicate rows of each cluster."""
    mu, s2, s2e, s2t, p = (HYPER[k] for k in ("mu", "sigma2", "sigma2_eta", "sigma2_theta", "p"))
    total = prior.logp(z)
    for c in range(z.max() + 1):
        rows = np.flatnonzero(np.isin(item_index, np.flatnonzero(z == c)))
        same_item = item_index[rows, None] == item_index[None, rows]
        cov0 = s2 * np.eye(len(rows)) + s2e * same_item
        cov1 = cov0 + s2t * np.ones((len(rows), len(rows)))
        for v in range(values.shape[1]):
            y = values[rows, v]
            total += np.logaddexp(
                np.log1p(-p) + multivariate_normal(np.full(len(rows), mu), cov0).logpdf(y),
                np.log(p) + multivariate_normal(np.full(len(rows), mu), cov1).logpdf(y),
            )
    return total


@pytest.mark.parametrize("prior", [pmp.UniformMultinomialDirichlet(), pmp.PitmanYor(alpha=0.5, d=0.25)])
def test_compile_logp_equals_spec_and_brute_force(data, prior):
    values, item_index = data
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=5, prior=prior)
        pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**HYPER),
                               observed=values, item_index=item_index)  # fmt: skip
    logp = model.compile_logp()
    spec = partition_spec(model)
    states = all_partitions(5)
    got = np.array([logp({"z": s}) for s in states])
    np.testing.assert_allclose(got, spec.log_posterior(states), rtol=1e-12, atol=1e-9)
    brute = np.array([spike_slab_brute(values, item_index, s, prior) for s in states])
    np.testing.assert_allclose(got, brute, rtol=1e-10, atol=1e-8)
    # off the support the model's logp is -inf
    assert logp({"z": np.array([1, 0, 0, 0, 0])}) == -np.inf


def test_compile_logp_other_family(data):
    values, item_index = data
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=5, prior=pmp.DirichletProcess(alpha=0.8))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.families.NormalInverseGamma(),
                               observed=values, item_index=item_index)  # fmt: skip
    logp = model.compile_logp()
    spec = partition_spec(model)
    states = all_partitions(5)
    got = np.array([logp({"z": s}) for s in states])
    np.testing.assert_allclose(got, spec.log_posterior(states), rtol=1e-12, atol=1e-9)
    assert np.isfinite(logsumexp(got))


# ----------------------------------------------------------------------------- bad input
def _build(values, item_index=None, n_items=5, partition="z", family="ok"):
    with pm.Model():
        z = pmp.Partition("z", n_items=n_items, prior=pmp.UniformPartition())
        x = pm.Normal("x", 0, 1)
        part = {"z": z, "x": x, "none": None}[partition]
        fam = pmp.SpikeSlabNormal(**HYPER) if family == "ok" else family
        pmp.MarginalLikelihood("y", partition=part, family=fam, observed=values, item_index=item_index)


def test_bad_item_index_length(data):
    values, item_index = data
    with pytest.raises(ValueError, match="item_index"):
        _build(values, item_index[:-1])


def test_items_outside_n_items(data):
    values, item_index = data
    bad = item_index.copy()
    bad[-1] = 5
    with pytest.raises(ValueError, match="item_index"):
        _build(values, bad)
    bad[-1] = -1
    with pytest.raises(ValueError, match="item_index"):
        _build(values, bad)


def test_empty_items(data):
    values, item_index = data
    bad = np.where(item_index == 2, 1, item_index)  # item 2 loses its only row
    with pytest.raises(ValueError, match=r"item\(s\) \[2\].*item_index"):
        _build(values, bad)


def test_non_integer_item_index(data):
    values, item_index = data
    with pytest.raises(TypeError, match="item_index"):
        _build(values, item_index.astype(float) + 0.5)


def test_nan_data(data):
    values, item_index = data
    bad = values.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="observed"):
        _build(bad, item_index)
    bad[3, 1] = np.inf
    with pytest.raises(ValueError, match="observed"):
        _build(bad, item_index)


@pytest.mark.parametrize("partition", ["x", "none"])
def test_partition_argument_must_be_partition(data, partition):
    values, item_index = data
    with pytest.raises(TypeError, match="partition"):
        _build(values, item_index, partition=partition)


@pytest.mark.parametrize("family", ["SpikeSlabNormal", None, pmp.UniformPartition()])
def test_family_argument_must_be_family(data, family):
    values, item_index = data
    with pytest.raises(TypeError, match="family"):
        _build(values, item_index, family=family)


def test_missing_observed():
    with pm.Model():
        z = pmp.Partition("z", n_items=3, prior=pmp.UniformPartition())
        with pytest.raises(TypeError, match="observed"):
            pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**HYPER))


def test_default_item_index_is_one_row_per_item():
    values = np.random.default_rng(0).normal(size=(4, 2))
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=4, prior=pmp.UniformPartition())
        pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**HYPER), observed=values)
    assert partition_spec(model).item_stats.shape == (4, 2 + 2)
    with pm.Model():
        z = pmp.Partition("z", n_items=5, prior=pmp.UniformPartition())
        with pytest.raises(ValueError, match="item"):
            pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**HYPER), observed=values)


# ----------------------------------------------------------------------------- state helpers
def test_canonicalize_and_is_canonical():
    np.testing.assert_array_equal(canonicalize([3, 3, 7, 1, 7]), [0, 0, 1, 2, 1])
    np.testing.assert_array_equal(canonicalize([[5, 5], [2, 9]]), [[0, 0], [0, 1]])
    np.testing.assert_array_equal(is_canonical([[0, 1, 0, 2], [0, 2, 1, 1], [1, 0, 0, 0]]),
                                  [True, False, False])  # fmt: skip
    assert n_clusters([0, 1, 0, 2]) == 3
    np.testing.assert_array_equal(cluster_sizes(np.array([0, 1, 0, 2])), [2, 1, 1])
    states = all_partitions(6)
    assert is_canonical(states).all()
    np.testing.assert_array_equal(canonicalize(states), states)
    with pytest.raises(TypeError):
        canonicalize([0.5, 1.0])
    with pytest.raises(ValueError):
        canonicalize(3)


@pytest.mark.parametrize("rows, n, k", [(1, 1, 1), (1, 9, 4), (300, 14, 6), (40, 200, 70), (5, 30, 3)])
def test_canonicalize_numpy_path_matches_kernel(rows, n, k):
    """Small calls are canonicalised in numpy (nothing to compile), large ones by the kernel:
    the two agree on arbitrary (negative, sparse, repeated) labels."""
    from arviz_regen.base.state import _canonicalize_rows, _canonicalize_rows_numpy

    raw = np.random.default_rng(rows * n + k).integers(-k, k, size=(rows, n)) * 1000
    want = _canonicalize_rows(raw)
    np.testing.assert_array_equal(_canonicalize_rows_numpy(raw), want)
    np.testing.assert_array_equal(canonicalize(raw), want)
    assert is_canonical(want).all()


@pytest.mark.parametrize("n, dtype_kind", [(14, "u"), (30, "V")])
def test_state_keys_round_trip_and_uniqueness(n, dtype_kind):
    rng = np.random.default_rng(n)
    raw = rng.integers(0, rng.integers(1, n + 1, size=(20000, 1)), size=(20000, n))
    labels = canonicalize(raw)
    keys = state_keys(raw)
    assert keys.dtype.kind == dtype_kind and keys.shape == (20000,)
    if dtype_kind == "u":
        assert keys.dtype == np.uint64
    np.testing.assert_array_equal(keys_to_labels(keys, n), labels)
    # relabelling the clusters does not change the key
    perm = rng.permutation(n)
    np.testing.assert_array_equal(state_keys(perm[labels]), keys)
    # one key per distinct partition
    assert len(np.unique(keys)) == len(np.unique(labels, axis=0))
    assert len(set(keys.tolist())) == len(np.unique(labels, axis=0))


def test_state_keys_all_partitions_distinct():
    states = all_partitions(8)
    keys = state_keys(states, assume_canonical=True)
    assert len(np.unique(keys)) == bell_number(8) == 4140
    np.testing.assert_array_equal(keys_to_labels(keys, 8), states)


def test_bell_numbers():
    assert [bell_number(n) for n in range(11)] == [1, 1, 2, 5, 15, 52, 203, 877, 4140, 21147, 115975]
    assert bell_number(14) == 190_899_322
    with pytest.raises(ValueError):
        bell_number(-1)
