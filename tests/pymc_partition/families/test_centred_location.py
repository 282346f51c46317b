"""Location families are accurate at any location (issue 26, case 2): the statistics are sums
about the prior mean, so data and prior mean shifted together by up to 1e12 times the spread give
the same exact posterior, bit for bit in the model's numbers, where raw sums of squares cancelled
(the MAP partition's probability fell from 0.69 to 0.26 at 1e8)."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_partition as pmp
from pymc_partition.model_spec import partition_spec
from pymc_partition.spec import PartitionSpec

_rng = np.random.default_rng(11)
X = np.concatenate([_rng.normal(0.0, 1.0, (4, 2)), _rng.normal(3.0, 1.0, (4, 2))])
OFFSETS = [0.0, 1e4, 1e8, 1e12]
PRIOR = pmp.DirichletProcess(1.0)


def _families(data):
    nig = pmp.NormalInverseGamma.from_data(data, n_clusters=2)
    niw = pmp.NormalInverseWishart.from_data(data, n_clusters=2)
    return {"nig": nig, "niw": niw}


def _shifted_back(family, offset):
    """``family`` with ``mu0`` less ``offset`` (exact: both are within a factor 2 of it)."""
    return family.with_values(mu0=np.asarray(family.mu0) - offset) if offset else family


def _posterior(family, data):
    return pmp.ExactPosterior(PartitionSpec.from_data(PRIOR, family, data), progressbar=False)


@pytest.mark.parametrize("kind", ["nig", "niw"])
@pytest.mark.parametrize("offset", OFFSETS[1:])
def test_a_shift_of_data_and_prior_mean_changes_no_posterior_probability(kind, offset):
    far = X + offset
    near = far - offset  # exactly the data ``far`` holds, less the offset
    family = _families(far)[kind]
    # the prior mean is the data mean: ``near``'s family is the same one, shifted back exactly
    reference = type(family)(*(np.asarray(getattr(family, k)) - (offset if k == "mu0" else 0.0)
                               for k in family._param_names))  # fmt: skip
    a, b = _posterior(family, far), _posterior(reference, near)
    np.testing.assert_allclose(a.coclustering, b.coclustering, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.n_clusters_pmf, b.n_clusters_pmf, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(a.map, b.map)
    assert a.map_probability == pytest.approx(b.map_probability, rel=1e-10)


@pytest.mark.parametrize("kind", ["nig", "niw"])
def test_the_model_the_samplers_and_the_exact_posterior_agree_far_from_zero(kind):
    """1e8 from zero: the predictive form agrees with the graph (no warning that the sampler
    falls back to it), and ``pmp.exact_posterior`` on a model matches the unshifted one."""
    offset = 1e8
    far = X + offset
    family = _families(far)[kind]
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=len(X), prior=PRIOR)
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=far)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        step = pmp.GibbsPartition([z], model=model)
    assert step.predictive_form.name != "graph"
    exact = pmp.exact_posterior(model, progressbar=False)
    near = _posterior(type(family)(*(np.asarray(getattr(family, k)) - (offset if k == "mu0" else 0.0)
                                     for k in family._param_names)), far - offset)  # fmt: skip
    np.testing.assert_allclose(exact.coclustering, near.coclustering, rtol=0, atol=1e-12)
    # the model's logp is the same number as the spec's
    logp = model.compile_logp()
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    assert logp({"z": labels}) == pytest.approx(exact.log_posterior(labels), rel=1e-12)


def test_the_centre_survives_new_hyperparameter_values():
    family = pmp.NormalInverseGamma(5.0, 1.0, 2.0, 1.0)
    moved = family.with_values(mu0=7.0)
    assert moved.centre == 5.0 and float(moved.mu0) == 7.0
    stats = family.item_stats(X + 5.0)
    # the log marginal at mu0 = 7 of data summed about 5 is that of a family centred at 7
    fresh = pmp.NormalInverseGamma(7.0, 1.0, 2.0, 1.0)
    total = stats.sum(axis=0)
    assert moved.log_marginal_numpy(total) == pytest.approx(
        fresh.log_marginal_numpy(fresh.item_stats(X + 5.0).sum(axis=0)), rel=1e-12
    )


# a random ``mu0`` (a PyMC variable): no number to centre on, so the statistics are summed about
# the data mean; the posterior at ``mu0 = offset + t`` is the unshifted one at ``mu0 = t``
#: ``t`` exactly representable next to ``offset`` (so that ``offset + t - offset == t``)
MU0_VALUES = [0.25, -1.0]


def _random_mu0_model(kind, data, offset):
    base = _families(X)[kind]  # the same hyperparameters near and far, but for mu0
    with pm.Model() as model:
        if kind == "nig":
            mu0 = pm.Normal("mu0", offset, 10.0)
            family = pmp.NormalInverseGamma(mu0, base.kappa0, base.alpha0, base.beta0)
        else:
            mu0 = pm.Normal("mu0", offset, 10.0, shape=2)
            family = pmp.NormalInverseWishart(mu0, base.kappa0, base.nu0, base.psi0)
        z = pmp.Partition("z", n_items=len(X), prior=PRIOR)
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=data)
    return model


@pytest.mark.parametrize("kind", ["nig", "niw"])
def test_a_random_prior_mean_far_from_zero_gives_the_unshifted_posterior(kind):
    """Summed about 0, the sums of squares of data 1e12 spreads away kept no digit of the spread
    (NIG: log likelihood -127 against -41; NIW: nan)."""
    offset = 1e12
    far = X + offset
    near = far - offset  # exact
    models = {"far": _random_mu0_model(kind, far, offset), "near": _random_mu0_model(kind, near, 0.0)}
    # the Python linker: no C compilation for a handful of evaluations
    logps = {k: m.compile_logp(vars=[m["y"]], jacobian=False, mode="FAST_COMPILE") for k, m in models.items()}
    labels = [np.zeros(8, dtype=int), np.repeat([0, 1], 4), np.array([0, 1, 0, 1, 2, 2, 3, 0]), np.arange(8)]
    for t in MU0_VALUES:
        points = {"far": {"mu0": np.full(2, offset + t) if kind == "niw" else offset + t},
                  "near": {"mu0": np.full(2, t) if kind == "niw" else t}}  # fmt: skip
        for z in labels:
            got, want = (logps[k]({**points[k], "z": z}) for k in ("far", "near"))
            assert got == pytest.approx(want, rel=1e-10), (t, z)
    # the exact posterior at a point (the family's numbers, summed about the same centre)
    got, want = (pmp.ExactPosterior(partition_spec(models[k], point={**points[k], "z": labels[0]}),
                                    progressbar=False) for k in ("far", "near"))  # fmt: skip
    np.testing.assert_allclose(got.coclustering, want.coclustering, rtol=0, atol=1e-12)


def test_a_random_prior_mean_is_centred_on_the_data_mean_shared_by_copies():
    with pm.Model():
        family = pmp.NormalInverseGamma(pm.Normal("mu0", 0.0, 1.0), 1.0, 2.0, 1.0)
        moved = family.replace_params({})
        stats = family.item_stats(X + 1e12)
    np.testing.assert_array_equal(family.centre, (X + 1e12).mean(axis=0))
    assert moved.centre is family.centre  # the copy sums about the same centre
    assert np.abs(stats[:, 1:3]).max() < 10.0  # sums about the data mean, not about 0


# ---------------------------------------------------------------------------------------------
# property sweep: location and scale that should change nothing
# ---------------------------------------------------------------------------------------------
#: the reference families, at the data's own location and scale (spread about 1)
def _reference_families():
    nig = pmp.NormalInverseGamma.from_data(X, n_clusters=2)
    niw = pmp.NormalInverseWishart.from_data(X, n_clusters=2)
    ss = pmp.SpikeSlabNormal(mu=X.mean(axis=0), sigma2=0.5, sigma2_eta=0.5, sigma2_theta=4.0, p=0.5)
    return {"nig": nig, "niw": niw, "spike_slab": ss}


def _transformed(kind, family, scale, shift):
    """``family`` for the data ``scale * x + shift``: locations moved, (co)variances scaled."""
    s2 = scale * scale
    if kind == "nig":
        return pmp.NormalInverseGamma(scale * family.mu0 + shift, family.kappa0, family.alpha0, s2 * family.beta0)
    if kind == "niw":
        return pmp.NormalInverseWishart(scale * family.mu0 + shift, family.kappa0, family.nu0, s2 * family.psi0)
    return pmp.SpikeSlabNormal(scale * np.asarray(family.mu) + shift, s2 * family.sigma2, s2 * family.sigma2_eta,
                               s2 * family.sigma2_theta, family.p)  # fmt: skip


#: scales from the smallest whose variances are normal float64 numbers to the largest whose prior
#: mean the families accept (|mu0| <= 1e150: its squared distance from the data must not
#: overflow), and shifts of up to 1e12 spreads (beyond, the data themselves keep no digit of the
#: spread); a location beyond 1e150 is refused, and says so
SCALES = [1e-153, 1e-100, 1.0, 1e100, 1e135, 1e149]
SHIFTS = [0.0, -1.0, 1e6, 1e12]
LOCATION_LIMIT = 1e150


@pytest.mark.parametrize("kind", ["nig", "niw", "spike_slab"])
def test_sweep_location_and_scale_leave_the_partition_posterior_unchanged(kind):
    base = _reference_families()[kind]
    reference = _posterior(base, X)
    n_checked = 0
    for scale in SCALES:
        for shift in SHIFTS:
            off = shift * scale
            data = scale * X + off
            where = f"{kind} at scale {scale:g}, shift {shift:g} spreads"
            if np.abs(data).max() > LOCATION_LIMIT:
                with pytest.raises(ValueError, match=r"must lie within \+-1e\+150.*Rescale"):
                    _transformed(kind, base, scale, off)
                continue
            got = _posterior(_transformed(kind, base, scale, off), data)
            # the data ``scale * X + off`` keep about 1e-16 * max(1, |shift|) of the spread: the
            # posterior moves by 1e-13 (no shift) to 7e-5 (1e12 spreads) on this grid
            tol = 1e-9 + 1e-14 * abs(shift)
            np.testing.assert_allclose(got.coclustering, reference.coclustering, rtol=0, atol=tol, err_msg=where)
            n_checked += 1
    assert n_checked == 22  # all but 1e149 x (1e6, 1e12)


def test_variances_below_the_smallest_normal_float64_are_refused():
    """Spike-and-slab variances of 5e-309 (data at 1e-154): their reciprocals overflowed and
    the co-clustering moved by 0.55 without a word."""
    base = _reference_families()["spike_slab"]
    with pytest.raises(ValueError, match=r"`sigma2` must be at least 2.2.*e-308.*Rescale"):
        _transformed("spike_slab", base, 1e-154, 0.0)


#: the families without location or scale (binary, category and count data), and the changes of
#: the data that should change nothing: swapping 0 and 1 (and a and b), renaming categories (and
#: permuting alpha), and permuting the variables (with their hyperparameters)
_DISCRETE = np.random.default_rng(5)
BINARY = np.concatenate([_DISCRETE.random((4, 3)) < 0.2, _DISCRETE.random((4, 3)) < 0.8]).astype(float)
CATEGORIES = np.concatenate([_DISCRETE.integers(0, 2, (4, 2)), _DISCRETE.integers(1, 4, (4, 2))]).astype(float)
COUNTS = np.concatenate([_DISCRETE.poisson(1.0, (4, 2)), _DISCRETE.poisson(6.0, (4, 2))]).astype(float)
_A, _B = np.array([0.5, 1.0, 2.0]), np.array([1.5, 0.7, 1.0])
_ALPHA = np.array([0.5, 1.0, 2.0, 0.8])
_NAMES = np.array([2, 0, 3, 1])  # category c is called _NAMES[c]


@pytest.mark.parametrize(
    "family, data, other_family, other_data",
    [
        (pmp.BetaBernoulli(_A, _B), BINARY, pmp.BetaBernoulli(_B, _A), 1.0 - BINARY),
        (pmp.BetaBernoulli(_A, _B), BINARY, pmp.BetaBernoulli(_A[::-1], _B[::-1]), BINARY[:, ::-1]),
        (pmp.DirichletCategorical(_ALPHA), CATEGORIES, pmp.DirichletCategorical(_ALPHA[np.argsort(_NAMES)]),
         _NAMES[CATEGORIES.astype(int)].astype(float)),
        (pmp.GammaPoisson(_A[:2], _B[:2]), COUNTS, pmp.GammaPoisson(_A[1::-1], _B[1::-1]), COUNTS[:, ::-1]),
    ],
    ids=["beta_bernoulli-swap01", "beta_bernoulli-variables", "dirichlet-rename", "gamma_poisson-variables"],
)  # fmt: skip
def test_discrete_families_symmetries_leave_the_partition_posterior_unchanged(family, data, other_family, other_data):
    a, b = _posterior(family, data), _posterior(other_family, other_data)
    np.testing.assert_allclose(a.coclustering, b.coclustering, rtol=0, atol=1e-12)
    # and the check can fail: the unswapped data under the swapped family differ
    assert np.abs(_posterior(other_family, data).coclustering - a.coclustering).max() > 1e-3


@pytest.mark.parametrize("scale", [1e-200, 1e200])
@pytest.mark.parametrize("kind", ["nig", "niw"])
def test_from_data_beyond_what_float64_holds_says_so(kind, scale):
    """Variances of 1e+-400 are not float64 numbers: a clear error saying to rescale, not a
    LinAlgError, "beta0 must be finite" (no beta0 was given) or "constant" (they are not)."""
    factory = pmp.NormalInverseGamma if kind == "nig" else pmp.NormalInverseWishart
    with pytest.raises(ValueError, match=r"variance.*not representable in float64.*[Rr]escale") as info:
        factory.from_data(X * scale, n_clusters=2)
    assert "constant" not in str(info.value) and "beta0" not in str(info.value)


def test_from_data_still_refuses_constant_variables():
    data = X.copy()
    data[:, 1] = 1e-200
    with pytest.raises(ValueError, match=r"Variable\(s\) \[1\] are constant"):
        pmp.NormalInverseGamma.from_data(data, n_clusters=2)
