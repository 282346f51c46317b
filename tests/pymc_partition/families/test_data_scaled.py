"""Data-scaled default hyperparameters of the Gaussian families (``from_data``, mclust's prior)."""

import numpy as np
import pytest
from scipy import stats

import pymc_partition as pmp
from pymc_partition.families.normal_inverse_gamma import NormalInverseGamma
from pymc_partition.families.normal_inverse_wishart import NormalInverseWishart

RNG = np.random.default_rng(11)
X = RNG.normal(size=(60, 3)) @ np.array([[2.0, 0.3, 0.0], [0.0, 1.0, -0.4], [0.0, 0.0, 0.5]]) + [1.0, -2.0, 5.0]


def _mclust_default_prior(data, g):
    """mclust 6.1 ``defaultPrior(data, G, "VVV")``, transcribed from R: ``colMeans``,
    ``dof = p + 2``, ``scale = (1/G)^(2/p) * var(data)`` (``var`` of a matrix: covariance with
    ``n - 1``), ``shrinkage = 0.01``."""
    n, p = data.shape
    centred = data - data.sum(0) / n
    return data.sum(0) / n, p + 2, (1.0 / g) ** (2.0 / p) * (centred.T @ centred) / (n - 1), 0.01


@pytest.mark.parametrize("g", [1, 3, 7.5])
def test_niw_defaults_are_mclusts(g):
    mean, dof, scale, shrinkage = _mclust_default_prior(X, g)
    fam = NormalInverseWishart.from_data(X, n_clusters=g)
    np.testing.assert_allclose(fam.mu0, mean, rtol=1e-13)
    np.testing.assert_allclose(fam.psi0, scale, rtol=1e-12)
    assert (fam.nu0, fam.kappa0) == (dof, shrinkage)


@pytest.mark.parametrize("nu0", [None, 5.5, 40.0])
def test_prior_mean_covariance_is_the_data_share(nu0):
    """Whatever ``nu0``, the prior mean of a cluster's covariance (scipy's inverse-Wishart mean,
    an independent reading of ``(nu0, psi0)``) is ``scale * cov(data) / G^(2/V)``."""
    g, scale = 4, 2.5
    fam = NormalInverseWishart.from_data(X, n_clusters=g, nu0=nu0, scale=scale)
    mean_sigma = stats.invwishart(df=fam.nu0, scale=fam.psi0).mean()
    np.testing.assert_allclose(mean_sigma, scale * np.cov(X, rowvar=False) / g ** (2 / 3), rtol=1e-12)
    nig = NormalInverseGamma.from_data(X, n_clusters=g, alpha0=1.5 if nu0 is None else nu0 / 2, scale=scale)
    mean_var = stats.invgamma(a=nig.alpha0, scale=nig.beta0).mean()
    np.testing.assert_allclose(mean_var, scale * X.var(0, ddof=1) / g ** (2 / 3), rtol=1e-12)
    np.testing.assert_allclose(nig.mu0, X.mean(0), rtol=1e-13)


def test_one_variable_nig_is_niw_and_mclusts_univariate_prior():
    """With one variable both give mclust's univariate prior (dof 3, scale var/G^2): NIW(3, s^2/G^2)
    and NIG(3/2, s^2/(2 G^2)), the same marginal likelihood for every cluster."""
    y = X[:, 0]
    niw = NormalInverseWishart.from_data(y[:, None], n_clusters=3)
    nig = NormalInverseGamma.from_data(y, n_clusters=3)
    assert niw.nu0 == 3.0 and nig.alpha0 == 1.5
    np.testing.assert_allclose(niw.psi0, [[y.var(ddof=1) / 9]], rtol=1e-13)
    np.testing.assert_allclose(nig.beta0, [y.var(ddof=1) / 18], rtol=1e-13)
    stats_ = nig.item_stats(y)
    clusters = np.stack([stats_[:k].sum(0) for k in (1, 2, 7, 60)])
    np.testing.assert_allclose(niw.log_marginal_numpy(clusters), nig.log_marginal_numpy(clusters), rtol=1e-10)


def _log_marginals(fam, values, clusters):
    stats_ = fam.item_stats(values)
    return fam.log_marginal_numpy(np.stack([stats_[c].sum(0) for c in clusters]))


def test_partition_posterior_does_not_depend_on_the_units():
    """Data-scaled hyperparameters follow an affine change of the data (``x A + b``; diagonal ``A``
    for the per-variable NIG): every cluster's log marginal changes by ``-rows log|det A|`` only,
    so the posterior of the partition is the same in any units."""
    clusters = [np.arange(1), np.arange(5), np.arange(10, 40), np.arange(60)]
    rows = np.array([c.size for c in clusters])
    a = np.array([[0.5, 2.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, -0.2]])
    for family, a_ in ((NormalInverseWishart, a), (NormalInverseGamma, np.diag([100.0, 0.01, -3.0]))):
        moved = X @ a_ + [4.0, -1.0, 0.5]
        before = _log_marginals(family.from_data(X, n_clusters=3), X, clusters)
        after = _log_marginals(family.from_data(moved, n_clusters=3), moved, clusters)
        np.testing.assert_allclose(after, before - rows * np.log(abs(np.linalg.det(a_))), rtol=1e-9)


def test_few_rows_fall_back_to_the_variances():
    few = X[:3]  # 3 rows, 3 variables: the covariance is singular, mclust takes its diagonal
    fam = NormalInverseWishart.from_data(few, n_clusters=2)
    np.testing.assert_allclose(fam.psi0, np.diag(few.var(0, ddof=1)) / 2 ** (2 / 3), rtol=1e-12)


def test_random_scale_is_the_fixed_family_at_its_value():
    import pymc as pm

    labels = np.repeat(np.arange(3), 20)
    for family in (NormalInverseWishart, NormalInverseGamma):
        with pm.Model() as model:
            scale = pm.LogNormal("scale", 0.0, 1.0)
            z = pmp.Partition("z", n_items=60, prior=pmp.DirichletProcess(1.0))
            pmp.MarginalLikelihood("y", partition=z, observed=X, family=family.from_data(X, n_clusters=3, scale=scale))
        point = {"z": labels, "scale_log__": np.log(1.7)}
        fixed = family.from_data(X, n_clusters=3, scale=1.7)
        expected = _log_marginals(fixed, X, [labels == c for c in range(3)]).sum()
        got = model.compile_logp(vars=[model["y"]], mode="FAST_COMPILE")(point)
        np.testing.assert_allclose(got, expected, rtol=1e-10)
    with pm.Model(), pytest.raises(ValueError, match="`scale` must be positive"):
        NormalInverseGamma.from_data(X, n_clusters=3, scale=pm.Normal("s", 1.0, 1.0))


@pytest.mark.parametrize("family", [NormalInverseWishart, NormalInverseGamma])
def test_bad_inputs(family):
    with pytest.raises(TypeError, match="n_clusters"):
        family.from_data(X)
    with pytest.raises(ValueError, match="n_clusters"):
        family.from_data(X, n_clusters=0)
    with pytest.raises(ValueError, match="n_clusters"):
        family.from_data(X, n_clusters=61)
    with pytest.raises(TypeError, match="n_clusters"):
        family.from_data(X, n_clusters="3")
    with pytest.raises(ValueError, match=r"Variable\(s\) \[1\] are constant"):
        family.from_data(np.column_stack([X[:, 0], np.ones(60)]), n_clusters=3)
    with pytest.raises(ValueError, match="at least 2 rows"):
        family.from_data(X[:1], n_clusters=1)
    with pytest.raises(ValueError, match="scale"):
        family.from_data(X, n_clusters=3, scale=-1.0)
    with pytest.raises(ValueError, match="NaN"):
        family.from_data(np.where(X > 3, np.nan, X), n_clusters=3)


def test_bad_degrees_of_freedom():
    with pytest.raises(ValueError, match="nu0"):
        NormalInverseWishart.from_data(X, n_clusters=3, nu0=4.0)  # V + 1: no prior mean
    with pytest.raises(ValueError, match="alpha0"):
        NormalInverseGamma.from_data(X, n_clusters=3, alpha0=1.0)
    with pytest.raises(ValueError, match="singular"):
        NormalInverseWishart.from_data(np.column_stack([X, X[:, 0] + X[:, 1]]), n_clusters=3)
