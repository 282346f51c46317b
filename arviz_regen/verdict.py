"""One verdict from every check that applies, with the multiplicity across checks accounted for.

Checks. Each is a :class:`Check`: a name, one p-value, what a failure means for the user, and
whether it was run (``"decided"``), could not decide (``"undecided"``), does not apply or its
input is missing (``"absent"``). Today:

- **Hotelling-RS** (:func:`arviz_regen.hotelling_rs`) where states recur (every chain has at
  least :data:`arviz_regen.regeneration.MIN_TOURS` whole tours at the regeneration state): the
  chains visit their top states in the wrong relative proportions (a wrong target, or chains
  that do not agree). Its ``p_value_all`` for every K enters as one p-value, their Cauchy
  combination.
- **Chain agreement** (:func:`arviz_regen.chain_agreement`, two or more chains): the chains
  disagree on traces that see the whole partition or on the co-clustering of pairs (trapped
  chains).
- **Conditional check** (:func:`arviz_regen.conditional_check`, when the ``conditional_checks``
  group is present): the draws are not from the posterior whose full conditionals made the
  terms (a wrong target), at any number of items. Absent, the line says how to add it.

Combination. The p-values of the decided checks are combined by the Cauchy combination test
(Liu & Xie 2020, :func:`cauchy_combination`): T = Σ w_i tan((1/2 − p_i)π) is standard Cauchy
under the null for independent p-values and, in the tail, for any dependence between them
(the checks share the draws, so they are dependent in ways no formula gives). Bonferroni would
be valid too, but pays a factor m when, as for the nested K of Hotelling-RS, the p-values are
strongly dependent; Simes needs positive dependence, which the checks do not promise. The
Cauchy combination costs about a factor m in the tail when one check carries the signal (like
Bonferroni) and less when several do. A FAIL names the checks whose own p-value is below α and
what that means; when none is, it names the smallest.

Beside the checks. Otherwise the verdict is a PASS only if every R-hat printed beside it is at
most :data:`RHAT_MAX` and every bulk ESS at least :data:`MIN_ESS_PER_CHAIN` per chain. A
statistic whose R-hat or ESS cannot be computed (one chain) is not checked, and the verdict is
then NOT REACHED, never a PASS; so it is when no check could decide.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .regeneration import MIN_TOURS

__all__ = [
    "Verdict", "Check", "decide", "cauchy_combination", "hotelling_check", "agreement_check",
    "conditional_check_adapter", "RHAT_MAX", "MIN_ESS_PER_CHAIN", "EXIT_STATUS",
]  # fmt: skip

#: R-hat above this is a failing convergence check (Vehtari, Gelman, Simpson, Carpenter &
#: Bürkner 2021 recommend 1.01 for rank-normalized split R-hat)
RHAT_MAX = 1.01
#: bulk ESS below this many per chain makes R-hat unreliable (the same paper: 100 per chain)
MIN_ESS_PER_CHAIN = 100
#: exit status of ``arviz-regen-summary --fail-below`` for each verdict
EXIT_STATUS = {"PASS": 0, "FAIL": 1, "NOT REACHED": 3}

#: what a failure of each check means for the user
MEANING = {
    "hotelling_rs": "the chains visit their most probable partitions in the wrong proportions (a wrong target, or chains that do not agree)",
    "chain_agreement": "the chains disagree (trapped chains, or chains that have not mixed yet)",
    "conditional_check": "the draws are not from this model's posterior (a wrong target)",
}
#: what to call when the conditional check is absent
CONDITIONAL_HINT = "call `pmp.compute_conditional_checks(idata, model=model)` to add it"


class Check(NamedTuple):
    """One check for :func:`decide`: ``name``, ``p_value``, ``meaning`` (what a failure means),
    ``status`` ("decided", "undecided" or "absent") and ``note`` (its detail or why not run)."""

    name: str
    p_value: float
    meaning: str
    status: str
    note: str


class Verdict(NamedTuple):
    """The verdict: ``status`` (PASS, FAIL or NOT REACHED), the deciding ``method`` (the checks
    combined, or the failing ones), the combined ``p_value``, ``alpha``, ``why`` and the
    one-line ``line``; ``checks`` holds every :class:`Check`."""

    status: str
    method: str
    p_value: float
    alpha: float
    why: str
    line: str
    checks: tuple = ()

    @property
    def exit_status(self):
        return EXIT_STATUS[self.status]


def cauchy_combination(p_values, weights=None):
    """Cauchy combination of p-values (Liu & Xie 2020), valid in the tail under any dependence.

    Parameters
    ----------
    p_values : array_like
        NaN entries are left out (tests not run); NaN if none is finite.
    weights : array_like, optional
        Non-negative weights (default equal); renormalized over the finite p-values.

    Returns
    -------
    float
        0.5 − arctan(T) / π with T = Σ w_i tan((0.5 − p_i) π), Σ w_i = 1.

    Notes
    -----
    A Monte Carlo p-value of exactly 1 would send its term to −∞ and hide every other test:
    p-values are clipped to [1e-300, 0.99] first (the upper clip moves a term by at most
    tan(0.49π) ≈ 32 in the direction of rejection, a negligible change of the level; see
    ``benchmarks/bench_verdict_calibration.py``). A p-value below 1e-15 is combined through
    tan((0.5 − p)π) ≈ 1/(πp), without rounding.
    """
    p = np.asarray(p_values, dtype=float).reshape(-1)
    w = np.ones_like(p) if weights is None else np.asarray(weights, dtype=float).reshape(-1)
    ok = np.isfinite(p)
    if not ok.any():
        return float("nan")
    p, w = np.clip(p[ok], 1e-300, 0.99), w[ok] / w[ok].sum()
    terms = np.where(p < 1e-15, 1.0 / (np.pi * p), np.tan((0.5 - p) * np.pi))
    t = float(np.sum(w * terms))
    if t > 1e15:  # arctan loses the tail: 0.5 − arctan(t)/π ≈ 1/(πt)
        return 1.0 / (np.pi * t)
    return float(0.5 - np.arctan(t) / np.pi)


def recurrence(hot, missing=None):
    """(applies, why): whether Hotelling-RS can decide, from a :func:`hotelling_rs` Dataset
    (None: not run, for the reason ``missing``; default: no log posterior)."""
    if hot is None:
        return False, missing or "no log posterior (partition_logp) to rank the states by"
    n_tours = np.asarray(hot["n_tours"].values).reshape(-1)
    chains = np.asarray(hot["chain"].values)
    fewest = int(n_tours.min()) if n_tours.size else 0
    if fewest >= MIN_TOURS:
        return True, f"states recur (every chain has >= {MIN_TOURS} whole tours at the regeneration state; fewest {fewest})"
    c = int(np.argmin(n_tours))
    return False, (
        f"states do not recur enough (chain {chains[c]} has {fewest} whole tours at the regeneration "
        f"state; it needs >= {MIN_TOURS} per chain)"
    )


def hotelling_check(hot, missing=None):
    """:class:`Check` of a :func:`hotelling_rs` Dataset: the Cauchy combination of ``p_value_all`` over K."""
    applies, why = recurrence(hot, missing)
    if not applies:
        return Check("hotelling_rs", float("nan"), MEANING["hotelling_rs"], "absent", why)
    p_all = np.asarray(hot["p_value_all"].values, dtype=float).reshape(-1)
    ks = np.atleast_1d(hot["k"].values) if "k" in hot.coords else np.atleast_1d(hot.attrs["k"])[:1]
    if not np.isfinite(p_all).any():
        return Check("hotelling_rs", float("nan"), MEANING["hotelling_rs"], "undecided",
                     "p_value_all is NaN for every K (too few whole tours visiting the top states)")  # fmt: skip
    p = cauchy_combination(p_all)
    each = ", ".join(f"k={int(k)}: {v:.3g}" for k, v in zip(ks, p_all))
    return Check("hotelling_rs", p, MEANING["hotelling_rs"], "decided", f"p_value_all {each}; combined over K")


def agreement_check(agree, n_chain):
    """:class:`Check` of a :func:`chain_agreement` Dataset (None: not run)."""
    name, meaning = "chain_agreement", MEANING["chain_agreement"]
    if n_chain < 2:
        return Check(name, float("nan"), meaning, "absent", "one chain: nothing to compare it with")
    if agree is None:
        return Check(name, float("nan"), meaning, "absent", "not run")
    if not int(agree.attrs.get("decided", 1)):
        return Check(name, float("nan"), meaning, "undecided", agree.attrs.get("reason", "undecided"))
    p = float(agree["p_value_all"].values)
    if not np.isfinite(p):
        return Check(name, p, meaning, "undecided", "no trace and no pair of items varies")
    note = f"traces {float(agree['p_value_traces'].values):.3g}, co-clustering {float(agree['p_value_coclustering'].values):.3g}"
    if int(agree["n_pairs_disagreeing"].values):
        note += f", {int(agree['n_pairs_disagreeing'].values)} pairs of items disagree"
    return Check(name, p, meaning, "decided", note)


def conditional_check_adapter(idata, var_name=None):
    """:class:`Check` from the ``conditional_checks`` group of ``idata``, if present.

    Absent group, or an ``arviz_regen`` without :func:`conditional_check`: status "absent", with
    what to call. Its combined p-value (check ``all``) of ``var_name`` (default: every variable
    in the group, Cauchy-combined) otherwise.
    """
    from ._containers import group_names

    name, meaning = "conditional_check", MEANING["conditional_check"]
    try:
        present = "conditional_checks" in group_names(idata)
    except (TypeError, ValueError, AttributeError):
        present = False
    if not present:
        return Check(name, float("nan"), meaning, "absent", f"no conditional_checks group: {CONDITIONAL_HINT}")
    import arviz_regen

    func = getattr(arviz_regen, "conditional_check", None)
    if func is None:
        return Check(name, float("nan"), meaning, "absent", "this arviz_regen cannot read the conditional_checks group")
    try:
        ds = func(idata)
    except ValueError as err:
        return Check(name, float("nan"), meaning, "undecided", f"its terms cannot be tested ({err})")
    names = [var_name] if var_name in ds.data_vars else list(ds.data_vars)
    ps = []
    for v in names:
        da = ds[v]
        ps.append(float(da.sel(check="all").values) if "check" in da.dims and "all" in da["check"].values else float(np.min(da.values)))
    p = cauchy_combination(ps)
    if not np.isfinite(p):
        return Check(name, p, meaning, "undecided", "too few draws for its batch means (run longer)")
    return Check(name, p, meaning, "decided", ", ".join(f"{v}: {q:.3g}" for v, q in zip(names, ps)))


def _stat_failures(stats, n_chain):
    """Printed R-hat above RHAT_MAX and bulk ESS below MIN_ESS_PER_CHAIN per chain, and the
    statistics whose R-hat or ESS could not be computed (one chain), as text."""
    if stats is None or len(stats) == 0:
        return [], []
    out, unchecked = [], []
    varies = stats["sd"].astype(float) > 0 if "sd" in stats.columns else None
    if "r_hat" in stats.columns:
        rhat = stats["r_hat"].astype(float)
        for name, v in rhat[rhat > RHAT_MAX].sort_values(ascending=False).items():
            out.append(f"R-hat of {name} is {v:.3f} > {RHAT_MAX}")
        nan = rhat.isna() if varies is None else rhat.isna() & varies
        unchecked += [f"R-hat of {name}" for name in rhat[nan].index]
    if "ess_bulk" in stats.columns:
        ess = stats["ess_bulk"].astype(float)
        low = ess[ess < MIN_ESS_PER_CHAIN * n_chain].sort_values()
        for name, v in low.items():
            out.append(f"bulk ESS of {name} is {v:.0f} < {MIN_ESS_PER_CHAIN} per chain ({MIN_ESS_PER_CHAIN * n_chain})")
        nan = ess.isna() if varies is None else ess.isna() & varies
        unchecked += [f"bulk ESS of {name}" for name in ess[nan].index]
    return out, unchecked  # a constant trace has no R-hat (NaN): neither a failure nor unchecked


def _listing(items, most=3):
    text = "; ".join(items[:most])
    return text + (f" (and {len(items) - most} more)" if len(items) > most else "")


def decide(checks, stats, n_chain, alpha=0.05):
    """The verdict from the checks, combined, and the R-hat / ESS beside them.

    Parameters
    ----------
    checks : sequence of Check
        Every check that could apply (absent ones are named in the line). A further check plugs
        in as one more :class:`Check`.
    stats : pandas.DataFrame or None
        Rows of printed statistics with columns ``sd``, ``r_hat`` and ``ess_bulk``.
    n_chain : int
    alpha : float

    Returns
    -------
    Verdict
        FAIL when the Cauchy combination of the decided checks' p-values is below ``alpha``;
        NOT REACHED when no check decided, a check that applies could not decide, or an R-hat
        / ESS fails or cannot be computed; PASS otherwise.
    """
    checks = tuple(checks)
    decided = [c for c in checks if c.status == "decided"]
    undecided = [c for c in checks if c.status == "undecided"]
    absent = [c for c in checks if c.status == "absent"]
    p = cauchy_combination([c.p_value for c in decided]) if decided else float("nan")
    names = "+".join(c.name for c in decided) or "none"
    detail = "; ".join(f"{c.name} p={c.p_value:.3g} ({c.note})" for c in decided)
    tail = "".join(f"; {c.name} not run: {c.note}" for c in absent)
    tail += "".join(f"; {c.name} undecided: {c.note}" for c in undecided)
    combined = f"combined p={p:.3g} over {len(decided)} check{'s' * (len(decided) != 1)}" if decided else ""
    if decided and p < alpha:
        failing = [c for c in decided if c.p_value < alpha] or [min(decided, key=lambda c: c.p_value)]
        what = "; ".join(f"{c.name} (p={c.p_value:.3g}): {c.meaning}" for c in failing)
        line = f"verdict: FAIL at alpha={alpha:g}: {what}. [{combined}; {detail}{tail}]"
        return Verdict("FAIL", "+".join(c.name for c in failing), p, alpha, what, line, checks)
    reasons = []
    if not decided:
        reasons.append("no check could decide")
    if undecided:
        reasons.append(_listing([f"{c.name} could not decide ({c.note})" for c in undecided]))
    failures, unchecked = _stat_failures(stats, n_chain)
    if failures:
        reasons.append(_listing(failures) + ": not enough draws, run longer")
    if unchecked:
        reasons.append(
            f"not checked: {_listing(unchecked, 2)} (cannot be computed"
            + (" with one chain: run two or more" if n_chain < 2 else "") + ")"
        )  # fmt: skip
    if reasons:
        head = f"no check rejects ({combined}), but " if decided else ""
        line = f"verdict: NOT REACHED at alpha={alpha:g}: {head}{'; '.join(reasons)}. [{detail}{tail}]".replace(" []", "")
        return Verdict("NOT REACHED", names, p, alpha, "; ".join(reasons), line, checks)
    line = (
        f"verdict: PASS at alpha={alpha:g} ({combined}; R-hat <= {RHAT_MAX} and bulk ESS >= "
        f"{MIN_ESS_PER_CHAIN} per chain for every statistic). [{detail}{tail}]"
    )
    return Verdict("PASS", names, p, alpha, "no check rejects", line, checks)
