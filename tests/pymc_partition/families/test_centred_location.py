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
        fresh.log_marginal_numpy(fresh.item_stats(X + 5.0).sum(axis=0)), rel=1e-12)


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


#: scales whose squares float64 holds (the (co)variances are hyperparameters; a prior mean beyond
#: 1e150 is refused), and shifts of up to
#: 1e12 spreads (beyond, the data themselves keep no digit of the spread)
SCALES = [1e-150, 1e-100, 1e-20, 1.0, 1e20, 1e100, 1e135]
SHIFTS = [0.0, -1.0, 1e6, 1e12]


@pytest.mark.parametrize("kind", ["nig", "niw", "spike_slab"])
def test_sweep_location_and_scale_leave_the_partition_posterior_unchanged(kind):
    base = _reference_families()[kind]
    reference = _posterior(base, X)
    for scale in SCALES:
        for shift in SHIFTS:
            off = shift * scale
            data = scale * X + off
            family = _transformed(kind, base, scale, off)
            got = _posterior(family, data)
            # the data ``scale * X + off`` keep about 1e-16 * max(1, |shift|) of the spread
            tol = 1e-9 * max(1.0, abs(shift))
            np.testing.assert_allclose(got.coclustering, reference.coclustering, rtol=0, atol=tol,
                                       err_msg=f"{kind} at scale {scale:g}, shift {shift:g} spreads")  # fmt: skip


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
