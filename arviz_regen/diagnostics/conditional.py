"""The conditional (discrete Stein) check of partition draws.

P-values of "these draws come from this posterior" at any number of items, from per-draw terms stored beside the
posterior.

The terms are computed from the model (``pymc_partition.compute_conditional_checks``, which
adds them as the ``conditional_checks`` group, dims ``(chain, draw, check)``, one variable per
partition). Each has mean zero under the posterior whatever sampler produced the draws (the maths
is in ``docs/maths/conditional_check.md``); :func:`conditional_check` tests it per check and for
all checks together (:mod:`arviz_regen.base.conditional`). This module knows nothing of PyMC.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..base.blas import one_blas_thread
from ..base.conditional import CHECK_TAU_FACTOR, MIN_BATCHES, conditional_test
from ..xr.containers import get_group, group_names, is_datatree, is_inference_data
from ..xr.distributed import TASK_PREFIX, resolve_client

__all__ = ["ALL", "GROUP", "conditional_check"]

#: the group holding the per-draw terms
GROUP = "conditional_checks"
#: the ``check`` coordinate of all checks together
ALL = "all"
#: attribute of a variable of terms: integrated autocorrelation time of the slowest coordinate of
#: the sampled state its terms depend on (batches at least ``STATE_TAU_FACTOR`` times as long)
STATE_TAU = "state_tau"
#: attribute of a variable of terms: integrated autocorrelation time of each check's test function
#: (batches of that check at least ``CHECK_TAU_FACTOR`` times as long)
CHECK_TAU = "check_tau"
#: the result's note on terms stored without ``check_tau``
NO_CHECK_TAU = (
    "terms without check_tau (computed by an older pymc_partition): batches from the terms' own "
    "autocorrelation times, which miss the slow part that follows each check's test function, so the "
    "p-values can be too small with many items; recompute them with "
    "pymc_partition.compute_conditional_checks"
)
#: attribute of a variable of terms: the check tested after its regression on the others (the
#: adjusted combination, :func:`arviz_regen.base.conditional.conditional_test`'s ``adjusted``)
ADJUSTED_CHECK = "adjusted_check"
#: attribute of a variable of terms: the checks tested as they are beside it (names, a list or one
#: comma-separated string; ``raw``)
RAW_CHECKS = "raw_checks"
#: attribute of a variable of terms: slow-time batches at most ``N // min_batches`` draws
MIN_BATCHES_ATTR = "min_batches"
#: the result's note on partition terms stored without the adjusted combination
NO_ADJUSTED = (
    "terms without adjusted_check (computed by an older pymc_partition): all checks combined as "
    "before (Bonferroni or Hotelling over the checks' own t tests), which misses a wrong target "
    "that moves the checks' means together (at 2,000 items a NIG beta0 off by 30 %); recompute "
    "them with pymc_partition.compute_conditional_checks"
)
_KINDS = ("p_value", "statistic", "mean", "mcse")


def _terms_dataset(data):
    if is_inference_data(data) or is_datatree(data):
        if GROUP not in group_names(data):
            raise ValueError(
                f"These data have no {GROUP!r} group: compute the per-draw terms first, "
                "pymc_partition.compute_conditional_checks(idata, model=model)."
            )
        return get_group(data, GROUP)
    if isinstance(data, xr.DataArray):
        return xr.Dataset({data.name or "x": data})
    if isinstance(data, xr.Dataset):
        return data
    raise TypeError(
        "`data` must be an InferenceData or DataTree with a conditional_checks group, or its "
        f"Dataset or a DataArray (chain, draw, check); got {type(data).__name__}."
    )


def _test_terms(terms, state_tau=None, check_tau=None, plan=None):
    """Return the test of one variable's terms (chain, draw, check): numpy in, the kernel's result out."""
    return conditional_test(np.asarray(terms, dtype=float), state_tau=state_tau, check_tau=check_tau, **(plan or {}))


def _plan(da, dim):
    """Return the adjusted combination the terms' attributes name, as ``conditional_test``'s keywords.

    Empty without :data:`ADJUSTED_CHECK` (the combination before it).
    """
    checks = [str(c) for c in (da.coords[dim].values if dim in da.coords else range(da.sizes[dim]))]
    plan = {}
    if MIN_BATCHES_ATTR in da.attrs:
        value = da.attrs[MIN_BATCHES_ATTR]
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 2:
            raise ValueError(f"The attribute {MIN_BATCHES_ATTR!r} of the terms must be an integer >= 2, got {value!r}.")
        plan["min_batches"] = int(value)
    if ADJUSTED_CHECK not in da.attrs:
        if RAW_CHECKS in da.attrs:
            raise ValueError(f"The terms name {RAW_CHECKS!r} without {ADJUSTED_CHECK!r}.")
        return plan

    def index(name, attr):
        if str(name) not in checks:
            raise ValueError(f"The attribute {attr!r} of the terms names {name!r}, not one of the {dim}s {checks}.")
        return checks.index(str(name))

    raw = da.attrs.get(RAW_CHECKS, [])
    raw = [r.strip() for r in raw.split(",") if r.strip()] if isinstance(raw, str) else list(np.atleast_1d(raw))
    plan["adjusted"] = index(da.attrs[ADJUSTED_CHECK], ADJUSTED_CHECK)
    plan["raw"] = [index(r, RAW_CHECKS) for r in raw]
    return plan


def _names(checks):
    """Return check names as one comma-separated string (netCDF keeps a one-name list only as a string)."""
    return ",".join(checks)


def _state_tau(da):
    """Return the terms' ``state_tau`` attribute (see :func:`conditional_check`), or None."""
    tau = da.attrs.get(STATE_TAU)
    if tau is None:
        return None
    try:
        tau = float(tau)
    except (TypeError, ValueError):
        tau = np.nan
    if not (np.isfinite(tau) and tau > 0):
        raise ValueError(
            f"The attribute {STATE_TAU!r} of the terms must be a positive number, got {da.attrs[STATE_TAU]!r}."
        )
    return tau


def _check_tau(da, dim):
    """Return the terms' ``check_tau`` attribute as floats (one per check of ``dim``), or None."""
    tau = da.attrs.get(CHECK_TAU)
    if tau is None:
        return None
    try:
        tau = np.asarray(tau, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        tau = np.array([])
    if tau.size != da.sizes[dim] or np.any(tau[~np.isnan(tau)] <= 0) or np.any(np.isinf(tau)):
        raise ValueError(
            f"The attribute {CHECK_TAU!r} of the terms must hold one positive number (or NaN) per "
            f"{dim} ({da.sizes[dim]}), got {da.attrs[CHECK_TAU]!r}."
        )
    return tau


def _run_test(da, client):
    """Run :func:`_test_terms` here, or as one task of ``client``'s cluster.

    The dask-backed terms are read by the workers and only the small result comes back.
    """
    tau = _state_tau(da)
    check_tau = _check_tau(da, da.dims[2])
    plan = _plan(da, da.dims[2])
    if client is None:
        return _test_terms(da.values, tau, check_tau, plan)
    import dask

    key = f"{TASK_PREFIX}-conditional_test-{dask.base.tokenize(da.data, tau, check_tau, plan)}"
    delayed = dask.delayed(_test_terms, pure=True)(da.data, tau, check_tau, plan, dask_key_name=key)
    return client.compute(delayed).result()


@one_blas_thread
def conditional_check(data, *, var_names=None, kind="p_value", client=None):
    """Conditional (discrete Stein) check of the partition draws against their posterior.

    Parameters
    ----------
    data : InferenceData, DataTree, Dataset or DataArray
        With a ``conditional_checks`` group (``pymc_partition.compute_conditional_checks``), or
        that group's Dataset, or one DataArray of terms with dims ``(chain, draw, check)``.
    var_names : list of str, optional
        Partition variables to check (default: all in the group).
    kind : {"p_value", "statistic", "mean", "mcse"}
        What to return for each check: its p-value (small: the draws are not from the posterior
        whose conditionals made the terms); its t statistic (Hotelling's T² for ``all``, NaN when
        ``combination`` is ``"bonferroni"``); the mean of its terms (zero under the posterior) or
        that mean's Monte Carlo standard error.

    Returns
    -------
    xarray.Dataset
        One variable per variable of terms (a partition, or ``hyperparameters``), with its
        terms' check dim (``check``, ``hyper_check``): each test function, then ``all`` (every
        check together). Attributes per variable: ``df`` (degrees of freedom of ``all``),
        ``df_each`` and ``batch`` (each check's), ``combination`` (``"hotelling"``,
        ``"bonferroni"`` or ``"adjusted"``), ``rank`` (checks that are not collinear),
        ``n_draws``; with ``"adjusted"`` also ``adjusted_check``, ``raw_checks`` (comma-separated
        names), ``beta`` (the adjusted check's regression coefficient on each check, over the
        variable's check coordinate: NaN at the adjusted check itself and at ``all``),
        ``adjusted_mean``, ``adjusted_t``, ``adjusted_p_value`` and ``adjusted_df`` (its residual's
        test); ``capped`` (with ``check_tau``; comma-separated names, empty when none): the checks
        whose batches were cut to ``N // min_batches`` draws
        (an eighth of a chain with the terms ``compute_conditional_checks`` stores, a quarter
        without that attribute) because their test function moves more slowly than
        that allows (their own p-values can be too small; all checks together held the level in
        the benchmarks; longer chains make them sharp); and ``note`` when partition terms lack
        the ``check_tau`` attribute (computed by an older ``pymc_partition``: scored as before,
        possibly liberal with many items) or the ``adjusted_check`` attribute (scored by the
        combination before it, which misses some wrong targets). Every attribute is a string or a
        number or a vector of numbers, so the result saves to netCDF as to zarr.

    Raises
    ------
    ValueError
        If the terms are missing, not finite, lack the ``chain`` or ``draw`` dim or have more
        than one other,
        or ``kind`` is unknown, or their attributes name checks they do not have.

    Notes
    -----
    The p-values use batch means over all chains with batches at least twelve autocorrelation
    times of the terms long. Each check's terms also follow its test function's slow moves
    without showing them in their own autocorrelations: with the attribute ``check_tau`` (each
    test function's time, which ``compute_conditional_checks`` stores) a check's batches are at
    least four times its test function's time, and four times the sampled state's with
    ``state_tau`` (stored when hyperparameters are sampled alongside), at most a quarter of a
    chain; all checks together by Hotelling's test when the longest batches leave 100 degrees of
    freedom, else by Bonferroni's. With the attributes ``adjusted_check`` and ``raw_checks``
    (which ``compute_conditional_checks`` stores: ``log_post`` and ``n_clusters``) all checks
    together are instead Bonferroni's combination of the raw checks' own tests and a t test of
    the adjusted check less its regression on the others, which sees wrong targets that move
    correlated checks' means apart (``docs/maths/conditional_check.md``, "The adjusted
    combination"); the attribute ``min_batches`` (8 as stored) makes that cap ``N // min_batches``. With too
    few draws for two batches they are NaN.


    Examples
    --------
    The terms come from the model (``pymc_partition.compute_conditional_checks``):

    >>> import numpy as np, pymc as pm, pymc_partition as pmp, arviz_regen
    >>> x = np.r_[np.zeros(4), np.ones(4) * 3.0] + np.arange(8) * 0.2
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", n_items=8, prior=pmp.DirichletProcess(1.0))
    ...     y = pmp.MarginalLikelihood("y", partition=z, observed=x,
    ...                                family=pmp.NormalInverseGamma.from_data(x, n_clusters=2))
    ...     idata = pm.sample(draws=500, tune=0, chains=2, step=pmp.GibbsPartition([z]),
    ...                       random_seed=1, progressbar=False, compute_convergence_checks=False)
    >>> idata = pmp.compute_conditional_checks(idata, model=model)
    >>> check = arviz_regen.conditional_check(idata)   # p-values: one per test function
    >>> check["z"].check.values.tolist()
    ['n_clusters', 'cluster_size', 'partner', 'log_post', 'all']
    >>> bool(check["z"].sel(check="all") > 0.01)        # the right posterior: not rejected
    True
    """
    if kind not in _KINDS:
        raise ValueError(f"`kind` must be one of {_KINDS}, got {kind!r}.")
    ds = _terms_dataset(data)
    client = resolve_client(client)
    names = list(ds.data_vars) if var_names is None else [var_names] if isinstance(var_names, str) else list(var_names)
    missing = [n for n in names if n not in ds.data_vars]
    if missing or not names:
        raise ValueError(
            f"No conditional-check terms for {missing or 'any variable'}; the data hold {list(ds.data_vars)}."
        )
    out = {}
    for name in names:
        da = ds[name]
        other = [d for d in da.dims if d not in ("chain", "draw")]
        if "chain" not in da.dims or "draw" not in da.dims or len(other) != 1:
            raise ValueError(f"The terms of {name!r} must have dims (chain, draw, check), got {da.dims}.")
        dim = other[0]
        da = da.transpose("chain", "draw", dim)
        try:
            res = _run_test(da, client)
        except ValueError as err:
            raise ValueError(f"{name!r}: {err}") from None
        per = {
            "p_value": res.p_value,
            "statistic": res.t,
            "mean": res.mean,
            "mcse": res.mcse,
        }[kind]
        whole = {
            "p_value": res.p_value_all,
            "statistic": res.t2,
            "mean": np.nan,
            "mcse": np.nan,
        }[kind]
        checks = [str(c) for c in (da.coords[dim].values if dim in da.coords else range(da.sizes[dim]))]
        each = np.full(len(checks), res.df) if res.df_each is None else res.df_each
        attrs = {"df": int(res.df), "df_each": [int(d) for d in each], "combination": res.combination,
                 "rank": int(res.rank), "n_draws": int(res.n_draws)}  # fmt: skip
        if res.batch is not None:
            attrs["batch"] = [int(b) for b in res.batch]
        if res.combination == "adjusted":
            # netCDF attributes hold strings and numeric vectors only: names as one string, beta over the coordinate
            beta = np.full(len(checks) + 1, np.nan)
            beta[[j for j in range(len(checks)) if j != res.adjusted]] = res.beta
            attrs.update({
                ADJUSTED_CHECK: checks[res.adjusted], RAW_CHECKS: _names(checks[j] for j in res.raw),
                "beta": [float(b) for b in beta], "adjusted_mean": float(res.adjusted_mean),
                "adjusted_t": float(res.adjusted_t), "adjusted_p_value": float(res.adjusted_p_value),
                "adjusted_df": int(res.adjusted_df),
            })  # fmt: skip
        if dim == "check" and CHECK_TAU not in da.attrs:  # a partition's terms from before check_tau
            attrs["note"] = NO_CHECK_TAU
        elif dim == "check" and res.combination != "adjusted":  # from before the adjusted combination
            attrs["note"] = NO_ADJUSTED
        if CHECK_TAU in da.attrs:
            min_batches = int(da.attrs.get(MIN_BATCHES_ATTR, MIN_BATCHES))
            tau, cap = _check_tau(da, dim), max(da.sizes["draw"] // min_batches, 1)
            attrs["capped"] = _names(c for c, t in zip(checks, tau) if np.isfinite(t) and CHECK_TAU_FACTOR * t > cap)
        out[name] = xr.DataArray(np.r_[per, whole], dims=(dim,), coords={dim: checks + [ALL]}, attrs=attrs)
    return xr.Dataset(out, attrs={"kind": kind})
