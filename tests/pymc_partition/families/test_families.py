"""Conjugate families (SPEC section 3): closed-form cluster log marginals against brute force.

Each family's ``log_marginal`` is checked against an independent computation: numerical
integration over the parameters (small cases) or a formula computed differently (chain rule of
posterior predictive densities, multivariate Student-t / normal over all rows of a cluster).
"""

import math
import pickle

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats
from scipy.special import betaln, gammaln, logsumexp

from pymc_partition.families.beta_bernoulli import BetaBernoulli
from pymc_partition.families.dirichlet_categorical import DirichletCategorical
from pymc_partition.families.gamma_poisson import GammaPoisson
from pymc_partition.families.normal_inverse_gamma import NormalInverseGamma
from pymc_partition.families.normal_inverse_wishart import NormalInverseWishart
from pymc_partition.families.spike_slab import SpikeSlabNormal

RTOL = 1e-8  # closed form against an independent closed form
QTOL = 1e-6  # closed form against quadrature

# replicate rows per item: items 0..4 with 1, 3, 2, 4, 1 rows
REPLICATES = np.array([1, 3, 2, 4, 1])
ITEM_INDEX = np.repeat(np.arange(REPLICATES.size), REPLICATES)
# rows of an item need not be adjacent
ITEM_INDEX = np.random.default_rng(7).permutation(ITEM_INDEX)
N_ROWS = ITEM_INDEX.size
CLUSTERS = [[0], [1], [1, 3], [0, 2, 4], [0, 1, 2, 3, 4]]


def rows_of(items):
    return np.isin(ITEM_INDEX, items)


def check_clusters(fam, values, brute):
    """Per-item rows and summed cluster rows against ``brute(rows of the cluster)``."""
    st = fam.item_stats(values, ITEM_INDEX)
    assert st.shape[0] == REPLICATES.size
    per_item = fam.log_marginal_numpy(st)
    for i in range(REPLICATES.size):
        np.testing.assert_allclose(per_item[i], brute(values[ITEM_INDEX == i]), rtol=RTOL)
    for items in CLUSTERS:
        got = fam.log_marginal_numpy(st[items].sum(0))
        np.testing.assert_allclose(got, brute(values[rows_of(items)]), rtol=RTOL)


# --------------------------------------------------------------------------- data and families
V = 3


def _spd(rng, v):
    a = rng.normal(size=(v, v))
    return a @ a.T + v * np.eye(v)


@pytest.fixture(scope="module")
def cases():
    """Module-wide families (compiled once each) with matching data, (N_ROWS, V)."""
    rng = np.random.default_rng(2024)
    psi0 = _spd(rng, V)
    return {
        "nig": (
            NormalInverseGamma(
                mu0=[0.5, -1.0, 2.0],
                kappa0=[0.7, 1.3, 2.0],
                alpha0=[1.5, 2.0, 3.0],
                beta0=[0.8, 1.2, 2.5],
            ),
            rng.normal([0.3, -0.5, 2.5], [1.0, 0.5, 2.0], size=(N_ROWS, V)),
        ),
        "niw": (
            NormalInverseWishart(mu0=[0.5, -1.0, 2.0], kappa0=0.8, nu0=V + 1.5, psi0=psi0),
            rng.multivariate_normal([0.0, -1.0, 1.0], _spd(rng, V) / V, size=N_ROWS),
        ),
        "bb": (
            BetaBernoulli(a=[0.5, 1.0, 2.5], b=[0.7, 1.0, 4.0]),
            rng.integers(0, 2, size=(N_ROWS, V)).astype(float),
        ),
        "dc": (
            DirichletCategorical(alpha=[0.5, 1.0, 2.0, 0.3]),
            rng.integers(0, 4, size=(N_ROWS, V)),
        ),
        "gp": (
            GammaPoisson(a=[0.5, 2.0, 5.0], b=[0.3, 1.0, 2.0]),
            rng.poisson([0.5, 3.0, 10.0], size=(N_ROWS, V)),
        ),
    }


FAMILY_KEYS = ["nig", "niw", "bb", "dc", "gp"]


# --------------------------------------------------------------------------- Normal-Inverse-Gamma
def nig_brute_mvt(y, mu0, kappa0, alpha0, beta0):
    """All rows of one variable jointly: multivariate Student-t with 2*alpha0 df."""
    n = y.size
    shape = beta0 / alpha0 * (np.eye(n) + np.ones((n, n)) / kappa0)
    return stats.multivariate_t(loc=np.full(n, mu0), shape=shape, df=2 * alpha0).logpdf(y)


def test_nig_matches_multivariate_t(cases):
    fam, y = cases["nig"]
    hyper = [np.asarray(getattr(fam, k)) for k in ("mu0", "kappa0", "alpha0", "beta0")]

    def brute(rows):
        return sum(nig_brute_mvt(rows[:, v], *(h[v] for h in hyper)) for v in range(V))

    check_clusters(fam, y, brute)


def test_nig_matches_quadrature():
    mu0, kappa0, alpha0, beta0 = 0.4, 1.7, 2.2, 1.3
    fam = NormalInverseGamma(mu0, kappa0, alpha0, beta0)
    y = np.array([0.9, -0.3, 1.6])
    ref = float(fam.log_marginal_numpy(fam.item_stats(y, np.zeros(3, dtype=int)).sum(0)))

    n, s1, s2 = y.size, y.sum(), (y**2).sum()
    const = alpha0 * np.log(beta0) - gammaln(alpha0) - 0.5 * (n + 1) * np.log(2 * np.pi)
    const += 0.5 * np.log(kappa0) - ref

    def integrand(mu, t):  # t = log sigma2; Jacobian sigma2 = e^t
        s2_inv = math.exp(-t)
        sse = s2 - 2 * mu * s1 + n * mu * mu
        lj = (
            const
            - 0.5 * (n + 1) * t  # normal densities of the rows and of mu
            - 0.5 * s2_inv * (sse + kappa0 * (mu - mu0) ** 2)
            - (alpha0 + 1) * t  # inverse-gamma density
            - beta0 * s2_inv
            + t
        )
        return math.exp(lj)

    # the integrand written with scipy.stats, at one point: guards the hand-written density
    mu_t, t_t = 0.3, -0.2
    lj_ref = (
        stats.norm.logpdf(y, mu_t, np.exp(t_t / 2)).sum()
        + stats.norm.logpdf(mu_t, mu0, np.sqrt(np.exp(t_t) / kappa0))
        + stats.invgamma.logpdf(np.exp(t_t), alpha0, scale=beta0)
        + t_t
    )
    np.testing.assert_allclose(math.log(integrand(mu_t, t_t)) + ref, lj_ref, rtol=1e-12)

    kn = kappa0 + y.size
    centre = (kappa0 * mu0 + y.sum()) / kn
    half = lambda t: 40 * np.sqrt(np.exp(t) / kn)  # noqa: E731
    val, err = integrate.dblquad(
        integrand,
        -25.0,
        15.0,
        lambda t: centre - half(t),
        lambda t: centre + half(t),
        epsabs=1e-12,
        epsrel=1e-10,
    )
    np.testing.assert_allclose(val, 1.0, rtol=QTOL)


# --------------------------------------------------------------------------- Normal-Inverse-Wishart
def niw_chain_rule(y, mu0, kappa0, nu0, psi0):
    """log p(y_1..y_n) = sum_t log p(y_t | y_<t), Student-t predictives with sequential updates."""
    mu, kappa, nu, psi = np.array(mu0, float), float(kappa0), float(nu0), np.array(psi0, float)
    v = mu.size
    total = 0.0
    for row in y:
        df = nu - v + 1
        shape = psi * (kappa + 1) / (kappa * df)
        total += stats.multivariate_t(loc=mu, shape=shape, df=df).logpdf(row)
        diff = row - mu
        psi = psi + kappa / (kappa + 1) * np.outer(diff, diff)
        mu = (kappa * mu + row) / (kappa + 1)
        kappa += 1
        nu += 1
    return total


def test_niw_matches_chain_rule(cases):
    fam, y = cases["niw"]
    hyper = (fam.mu0, fam.kappa0, fam.nu0, fam.psi0)
    check_clusters(fam, y, lambda rows: niw_chain_rule(rows, *hyper))


def test_niw_one_variable_equals_nig():
    niw = NormalInverseWishart(mu0=0.3, kappa0=1.4, nu0=2.6, psi0=[[1.8]])
    nig = NormalInverseGamma(mu0=0.3, kappa0=1.4, alpha0=1.3, beta0=0.9)
    y = np.random.default_rng(3).normal(size=7)
    idx = np.array([0, 0, 1, 1, 1, 2, 3])
    s_w, s_g = niw.item_stats(y, idx), nig.item_stats(y, idx)
    np.testing.assert_allclose(s_w, s_g, rtol=1e-14)  # same layout when V = 1
    np.testing.assert_allclose(niw.log_marginal_numpy(s_w), nig.log_marginal_numpy(s_g), rtol=RTOL)
    np.testing.assert_allclose(niw.log_marginal_numpy(s_w.sum(0)), nig.log_marginal_numpy(s_g.sum(0)), rtol=RTOL)


def test_niw_scalar_hyperparameters_broadcast():
    fam = NormalInverseWishart(mu0=[0.0, 1.0], kappa0=1.0, nu0=3.0, psi0=2.0)
    np.testing.assert_array_equal(fam.psi0, 2.0 * np.eye(2))
    fam = NormalInverseWishart(mu0=0.5, kappa0=1.0, nu0=3.0, psi0=np.eye(2))
    np.testing.assert_array_equal(fam.mu0, [0.5, 0.5])


# --------------------------------------------------------------------------- Beta-Bernoulli
def test_beta_bernoulli_matches_beta_ratio(cases):
    fam, y = cases["bb"]
    a, b = np.asarray(fam.a), np.asarray(fam.b)

    def brute(rows):
        ones = rows.sum(0)
        return float(np.sum(betaln(a + ones, b + rows.shape[0] - ones) - betaln(a, b)))

    check_clusters(fam, y, brute)


def test_beta_bernoulli_matches_quadrature():
    a, b = 0.8, 2.3
    fam = BetaBernoulli(a, b)
    y = np.array([1, 0, 1, 1, 0, 1, 1])
    ref = float(fam.log_marginal_numpy(fam.item_stats(y, np.zeros(y.size, dtype=int)).sum(0)))
    f = lambda th: np.exp(  # noqa: E731
        stats.bernoulli.logpmf(y, th).sum() + stats.beta.logpdf(th, a, b) - ref
    )
    val = integrate.quad(f, 0, 0.5, epsabs=1e-13, epsrel=1e-11)[0]
    val += integrate.quad(f, 0.5, 1, epsabs=1e-13, epsrel=1e-11)[0]
    np.testing.assert_allclose(val, 1.0, rtol=QTOL)


# --------------------------------------------------------------------------- Dirichlet-Categorical
def polya_urn(rows, alpha):
    """Per variable, sequential predictive P(y_t = k | past) = (alpha_k + c_k) / (A + t)."""
    total = 0.0
    for v in range(rows.shape[1]):
        counts = np.zeros(alpha.size)
        for t, k in enumerate(rows[:, v].astype(int)):
            total += np.log((alpha[k] + counts[k]) / (alpha.sum() + t))
            counts[k] += 1
    return total


def test_dirichlet_categorical_matches_polya_urn(cases):
    fam, y = cases["dc"]
    assert fam.n_categories == 4
    check_clusters(fam, y, lambda rows: polya_urn(rows, np.asarray(fam.alpha)))


def test_dirichlet_two_categories_equals_beta_bernoulli():
    y = np.random.default_rng(5).integers(0, 2, size=(9, 2))
    idx = np.array([0, 0, 1, 2, 2, 2, 3, 4, 4])
    dc = DirichletCategorical(alpha=[2.5, 0.7])  # alpha_0 for code 0, alpha_1 for code 1
    bb = BetaBernoulli(a=0.7, b=2.5)  # a counts ones
    np.testing.assert_allclose(
        dc.log_marginal_numpy(dc.item_stats(y, idx)),
        bb.log_marginal_numpy(bb.item_stats(y, idx)),
        rtol=RTOL,
    )


def test_dirichlet_infers_and_then_enforces_n_categories():
    fam = DirichletCategorical(alpha=0.5)
    assert fam.n_categories is None
    with pytest.raises(ValueError, match="n_categories"):
        fam.log_marginal(pt.vector())
    y = np.array([[0, 2], [1, 1], [2, 0]])
    st = fam.item_stats(y)
    assert fam.n_categories == 3 and st.shape == (3, 6)
    np.testing.assert_array_equal(st[0], [1, 0, 0, 0, 0, 1])  # column v*K + k
    np.testing.assert_allclose(fam.log_marginal_numpy(st.sum(0)), polya_urn(y, np.full(3, 0.5)), rtol=RTOL)
    with pytest.raises(ValueError, match="n_categories"):
        fam.item_stats(np.array([[3, 0]]))


# --------------------------------------------------------------------------- Gamma-Poisson
def nb_chain_rule(rows, a, b):
    """Sequential negative-binomial predictives: y_t | past ~ NB(a_t, b_t / (b_t + 1))."""
    total = 0.0
    for v in range(rows.shape[1]):
        av, bv = a[v], b[v]
        for yt in rows[:, v]:
            total += stats.nbinom.logpmf(yt, av, bv / (bv + 1))
            av, bv = av + yt, bv + 1
    return total


def test_gamma_poisson_matches_negative_binomial_chain_rule(cases):
    fam, y = cases["gp"]
    check_clusters(fam, y, lambda rows: nb_chain_rule(rows, np.asarray(fam.a), np.asarray(fam.b)))


def test_gamma_poisson_matches_quadrature():
    a, b = 1.7, 0.6
    fam = GammaPoisson(a, b)
    y = np.array([3, 0, 5, 2, 7])
    ref = float(fam.log_marginal_numpy(fam.item_stats(y, np.zeros(y.size, dtype=int)).sum(0)))
    f = lambda lam: np.exp(  # noqa: E731
        stats.poisson.logpmf(y, lam).sum() + stats.gamma.logpdf(lam, a, scale=1 / b) - ref
    )
    m = (a + y.sum()) / (b + y.size)
    val = integrate.quad(f, 0, m, epsabs=1e-13, epsrel=1e-11)[0]
    val += integrate.quad(f, m, np.inf, epsabs=1e-13, epsrel=1e-11)[0]
    np.testing.assert_allclose(val, 1.0, rtol=QTOL)


# --------------------------------------------------------------------------- generic properties
@pytest.mark.parametrize("key", FAMILY_KEYS)
def test_stats_are_additive_over_rows_and_items(cases, key):
    fam, y = cases[key]
    per_item = fam.item_stats(y, ITEM_INDEX)
    per_row = fam.item_stats(y)  # one row per item
    assert per_row.shape == (N_ROWS, per_item.shape[1])
    for i in range(REPLICATES.size):
        np.testing.assert_allclose(per_item[i], per_row[ITEM_INDEX == i].sum(0), rtol=1e-12)
    one_item = fam.item_stats(y, np.zeros(N_ROWS, dtype=int))
    np.testing.assert_allclose(one_item[0], per_item.sum(0), rtol=1e-12)
    # the cluster log marginal is the same however the rows are grouped into items
    np.testing.assert_allclose(fam.log_marginal_numpy(per_row.sum(0)), fam.log_marginal_numpy(one_item[0]), rtol=1e-12)


def test_layouts(cases):
    fam, y = cases["nig"]
    st = fam.item_stats(y, ITEM_INDEX)
    i = 3
    r = y[ITEM_INDEX == i] - fam.centre  # sums about the prior mean (no cancellation far from 0)
    np.testing.assert_allclose(st[i], np.r_[len(r), r.sum(0), (r**2).sum(0)])
    fam, y = cases["niw"]
    st = fam.item_stats(y, ITEM_INDEX)
    r = y[ITEM_INDEX == i] - fam.centre
    np.testing.assert_allclose(st[i], np.r_[len(r), r.sum(0), (r.T @ r).ravel()])
    fam, y = cases["bb"]
    r = y[ITEM_INDEX == i]
    np.testing.assert_allclose(fam.item_stats(y, ITEM_INDEX)[i], np.r_[len(r), r.sum(0)])
    fam, y = cases["gp"]
    r = y[ITEM_INDEX == i]
    np.testing.assert_allclose(fam.item_stats(y, ITEM_INDEX)[i], np.r_[len(r), r.sum(0), gammaln(r + 1.0).sum(0)])
    fam, y = cases["dc"]
    r = y[ITEM_INDEX == i]
    expect = np.stack([np.bincount(r[:, v], minlength=4) for v in range(V)]).ravel()
    np.testing.assert_allclose(fam.item_stats(y, ITEM_INDEX)[i], expect)


@pytest.mark.parametrize("key", FAMILY_KEYS)
def test_batch_shapes_and_empty_clusters(cases, key):
    fam, y = cases[key]
    st = fam.item_stats(y, ITEM_INDEX)
    n_stats = st.shape[1]
    rng = np.random.default_rng(11)
    # random clusters: (2, 3) batch of subsets of items, one of them empty
    masks = rng.integers(0, 2, size=(2, 3, REPLICATES.size)).astype(float)
    masks[1, 2] = 0.0
    batch = masks @ st  # (2, 3, n_stats)
    flat = fam.log_marginal_numpy(batch.reshape(-1, n_stats))
    assert flat.shape == (6,)
    assert np.all(np.isfinite(flat))  # the empty cluster does not raise and stays finite
    np.testing.assert_allclose(flat[-1], 0.0, atol=1e-10)  # log p(no data) = 0
    s3, s1 = pt.tensor3("s3"), pt.vector("s1")
    out3, out1 = fam.log_marginal(s3), fam.log_marginal(s1)
    assert out3.ndim == 2 and out1.ndim == 0
    fn = pytensor.function([s3, s1], [out3, out1], mode="FAST_COMPILE")
    got3, got1 = fn(batch, st.sum(0))
    assert got3.shape == (2, 3)
    np.testing.assert_allclose(got3.ravel(), flat, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got1, fam.log_marginal_numpy(st.sum(0)), rtol=1e-12)


@pytest.mark.parametrize("key", FAMILY_KEYS)
def test_pickle_and_repr(cases, key):
    fam, _ = cases[key]
    clone = pickle.loads(pickle.dumps(fam))
    assert repr(clone) == repr(fam)
    assert type(fam).__name__ in repr(fam)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("key", FAMILY_KEYS)
def test_nan_data_rejected(cases, key):
    fam, y = cases[key]
    bad = np.array(y, dtype=float)
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="observed"):
        fam.item_stats(bad, ITEM_INDEX)


@pytest.mark.parametrize(
    "fam, values",
    [
        (BetaBernoulli(), [[0.0], [2.0]]),
        (BetaBernoulli(), [[0.5], [1.0]]),
        (BetaBernoulli(), [[-1.0], [1.0]]),
        (GammaPoisson(), [[1.0], [-2.0]]),
        (GammaPoisson(), [[1.5], [2.0]]),
        (DirichletCategorical(n_categories=3), [[0.0], [1.5]]),
        (DirichletCategorical(n_categories=3), [[0.0], [-1.0]]),
        (DirichletCategorical(n_categories=3), [[0.0], [3.0]]),
        (DirichletCategorical(alpha=[1.0, 1.0]), [[0.0], [2.0]]),
    ],
)
def test_wrong_support_rejected(fam, values):
    with pytest.raises(ValueError, match="observed"):
        fam.item_stats(np.array(values))


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: NormalInverseGamma(kappa0=0.0), "kappa0"),
        (lambda: NormalInverseGamma(alpha0=-1.0), "alpha0"),
        (lambda: NormalInverseGamma(beta0=[1.0, 0.0]), "beta0"),
        (lambda: NormalInverseGamma(mu0=np.nan), "mu0"),
        (lambda: NormalInverseGamma(mu0=np.zeros((2, 2))), "mu0"),
        (lambda: NormalInverseWishart(0.0, 0.0, 3.0, np.eye(2)), "kappa0"),
        (lambda: NormalInverseWishart(0.0, 1.0, 1.0, np.eye(2)), "nu0"),
        (lambda: NormalInverseWishart(0.0, 1.0, 3.0, [[1.0, 0.5], [0.0, 1.0]]), "psi0"),
        (lambda: NormalInverseWishart(0.0, 1.0, 3.0, [[1.0, 2.0], [2.0, 1.0]]), "psi0"),
        (lambda: NormalInverseWishart(0.0, 1.0, 3.0, np.ones((2, 3))), "psi0"),
        (lambda: NormalInverseWishart(0.0, 1.0, 3.0, -1.0), "psi0"),
        (lambda: NormalInverseWishart([0.0, 0.0, 0.0], 1.0, 3.0, np.eye(2)), "mu0"),
        (lambda: BetaBernoulli(a=0.0), "`a`"),
        (lambda: BetaBernoulli(b=-2.0), "`b`"),
        (lambda: BetaBernoulli(a=[1.0, 2.0], b=[1.0, 2.0, 3.0]), "`a`"),
        (lambda: DirichletCategorical(alpha=[1.0, 0.0]), "alpha"),
        (lambda: DirichletCategorical(alpha=[1.0, 1.0], n_categories=3), "n_categories"),
        (lambda: DirichletCategorical(n_categories=0), "n_categories"),
        (lambda: GammaPoisson(a=np.inf), "`a`"),
        (lambda: GammaPoisson(b=0.0), "`b`"),
    ],
)
def test_bad_hyperparameters_value_error(make, name):
    with pytest.raises(ValueError, match=name):
        make()


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: NormalInverseGamma(kappa0="big"), "kappa0"),
        (lambda: BetaBernoulli(a="one"), "`a`"),
        (lambda: DirichletCategorical(n_categories=2.5), "n_categories"),
        (lambda: GammaPoisson(b="x"), "`b`"),
    ],
)
def test_bad_hyperparameters_type_error(make, name):
    with pytest.raises(TypeError, match=name):
        make()


@pytest.mark.parametrize(
    "fam, name",
    [
        (NormalInverseGamma(mu0=[0.0, 1.0, 2.0]), "mu0"),
        (NormalInverseGamma(beta0=[1.0, 1.0, 1.0]), "beta0"),
        (BetaBernoulli(b=[1.0, 1.0, 1.0]), "`b`"),
        (GammaPoisson(a=[1.0, 1.0, 1.0]), "`a`"),
        (NormalInverseWishart(0.0, 1.0, 4.0, np.eye(3)), "observed"),
    ],
)
def test_hyperparameter_length_checked_against_data(fam, name):
    y = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match=name):
        fam.item_stats(y)


# --------------------------------------------------------------------------- SpikeSlabNormal
def spike_slab_brute(y, items, mu, sigma2, sigma2_eta, sigma2_theta, p):
    """Per variable: mixture of multivariate normals over all replicate rows of the cluster."""
    n = y.shape[0]
    same = (items[:, None] == items[None, :]).astype(float)
    cov0 = sigma2 * np.eye(n) + sigma2_eta * same
    cov1 = cov0 + sigma2_theta * np.ones((n, n))
    mean = np.full(n, mu)
    total = 0.0
    for v in range(y.shape[1]):
        spike = stats.multivariate_normal(mean, cov0).logpdf(y[:, v])
        slab = stats.multivariate_normal(mean, cov1).logpdf(y[:, v])
        total += logsumexp([np.log1p(-p) + spike, np.log(p) + slab])
    return total


def test_spike_slab_matches_brute_force_mixture():
    hyper = dict(mu=0.2, sigma2=0.3, sigma2_eta=0.5, sigma2_theta=4.0, p=0.3)
    fam = SpikeSlabNormal(**hyper)
    rng = np.random.default_rng(99)
    y = rng.normal(0.2, 1.2, size=(N_ROWS, V))
    y[rows_of([1, 3]), 0] += 3.0  # a shifted variable in one cluster
    st = fam.item_stats(y, ITEM_INDEX)
    per_item = fam.log_marginal_numpy(st)
    for i in range(REPLICATES.size):
        r = ITEM_INDEX == i
        np.testing.assert_allclose(per_item[i], spike_slab_brute(y[r], ITEM_INDEX[r], **hyper), rtol=RTOL)
    for items in CLUSTERS:
        r = rows_of(items)
        np.testing.assert_allclose(
            fam.log_marginal_numpy(st[items].sum(0)),
            spike_slab_brute(y[r], ITEM_INDEX[r], **hyper),
            rtol=RTOL,
        )


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(sigma2=0.0), "sigma2"),
        (dict(sigma2_eta=-1.0), "sigma2_eta"),
        (dict(sigma2_theta=np.inf), "sigma2_theta"),
        (dict(p=1.0), "`p`"),
        (dict(p=0.0), "`p`"),
        (dict(mu=np.nan), "`mu`"),
    ],
)
def test_spike_slab_bad_hyperparameters(kwargs, name):
    hyper = dict(mu=0.0, sigma2=1.0, sigma2_eta=1.0, sigma2_theta=1.0, p=0.5)
    hyper.update(kwargs)
    with pytest.raises(ValueError, match=name):
        SpikeSlabNormal(**hyper)


def test_spike_slab_bad_data():
    fam = SpikeSlabNormal(mu=0.0, sigma2=1.0, sigma2_eta=1.0, sigma2_theta=1.0, p=0.5)
    with pytest.raises(ValueError, match="observed"):
        fam.item_stats(np.array([[0.0], [np.nan]]))
    with pytest.raises(ValueError, match="observed"):
        fam.item_stats(np.array([[0.0], [np.inf]]))
    with pytest.raises(ValueError, match="item_index"):
        fam.item_stats(np.zeros((3, 2)), np.array([0, 1]))
    with pytest.raises(TypeError, match="item_index"):
        fam.item_stats(np.zeros((2, 2)), np.array([0.0, 1.0]))
    with pytest.raises(TypeError, match="mu"):
        SpikeSlabNormal(mu="a", sigma2=1.0, sigma2_eta=1.0, sigma2_theta=1.0, p=0.5)
