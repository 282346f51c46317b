"""How long to run: the draws a verdict needs, and a ``pm.sample`` callback that stops when it is reached.

:class:`StopWhenConverged` stops on Hotelling-RS and the regenerative precision, which need a
fixed log posterior: with random hyperparameters it stands aside. The rule here uses what applies
to every partition model, hierarchical ones included: the verdict of
:func:`arviz_regen.regen_summary` (R-hat at most :data:`~arviz_regen.diagnostics.verdict.RHAT_MAX`
and bulk ESS at least :data:`~arviz_regen.diagnostics.verdict.MIN_ESS_PER_CHAIN` per chain for
``n_clusters``, ``partition_logp``, the distance traces of :func:`arviz_regen.partition_traces`
and the scalar parameters, such as the hyperparameters; chain agreement, Hotelling-RS where it
applies, the conditional check when computed). It is a run-length rule, not a test with error
control: it looks at the chains repeatedly and stops at the first PASS.

How many draws (:func:`draws_needed`). Bulk ESS grows about linearly with the draws of chains
that mix, so a trace with ESS ``e`` after ``n`` draws per chain needs about ``n · target / e``;
R-hat of such chains behaves as ``sqrt(1 + chains / ESS)`` (Vats & Knudson 2021), so ``R̂² − 1``
falls as ``1 / n`` and R-hat ``r`` needs about ``n (r² − 1) / (R̂max² − 1)``; an undecided
chain-agreement test says its own number (4 batches of 10 autocorrelation times). The estimate
is the largest of these. For chains trapped in different modes it is a lower bound: their
R-hat falls only once they cross; the estimate is capped at 100 times the draws drawn (a
"capped" note then says so).

Trapped chains. When the estimate is capped, an R-hat is above 1.1 or chain agreement rejects,
the NOT REACHED line says so in words a user can act on: the chains are stuck in different
states, how many items their most probable states differ in (the items to move to turn one into
the other), that the number of draws is a floor ("at least"), what it would cost at the run's
pace, and what to do instead of waiting.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import xarray as xr

from .online import _ChainWatch
from .verdict import MIN_ESS_PER_CHAIN, RHAT_APART, RHAT_MAX

__all__ = ["draws_needed", "StopWhenReached", "when_reached"]

#: largest factor over the draws drawn that :func:`draws_needed` reports
_CAP = 100
#: what a user can do when the chains are trapped (the end of a NOT REACHED line)
_TRAPPED_ADVICE = (
    "What to do: run much longer with a time budget (StopWhenReached(max_seconds=...)); or simplify the "
    "model (fewer items or dimensions, a prior that favours fewer clusters); or report the point estimate "
    "with its credible ball, knowing that chains which do not cross understate the uncertainty."
)


def _items_apart(a, b):
    """Count the items to move to turn partition ``a`` into partition ``b``.

    ``n`` minus the largest number of items the clusters of ``a`` and ``b`` can share when each
    cluster of ``a`` is paired with at most one of ``b`` (a maximum-weight matching of their
    contingency table): 0 for the same partition under any labels.

    Parameters
    ----------
    a, b : array_like of int
        Cluster labels of the same ``n`` items.

    Returns
    -------
    int
    """
    from scipy.optimize import linear_sum_assignment

    a, b = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"`a` and `b` must label the same items, got {a.size} and {b.size} labels.")
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = np.zeros((ia.max() + 1, ib.max() + 1), np.int64) if a.size else np.zeros((0, 0), np.int64)
    np.add.at(table, (ia, ib), 1)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return int(a.size - table[rows, cols].sum())


def _apart(best, chains):
    """Return the most items apart over pairs of chains, the pair, and the number of items.

    ``best`` holds one state per chain (its most probable draw), ``chains`` their names.
    """
    d = [
        (_items_apart(best[i], best[j]), chains[i], chains[j])
        for i in range(len(best))
        for j in range(i + 1, len(best))
    ]
    return (*max(d, key=lambda x: x[0]), len(best[0])) if d else None


def _duration(seconds):
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} minutes"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} hours"
    return f"{seconds / 86400:.0f} days"


def _trapped(table):
    """Chains apart: chain agreement rejects, an R-hat is above RHAT_APART, or the estimate was capped."""
    failing = table.attrs.get("verdict_status") == "FAIL" and "chain_agreement" in table.attrs.get("decided_by", "")
    r_hat = table["r_hat"].astype(float) if "r_hat" in getattr(table, "columns", ()) else None
    apart = r_hat is not None and bool((r_hat > RHAT_APART).any())
    return failing or apart or "capped" in table.attrs.get("draws_needed_reason", "")


def _not_reached_line(budget, t, table, apart=None, seconds_per_draw=None):
    """Return the NOT REACHED line: the draws needed and why; for trapped chains what it means and what to do."""
    need = max(int(table.attrs["draws_needed"]), t + 1)
    head = f"NOT REACHED within budget ({budget}, {t:,} draws per chain): "
    cost = f", about {_duration(need * seconds_per_draw)} at this run's pace" if seconds_per_draw else ""
    if not _trapped(table):
        return (
            head
            + f"about {need:,} draws per chain needed ({table.attrs['draws_needed_reason']}{cost}). "
            + (table.attrs["verdict"])
        )
    where = ""
    if apart is not None:
        most, i, j, n = apart
        where = (f"; the most probable states of chains {i} and {j} differ in {most:,} of {n:,} items "
                 "(items to move to turn one into the other)")  # fmt: skip
    why = table.attrs["draws_needed_reason"].split(" (capped")[0]
    return (
        head + f"the chains are stuck in different states ({why}{where}). More draws help only once they "
        f"cross, so the draws needed cannot be estimated: at least {need:,} per chain{cost}. {_TRAPPED_ADVICE} "
        + table.attrs["verdict"]
    )


def draws_needed(table, n_draw, n_chain, *, checks=None, rhat_max=RHAT_MAX, min_ess_per_chain=MIN_ESS_PER_CHAIN):
    """About how many draws per chain the verdict's R-hat, ESS and chain-agreement criteria need.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows with columns ``sd``, ``ess_bulk`` and ``r_hat`` (the table of
        :func:`arviz_regen.regen_summary`; rows without them are ignored).
    n_draw, n_chain : int
        Draws per chain and chains the table was computed on.
    checks : sequence of Check, optional
        The verdict's checks; an undecided chain-agreement check contributes the draws it names.
    rhat_max, min_ess_per_chain : float
        The criteria (those of the verdict by default).

    Returns
    -------
    tuple of (int, str)
        The draws per chain (at least ``n_draw``: already enough when the criteria hold) and the
        row or check that sets it.

    Examples
    --------
    >>> import pandas as pd
    >>> from arviz_regen import draws_needed
    >>> table = pd.DataFrame({"sd": [1.0, 1.0], "ess_bulk": [200.0, 900.0], "r_hat": [1.02, 1.0]},
    ...                      index=["n_clusters", "alpha"])
    >>> draws_needed(table, n_draw=1000, n_chain=4)
    (2010, 'R-hat of n_clusters is 1.020')
    """
    n_draw, target = int(n_draw), float(min_ess_per_chain) * int(n_chain)
    best, why = n_draw, "the criteria hold"
    cols = getattr(table, "columns", ())
    varies = table["sd"].astype(float) > 0 if "sd" in cols else None
    if "ess_bulk" in cols:
        for name, ess in table["ess_bulk"].astype(float).items():
            if np.isfinite(ess) and ess < target and (varies is None or varies[name]):
                need = n_draw * target / max(ess, 1.0)
                if need > best:
                    best, why = need, f"bulk ESS of {name} is {ess:.0f} < {target:.0f}"
    if "r_hat" in cols:
        for name, r in table["r_hat"].astype(float).items():
            if np.isfinite(r) and r > rhat_max:
                need = n_draw * (r * r - 1) / (rhat_max * rhat_max - 1)
                if need > best:
                    best, why = need, f"R-hat of {name} is {r:.3f}"
    for check in checks or ():
        if check.name == "chain_agreement" and check.status == "undecided" and check.draws_needed > best:
            best, why = check.draws_needed, "chain agreement needs 4 batches of 10 autocorrelation times"
    if best > _CAP * n_draw:  # chains in different regions: the 1/n law does not hold
        best = _CAP * n_draw
        why += f" (capped at {_CAP} times the draws: the chains sit apart, and more draws help only once they cross)"
    best = int(math.ceil(best))
    return (int(math.ceil(best / 10) * 10) if best > n_draw else n_draw), why


def _next_checkpoint(t, every, growth):
    return int(max(t + every, math.ceil(t * growth)))


class _Rows:
    """The checkpoints evaluated: status, draws needed and the worst R-hat / ESS at each."""

    def __init__(self):
        self.rows = []

    def add(self, t, table, seconds):
        stats = table[[c for c in ("r_hat", "ess_bulk") if c in table.columns]].astype(float)

        def extreme(col, f):
            return float(f(stats[col])) if col in stats and stats[col].notna().any() else np.nan

        self.rows.append({
            "draws": int(t),
            "status": table.attrs["verdict_status"],
            "draws_needed": int(table.attrs["draws_needed"]),
            "max_r_hat": extreme("r_hat", np.nanmax),
            "min_ess_bulk": extreme("ess_bulk", np.nanmin),
            "seconds": float(seconds),
        })  # fmt: skip

    def dataset(self, decision):
        r = self.rows
        ds = xr.Dataset(
            {
                name: (("checkpoint",), np.array([row[name] for row in r], dtype=dtype))
                for name, dtype in (
                    ("status", str),
                    ("draws_needed", np.int64),
                    ("max_r_hat", float),
                    ("min_ess_bulk", float),
                    ("seconds", float),
                )
            },  # fmt: skip
            coords={"checkpoint": np.array([row["draws"] for row in r], dtype=np.int64)},
        )
        ds["checkpoint"].attrs["long_name"] = "draws per chain at the checkpoint"
        ds.attrs.update({k: ("" if v is None else v) for k, v in decision.items() if k != "table"})
        return ds


def _decision(status, t, need, line, table=None):
    return {"status": status, "stopped_at": t, "draws_needed": need, "reason": line, "table": table}


class StopWhenReached(_ChainWatch):
    """``pm.sample`` callback: stop when the verdict is a PASS, or say how far it is at the budget.

    Works with random hyperparameters (where :class:`StopWhenConverged` stands aside). Every so
    many draws per chain (``every`` at first, then at least ``growth`` times the last
    checkpoint, so the checks cost a bounded share of the run) it computes
    :func:`arviz_regen.regen_summary` of the draws so far, with the scalar parameters of the model
    (``param_vars``; the hyperparameters) as rows and chain-agreement traces, and raises
    ``KeyboardInterrupt`` (PyMC's documented way to stop and return the draws) at the first
    PASS: R-hat at most 1.01 and bulk ESS at least 100 per chain (400 over 4 chains) for every
    trace, and no check rejecting. At the budget (the ``draws`` of ``pm.sample``, or
    ``max_seconds`` of wall time) it evaluates the draws it has and, if not reached, records
    "NOT REACHED within budget: about N draws per chain needed" (:func:`draws_needed`) and
    warns. It never reports a PASS it did not see. ``monitor.annotate(idata)`` adds the
    checkpoints as the ``convergence_monitor`` group.

    The chains must draw at the same time, as for :class:`StopWhenConverged`:
    ``pm.sample(chains=n_chains, cores=n_chains, callback=monitor)``; other runs are refused at
    the first draw. When it stops it cuts every chain to the checkpoint's draws (PyMC's
    in-memory traces), so ``pm.sample`` returns all chains with the draws the decision was made on.

    Parameters
    ----------
    n_chains : int
        Chains sampled (``chains`` and ``cores`` of ``pm.sample``).
    var_name : str
        The partition variable.
    every : int
        First checkpoint and smallest spacing of checkpoints (draws per chain).
    growth : float
        Each checkpoint is at least this multiple of the previous one (>= 1).
    max_seconds : float, optional
        Wall-time budget from the first draw (tuning included); the draw budget is ``pm.sample``'s
        ``draws``.
    param_vars : "auto" or sequence of str
        Names in the sampled point of scalar parameters to include (``"auto"``: every scalar
        value variable but the partition, on PyMC's transformed scale: R-hat and ESS are rank
        based, so the scale does not change them).
    logp_stat : str
        Sampler stat with the partition's log posterior.
    alpha : float
        Level of the verdict's tests.
    random_seed : int
        Seed of the verdict's permutations.
    verbose : bool
        Print one line per checkpoint.

    Attributes
    ----------
    decision : dict
        ``status`` ("reached", "not reached", or "running" before the end), ``stopped_at``
        (draws per chain of the last checkpoint), ``draws_needed``, ``reason`` (one line) and
        ``table`` (the last :func:`arviz_regen.regen_summary` table).
    history : xarray.Dataset
        The checkpoints evaluated.

    Examples
    --------
    >>> import arviz_regen
    >>> monitor = arviz_regen.StopWhenReached(n_chains=4, every=500, max_seconds=600)
    >>> monitor.status
    'waiting for 500 draws'

    Then ``pm.sample(draws=20_000, chains=4, cores=4, callback=monitor)`` and
    ``print(monitor.decision["reason"])``.
    """

    def __init__(
        self,
        n_chains,
        var_name="z",
        *,
        every=500,
        growth=1.25,
        max_seconds=None,
        param_vars="auto",
        logp_stat="partition_logp",
        alpha=0.05,
        random_seed=0,
        verbose=False,
    ):
        if int(n_chains) < 2:
            raise ValueError(f"`n_chains` must be at least 2 (R-hat compares chains), got {n_chains!r}.")
        if int(every) < 20:
            raise ValueError(f"`every` must be at least 20 draws, got {every!r}.")
        if not float(growth) >= 1:
            raise ValueError(f"`growth` must be at least 1, got {growth!r}.")
        if max_seconds is not None and not float(max_seconds) > 0:
            raise ValueError(f"`max_seconds` must be positive, got {max_seconds!r}.")
        self.n_chains = int(n_chains)
        self.var_name = var_name
        self.every, self.growth = int(every), float(growth)
        self.max_seconds = None if max_seconds is None else float(max_seconds)
        self.param_vars = param_vars
        self.logp_stat = logp_stat
        self.alpha = float(alpha)
        self.random_seed = random_seed
        self.verbose = bool(verbose)
        self._reset()
        from .monitor_registry import registry

        registry.register(self)

    def _reset(self):
        super()._reset()
        self._labels, self._logp, self._params = {}, {}, {}
        self._names = None
        self._finished = set()
        self._start = None
        self._next = self.every
        self._rows = _Rows()
        self._decision = _decision("running", None, None, "no checkpoint reached yet")

    @property
    def decision(self):
        return dict(self._decision)

    @property
    def history(self):
        return self._rows.dataset(self._decision)

    @property
    def status(self):
        """One short line for a progress bar."""
        if not self._rows.rows:
            return f"waiting for {self._next} draws"
        r = self._rows.rows[-1]
        return (
            f"{r['draws']}: {r['status']}, R-hat {r['max_r_hat']:.3f}, ESS {r['min_ess_bulk']:.0f}, "
            f"need ~{r['draws_needed']}"
        )

    def __call__(self, trace=None, draw=None):
        if draw is None:
            return
        c = int(draw.chain)
        if self._new_run(c, trace, draw):
            self._reset()
        if self._start is None:
            self._start = time.monotonic()
        self._check_chains(c, trace)
        if trace is not None:
            self._traces[c] = trace
        if draw.tuning:
            self._tuning[c] = self._tuning.get(c, 0) + 1
            self._over_time()
            return
        self._check_turns(c, draw)
        self._record(c, draw)
        if getattr(draw, "is_last", False):
            self._finished.add(c)
        t = self._common_length()
        if t >= self._next:
            self._next = _next_checkpoint(t, self.every, self.growth)
            table = self._evaluate(t)
            if table.attrs["verdict_status"] == "PASS":
                self._stop(t, table, "reached")
        if len(self._finished) == self.n_chains:
            self._final(t, "the draws of pm.sample")  # the draw budget: PyMC ends by itself
            return
        self._over_time()

    def _common_length(self):
        return min((len(v) for v in self._labels.values()), default=0) if len(self._labels) == self.n_chains else 0

    def _over_time(self):
        """At the time budget: decide on the draws so far, cut the chains there and stop."""
        if self.max_seconds is None or self._start is None or time.monotonic() - self._start <= self.max_seconds:
            return
        t = self._common_length()
        self._final(t, f"{self.max_seconds:g} s")
        self._cut_traces(t)
        raise KeyboardInterrupt(self._decision["reason"])

    def _final(self, t, budget):
        """Decide at the end of the budget, on ``t`` draws per chain."""
        if t < 20:
            self._decision = _decision("not reached", t, None, f"NOT REACHED within budget ({budget}): "
                                       f"{t} draws per chain, too few to judge; run longer.")  # fmt: skip
            self._warn()
            return
        table = self._last_table if self._rows.rows and self._rows.rows[-1]["draws"] == t else self._evaluate(t)
        if table.attrs["verdict_status"] == "PASS":
            self._decision = _decision("reached", t, t, self._line("reached", t, table), table)
            return
        need = max(int(table.attrs["draws_needed"]), t + 1)
        self._decision = _decision("not reached", t, need, self._line("not reached", t, table, budget), table)
        self._warn()

    def _record(self, c, draw):
        point = draw.point
        if self.var_name not in point:
            raise KeyError(f"StopWhenReached: {self.var_name!r} is not a variable of the sampled point.")
        if self._names is None:
            self._names = self._param_names(point)
        self._labels.setdefault(c, []).append(np.asarray(point[self.var_name], dtype=np.int64).copy())
        self._logp.setdefault(c, []).append(self._stat(draw.stats))
        self._params.setdefault(c, []).append([float(np.asarray(point[n]).reshape(-1)[0]) for n in self._names])

    def _param_names(self, point):
        if isinstance(self.param_vars, str) and self.param_vars == "auto":
            return [n for n, v in point.items() if n != self.var_name and np.size(v) == 1]
        names = [self.param_vars] if isinstance(self.param_vars, str) else list(self.param_vars or ())
        wrong = [n for n in names if n not in point or np.size(point[n]) != 1]
        if wrong:
            scalars = [n for n, v in point.items() if np.size(v) == 1]
            raise KeyError(
                f"StopWhenReached: `param_vars` {wrong} are not scalar variables of the sampled point ({scalars})."
            )
        return names

    def _stat(self, stats):
        names = [self.logp_stat, f"{self.logp_stat}_{self.var_name}"]
        for group in stats if isinstance(stats, (list, tuple)) else [stats]:
            for name in names:
                if isinstance(group, dict) and name in group:
                    return float(group[name])
        raise KeyError(
            f"StopWhenReached needs the sampler stat {self.logp_stat!r} (recorded by the "
            "pymc_partition steps); it was not among this draw's stats."
        )

    def _evaluate(self, t):
        chains = sorted(self._labels)
        data = {self.var_name: np.stack([np.stack(self._labels[c][:t]) for c in chains])}
        params = np.stack([np.asarray(self._params[c][:t], dtype=float).reshape(t, -1) for c in chains])
        for j, name in enumerate(self._names):
            data[name] = params[:, :, j]
        logp = np.stack([np.asarray(self._logp[c][:t]) for c in chains])
        table = _summary(data, self.var_name, logp, list(self._names), self.alpha, self.random_seed)
        self._last_table = table
        self._rows.add(t, table, time.monotonic() - self._start)
        if self.verbose:
            print(f"[StopWhenReached] {self.status}", flush=True)
        return table

    def _line(self, status, t, table, budget=None):
        if status == "reached":
            return f"PASS reached at {t} draws per chain: " + table.attrs["verdict"]
        apart = None
        if _trapped(table):
            chains = sorted(self._labels)
            apart = _apart([self._labels[c][int(np.argmax(self._logp[c][:t]))] for c in chains], chains)
        pace = None
        if self._start is not None:
            elapsed = time.monotonic() - self._start
            pace = elapsed / max(t + min(self._tuning.values(), default=0), 1)
        return _not_reached_line(budget, t, table, apart, pace)

    def _stop(self, t, table, status):
        self._decision = _decision(status, t, t, self._line(status, t, table), table)
        self._cut_traces(t)
        raise KeyboardInterrupt(self._decision["reason"])

    def _warn(self):
        warnings.warn(self._decision["reason"], RuntimeWarning, stacklevel=4)

    def annotate(self, idata):
        """Record the checkpoints and the decision in an InferenceData or DataTree.

        They go to the group ``convergence_monitor``; the decision line also to ``sample_stats.attrs``.
        """
        from ..xr.containers import add_group, group_names, is_datatree, is_inference_data

        if not (is_inference_data(idata) or is_datatree(idata)):
            raise TypeError(f"`idata` must be an InferenceData or a DataTree, got {type(idata).__name__}.")
        hist = self.history
        add_group(idata, "convergence_monitor", hist, replace=True)
        if "sample_stats" in group_names(idata):
            idata["sample_stats"].attrs["convergence_monitor"] = hist.attrs["reason"]
        return idata


def _summary(data, var_name, logp, param_vars, alpha, random_seed, coords=None):
    from .summary import regen_summary

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the table says what the warnings would
        return regen_summary(data, var_names=var_name, logp=logp, param_vars=param_vars or None,
                             alpha=alpha, random_seed=random_seed, coords=coords)  # fmt: skip


def when_reached(data, var_names=None, *, every=500, growth=1.25, param_vars="auto", alpha=0.05, random_seed=0):
    """Where :class:`StopWhenReached` would have stopped chains already drawn.

    Parameters
    ----------
    data : InferenceData or DataTree
        Draws of ``pm.sample`` (a ``conditional_checks`` group, when present, enters the verdict).
    var_names : str, optional
        The partition variable.
    every, growth, param_vars, alpha, random_seed
        As for :class:`StopWhenReached` (``param_vars`` names posterior variables).

    Returns
    -------
    xarray.Dataset
        One row per checkpoint evaluated, up to the first PASS; ``attrs`` ``status`` ("reached"
        or "not reached"), ``stopped_at``, ``draws_needed`` and ``reason``.

    Examples
    --------
    ``arviz_regen.when_reached(idata, var_names="z").attrs["reason"]`` after ``pm.sample``.
    """
    from ..xr.draws import load_partition

    pdraws = load_partition(data, var_names)
    name, draws = pdraws.name, np.asarray(pdraws.draw)
    n_draw = draws.size
    rows, start = _Rows(), time.monotonic()
    t, table = min(int(every), n_draw), None
    while True:  # the first t draws: a label slice (inclusive) up to the t-th draw's coordinate
        coords = {"draw": slice(draws[0], draws[t - 1])}
        table = _summary(data, name, None, param_vars, alpha, random_seed, coords=coords)
        rows.add(t, table, time.monotonic() - start)
        if table.attrs["verdict_status"] == "PASS" or t >= n_draw:
            break
        t = min(_next_checkpoint(t, int(every), float(growth)), n_draw)
    if table.attrs["verdict_status"] == "PASS":
        decision = _decision("reached", t, t, f"PASS reached at {t} draws per chain: {table.attrs['verdict']}")
    else:
        need = max(int(table.attrs["draws_needed"]), t + 1)
        apart = None
        if _trapped(table):
            idx = pdraws.index[:, :t]  # each chain's most probable draw, or its last without a log posterior
            rep = [row[np.argmax(pdraws.logp[row])] if pdraws.logp is not None else row[-1] for row in idx]
            apart = _apart(pdraws.labels[np.asarray(rep)], list(pdraws.chain))
        decision = _decision("not reached", t, need, _not_reached_line("the draws given", t, table, apart))
    return rows.dataset(decision)
