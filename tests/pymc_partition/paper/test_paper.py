"""The paper's reproduction package (pymc_partition.paper): its constants have one home, the
readings of the prior are exact, the comparison tables apply their stated rules and render as
plain text, and the figures are drawn without touching matplotlib's global state."""

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from pymc_partition.paper import comparison, constants, readings  # noqa: E402
from pymc_partition.paper.table import Table  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


def rgs(n):
    """All canonical label vectors (restricted growth strings) of ``n`` items."""
    out = [[0]]
    for _ in range(n - 1):
        out = [s + [c] for s in out for c in range(max(s) + 2)]
    return np.array(out)


# ------------------------------------------------------------------------------- constants


def test_constants_are_consistent():
    assert constants.EB_HYPERPARAMETERS == {k: float(e) for k, (e, _) in constants.EB_TABLE.items()}
    assert set(constants.EB_TABLE) == {"mu", "sigma2", "sigma2_eta", "sigma2_theta", "p"}
    assert len(constants.REPLICATES) == constants.N_ITEMS and sum(constants.REPLICATES) == 55
    bell = [1]  # Bell numbers by the Bell triangle
    row = [1]
    for _ in range(constants.N_ITEMS):
        new = [row[-1]]
        for x in row:
            new.append(new[-1] + x)
        row = new
        bell.append(row[0])
    assert bell[constants.N_ITEMS] == constants.N_PARTITIONS


def test_library_modules_hold_no_paper_number():
    """The paper's numbers live in pymc_partition/paper only (benchmarks and tests import them)."""
    pattern = re.compile(r"(?<![\d.])(0\.083|0\.034|0\.43)(?!\d)|\bPAPER_\w+")
    offenders = []
    for path in sorted((REPO / "pymc_partition").rglob("*.py")) + sorted((REPO / "arviz_regen").rglob("*.py")):
        if "paper" not in path.relative_to(REPO).parts:
            offenders += [f"{path.name}: {m.group(0)}" for m in pattern.finditer(path.read_text())]
    assert not offenders


# ------------------------------------------------------------------------- prior readings


@pytest.mark.parametrize("label", list(readings.prior_readings()))
def test_n_clusters_pmf_against_enumeration(label):
    prior = readings.prior_readings()[label]
    n = 6
    states = rgs(n)
    logp = prior.logp(states)
    assert np.exp(logp).sum() == pytest.approx(1.0, rel=1e-12)  # normalized over the 203 partitions
    blocks = states.max(axis=1) + 1
    brute = np.array([np.exp(logp[blocks == c]).sum() for c in range(1, n + 1)])
    np.testing.assert_allclose(readings.n_clusters_pmf(prior, n), brute, rtol=1e-12)


def test_uniform_cluster_count_reading():
    n = 7
    prior = readings.UniformClusterCount()
    np.testing.assert_allclose(readings.n_clusters_pmf(prior, n), np.full(n, 1 / n), rtol=1e-12)
    # given C, pi(z) is proportional to prod n_c! (uniform allocations given the sizes)
    states = rgs(n)
    logp = prior.logp(states)
    blocks = states.max(axis=1) + 1
    log_sizes = np.array([sum(math.lgamma(k + 1) for k in np.bincount(s)) for s in states])
    for c in range(1, n + 1):
        diff = (logp - log_sizes)[blocks == c]
        np.testing.assert_allclose(diff, diff[0], atol=1e-12)
    # the printed formula read as a prior on partitions favours few clusters
    umd = readings.n_clusters_pmf(readings.prior_readings()[readings.PRINTED_READING], 14)
    assert umd[0] > 0.5 and umd[:3].sum() > 0.95


def test_paper_prior_is_the_mixture_of_finite_mixtures_reading():
    import pymc_partition as pmp

    labels = list(readings.prior_readings())
    assert labels[0] == readings.PAPER_READING and readings.PRINTED_READING in labels
    assert readings.paper_prior() == pmp.MixtureOfFiniteMixtures(k_prior="uniform", gamma=1.0)
    assert readings.prior_readings()[readings.PRINTED_READING] == pmp.UniformMultinomialDirichlet()
    # the text's reading: K uniform on 1..N, but the number of non-empty clusters is not uniform
    pc = readings.n_clusters_pmf(readings.paper_prior(), 14)
    assert pc.sum() == pytest.approx(1.0, rel=1e-12) and np.ptp(pc) > 0.01


# ------------------------------------------------------------------------------ comparison


class FakeFit:
    def __init__(self, estimates, std_errors):
        self.estimates, self.std_errors = estimates, std_errors


def paper_like_fit(**changes):
    est = {k: float(e) for k, (e, _) in constants.EB_TABLE.items()}
    se = {k: float(s) for k, (_, s) in constants.EB_TABLE.items()}
    est.update(changes)
    return FakeFit(est, se)


def test_compare_eb_rounds_to_the_printed_digits():
    assert comparison.compare_eb(paper_like_fit(mu=0.0834)).all_agree  # 0.083 at 3 decimals
    cmp = comparison.compare_eb(paper_like_fit(mu=0.0836))  # 0.084: disagrees
    assert not cmp.all_agree
    row = [r for r in cmp.rows if r["parameter"] == "mu"][0]
    assert row["rounded_estimate"] == "0.084" and not row["estimate_agrees"] and row["std_error_agrees"]
    text = str(cmp)
    assert re.search(r"mu\s+0\.083 \(0\.03\)\s+0\.0836 \(0\.03\)\s+0\.084 \(0\.03\)\s+NO", text)
    assert "<table" in cmp._repr_html_()
    with pytest.raises(TypeError, match="SpikeSlabFit"):
        comparison.compare_eb({"mu": 0.0})


def test_compare_with_truth():
    truth = {"mu": 1.0, "p": 0.1}
    fit = FakeFit({"mu": 1.3, "p": 0.1}, {"mu": 0.1, "p": 0.05})
    table = comparison.compare_with_truth(fit, truth)
    assert table.frame.loc["mu", "z = (est - true) / se"] == pytest.approx(3.0)
    assert list(table.frame["within 2 s.e."]) == ["NO", "yes"]
    assert "3.00" in str(table)


def _numbers(map_p, top):
    return {"prior P(C=1)": 0.5, "prior P(C<=3)": 0.9, "MAP probability": map_p, comparison.TOP_MASS_KEY: top}


def test_readings_table_adds_the_paper_row_for_real_data():
    numbers = {"a": _numbers(0.65, 0.95), "b": _numbers(0.47, 0.84)}
    table = comparison.readings_table(numbers)
    assert list(table.frame.index) == ["a", "b", "paper (section 4.2)"]
    assert table.frame.loc["paper (section 4.2)", "MAP probability"] == constants.MAP_PROBABILITY
    assert table.frame.loc["paper (section 4.2)", comparison.TOP_MASS_KEY] == constants.TOP_MASS
    assert "0.650" in str(table) and "paper (section 4.2)" in str(table)
    assert "paper" not in str(comparison.readings_table(numbers, paper=False))


def _diagnostics(sm_error, sm_cv, sm_p):
    from pymc_partition.paper.workflow import BIG_ERROR_COLUMN, SAMPLER_LABELS

    row = lambda err, cv, p: {
        "max |error|": err,
        BIG_ERROR_COLUMN: float(err > 0.1) * 0.3,  # noqa: E731
        "max CV @ draw 20,000": cv,
        **{f"p_value_all K={k}": p for k in constants.K_VALUES},
    }
    return pd.DataFrame({SAMPLER_LABELS["gibbs"]: row(0.005, 0.004, 0.5),
                         SAMPLER_LABELS["split_merge"]: row(sm_error, sm_cv, sm_p)}).T  # fmt: skip


def test_closing_table_applies_its_rules():
    numbers = {"reading A": _numbers(0.45, 0.78), "reading B": _numbers(0.65, 0.95)}
    eb = comparison.compare_eb(paper_like_fit())
    table = comparison.closing_table(eb_comparison=eb, readings=numbers, diagnostics=_diagnostics(0.15, 0.03, 0.001))
    agrees = table.frame["agrees"]
    assert agrees["EB estimates (s.e.)"] == "yes"
    assert agrees["MAP probability, reading A"] == "yes" and agrees["MAP probability, reading B"] == "no"
    assert agrees[f"top-{constants.TOP_K} mass, reading A"] == "yes"
    assert agrees[f"top-{constants.TOP_K} mass, reading B"] == "no"
    assert agrees["split-merge: max |ρ̂ − ρ| at the end"] == "yes"
    assert agrees["split-merge: Hotelling-RS p-values"] == "yes"
    assert agrees["Gibbs: Hotelling-RS p-values"] == "yes"
    milder = comparison.closing_table(eb_comparison=eb, readings=numbers, diagnostics=_diagnostics(0.04, 0.03, 0.2))
    assert milder.frame["agrees"]["split-merge: max |ρ̂ − ρ| at the end"] == "no"
    assert milder.frame["agrees"]["split-merge: Hotelling-RS p-values"] == "no"
    simulated = comparison.closing_table(eb_comparison=None, readings=numbers,
                                         diagnostics=_diagnostics(0.15, 0.03, 0.001), real_data=False)  # fmt: skip
    assert set(simulated.frame["agrees"]) == {"n/a (simulated data)"}
    assert "EB estimates (s.e.)" not in simulated.frame.index


# ------------------------------------------------------------------------------- the table


def test_table_renders_whole_as_text_and_html():
    long = "{" + ", ".join(f"item{i}" for i in range(40)) + "}"
    frame = pd.DataFrame({"p": [0.123456, np.nan], "partition": [long, "<b>"]}, index=pd.Index([1, 2], name="rank"))
    table = Table(frame, formats={"p": "{:.3f}"}, left=("partition",), title="top")
    text = repr(table)
    assert long in text  # never truncated
    assert text.splitlines()[0] == "top" and text.splitlines()[1].split() == ["rank", "p", "partition"]
    assert "0.123" in text and "nan" not in text.lower()
    lines = text.splitlines()
    assert lines[3].index("<b>") == lines[2].index("{")  # left-aligned column
    html = table._repr_html_()
    assert "&lt;b&gt;" in html and "<b>" not in html and long in html and "text-align: left" in html
    with pytest.raises(ValueError, match="not in the table"):
        Table(frame, formats={"q": "{}"})


def test_top_partitions_table_as_text():
    from pymc_partition.paper.workflow import top_partitions

    class Exact:
        def top(self, k):
            return np.array([[0, 0, 1], [0, 1, 2]])[:k], np.array([0.6, 0.3])[:k]

    table = top_partitions(Exact(), ["a", "b", "c"], k=2)
    text = str(table)
    assert "{a, b} | {c}" in text and "{a} | {b} | {c}" in text and "0.9000" in text
    assert "Styler" not in text


# ----------------------------------------------------------------------------- the figures


@pytest.fixture(scope="module")
def small_run():
    """A 6-item problem: exact posterior and short runs of both samplers."""
    import logging

    from pymc_partition.datasets import simulate_spike_slab
    from pymc_partition.exact import exact_posterior
    from pymc_partition.paper import workflow

    data = simulate_spike_slab(n_items=6, n_vars=8, n_replicates=3, n_clusters=2, random_seed=3)
    model, z = workflow.build_model(data, constants.EB_HYPERPARAMETERS)
    exact = exact_posterior(model, top_k=50, progressbar=False)
    level = logging.getLogger("pymc").level
    idatas, _ = workflow.sample_both(model, z, draws=600, chains=2, random_seed=1, progressbar=False)
    logging.getLogger("pymc").setLevel(level)
    diags = {
        name: workflow.convergence_diagnostics(idata, exact.coclustering, n_points=10) for name, idata in idatas.items()
    }
    return data, exact, diags


def test_figures_drawn_on_given_figures_leave_pyplot_alone(small_run):
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from pymc_partition.paper import figures

    data, exact, diags = small_run
    before = (plt.get_fignums(), dict(matplotlib.rcParams))
    f1 = figures.figure1(exact, data.item_names, n_states=40, k=5, fig=Figure(), dpi=50)
    ax1, ax2 = f1.axes
    _, probs = exact.top(40)
    np.testing.assert_allclose(ax1.lines[0].get_ydata(), np.cumsum(probs))
    # stacked bars: top-k part + the rest = the exact co-clustering of each pair shown
    n_pairs = int((exact.coclustering[np.triu_indices(6, 1)] > constants.COCLUSTERING_THRESHOLD).sum())
    assert len(ax2.patches) == 2 * n_pairs
    heights = [p.get_height() for p in ax2.patches]
    totals = np.add(heights[:n_pairs], heights[n_pairs:])
    rho = exact.coclustering[np.triu_indices(6, 1)]
    np.testing.assert_allclose(np.sort(totals), np.sort(rho[rho > constants.COCLUSTERING_THRESHOLD]))
    f2 = figures.coclustering_matrix(exact, data.item_names, fig=Figure(), dpi=50)
    assert sorted(t.get_text() for t in f2.axes[0].get_xticklabels()) == sorted(data.item_names)
    f3 = figures.figure2(diags, fig=Figure(), dpi=50)
    axes = np.array(f3.axes[: 2 * 3]).reshape(2, 3)
    assert [a.get_title() for a in axes[0]][0].startswith("(a)")
    assert axes[0, 1].get_yscale() == "log" and axes[0, 2].get_yscale() == "log"
    assert len(axes[1, 2].lines) > len(constants.K_VALUES)  # K lines per chain and the verdicts
    assert (plt.get_fignums(), dict(matplotlib.rcParams)) == before


# ------------------------------------------------------------------ the sampler with a bug


def test_off_by_one_prior_is_the_gibbs_sampler_with_the_wrong_new_cluster_weight():
    from pymc_partition.paper.bug import OffByOneNewCluster

    right = readings.paper_prior()
    wrong = OffByOneNewCluster(right)
    n = 8
    g, h = right.tables(n)
    g_wrong, h_wrong = wrong.tables(n)
    np.testing.assert_allclose(h_wrong[1:], h[1:])
    # Gibbs' new-cluster weight with t clusters among the others: g(t + 1) − g(t); the wrong
    # prior's is the right one read an entry too far, g(t + 2) − g(t + 1)
    for t in range(1, n - 1):
        assert g_wrong[t + 1] - g_wrong[t] == pytest.approx(g[t + 2] - g[t + 1])
    # a proper prior: normalized over all partitions of n items
    labels = rgs(n)
    C = labels.max(axis=1) + 1
    sizes = [np.bincount(lab) for lab in labels]
    logp = g_wrong[C] + np.array([h_wrong[s].sum() for s in sizes])
    assert np.exp(logp).sum() == pytest.approx(1.0)
    assert np.isneginf(g_wrong[n])  # all singletons: g(N + 1) would need N + 1 components


def test_off_by_one_sampler_is_caught_by_hotelling_rs_not_by_rhat(small_run):
    import arviz_regen
    from pymc_partition.paper import bug, workflow

    data, exact, _ = small_run
    idata, seconds = bug.sample_off_by_one(data, constants.EB_HYPERPARAMETERS, draws=3000, chains=2,
                                           random_seed=2, progressbar=False)  # fmt: skip
    assert seconds > 0
    # partition_logp is the right model's: checked against its compiled logp on some draws
    model, _ = workflow.build_model(data, constants.EB_HYPERPARAMETERS)
    logp = model.compile_logp()
    lab = idata.posterior["z"].values
    lp = idata.sample_stats["partition_logp"].values
    d = [float(logp({"z": lab[c, t]})) - lp[c, t] for c in range(2) for t in range(0, 3000, 301)]
    assert np.ptp(d) < 1e-8
    table = arviz_regen.regen_summary(idata, var_names="z", n_bootstrap=199)
    stats = ["n_clusters", "partition_logp", "vi_ref0", "vi_ref1", "binder_ref0", "binder_ref1"]
    assert (table.loc[stats, "r_hat"].astype(float) <= 1.01).all()
    assert table.attrs["verdict_status"] == "FAIL" and table.attrs["decided_by"] == "hotelling_rs"


def test_samplers_are_timed_the_same_way(monkeypatch):
    """Both samplers' seconds exclude first-call compilation: each runs 5 untimed draws first."""
    import pymc as pm

    from pymc_partition.paper import workflow

    calls = []
    monkeypatch.setattr(pm, "sample", lambda **kw: calls.append((kw["draws"], kw["step"])) or object())
    monkeypatch.setattr(workflow, "get_group", lambda idata, g: _FakePosterior())
    monkeypatch.setattr(workflow, "make_steps", lambda z: {"gibbs": lambda: "G", "split_merge": lambda: "S"})
    idatas, seconds = workflow.sample_both(pm.Model(), _FakeVar(), draws=100, chains=2, progressbar=False)
    assert calls == [(5, "G"), (100, "G"), (5, "S"), (100, "S")] and set(seconds) == {"gibbs", "split_merge"}


class _FakeVar:
    name = "z"


class _FakePosterior:
    dims = {}
