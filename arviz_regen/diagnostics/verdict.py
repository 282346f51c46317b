"""One verdict from every check that applies, with the multiplicity across checks accounted for.

Checks. Each is a :class:`Check`: a name, one p-value, what a failure means for the user, and
whether it was run (``"decided"``), could not decide (``"undecided"``), does not apply or its
input is missing (``"absent"``). Today:

- **Hotelling-RS** (:func:`arviz_regen.hotelling_rs`) where states recur (every chain has at
  least :data:`arviz_regen.xr.regeneration.MIN_TOURS` whole tours at the regeneration state): the
  chains visit their top states in the wrong relative proportions (a wrong target, or chains
  that do not agree). Its ``p_value_all`` for every K enters as one p-value, their Simes
  combination.
- **Chain agreement** (:func:`arviz_regen.chain_agreement`, two or more chains): the chains
  disagree on traces that see the whole partition or on the co-clustering of pairs (trapped
  chains).
- **Conditional check** (:func:`arviz_regen.conditional_check`, when the ``conditional_checks``
  group is present): the draws are not from the posterior whose full conditionals made the
  terms (a wrong target), at any number of items. Absent, the line says how to add it.

Combination. Two levels, each with a rule valid for the dependence it meets:

- *Across K* within Hotelling-RS: Simes' combination (:func:`arviz_regen.base.tour_tests.simes`). The
  statistics for nested K share their top states, so their p-values are positively dependent,
  where Simes is valid (Sarkar 1998) and loses almost nothing to the strongest K; the minimum
  over K = 2, 3, 5, 10 taken before rejected 14-17 % of exact draws at α = 0.05.
- *Across checks*: Bonferroni (:func:`combine_checks`, m times the smallest of the m decided
  p-values). The checks are different statistics of the same draws: no sign of their dependence
  is guaranteed, and Bonferroni is valid under any. With m ≤ 3 it costs little: a check that
  carries the signal is judged at α/m. The Cauchy combination (Liu & Xie 2020), valid under
  dependence only as α → 0, rejected 5.4-5.9 % of null Gaussian p-values with correlation 0.3-0.7
  at α = 0.05 (m = 2-4) in our simulations, Simes 4.5-4.8 %, Bonferroni 3.4-5.0 %
  (``tests/arviz_regen/diagnostics/test_verdict.py``).

A FAIL names every check whose p-value times m is below α (Holm's first step: each is a
rejection with the family-wise error controlled) and what a failure of it means.

Beside the checks. Otherwise the verdict is a PASS only if every R-hat printed beside it is at
most :data:`RHAT_MAX` and every bulk ESS at least :data:`MIN_ESS_PER_CHAIN` per chain. A
statistic whose R-hat or ESS cannot be computed (one chain) is not checked, and the verdict is
then NOT REACHED, never a PASS; so it is when no check could decide.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..base.tour_tests import simes
from ..xr.regeneration import MIN_TOURS
from .conditional import NO_ADJUSTED

__all__ = [
    "EXIT_STATUS",
    "MIN_ESS_PER_CHAIN",
    "RHAT_MAX",
    "Check",
    "Verdict",
    "agreement_check",
    "combine_checks",
    "conditional_check_adapter",
    "decide",
    "hotelling_check",
]  # fmt: skip

#: R-hat above this is a failing convergence check (Vehtari, Gelman, Simpson, Carpenter &
#: Bürkner 2021 recommend 1.01 for rank-normalized split R-hat)
RHAT_MAX = 1.01
#: bulk ESS below this many per chain makes R-hat unreliable (the same paper: 100 per chain)
MIN_ESS_PER_CHAIN = 100
#: R-hat above this says the chains sit in different states rather than that the run is short
#: (Gelman & Rubin's classic threshold): more draws then help only once the chains cross
RHAT_APART = 1.1
#: exit status of ``arviz-regen-summary --fail-below`` for each verdict
EXIT_STATUS = {"PASS": 0, "FAIL": 1, "NOT REACHED": 3}

#: what a failure of each check means for the user
MEANING = {
    "hotelling_rs": (
        "the chains visit their most probable partitions in the wrong proportions "
        "(a wrong target, or chains that do not agree)"
    ),
    "chain_agreement": "the chains disagree (trapped chains, or chains that have not mixed yet)",
    "conditional_check": "the draws are not from this model's posterior (a wrong target)",
}
#: what to call when the conditional check is absent
CONDITIONAL_HINT = "call `pmp.compute_conditional_checks(idata, model=model)` to add it"


class Check(NamedTuple):
    """One check for :func:`decide`.

    ``name``, ``p_value``, ``meaning`` (what a failure means), ``status`` ("decided", "undecided" or "absent"),
    ``note`` (its detail or why not run) and ``draws_needed`` (draws per chain an undecided check says it needs,
    0 when it says none).
    """

    name: str
    p_value: float
    meaning: str
    status: str
    note: str
    draws_needed: int = 0


class Verdict(NamedTuple):
    """The verdict of the checks.

    ``status`` (PASS, FAIL or NOT REACHED), the deciding ``method`` (the checks combined, or the failing ones), the
    combined ``p_value``, ``alpha``, ``why`` and the one-line ``line``; ``checks`` holds every :class:`Check`.
    """

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


def combine_checks(p_values):
    """Bonferroni combination of the checks' p-values: m × the smallest of the m finite ones.

    Parameters
    ----------
    p_values : array_like
        NaN entries (checks not run) are left out.

    Returns
    -------
    float
        min(1, m · min p), NaN if none is finite.
    """
    p = np.asarray(p_values, dtype=float).reshape(-1)
    p = p[np.isfinite(p)]
    return float(min(1.0, p.size * p.min())) if p.size else float("nan")


def recurrence(hot, missing=None):
    """Return whether Hotelling-RS can decide, and why, from a :func:`hotelling_rs` Dataset.

    Returns ``(applies, why)``. None means not run, for the reason ``missing`` (default: no log posterior).
    """
    if hot is None:
        return False, missing or "no log posterior (partition_logp) to rank the states by: no Hotelling-RS test"
    n_tours = np.asarray(hot["n_tours"].values).reshape(-1)
    chains = np.asarray(hot["chain"].values)
    fewest = int(n_tours.min()) if n_tours.size else 0
    if fewest >= MIN_TOURS:
        return (
            True,
            f"states recur (every chain has >= {MIN_TOURS} whole tours at the regeneration state; fewest {fewest})",
        )
    c = int(np.argmin(n_tours))
    return False, (
        f"states do not recur enough (chain {chains[c]} has {fewest} whole tours at the regeneration "
        f"state; it needs >= {MIN_TOURS} per chain)"
    )


def hotelling_check(hot, missing=None):
    """:class:`Check` of a :func:`hotelling_rs` Dataset: Simes' combination of ``p_value_all`` over K."""
    applies, why = recurrence(hot, missing)
    if not applies:
        return Check("hotelling_rs", float("nan"), MEANING["hotelling_rs"], "absent", why)
    p_all = np.asarray(hot["p_value_all"].values, dtype=float).reshape(-1)
    ks = np.atleast_1d(hot["k"].values) if "k" in hot.coords else np.atleast_1d(hot.attrs["k"])[:1]
    if not np.isfinite(p_all).any():
        return Check("hotelling_rs", float("nan"), MEANING["hotelling_rs"], "undecided",
                     "p_value_all is NaN for every K (too few whole tours visiting the top states)")  # fmt: skip
    p = float(simes(p_all[np.isfinite(p_all)]))
    each = ", ".join(f"k={int(k)}: {v:.3g}" for k, v in zip(ks, p_all))
    return Check("hotelling_rs", p, MEANING["hotelling_rs"], "decided", f"{why}; p_value_all {each}; combined over K")


def agreement_check(agree, n_chain):
    """:class:`Check` of a :func:`chain_agreement` Dataset (None: not run)."""
    name, meaning = "chain_agreement", MEANING["chain_agreement"]
    if n_chain < 2:
        return Check(name, float("nan"), meaning, "absent", "one chain: nothing to compare it with")
    if agree is None:
        return Check(name, float("nan"), meaning, "absent", "not run")
    if not int(agree.attrs.get("decided", 1)):
        reason, need = agree.attrs.get("reason", "undecided"), int(agree.attrs.get("draws_needed", 0))
        return Check(name, float("nan"), meaning, "undecided", reason, need)
    p = float(agree["p_value_all"].values)
    if not np.isfinite(p):
        return Check(name, p, meaning, "undecided", "no trace and no pair of items varies")
    p_traces, p_pairs = float(agree["p_value_traces"].values), float(agree["p_value_coclustering"].values)
    note = f"traces {p_traces:.3g}, co-clustering {p_pairs:.3g}"
    if int(agree["n_pairs_disagreeing"].values):
        note += f", {int(agree['n_pairs_disagreeing'].values)} pairs of items disagree"
    return Check(name, p, meaning, "decided", note)


def conditional_check_adapter(idata, var_name=None, coords=None):
    """:class:`Check` from the ``conditional_checks`` group of ``idata``, if present.

    Absent group (or not an InferenceData / DataTree), or an ``arviz_regen`` without
    :func:`conditional_check`: status "absent", with what to call. Otherwise the combined
    p-value (check ``all``) of ``var_name`` (default: every variable in the group,
    Bonferroni-combined), on the draws selected by ``coords`` (as for the other checks).
    """
    from ..xr.containers import get_group, group_names

    name, meaning = "conditional_check", MEANING["conditional_check"]
    try:
        present = "conditional_checks" in group_names(idata)
    except TypeError:
        present = False
    if not present:
        return Check(name, float("nan"), meaning, "absent", f"no conditional_checks group: {CONDITIONAL_HINT}")
    import arviz_regen

    func = getattr(arviz_regen, "conditional_check", None)
    if func is None:
        return Check(name, float("nan"), meaning, "absent", "this arviz_regen cannot read the conditional_checks group")
    terms = get_group(idata, "conditional_checks")
    if coords:
        terms = terms.sel({k: v for k, v in coords.items() if k in terms.dims})
    try:
        ds = func(terms)
    except ValueError as err:
        return Check(name, float("nan"), meaning, "undecided", f"its terms cannot be tested ({err})")
    names = [var_name] if var_name in ds.data_vars else list(ds.data_vars)
    ps = []
    for v in names:
        da = ds[v]
        dim = next((d for d in da.dims if "all" in da[d].values), None)
        if dim is None:  # no combined test: the smallest of its checks' p-values, Bonferroni-corrected
            ps.append(min(1.0, float(np.nanmin(da.values)) * max(da.size, 1)))
        else:
            ps.append(float(da.sel({dim: "all"}).values))
    p = combine_checks(ps)
    if not np.isfinite(p):
        return Check(name, p, meaning, "undecided", "too few draws for its batch means (run longer)")
    note = ", ".join(f"{v}: {q:.3g}" for v, q in zip(names, ps))
    notes = {ds[v].attrs.get("note") for v in names} - {None}  # terms from an older pymc_partition
    if notes - {NO_ADJUSTED}:  # from before check_tau
        note += f"; its terms lack check_tau, so its batches may be too short: {CONDITIONAL_HINT} again"
    elif NO_ADJUSTED in notes:
        note += (f"; its terms name no adjusted combination, so errors that move the checks together can be "
                 f"missed: {CONDITIONAL_HINT} again")  # fmt: skip
    return Check(name, p, meaning, "decided", note)


def _stat_failures(stats, n_chain):
    """Describe the R-hat and ESS failures as text.

    Printed R-hat above RHAT_MAX and bulk ESS below MIN_ESS_PER_CHAIN per chain, and the statistics whose R-hat or ESS
    could not be computed (one chain).
    """
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
    """Return the verdict from the checks, combined, and the R-hat / ESS beside them.

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
        FAIL when the Bonferroni combination of the decided checks' p-values is below ``alpha``;
        NOT REACHED when no check decided, a check that applies could not decide, or an R-hat
        / ESS fails or cannot be computed; PASS otherwise.
    """
    checks = tuple(checks)
    why = next((c.note.split("; p_value_all")[0] for c in checks if c.name == "hotelling_rs"), "")
    decided = [c for c in checks if c.status == "decided"]
    undecided = [c for c in checks if c.status == "undecided"]
    absent = [c for c in checks if c.status == "absent"]
    m = len(decided)
    p = combine_checks([c.p_value for c in decided]) if decided else float("nan")
    names = "+".join(c.name for c in decided or undecided) or "none"
    detail = "; ".join(f"{c.name} p={c.p_value:.3g} ({c.note})" for c in decided)
    tail = "".join(f"; {c.name} not run: {c.note}" for c in absent)
    tail += "".join(f"; {c.name} undecided: {c.note}" for c in undecided)
    combined = f"combined p={p:.3g} over {len(decided)} check{'s' * (len(decided) != 1)}" if decided else ""
    if decided and p < alpha:
        failing = [c for c in decided if m * c.p_value < alpha]
        what = "; ".join(f"{c.name} (p={c.p_value:.3g}): {c.meaning}" for c in failing)
        method = "+".join(c.name for c in failing)
        line = f"verdict: FAIL at alpha={alpha:g}: {what}. [{combined}; {detail}{tail}] decided by {method}: {why}"
        return Verdict("FAIL", method, p, alpha, why, line, checks)
    reasons = []
    if not decided:
        reasons.append("no check could decide")
    if undecided:
        reasons.append(_listing([f"{c.name} could not decide ({c.note})" for c in undecided]))
    failures, unchecked = _stat_failures(stats, n_chain)
    if failures:
        apart = stats is not None and "r_hat" in stats.columns and (stats["r_hat"].astype(float) > RHAT_APART).any()
        reasons.append(_listing(failures) + (
            f": the chains sit in different states (R-hat above {RHAT_APART}), and more draws help only once "
            "they cross" if apart else ": not enough draws, run longer"))  # fmt: skip
    if unchecked:
        reasons.append(
            f"not checked: {_listing(unchecked, 2)} (cannot be computed"
            + (" with one chain: run two or more" if n_chain < 2 else "") + ")"
        )  # fmt: skip
    if reasons:
        head = f"no check rejects ({combined}), but " if decided else ""
        bracket = "; ".join(part for part in (detail, tail.removeprefix("; ")) if part)
        line = f"verdict: NOT REACHED at alpha={alpha:g}: {head}{'; '.join(reasons)}." + (
            f" [{bracket}]" if bracket else ""
        )
        return Verdict("NOT REACHED", names, p, alpha, why, line + f" decided by {names}: {why}", checks)
    line = (
        f"verdict: PASS at alpha={alpha:g} ({combined}; R-hat <= {RHAT_MAX} and bulk ESS >= "
        f"{MIN_ESS_PER_CHAIN} per chain for every statistic). [{detail}{tail}] decided by {names}: {why}"
    )
    return Verdict("PASS", names, p, alpha, why, line, checks)
