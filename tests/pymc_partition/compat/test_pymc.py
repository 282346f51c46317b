"""pymc_partition's changes to PyMC: installed by one call, idempotent, version-checked,
undone by another; the convergence checks' view without the partitions, on both ArviZ
generations."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pymc.sampling.mcmc as mcmc
import pymc.step_methods as step_methods
import pytest
from pymc.step_methods.compound import BlockedStep
from test_pymc_workflow import _model  # a partition, a continuous variable and their data

import pymc_partition as pmp
import pymc_partition.step_methods  # noqa: F401  (importing the steps installs the hooks)
from arviz_regen.xr.containers import get_group, group_names
from pymc_partition.compat import pymc as pymc_hooks


def _pymc_state():
    return BlockedStep.__dict__["__new__"], mcmc.run_convergence_checks, list(step_methods.STEP_METHODS)


@pytest.fixture
def uninstalled():
    """PyMC as it is without pymc_partition; reinstalled afterwards."""
    assert pymc_hooks.installed()
    pymc_hooks.uninstall()
    try:
        yield
    finally:
        pymc_hooks.uninstall()  # whatever a test left
        assert pymc_hooks.install()


def test_uninstall_restores_pymc_and_install_is_idempotent(uninstalled):
    new, checks, methods = _pymc_state()
    assert not pymc_hooks.installed()
    assert isinstance(new, staticmethod) and new.__func__.__module__.startswith("pymc.")
    assert checks.__module__ == "pymc.stats.convergence"
    assert pmp.GibbsPartition not in methods
    model = _model()
    with model:  # a generic step takes the partition again (what the hook prevents)
        pm.Metropolis([model["z"]])
    assert pymc_hooks.install() and pymc_hooks.installed()
    once = _pymc_state()
    assert once[0] is not new and once[1] is not checks and pmp.GibbsPartition in once[2]
    assert pymc_hooks.install()  # again: nothing changes
    assert _pymc_state() == once and once[2].count(pmp.GibbsPartition) == 1
    with model, pytest.raises(TypeError, match=r"GibbsPartition\(\[z\]\)"):
        pm.Metropolis([model["z"]])
    pymc_hooks.uninstall()
    assert _pymc_state() == (new, checks, methods)


def test_another_pymc_is_refused_with_its_version(uninstalled, monkeypatch):
    before = _pymc_state()
    monkeypatch.setattr(pm, "__version__", "7.0.1")
    with pytest.warns(RuntimeWarning, match=r"PyMC 7\.0\.1: they support PyMC 5 and 6"):
        assert not pymc_hooks.install()
    assert _pymc_state() == before and not pymc_hooks.installed()
    monkeypatch.undo()
    monkeypatch.setattr(mcmc, "run_convergence_checks", lambda idata, model, extra=None: [])
    with pytest.warns(RuntimeWarning, match=r"run_convergence_checks has parameters \['idata', 'model', 'extra'\]"):
        assert not pymc_hooks.install()
    assert BlockedStep.__dict__["__new__"] is before[0]


def test_uninstall_leaves_a_wrapper_wrapped_again(uninstalled):
    assert pymc_hooks.install()
    ours = mcmc.run_convergence_checks
    mcmc.run_convergence_checks = lambda idata, model: ours(idata, model)
    try:
        with pytest.warns(RuntimeWarning, match="wrapped again"):
            pymc_hooks.uninstall()
        assert not pymc_hooks.installed()
    finally:
        mcmc.run_convergence_checks = ours.__wrapped__


def test_convergence_checks_see_a_view_without_the_partition():
    """The wrapper hands PyMC's checks the draws without the labels (InferenceData on PyMC 5,
    DataTree on PyMC 6), sharing the arrays, and leaves the caller's container as it was."""
    model = _model()
    with model:
        idata = pm.sample(draws=30, tune=10, chains=2, cores=1, progressbar=False, random_seed=2,
                          compute_convergence_checks=False)  # fmt: skip
    seen = {}

    def original(view, model):
        seen["view"] = view
        return ["checked"]

    assert pymc_hooks._without_partitions(original)(idata, model) == ["checked"]
    view = seen["view"]
    assert type(view) is type(idata)
    assert set(get_group(view, "posterior").data_vars) == {"mu"}
    assert set(group_names(view)) == set(group_names(idata))
    assert set(get_group(idata, "posterior").data_vars) == {"z", "mu"}
    assert np.shares_memory(get_group(view, "posterior")["mu"].values, get_group(idata, "posterior")["mu"].values)


@pytest.mark.default_backend  # the warnings of PyMC's and PyTensor's default compilation path too
def test_sampling_raises_no_deprecation_or_migration_warning():
    """Building the steps, pm.sample's step assignment, a compound step and the default
    convergence checks, with every deprecation, future and migration warning an error."""
    model = _model()
    with warnings.catch_warnings():
        for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
            warnings.simplefilter("error", category)
        with model:
            pm.sample(draws=120, tune=50, chains=2, cores=1, progressbar=False, random_seed=1)
            steps = [pmp.SplitMerge([model["z"]]), pm.Metropolis([model["mu"]])]
            pm.sample(draws=50, tune=10, chains=1, cores=1, progressbar=False, random_seed=1, step=steps,
                      compute_convergence_checks=False)  # fmt: skip


def test_installed_pymc_fits_the_wrappers():
    """Fails when a PyMC release changes what the wrappers rely on (major version, signatures,
    STEP_METHODS); ``test_uninstall_restores_pymc_and_install_is_idempotent`` shows PyMC itself
    still lets a generic step take a partition (what makes the refusal necessary)."""
    assert pymc_hooks._incompatibility() is None
