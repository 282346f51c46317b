"""Exact prior draws at scale: the Gibbs-type sequential sampler against exact pmfs."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import stats as sps
from test_priors import ALPHA, PRIORS, all_partitions

import pymc_partition as pmp
from pymc_partition.prior_draws import gibbs_type_coefficients
from pymc_partition.priors import PartitionPrior, log_stirling_weighted
from pymc_partition.state import is_canonical, state_keys


@pytest.mark.parametrize(
    "name, a, b",
    [("umd", 1, 1), ("dp_small", 0, 1), ("py", -0.3, 1), ("uniform", 1, 0), ("mfm_poisson", 0.7, 1)],
)
def test_gibbs_type_coefficients(name, a, b):
    got = gibbs_type_coefficients(PRIORS[name].tables(12)[1])
    assert got == pytest.approx((a, b), abs=1e-9)


class _SquareSizes(PartitionPrior):
    """h(n) = n^2: not of Gibbs type (h(n+1)/h(n) is not linear in n)."""

    def _unnormalized_tables(self, n_items):
        n = np.arange(n_items + 1, dtype=float)
        return np.zeros(n_items + 1), 2 * np.log(np.maximum(n, 1))


@pytest.mark.default_backend
def test_non_gibbs_prior_uses_the_generic_sampler_and_is_exact():
    prior = _SquareSizes()
    assert gibbs_type_coefficients(prior.tables(6)[1]) is None
    n, draws = 4, 4000
    z = pm.draw(pmp.Partition.dist(n_items=n, prior=prior), draws=draws, random_seed=9)
    states = all_partitions(n)
    index = {k: i for i, k in enumerate(state_keys(states, assume_canonical=True).tolist())}
    counts = np.bincount([index[k] for k in state_keys(z).tolist()], minlength=len(states))
    expected = draws * np.exp(prior.logp(states))
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert sps.chi2.sf(chi2, len(states) - 1) > ALPHA


@pytest.mark.default_backend
@pytest.mark.parametrize(
    "prior, seed",
    [
        (pmp.DirichletProcess(2.0), 1),
        (pmp.MixtureOfFiniteMixtures("poisson", 1.0, k_param=3.0), 2),
        (pmp.PitmanYor(0.5, 0.4), 3),
        (pmp.UniformMultinomialDirichlet(), 4),
    ],  # fmt: skip
)
def test_number_of_clusters_at_300_items(prior, seed):
    """Draws at 300 items (all blocks of the checkpointed table used): the number of clusters
    follows its exact pmf, log_g[C] + log S_h(N, C) (Pearson chi-square, pooled tail bins)."""
    n, draws = 300, 3000
    z = pm.draw(pmp.Partition.dist(n_items=n, prior=prior), draws=draws, random_seed=seed)
    assert z.shape == (draws, n) and is_canonical(z).all()
    log_g, log_h = prior.tables(n)
    pmf = np.exp(log_g[1:] + log_stirling_weighted(log_h, n)[1:])
    assert pmf.sum() == pytest.approx(1.0, abs=1e-9)
    counts = np.bincount(z.max(axis=1), minlength=n)
    expected = draws * pmf
    order = np.argsort(expected)[::-1]
    big = order[expected[order] >= 5]
    obs = np.append(counts[big], draws - counts[big].sum())
    exp = np.append(expected[big], draws - expected[big].sum())
    keep = exp > 1e-9
    chi2 = ((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum()
    assert sps.chi2.sf(chi2, keep.sum() - 1) > ALPHA


# ---------------------------------------------------------------- PyTensor's numba backend
# The same op compiled for numba (the default on PyMC 6; mode="NUMBA" on PyMC 5) and for the
# Python VM, whose perform is ``PartitionRV.rng_fn``: the tables are inputs, so one compiled
# function serves every prior of a size.


def _partition_draws(mode, n_items):
    """``draw(log_g, log_h, n_draws, seed)``: draws of ``partition_rv`` compiled in ``mode``."""
    import pytensor.tensor as pt
    from pymc.pytensorf import compile as compile_pymc

    from pymc_partition.distribution import partition_rv

    log_g, log_h = (pt.vector(name, shape=(n_items + 1,)) for name in ("log_g", "log_h"))
    z = partition_rv(log_g, log_h)
    fns = {}

    def draw(g, h, n_draws, seed):
        if seed not in fns:
            fns[seed] = compile_pymc([log_g, log_h], z, random_seed=seed, mode=mode)
        return np.stack([fns[seed](g, h) for _ in range(n_draws)])

    return draw


NUMBA_PRIORS = {**{k: PRIORS[k] for k in ("umd", "dp_small", "py", "uniform", "mfm_poisson")},
                "square_sizes": _SquareSizes()}  # fmt: skip
_numba_draw_4 = _partition_draws("NUMBA", 4)  # compiled on first use, once for all priors


@pytest.mark.parametrize("n_items", [6, 80])
def test_numba_backend_draws_equal_rng_fn(n_items):
    """Compiled for numba, the partition is drawn by the kernel ``rng_fn`` calls, from the same
    generator state: the same partitions as the Python VM, draw for draw, for every prior."""
    numba_draw = _partition_draws("NUMBA", n_items)
    python_draw = _partition_draws("FAST_COMPILE", n_items)
    priors = NUMBA_PRIORS if n_items < 20 else {k: v for k, v in NUMBA_PRIORS.items() if k != "square_sizes"}
    for seed, prior in enumerate(priors.values()):
        g, h = prior.tables(n_items)
        got = numba_draw(g, h, 30, seed)
        assert is_canonical(got).all()
        np.testing.assert_array_equal(got, python_draw(g, h, 30, seed))


@pytest.mark.parametrize("name", list(NUMBA_PRIORS))
def test_numba_backend_draws_match_pmf(name):
    """Numba path, 4 items: the partitions' frequencies against the exact prior (chi-square)."""
    n, draws = 4, 3000
    prior = NUMBA_PRIORS[name]
    z = _numba_draw_4(*prior.tables(n), draws, 11)
    states = all_partitions(n)
    index = {k: i for i, k in enumerate(state_keys(states, assume_canonical=True).tolist())}
    counts = np.bincount([index[k] for k in state_keys(z).tolist()], minlength=len(states))
    expected = draws * np.exp(prior.logp(states))
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert sps.chi2.sf(chi2, len(states) - 1) > ALPHA, (counts, expected)


def test_numba_backend_number_of_clusters_at_300_items():
    """Numba path, 300 items (all blocks of the checkpointed table used): the number of clusters
    against its exact pmf (Pearson chi-square, pooled tail bins)."""
    n, draws = 300, 2000
    prior = pmp.MixtureOfFiniteMixtures("poisson", 1.0, k_param=3.0)
    log_g, log_h = prior.tables(n)
    z = _partition_draws("NUMBA", n)(log_g, log_h, draws, 5)
    pmf = np.exp(log_g[1:] + log_stirling_weighted(log_h, n)[1:])
    counts = np.bincount(z.max(axis=1), minlength=n)
    expected = draws * pmf
    big = expected >= 5
    obs = np.append(counts[big], draws - counts[big].sum())
    exp = np.append(expected[big], draws - expected[big].sum())
    chi2 = ((obs - exp) ** 2 / exp).sum()
    assert sps.chi2.sf(chi2, obs.size - 1) > ALPHA


def test_numba_backend_rejects_tables_outside_the_domain():
    g, h = pmp.DirichletProcess(1.0).tables(4)
    with pytest.raises(ValueError, match="outside their domain"):
        _numba_draw_4(np.full_like(g, np.nan), h, 1, 0)
