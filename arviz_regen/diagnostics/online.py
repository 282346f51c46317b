"""Online convergence: stop sampling when the answer is good enough, with error control.

The paper's open problem ("establishing at each iteration, or batch of iterations, whether
another one is required"). At checkpoints t_1 < t_2 < … (a geometric grid of draws per chain)
the rule looks at the first t_j draws of every chain, without look-ahead, and asks two things:

(a) *Verdict.* The all-chains Hotelling-RS verdict ``p_value_all`` (combined over the K values by
    Simes' combination (:func:`arviz_regen.base.tour_tests.simes`), as in
    :func:`arviz_regen.regen_summary`) at level α_j, taken once every top state has been visited in
    at least :data:`arviz_regen.diagnostics.hotelling.MIN_TOURS_VISITING` tours (pooled over
    chains). Looking at J checkpoints is J tests, so the level is spent: α_j = α / J over the J
    checkpoints of the grid (Bonferroni over the looks). Whatever the dependence between looks, P(a
    correct sampler is ever flagged) ≤ Σ α_j = α. The bootstrap of each look may draw up to 6/α_j
    replicates so that the combined p-value can fall below α_j (it stops after a few dozen when the
    p-value is clearly large).
(b) *Precision.* Regenerative standard errors of the quantities of interest, by default the
    co-clustering probabilities of the pooled chains: ``"fixed_width"`` stops when every
    half-width z·se is at most ``epsilon`` (Jones, Haran, Caffo & Neath 2006), ``"relative"``
    when every CV = se / max(ρ, 1 − ρ) is at most ``epsilon`` (the paper's Figure 2b scale).

The rule stops ("converged") at the first checkpoint where (b) holds and (a) has never flagged.
It can only flag what the draws show before the precision is reached: a fast-mixing chain
with a small error in its relative frequencies (say the top state 30% too frequent) reaches
a coarse precision (ε = 0.04) after a few hundred draws, when the test cannot see the error
yet; asking ε = 0.02 gave the test the draws it needs (flagged in all of 20 runs). Ask for
the precision you need for the question, not a coarse one.
Once flagged, it never declares convergence: it keeps sampling to the end and reports the flag
(a correct sampler is flagged with probability at most α over the whole run).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import xarray as xr

from ..xr.containers import add_group, get_group, group_names, is_datatree, is_inference_data

__all__ = ["StopWhenConverged", "when_converged", "checkpoint_grid", "active_monitor"]


def active_monitor():
    """Return the active :class:`StopWhenConverged`, or None.

    The active monitor is the newest one not closed and still alive: see
    :mod:`arviz_regen.diagnostics.monitor_registry`.

    Step methods that draw a progress bar (the pymc_partition partition steps) add a column with
    its :attr:`StopWhenConverged.status`, so the monitor's state is shown while sampling.
    """
    from .monitor_registry import registry

    return registry.active


_PRECISION = ("fixed_width", "relative")
#: PyMC's sampling processes are named ``worker_chain_<chain>`` (PyMC 5 and 6)
_WORKER_PREFIX = "worker_chain_"


def checkpoint_grid(first=1000, growth=1.5, max_draws=1_000_000):
    """Geometric grid of checkpoints (draws per chain): first, first·growth, … ≤ max_draws.

    Parameters
    ----------
    first : int
        First checkpoint.
    growth : float
        Ratio of consecutive checkpoints (> 1).
    max_draws : int
        Largest draw count considered; the last checkpoint is max_draws itself.

    Returns
    -------
    numpy.ndarray of int64
    """
    first, max_draws = int(first), int(max_draws)
    if first < 10:
        raise ValueError(f"`first` must be at least 10 draws, got {first}.")
    if not growth > 1:
        raise ValueError(f"`growth` must be larger than 1, got {growth!r}.")
    if max_draws < first:
        raise ValueError(f"`max_draws` ({max_draws}) must be at least `first` ({first}).")
    grid = [first]
    while grid[-1] * growth < max_draws:
        grid.append(int(math.ceil(grid[-1] * growth)))
    if grid[-1] != max_draws:
        grid.append(max_draws)
    return np.array(grid, dtype=np.int64)


class _Rule:
    """Settings shared by the callback and the function form, and one checkpoint's evaluation."""

    def __init__(self, var_name, alpha, k, precision, epsilon, confidence, checkpoints, n_bootstrap, random_seed):
        if not 0 < float(alpha) < 1:
            raise ValueError(f"`alpha` must be in (0, 1), got {alpha!r}.")
        if precision not in _PRECISION:
            raise ValueError(f"`precision` must be one of {_PRECISION}, got {precision!r}.")
        if not float(epsilon) > 0:
            raise ValueError(f"`epsilon` must be positive, got {epsilon!r}.")
        if not 0 < float(confidence) < 1:
            raise ValueError(f"`confidence` must be in (0, 1), got {confidence!r}.")
        from .hotelling import MIN_TOURS_VISITING

        self.min_tours = MIN_TOURS_VISITING
        self.var_name = var_name
        self.alpha = float(alpha)
        self.k = [int(v) for v in np.atleast_1d(k)]
        self.precision = precision
        self.epsilon = float(epsilon)
        self.confidence = float(confidence)
        self.checkpoints = np.asarray(checkpoints, dtype=np.int64)
        if self.checkpoints.ndim != 1 or self.checkpoints.size == 0 or np.any(np.diff(self.checkpoints) <= 0):
            raise ValueError("`checkpoints` must be a non-empty increasing sequence of draw counts.")
        self.alpha_look = self.alpha / self.checkpoints.size
        # a Monte Carlo p-value is at least 1/(B + 1), p_value_all a Simes combination of three
        # (at least 3/(B + 1)) and the verdict their Simes combination over K (at most K times
        # the smallest): it can fall below the level only with B well above 3K/level
        self.n_bootstrap = max(int(n_bootstrap), int(math.ceil(6 / (self.alpha_look / len(self.k)))))
        self.random_seed = random_seed
        self.z = float(_normal_quantile(0.5 + self.confidence / 2))

    def evaluate(self, pdraws):
        """One checkpoint from its draws (a PartitionDraws of t draws per chain): a dict of results."""
        from ..estimates.coclustering import coclustering
        from .hotelling import hotelling_rs

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hot = hotelling_rs(pdraws, k=self.k, n_bootstrap=self.n_bootstrap, random_seed=self.random_seed)
            cc = coclustering(pdraws, combined=True)
        from ..base.tour_tests import simes

        p_all = np.atleast_1d(hot["p_value_all"].values)
        level = self.alpha_look
        # a look counts once every top state was seen in a few tours (the diagnostic's own
        # "too few" threshold): earlier, the verdict rests on a handful of excursions
        visiting = hot["tours_visiting"].values.sum(axis=0)[: max(self.k)]
        reached = bool(np.all(np.isfinite(p_all))) and bool(np.all(visiting >= self.min_tours))
        flagged = reached and float(simes(p_all)) < level
        n = cc["rho"].shape[-1]
        iu = np.triu_indices(n, 1)
        rho = np.asarray(cc["rho"].values)[iu]
        se = np.asarray(cc["se"].values)[iu]
        if self.precision == "fixed_width":
            width = self.z * se
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                width = se / np.maximum(rho, 1 - rho)
        worst = float(np.nanmax(width)) if np.isfinite(width).any() else np.nan
        precise = bool(np.isfinite(width).all() and worst <= self.epsilon)
        return {
            "p_value_all": p_all,
            "level": level,
            "verdict_reached": reached,
            "flagged": flagged,
            "precision": worst,
            "precise": precise,
            "se_method": cc.attrs.get("se_method", "regenerative"),
        }

    def history(self, rows, decision):
        """Dataset of the checkpoints evaluated so far, with the decision in attrs."""
        if not rows:
            ds = xr.Dataset(coords={"checkpoint": np.zeros(0, dtype=np.int64), "k": self.k})
        else:
            ds = xr.Dataset(
                {
                    "p_value_all": (("checkpoint", "k"), np.array([r["p_value_all"] for r in rows])),
                    "level": (("checkpoint",), np.array([r["level"] for r in rows])),
                    "flagged": (("checkpoint",), np.array([r["flagged"] for r in rows])),
                    "verdict_reached": (("checkpoint",), np.array([r["verdict_reached"] for r in rows])),
                    "precision": (("checkpoint",), np.array([r["precision"] for r in rows])),
                    "precise": (("checkpoint",), np.array([r["precise"] for r in rows])),
                },
                coords={"checkpoint": np.array([r["draws"] for r in rows], dtype=np.int64), "k": self.k},
            )
        ds["checkpoint"].attrs["long_name"] = "draws per chain at the checkpoint"
        ds.attrs.update(
            {
                "rule": "stop at the first checkpoint with precision reached and no flag so far",
                "alpha": self.alpha,
                "alpha_per_look": self.alpha_look,
                "n_checkpoints_planned": int(self.checkpoints.size),
                "precision_criterion": self.precision,
                "epsilon": self.epsilon,
                "confidence": self.confidence,
                "n_bootstrap": self.n_bootstrap,
                **{key: (val if val is not None else "") for key, val in decision.items()},
            }
        )
        return ds


def _normal_quantile(p):
    from statistics import NormalDist

    return NormalDist().inv_cdf(p)


def _decide(rows, checkpoints):
    """Decision after the evaluated checkpoints: converged / flagged / undecided."""
    flagged_at = next((r["draws"] for r in rows if r["flagged"]), None)
    if flagged_at is not None:
        return {
            "status": "flagged",
            "stopped_at": None,
            "flagged_at": int(flagged_at),
            "reason": f"Hotelling-RS flagged the chains at {flagged_at} draws: not converged.",
        }
    done = next((r for r in rows if r["precise"] and r["verdict_reached"]), None)
    if done is not None:
        return {
            "status": "converged",
            "stopped_at": int(done["draws"]),
            "flagged_at": None,
            "reason": f"precision reached at {done['draws']} draws with no flag so far.",
        }
    return {
        "status": "undecided",
        "stopped_at": None,
        "flagged_at": None,
        "reason": "precision not reached yet" if rows else "no checkpoint reached yet",
    }


class _ChainWatch:
    """Hold what the ``pm.sample`` monitors share.

    A run's chains drawn at the same time, a new run recognised, and the traces cut at the draws a
    decision was made on.
    """

    def _reset(self):
        self._tuning = {}  # tuning draws per chain: where each trace's checkpoint draws end
        self._traces = {}  # PyMC's trace of each chain, cut at the checkpoint when it stops
        self._workers_checked = False
        self._warned_turns = False
        self._cut = None

    def close(self):
        """Stop being the monitor progress bars show (:mod:`arviz_regen.diagnostics.monitor_registry`).

        Also called at the end of a ``with`` block. The decision and history stay readable.
        """
        from .monitor_registry import registry

        registry.unregister(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _new_run(self, c, trace, draw):
        """Whether this draw starts another ``pm.sample`` run.

        It does when a chain this monitor already holds comes with another trace object, or starts again at its first
        draw.
        """
        if c in self._traces and trace is not None and trace is not self._traces[c]:
            return True
        known = c in self._labels or c in self._tuning
        return known and getattr(draw, "draw_idx", None) == 0

    def _check_chains(self, c, trace):
        """Refuse a run whose chains do not all draw at the same time (see the class docstring)."""
        if not 0 <= c < self.n_chains:
            raise ValueError(
                f"{type(self).__name__}(n_chains={self.n_chains}) received a draw of chain {c}: "
                "pm.sample runs more chains than n_chains. Pass n_chains equal to pm.sample's "
                "`chains`, and cores=chains."
            )
        if trace is None or self._workers_checked:
            return  # not called by pm.sample (trace is one of its arguments), or checked
        self._workers_checked = True
        running = _pymc_workers()
        if self.n_chains == 1 and not running:
            return
        if not running:
            raise ValueError(
                f"{type(self).__name__}(n_chains={self.n_chains}) needs its {self.n_chains} chains "
                "drawing at the same time, but pm.sample draws them one after the other in this "
                "process (cores=1): the rule could act only in the last chain. Sample with "
                f"cores=chains={self.n_chains}, or check chains already drawn with "
                "arviz_regen.when_converged(idata) or arviz_regen.when_reached(idata)."
            )
        if running != list(range(self.n_chains)):
            raise ValueError(
                f"{type(self).__name__}(n_chains={self.n_chains}) got a run of {len(running)} "
                f"chain(s) {running}: it would wait for chains that never come, or miss some. "
                "Pass n_chains equal to pm.sample's `chains`."
            )

    def _check_turns(self, c, draw):
        """Warn once when a chain ends before every chain has started (cores < chains)."""
        if getattr(draw, "is_last", False) and not self._warned_turns:
            waiting = sorted(set(range(self.n_chains)) - set(self._tuning) - set(self._labels))
            if waiting:
                self._warned_turns = True
                warnings.warn(
                    f"{type(self).__name__}: chain {c} ended before chain(s) {waiting} started "
                    "(pm.sample with cores < chains draws the chains in turns): the rule can stop "
                    "only the last ones. Sample with cores=chains to stop all chains early.",
                    RuntimeWarning,
                    stacklevel=3,
                )

    def _cut_traces(self, t):
        """Cut every chain's trace after its first ``t`` draws (tuning draws kept).

        PyMC then returns all chains with the draws the decision was made on, not the longest chain alone.
        """
        self._cut = t
        cut = []
        for c, trace in self._traces.items():
            end = self._tuning.get(c, 0) + t
            # PyMC's NDArray trace: `draw_idx` draws recorded, cut by its close() after the stop
            if isinstance(getattr(trace, "draw_idx", None), int) and trace.draw_idx >= end:
                trace.draw_idx = end
                cut.append(c)
        if self._traces and len(cut) < len(self._traces):
            warnings.warn(
                f"{type(self).__name__} stopped at {t} draws per chain but could not cut the traces of "
                f"chain(s) {sorted(set(self._traces) - set(cut))} (a trace backend without "
                "`draw_idx`): PyMC keeps the chains of unequal length that maximise chains x "
                "shortest length, which may not be all of them; annotate() checks.",
                RuntimeWarning,
                stacklevel=3,
            )


class StopWhenConverged(_ChainWatch):
    """``pm.sample`` callback: stop when the chains agree with the posterior and estimates are precise.

    Use it with parallel chains, ``pm.sample(draws=1_000_000, chains=4, cores=4,
    callback=StopWhenConverged(n_chains=4))``: at each checkpoint (first ``t`` draws of every
    chain, evaluated once the slowest chain has them) it computes the all-chains Hotelling-RS
    verdict and the regenerative precision of the co-clustering probabilities, and raises
    ``KeyboardInterrupt`` (which PyMC documents as the way to stop and return what was drawn)
    as soon as the precision holds and the verdict has never flagged. Then
    ``monitor.annotate(idata)`` writes the decision into the returned InferenceData.

    The rule looks at all chains together, so they should draw at the same time:
    ``pm.sample(chains=n_chains, cores=n_chains)``. At the first draw the callback counts the
    chains of the run (PyMC's sampling processes are named ``worker_chain_<chain>``) and refuses,
    with a ValueError that stops ``pm.sample``, another number of chains than ``n_chains``, and
    chains drawn one after the other in this process (``cores=1``), where the rule could act only
    in the last chain. With ``1 < cores < chains`` PyMC draws the chains in turns: the rule can
    then stop only the last ones (the earlier ones are drawn to the end first, then cut as below),
    and says so in a warning when the first chain ends before the last has started.

    Parallel chains do not run at the same speed (PyMC serves whichever process is ready first,
    so one chain can be several times longer than another), and after an interruption PyMC keeps
    the chains that maximise chains x shortest length: often the longest chain alone. So when
    it stops, the callback cuts every chain's trace to the checkpoint's draws (PyMC's default
    in-memory traces), and ``pm.sample`` returns all chains, each with exactly the draws the
    decision was made on. With a trace backend it cannot cut it warns, and :meth:`annotate`
    refuses draws that are not the ones the decision was made on.

    Parameters
    ----------
    n_chains : int
        Chains sampled (``chains`` of ``pm.sample``), all at the same time (``cores >= chains``);
        every checkpoint waits for all of them.
    var_name : str
        The partition variable.
    alpha : float
        Probability that a correct sampler is ever flagged over the whole run (at most).
    k : int or sequence of int
        K values of the verdict.
    precision : {"fixed_width", "relative"}
    epsilon : float
        Largest half-width (fixed width) or CV (relative) accepted.
    confidence : float
        Confidence of the half-widths (fixed width).
    first, growth, max_draws : checkpoint grid (:func:`checkpoint_grid`); ``max_draws`` should be
        the ``draws`` passed to ``pm.sample`` (the level is spent over the grid up to it).
    checkpoints : sequence of int, optional
        Explicit checkpoints instead of the grid.
    logp_stat : str
        Sampler stat with the log posterior of the state (the default also finds
        ``partition_logp_<var_name>``, recorded when the model has several partitions).
    n_bootstrap, random_seed : passed to :func:`arviz_regen.hotelling_rs` (at least 20/level
        replicates are used).
    verbose : bool
        Print one line per checkpoint.

    Attributes
    ----------
    decision : dict
        ``status`` ("converged", "flagged", "undecided"), ``stopped_at``, ``flagged_at``, ``reason``.
    history : xarray.Dataset
        The checkpoints evaluated (p-values, levels, precision).
    """

    def __init__(
        self,
        n_chains,
        var_name="z",
        *,
        alpha=0.05,
        k=(2, 5),
        precision="fixed_width",
        epsilon=0.02,
        confidence=0.95,
        first=1000,
        growth=1.5,
        max_draws=1_000_000,
        checkpoints=None,
        logp_stat="partition_logp",
        n_bootstrap=499,
        random_seed=0,
        verbose=False,
    ):
        if int(n_chains) < 1:
            raise ValueError(f"`n_chains` must be a positive int, got {n_chains!r}.")
        grid = checkpoint_grid(first, growth, max_draws) if checkpoints is None else checkpoints
        self._rule = _Rule(var_name, alpha, k, precision, epsilon, confidence, grid, n_bootstrap, random_seed)
        self.n_chains = int(n_chains)
        self.logp_stat = logp_stat
        self.verbose = bool(verbose)
        self._reset()
        from .monitor_registry import registry

        registry.register(self)  # progress bars show the newest monitor's status

    def _reset(self):
        """Forget every draw: a new run (``pm.sample`` called again with this monitor)."""
        super()._reset()
        self._labels = {}
        self._logp = {}
        self._rows = []
        self._next = 0
        self._logp_of = {}  # log posterior of each state seen: is it a function of the state?
        self._varying = None  # the reason, once it is not: the rule then stands aside

    def _check_target(self, labels, value):
        """Set :attr:`_varying` when a state comes back with another log posterior.

        The tolerance is the same relative 1e-6 as :func:`arviz_regen.hotelling_rs`: the chain on the partition alone
        has no fixed target (random hyperparameters), and the rule cannot judge it.
        """
        key = hash(labels.tobytes())  # the samplers' labels are canonical; a hash keeps it small
        seen = self._logp_of.setdefault(key, value)
        if abs(seen - value) > 1e-6 * max(1.0, abs(seen)):
            from ..xr.draws import varying_logp_message

            self._stand_aside(varying_logp_message("StopWhenConverged", self.logp_stat, abs(seen - value)))

    def _stand_aside(self, message):
        self._varying = message + (" StopWhenConverged stands aside: pm.sample runs to the end and "
                                   "returns every draw. arviz_regen.StopWhenReached stops such "
                                   "runs on R-hat, ESS and chain agreement.")  # fmt: skip
        self._labels, self._logp, self._logp_of = {}, {}, {}
        warnings.warn(self._varying, RuntimeWarning, stacklevel=4)

    @property
    def status(self):
        """One short line for a progress bar: last checkpoint, verdict, precision."""
        if not self._rows:
            return f"waiting for {int(self._rule.checkpoints[0])} draws"
        r = self._rows[-1]
        verdict = "FLAGGED" if self.decision["status"] == "flagged" else ("ok" if r["verdict_reached"] else "few tours")
        return f"{r['draws']}: {verdict}, ±{r['precision']:.3f}/{self._rule.epsilon:g}"

    @property
    def decision(self):
        if self._varying is not None:
            return {"status": "undecided", "stopped_at": None, "flagged_at": None, "reason": self._varying}
        return _decide(self._rows, self._rule.checkpoints)

    @property
    def history(self):
        return self._rule.history(self._rows, self.decision)

    def _stat(self, stats):
        # with several partitions in the model the steps record partition_logp_<var>
        names = [self.logp_stat]
        if self.logp_stat == "partition_logp":
            names.append(f"partition_logp_{self._rule.var_name}")
        for name in names:
            for group in stats if isinstance(stats, (list, tuple)) else [stats]:
                if isinstance(group, dict) and name in group:
                    return float(group[name])
        raise KeyError(
            f"StopWhenConverged needs the sampler stat {self.logp_stat!r} (recorded by the "
            "pymc_partition steps); it was not among this draw's stats."
        )

    def __call__(self, trace=None, draw=None):
        if draw is None:
            return
        c = int(draw.chain)
        if self._new_run(c, trace, draw):
            self._reset()  # a monitor reused for another pm.sample decides on that run alone
        self._check_chains(c, trace)
        if trace is not None:
            self._traces[c] = trace
        if draw.tuning:
            self._tuning[c] = self._tuning.get(c, 0) + 1
            return
        self._check_turns(c, draw)
        if self._varying is not None:
            return  # no fixed target: nothing to decide, every draw is kept
        point = draw.point
        if self._rule.var_name not in point:
            raise KeyError(f"StopWhenConverged: {self._rule.var_name!r} is not a variable of the sampled point.")
        labels = np.asarray(point[self._rule.var_name], dtype=np.int64).copy()
        value = self._stat(draw.stats)
        self._check_target(labels, value)
        if self._varying is not None:
            return
        self._labels.setdefault(c, []).append(labels)
        self._logp.setdefault(c, []).append(value)
        while (
            self._next < self._rule.checkpoints.size
            and len(self._labels) == self.n_chains
            and self.decision["status"] != "flagged"  # final: no need to look again
        ):
            t = int(self._rule.checkpoints[self._next])
            if min(len(v) for v in self._labels.values()) < t:
                return
            chains = sorted(self._labels)
            labels = np.stack([np.stack(self._labels[ch][:t]) for ch in chains])
            logp = np.stack([np.asarray(self._logp[ch][:t]) for ch in chains])
            try:
                self._add(t, _load(labels, logp))
            except ValueError as err:
                if "fixed target" not in str(err):
                    raise
                self._stand_aside(str(err))  # seen by the diagnostic first: the same reason
                return
            self._next += 1
            if self.decision["status"] == "converged":
                self._cut_traces(t)
                raise KeyboardInterrupt(self.decision["reason"])

    def _add(self, t, pdraws):
        row = self._rule.evaluate(pdraws)
        row["draws"] = t
        self._rows.append(row)
        if self.verbose:
            print(
                f"[StopWhenConverged] {t} draws/chain: p_value_all={np.round(row['p_value_all'], 4).tolist()} "
                f"(level {row['level']:.2g}), {'FLAGGED' if row['flagged'] else 'ok'}; "
                f"precision {row['precision']:.4f} (target {self._rule.epsilon})",
                flush=True,
            )

    def annotate(self, idata):
        """Record the decision in an InferenceData or DataTree (group ``convergence_monitor``).

        Raises
        ------
        ValueError
            If the posterior of ``idata`` does not hold the chains the monitor watched (as many
            chains, as many draws as the shortest of them): its decision is not about these draws.
        """
        hist = self.history
        if not (is_inference_data(idata) or is_datatree(idata)):
            raise TypeError(f"`idata` must be an InferenceData or a DataTree, got {type(idata).__name__}.")
        self._check_same_draws(idata)
        add_group(idata, "convergence_monitor", hist, replace=True)
        if "sample_stats" in group_names(idata):
            idata["sample_stats"].attrs["convergence_monitor"] = hist.attrs["reason"]
        return idata

    def _check_same_draws(self, idata):
        if not self._labels or "posterior" not in group_names(idata):
            return
        sizes = get_group(idata, "posterior").sizes
        watched = [self._cut or len(self._labels[c]) for c in sorted(self._labels)]
        held = (int(sizes.get("chain", 0)), int(sizes.get("draw", 0)))
        if held != (len(watched), min(watched)):
            raise ValueError(
                f"`idata` holds {held[0]} chain(s) x {held[1]} draws, but the monitor watched "
                f"{len(watched)} chain(s) of {watched} draws: its decision "
                f"({self.decision['reason']}) is not about these draws."
            )


def _load(labels, logp):
    """Reduce a checkpoint's labels (chain, t, item) and logp (chain, t) once, for every test of the look."""
    from ..xr.draws import load_partition

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # labels canonicalised as the diagnostics would
        return load_partition(labels, logp=logp)


def _first_draws(pdraws, logp, t):
    """Return the first ``t`` draws of every chain of reduced draws, as :func:`_load` would reduce them.

    The states of the prefix keep their sorted keys and their log posterior; the draws are not
    reduced again at each look.
    """
    from ..xr.draws import PartitionDraws

    used, inverse = np.unique(pdraws.index[:, :t], return_inverse=True)
    return PartitionDraws(
        name=pdraws.name,
        item_dim=pdraws.item_dim,
        chain=pdraws.chain,
        draw=pdraws.draw[:t],
        n_items=pdraws.n_items,
        keys=pdraws.keys[used],
        index=inverse.reshape(pdraws.n_chain, t).astype(np.int64),
        logp=logp[used],
        logp_name=pdraws.logp_name,
        item_coord=pdraws.item_coord,
    )


def _pymc_workers():
    """Chain numbers of PyMC's sampling processes running now (none when it samples in-process)."""
    import multiprocessing

    return sorted(
        int(p.name[len(_WORKER_PREFIX):]) for p in multiprocessing.active_children()
        if p.name.startswith(_WORKER_PREFIX) and p.name[len(_WORKER_PREFIX):].isdigit()
    )  # fmt: skip


def when_converged(
    data,
    var_names=None,
    *,
    alpha=0.05,
    k=(2, 5),
    precision="fixed_width",
    epsilon=0.02,
    confidence=0.95,
    first=1000,
    growth=1.5,
    max_draws=None,
    checkpoints=None,
    n_bootstrap=499,
    random_seed=0,
    logp_var="partition_logp",
    logp=None,
):
    """Where the online rule of :class:`StopWhenConverged` would have stopped chains already drawn.

    Parameters
    ----------
    data : InferenceData, DataTree, Dataset, dict or array (see :func:`arviz_regen.hotelling_rs`)
    var_names : str, optional
    alpha, k, precision, epsilon, confidence, first, growth, checkpoints, n_bootstrap, random_seed
        As for :class:`StopWhenConverged`.
    max_draws : int, optional
        End of the checkpoint grid (default: the draws per chain of ``data``).

    Returns
    -------
    xarray.Dataset
        One row per checkpoint evaluated (up to the stopping one, or all if it never stops):
        ``p_value_all`` (checkpoint, k), ``level``, ``flagged``, ``precision``, ``precise``; attrs
        ``status``, ``stopped_at``, ``flagged_at``, ``reason`` and the rule's settings.
    """
    from ..xr.draws import load_partition

    pdraws = load_partition(data, var_names, logp_var=logp_var, logp=logp)
    lp = pdraws.require_logp("when_converged")
    n_draw = pdraws.n_draw
    grid = checkpoint_grid(min(first, n_draw), growth, max_draws or n_draw) if checkpoints is None else checkpoints
    rule = _Rule(pdraws.name, alpha, k, precision, epsilon, confidence, grid, n_bootstrap, random_seed)
    rows = []
    for t in rule.checkpoints:
        if t > n_draw:
            break
        row = rule.evaluate(_first_draws(pdraws, lp, int(t)))
        row["draws"] = int(t)
        rows.append(row)
        if _decide(rows, rule.checkpoints)["status"] != "undecided":
            break
    return rule.history(rows, _decide(rows, rule.checkpoints))
