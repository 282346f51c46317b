"""Predictive forms against the families' pytensor graphs (the definition).

Every specialised form must give ``lm(S + x_i) - lm(S)``, the difference of the compiled graph's
log marginals, to 1e-10 on random inputs: hyperparameters, data, cluster sizes and (where the form
covers them) items with several rows are drawn at random. A form's cache is also followed along
long random sequences of additions and removals (NIW: rank-one updates and downdates across its
periodic rebuild) against a cache rebuilt from the summed statistics.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest

import pymc_partition as pmp
from pymc_partition.predictive import FormMismatch, check_form, graph_form
from pymc_partition.predictive._types import call_pred, make_context
from pymc_partition.predictive.normal_inverse_wishart import REFRESH
from pymc_partition.step_methods import GibbsPartition, SplitMerge

TOL = 1e-10


def _spd(rng, v):
    a = rng.normal(size=(v, v))
    return a @ a.T + v * np.eye(v)


def _rows(rng, n, replicates):
    """Item index of the data rows: one row per item, or 1-3 rows per item (shuffled)."""
    if not replicates:
        return None
    return rng.permutation(np.repeat(np.arange(n), rng.integers(1, 4, n)))


def random_case(kind, rng, n=30):
    """A family with random hyperparameters and matching random data (values, item_index)."""
    rep = kind.endswith("_rep")
    base = kind.removesuffix("_rep")
    if base == "nig":
        V = int(rng.integers(1, 4))
        fam = pmp.NormalInverseGamma(
            mu0=rng.normal(size=V), kappa0=rng.uniform(0.1, 3, V),
            alpha0=rng.uniform(0.5, 4, V), beta0=rng.uniform(0.2, 3, V),
        )  # fmt: skip
        idx = _rows(rng, n, rep)
        m = n if idx is None else idx.size
        return fam, rng.normal(rng.normal(size=V), rng.uniform(0.3, 3, V), (m, V)), idx
    if base == "niw":
        V = int(rng.integers(1, 6))
        fam = pmp.NormalInverseWishart(
            mu0=rng.normal(size=V), kappa0=rng.uniform(0.1, 3), nu0=V - 1 + rng.uniform(0.5, 4),
            psi0=_spd(rng, V),
        )  # fmt: skip
        return fam, rng.multivariate_normal(rng.normal(size=V), _spd(rng, V) / V, n), None
    if base == "spike":
        V = int(rng.integers(1, 8))
        fam = pmp.SpikeSlabNormal(
            mu=rng.normal(), sigma2=rng.uniform(0.1, 1), sigma2_eta=rng.uniform(0.1, 1),
            sigma2_theta=rng.uniform(0.5, 10), p=rng.uniform(0.01, 0.9),
        )  # fmt: skip
        idx = np.repeat(np.arange(n), rng.integers(1, 5, n))
        return fam, rng.normal(0, 2, (idx.size, V)), idx
    if base == "bernoulli":
        V = int(rng.integers(1, 6))
        fam = pmp.BetaBernoulli(a=rng.uniform(0.2, 3, V), b=rng.uniform(0.2, 3, V))
        idx = _rows(rng, n, rep)
        m = n if idx is None else idx.size
        return fam, (rng.random((m, V)) < rng.random(V)).astype(float), idx
    if base == "categorical":
        K, V = int(rng.integers(2, 5)), int(rng.integers(1, 4))
        fam = pmp.DirichletCategorical(alpha=rng.uniform(0.2, 3, K))
        return fam, rng.integers(0, K, (n, V)), None
    if base == "poisson":
        V = int(rng.integers(1, 4))
        fam = pmp.GammaPoisson(a=rng.uniform(0.5, 4, V), b=rng.uniform(0.2, 3, V))
        idx = _rows(rng, n, rep)
        m = n if idx is None else idx.size
        return fam, rng.poisson(rng.uniform(0.5, 6, V), (m, V)), idx
    raise ValueError(kind)


KINDS = ["nig", "nig_rep", "niw", "spike", "bernoulli", "bernoulli_rep", "categorical",
         "poisson", "poisson_rep"]  # fmt: skip


class Harness:
    """One form and a few slots of state, as the kernels hold them, beside the family's graph.

    The graph is evaluated by pytensor's Python backend (``FAST_COMPILE``): the same graph, an
    independent implementation of its ops, and no compilation per random family.
    """

    def __init__(self, fam, X, form):
        self.X, self.form = X, form
        s = pt.matrix("s")
        self.graph = pytensor.function([s], fam.log_marginal(s), mode="FAST_COMPILE")
        self.stats = np.zeros((4, X.shape[1]))
        self.cache = np.zeros((4, form.cache_width))
        no_lm = np.zeros(2, np.int64)  # specialised forms never call the compiled graph
        self.ctx = make_context(form.params, self.stats, self.cache, form.aux, no_lm)
        self._slots, self._out = np.zeros(1, np.int64), np.zeros(1)
        self._pred = call_pred(form.pred, self.ctx, self._slots, self._out)

    def pred(self, c, i):
        self._slots[0] = c
        self._pred(i)
        return self._out[0]

    def set(self, c, items):
        self.stats[c] = self.X[list(items)].sum(axis=0)
        self.form.init(self.ctx, c)

    def remove(self, c, i):
        self.stats[c] -= self.X[i]
        return self.form.remove(self.ctx, c, i)

    def add(self, c, i, lp):
        self.stats[c] += self.X[i]
        self.form.add(self.ctx, c, i, lp)

    def want(self, items, i):
        S = self.X[list(items)].sum(axis=0)
        lm_s, lm_si = self.graph(np.stack([S, S + self.X[i]]))
        return lm_si - lm_s


@pytest.mark.parametrize("kind", KINDS)
def test_form_equals_graph_difference(kind):
    """pred, remove, add and init against lm(S + x_i) - lm(S) from the graph, to 1e-10."""
    rng = np.random.default_rng(abs(hash(kind)) % 2**32)
    worst = 0.0
    for _ in range(4):  # hyperparameters and data
        fam, y, idx = random_case(kind, rng)
        X = fam.item_stats(y, idx)
        form = fam.predictive_form(X)
        assert form is not None, f"{kind}: the form declined data it covers"
        h = Harness(fam, X, form)
        n = X.shape[0]
        for _ in range(15):  # clusters
            size = int(rng.integers(1, 20))
            perm = rng.permutation(n)
            members, i, j = list(perm[:size]), perm[size], perm[size + 1]
            want = h.want(members, i)
            h.set(0, members)
            worst = max(worst, abs(h.pred(0, i) - want))
            h.set(1, members + [i, j])
            h.remove(1, j)
            lp = h.remove(1, i)  # cluster back to `members`
            worst = max(worst, abs(lp - want))
            h.add(1, i, lp)
            worst = max(worst, abs(h.pred(1, j) - h.want(members + [i], j)))
    assert worst <= TOL, f"{kind}: largest |form - graph| = {worst:.2e}"


@pytest.mark.parametrize("V", [2, 5])
def test_niw_cache_along_long_update_sequences(V):
    """Many rank-one updates and downdates (across rebuilds) keep the predictive exact."""
    rng = np.random.default_rng(V)
    fam = pmp.NormalInverseWishart(mu0=np.zeros(V), kappa0=0.5, nu0=V + 1.0, psi0=_spd(rng, V))
    y = rng.multivariate_normal(np.zeros(V), _spd(rng, V), 60)
    X = fam.item_stats(y)
    h = Harness(fam, X, fam.predictive_form(X))
    inside = set(range(10))
    h.set(0, inside)
    worst = 0.0
    for _ in range(5 * REFRESH):
        probe = int(rng.integers(0, 60))
        if probe in inside and len(inside) > 1:
            h.remove(0, probe)
            inside.remove(probe)
        elif probe not in inside:
            h.add(0, probe, 0.0)
            inside.add(probe)
        out = next(k for k in range(60) if k not in inside)
        worst = max(worst, abs(h.pred(0, out) - h.want(sorted(inside), out)))
    assert worst <= TOL


@pytest.mark.parametrize(
    "fam,y,idx",
    [
        (pmp.NormalInverseWishart(np.zeros(2), 1.0, 3.0, np.eye(2)), np.ones((6, 2)),
         np.repeat(np.arange(3), 2)),
        (pmp.DirichletCategorical(1.0, n_categories=3), np.zeros((6, 2)), np.repeat(np.arange(3), 2)),
    ],
)  # fmt: skip
def test_forms_decline_items_with_several_rows(fam, y, idx):
    assert fam.predictive_form(fam.item_stats(y, idx)) is None


def _nig_model(fam, n=40, seed=0):
    y = np.random.default_rng(seed).normal(0, 2, (n, 2))
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=pmp.DirichletProcess(1.0))
        pmp.MarginalLikelihood("y", partition=z, family=fam, observed=y)
    return model


class _ShiftedNIG(pmp.NormalInverseGamma):
    """A subclass changing the formula but inheriting the form: the graph must win."""

    def log_marginal(self, stats):
        return super().log_marginal(stats) + 0.1 * pt.as_tensor_variable(stats)[..., 0] ** 2


def test_step_uses_form_and_falls_back_when_it_disagrees():
    with _nig_model(pmp.NormalInverseGamma(0.0, 0.5, 2.0, 1.0)) as model:
        assert GibbsPartition([model["z"]]).predictive_form.name == "NormalInverseGamma"
        assert SplitMerge([model["z"]], specialize=False).predictive_form.name == "graph"
    with _nig_model(_ShiftedNIG(0.0, 0.5, 2.0, 1.0)) as model:
        with pytest.warns(RuntimeWarning, match="disagrees with the family's pytensor graph"):
            step = GibbsPartition([model["z"]])
    assert step.predictive_form.name == "graph"
    engine = step.engine
    form = step.family.predictive_form(engine.item_stats)
    with pytest.raises(FormMismatch):
        check_form(form, engine.log_marginal, engine.item_stats)
    assert check_form(graph_form(engine.item_stats), engine.log_marginal, engine.item_stats) <= 1e-12


def test_specialize_must_be_a_bool():
    with _nig_model(pmp.NormalInverseGamma()) as model:
        with pytest.raises(TypeError, match="specialize"):
            GibbsPartition([model["z"]], specialize="yes")


def test_both_forms_sample_the_same_chain_statistics():
    """Same seed, specialised and graph forms: the same draws (rounding never tips a draw here)."""
    draws = {}
    for spec in (True, False):
        with _nig_model(pmp.NormalInverseGamma(0.0, 0.5, 2.0, 1.0), n=25) as model:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata = pm.sample(draws=50, tune=0, chains=1, cores=1, random_seed=3,
                                  step=SplitMerge([model["z"]], specialize=spec),
                                  progressbar=False, compute_convergence_checks=False)  # fmt: skip
        draws[spec] = idata.posterior["z"].values
    np.testing.assert_array_equal(draws[True], draws[False])


def test_vectorisable_exponential_within_one_ulp():
    import numba

    from pymc_partition.predictive._exp import exp_nonpositive

    @numba.njit
    def many(x):
        out = np.empty_like(x)
        for k in range(x.size):
            out[k] = exp_nonpositive(x[k])
        return out

    rng = np.random.default_rng(0)
    x = -np.concatenate([np.linspace(0.0, 708.0, 200_001), rng.exponential(3.0, 100_000),
                         np.abs(rng.normal(0.0, 1e-6, 1000)), [0.0, 5e-324, 1e-300]])  # fmt: skip
    got, want = many(x), np.exp(x)
    assert np.max(np.abs(got - want) / np.spacing(want)) <= 1.0
    clamped = many(np.array([-800.0, -1e308]))  # the floor e^-708, what the callers need
    assert np.all(np.abs(clamped - np.exp(-708.0)) <= np.spacing(np.exp(-708.0)))


@pytest.mark.parametrize("kind", ["nig", "nig_rep", "spike", "niw", "bernoulli_rep", "poisson"])
def test_reparam_at_new_hyperparameters_equals_a_new_form(kind):
    """A form moved to new hyperparameters by ``reparam`` (data terms kept) is the new family's form, bit for bit.

    Its count tables are filled as clusters need them: after the same calls they hold what a form built afresh holds.
    """
    rng = np.random.default_rng(7)
    fam, y, idx = random_case(kind, rng)
    X = fam.item_stats(y, idx)
    new = {"p": rng.uniform(0.01, 0.9), "sigma2_theta": rng.uniform(0.5, 10)}
    if kind.startswith("nig"):
        V = np.shape(fam.kappa0)[0]
        new = {"kappa0": rng.uniform(0.1, 3, V), "alpha0": rng.uniform(0.5, 4, V), "beta0": rng.uniform(0.2, 3, V)}
    elif kind == "niw":
        V = int(fam.n_vars)
        new = {"kappa0": rng.uniform(0.1, 3), "nu0": V - 1 + rng.uniform(0.5, 4), "psi0": _spd(rng, V)}
    elif kind.startswith(("bernoulli", "poisson")):
        V = np.shape(fam.a)[0]
        new = {"a": rng.uniform(0.2, 3, V), "b": rng.uniform(0.2, 3, V)}
    fam_b = fam.with_values(**new)
    np.testing.assert_array_equal(fam_b.item_stats(y, idx), X)  # the data terms do stay
    moved, fresh = fam.predictive_form(X), fam_b.predictive_form(X)
    moved.params[:] = moved.reparam(fam_b)
    harnesses = [Harness(fam_b, X, moved), Harness(fam_b, X, fresh)]
    n = X.shape[0]
    for _ in range(10):
        perm = rng.permutation(n)
        size = int(rng.integers(1, n - 1))
        members, i = list(perm[:size]), perm[size]
        want = harnesses[0].want(members, i)
        got = []
        for h in harnesses:
            h.set(0, members)
            got.append(h.pred(0, i))
        assert got[0] == got[1] and abs(got[0] - want) <= TOL
    np.testing.assert_array_equal(moved.params, fresh.params)  # NaN where neither filled a table entry
    np.testing.assert_array_equal(moved.aux, fresh.aux)
