"""Random hyperparameters: the cost of a compound draw (the hyperparameters' step + the partition
step) next to the partition step alone, measured in the same run (issues 9 and 18, "Speed").

Run from the repository root::

    python benchmarks/bench_hierarchical.py [--quick] [--summary] [--previous REV]
        [--data /path/to/arabidopsis_messerli2007.csv]

Two models, each built twice: once with its hyperparameters as PyMC variables ("random") and
once with the same hyperparameters as numbers ("fixed"):

(a) Arabidopsis (14 items x 3-4 replicates, 43 variables; the CSV from ``--data``,
    ``$PMP_ARABIDOPSIS_CSV`` or beside the clone, else data simulated from the paper's fitted
    model): ``SpikeSlabNormal`` with ``sigma2_theta ~ HalfNormal(2 x EB)`` and
    ``p ~ Beta(1, 20)``, the other hyperparameters at the empirical-Bayes values of
    ``pmp.fit_spike_slab``; prior ``DirichletProcess(alpha ~ Gamma(2, 1))``. Fixed:
    ``alpha = 1`` and the EB values.
(b) 2,000 items of a 2-D Gaussian mixture with 4 well separated clusters:
    ``NormalInverseGamma`` with ``mu0 ~ Normal(0, 5)``, ``kappa0 ~ Gamma(2, 10)``
    (``alpha0 = beta0 = 2``), ``DirichletProcess(alpha ~ Gamma(2, 1))``. Fixed: ``mu0 = 0``,
    ``kappa0 = 0.2``, ``alpha = 1``.

The random variables start at the fixed model's numbers.
Per draw (one draw = one Gibbs sweep of ``GibbsPartition``, the step ``pm.sample`` assigns):

1. ``step.step(point)`` of the fixed model's step (the baseline of every ratio);
2. the random model's step with the hyperparameters unchanged between calls (the step compares
   them with the last ones and reuses its cluster state);
3. the random model's step given a point whose hyperparameters change at every call (as under
   NUTS): the step re-reads them (one compiled function of the point), copies the numbers into
   its kernels' arrays, computes the singleton log marginals with its predictive form and
   rebuilds its cluster state from the labels. Its extra cost is split into its parts (the
   compiled function, the family object with its argument checks, the predictive form, the
   rebuild inside the kernel; the remainder holds the copies and the singletons);
4. ``PartitionHyperparameters.step`` alone, and it and the partition step called in turn (a
   draw of the compound chain without PyMC between the steps);
5. the full compound draw through ``pm.sample(tune, draws, chains=1, cores=1)`` with the steps
   ``pm.sample()`` assigns (``PartitionHyperparameters`` + ``GibbsPartition``), the same with
   NUTS on the hyperparameters (the steps before issue 18; NUTS's share from its own
   ``perf_counter_diff``), and the fixed model (partition step only): each per draw from PyMC's
   ``sampling_time`` / (tune + draws), so compilation is excluded and PyMC's own cost per draw
   is in all three. The goal's ratio is the compound draw over the fixed one. The bulk ESS per
   second of sampling of each hyperparameter is reported for both compound chains.

The headline (issue 27, item 2), printed first and alone with ``--summary``, in CPU time
(``time.process_time``: the machine is shared): in a warm process (one ``pm.sample`` of each
model before timing), the CPU seconds ``pm.sample`` spends outside sampling (building the steps,
the InferenceData) for the recommended model of the docs (standardised 2-D data,
``NormalInverseGamma.from_data(..., scale=scale)``, ``scale ~ LogNormal(0, 1)``,
``alpha ~ Gamma(2, 1)``; each repeat a new model on new data of the same shape) against the same
model with ``scale = alpha = 1``; and the compound draw over the fixed one in ``pm.sample`` (CPU
per draw from the first draw to the last, read by a callback; the same seed for both) for (a)
and (b). Goals: set-up <= 0.3 s, (a) <= 3x, (b) <= 1.5x. With ``--previous REV`` the package at
git revision ``REV`` (exported with ``git archive``) and this tree each run in a warm subprocess,
and every measurement is taken in both, one after the other (the order alternating), with the
same models and seeds: an A/B under the same load.

1-4 are timed in interleaved rounds, each figure the fastest round (the machine may be shared);
every ratio is against 1, measured in the same run. First-call costs are reported apart:
building each step (compiling, or loading numba's cache), the first refresh, and what
``pm.sample`` spends outside sampling (NUTS's logp/gradient compilation, building the steps,
the InferenceData).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import os
import pstats
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

warnings.filterwarnings("ignore")

import pymc as pm  # noqa: E402

logging.getLogger("pymc").setLevel(logging.ERROR)  # after the import, which sets it

from revisions import export_tree  # noqa: E402

import pymc_partition as pmp  # noqa: E402
from pymc_partition.datasets import arabidopsis_path, load_arabidopsis  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CENTERS = np.array([[-6.0, -6.0], [-6.0, 6.0], [6.0, -6.0], [6.0, 6.0]])


# ----------------------------------------------------------------------------- models
class Case:
    """One benchmark model: ``build(random)`` returns ``(model, z)``; ``jitter`` the
    hyperparameters' transformed values to perturb, with their scale."""

    def __init__(self, name, build, jitter, source):
        self.name, self.build, self.jitter, self.source = name, build, jitter, source


def arabidopsis_case(data_path):
    path = arabidopsis_path(data_path)
    if path is not None:
        data, source = load_arabidopsis(path), f"CSV {path}"
    else:
        from pymc_partition.paper.workflow import simulate_data

        data, source = simulate_data(), "simulated from the paper's fitted model (no CSV found)"
    t0 = time.perf_counter()
    est = pmp.fit_spike_slab(data.values, data.item_index).estimates
    fit_seconds = time.perf_counter() - t0

    def build(random):
        with pm.Model() as model:
            if random:
                # started at the fixed model's numbers, so both chains begin alike
                alpha = pm.Gamma("alpha", 2.0, 1.0, initval=1.0)
                s2t = pm.HalfNormal("sigma2_theta", 2.0 * est["sigma2_theta"],
                                    initval=est["sigma2_theta"])  # fmt: skip
                p = pm.Beta("p", 1.0, 20.0, initval=est["p"])
            else:
                alpha, s2t, p = 1.0, est["sigma2_theta"], est["p"]
            z = pmp.Partition("z", n_items=data.n_items, prior=pmp.DirichletProcess(alpha=alpha))
            family = pmp.SpikeSlabNormal(
                mu=est["mu"], sigma2=est["sigma2"], sigma2_eta=est["sigma2_eta"],
                sigma2_theta=s2t, p=p,
            )  # fmt: skip
            pmp.MarginalLikelihood("y", partition=z, family=family, observed=data.values,
                                   item_index=data.item_index)  # fmt: skip
        return model, z

    jitter = {"alpha_log__": 0.3, "sigma2_theta_log__": 0.1, "p_logodds__": 0.2}
    name = f"Arabidopsis ({data.n_items} items, {data.values.shape[1]} vars)"
    case = Case(name, build, jitter, f"{source}; EB fit {fit_seconds:.1f} s")
    return case


def mixture_case(n_items, seed=4):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, len(CENTERS), n_items)
    y = CENTERS[truth] + rng.standard_normal((n_items, 2))

    def build(random):
        with pm.Model() as model:
            if random:
                alpha = pm.Gamma("alpha", 2.0, 1.0, initval=1.0)
                mu0 = pm.Normal("mu0", 0.0, 5.0, initval=0.0)
                kappa0 = pm.Gamma("kappa0", 2.0, 10.0, initval=0.2)
            else:
                alpha, mu0, kappa0 = 1.0, 0.0, 0.2
            z = pmp.Partition("z", n_items=n_items, prior=pmp.DirichletProcess(alpha=alpha))
            family = pmp.NormalInverseGamma(mu0=mu0, kappa0=kappa0, alpha0=2.0, beta0=2.0)
            pmp.MarginalLikelihood("y", partition=z, family=family, observed=y)
        return model, z

    jitter = {"alpha_log__": 0.3, "mu0": 0.05, "kappa0_log__": 0.2}
    return Case(f"Gaussian mixture ({n_items} items, d = 2, 4 clusters)", build, jitter,
                f"simulated, seed {seed}")  # fmt: skip


# ----------------------------------------------------------------------------- timing
def run_steps(step, points, name, n_calls):
    """Seconds per ``step.step`` over ``n_calls`` calls cycling through ``points`` (the labels
    are carried from call to call, as PyMC does)."""
    labels = points[0][name]
    t0 = time.perf_counter()
    for i in range(n_calls):
        q = points[i % len(points)]
        q[name] = labels
        new, _ = step.step(q)
        labels = new[name]
    return (time.perf_counter() - t0) / n_calls


def rebuild_step(step, point, name, n_calls):
    """Seconds per step of the fixed model when the cluster state is rebuilt from the labels at
    each call (as after a refresh), without reading any hyperparameter."""
    labels = point[name]
    t0 = time.perf_counter()
    for _ in range(n_calls):
        step._chain = None  # forget the cached state: the kernel rebuilds it from the labels
        point[name] = labels
        new, _ = step.step(point)
        labels = new[name]
    return (time.perf_counter() - t0) / n_calls


def run_chain(steps, point, n_calls):
    """Seconds per draw of ``steps`` called in turn on the point, as PyMC's CompoundStep does
    (without PyMC's bookkeeping between them)."""
    q = dict(point)
    t0 = time.perf_counter()
    for _ in range(n_calls):
        for step in steps:
            q, _ = step.step(q)
    return (time.perf_counter() - t0) / n_calls


def perturbed_points(point, jitter, n, rng):
    """``n`` copies of ``point`` with the hyperparameters' transformed values jittered."""
    out = []
    for _ in range(n):
        q = dict(point)
        for k, s in jitter.items():
            q[k] = np.asarray(point[k] + s * rng.standard_normal(np.shape(point[k])))
        out.append(q)
    return out


def refresh_parts(step, points, n_calls):
    """Seconds per call of each part of a refresh (``HyperparameterReader.read`` and the
    engine's ``refresh``)."""
    hyper = step._reader
    vals = [[np.asarray(q[n], dtype=d) for n, d in zip(hyper.names, hyper._dtypes)] for q in points]

    def per_call(fn, repeats=5):
        best = np.inf
        for _ in range(repeats):
            t0 = time.perf_counter()
            for i in range(n_calls):
                fn(i % len(points))
            best = min(best, (time.perf_counter() - t0) / n_calls)
        return best

    numbers = []
    for q in points:  # each point's family and statistics, as read() gives them
        hyper.forget()
        got = hyper.read(q)
        numbers.append((got.family, np.array(got.item_stats)))
    parts = {"compiled point -> tables, hyperparameters (statistics unless numbers)": per_call(
        lambda i: hyper._fn(*vals[i]))}  # fmt: skip
    # the rest of HyperparameterReader.read: comparing with the last values, the family at the new
    # values, copies, finiteness checks (consecutive points differ, so every call reads)
    whole = per_call(lambda i: hyper.read(points[i]))
    parts["rest of HyperparameterReader.read (compare, family, copy, check)"] = whole - sum(parts.values())
    parts["family.predictive_form(stats)"] = per_call(lambda i: numbers[i][0].predictive_form(numbers[i][1]))
    hyper.forget()  # forget what read saw, so the step reads again
    return parts


def profile_refresh(step, points, name, n_calls, top=10):
    """The package's functions with the most cumulative time in ``n_calls`` steps with changing
    hyperparameters (cProfile; its own overhead inflates the Python parts)."""
    prof = cProfile.Profile()
    prof.enable()
    run_steps(step, points, name, n_calls)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats("pymc_partition", top)
    lines = buf.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "ncalls" in line)
    root = os.path.dirname(os.path.dirname(os.path.abspath(pmp.__file__))) + os.sep
    return "\n".join("    " + line.replace("benchmarks/../", "").replace(root, "")
                     for line in lines[start:] if line.strip())  # fmt: skip


def _timed(step, spent):
    """Time ``step.step`` inside a run (the instance attribute shadows the method PyMC calls)."""
    inner = step.step

    def timed(point):
        t = time.perf_counter()
        out = inner(point)
        spent[0] += time.perf_counter() - t
        spent[1] += 1
        return out

    step.step = timed


def sample(model, z, tune, draws, seed, hyper="auto"):
    """``(wall seconds, idata, partition step seconds per call, hyperparameter step seconds per
    call)`` of ``pm.sample``; ``hyper="auto"`` lets PyMC assign the other variables (the
    hyperparameters get ``PartitionHyperparameters``), ``"nuts"`` gives them NUTS (the steps
    before this issue). The steps are built beforehand, as PyMC would build them, to time
    their calls inside the run."""
    with model:
        t0 = time.perf_counter()
        step = pmp.GibbsPartition([z])
        spent, spent_h = [0.0, 0], [0.0, 0]
        _timed(step, spent)
        steps = [step]
        others = [v for v in model.free_RVs if v is not z]
        if others:
            other = pmp.PartitionHyperparameters(others) if hyper == "auto" else pm.NUTS(others)
            if hyper == "auto":
                _timed(other, spent_h)
            steps.insert(0, other)
        idata = pm.sample(tune=tune, draws=draws, chains=1, cores=1, step=steps, progressbar=False,
                          random_seed=seed, compute_convergence_checks=False)  # fmt: skip
    return (time.perf_counter() - t0, idata, spent[0] / max(spent[1], 1),
            spent_h[0] / max(spent_h[1], 1))  # fmt: skip


def chosen_steps(model):
    """Which step ``pm.sample()`` assigns to each variable: ``{step name: [variables]}``."""
    from pymc.sampling.mcmc import assign_step_methods

    _, selected = assign_step_methods(model, None, pm.step_methods.STEP_METHODS)
    return {cls.__name__: [model.values_to_rvs[v].name for v in vs] for cls, vs in selected.items()}


def ess_per_second(idata, names):
    """Bulk ESS per second of sampling of each variable (one chain)."""
    import arviz as az

    seconds = idata.posterior.attrs["sampling_time"]
    out = {}
    for name in names:
        ess = az.ess(idata.posterior[name])
        out[name] = float(np.asarray(getattr(ess, name, ess)).min()) / seconds
    return out


def logp_dlogp_seconds(model, point, n_calls):
    """Seconds per evaluation of the model's log density and gradient in the continuous
    variables (what NUTS calls per leapfrog step), the partition held at ``point``'s labels."""
    from pymc.blocking import DictToArrayBijection

    cont = model.continuous_value_vars
    fn = model.logp_dlogp_function(cont, ravel_inputs=True)
    fn.set_extra_values({v.name: point[v.name] for v in model.value_vars if v not in cont})
    x = DictToArrayBijection.map({v.name: point[v.name] for v in cont}).data
    fn(x)
    t0 = time.perf_counter()
    for _ in range(n_calls):
        fn(x)
    return (time.perf_counter() - t0) / n_calls


def measure(case, quick):
    n_calls = 200 if quick else 1000
    rounds = 5 if quick else 9
    tune, draws = (200, 300) if quick else (500, 2000)
    rng = np.random.default_rng(1)
    res = {"first": {}}

    fixed_model, zf = case.build(False)
    rand_model, zr = case.build(True)
    name = zf.name
    t0 = time.perf_counter()
    fixed = pmp.GibbsPartition([zf], model=fixed_model)
    res["first"]["build GibbsPartition, fixed"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    rand = pmp.GibbsPartition([zr], model=rand_model)
    first = time.perf_counter() - t0
    res["first"]["build GibbsPartition, random (+ HyperparameterReader compile)"] = first
    t0 = time.perf_counter()
    hyper = pmp.PartitionHyperparameters([v for v in rand_model.free_RVs if v is not zr], model=rand_model)
    res["first"]["build PartitionHyperparameters (log density compile)"] = time.perf_counter() - t0
    res["hyper_block"] = {"escobar_west": [hyper.block.names[int(r[0])] for r in hyper.block.escobar_west],
                          "slice": [hyper.block.names[j] for j in hyper.block.slice_index]}  # fmt: skip

    # warm up: a few sweeps from the initial point so the chains hold realistic clusters
    pf, pr = fixed_model.initial_point(), rand_model.initial_point()
    for _ in range(50):
        pf, _ = fixed.step(pf)
        pr, _ = rand.step(pr)
    pr[name] = pf[name]
    same = [pr]
    moving = perturbed_points(pr, case.jitter, 64, rng)
    t0 = time.perf_counter()
    run_steps(rand, moving, name, 1)
    res["first"]["first step with new hyperparameters"] = time.perf_counter() - t0
    run_steps(rand, moving, name, 20)

    hyper.stop_tuning()
    run_chain([hyper, rand], pr, 20)
    timings = {k: [] for k in ("fixed", "rebuild", "same", "moving", "hyper", "chain")}
    for _ in range(rounds):
        timings["hyper"].append(run_chain([hyper], pr, n_calls))
        timings["chain"].append(run_chain([hyper, rand], pr, n_calls))
        timings["fixed"].append(run_steps(fixed, [pf], name, n_calls))
        timings["rebuild"].append(rebuild_step(fixed, pf, name, n_calls))
        timings["same"].append(run_steps(rand, same, name, n_calls))
        timings["moving"].append(run_steps(rand, moving, name, n_calls))
    # the fastest round of each: the least disturbed by other processes on a shared machine
    res["steps"] = {k: float(np.min(v)) for k, v in timings.items()}
    res["parts"] = refresh_parts(rand, moving, n_calls)
    res["profile"] = profile_refresh(rand, moving, name, n_calls)

    # pm.sample: the compound draw as PyMC assigns it (PartitionHyperparameters + GibbsPartition),
    # the same with NUTS on the hyperparameters (as before), and the partition step alone
    res["chosen"] = chosen_steps(rand_model)
    hyper_names = [v.name for v in rand_model.free_RVs if v is not zr]
    wall, idata, step_in_run, hyper_in_run = sample(rand_model, zr, tune, draws, seed=2)
    sampling = idata.posterior.attrs["sampling_time"]
    ss = idata.sample_stats
    res["compound"] = {
        "per_draw": sampling / (tune + draws),
        "partition": step_in_run,
        "hyper": hyper_in_run,
        "evals": float(np.mean(np.asarray(ss["hyper_n_evals"]))),
        "clusters": float(np.mean(np.asarray(ss["n_clusters"]))),
        "ess_s": ess_per_second(idata, hyper_names),
    }
    res["first"]["pm.sample outside sampling, random (steps, idata)"] = wall - sampling
    wall_n, idata_n, step_n, _ = sample(rand_model, zr, tune, draws, seed=2, hyper="nuts")
    sampling_n = idata_n.posterior.attrs["sampling_time"]
    ss = idata_n.sample_stats
    res["nuts"] = {
        "per_draw": sampling_n / (tune + draws),
        "nuts": float(np.mean(np.asarray(ss["perf_counter_diff"]))),
        "partition": step_n,
        "leapfrog": float(np.mean(np.asarray(ss["n_steps"]))),
        "logp_dlogp": logp_dlogp_seconds(rand_model, pr, n_calls),
        "ess_s": ess_per_second(idata_n, hyper_names),
    }
    res["first"]["pm.sample outside sampling, random with NUTS (NUTS compile, steps, idata)"] = wall_n - sampling_n
    wall_f, idata_f, _, _ = sample(fixed_model, zf, 0, draws, seed=3)
    sampling_f = idata_f.posterior.attrs["sampling_time"]
    res["fixed_sample"] = sampling_f / draws
    res["first"]["pm.sample outside sampling, fixed (step, idata)"] = wall_f - sampling_f
    return res


# ----------------------------------------------------------------------------- report
def report(case, res):
    base = res["steps"]["fixed"]

    def row(label, t, note=""):
        print(f"   {label:62s} {t * 1e6:10.1f} us  {t / base:11.2f}x{note}")

    print(f"\n== {case.name}\n   data: {case.source}")
    print(f"   {'per draw':62s} {'time':>13s}  {'/ fixed step':>12s}")
    steps = res["steps"]
    row("partition step alone, fixed hyperparameters", steps["fixed"])
    row("  same, cluster state rebuilt from the labels", steps["rebuild"])
    row("partition step, random hyperparameters unchanged", steps["same"])
    row("partition step, random hyperparameters changed (refresh)", steps["moving"])
    extra = steps["moving"] - steps["same"]
    rebuild = steps["rebuild"] - steps["fixed"]
    row("  extra cost of the refresh (changed - unchanged)", extra)
    row("    of which rebuilding the cluster state in the kernel", rebuild)
    for label, t in res["parts"].items():
        row("    of which " + label, t)
    row("    remainder (copies into the kernels arrays, singletons, noise)",
        extra - rebuild - sum(res["parts"].values()))  # fmt: skip
    print(f"   PartitionHyperparameters: Escobar-West {res['hyper_block']['escobar_west']}, "
          f"slice {res['hyper_block']['slice']}")  # fmt: skip
    row("PartitionHyperparameters.step alone (labels fixed)", steps["hyper"])
    row("PartitionHyperparameters + partition step, called in turn (no PyMC)", steps["chain"])
    c, n = res["compound"], res["nuts"]
    fixed = res["fixed_sample"]
    print(f"   pm.sample() chose: {res['chosen']}")
    row("pm.sample, fixed: partition step only (the goal's baseline)", fixed)
    row("pm.sample, random: compound draw (PartitionHyperparameters + partition step)",
        c["per_draw"], f"   {c['per_draw'] / fixed:5.2f}x the fixed pm.sample draw")  # fmt: skip
    row(f"  of which PartitionHyperparameters ({c['evals']:.1f} log density evaluations)",
        c["hyper"], f"   share {c['hyper'] / c['per_draw']:.0%}")  # fmt: skip
    row("  of which partition step (timed inside the run)", c["partition"],
        f"   share {c['partition'] / c['per_draw']:.0%}")  # fmt: skip
    row("  of which PyMC between the steps (the rest)", c["per_draw"] - c["hyper"] - c["partition"])
    row("pm.sample, random with NUTS on the hyperparameters (as before)", n["per_draw"],
        f"   {n['per_draw'] / fixed:5.2f}x the fixed pm.sample draw")  # fmt: skip
    row(f"  of which NUTS ({n['leapfrog']:.1f} leapfrog steps per draw)", n["nuts"],
        f"   share {n['nuts'] / n['per_draw']:.0%}")  # fmt: skip
    row("    NUTS: one log density + gradient evaluation", n["logp_dlogp"])
    row("  of which partition step (timed inside the run)", n["partition"])
    print(f"   (mean clusters {c['clusters']:.1f})")
    print("   ESS per second of sampling (bulk, one chain):")
    for name, v in c["ess_s"].items():
        print(f"     {name:20s} PartitionHyperparameters {v:10.0f}/s   NUTS {n['ess_s'][name]:10.0f}/s"
              f"   {v / n['ess_s'][name]:6.1f}x")  # fmt: skip
    print("   first-call costs:")
    for label, t in res["first"].items():
        print(f"     {label:68s} {t:8.3f} s")
    print("   profile of the step with changing hyperparameters (package functions, cumulative):")
    print(res["profile"])


# ----------------------------------------------------------------------------- headline
def recommended_model(n_items, random, seed):
    """The docs' recommended model on standardised 2-D data (``random``: ``scale`` and ``alpha``
    PyMC variables, else 1)."""
    x = np.random.default_rng(seed).normal(size=(n_items, 2))
    x = (x - x.mean(0)) / x.std(0)
    with pm.Model() as model:
        scale = pm.LogNormal("scale", 0.0, 1.0) if random else 1.0
        alpha = pm.Gamma("alpha", 2.0, 1.0) if random else 1.0
        z = pmp.Partition("z", n_items=n_items, prior=pmp.DirichletProcess(alpha))
        pmp.MarginalLikelihood("y", partition=z, observed=x,
                               family=pmp.NormalInverseGamma.from_data(x, n_clusters=3, scale=scale))  # fmt: skip
    return model, z


def setup_seconds(model, z):
    """CPU seconds ``pm.sample`` (1 draw, no tuning, one chain; ``GibbsPartition`` given, the rest
    assigned by PyMC) spends outside sampling."""
    with model:
        t0 = time.process_time()
        idata = pm.sample(draws=1, tune=0, chains=1, cores=1, step=[pmp.GibbsPartition([z])],
                          progressbar=False, random_seed=1, compute_convergence_checks=False)  # fmt: skip
        return time.process_time() - t0 - idata.posterior.attrs["sampling_time"]


def draw_seconds(model, z, tune, draws, seed):
    """CPU seconds per draw of ``pm.sample`` (one chain, ``GibbsPartition`` given, the rest assigned
    by PyMC), from the first draw to the last: read by a callback, so no set-up is counted."""
    marks = []

    def callback(trace, draw):
        marks.append(time.process_time())

    with model:
        pm.sample(tune=tune, draws=draws, chains=1, cores=1, step=[pmp.GibbsPartition([z])],
                  progressbar=False, random_seed=seed, compute_convergence_checks=False,
                  callback=callback)  # fmt: skip
    return (marks[-1] - marks[0]) / (len(marks) - 1)


_CASES = {}


def headline_task(task, quick, data_path=None, n_items=2000):
    """One measurement of the headline in this process (warm: the first call of a kind warms it up).

    ``task`` is ``["setup", random, repeat]`` (CPU seconds of :func:`setup_seconds` on a new model of
    the recommended kind) or ``["draw", name, seed]`` (CPU seconds per draw of the fixed and the
    compound chain of case ``name``, ``"draw_14"`` or ``"draw_2000"``, with the same seed).
    """
    if task[0] == "setup":
        if "setup" not in _CASES:
            for random in (True, False):
                setup_seconds(*recommended_model(14, random, 0))
            _CASES["setup"] = True
        return setup_seconds(*recommended_model(14, bool(task[1]), int(task[2]) + 1))
    name, seed = task[1], int(task[2])
    if name not in _CASES:
        case = arabidopsis_case(data_path) if name == "draw_14" else mixture_case(n_items)
        models = _CASES[name] = {random: case.build(random) for random in (True, False)}
        for random in (True, False):
            draw_seconds(*models[random], 20, 20, seed=1)  # warm
    models = _CASES[name]
    # 14 items draw in tens of microseconds: more draws, so that each figure spans a second or so
    tune, draws = {("draw_14", True): (300, 3000), ("draw_14", False): (500, 20000),
                   ("draw_2000", True): (100, 300), ("draw_2000", False): (300, 1500)}[name, bool(quick)]  # fmt: skip
    # the fixed chain runs the compound chain's tuning draws as draws (it has nothing to tune)
    return {
        "fixed": draw_seconds(*models[False], 0, tune + draws, seed),
        "random": draw_seconds(*models[True], tune, draws, seed),
    }


def headline_tasks(quick):
    """The headline's measurements, in order: set-ups, then draws (same seeds for every tree)."""
    repeats = 3 if quick else 7
    tasks = [["setup", random, r] for r in range(repeats) for random in (True, False)]
    for name in ("draw_14", "draw_2000"):
        tasks += [["draw", name, r + 2] for r in range(max(2, repeats - 2))]
    return tasks


def collect(results):
    """``{name: [values]}`` of the headline figures from :func:`headline_task`'s results in order."""
    out = {"setup_random": [], "setup_fixed": []}
    for task, value in results:
        if task[0] == "setup":
            out["setup_random" if task[1] else "setup_fixed"].append(value)
        else:
            name = task[1]
            for key in (name, name + "_fixed", name + "_random"):
                out.setdefault(key, [])
            out[name].append(value["random"] / value["fixed"])
            out[name + "_fixed"].append(value["fixed"])
            out[name + "_random"].append(value["random"])
    return out


def headline(quick, data_path=None, n_items=2000):
    """``{name: [values]}`` of the headline figures (repeats), measured in this process."""
    return collect([(t, headline_task(t, quick, data_path, n_items)) for t in headline_tasks(quick)])


def worker():
    """Serve :func:`headline_task` over stdin/stdout, one JSON line per task (see :func:`interleaved`)."""
    for line in sys.stdin:
        task, quick, data_path, n_items = json.loads(line)
        print(json.dumps(headline_task(task, quick, data_path, n_items)), flush=True)


class Worker:
    """A subprocess importing the packages of ``tree`` (a directory holding ``pymc_partition``) and
    serving :func:`headline_task`."""

    def __init__(self, tree):
        code = f"""
import sys, warnings, logging
warnings.filterwarnings("ignore")
sys.path.insert(0, {tree!r})
import pymc, pymc_partition, arviz_regen  # this tree's packages, before the bench puts its own first
logging.getLogger("pymc").setLevel(logging.ERROR)
sys.path.insert(1, {HERE!r})
from bench_hierarchical import worker
worker()
"""
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=tree, env=env)  # fmt: skip

    def __call__(self, *request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("The benchmark worker died (see its stderr above).")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def interleaved(rev, quick, data_path, n_items):
    """The headline for this tree and for the package at git revision ``rev``, measured A/B.

    Each tree runs in its own warm subprocess (``rev`` exported with ``git archive``); every task of
    :func:`headline_tasks` is measured in both, one after the other, the order alternating, so both
    see the same load, the same models and the same seeds. Returns ``(now, previous)``.
    """
    root = os.path.abspath(os.path.join(HERE, ".."))
    with tempfile.TemporaryDirectory() as tmp:
        export_tree(rev, tmp, ["pymc_partition", "arviz_regen"])
        workers = {"now": Worker(root), "prev": Worker(tmp)}
        results = {"now": [], "prev": []}
        try:
            for k, task in enumerate(headline_tasks(quick)):
                for which in ("now", "prev") if k % 2 == 0 else ("prev", "now"):
                    results[which].append((task, workers[which](task, quick, data_path, n_items)))
        finally:
            for w in workers.values():
                w.close()
    return collect(results["now"]), collect(results["prev"])


def report_headline(now, prev, rev, quick):
    """The three goals' figures: median [range] for this tree and, if measured, ``rev``."""

    def fmt(v, unit):
        v = np.asarray(v)
        return f"{np.median(v):.3g}{unit} [{v.min():.3g}-{v.max():.3g}]"

    rows = [("compound set-up, warm process (CPU s)", "setup_random", "s", "<= 0.3 s"),
            ("  fixed hyperparameters, same model (CPU s)", "setup_fixed", "s", ""),
            ("compound / fixed draw, 14 items (Arabidopsis)", "draw_14", "x", "<= 3x"),
            ("compound / fixed draw, 2,000 items (mixture)", "draw_2000", "x", "<= 1.5x")]  # fmt: skip
    print("\n== Headline (issue 27 item 2): median [range] over repeats, same run")
    head = f"   {'':48s} {'this tree':>26s}"
    if prev is not None:
        head += f" {('previous ' + rev):>26s} {'now/prev':>9s}"
    print(head + "   goal")
    for label, key, unit, goal in rows:
        line = f"   {label:48s} {fmt(now[key], unit):>26s}"
        if prev is not None:
            line += f" {fmt(prev[key], unit):>26s} {np.median(now[key]) / np.median(prev[key]):8.2f}x"
        print(line + f"   {goal}")
    for key in ("draw_14", "draw_2000"):
        f, r = np.median(now[key + "_fixed"]), np.median(now[key + "_random"])
        print(f"   {key}: fixed {f * 1e6:.0f} us, compound {r * 1e6:.0f} us per draw (this tree)")
        seeds = [t[2] for t in headline_tasks(quick) if t[0] == "draw" and t[1] == key]
        for trees, label in ((now, "this tree"), (prev, rev)):
            if trees is not None:
                ratios = ", ".join(f"seed {sd} {v:.2f}x" for sd, v in zip(seeds, trees[key]))
                print(f"     compound / fixed by seed, {label}: {ratios}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and draws (< 2 min)")
    parser.add_argument("--summary", action="store_true", help="the headline figures only")
    parser.add_argument("--previous", metavar="REV", default=None,
                        help="also measure the headline for the package at this git revision")  # fmt: skip
    parser.add_argument("--data", default=None, help="path of arabidopsis_messerli2007.csv")
    parser.add_argument("--items", type=int, default=2000, help="items of the Gaussian mixture")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    data_path = arabidopsis_path(args.data)
    data_path = str(data_path) if data_path is not None else None
    if args.previous:
        now, prev = interleaved(args.previous, args.quick, data_path, args.items)
    else:
        now, prev = headline(args.quick, data_path, args.items), None
    report_headline(now, prev, args.previous, args.quick)
    if not args.summary:
        for case in (arabidopsis_case(args.data), mixture_case(args.items)):
            report(case, measure(case, args.quick))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
