"""The online stopping rule: error control over repeated looks, coverage and precision at stopping.

Replicates are independent runs of chains on a known state space (30 partitions of 8 items,
π ∝ 1/rank). Thresholds: 3 binomial standard deviations of the replicate count.
"""

import warnings
from statistics import NormalDist

import numpy as np
import pytest
import xarray as xr

import arviz_regen
from arviz_regen.diagnostics.online import StopWhenConverged, checkpoint_grid, when_converged
from arviz_regen.testing import iid_chain, make_idata, metropolis_chain, random_partitions
from arviz_regen.xr.containers import get_group, group_names

PROBS = 1.0 / np.arange(1, 31)
PROBS /= PROBS.sum()
ALPHA = 0.05
GRID = dict(first=500, growth=2.0)  # checkpoints 500, 1000, 2000, 4000 (, 8000, 16000)


def _tol(n, p):
    return 3 * np.sqrt(p * (1 - p) / n)


@pytest.fixture(scope="module")
def states():
    return random_partitions(30, 8, np.random.default_rng(1))


@pytest.fixture(scope="module")
def truth(states):
    same = (states[:, :, None] == states[:, None, :]).astype(float)
    return np.einsum("s,sij->ij", PROBS, same)


def test_checkpoint_grid():
    np.testing.assert_array_equal(checkpoint_grid(500, 2.0, 8000), [500, 1000, 2000, 4000, 8000])
    np.testing.assert_array_equal(checkpoint_grid(1000, 1.5, 3000), [1000, 1500, 2250, 3000])
    with pytest.raises(ValueError, match="growth"):
        checkpoint_grid(1000, 1.0, 5000)
    with pytest.raises(ValueError, match="max_draws"):
        checkpoint_grid(1000, 2.0, 10)


@pytest.mark.parametrize("kind", ["iid", "slow"])
def test_correct_sampler_is_rarely_ever_flagged(states, kind):
    # precision never reached (epsilon tiny): every checkpoint of the run is a look (4 of them)
    n = 120
    flagged = []
    for r in range(n):
        rng = np.random.default_rng(1000 * (kind == "slow") + r)
        if kind == "iid":
            idx = iid_chain(PROBS, 2, 4000, rng)
        else:
            idx = metropolis_chain(PROBS, 2, 4000, rng, stay=0.8, max_step=3)
        hist = when_converged(make_idata(states, idx, np.log(PROBS)), epsilon=1e-9, random_seed=r, **GRID)
        assert hist.sizes["checkpoint"] == 4 or hist.attrs["status"] == "flagged"
        flagged.append(hist.attrs["status"] == "flagged")
    assert np.mean(flagged) <= ALPHA + _tol(n, ALPHA)


def test_stops_with_requested_precision_and_covers_truth(states, truth):
    # a precision reached at 4,000 or 8,000 draws (in 149 of the 150 runs)
    n = 150
    eps = 0.06
    covered, stopped = [], 0
    iu, ju = np.triu_indices(8, 1)
    pair = np.argmin(np.abs(truth[iu, ju] - 0.5))  # the least certain pair: one per run
    i, j = iu[pair], ju[pair]
    for r in range(n):
        idx = metropolis_chain(PROBS, 2, 8000, np.random.default_rng(5000 + r), stay=0.5, max_step=3)
        idata = make_idata(states, idx, np.log(PROBS))
        hist = when_converged(idata, epsilon=eps, random_seed=r, **GRID)
        if hist.attrs["status"] != "converged":
            continue
        stopped += 1
        t = hist.attrs["stopped_at"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cc = arviz_regen.coclustering(idata.sel(draw=slice(None, t - 1)), combined=True)
        half = 1.96 * cc.se.values
        assert np.nanmax(half[np.triu_indices(8, 1)]) <= eps  # the requested precision
        covered.append(abs(cc.rho.values[i, j] - truth[i, j]) <= half[i, j])
    assert stopped >= 0.9 * n
    assert abs(np.mean(covered) - 0.95) <= _tol(len(covered), 0.95)


def test_wrong_relative_frequencies_are_flagged_not_stopped(states):
    n = 40
    wrong = PROBS.copy()
    wrong[0] *= 1.3
    status = []
    for r in range(n):
        idx = iid_chain(wrong / wrong.sum(), 2, 16_000, np.random.default_rng(9000 + r))
        # precision fine enough that the test has power before it is reached (see the docstring)
        hist = when_converged(make_idata(states, idx, np.log(PROBS)), epsilon=0.02, random_seed=r, **GRID)
        status.append(hist.attrs["status"])
    assert status.count("converged") <= 2
    assert status.count("flagged") >= 0.9 * n


class _Draw:
    def __init__(self, chain, point, stats, tuning=False):
        self.chain, self.point, self.stats, self.tuning = chain, point, stats, tuning


def test_callback_stops_and_records_decision(states):
    idx = metropolis_chain(PROBS, 2, 16_000, np.random.default_rng(11), stay=0.5, max_step=3)
    mon = StopWhenConverged(n_chains=2, epsilon=0.05, max_draws=16_000, **GRID)
    stopped_at = None
    # draws of two parallel chains arrive interleaved, as with cores=2
    for t in range(16_000):
        try:
            for c in range(2):
                mon(draw=_Draw(c, {"z": states[idx[c, t]]}, [{"partition_logp": np.log(PROBS[idx[c, t]])}]))
        except KeyboardInterrupt:
            stopped_at = t + 1
            break
    assert stopped_at is not None and mon.decision["status"] == "converged"
    assert stopped_at == mon.decision["stopped_at"] < 16_000
    ref = when_converged(make_idata(states, idx, np.log(PROBS)), epsilon=0.05, max_draws=16_000, **GRID)
    assert ref.attrs["stopped_at"] == mon.decision["stopped_at"]
    idata = mon.annotate(make_idata(states, idx[:, :stopped_at], np.log(PROBS)))
    assert "convergence_monitor" in group_names(idata)
    assert get_group(idata, "convergence_monitor").attrs["status"] == "converged"
    with pytest.raises(KeyError, match="partition_logp"):
        StopWhenConverged(n_chains=1)(draw=_Draw(0, {"z": states[0]}, [{}]))


def test_each_look_reduces_the_draws_once_with_the_results_of_a_fresh_reduction(states, monkeypatch):
    """when_converged reduces the draws once for all its looks, the monitor once per look (not
    once per test of the look); each look's verdict and precision are those of the look's draws
    given to the diagnostics afresh, and both routes agree at every look."""
    import arviz_regen.xr.draws as draws_module
    from arviz_regen.diagnostics.online import _first_draws
    from arviz_regen.xr.draws import load_partition

    # states 20-29 first appear after the first look
    idx = metropolis_chain(PROBS, 2, 2000, np.random.default_rng(7), stay=0.5, max_step=3)
    idx[:, :500] %= 20
    logp = np.log(PROBS)[idx]
    reduced = []
    compute_keys = draws_module.compute_keys
    monkeypatch.setattr(draws_module, "compute_keys", lambda *a: reduced.append(1) or compute_keys(*a))

    hist = when_converged(make_idata(states, idx, np.log(PROBS)), epsilon=1e-9, max_draws=2000, **GRID)
    assert hist["checkpoint"].values.tolist() == [500, 1000, 2000] and len(reduced) == 1
    mon = StopWhenConverged(n_chains=2, epsilon=1e-9, max_draws=2000, **GRID)
    for t in range(2000):
        for c in range(2):
            mon(draw=_Draw(c, {"z": states[idx[c, t]]}, [{"partition_logp": logp[c, t]}]))
    assert len(reduced) == 1 + 3
    xr.testing.assert_identical(mon.history, hist)

    full = load_partition(states[idx], logp=logp)
    for t in (500, 1000, 2000):
        labels = states[idx[:, :t]]
        fresh = load_partition(labels, logp=logp[:, :t])
        first = _first_draws(full, full.logp, t)
        assert (first.n_states < full.n_states) == (t == 500)
        for name in ("keys", "index", "logp"):
            np.testing.assert_array_equal(getattr(first, name), getattr(fresh, name))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hot = arviz_regen.hotelling_rs(labels, logp=logp[:, :t], k=[2, 5], n_bootstrap=hist.attrs["n_bootstrap"])
            cc = arviz_regen.coclustering(labels, logp=logp[:, :t], combined=True)
        np.testing.assert_array_equal(hist["p_value_all"].sel(checkpoint=t), hot["p_value_all"])
        width = NormalDist().inv_cdf(0.975) * cc["se"].values[np.triu_indices(8, 1)]
        assert hist["precision"].sel(checkpoint=t) == pytest.approx(np.nanmax(width), rel=1e-12)


def _feed(mon, states, chain, n, trace=None):
    for _ in range(n):
        mon(trace=trace, draw=_Draw(chain, {"z": states[0]}, [{"partition_logp": 0.0}]))


def test_monitor_refuses_chains_not_drawn_together(states, monkeypatch):
    """At pm.sample's first draw (trace given): chains sampled in this process one after the
    other (cores=1), or a run of another number of chains than n_chains (PyMC's processes are
    named worker_chain_<chain>), are refused before any checkpoint could act."""
    trace = object()
    with pytest.raises(ValueError, match="draws them one after the other in this process"):
        _feed(StopWhenConverged(n_chains=2, first=500, max_draws=8000), states, 0, 1, trace)
    _feed(StopWhenConverged(n_chains=1, first=500, max_draws=8000), states, 0, 3, trace)  # one chain: fine
    monkeypatch.setattr("arviz_regen.diagnostics.online._pymc_workers", lambda: [0, 1])
    with pytest.raises(ValueError, match=r"got a run of 2 chain\(s\) \[0, 1\].*n_chains equal to pm.sample's `chains`"):
        _feed(StopWhenConverged(n_chains=4, first=500, max_draws=8000), states, 1, 1, trace)
    mon = StopWhenConverged(n_chains=2, first=500, max_draws=8000)
    _feed(mon, states, 0, 3, trace)
    _feed(mon, states, 1, 3, trace)
    assert mon.decision["status"] == "undecided"


def test_monitor_cuts_the_chains_it_stops_to_the_decided_draws(states):
    """Parallel chains run at different speeds and PyMC keeps, after an interruption, the chains
    maximising chains x shortest length (often the longest alone): the monitor cuts each trace
    after its tuning draws and the checkpoint's draws."""

    class Trace:  # PyMC's NDArray trace: draws recorded so far in `draw_idx`
        def __init__(self):
            self.draw_idx = 0

    idx = metropolis_chain(PROBS, 2, 4000, np.random.default_rng(3), stay=0.5, max_step=3)
    traces = [Trace(), Trace()]
    mon = StopWhenConverged(n_chains=2, epsilon=1.0, first=500, max_draws=4000)
    mon._workers_checked = True  # as with cores=2 (no PyMC processes here)
    for c, tune in ((0, 7), (1, 3)):
        for _ in range(tune):
            traces[c].draw_idx += 1
            mon(trace=traces[c], draw=_Draw(c, {"z": states[0]}, [{}], tuning=True))
    with pytest.raises(KeyboardInterrupt):
        for t in range(4000):  # chain 0 three times as fast as chain 1
            for c in (0, 0, 0, 1) if t < 1000 else (1,):
                traces[c].draw_idx += 1
                n = traces[c].draw_idx - (7, 3)[c] - 1
                stats = [{"partition_logp": np.log(PROBS[idx[c, n]])}]
                mon(trace=traces[c], draw=_Draw(c, {"z": states[idx[c, n]]}, stats))
    assert mon.decision["stopped_at"] == 500
    assert [tr.draw_idx for tr in traces] == [7 + 500, 3 + 500]


def test_monitor_refuses_more_chains_than_n_chains(states):
    mon = StopWhenConverged(n_chains=2, first=500, max_draws=8000)
    _feed(mon, states, 0, 1)
    _feed(mon, states, 1, 1)
    with pytest.raises(ValueError, match="received a draw of chain 2: pm.sample runs more chains"):
        _feed(mon, states, 2, 1)


def test_annotate_refuses_draws_the_monitor_did_not_decide_on(states):
    """PyMC keeps the longest chains after an interruption of chains of unequal length: the
    annotation must not claim a decision about draws it was not made on."""
    idx = metropolis_chain(PROBS, 2, 2000, np.random.default_rng(3), stay=0.5, max_step=3)
    mon = StopWhenConverged(n_chains=2, epsilon=1.0, first=500, max_draws=2000)
    with pytest.raises(KeyboardInterrupt):
        for t in range(2000):
            for c in range(2):
                mon(draw=_Draw(c, {"z": states[idx[c, t]]}, [{"partition_logp": np.log(PROBS[idx[c, t]])}]))
    assert mon.decision["stopped_at"] == 500
    message = r"holds 1 chain\(s\) x 2000 draws, but the monitor watched 2 chain\(s\) of \[500, 500\]"
    with pytest.raises(ValueError, match=message):
        mon.annotate(make_idata(states, idx[:1], np.log(PROBS)))
    assert "convergence_monitor" in group_names(mon.annotate(make_idata(states, idx[:, :500], np.log(PROBS))))


def test_bad_settings_are_clear():
    with pytest.raises(ValueError, match="alpha"):
        StopWhenConverged(n_chains=2, alpha=1.5)
    with pytest.raises(ValueError, match="precision"):
        StopWhenConverged(n_chains=2, precision="tight")
    with pytest.raises(ValueError, match="n_chains"):
        StopWhenConverged(n_chains=0)
