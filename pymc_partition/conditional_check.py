"""Per-draw terms of the conditional (discrete Stein) check, computed from the model.

For a collapsed partition posterior ``pi``, an item ``i`` and any function ``f`` of the
partition, one Gibbs update of ``i`` leaves ``pi`` invariant, so

    (A_i f)(c) = sum_k pi(c_i = k | c_-i) f(c^{i->k}) - f(c)

has mean zero under ``pi`` (``c^{i->k}``: ``c`` with item ``i`` moved to candidate ``k``, an
existing cluster of the other items or a new one), whatever sampler produced ``c``. Averaged over
items, four test functions give four terms per draw (:data:`CHECK_NAMES`; the kernel is
:mod:`pymc_partition.engine.kernels.conditional`):

``n_clusters``   ``f = number of clusters``: ``p_new - [i alone]``
``cluster_size`` ``f = sum_c n_c^2 / 2``: ``E_p[m_k] - m_{c_i}`` (``m``: sizes without ``i``)
``partner``      ``f_i = [c_i = c_j]``, ``j`` a fixed random partner of ``i``: ``p_{c_j} - [c_i = c_j]``
``log_post``     ``f = log pi(c)``: ``sum_k p_k log p_k - log p_{c_i}``

Each costs ``O(#clusters)`` per item given the conditional, which costs what one Gibbs update of
the item costs. By default each draw evaluates a random half of the items (one of each pair of
neighbours, weighted: unbiased), less than one Gibbs sweep per draw (``benchmarks/
bench_conditional_check.py --sections cost``). With random
hyperparameters ``theta`` the identity holds for ``pi(c | theta, y)`` and ``(c, theta)`` drawn
from the joint posterior, so each draw's terms use its own ``theta``; the continuous free variables
get Langevin terms ``d/du log p`` and ``u d/du log p + 1`` (``u`` unconstrained; mean zero by
integration by parts), which see a wrong hyperparameter update. ``arviz_regen.
conditional_check`` turns the stored terms into p-values (``docs/maths/conditional_check.md``).
Each check's terms follow the slow moves of its own test function without showing them in their
own autocorrelations, so the terms carry ``check_tau``, each test function's integrated time
(evaluated at every draw, a few per cent of the terms' cost), and with sampled hyperparameters
``state_tau``, the state's slowest time: the test's batches must cover both.
"""

from __future__ import annotations

import numpy as np

from .engine.kernels.conditional import CHECK_NAMES

__all__ = ["CHECK_NAMES", "GROUP", "compute_conditional_checks"]

#: the group the terms go to (read by ``arviz_regen.conditional_check``)
GROUP = "conditional_checks"
#: the variable of the hyperparameters' Langevin terms
HYPER_VAR = "hyperparameters"
#: label vectors per compiled call (bounds the canonical copy of the labels)
_CHUNK = 256
#: attribute of the terms: the slowest integrated autocorrelation time of the sampled state they
#: depend on (read by ``arviz_regen.conditional_check``: batches at least four times as long)
STATE_TAU = "state_tau"
#: attribute of a partition's terms: the integrated autocorrelation time of each check's test
#: function (the mean over chains; read by ``arviz_regen.conditional_check``: each check's
#: batches at least four times as long)
CHECK_TAU = "check_tau"
#: attributes of a partition's terms naming the combination ``arviz_regen.conditional_check``
#: applies: ``log_post`` less its regression on the other checks, beside ``n_clusters`` as it is
#: (Bonferroni): under the right model ``log_post``'s and ``cluster_size``'s means are strongly
#: correlated, and a wrong likelihood hyperparameter moves them apart, which no check alone shows
#: (``docs/maths/conditional_check.md``, "The adjusted combination")
ADJUSTED_CHECK, RAW_CHECKS = "adjusted_check", "raw_checks"
#: attribute of a partition's terms: slow-time batches at most ``N // min_batches`` draws: eight
#: (32 batches with four chains, not 16) gave the adjusted combination its power against NIG
#: beta0 x 1.3 at 2,000 items on fresh runs, levels within bounds (``docs/maths/conditional_check.md``)
MIN_BATCHES = "min_batches"
COMBINATION = {ADJUSTED_CHECK: "log_post", RAW_CHECKS: "n_clusters", MIN_BATCHES: 8}


def _draw_reader(model, rv):
    """Return a reader of the posterior's values of the random variables.

    A :class:`~pymc_partition.model_spec.HyperparameterReader` of the random variables, not the transformed value
    variables a step reads.
    """
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import ancestors

    from ._pytensor_modes import compile_function
    from .distribution import PartitionRV
    from .likelihood import MarginalLikelihoodRV
    from .model_spec import HyperparameterReader, likelihood_terms

    terms = likelihood_terms(model, rv)
    if len(terms) != 1:
        raise NotImplementedError(
            f"The conditional check with random hyperparameters takes one MarginalLikelihood "
            f"term; {rv.name!r} has {len(terms)}."
        )
    obs = terms[0]
    op = obs.owner.op
    inputs = MarginalLikelihoodRV.params_of(obs)
    params = list(inputs.hyperparameters)
    item_lm = op.family_at(params).log_marginal(inputs.item_stats)
    graphs = list(PartitionRV.params_of(rv)) + [inputs.item_stats] + params + [item_lm]
    free = [v for v in model.free_RVs if v is not rv and v in set(ancestors(graphs))]
    stand_in = {v: v.type(name=v.name) for v in free}
    graphs = graph_replace(graphs, stand_in, strict=False)
    used = set(ancestors(graphs))
    values = [s for s in stand_in.values() if s in used]
    fn = compile_function(values, graphs, on_unused_input="ignore")
    return HyperparameterReader.from_function(op, values, fn)


def _strata_and_partners(n, items, rng):
    """Return stratum boundaries for ``items`` and a fixed random partner of each item.

    See :func:`compute_conditional_checks` for the strata.
    """
    if items is None:
        r = n
    elif isinstance(items, (float, np.floating)) and 0.0 < items <= 1.0:
        r = max(1, int(np.ceil(items * n)))
    elif (isinstance(items, (int, np.integer)) and not isinstance(items, (bool, np.bool_))
          and items >= 1):  # fmt: skip
        r = min(int(items), n)
    else:
        raise ValueError(f"`items` must be None, a fraction in (0, 1] or a positive integer, got {items!r}.")
    bounds = (np.arange(r + 1, dtype=np.int64) * n) // r
    if n == 1:
        return bounds, np.full(n, -1, np.int64)
    partners = (np.arange(n) + 1 + rng.integers(0, n - 1, size=n)) % n
    return bounds, partners.astype(np.int64)


def _slowest_time(*traces):
    """Return the largest integrated autocorrelation time of any chain of any coordinate, or None.

    Each trace has shape ``(chain, draw, ...)``; constant coordinates (no time) are skipped.
    """
    from arviz_regen.base.autocorrelation import integrated_time

    taus = []
    for x in traces:
        x = np.asarray(x, dtype=float)
        x = x.reshape(x.shape[0], x.shape[1], -1)
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = integrated_time(np.moveaxis(x, 1, 2))
        taus.append(tau[np.isfinite(tau)])
    taus = np.concatenate(taus) if taus else np.empty(0)
    return float(taus.max()) if taus.size and taus.max() > 0 else None


def _check_times(values):
    """Return each check's test-function time: the mean over chains of ``values (chain, draw, check)``.

    NaN for a test function constant in every chain. (The mean, not the largest as for
    ``state_tau``: on saved 2,000-item runs the same level and more power against DP alpha x 1.1,
    ``docs/maths/conditional_check.md``.)
    """
    from arviz_regen.base.autocorrelation import integrated_time

    with np.errstate(invalid="ignore", divide="ignore"):
        tau = integrated_time(np.moveaxis(np.asarray(values, dtype=float), 1, 2))  # (chain, check)
    tau = np.where(np.isfinite(tau) & (tau > 0), tau, np.nan)
    out = np.full(tau.shape[1], np.nan)
    seen = ~np.all(np.isnan(tau), axis=0)
    out[seen] = np.nanmean(tau[:, seen], axis=0)
    return [float(t) for t in out]


def _forward_transforms(model, rvs):
    """Compile one function from the posterior values of ``rvs`` to their value variables' values.

    It also reads the free variables their transforms' parameters depend on.
    """
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import ancestors

    from ._pytensor_modes import compile_function

    free = [v for v in model.free_RVs]
    stand_in = {v: v.type(name=v.name) for v in free}
    outs = []
    for rv in rvs:
        transform = model.rvs_to_transforms.get(rv)
        x = stand_in[rv]
        outs.append(x if transform is None else transform.forward(x, *rv.owner.inputs))
    outs = graph_replace(outs, stand_in, strict=False)
    used = set(ancestors(outs))
    inputs = [s for s in stand_in.values() if s in used]
    fn = compile_function(inputs, outs, mode="FAST_COMPILE", on_unused_input="ignore")
    return fn, [s.name for s in inputs]


def _score_terms(model, posterior, partitions, thin):
    """Langevin (Stein) terms of the model's continuous free variables, and their names.

    ``(draws, 2 k)`` over their ``k`` unconstrained coordinates ``u``: ``d/du log p`` and ``u d/du log p + 1`` (test
    functions ``1`` and ``u``), each draw at its own values.
    """
    continuous = [rv for rv in model.free_RVs
                  if rv not in partitions and model.rvs_to_values[rv].dtype.startswith("float")]  # fmt: skip
    if not continuous:
        return None, [], {}
    missing = [rv.name for rv in continuous if rv.name not in posterior]
    if missing:
        raise ValueError(
            f"The posterior lacks the draws of {missing}: the hyperparameters' Langevin check needs "
            "every continuous free variable of the model (or pass hyperparameters=False)."
        )
    values = model.rvs_to_values
    forward, names = _forward_transforms(model, continuous)
    vars_ = [values[rv] for rv in continuous]
    dlogp = model.compile_dlogp(vars=continuous)

    def draws(name):
        da = posterior[name].transpose("chain", "draw", ...).isel(draw=slice(None, None, thin))
        v = np.asarray(da.values)
        return v.reshape((-1,) + v.shape[2:])

    rv_draws = {name: draws(name) for name in names}
    labels = {values[rv].name: draws(rv.name) for rv in partitions}
    labels_of = [values[rv].name for rv in partitions]
    n = next(iter(labels.values())).shape[0]
    coords = []
    for rv in continuous:
        size = int(np.prod(model.initial_point()[values[rv].name].shape))
        coords += [rv.name] if size == 1 else [f"{rv.name}[{j}]" for j in range(size)]
    out = np.empty((n, 2 * len(coords)))
    for t in range(n):
        u = forward(*[rv_draws[name][t] for name in names])
        point = {v.name: np.asarray(x) for v, x in zip(vars_, u)}
        point.update({name: labels[name][t] for name in labels_of})
        grad = np.asarray(dlogp(point), dtype=float)
        flat = np.concatenate([np.ravel(x) for x in u]).astype(float)
        out[t, : len(coords)] = grad
        out[t, len(coords) :] = flat * grad + 1.0
    names_out = [f"score[{c}]" for c in coords] + [f"score_u[{c}]" for c in coords]
    return out, names_out, rv_draws


def compute_conditional_checks(idata, *, model=None, var_names=None, items=0.5, thin=1, random_seed=None,
                               hyperparameters=True, extend_inferencedata=True, seed=None):  # fmt: skip
    """Per-draw terms of the conditional (discrete Stein) check of each partition's draws.

    Parameters
    ----------
    idata : InferenceData or xarray.DataTree
        What ``pm.sample`` returned: the partition's draws in ``posterior``, with those of any
        random variable its prior or likelihood depends on.
    model : pymc.Model, optional
        The model whose posterior the draws should follow (default: the one on the context stack).
    var_names : list of str, optional
        Partition variables to check (default: every partition in the posterior).
    items : float, int or None, default 0.5
        Items evaluated per draw: a fraction of them (at least one), a number, or None for all.
        With ``r < n`` items the ``n`` items are split into ``r`` blocks of consecutive items and
        each draw evaluates one item of each block, drawn afresh for each draw, its term weighted
        by its block's size: an unbiased estimate of the mean over all items (the choice does not
        depend on the draw), with more variance. The default costs less than one Gibbs sweep per
        draw; all items cost more and see small errors better (``benchmarks/
        bench_conditional_check.py``: DP alpha off by 10 % at 200 items).
    thin : int, default 1
        Evaluate every ``thin``-th draw.
    random_seed : int or numpy.random.Generator, optional
        Seed of the partners and of each draw's items; default 0.
    hyperparameters : bool, default True
        Also add the Langevin terms of the model's continuous free variables (variable
        ``hyperparameters``, dims ``(chain, draw, hyper_check)``): for each unconstrained
        coordinate ``u``, ``d/du log p`` and ``u d/du log p + 1``, zero in expectation under the
        joint posterior; they see a wrong hyperparameter update, which the partition's
        conditionals cannot.
    extend_inferencedata : bool, default True
        Add the terms as the ``conditional_checks`` group of ``idata`` (replacing one there) and
        return ``idata``; else return the Dataset.
    seed : int, optional
        Deprecated name of ``random_seed`` (same draws).

    Returns
    -------
    InferenceData, DataTree or xarray.Dataset
        One variable per partition, dims ``(chain, draw, check)``, ``check`` the test functions
        of :data:`CHECK_NAMES` (each term the mean over the evaluated items): zero in
        expectation under the model's posterior, with the attribute ``check_tau`` (each test
        function's integrated autocorrelation time, the mean over chains; NaN when constant),
        ``adjusted_check = "log_post"``, ``raw_checks = "n_clusters"`` and ``min_batches = 8``
        (the combination of the checks ``arviz_regen.conditional_check`` applies: ``log_post``
        less its regression on the other checks, beside ``n_clusters``, every slow batch at most
        an eighth of a chain) and, with sampled hyperparameters, ``state_tau``; and
        ``hyperparameters`` when the model has continuous free variables.

    Raises
    ------
    ValueError
        If the posterior lacks the partitions or the draws of a random variable the conditionals
        depend on, or its partitions have another number of items than the model's.
    """
    import pymc as pm
    import xarray as xr

    from arviz_regen.base.seeds import random_seed_argument, seed_attribute
    from arviz_regen.xr.containers import (
        add_group,
    )

    from .engine import MoveMix, PartitionKernel
    from .engine.kernels.conditional import check_function_values, conditional_terms
    from .log_likelihood import sampled_posterior
    from .model_spec import (
        RandomHyperparameterError,
        find_partition_vars,
        partition_spec,
    )
    from .predictive._types import quiet_compile
    from .state import canonicalize

    seed = random_seed_argument(random_seed, seed, default=0)
    model = pm.modelcontext(model)
    posterior = sampled_posterior(idata)
    if isinstance(thin, bool) or not isinstance(thin, (int, np.integer)) or thin < 1:
        raise ValueError(f"`thin` must be a positive integer, got {thin!r}.")
    rvs = [rv for rv in find_partition_vars(model) if var_names is None or rv.name in var_names]
    absent = [rv.name for rv in rvs if rv.name not in posterior]
    if var_names is not None:
        absent += sorted(set(var_names) - {rv.name for rv in rvs})
    if absent or not rvs:
        raise ValueError(f"The posterior holds no draws of the partition(s) {absent or 'of the model'}.")
    results = {}
    for rv in rvs:
        da = posterior[rv.name]
        item_dim = next(d for d in da.dims if d not in ("chain", "draw"))
        n = int(rv.type.shape[-1])
        if da.sizes[item_dim] != n:
            raise ValueError(
                f"The posterior's {rv.name!r} has {da.sizes[item_dim]} items, the model's {n}: "
                "these draws are not from this model."
            )
        da = da.transpose("chain", "draw", item_dim).isel(draw=slice(None, None, thin))
        n_chain, n_draw = da.sizes["chain"], da.sizes["draw"]
        flat = np.asarray(da.values).reshape(-1, n)
        reader = None
        try:
            spec = partition_spec(model, rv)
        except RandomHyperparameterError:
            reader = _draw_reader(model, rv)
            missing = [name for name in reader.names if name not in posterior]
            if missing:
                raise ValueError(
                    f"The conditionals of {rv.name!r} depend on {missing}, whose draws are not in "
                    "the posterior: keep them in the posterior."
                ) from None
            values = {name: np.asarray(posterior[name].transpose("chain", "draw", ...)
                                       .isel(draw=slice(None, None, thin)).values)
                      for name in reader.names}  # fmt: skip
            values = {k: v.reshape((-1,) + v.shape[2:]) for k, v in values.items()}
            spec = partition_spec(model, rv, point=model.initial_point())
        kernel = PartitionKernel.from_spec(spec, MoveMix(0, 0, 0, 0.0, 1))
        if reader is not None and not kernel.refreshable:
            raise NotImplementedError(
                f"The conditionals of {rv.name!r} at each draw's hyperparameters need the family's "
                f"specialised predictive form, which {type(spec.family).__name__} lacks for these data."
            )
        m, s, w = kernel.bundles
        rng = np.random.default_rng(seed)
        bounds, partners = _strata_and_partners(n, items, rng)
        R = bounds.size - 1
        width = R if R < n else 0  # each draw's choice of items, one uniform per stratum
        out = np.empty((flat.shape[0], len(CHECK_NAMES)))
        # each check's test function at each draw: its terms follow its slow moves (check_tau)
        f_values = np.empty_like(out)
        with quiet_compile():
            if reader is None:
                for a in range(0, flat.shape[0], _CHUNK):
                    labels = np.ascontiguousarray(canonicalize(flat[a : a + _CHUNK].astype(np.int64)))
                    conditional_terms(labels, bounds, rng.random((labels.shape[0], width)), partners,
                                      m, s, w, out[a : a + _CHUNK])  # fmt: skip
                    check_function_values(labels, partners, m, s, f_values[a : a + _CHUNK])
            else:
                for t in range(flat.shape[0]):
                    try:
                        numbers = reader.read({k: v[t] for k, v in values.items()})
                    except ValueError as err:
                        raise ValueError(f"Chain index {t // n_draw}, draw index {t % n_draw}: {err}") from None
                    if numbers is not None:
                        kernel.refresh(numbers)
                    labels = np.ascontiguousarray(canonicalize(flat[t : t + 1].astype(np.int64)))
                    conditional_terms(labels, bounds, rng.random((1, width)), partners, m, s, w, out[t : t + 1])
                    check_function_values(labels, partners, m, s, f_values[t : t + 1])
                # the terms follow the hyperparameters' slow moves without showing them in their own
                # autocorrelations: the test's batches also cover the state's time
                hyper = [v.reshape((n_chain, n_draw) + v.shape[1:]) for v in values.values()]
                state_tau = _slowest_time(f_values[:, 0].reshape(n_chain, n_draw), *hyper)  # the number of clusters
        if not np.all(np.isfinite(out)):
            t = int(np.argmax(~np.all(np.isfinite(out), axis=1)))
            raise ValueError(
                f"The conditional-check terms of {rv.name!r} are not finite at chain index "
                f"{t // n_draw}, draw index {t % n_draw}."
            )
        coords = {d: da.coords[d].values for d in ("chain", "draw") if d in da.coords}
        coords["check"] = list(CHECK_NAMES)
        seed_attr = {} if seed_attribute(seed) is None else {"seed": seed_attribute(seed)}
        tau_attr = {STATE_TAU: state_tau} if reader is not None and state_tau is not None else {}
        tau_attr[CHECK_TAU] = _check_times(f_values.reshape(n_chain, n_draw, len(CHECK_NAMES)))
        results[rv.name] = xr.DataArray(
            out.reshape(n_chain, n_draw, len(CHECK_NAMES)), dims=("chain", "draw", "check"), coords=coords,
            attrs={"items_per_draw": int(R), "n_items": n, **seed_attr, "thin": int(thin), **tau_attr, **COMBINATION},
        )  # fmt: skip
    if hyperparameters:
        partitions = find_partition_vars(model)
        absent = [rv.name for rv in partitions if rv.name not in posterior]
        if absent:
            raise ValueError(f"The posterior lacks the partition(s) {absent} the model's density needs.")
        scores, names, draws = _score_terms(model, posterior, partitions, thin)
        if scores is not None:
            if not np.all(np.isfinite(scores)):
                t = int(np.argmax(~np.all(np.isfinite(scores), axis=1)))
                raise ValueError(f"The gradient of the model's log density is not finite at chain "
                                 f"index {t // n_draw}, draw index {t % n_draw}.")  # fmt: skip
            coords = {d: da.coords[d].values for d in ("chain", "draw") if d in da.coords}
            coords["hyper_check"] = names
            state_tau = _slowest_time(*[v.reshape((n_chain, n_draw) + v.shape[1:]) for v in draws.values()])
            tau_attr = {} if state_tau is None else {STATE_TAU: state_tau}
            results[HYPER_VAR] = xr.DataArray(
                scores.reshape(n_chain, n_draw, -1), dims=("chain", "draw", "hyper_check"), coords=coords,
                attrs={"thin": int(thin), **tau_attr},
            )  # fmt: skip
    ds = xr.Dataset(results, attrs={
        "description": "Per-draw discrete Stein terms sum_k p(c_i=k|c_-i) f(c^{i->k}) - f(c), mean over "
                       "items; zero in expectation under the model's posterior "
                       "(pymc_partition.compute_conditional_checks; test: arviz_regen.conditional_check)",
        "n_clusters": "f = number of clusters",
        "cluster_size": "f = sum of squared cluster sizes / 2",
        "partner": "f = [c_i = c_j], j a fixed random partner of item i",
        "log_post": "f = log posterior of the partition",
        "hyperparameters": "Langevin terms d/du log p (score[u]) and u d/du log p + 1 (score_u[u]) of "
                           "each unconstrained coordinate u of the continuous free variables",
    })  # fmt: skip
    if not extend_inferencedata:
        return ds
    return add_group(idata, GROUP, ds, replace=True)
