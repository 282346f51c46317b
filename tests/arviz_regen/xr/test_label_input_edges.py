"""Input edges of the draws (issue 26, case 9): no draws or no chains are a clear error, not an
IndexError from inside xarray or numpy's "need at least one array to concatenate"; float labels
beyond the int64 range read as the partitions they are, not as negative labels."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import arviz_regen
from arviz_regen.xr.draws import load_partition


def _posterior(labels):
    labels = np.asarray(labels)
    chain, draw = labels.shape[:2]
    return xr.Dataset({"z": (("chain", "draw", "z_dim"), labels)},
                      coords={"chain": np.arange(chain), "draw": np.arange(draw)})  # fmt: skip


@pytest.mark.parametrize("shape, what", [((2, 0, 4), "no draw"), ((0, 5, 4), "no chain")])
def test_no_draws_or_no_chains_are_refused_clearly(shape, what):
    post = _posterior(np.zeros(shape, dtype=np.int64))
    with pytest.raises(ValueError, match=rf"has {what}.*no draws to diagnose"):
        load_partition(post)
    with pytest.raises(ValueError, match=rf"has {what}.*no draws to diagnose"):
        arviz_regen.regen_summary(post)


def test_float_labels_beyond_int64_are_the_partitions_they_hold():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=(2, 50, 6))
    huge = np.where(labels == 0, 1e19, np.where(labels == 1, 3e19, 7e25))
    a, b = load_partition(_posterior(labels)), load_partition(_posterior(huge))
    np.testing.assert_array_equal(a.index, b.index)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert b.labels.min() >= 0


def _with_logp(labels, logp, draw=None, chain=None):
    post = _posterior(labels)
    c, d = logp.shape
    stats = xr.Dataset({"partition_logp": (("chain", "draw"), logp)},
                       coords={"chain": np.arange(c) if chain is None else chain,
                               "draw": np.arange(d) if draw is None else draw})  # fmt: skip
    return xr.DataTree.from_dict({"posterior": post, "sample_stats": stats})


def _draws():
    rng = np.random.default_rng(1)
    labels = np.stack([np.stack([np.r_[0, rng.integers(0, 2, 4)] for _ in range(40)]) for _ in range(2)])
    from arviz_regen.base.state import canonicalize

    labels = canonicalize(labels)
    logp = -labels.max(axis=-1).astype(float) - 0.5 * labels.sum(axis=-1)  # a function of the state
    return labels, logp


def test_sample_stats_are_paired_with_the_posterior_by_coordinates():
    """Issue 26, case 5: reversed draws or swapped chains in sample_stats were paired by position."""
    labels, logp = _draws()
    a = load_partition(_with_logp(labels, logp))
    b = load_partition(_with_logp(labels, logp[::-1, ::-1].copy(), draw=np.arange(40)[::-1], chain=[1, 0]))
    np.testing.assert_array_equal(a.logp, b.logp)
    with pytest.raises(ValueError, match="different 'draw' coordinates"):
        load_partition(_with_logp(labels, logp, draw=np.arange(40) + 500))


def test_repeated_coordinates_of_a_damaged_store_are_refused():
    """Issue 26, case 3: a store whose chunks are missing reads fill values (chain = [0, 0],
    every draw 0) and got a PASS."""
    labels, logp = _draws()
    tree = _with_logp(labels, logp)
    damaged = tree["posterior"].to_dataset().assign_coords(chain=[0, 0])
    with pytest.raises(ValueError, match="repeated 'chain' coordinates.*damaged"):
        load_partition(damaged)


def test_summary_refuses_cluster_counts_that_contradict_the_labels():
    """Issue 26, case 3: sample_stats['n_clusters'] of 2.5 on average against one cluster in the
    labels (fill values of a damaged store) passed; reversed draws with their coordinates are the
    same draws."""
    labels, logp = _draws()
    counts = (labels.max(axis=-1) + 1).astype(float)

    def tree(n_clusters, draw=None):
        t = _with_logp(labels, logp)
        stats = t["sample_stats"].to_dataset()
        stats["n_clusters"] = (("chain", "draw"), n_clusters)
        if draw is not None:
            stats = stats.isel(draw=draw)
        return xr.DataTree.from_dict({"posterior": t["posterior"].to_dataset(), "sample_stats": stats})

    arviz_regen.regen_summary(tree(counts, draw=np.arange(40)[::-1]), n_bootstrap=19, n_permutations=19)
    with pytest.raises(ValueError, match=r"n_clusters'\] disagrees with the clusters of the posterior labels"):
        arviz_regen.regen_summary(tree(counts + 1.5), n_bootstrap=19, n_permutations=19)
