"""Per-draw terms of the conditional (discrete Stein) check: the kernel against brute force, the
mean-zero identity exactly over all partitions, random hyperparameters, the group it adds, and
the check catching a wrong target (with ``arviz_regen.conditional_check``)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import arviz_regen
import pymc_partition as pmp
from arviz_regen.base.autocorrelation import integrated_time
from arviz_regen.xr.containers import from_dict, get_group, group_names
from arviz_regen.xr.io import open_inference_data, save_inference_data
from pymc_partition.engine import MoveMix, PartitionKernel
from pymc_partition.engine.kernels.conditional import CHECK_NAMES, check_function_values, conditional_terms
from pymc_partition.exact import ExactPosterior
from pymc_partition.predictive._types import quiet_compile
from pymc_partition.spec import PartitionSpec
from pymc_partition.state import canonicalize

RNG = np.random.default_rng(3)
Y = np.r_[RNG.normal(-2.0, 1.0, 3), RNG.normal(2.0, 1.0, 4)]
NIG = {"mu0": 0.0, "kappa0": 0.1, "alpha0": 2.0, "beta0": 2.0}
GIBBS = MoveMix(1, 0, 0, 0.0, 1)


def _spec(y=Y, alpha=1.0, family=None):
    family = family or pmp.NormalInverseGamma(**NIG)
    return PartitionSpec.from_data(pmp.DirichletProcess(alpha), family, y)


def _terms(spec, labels, partners=None, bounds=None, u=None):
    """The kernel's terms: all items (default) or one per stratum ``bounds`` chosen by ``u``."""
    n = spec.n_items
    partners = (np.arange(n, dtype=np.int64) + 1) % n if partners is None else partners
    bounds = np.arange(n + 1, dtype=np.int64) if bounds is None else bounds
    u = np.empty((labels.shape[0], 0)) if u is None else u
    m, s, w = PartitionKernel.from_spec(spec, GIBBS).bundles
    out = np.empty((labels.shape[0], len(CHECK_NAMES)))
    with quiet_compile():
        conditional_terms(np.ascontiguousarray(labels, dtype=np.int64), bounds, u,
                          partners, m, s, w, out)  # fmt: skip
    return out


def _brute_force(spec, labels, partners):
    """``(S, n, 4)``: each item moved to every candidate, scored by the spec's log posterior."""
    out = np.zeros((labels.shape[0], labels.shape[1], 4))
    for t, c in enumerate(labels):
        for i, j in enumerate(partners):
            rest = np.unique(np.delete(c, i))
            ks = list(rest) + [c.max() + 1]
            moved = np.repeat(c[None], len(ks), axis=0)
            moved[:, i] = ks
            lp = spec.log_posterior(canonicalize(moved))
            p = np.exp(lp - lp.max())
            p /= p.sum()
            o = ks.index(c[i]) if c[i] in rest else len(ks) - 1
            fs = [
                np.array([np.unique(x).size for x in moved]),
                np.array([(np.bincount(x) ** 2).sum() / 2 for x in moved]),
                (moved[:, i] == moved[:, j]).astype(float),
                lp,
            ]
            out[t, i] = [p @ f - f[o] for f in fs]
    return out


def test_kernel_matches_brute_force():
    labels = canonicalize(RNG.integers(0, 4, (12, Y.size)))
    partners = np.array([5, 0, 4, 1, 6, 2, 3], dtype=np.int64)
    spec = _spec()
    each = _brute_force(spec, labels, partners)
    np.testing.assert_allclose(_terms(spec, labels, partners), each.mean(axis=1), atol=1e-10)
    # one item of each stratum [0, 3), [3, 7), weighted by the strata's sizes
    u = RNG.random((labels.shape[0], 2))
    i, j = (3 * u[:, 0]).astype(int), 3 + (4 * u[:, 1]).astype(int)
    rows = np.arange(labels.shape[0])
    want = (3 * each[rows, i] + 4 * each[rows, j]) / 7
    got = _terms(spec, labels, partners, np.array([0, 3, 7]), u)
    np.testing.assert_allclose(got, want, atol=1e-10)


def test_test_function_values():
    """The test functions the terms follow (for ``check_tau``): number of clusters, sum of squared
    sizes / 2, items sharing their partner's cluster, the spec's log posterior (up to a constant)."""
    labels = canonicalize(RNG.integers(0, 4, (12, Y.size)))
    partners = np.array([5, 0, 4, 1, 6, 2, 3], dtype=np.int64)
    spec = _spec()
    m, s, _w = PartitionKernel.from_spec(spec, GIBBS).bundles
    out = np.empty((labels.shape[0], 4))
    check_function_values(np.ascontiguousarray(labels, dtype=np.int64), partners, m, s, out)
    np.testing.assert_array_equal(out[:, 0], labels.max(axis=1) + 1)
    np.testing.assert_array_equal(out[:, 1], [(np.bincount(c) ** 2).sum() / 2 for c in labels])
    np.testing.assert_array_equal(out[:, 2], (labels == labels[:, partners]).sum(axis=1))
    diff = out[:, 3] - spec.log_posterior(labels)
    assert np.ptp(diff) < 1e-10


def test_subsampled_terms_are_unbiased():
    """Averaged over every choice of one item per stratum, the subsampled terms are the mean over
    all items, label vector by label vector (so their mean under any law is the full one's)."""
    labels = canonicalize(RNG.integers(0, 4, (5, Y.size)))
    spec = _spec()
    bounds = np.array([0, 2, 3, 7])  # strata of 2, 1 and 4 items: 8 choices
    picks = np.array([[a, 2, b] for a in range(2) for b in range(3, 7)])
    u = (picks - bounds[:-1] + 0.5) / np.diff(bounds)  # the uniforms that pick them
    sub = np.stack([_terms(spec, labels, bounds=bounds, u=np.tile(q, (labels.shape[0], 1)))
                    for q in u])  # fmt: skip
    np.testing.assert_allclose(sub.mean(axis=0), _terms(spec, labels), atol=1e-12)
    assert np.ptp(sub, axis=0).max() > 1e-3  # the choice matters draw by draw


@pytest.mark.parametrize("family", [pmp.NormalInverseGamma(**NIG), pmp.BetaBernoulli(1.0, 2.0)])
def test_mean_zero_over_all_partitions(family):
    """E_pi[(A_i f)(c)] = 0 exactly: the terms weighted by the exact posterior over all B(6)."""
    y = Y[:6] if isinstance(family, pmp.NormalInverseGamma) else (Y[:6] > 0).astype(float)
    spec = _spec(y, alpha=0.7, family=family)
    ex = ExactPosterior(spec, progressbar=False)
    states, probs = ex.top(ex.n_states)
    terms = _terms(spec, states)
    scale = np.abs(terms).max(axis=0)
    assert np.all(scale > 1e-3)  # the identity is not trivially zero state by state
    np.testing.assert_allclose(probs @ terms, 0.0, atol=1e-10)
    # ... and not under another posterior (alpha off): the check has something to see
    wrong = ExactPosterior(_spec(y, alpha=1.4, family=family), progressbar=False)
    w_states, w_probs = wrong.top(wrong.n_states)
    assert abs(w_probs @ _terms(spec, w_states)[:, 0]) > 1e-3


def _model(alpha, y=Y):
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=y.size, prior=pmp.DirichletProcess(alpha))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.NormalInverseGamma(**NIG), observed=y)
    return model


def test_group_and_chunks():
    labels = RNG.integers(0, 3, (2, 300, Y.size))
    idata = from_dict({"posterior": {"z": labels}})
    model = _model(1.0)
    out = pmp.compute_conditional_checks(idata, model=model)
    assert out is idata and "conditional_checks" in group_names(idata)
    da = get_group(idata, "conditional_checks")["z"]
    assert da.dims == ("chain", "draw", "check") and list(da.coords["check"].values) == list(CHECK_NAMES)
    # the same partners as compute_conditional_checks (seed 0): chunking changes nothing
    n = Y.size
    rng = np.random.default_rng(0)
    partners = ((np.arange(n) + 1 + rng.integers(0, n - 1, n)) % n).astype(np.int64)
    full = pmp.compute_conditional_checks(idata, model=model, items=None, extend_inferencedata=False)
    direct = _terms(_spec(), canonicalize(labels.reshape(-1, n)), partners)
    np.testing.assert_allclose(full["z"].values.reshape(-1, 4), direct, atol=1e-12)
    # the default: one item of each of ceil(n / 2) strata, drawn afresh per draw after the partners
    bounds = np.arange(5) * n // 4
    u = rng.random((labels.shape[0] * labels.shape[1], 4))
    half = _terms(_spec(), canonicalize(labels.reshape(-1, n)), partners, bounds, u)
    np.testing.assert_allclose(da.values.reshape(-1, 4), half, atol=1e-12)
    assert da.attrs["items_per_draw"] == 4
    # each test function's integrated time, the mean over chains (NaN: constant in every chain)
    f = np.empty((labels.shape[0] * labels.shape[1], 4))
    m, s, _w = PartitionKernel.from_spec(_spec(), GIBBS).bundles
    check_function_values(canonicalize(labels.reshape(-1, n)).astype(np.int64), partners, m, s, f)
    want = np.nanmean(integrated_time(np.moveaxis(f.reshape(2, 300, 4), 1, 2)), axis=0)
    np.testing.assert_allclose(da.attrs["check_tau"], want, rtol=1e-12)
    # the combination the test applies: log_post less its regression on the others, beside n_clusters
    assert da.attrs["adjusted_check"] == "log_post" and da.attrs["raw_checks"] == "n_clusters"
    assert da.attrs["min_batches"] == 8
    res = arviz_regen.conditional_check(idata)["z"]
    assert res.attrs["combination"] == "adjusted" and res.attrs["raw_checks"] == "n_clusters"
    # log_post's coefficients on the three other checks (NaN at log_post itself and at all)
    assert np.isnan(res.attrs["beta"]).tolist() == [False, False, False, True, True]
    thinned = pmp.compute_conditional_checks(idata, model=model, thin=3, items=2, extend_inferencedata=False)
    assert thinned["z"].shape == (2, 100, 4) and thinned["z"].attrs["items_per_draw"] == 2
    # random_seed, as every public function; `seed` still works for a release (same partners)
    short = {"posterior": {"z": labels[:, :20]}}
    new = pmp.compute_conditional_checks(from_dict(short), model=model, items=4, random_seed=5,
                                         extend_inferencedata=False)  # fmt: skip
    with pytest.warns(DeprecationWarning, match="`seed` is deprecated"):
        old = pmp.compute_conditional_checks(from_dict(short), model=model, items=4, seed=5,
                                             extend_inferencedata=False)  # fmt: skip
    np.testing.assert_array_equal(new["z"].values, old["z"].values)
    assert new["z"].attrs["seed"] == 5
    other = pmp.compute_conditional_checks(from_dict(short), model=model, items=4, random_seed=np.random.default_rng(5),
                                           extend_inferencedata=False)  # fmt: skip
    np.testing.assert_array_equal(other["z"].values, new["z"].values)


def test_random_hyperparameters_use_each_draw():
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        scale = pm.HalfNormal("scale", 2.0)
        z = pmp.Partition("z", n_items=Y.size, prior=pmp.DirichletProcess(alpha))
        pmp.MarginalLikelihood("y", partition=z, observed=Y,
                               family=pmp.NormalInverseGamma(0.0, 0.1, 2.0, scale))  # fmt: skip
    labels = RNG.integers(0, 3, (1, 3, Y.size))
    alphas, scales = np.array([[0.5, 2.0, 5.0]]), np.array([[1.0, 0.3, 3.0]])
    idata = from_dict({"posterior": {"z": labels, "alpha": alphas, "scale": scales}})
    got = pmp.compute_conditional_checks(idata, model=model, items=None, extend_inferencedata=False)["z"].values[0]
    n = Y.size
    rng = np.random.default_rng(0)
    partners = ((np.arange(n) + 1 + rng.integers(0, n - 1, n)) % n).astype(np.int64)
    for t in range(3):
        fam = pmp.NormalInverseGamma(0.0, 0.1, 2.0, scales[0, t])
        want = _terms(_spec(alpha=alphas[0, t], family=fam), canonicalize(labels[0, t : t + 1]), partners)
        np.testing.assert_allclose(got[t], want[0], atol=1e-10)
    bad = from_dict({"posterior": {"z": labels, "alpha": alphas}})
    with pytest.raises(ValueError, match="scale"):
        pmp.compute_conditional_checks(bad, model=model, hyperparameters=False)


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_terms_saved_with_the_draws(suffix, tmp_path):
    """The terms' attributes survive the draws saved by their container's own writer (InferenceData's
    or DataTree's ``to_netcdf`` / ``to_zarr``): the check reads them back to the same result, which
    saves too. A 128-bit seed (numpy's advice) is kept as a string, which netCDF holds."""
    labels = np.random.default_rng(4).integers(0, 3, (2, 300, Y.size))
    seed = 2**100 + 7
    idata = pmp.compute_conditional_checks(from_dict({"posterior": {"z": labels}}), model=_model(1.0), random_seed=seed)
    here = arviz_regen.conditional_check(idata)
    back = open_inference_data(save_inference_data(idata, tmp_path / f"draws{suffix}"))
    terms = get_group(back, "conditional_checks")["z"]
    assert terms.attrs["raw_checks"] == "n_clusters" and terms.attrs["min_batches"] == 8
    assert terms.attrs["seed"] == str(seed)
    xr.testing.assert_identical(arviz_regen.conditional_check(back), here)
    here.to_netcdf(tmp_path / "check.nc")
    xr.testing.assert_identical(xr.load_dataset(tmp_path / "check.nc")["z"].drop_attrs(), here["z"].drop_attrs())


def test_errors():
    model = _model(1.0)
    with pytest.raises(TypeError, match="InferenceData"):
        pmp.compute_conditional_checks({"z": 1}, model=model)
    idata = from_dict({"posterior": {"z": RNG.integers(0, 3, (1, 5, Y.size + 1))}})
    with pytest.raises(ValueError, match="items"):
        pmp.compute_conditional_checks(idata, model=model)
    idata = from_dict({"posterior": {"w": RNG.integers(0, 3, (1, 5, Y.size))}})
    with pytest.raises(ValueError, match="no draws"):
        pmp.compute_conditional_checks(idata, model=model)
    idata = from_dict({"posterior": {"z": RNG.integers(0, 3, (1, 5, Y.size))}})
    with pytest.raises(ValueError, match="thin"):
        pmp.compute_conditional_checks(idata, model=model, thin=0)
    for bad_items in (0, 0.0, 1.5, True, "half"):
        with pytest.raises(ValueError, match="items"):
            pmp.compute_conditional_checks(idata, model=model, items=bad_items)


def _gibbs(spec, n_chains, n_draws, seed, n_burn=100):
    kernel = PartitionKernel.from_spec(spec, GIBBS)
    rng = np.random.default_rng(seed)
    out = np.empty((n_chains, n_draws, spec.n_items), np.int64)
    for c in range(n_chains):
        state = kernel.init(rng.integers(0, 3, spec.n_items))
        for t in range(n_burn + n_draws):
            state, _ = kernel.step(state, rng)
            if t >= n_burn:
                out[c, t - n_burn] = state
    return out


def test_catches_wrong_target_passes_right_one():
    """60 items, 4 x 500 Gibbs draws: DP(1.5) draws fail the DP(1) check, DP(1) draws pass.

    At the benchmark's 50 items the alpha-off-by-30 % design rejects in every run and the right
    model in about 5 % (benchmarks/bench_conditional_check.py): seeds fixed, one run each."""
    y = np.sort(np.repeat([-4.0, 0.0, 4.0], 20)) + np.random.default_rng(1).normal(0, 1, 60)
    right = _model(1.0, y)
    p = {}
    for name, alpha in [("right", 1.0), ("wrong", 1.5)]:
        labels = _gibbs(_spec(y, alpha=alpha), 4, 500, seed=11)
        idata = from_dict({"posterior": {"z": labels}})
        pmp.compute_conditional_checks(idata, model=right)
        p[name] = float(arviz_regen.conditional_check(idata)["z"].sel(check="all"))
    assert p["right"] > 0.05
    assert p["wrong"] < 1e-3


def _alpha_given_clusters(rng, n_clusters, n_items, rate):
    """Exact draws of a DP alpha with a Gamma(2, rate) prior given each number of clusters (grid)."""
    from scipy.special import gammaln

    grid = np.linspace(1e-4, 40.0, 20001)
    out = np.empty(n_clusters.shape)
    for c in np.unique(n_clusters):
        logp = np.log(grid) * (1.0 + c) - rate * grid + gammaln(grid) - gammaln(grid + n_items)
        cdf = np.cumsum(np.exp(logp - logp.max()))
        at = n_clusters == c
        out[at] = np.interp(rng.random(at.sum()) * cdf[-1], cdf, grid)
    return out


def test_langevin_check_of_hyperparameters():
    """Alpha drawn from its exact conditional passes the Langevin check; from the conditional
    with the Gamma prior's rate halved (a wrong Escobar-West update) it fails, while the
    partition's conditionals at each draw's alpha cannot see it."""
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", n_items=Y.size, prior=pmp.DirichletProcess(alpha))
        pmp.MarginalLikelihood("y", partition=z, family=pmp.NormalInverseGamma(**NIG), observed=Y)
    rng = np.random.default_rng(8)
    labels = canonicalize(rng.integers(0, rng.integers(1, 6, (4, 400, 1)), (4, 400, Y.size)))
    k = labels.max(axis=-1) + 1
    p = {}
    for name, rate in [("right", 1.0), ("wrong", 0.5)]:
        alphas = _alpha_given_clusters(rng, k, Y.size, rate)
        idata = from_dict({"posterior": {"z": labels, "alpha": alphas}})
        pmp.compute_conditional_checks(idata, model=model, items=2)
        res = arviz_regen.conditional_check(idata)
        assert list(res["hyperparameters"].coords["hyper_check"].values) == [
            "score[alpha]",
            "score_u[alpha]",
            "all",
        ]
        p[name] = float(res["hyperparameters"].sel(hyper_check="all"))
        # the partition's checks combined with the adjustment, the Langevin block by its own test
        assert res["z"].attrs["combination"] == "adjusted"
        assert res["hyperparameters"].attrs["combination"] == "hotelling"
        assert "note" not in res["hyperparameters"].attrs
        # the state's time travels with the terms (independent draws here: about one draw)
        group = idata["conditional_checks"]
        assert all(0.3 < group[v].attrs["state_tau"] < 3.0 for v in ("z", "hyperparameters"))
        # ... and each test function's, at each draw's alpha (log_post reads it)
        assert len(group["z"].attrs["check_tau"]) == 4 and np.all(np.array(group["z"].attrs["check_tau"]) < 3.0)
    assert p["right"] > 0.01
    assert p["wrong"] < 1e-4


@pytest.mark.parametrize("half", [False, True])
def test_standard_error_matches_exact_variance(half):
    """On independent exact draws the test's Monte Carlo standard error of every check (the
    partner's too) is the exact sd of the terms over sqrt(draws), within batch-means noise
    (about 4 % on the sd with ~280 batches; the tolerance is 20 %); with half the items the
    exact variance adds the spread over each draw's choice of items."""
    from arviz_regen.base.conditional import conditional_test

    spec = _spec()
    ex = ExactPosterior(spec, progressbar=False)
    states, probs = ex.top(ex.n_states)
    probs = probs / probs.sum()
    n = Y.size
    partners = ((np.arange(n) + 1 + np.random.default_rng(0).integers(0, n - 1, n)) % n).astype(np.int64)
    rng = np.random.default_rng(5)
    index = rng.choice(probs.size, size=(4, 5000), p=probs)
    if half:
        bounds = np.array([0, 1, 3, 5, 7])
        picks = np.array([[0, a, b, c] for a in (1, 2) for b in (3, 4) for c in (5, 6)])
        each = np.stack([_terms(spec, states, partners, bounds,
                                np.tile((q - bounds[:-1] + 0.5) / np.diff(bounds), (len(states), 1)))
                         for q in picks])  # fmt: skip
        var = probs @ (each**2).mean(axis=0) - (probs @ each.mean(axis=0)) ** 2
        draws = each[rng.integers(0, len(picks), index.shape), index]
    else:
        terms = _terms(spec, states, partners)
        var = probs @ terms**2 - (probs @ terms) ** 2
        draws = terms[index]
    res = conditional_test(draws)
    want = np.sqrt(var / index.size)
    np.testing.assert_allclose(res.mcse, want, rtol=0.2)
