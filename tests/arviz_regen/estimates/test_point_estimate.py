"""Point estimates (SALSO), credible balls and partition losses against brute force.

- The Binder and VI closed forms (contingency counts) equal literal pair loops and entropies.
- On random posteriors over n ≤ 9 items SALSO reaches the minimum of the same Monte Carlo
  expected loss that an exhaustive search over all B(n) partitions finds, for Binder and VI,
  classical and weighted, on both scoring routes, with and without a cap on the clusters.
- The credible ball (radius, bounds) equals a literal transcription of Wade & Ghahramani's
  definitions over the draws.
"""

import math
import warnings
from collections import Counter

import numpy as np
import pytest
import xarray as xr

import arviz_regen
from arviz_regen.base.partition_loss import mean_loss, parse_loss, partition_loss
from arviz_regen.base.salso import salso_search
from arviz_regen.base.state import all_partitions, bell_number, canonicalize

LOSSES = ["VI", "binder", ("VI", 0.6), ("binder", 1.4)]


# ---------------------------------------------------------------------------------------------
# literal definitions
# ---------------------------------------------------------------------------------------------


def literal_binder(truth, est, a=1.0):
    n = len(truth)
    out = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            together_t, together_e = truth[i] == truth[j], est[i] == est[j]
            out += a * (together_t and not together_e) + (2 - a) * (together_e and not together_t)
    return out


def entropy(labels):
    n = len(labels)
    return -sum(c / n * math.log2(c / n) for c in Counter(labels).values())


def literal_vi(truth, est):
    """H(c) + H(c') − 2 I(c, c') from the empirical joint distribution of the labels."""
    joint = list(zip(truth, est))
    mutual = entropy(truth) + entropy(est) - entropy(joint)
    return entropy(truth) + entropy(est) - 2 * mutual


def literal_gvi(truth, est, a):
    """Dahl, Johnson & Müller's generalised VI from the cluster and intersection sizes."""
    n = len(truth)
    f = lambda counts: sum(c * math.log2(c) for c in counts.values())  # noqa: E731
    return (a * f(Counter(truth)) + (2 - a) * f(Counter(est)) - 2 * f(Counter(zip(truth, est)))) / n


def random_posterior(rng, n_items, n_chain=2, n_draw=60, n_modes=4, noise=0.15):
    """Draws (chain, draw, item) near a few random partitions, with items moved at random."""
    modes = [rng.integers(0, rng.integers(1, n_items + 1), n_items) for _ in range(n_modes)]
    pick = rng.choice(n_modes, size=(n_chain, n_draw), p=rng.dirichlet(np.ones(n_modes)))
    z = np.array(modes)[pick]
    move = rng.random(z.shape) < noise
    z[move] = rng.integers(0, n_items, size=int(move.sum()))
    return canonicalize(z)


# ---------------------------------------------------------------------------------------------
# losses
# ---------------------------------------------------------------------------------------------


def test_losses_equal_their_definitions():
    rng = np.random.default_rng(0)
    for _ in range(40):
        n = int(rng.integers(1, 13))
        t = rng.integers(0, rng.integers(1, 6), n)
        e = rng.integers(0, rng.integers(1, 6), n)
        a = float(rng.uniform(0, 2))
        assert partition_loss(t, e, ("binder", a)) == pytest.approx(literal_binder(t, e, a), abs=1e-12)
        assert partition_loss(t, e, "binder") == pytest.approx(literal_binder(t, e), abs=1e-12)
        assert partition_loss(t, e, "VI") == pytest.approx(literal_vi(t, e), abs=1e-12)
        assert partition_loss(t, e, ("VI", a)) == pytest.approx(literal_gvi(t, e, a), abs=1e-12)
    # a = 1: Binder of one truth is binder_loss with a 0/1 co-clustering matrix
    t, e = rng.integers(0, 3, 9), rng.integers(0, 4, 9)
    rho = (t[:, None] == t[None, :]).astype(float)
    assert partition_loss(t, e, "binder") == pytest.approx(arviz_regen.binder_loss(e, rho))


def test_vi_is_a_metric_and_losses_vectorise():
    rng = np.random.default_rng(1)
    parts = rng.integers(0, 4, (30, 8))
    d = partition_loss(parts, parts)  # (30, 30): estimate rows, truth columns
    assert d.shape == (30, 30)
    np.testing.assert_allclose(d, d.T, atol=1e-12)
    same = (canonicalize(parts)[:, None, :] == canonicalize(parts)[None, :, :]).all(-1)
    assert np.all((d < 1e-12) == same)
    assert np.all(d[:, :, None] <= d[:, None, :] + d[None, :, :].transpose(0, 2, 1) + 1e-12)  # triangle
    # labels are read as partitions; shapes follow truth's leading dims
    assert partition_loss([5, 5, 9], [1, 1, 0]) == 0.0
    assert partition_loss(parts.reshape(5, 6, 8), parts[0]).shape == (5, 6)
    assert partition_loss(parts.reshape(5, 6, 8), parts[:3]).shape == (3, 5, 6)


@pytest.mark.parametrize(
    "bad, match",
    [
        ("ARI", "must be 'VI' or 'binder'"),
        (("VI", 2.5), r"lie in \[0, 2\]"),
        (("binder",), "name or"),
        (("VI", "x"), "must be a number"),
    ],
)
def test_loss_argument_errors(bad, match):
    with pytest.raises((ValueError, TypeError), match=match):
        parse_loss(bad)


# ---------------------------------------------------------------------------------------------
# SALSO against exhaustive search
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_salso_finds_the_exhaustive_optimum(seed):
    rng = np.random.default_rng(100 + seed)
    n = [6, 7, 8, 9, 9, 8][seed]
    z = random_posterior(rng, n)
    parts = all_partitions(n)
    assert len(parts) == bell_number(n)
    draws = z.reshape(-1, n)
    weights = np.full(len(draws), 1.0 / len(draws))
    for loss in LOSSES:
        spec = parse_loss(loss)
        exact = mean_loss(parts, draws, weights, spec)
        routes = ["draws", "psm"] if spec.name == "binder" else ["draws"]
        for route in routes:
            est = arviz_regen.point_estimate(z, loss=loss, route=route, random_seed=seed)
            assert float(est.expected_loss) == pytest.approx(exact.min(), rel=1e-9, abs=1e-12), (loss, route)
            # the reported loss is the loss of the reported labels
            assert mean_loss(est.labels.values[None], draws, weights, spec)[0] == pytest.approx(exact.min())
        ex = arviz_regen.point_estimate(z, loss=loss, method="exhaustive")
        assert float(ex.expected_loss) == pytest.approx(exact.min(), rel=1e-12)
        np.testing.assert_array_equal(ex.labels.values, parts[np.argmin(exact)])
    # a cap on the number of clusters: the optimum among partitions with at most 2 clusters
    spec = parse_loss(("VI", 0.5))  # a < 1 favours many clusters: the cap binds
    capped = parts[parts.max(axis=1) < 2]
    best = mean_loss(capped, draws, weights, spec).min()
    est = arviz_regen.point_estimate(z, loss=("VI", 0.5), max_clusters=2, random_seed=seed)
    assert int(est.n_clusters) <= 2
    assert float(est.expected_loss) == pytest.approx(best, rel=1e-9)


def test_salso_search_core_runs_and_starts():
    rng = np.random.default_rng(7)
    z = random_posterior(rng, 9, n_chain=1, n_draw=80).reshape(-1, 9)
    res = salso_search(z, None, "VI", n_runs=8, seed=3)
    again = salso_search(z, None, "VI", n_runs=8, seed=3)
    np.testing.assert_array_equal(res.labels, again.labels)  # a seed fixes the result
    np.testing.assert_array_equal(res.run_losses, again.run_losses)
    assert res.run_losses.shape == (8,) and set(res.init) <= {0, 1, 2}
    # a given start is sweetened: never worse than the start itself
    start = z[0]
    one = salso_search(z, None, "VI", n_runs=0 + 1, starts=start[None], seed=0)
    assert one.init[0] == 3
    assert one.run_losses[0] <= mean_loss(start[None], z, np.full(len(z), 1 / len(z)), parse_loss("VI"))[0] + 1e-12
    # from singletons, cluster columns grow on demand and give the same path as a big buffer
    many = salso_search(np.arange(30)[None], None, ("VI", 0.2), n_runs=2, seed=1)
    assert many.labels.max() + 1 == 30 and many.expected_loss == pytest.approx(0.0, abs=1e-12)


def test_recovers_a_clear_partition_at_scale():
    rng = np.random.default_rng(11)
    n, truth = 300, np.repeat(np.arange(4), 75)
    rng.shuffle(truth)
    z = np.broadcast_to(truth, (2, 150, n)).copy()
    move = rng.random(z.shape) < 0.05
    z[move] = rng.integers(0, 5, size=int(move.sum()))
    z = canonicalize(z)
    for loss in ["VI", "binder"]:
        est = arviz_regen.point_estimate(z, loss=loss, random_seed=0, n_runs=4)
        np.testing.assert_array_equal(est.labels.values, canonicalize(truth))
        assert est.attrs["route"] == ("psm" if loss == "binder" else "draws")


# ---------------------------------------------------------------------------------------------
# the returned Dataset
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def posterior():
    rng = np.random.default_rng(5)
    z = random_posterior(rng, 7, n_chain=3, n_draw=200, noise=0.1)
    return z


def test_dataset_contents_and_expected_loss_is_the_draw_average(posterior):
    z = posterior
    est = arviz_regen.point_estimate(z, loss="VI", random_seed=1)
    lab = est.labels.values
    literal = np.array([[literal_vi(list(d), list(lab)) for d in chain] for chain in z])
    np.testing.assert_allclose(est.draw_loss.values, literal, atol=1e-12)
    assert float(est.expected_loss) == pytest.approx(literal.mean(), rel=1e-12)
    assert est.labels.dims == ("x_dim_0",) and est.draw_loss.dims == ("chain", "draw")
    assert int(est.n_clusters) == lab.max() + 1 and est.cluster_size.values.sum() == 7
    assert 0 < float(est.expected_loss_se) < 0.5 * float(est.expected_loss)
    assert est.attrs["loss"] == "VI" and est.attrs["n_draws"] == 600 and est.attrs["runs_at_best"] >= 1
    np.testing.assert_array_equal(lab, canonicalize(lab))


def test_inputs_pooling_accessor_and_coords(posterior):
    z = posterior
    ref = arviz_regen.point_estimate(z, loss="binder", random_seed=2)
    da = xr.DataArray(z, dims=("chain", "draw", "obs"), coords={"obs": list("abcdefg")}, name="z")
    ds = da.to_dataset()
    tree = xr.DataTree.from_dict({"posterior": ds})
    for obj in (da, ds, tree, {"z": z}):
        out = arviz_regen.point_estimate(obj, loss="binder", random_seed=2)
        np.testing.assert_array_equal(out.labels.values, ref.labels.values)
    via = ds.regen.point_estimate(loss="binder", random_seed=2)
    assert via.labels.dims == ("obs",) and list(via.obs.values) == list("abcdefg")
    # chains are pooled: one long chain gives the same estimate and loss
    one = arviz_regen.point_estimate(z.reshape(1, -1, 7), loss="binder", random_seed=2)
    assert float(one.expected_loss) == pytest.approx(float(ref.expected_loss))
    sub = arviz_regen.point_estimate(ds, loss="binder", coords={"chain": [0]}, random_seed=2)
    assert sub.attrs["n_draws"] == 200


def test_argument_errors(posterior):
    z = posterior
    with pytest.raises(ValueError, match="route='psm'"):
        arviz_regen.point_estimate(z, loss="VI", route="psm")
    with pytest.raises(ValueError, match="`method`"):
        arviz_regen.point_estimate(z, method="greedy")
    with pytest.raises(ValueError, match="`n_runs`"):
        arviz_regen.point_estimate(z, n_runs=0)
    with pytest.raises(ValueError, match="`max_clusters`"):
        arviz_regen.point_estimate(z, max_clusters=1.5)
    with pytest.raises(ValueError, match="`starts`"):
        arviz_regen.point_estimate(z, starts=[[0, 1]])
    big = np.zeros((1, 5, 12), dtype=int)
    with pytest.raises(ValueError, match="up to 10 items"):
        arviz_regen.point_estimate(big, method="exhaustive")


# ---------------------------------------------------------------------------------------------
# credible ball
# ---------------------------------------------------------------------------------------------


def test_credible_ball_equals_literal_definition(posterior):
    z = posterior
    draws = z.reshape(-1, 7)
    for loss, level in [("VI", 0.95), ("binder", 0.8), (("VI", 0.7), 0.5)]:
        est = arviz_regen.point_estimate(z, loss=loss, random_seed=0)
        ball = arviz_regen.credible_ball(z, est, loss=loss, level=level)
        c = est.labels.values
        d = np.array([partition_loss(x, c, loss) for x in draws])
        np.testing.assert_allclose(ball.distance.values.ravel(), d, atol=1e-12)
        # smallest radius among the draws' distances holding a fraction >= level of them
        radius = min(r for r in np.unique(d) if np.mean(d <= r + 1e-12) >= level - 1e-12)
        assert float(ball.radius) == pytest.approx(radius, abs=1e-12)
        inside = d <= radius + 1e-9
        assert float(ball.probability) == pytest.approx(inside.mean()) and inside.mean() >= level
        k = draws.max(axis=1) + 1
        for name, mask in [
            ("horizontal", inside),
            ("vertical_upper", inside & (k == k[inside].min())),
            ("vertical_lower", inside & (k == k[inside].max())),
        ]:
            b = ball.sel(bound=name)
            assert float(b.bound_distance) == pytest.approx(d[mask].max(), abs=1e-12)
            assert int(b.bound_n_clusters) == k[mask][np.argmax(d[mask])]
            # the bound is one of the draws it describes, at that distance
            hits = (canonicalize(draws) == b.bound_labels.values).all(axis=1)
            assert hits.any() and np.all(mask[hits])
            assert float(b.bound_probability) == pytest.approx(hits.mean())


def test_credible_ball_defaults_and_errors(posterior):
    z = posterior
    ball = arviz_regen.credible_ball(z, random_seed=4)  # estimate computed: VI, same seed -> same centre
    est = arviz_regen.point_estimate(z, random_seed=4)
    np.testing.assert_array_equal(ball.estimate.values, est.labels.values)
    assert ball.attrs["estimate_from"] == "point_estimate" and list(ball.bound.values)[1] == "horizontal"
    with pytest.raises(ValueError, match="minimises the VI loss"):
        arviz_regen.credible_ball(z, est, loss="binder")
    with pytest.raises(ValueError, match="`level`"):
        arviz_regen.credible_ball(z, est, level=1.0)
    with pytest.raises(TypeError, match="configures the search"):
        arviz_regen.credible_ball(z, est, random_seed=3)
    with pytest.raises(ValueError, match="7 items"):
        arviz_regen.credible_ball(z, [0, 1, 2])
    # a label vector that is not canonical is read as a partition
    lab = est.labels.values
    b2 = arviz_regen.credible_ball(z, lab + 5)
    assert float(b2.radius) == float(ball.radius)


# ---------------------------------------------------------------------------------------------
# plot
# ---------------------------------------------------------------------------------------------


def test_plot_point_estimate_never_empty(posterior):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    z = posterior
    est = arviz_regen.point_estimate(z, random_seed=0)
    ax = arviz_regen.plot_point_estimate(z, estimate=est)
    img = ax.images[0].get_array()
    assert img.shape == (7, 7) and np.all(np.isfinite(img)) and img.max() == 1.0
    assert len(ax.patches) == int(est.n_clusters)  # one outline per cluster
    assert "VI estimate" in ax.get_title() and len(ax.get_xticklabels()) == 7
    # the image is the co-clustering frequency matrix, permuted so clusters are contiguous
    lab = est.labels.values
    order = np.argsort(-np.bincount(lab)[lab], kind="stable")
    shown = lab[[int(t.get_text()) for t in ax.get_xticklabels()]]
    assert np.all(np.diff(np.flatnonzero(np.diff(shown) != 0)) > 0) and len(order) == 7
    plt.close("all")
    # many items: cluster ticks; a given matrix; computed estimate with the accessor
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 3, 80)
    zz = np.broadcast_to(truth, (1, 40, 80)).copy()
    zz[0, ::2, :5] = 3
    zz = canonicalize(zz)
    ax = xr.DataArray(zz, dims=("chain", "draw", "item")).regen.plot_point_estimate(loss="binder", random_seed=0)
    assert ax.images[0].get_array().shape == (80, 80) and "cluster" in ax.get_xlabel()
    assert 1 <= len(ax.get_xticklabels()) <= 4
    ax = arviz_regen.plot_point_estimate(estimate=truth, coclustering=np.eye(80))
    assert len(ax.patches) == np.unique(truth).size
    plt.close("all")
    with pytest.raises(ValueError, match="undefined"):
        arviz_regen.plot_point_estimate(estimate=truth[:3], coclustering=np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="shape"):
        arviz_regen.plot_point_estimate(estimate=truth, coclustering=np.eye(3))
    with pytest.raises(ValueError, match="`data` is needed"):
        arviz_regen.plot_point_estimate(estimate=truth)
    plt.close("all")


def test_exported_and_lazy():
    for name in ("point_estimate", "credible_ball", "partition_loss", "plot_point_estimate"):
        assert name in arviz_regen.__all__ and callable(getattr(arviz_regen, name))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hasattr(xr.Dataset.regen, "credible_ball")


def test_one_estimate_by_counting_equals_the_kernel():
    """One estimate with few clusters is scored by numpy counting, several by the kernel."""
    from arviz_regen.base.partition_loss import _losses

    rng = np.random.default_rng(12)
    draws = canonicalize(rng.integers(0, 5, (300, 40)))
    est = canonicalize(rng.integers(0, 4, 40))
    for loss in LOSSES:
        spec = parse_loss(loss)
        one = _losses(est[None], draws, spec)[0]
        two = _losses(np.stack([est, est]), draws, spec)  # the compiled kernel
        np.testing.assert_allclose(one, two[0], rtol=1e-12, atol=1e-12)
        a = spec.a
        for d, got in zip(draws[:5], one[:5]):
            want = literal_binder(d, est, a) if spec.name == "binder" else literal_gvi(d, est, a)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-12), loss


@pytest.mark.parametrize("jumpy", [True, False])
def test_tracks_over_states_or_along_chains_give_the_same_search(jumpy, monkeypatch):
    import arviz_regen.base.salso as salso_mod
    from arviz_regen.testing import metropolis_chain, random_partitions, zipf_probs

    rng = np.random.default_rng(11)
    n_states, n = (12, 10) if jumpy else (300, 10)
    states = random_partitions(n_states, n, rng)
    p = zipf_probs(n_states)
    index = metropolis_chain(p, 3, 3000, rng)
    if not jumpy:  # every draw a new state: a chain that stays, then moves on for good
        index = np.arange(3 * 100).reshape(3, 100).repeat(10, axis=1)
    visits = np.bincount(index.ravel(), minlength=n_states).astype(float)
    seen = visits > 0
    draws, weights = states[seen], visits[seen] / visits.sum()
    index = (np.cumsum(seen) - 1)[index]
    assert salso_mod._states_are_cheaper(index, draws.shape[0], n) == jumpy
    results = []
    for cheaper in (True, False):
        monkeypatch.setattr(salso_mod, "_states_are_cheaper", lambda *a, c=cheaper: c)
        results.append(salso_search(draws, weights, "VI", index=index, n_runs=6, seed=2))
    np.testing.assert_allclose(results[0].run_losses, results[1].run_losses, rtol=1e-12)
    np.testing.assert_array_equal(results[0].labels, results[1].labels)


def test_summaries_pause_the_collector_and_resume_it(monkeypatch):
    import gc

    from arviz_regen.estimates import credible_ball, point_estimate

    seen = []

    def probe(load):
        def run(*args, **kwargs):
            seen.append(gc.isenabled())
            return load(*args, **kwargs)

        return run

    for module in (point_estimate, credible_ball):
        monkeypatch.setattr(module, "load_partition", probe(module.load_partition))
    z = np.array([[[0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 1, 1]]])
    assert gc.isenabled()
    arviz_regen.point_estimate(z, loss="binder", random_seed=1)
    arviz_regen.credible_ball(z, random_seed=1)
    assert seen and not any(seen) and gc.isenabled()  # paused inside, resumed after
    with pytest.raises(ValueError, match="method"):
        arviz_regen.point_estimate(z, method="nope")
    assert gc.isenabled()  # also after an error
    gc.disable()
    try:  # a caller's disabled collector stays disabled
        arviz_regen.point_estimate(z, loss="binder", random_seed=1)
        assert not gc.isenabled()
    finally:
        gc.enable()
