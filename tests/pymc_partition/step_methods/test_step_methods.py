"""PyMC citizenship of the partition step methods: pm.sample, chains, cores, seeds, stats, pickling."""

from __future__ import annotations

import cloudpickle
import numpy as np
import pymc as pm
import pytest

import pymc_partition as pmp
from pymc_partition.state import canonicalize
from pymc_partition.step_methods import GibbsPartition, SplitMerge

FAMILY = dict(mu=0.0, sigma2=0.5, sigma2_eta=0.3, sigma2_theta=4.0, p=0.3)


def _data(n=10, seed=0):
    rng = np.random.default_rng(seed)
    shift = np.where(np.arange(n) < n // 2, -0.6, 0.6)[:, None]
    item_index = np.repeat(np.arange(n), 2)
    y = shift[item_index] + rng.normal(0, 0.7, (2 * n, 2))
    return y, item_index


def _model(n=10, prior=None, extra_normal=False):
    y, idx = _data(n)
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=prior or pmp.UniformMultinomialDirichlet())
        pmp.MarginalLikelihood("y", partition=z, family=pmp.SpikeSlabNormal(**FAMILY), observed=y, item_index=idx)
        if extra_normal:
            pm.Normal("x", 0.0, 1.0)
    return model


@pytest.fixture(scope="module")
def model():
    return _model()


def _sample(model, step_factory, **kwargs):
    opts = dict(draws=200, tune=20, chains=2, cores=1, progressbar=False,
                compute_convergence_checks=False, random_seed=123)  # fmt: skip
    opts.update(kwargs)
    with model:
        return pm.sample(step=step_factory(model), **opts)


STEPS = {
    "gibbs": lambda m: GibbsPartition([m["z"]]),
    "split_merge": lambda m: SplitMerge([m["z"]]),
}


@pytest.fixture(scope="module")
def posterior(model):
    """One ``pm.sample`` run per step kind (seed 7), read by the tests below; drawn on first use."""
    runs = {}

    def get(kind):
        if kind not in runs:
            runs[kind] = _sample(model, STEPS[kind], random_seed=7)
        return runs[kind]

    return get


@pytest.mark.default_backend
@pytest.mark.parametrize("kind", list(STEPS))
def test_sample_stats_and_exact_logp(model, posterior, kind):
    idata = posterior(kind)
    post = idata.posterior["z"]
    assert post.dims == ("chain", "draw", "z_dim_0")
    assert post.shape == (2, 200, 10)
    labels = post.values.reshape(-1, 10)
    np.testing.assert_array_equal(labels, canonicalize(labels))  # canonical labels
    ss = idata.sample_stats
    assert {"partition_logp", "n_clusters"} <= set(ss.data_vars)
    np.testing.assert_array_equal(ss["n_clusters"].values.reshape(-1), labels.max(axis=1) + 1)
    logp_fn = model.compile_logp()
    lps = ss["partition_logp"].values.reshape(-1)
    for t in range(0, labels.shape[0], 7):
        assert lps[t] == pytest.approx(float(logp_fn({"z": labels[t]})), rel=0, abs=1e-9)
    if kind == "split_merge":
        prop = ss["proposal"].values
        assert set(np.unique(prop)) <= {SplitMerge.PROPOSAL_SPLIT, SplitMerge.PROPOSAL_MERGE}
        assert ss["proposal_accepted"].dtype == bool
        np.testing.assert_array_equal(ss["n_proposals_accepted"].values, ss["proposal_accepted"].values.astype(int))
    assert idata.posterior.sizes["draw"] == 200  # tune draws discarded
    assert idata.sample_stats.attrs["tuning_steps"] == 20


@pytest.mark.parametrize("kind", list(STEPS))
def test_seed_reproducibility_and_cores(model, posterior, kind):
    a = posterior(kind)
    b = _sample(model, STEPS[kind], random_seed=7)
    c = _sample(model, STEPS[kind], random_seed=8)
    za, zb, zc = (i.posterior["z"].values for i in (a, b, c))
    np.testing.assert_array_equal(za, zb)
    assert not np.array_equal(za, zc)
    assert not np.array_equal(za[0], za[1])  # chains differ
    np.testing.assert_array_equal(a.sample_stats["partition_logp"].values, b.sample_stats["partition_logp"].values)
    if kind == "gibbs":  # cores=2 (fork) gives the same draws as cores=1
        d = _sample(model, STEPS[kind], random_seed=7, cores=2)
        np.testing.assert_array_equal(za, d.posterior["z"].values)


THINNED = {
    "gibbs": lambda m: GibbsPartition([m["z"]], thin=4),
    "split_merge": lambda m: SplitMerge([m["z"]], thin=4),
}


@pytest.mark.parametrize("kind", list(THINNED))
def test_thin_through_pm_sample(model, kind):
    """``thin`` steps per draw, the same draws with cores=1 and 2, and stats that count them."""
    a = _sample(model, THINNED[kind], draws=40, tune=5, random_seed=9)
    b = _sample(model, THINNED[kind], draws=40, tune=5, random_seed=9, cores=2)
    np.testing.assert_array_equal(a.posterior["z"].values, b.posterior["z"].values)
    ss = a.sample_stats
    np.testing.assert_array_equal(ss["n_gibbs_sweeps"].values, 4)
    if kind == "split_merge":
        np.testing.assert_array_equal(ss["n_proposals"].values, 4)
        assert (ss["n_proposals_accepted"].values <= 4).all()


def test_default_step_is_gibbs_partition(model):
    from pymc.sampling.mcmc import assign_step_methods
    from pymc.step_methods import STEP_METHODS

    _, selected = assign_step_methods(model, None, methods=STEP_METHODS)
    assert list(selected) == [GibbsPartition]
    with model:
        idata = pm.sample(draws=50, tune=0, chains=1, progressbar=False, random_seed=1,
                          compute_convergence_checks=False)  # fmt: skip
    assert "partition_logp" in idata.sample_stats
    assert "proposal" not in idata.sample_stats


def test_compound_step_with_continuous_variable():
    model = _model(extra_normal=True)
    with model:
        idata = pm.sample(draws=100, tune=50, chains=2, cores=1, progressbar=False,
                          random_seed=3, compute_convergence_checks=False,
                          step=[SplitMerge([model["z"]]), pm.Metropolis([model["x"]])])  # fmt: skip
        idata2 = pm.sample(draws=100, tune=50, chains=1, cores=1, progressbar=False,
                           random_seed=3, compute_convergence_checks=False,
                           step=[GibbsPartition([model["z"]])])  # x gets NUTS  # fmt: skip
    assert idata.posterior["x"].shape == (2, 100)
    assert idata.posterior["z"].shape == (2, 100, 10)
    ss = idata.sample_stats
    assert "partition_logp" in ss and "proposal" in ss
    assert "partition_logp" in idata2.sample_stats and "diverging" in idata2.sample_stats
    # the partition's log posterior does not involve x
    logp_z = model.compile_logp(vars=[model["z"], model["y"]])
    z0 = idata.posterior["z"].values[1, -1]
    assert ss["partition_logp"].values[1, -1] == pytest.approx(float(logp_z({"z": z0, "x": 0.0})))


def test_pickle_round_trip(model):
    with model:
        step = SplitMerge([model["z"]], n_restricted_scans=2)
    step.set_rng(np.random.default_rng(5))
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    point = model.initial_point()
    p1, p2 = dict(point), dict(point)
    for _ in range(20):
        p1, s1 = step.step(p1)
        p2, s2 = clone.step(p2)
        np.testing.assert_array_equal(p1["z"], p2["z"])
        assert s1[0] == s2[0]


def test_spawn_multiprocessing(model):
    idata = _sample(model, STEPS["gibbs"], draws=50, tune=0, cores=2, mp_ctx="spawn",
                    random_seed=4)  # fmt: skip
    ref = _sample(model, STEPS["gibbs"], draws=50, tune=0, cores=1, random_seed=4)
    np.testing.assert_array_equal(idata.posterior["z"].values, ref.posterior["z"].values)


def test_non_canonical_start_and_progressbar(model):
    with model:
        idata = pm.sample(draws=30, tune=0, chains=1, progressbar=True, random_seed=2,
                          initvals={"z": np.array([5, 5, 1, 1, 5, 9, 9, 9, 1, 5])},
                          step=GibbsPartition([model["z"]]), compute_convergence_checks=False)  # fmt: skip
    labels = idata.posterior["z"].values[0]
    np.testing.assert_array_equal(labels, canonicalize(labels))


def test_step_object_reused_across_runs_and_chains(model):
    with model:
        step = GibbsPartition([model["z"]])
    one = _sample(model, lambda m: step, random_seed=11)
    # sequential chains restart from the step's initial sampling state (counter not leaked)
    assert step.n_steps == 220
    two = _sample(model, lambda m: step, random_seed=11)
    np.testing.assert_array_equal(one.posterior["z"].values, two.posterior["z"].values)


# ----------------------------------------------------------------------------- bad input
def test_bad_variable_errors():
    with pm.Model() as m:
        x = pm.Normal("x")
        with pytest.raises(TypeError, match="Partition"):
            GibbsPartition([x])
        with pytest.raises(TypeError, match="Partition"):
            SplitMerge([x])
    with pm.Model():
        z = pmp.Partition("z", n_items=4, prior=pmp.DirichletProcess(1.0))
        with pytest.raises(ValueError, match="MarginalLikelihood"):
            GibbsPartition([z])
        with pytest.raises(ValueError, match="MarginalLikelihood"):
            SplitMerge([z])
    assert m is not None


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(n_restricted_scans=-1), ValueError, "n_restricted_scans"),
        (dict(n_split_merge=-2), ValueError, "n_split_merge"),
        (dict(n_gibbs_scans=-1), ValueError, "n_gibbs_scans"),
        (dict(n_split_merge=0, n_gibbs_scans=0), ValueError, "never update"),
        (dict(n_restricted_scans=1.5), TypeError, "integer"),
        (dict(gibbs_probability=1.5), ValueError, "gibbs_probability"),
    ],
)
def test_bad_split_merge_parameters(model, kwargs, exc, match):
    with model:
        with pytest.raises(exc, match=match):
            SplitMerge([model["z"]], **kwargs)


def test_bad_gibbs_parameters_and_two_variables(model):
    with model:
        with pytest.raises(ValueError, match="n_sweeps"):
            GibbsPartition([model["z"]], n_sweeps=0)
    two = _model()
    with two:
        z2 = pmp.Partition("z2", n_items=3, prior=pmp.DirichletProcess(1.0))
        with pytest.raises(ValueError, match="exactly one"):
            GibbsPartition([two["z"], z2], blocked=True)
        # unblocked (the default): one step per partition, and z2 has no likelihood
        with pytest.raises(ValueError, match="No pmp.MarginalLikelihood depends on the partition 'z2'"):
            GibbsPartition([two["z"], z2])


def test_split_merge_only_and_badly_mixing_preset(model):
    with model:
        only = SplitMerge([model["z"]], n_gibbs_scans=0, n_split_merge=3)
        bad = SplitMerge.badly_mixing([model["z"]])
    assert bad.n_restricted_scans == 0 and bad.n_gibbs_scans == 0
    assert bad.gibbs_probability == SplitMerge.BADLY_MIXING["gibbs_probability"]
    only.set_rng(np.random.default_rng(0))
    point = model.initial_point()
    seen = set()
    for _ in range(200):
        point, (st,) = only.step(point)
        assert st["n_gibbs_sweeps"] == 0
        seen.add(st["n_clusters"])
    assert len(seen) > 1
