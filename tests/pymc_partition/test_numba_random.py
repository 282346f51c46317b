"""Partition and MarginalLikelihood on PyTensor's numba backend: no object-mode fallback.

On PyMC 6 numba is the default backend; on PyMC 5 it is ``mode="NUMBA"``. ``pm.draw`` and the
predictive samplers of models with fixed and with random (PyMC-variable) prior parameters and
hyperparameters must compile without PyTensor's UserWarning about object mode, and a seed must fix
the draws. Exactness of the draws: ``test_prior_draws.py`` (partitions) and
``test_numba_draws.py`` (data).
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest

import pymc_partition as pmp

PYMC_6 = int(pm.__version__.split(".")[0]) >= 6
NUMBA = {} if PYMC_6 else {"mode": "NUMBA"}  # what a user of each PyMC gets / asks for
ITEMS = 6
pytestmark = pytest.mark.default_backend  # PyMC 6 users get numba as the default mode
Y = np.random.default_rng(0).normal(size=(ITEMS, 2))


def _fixed_model():
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=ITEMS, prior=pmp.UniformMultinomialDirichlet())
        pmp.MarginalLikelihood("y", partition=z, family=pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), observed=Y)
    return model


def _hierarchical_model():
    """The README's hierarchical model: a random DP concentration and a random slab variance."""
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        sigma2_theta = pm.HalfNormal("sigma2_theta", 10.0)
        z = pmp.Partition("z", n_items=ITEMS, prior=pmp.DirichletProcess(alpha=alpha))
        family = pmp.SpikeSlabNormal(mu=0.0, sigma2=0.5, sigma2_eta=0.2, sigma2_theta=sigma2_theta, p=0.3)
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=Y)
    return model


def _no_object_mode():
    """Any UserWarning (object mode among them) is an error."""
    context = warnings.catch_warnings()
    context.__enter__()
    warnings.simplefilter("error", UserWarning)
    return context


@pytest.mark.parametrize("make_model", [_fixed_model, _hierarchical_model])
def test_draws_and_predictive_sampling_compile_for_numba(make_model):
    model = make_model()
    context = _no_object_mode()
    try:
        z, y = pm.draw([model["z"], model["y"]], draws=5, random_seed=1, **NUMBA)
        prior = pm.sample_prior_predictive(draws=20, model=model, random_seed=2, compile_kwargs=NUMBA)
        post = pm.sample_posterior_predictive(
            prior.prior, model=model, random_seed=3, progressbar=False, compile_kwargs=NUMBA
        )
    finally:
        context.__exit__(None, None, None)
    assert z.shape == (5, ITEMS) and y.shape == (5, ITEMS, 2) and np.isfinite(y).all()
    assert prior.prior_predictive["y"].shape == (1, 20, ITEMS, 2)
    assert post.posterior_predictive["y"].shape == (1, 20, ITEMS, 2)


def test_a_seed_fixes_the_draws():
    model = _hierarchical_model()
    first, second = (pm.draw([model["z"], model["y"]], draws=10, random_seed=5, **NUMBA) for _ in range(2))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    prior = [pm.sample_prior_predictive(draws=10, model=model, random_seed=6, compile_kwargs=NUMBA) for _ in range(2)]
    for group, name in (("prior", "z"), ("prior", "alpha"), ("prior_predictive", "y")):
        np.testing.assert_array_equal(prior[0][group][name].values, prior[1][group][name].values)
    other = pm.draw(model["y"], draws=10, random_seed=7, **NUMBA)
    assert not np.array_equal(other, first[1])


class _NoKernel(pmp.NormalInverseGamma):
    """A family without a numba kernel (e.g. a user's own)."""

    _draw_kernel = None


def test_a_family_without_a_kernel_falls_back_to_object_mode():
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=ITEMS, prior=pmp.UniformPartition())
        pmp.MarginalLikelihood("y", partition=z, family=_NoKernel(), observed=Y)
    with pytest.warns(UserWarning, match="object mode"):
        y = pm.draw(model["y"], draws=3, random_seed=1, **NUMBA)
    assert y.shape == (3, ITEMS, 2) and np.isfinite(y).all()
