"""Import cost of ``arviz_regen`` against ``arviz`` (issue 8: at most 1.3 × ``import arviz``).

Run: ``python benchmarks/bench_import.py [--repeat 7]``. Each statement runs in a fresh
interpreter (``python -c ...``), several times; the statements are interleaved round-robin so
that load from other processes on a shared machine hits them alike, after one untimed warm-up
round (bytecode and OS file caches). Reported: median and minimum wall time per statement and
the ratio of medians to ``import arviz``. ``import numpy, xarray`` gives the floor (arviz_regen
needs both); the last line is the price of the first diagnostic in a fresh process (numba is
imported then and the kernels are loaded from its on-disk cache), not part of the import.

``import arviz_regen`` imports ArviZ and xarray to register ``az.hotelling_rs`` and the ``.regen``
accessors (:func:`arviz_regen.register`), so the ratio is about 1, and ``arviz-regen-summary
--help`` pays the same; it must never add numba, pymc, pytensor or pymc_partition (see
tests/arviz_regen/xr/test_draws.py for the correctness check).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.3

STATEMENTS = {
    "numpy, xarray": "import numpy, xarray",
    "arviz": "import arviz",
    "arviz_regen": "import arviz_regen",
    # the command's import cost: `arviz-regen-summary --help` runs exactly this
    "arviz-regen-summary --help": "import sys; from arviz_regen.cli import main; sys.exit(main(['--help']))",
}

FIRST_CALL = (
    "import numpy as np, arviz_regen\n"
    "from arviz_regen.testing import make_idata, metropolis_chain, random_partitions, zipf_probs\n"
    "rng = np.random.default_rng(1); p = zipf_probs(20)\n"
    "idata = make_idata(random_partitions(20, 8, rng), metropolis_chain(p, 2, 2000, rng), np.log(p))\n"
    "arviz_regen.hotelling_rs(idata, k=3); arviz_regen.coclustering(idata)\n"
)


def run_once(code):
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    return time.perf_counter() - t0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed runs per statement (default 7)")
    parser.add_argument("--no-first-call", action="store_true", help="skip the first-diagnostic timing")
    args = parser.parse_args(argv)

    for code in STATEMENTS.values():  # warm-up round, untimed
        run_once(code)
    times = {name: [] for name in STATEMENTS}
    for _ in range(args.repeat):
        for name, code in STATEMENTS.items():
            times[name].append(run_once(code))

    base = statistics.median(times["arviz"])
    print(f"python {sys.version.split()[0]}, {args.repeat} fresh interpreters per statement (interleaved)")
    print(f"{'statement':<28}{'median s':>10}{'min s':>10}{'÷ arviz':>10}")
    for name, ts in times.items():
        med = statistics.median(ts)
        label = name if name.startswith("arviz-") else "import " + name
        print(f"{label:<28}{med:>10.3f}{min(ts):>10.3f}{med / base:>10.2f}")
    ratio = statistics.median(times["arviz_regen"]) / base
    verdict = "OK" if ratio <= TARGET_RATIO else "ABOVE TARGET"
    print(f"import arviz_regen / import arviz = {ratio:.2f} (target <= {TARGET_RATIO}): {verdict}")

    if not args.no_first_call:
        run_once(FIRST_CALL)  # fills numba's cache if it is empty
        first = [run_once(FIRST_CALL) for _ in range(max(1, args.repeat // 2))]
        print(
            f"fresh process: import + first hotelling_rs + coclustering (numba from cache): "
            f"median {statistics.median(first):.3f} s"
        )
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
