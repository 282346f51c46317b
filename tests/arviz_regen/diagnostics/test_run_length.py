"""``StopWhenReached`` and ``draws_needed`` (issue 30 item 2): a run length for hierarchical models.

The callback is fed draws as ``pm.sample`` passes them (``Draw`` tuples, four chains interleaved)
from exact samplers whose answer is known: independent draws of a hierarchical posterior (the
log posterior varies with a hyperparameter, so :class:`StopWhenConverged` would stand aside) must
stop at the first checkpoint; chains trapped two and two in the two modes of a bimodal toy must
never stop and must end NOT REACHED with a number of draws; the time budget ends NOT REACHED.
"""

from __future__ import annotations

import time
from collections import namedtuple

import numpy as np
import pandas as pd
import pytest

import arviz_regen
from arviz_regen import StopWhenReached, draws_needed

Draw = namedtuple("Draw", "chain is_last draw_idx tuning stats point")

# two modes of six items: 2 and 3 clusters, three partitions each
MODES = (
    np.array([[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1]]),
    np.array([[0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 2], [0, 0, 1, 2, 2, 2]]),
)


def _draws(n_draw, trapped, seed=0):
    """(chain, draw) -> Draw of four chains, interleaved; exact independent draws of the mixture
    of both modes, or each chain kept in one mode (chains 0, 1 in the first, 2, 3 in the second)."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n_draw):
        for c in range(4):
            mode = (c >= 2) if trapped else rng.random() < 0.5
            labels = MODES[int(mode)][rng.integers(3)]
            alpha = rng.gamma(2.0 + labels.max(), 1.0)  # a hyperparameter: logp varies with it
            logp = -float(labels.max()) - 0.1 * alpha
            out.append(Draw(c, t == n_draw - 1, t, False, [{"partition_logp": logp}],
                            {"z": labels, "alpha_log__": np.log(alpha)}))  # fmt: skip
    return out


def _feed(monitor, draws):
    """Feed the draws; the draw count at which the monitor stopped ``pm.sample`` (or None)."""
    for i, d in enumerate(draws):
        try:
            monitor(None, d)
        except KeyboardInterrupt:
            return i
    return None


def test_a_converged_hierarchical_run_stops_at_the_first_checkpoint():
    monitor = StopWhenReached(n_chains=4, every=200)
    stopped = _feed(monitor, _draws(1000, trapped=False))
    assert stopped is not None and stopped < 4 * 201  # stopped at 200 draws per chain
    decision = monitor.decision
    assert decision["status"] == "reached" and decision["stopped_at"] == 200
    assert decision["reason"].startswith("PASS reached at 200 draws per chain")
    table = decision["table"]
    assert "alpha_log__" in table.index  # the hyperparameter is judged too
    assert monitor.history.attrs["status"] == "reached"


def test_chains_trapped_in_different_modes_never_stop_and_end_not_reached():
    monitor = StopWhenReached(n_chains=4, every=100, growth=2.0)
    with pytest.warns(RuntimeWarning, match="NOT REACHED within budget"):
        stopped = _feed(monitor, _draws(400, trapped=True))
    assert stopped is None  # pm.sample ran to its draws
    decision = monitor.decision
    assert decision["status"] == "not reached" and decision["stopped_at"] == 400
    assert decision["draws_needed"] > 400
    assert list(monitor.history["checkpoint"].values) == [100, 200, 400]
    assert not (monitor.history["status"] == "PASS").any()


def test_trapped_chains_are_told_what_it_means_and_what_to_do():
    """The line for chains apart (issue 30): stuck in different states, how many items apart, the
    draws a floor (not "about"), the cost at the run's pace, what to do instead of waiting."""
    monitor = StopWhenReached(n_chains=4, every=100, growth=2.0)
    with pytest.warns(RuntimeWarning):
        _feed(monitor, _draws(400, trapped=True))
    reason = monitor.decision["reason"]
    assert reason.startswith("NOT REACHED within budget (the draws of pm.sample, 400 draws per chain): "
                             "the chains are stuck in different states (")  # fmt: skip
    # chains 0, 1 sit in the 2-cluster mode, 2, 3 in the 3-cluster one: 1-3 items apart, 0 within a mode
    most = int(reason.split("differ in ")[1].split(" of 6 items")[0])
    assert 1 <= most <= 3 and "chains 0 and 1" not in reason and "chains 2 and 3" not in reason
    assert f"at least {monitor.decision['draws_needed']:,} per chain, about " in reason
    assert "at this run's pace" in reason and "max_seconds" in reason and "credible ball" in reason
    assert "about 40,000 draws per chain needed" not in reason  # a floor, not an estimate


def test_when_reached_gives_trapped_chains_the_same_line():
    import xarray as xr

    draws = _draws(400, trapped=True)
    labels = np.stack([np.stack([d.point["z"] for d in draws if d.chain == c]) for c in range(4)])
    logp = np.stack([[d.stats[0]["partition_logp"] for d in draws if d.chain == c] for c in range(4)])
    coords = {"chain": np.arange(4), "draw": np.arange(400)}
    idata = xr.DataTree.from_dict({
        "posterior": xr.Dataset({"z": (("chain", "draw", "z_dim_0"), labels)}, coords=coords),
        "sample_stats": xr.Dataset({"partition_logp": (("chain", "draw"), logp)}, coords=coords),
    })  # fmt: skip
    out = arviz_regen.when_reached(idata, var_names="z", every=100, growth=2.0)
    reason = out.attrs["reason"]
    assert out.attrs["status"] == "not reached" and "the chains are stuck in different states" in reason
    assert " of 6 items" in reason and "at least" in reason and "pace" not in reason  # no clock for saved draws


def test_r_hat_above_1_1_is_trapped_even_when_the_estimate_is_not_capped():
    """Digits seed 2 (issue 30): R-hat 1.7 asked for 316,390 draws, under the cap; still stuck."""
    from arviz_regen.diagnostics.run_length import _not_reached_line

    line = {}
    for r_hat in (1.7, 1.03):
        table = pd.DataFrame({"sd": [1.0], "ess_bulk": [50.0], "r_hat": [r_hat]}, index=["binder_ref1"])
        table.attrs.update(verdict="verdict: NOT REACHED", verdict_status="NOT REACHED", decided_by="chain_agreement",
                           draws_needed=316_390, draws_needed_reason=f"R-hat of binder_ref1 is {r_hat}")  # fmt: skip
        line[r_hat] = _not_reached_line("600 s", 3382, table, (456, 1, 2, 1797), seconds_per_draw=0.01)
    assert "stuck in different states" in line[1.7] and "at least 316,390 per chain" in line[1.7]
    assert "chains 1 and 2 differ in 456 of 1,797 items" in line[1.7] and "about 53 minutes" in line[1.7]
    assert "stuck" not in line[1.03] and "about 316,390 draws per chain needed" in line[1.03]


def test_items_apart_counts_the_items_to_move():
    from arviz_regen.diagnostics.run_length import _items_apart

    assert _items_apart([0, 0, 1, 1, 2], [5, 5, 3, 3, 3]) == 1
    assert _items_apart([0, 0, 1, 1], [1, 1, 0, 0]) == 0  # the same partition, other labels
    assert _items_apart([0, 0, 0, 0], [0, 1, 2, 3]) == 3
    assert _items_apart([0, 1, 0, 1, 2, 2], [0, 0, 1, 1, 2, 2]) == 2
    with pytest.raises(ValueError, match="same items"):
        _items_apart([0, 1], [0, 1, 2])


def test_the_time_budget_ends_not_reached_with_the_draws_needed():
    monitor = StopWhenReached(n_chains=4, every=10_000, max_seconds=0.3)
    draws = _draws(151, trapped=True)
    assert _feed(monitor, draws[:600]) is None  # 150 draws per chain within the budget
    time.sleep(0.35)
    with pytest.warns(RuntimeWarning, match="NOT REACHED within budget \\(0.3 s, 150 draws"):
        assert _feed(monitor, draws[600:]) == 0
    assert monitor.decision["status"] == "not reached" and monitor.decision["draws_needed"] > 150


def test_draws_needed_from_ess_r_hat_and_the_agreement_check():
    table = pd.DataFrame(
        {"sd": [1.0, 1.0, 0.0], "ess_bulk": [100.0, 1000.0, 5.0], "r_hat": [1.005, 1.03, np.nan]},
        index=["n_clusters", "alpha", "constant"],
    )
    need, why = draws_needed(table, 1000, 4)  # ESS 100 of 400: 4,000; R-hat 1.03: 3,030
    assert need == 4000 and why.startswith("bulk ESS of n_clusters")
    ok = table.assign(ess_bulk=[800.0, 900.0, 5.0], r_hat=[1.0, 1.0, np.nan])
    assert draws_needed(ok, 1000, 4) == (1000, "the criteria hold")  # the constant row is left out
    from arviz_regen.diagnostics.verdict import Check

    undecided = Check(
        "chain_agreement", np.nan, "", "undecided", "... (about 12345 draws per chain, 1000 drawn)", draws_needed=12345
    )
    assert draws_needed(ok, 1000, 4, checks=[undecided])[0] == 12350


def test_regen_summary_says_how_many_draws_when_not_reached():
    draws = _draws(60, trapped=False)  # exact, but 240 draws in all: ESS below 400
    labels = np.stack([np.stack([d.point["z"] for d in draws if d.chain == c]) for c in range(4)])
    alpha = np.stack([[float(np.exp(d.point["alpha_log__"])) for d in draws if d.chain == c] for c in range(4)])
    logp = np.stack([[d.stats[0]["partition_logp"] for d in draws if d.chain == c] for c in range(4)])
    with pytest.warns(UserWarning):
        table = arviz_regen.regen_summary({"z": labels, "alpha": alpha}, var_names="z", logp=logp, param_vars="auto")
    assert "alpha" in table.index and table.attrs["verdict_status"] == "NOT REACHED"
    assert table.attrs["draws_needed"] > 60
    assert table.attrs["verdict"].endswith(f"About {table.attrs['draws_needed']:,} draws per chain needed "
                                           f"({table.attrs['draws_needed_reason']}).")  # fmt: skip


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="at least 2"):
        StopWhenReached(n_chains=1)
    with pytest.raises(ValueError, match="`every`"):
        StopWhenReached(n_chains=4, every=5)
    with pytest.raises(KeyError, match="param_vars"):
        StopWhenReached(n_chains=4, param_vars=["beta"])(None, _draws(2, trapped=False)[0])
