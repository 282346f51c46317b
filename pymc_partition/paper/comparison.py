"""Paper-versus-ours tables.

The empirical-Bayes table, the exact posterior under each reading of the prior, and the closing comparison of the
notebook and the main job.

Every table is a :class:`~pymc_partition.paper.table.Table` (whole as plain text, and as HTML in
a notebook); its ``frame`` holds the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import constants
from .table import Table

__all__ = [
    "EBComparison",
    "compare_eb",
    "compare_with_truth",
    "readings_table",
    "closing_table",
]

PARAM_NAMES = tuple(constants.EB_TABLE)

#: Key of the top-K mass in the numbers of each reading
TOP_MASS_KEY = f"top-{constants.TOP_K} mass"


def _decimals(printed: str) -> int:
    return len(printed.split(".")[1]) if "." in printed else 0


def _round_like(value: float, printed: str) -> str:
    return f"{value:.{_decimals(printed)}f}"


@dataclass(frozen=True)
class EBComparison:
    """Side-by-side table of an empirical-Bayes fit and the paper's (section 4.1).

    ``rows`` holds one dict per parameter with the paper's printed estimate and standard error,
    the fit's values, the fit's values rounded to the paper's printed precision, and whether
    they agree (``estimate_agrees``, ``std_error_agrees``).
    """

    rows: tuple

    @property
    def all_agree(self) -> bool:
        return all(r["estimate_agrees"] and r["std_error_agrees"] for r in self.rows)

    def table(self) -> Table:
        import pandas as pd

        frame = pd.DataFrame(
            {
                "paper": [f"{r['paper_estimate']} ({r['paper_std_error']})" for r in self.rows],
                "this fit": [f"{r['estimate']:.4g} ({r['std_error']:.3g})" for r in self.rows],
                "rounded like the paper": [f"{r['rounded_estimate']} ({r['rounded_std_error']})" for r in self.rows],
                "agree": ["yes" if r["estimate_agrees"] and r["std_error_agrees"] else "NO" for r in self.rows],
            },
            index=pd.Index([r["parameter"] for r in self.rows], name="parameter"),
        )
        return Table(frame, title="estimate (std. error)")

    def __str__(self):
        return str(self.table())

    __repr__ = __str__

    def _repr_html_(self):
        return self.table()._repr_html_()


def compare_eb(fit) -> EBComparison:
    """Compare an empirical-Bayes fit with the paper's table, to the paper's printed digits.

    Parameters
    ----------
    fit : SpikeSlabFit
        From :func:`pymc_partition.fit_spike_slab`.
    """
    if not (hasattr(fit, "estimates") and hasattr(fit, "std_errors")):
        raise TypeError(f"`fit` must be a SpikeSlabFit (from fit_spike_slab), got {type(fit).__name__}.")
    rows = []
    for name in PARAM_NAMES:
        pe, ps = constants.EB_TABLE[name]
        e, s = float(fit.estimates[name]), float(fit.std_errors[name])
        re_, rs = _round_like(e, pe), _round_like(s, ps)
        rows.append(
            dict(
                parameter=name,
                paper_estimate=pe,
                paper_std_error=ps,
                estimate=e,
                std_error=s,
                rounded_estimate=re_,
                rounded_std_error=rs,
                estimate_agrees=float(re_) == float(pe),
                std_error_agrees=float(rs) == float(ps),
            )  # fmt: skip
        )
    return EBComparison(tuple(rows))


def compare_with_truth(fit, truth) -> Table:
    """Return an empirical-Bayes fit of simulated data beside the values they were simulated from.

    One row per hyperparameter: ``simulated from``, ``EB estimate``, ``std. error``,
    ``z = (est - true) / se`` and ``within 2 s.e.`` (about 95 % of fits should be, parameter by
    parameter). On simulated data this is the check that matters; the paper's table describes
    its fit to the real data.
    """
    import pandas as pd

    rows = {}
    for name, true in truth.items():
        est, se = float(fit.estimates[name]), float(fit.std_errors[name])
        z = (est - true) / se if se > 0 else float("nan")
        rows[name] = {
            "simulated from": float(true), "EB estimate": est, "std. error": se,
            "z = (est - true) / se": z, "within 2 s.e.": "yes" if abs(z) <= 2 else "NO",
        }  # fmt: skip
    frame = pd.DataFrame(rows).T.rename_axis("parameter")
    for column in ("simulated from", "EB estimate", "std. error", "z = (est - true) / se"):
        frame[column] = frame[column].astype(float)
    return Table(frame, formats={"z = (est - true) / se": "{:.2f}"})


def readings_table(readings, *, paper=True) -> Table:
    """Return the exact posterior's headline numbers under each reading of the prior, beside the paper's.

    Parameters
    ----------
    readings : dict
        ``{label: {"prior P(C=1)", "prior P(C<=3)", "MAP probability", TOP_MASS_KEY}}``, as
        :func:`pymc_partition.paper.workflow.exact_under_readings` returns.
    paper : bool
        Add the paper's row (for the real data; not for simulated data).
    """
    import pandas as pd

    frame = pd.DataFrame(readings).T.astype(float).rename_axis("prior")
    if paper:
        frame.loc["paper (section 4.2)"] = [np.nan, np.nan, constants.MAP_PROBABILITY, constants.TOP_MASS]
    return Table(frame, formats={c: "{:.3f}" for c in frame.columns}, left=())


def closing_table(*, eb_comparison, readings, diagnostics, real_data=True) -> Table:
    """Return what we find against what the paper reports: one row per claim of the paper.

    Parameters
    ----------
    eb_comparison : EBComparison or None
        :func:`compare_eb` of the fit (``None`` on simulated data).
    readings : dict
        As for :func:`readings_table`; the MAP probability and top-10 mass are compared with the
        paper's under each reading.
    diagnostics : pandas.DataFrame
        :func:`pymc_partition.paper.workflow.diagnostics_table`, indexed by sampler label.
    real_data : bool
        On simulated data the agreement column says "n/a".

    The ``agrees`` column applies the simple rule stated in the ``criterion`` column.
    """
    import pandas as pd

    from .workflow import BIG_ERROR_COLUMN, P_VALUE_COLUMN, SAMPLER_LABELS

    gibbs = diagnostics.loc[SAMPLER_LABELS["gibbs"]]
    sm = diagnostics.loc[SAMPLER_LABELS["split_merge"]]
    cv_col = [c for c in diagnostics.columns if c.startswith("max CV @ draw")][0]
    p_cols = [c for c in diagnostics.columns if c.startswith(f"{P_VALUE_COLUMN} K=")]
    ks = [c.split("=")[1] for c in p_cols]
    rows = []
    if eb_comparison is not None:
        n_agree = sum(r["estimate_agrees"] and r["std_error_agrees"] for r in eb_comparison.rows)
        rows.append(("EB estimates (s.e.)", "the table of section 4.1",
                     f"{n_agree} of {len(eb_comparison.rows)} equal at its printed digits (table above)",
                     eb_comparison.all_agree, "all equal at the paper's printed digits"))  # fmt: skip
    for label, r in readings.items():
        rows.append((f"MAP probability, {label}", f"{constants.MAP_PROBABILITY}", f"{r['MAP probability']:.3f}",
                     abs(r["MAP probability"] - constants.MAP_PROBABILITY) < 0.05, "within 0.05"))  # fmt: skip
    for label, r in readings.items():
        rows.append((f"top-{constants.TOP_K} mass, {label}", f"about {constants.TOP_MASS}", f"{r[TOP_MASS_KEY]:.3f}",
                     abs(r[TOP_MASS_KEY] - constants.TOP_MASS) < 0.05, "within 0.05"))  # fmt: skip
    lo, hi = constants.SPLIT_MERGE_ERRORS
    rows += [
        ("Gibbs: max |ρ̂ − ρ| at the end", "converges to the exact matrix rather quickly",
         f"{gibbs['max |error|']:.3f}", gibbs["max |error|"] < 0.02, "below 0.02"),
        ("Gibbs: Hotelling-RS p-values", "fluctuate freely in (0, 1)",
         ", ".join(f"K={k}: {float(gibbs[c]):.2g}" for k, c in zip(ks, p_cols)),
         bool((gibbs[p_cols].astype(float) > 0.001).all()), "all above 0.001 at the end (p_value_all)"),
        ("split-merge: max |ρ̂ − ρ| at the end", f"{lo:.0%}–{hi:.0%} for a good portion of the pairs",
         f"{sm['max |error|']:.3f} (pairs above {lo:g}: {sm[BIG_ERROR_COLUMN]:.0%})",
         sm["max |error|"] >= lo, f"max at least {lo:g}"),
        (f"split-merge: max CV at {cv_col.split('@ draw ')[1]} draws",
         f"below {constants.CV_THRESHOLD:.0%} after about {constants.CV_DRAW:,} iterations",
         f"{sm[cv_col]:.3f}", sm[cv_col] < constants.CV_THRESHOLD, f"below {constants.CV_THRESHOLD:g}"),
        ("split-merge: Hotelling-RS p-values", "unequivocally reject convergence, for every K",
         ", ".join(f"K={k}: {float(sm[c]):.2g}" for k, c in zip(ks, p_cols)),
         bool((sm[p_cols].astype(float) < 0.01).all()), "all below 0.01 (p_value_all: all chains)"),
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["quantity", "paper", "this run", "agrees", "criterion"]).set_index("quantity")
    frame["agrees"] = [("yes" if ok else "no") for ok in frame["agrees"]] if real_data else "n/a (simulated data)"
    return Table(frame, left=("paper", "this run", "agrees", "criterion"))
