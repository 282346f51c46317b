"""Refuse a family that cannot be evaluated on the data, naming the hyperparameter responsible.

The families' log marginals are written to stay exact for every legal hyperparameter
(:mod:`pymc_partition._special`), but some combinations of extreme hyperparameters and data still
leave floating point: a tiny ``psi0`` against data of unit scale makes ``Psi_n`` numerically
singular, a variance of 1e-300 squares the data's distances beyond 1e308. The log marginal of a
cluster of data is then NaN or infinite, never a number the samplers or the exact posterior may
use (a data density is positive and finite). :func:`check_log_marginals` refuses it, and finds the
culprits by setting each hyperparameter in turn to a moderate value: those that make it finite.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_log_marginals", "culprits"]


def _moderate(family, name):
    """Return a moderate value of hyperparameter ``name`` (None: not a number to vary)."""
    value = getattr(family, name)
    if isinstance(value, (int, np.integer)) and name == "n_categories":
        return None
    if name == "nu0":
        return float(family.n_vars + 1)
    if name == "psi0":
        return np.eye(family.n_vars)
    domain = family._param_domains.get(name, "finite")
    moderate = {"positive": 1.0, "probability": 0.5}.get(domain, 0.0)
    return np.full(np.shape(value), moderate) if np.ndim(value) else moderate


def _log_marginals(family, stats):
    """Compile the family's log marginal of the rows of ``stats`` without optimisation.

    These are a few rows, on the path of an error: compile time is what counts.
    """
    import pytensor
    import pytensor.tensor as pt

    s = pt.dmatrix("stats")
    fn = pytensor.function([s], family.log_marginal(s), mode="FAST_COMPILE")
    return np.asarray(fn(np.atleast_2d(stats)))


def culprits(family, stats):
    """Names of the hyperparameters whose moderate value makes the log marginal finite.

    The log marginal of the rows of ``stats``, each hyperparameter changed alone.
    """
    found = []
    for name in family._param_names:
        moderate = _moderate(family, name)
        # the statistics of `_stats_params` are computed with them: another value needs new ones
        if moderate is None or family.is_random or name in family._stats_params:
            continue
        try:
            with np.errstate(all="ignore"):
                ok = np.all(np.isfinite(_log_marginals(family.with_values(**{name: moderate}), stats)))
        except (ValueError, TypeError, np.linalg.LinAlgError):
            continue
        if ok:
            found.append(name)
    return found


def check_log_marginals(family, stats, values, describe):
    """Raise a ValueError if a log marginal is not finite.

    Parameters
    ----------
    family : ConjugateFamily
    stats : ndarray (rows, n_stats)
        Summed statistics of some clusters.
    values : ndarray (rows,)
        Their log marginals.
    describe : callable
        ``describe(row) -> str``: which items the cluster of row ``row`` holds, for the message.
    """
    values = np.asarray(values, dtype=float)
    bad = ~np.isfinite(values)
    if not bad.any():
        return
    row = int(np.flatnonzero(bad)[0])
    names = culprits(family, stats[row])
    if names:
        values_now = ", ".join(f"{k} = {getattr(family, k)!r}" for k in names)
        why = (
            f"it is finite with {' or '.join(names)} at a moderate value: {values_now} is outside "
            "the range where it can be computed against data of this scale."
        )
    else:
        why = "no single hyperparameter at a moderate value makes it finite: their combination is."
    raise ValueError(
        f"{family!r} cannot be evaluated on these data: the log marginal likelihood of "
        f"{describe(row)} is {values[row]}, and {why} Rescale the data and the hyperparameters "
        "together (e.g. standardize the data), or choose hyperparameters closer to the data's scale."
    )
