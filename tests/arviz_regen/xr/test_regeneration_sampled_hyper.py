"""Draws whose hyperparameters were sampled (issue 18, item 4).

Their ``partition_logp`` is the log posterior given each draw's hyperparameters, so it differs
between draws of the same partition. Everything that does not need a fixed target takes them and
gives what it gives on the same labels without a log posterior (checked equal, not just run);
what needs one (Hotelling-RS, ranking states, regenerative standard errors) refuses, saying why
and what the summary reports instead; the summary decides by chain agreement.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import xarray as xr

import arviz_regen
from arviz_regen.cli import EXIT_ERROR, main
from arviz_regen.testing import iid_chain, random_partitions, zipf_probs
from arviz_regen.xr.containers import from_dict, get_group
from arviz_regen.xr.draws import load_partition
from arviz_regen.xr.regeneration import SampledHyperparametersWarning

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

STATES = random_partitions(10, 7, np.random.default_rng(3))
PROBS = zipf_probs(10, 1.2)
REFUSAL = (
    r"needs a chain on the partition with a fixed target.*differs between draws of the same partition.*chain-agreement"
)


def _draws(rng=None):
    """3 chains x 1,500 iid draws over 10 states (every state repeats), the log posterior of
    each draw at its own DP concentration ``alpha ~ Gamma(2, 1)``: ``(K - 1) log alpha`` plus
    ``lgamma(alpha) - lgamma(alpha + n)`` on top of the state's term."""
    from scipy.special import gammaln

    rng = rng or np.random.default_rng(5)
    index = iid_chain(PROBS, 3, 1500, rng)
    labels = STATES[index]
    alpha = rng.gamma(2.0, 1.0, index.shape)
    n_clusters = labels.max(axis=-1) + 1
    n = STATES.shape[1]
    logp = np.log(PROBS)[index] + (n_clusters - 1) * np.log(alpha) + gammaln(alpha) - gammaln(alpha + n)
    hier = from_dict(
        {
            "posterior": {"z": labels, "alpha": alpha},
            "sample_stats": {"partition_logp": logp, "n_clusters": n_clusters},
        },
        dims={"z": ["z_dim_0"]},
    )
    plain = from_dict({"posterior": {"z": labels}}, dims={"z": ["z_dim_0"]})
    return hier, plain, logp


@pytest.fixture(scope="module")
def draws():
    return _draws()


def test_reduced_draws_keep_the_log_posterior_per_draw_only(draws):
    hier, _, logp = draws
    pd = load_partition(hier, "z")
    assert pd.logp is None and pd.logp_spread > 0.1
    np.testing.assert_array_equal(pd.logp_draws, logp)
    with pytest.raises(ValueError, match=REFUSAL):
        pd.require_logp("something")


def test_coclustering_and_estimates_equal_those_without_a_log_posterior(draws):
    hier, plain, _ = draws
    with pytest.warns(SampledHyperparametersWarning, match="differs between draws of the same partition"):
        cc = arviz_regen.coclustering(hier, "z")
    ref = arviz_regen.coclustering(plain, "z", se_method="batch_means")
    assert cc.attrs["se_method"] == "batch_means"
    xr.testing.assert_allclose(cc[["rho", "se"]], ref[["rho", "se"]], rtol=0, atol=0)
    # explicitly batch means: no warning (the same rule as for rare recurrence)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", SampledHyperparametersWarning)
        arviz_regen.coclustering(hier, "z", se_method="batch_means")

    def n_clusters(labels):  # (states, items) -> one value per state
        return labels.max(axis=1) + 1

    with pytest.warns(SampledHyperparametersWarning):
        est = arviz_regen.rs_estimate(hier, n_clusters, var_names="z")
    ref = arviz_regen.rs_estimate(plain, n_clusters, var_names="z", se_method="batch_means")
    np.testing.assert_array_equal(est["estimate"].values, ref["estimate"].values)
    np.testing.assert_array_equal(est["se"].values, ref["se"].values)


def test_point_estimates_credible_balls_and_consensus_take_the_draws(draws):
    hier, plain, _ = draws
    est = arviz_regen.point_estimate(hier, "z", random_seed=0)
    np.testing.assert_array_equal(
        est["labels"].values, arviz_regen.point_estimate(plain, "z", random_seed=0)["labels"].values
    )
    ball = arviz_regen.credible_ball(hier, est["labels"].values, "z")
    ref = arviz_regen.credible_ball(plain, est["labels"].values, "z")
    xr.testing.assert_equal(ball, ref)
    with pytest.warns(SampledHyperparametersWarning):  # from its co-clustering estimate
        cons = arviz_regen.consensus(hier, "z")
    np.testing.assert_array_equal(cons.labels, arviz_regen.consensus(plain, "z", se_method="batch_means").labels)


def test_traces_carry_the_log_posterior_of_each_draw(draws):
    hier, plain, logp = draws
    tr = arviz_regen.partition_traces(hier, "z")
    np.testing.assert_array_equal(tr["partition_logp"].values, logp)
    ref = arviz_regen.partition_traces(plain, "z")
    xr.testing.assert_equal(tr.drop_vars("partition_logp"), ref)


def test_plots_take_the_draws(draws):
    hier, _, _ = draws
    ax = arviz_regen.plot_point_estimate(hier, "z", random_seed=0, n_runs=2)
    assert ax.images and ax.images[0].get_array().shape == (7, 7)
    with pytest.warns(SampledHyperparametersWarning):
        ax = arviz_regen.plot_coclustering(hier, "z")
    assert ax.images
    import matplotlib.pyplot as plt

    plt.close("all")


def test_what_needs_a_fixed_target_refuses_and_says_why(draws):
    hier, _, _ = draws
    with pytest.raises(ValueError, match="hotelling_rs " + REFUSAL):
        arviz_regen.hotelling_rs(hier, "z", k=2, method="chi2")
    with pytest.raises(ValueError, match=REFUSAL):
        arviz_regen.top_states(hier, "z")
    with pytest.raises(ValueError, match=REFUSAL):
        arviz_regen.rs_estimate(hier, lambda lab: lab.max(axis=1), var_names="z", se_method="regenerative")
    with pytest.raises(ValueError, match=REFUSAL):
        arviz_regen.coclustering(hier, "z", regeneration="logp")
    with pytest.raises(ValueError, match=REFUSAL):
        arviz_regen.when_converged(hier, "z")


def test_summary_decides_by_chain_agreement_without_hotelling_rows(draws, tmp_path, capsys):
    hier, _, _ = draws
    with pytest.warns(SampledHyperparametersWarning, match="No Hotelling-RS test: hyperparameters were sampled"):
        table = arviz_regen.regen_summary(hier, "z", n_permutations=99)
    assert "chain_agreement" in table.index
    assert not any(str(r).startswith("hotelling_rs") for r in table.index)
    assert {"n_clusters", "partition_logp", "vi_ref0"} <= set(table.index)
    assert table.attrs["decided_by"] == "chain_agreement"
    assert "hyperparameters were sampled alongside" in table.attrs["verdict"]
    # the verdict is the chain-agreement test's on these draws, traces with the per-draw logp
    agree = arviz_regen.chain_agreement(hier, "z", n_permutations=99, random_seed=0)
    p = float(agree["p_value_all"])
    assert table.loc["chain_agreement", "p_value_all"] == pytest.approx(p)
    assert (table.attrs["verdict_status"] == "FAIL") == (p < 0.05)
    path = str(tmp_path / "hier.nc")
    hier.to_netcdf(path)
    status = main([path, "--var-name", "z", "--n-permutations", "99", "--fail-below", "0.05"])
    out = capsys.readouterr().out
    assert status != EXIT_ERROR and "decided by chain_agreement: hyperparameters were sampled" in out


def test_pymc_draws_with_a_random_concentration():
    """Real hierarchical draws: 5 items, DirichletProcess(alpha ~ Gamma(2, 1)), NUTS + Gibbs."""
    pm = pytest.importorskip("pymc")
    import pymc_partition as pmp

    y = np.array([[1, 0, 1], [1, 1, 1], [0, 0, 1], [0, 1, 0], [1, 1, 0]], dtype=float)
    with pm.Model():
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", n_items=5, prior=pmp.DirichletProcess(alpha=alpha))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.BetaBernoulli(1.0, 1.0), observed=y)
        idata = pm.sample(draws=300, tune=200, chains=2, cores=1, random_seed=3, progressbar=False,
                          compute_convergence_checks=False)  # fmt: skip
    pd = load_partition(idata, "z")
    assert pd.logp_spread is not None  # 52 partitions, 600 draws: they repeat at other alphas
    est = arviz_regen.point_estimate(idata, "z", random_seed=0)
    arviz_regen.credible_ball(idata, est["labels"].values, var_names="z")
    with pytest.warns(SampledHyperparametersWarning):
        cc = arviz_regen.coclustering(idata, "z")
    labels = get_group(idata, "posterior")["z"].values
    same = (labels[..., :, None] == labels[..., None, :]).mean(axis=1)  # per chain, all draws
    np.testing.assert_allclose(cc["rho"].values, same, atol=1e-12)
    arviz_regen.plot_point_estimate(idata, "z", estimate=est)
    with pytest.raises(ValueError, match=REFUSAL):
        arviz_regen.hotelling_rs(idata, "z")
    with pytest.warns(SampledHyperparametersWarning):
        table = arviz_regen.regen_summary(idata, "z", n_permutations=99)
    assert table.attrs["decided_by"] == "chain_agreement" and "chain_agreement" in table.index
    import matplotlib.pyplot as plt

    plt.close("all")
