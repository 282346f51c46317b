"""One verdict for the size at hand: which test decides and why, never a pass beside a failure.

Two tests can give a verdict, and the size of the problem says which one applies:

- **Hotelling-RS** (:func:`arviz_regen.hotelling_rs`, ``p_value_all``) when states recur: every
  chain has at least :data:`arviz_regen.xr.regeneration.MIN_TOURS` whole tours at the regeneration
  state. It compares the chains' visits to the top states with their known posterior
  probabilities, so it also catches chains that agree with each other on a wrong target.
- **Chain agreement** (:func:`arviz_regen.chain_agreement`) otherwise (many items: every draw a
  new partition; or a chain that rarely or never returns to the top state). Valid at any
  size, it asks whether the chains agree on traces that see the whole partition and on the
  co-clustering of every pair.

The deciding test's p-value below α is a FAIL. Otherwise the verdict is a PASS only if every
R-hat printed beside it is at most :data:`RHAT_MAX` and every bulk ESS at least
:data:`MIN_ESS_PER_CHAIN` per chain; if not, or if the deciding test could not decide, it is
NOT REACHED, with the reason.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..xr.regeneration import MIN_TOURS

__all__ = ["Verdict", "decide", "RHAT_MAX", "MIN_ESS_PER_CHAIN", "EXIT_STATUS"]

#: R-hat above this is a failing convergence check (Vehtari, Gelman, Simpson, Carpenter &
#: Bürkner 2021 recommend 1.01 for rank-normalized split R-hat)
RHAT_MAX = 1.01
#: bulk ESS below this many per chain makes R-hat unreliable (the same paper: 100 per chain)
MIN_ESS_PER_CHAIN = 100
#: exit status of ``arviz-regen-summary --fail-below`` for each verdict
EXIT_STATUS = {"PASS": 0, "FAIL": 1, "NOT REACHED": 3}


class Verdict(NamedTuple):
    """The verdict: ``status`` (PASS, FAIL or NOT REACHED), the deciding ``method`` and its
    ``p_value``, ``alpha``, ``why`` (why that method decided) and the one-line ``line``."""

    status: str
    method: str
    p_value: float
    alpha: float
    why: str
    line: str

    @property
    def exit_status(self):
        return EXIT_STATUS[self.status]


def recurrence(hot, missing=None):
    """(applies, why): whether Hotelling-RS decides, from a :func:`hotelling_rs` Dataset
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
        f"states do not recur enough for the regenerative test (chain {chains[c]} has {fewest} whole "
        f"tours at the regeneration state; it needs >= {MIN_TOURS} per chain)"
    )


def _stat_failures(stats, n_chain):
    """Printed R-hat above RHAT_MAX and bulk ESS below MIN_ESS_PER_CHAIN per chain, as text."""
    if stats is None or len(stats) == 0:
        return []
    out = []
    if "r_hat" in stats.columns:
        rhat = stats["r_hat"].astype(float)
        for name, v in rhat[rhat > RHAT_MAX].sort_values(ascending=False).items():
            out.append(f"R-hat of {name} is {v:.3f} > {RHAT_MAX}")
    if "ess_bulk" in stats.columns:
        ess = stats["ess_bulk"].astype(float)
        low = ess[ess < MIN_ESS_PER_CHAIN * n_chain].sort_values()
        for name, v in low.items():
            out.append(f"bulk ESS of {name} is {v:.0f} < {MIN_ESS_PER_CHAIN} per chain ({MIN_ESS_PER_CHAIN * n_chain})")
    return out  # a constant trace has no R-hat (NaN): not a failure


def decide(hot, agree, stats, n_chain, alpha=0.05, missing=None):
    """The verdict from the deciding test and the R-hat / ESS beside it.

    Parameters
    ----------
    hot : xarray.Dataset or None
        :func:`arviz_regen.hotelling_rs` output (with a ``k`` dimension), or None without a
        log posterior or when it is not a function of the partition (hierarchical draws).
    agree : xarray.Dataset or None
        :func:`arviz_regen.chain_agreement` output (needed when states do not recur).
    stats : pandas.DataFrame or None
        Rows of printed statistics with columns ``r_hat`` and ``ess_bulk``.
    n_chain : int
    alpha : float
    missing : str, optional
        Why ``hot`` is None, for the verdict line (default: no log posterior).

    Returns
    -------
    Verdict
    """
    applies, why = recurrence(hot, missing)
    if applies:
        method = "hotelling_rs"
        p_all = np.asarray(hot["p_value_all"].values, dtype=float).reshape(-1)
        ks = np.atleast_1d(hot["k"].values) if "k" in hot.coords else np.array([hot.attrs["k"][0]])
        if not np.isfinite(p_all).any():
            reason = "p_value_all is NaN for every K (too few whole tours visiting the top states)"
            return _not_reached(method, why, alpha, reason)
        j = int(np.nanargmin(p_all))
        p = float(p_all[j])
        detail = f"smallest p_value_all over K = {p:.3g} at k={int(ks[j])}"
    else:
        method = "chain_agreement"
        if agree is None:
            return _not_reached(method, why, alpha, "the chain-agreement test was not run")
        if not int(agree.attrs.get("decided", 1)):
            return _not_reached(method, why, alpha, agree.attrs.get("reason", "undecided"))
        p = float(agree["p_value_all"].values)
        if not np.isfinite(p):
            return _not_reached(method, why, alpha, "no trace and no pair of items varies")
        detail = (
            f"p_value_all = {p:.3g}; traces {float(agree['p_value_traces'].values):.3g}, "
            f"co-clustering {float(agree['p_value_coclustering'].values):.3g}"
        )
        if int(agree["n_pairs_disagreeing"].values):
            detail += f", {int(agree['n_pairs_disagreeing'].values)} pairs of items disagree"
    if p < alpha:
        line = f"verdict: FAIL at alpha={alpha:g} ({detail}); decided by {method}: {why}"
        return Verdict("FAIL", method, p, alpha, why, line)
    failures = _stat_failures(stats, n_chain)
    if failures:
        reason = f"{method} does not reject ({detail}), but " + "; ".join(failures[:3])
        if len(failures) > 3:
            reason += f" (and {len(failures) - 3} more)"
        return _not_reached(method, why, alpha, reason + ": run longer", p)
    line = f"verdict: PASS at alpha={alpha:g} ({detail}; R-hat <= {RHAT_MAX} and bulk ESS >= {MIN_ESS_PER_CHAIN} per chain for every statistic); decided by {method}: {why}"
    return Verdict("PASS", method, p, alpha, why, line)


def _not_reached(method, why, alpha, reason, p=float("nan")):
    line = f"verdict: NOT REACHED at alpha={alpha:g}: {reason}; decided by {method}: {why}"
    return Verdict("NOT REACHED", method, p, alpha, why, line)
