"""Build ``arabidopsis_convergence.ipynb`` from its source ``arabidopsis_convergence.py`` and run it.

    python notebooks/_build_notebook.py --execute            # full run into the committed notebook
                                                             # (50,000 draws per chain, a few minutes)
    python notebooks/_build_notebook.py --execute --data path/to/arabidopsis_messerli2007.csv
    python notebooks/_build_notebook.py --out /tmp/nb.ipynb  # the source as a notebook, not run

The source is the jupytext percent-format file ``arabidopsis_convergence.py``: edit it (in any
editor, or open the ``.ipynb`` in Jupyter with jupytext installed, which keeps the two paired),
then rebuild. The committed ``.ipynb`` holds the outputs of a full run on the real data, so the
builder never replaces it with something less: without ``--execute`` it writes only to another
``--out``; ``--execute`` finds the data like the demo, tests and benchmarks
(``pymc_partition.datasets.arabidopsis_path``: ``--data``, else ``PMP_ARABIDOPSIS_CSV``, else
``../shared/data/arabidopsis_messerli2007.csv`` beside the clone), says which data the run used,
and refuses (exit status 2) to overwrite the committed notebook with a run on simulated data
unless given ``--allow-simulated``. Other environment variables of the run:
``PMP_NOTEBOOK_DRAWS`` (draws per chain, default 50000), ``PMP_NOTEBOOK_CHAINS`` (default 2).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "arabidopsis_convergence.py"
NOTEBOOK = HERE / "arabidopsis_convergence.ipynb"

#: Printed by the data cell: on the real data, and on the simulated fallback
REAL_DATA_MARKER = "Arabidopsis data from"
SIMULATED_MARKER = "SIMULATED"


def build(source=None):
    """The notebook of the jupytext source, without outputs (an ``nbformat`` notebook)."""
    import jupytext

    nb = jupytext.read(source or SOURCE, fmt="py:percent")
    nb.metadata.setdefault("language_info", {"name": "python"})
    return nb


def execute(nb, cwd, timeout=3600):
    """Run ``nb`` in a fresh kernel (working directory ``cwd``) that imports this checkout's packages."""
    from nbclient import NotebookClient

    root = str(HERE.parent)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, paths)])

    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return nb


def data_used(nb):
    """Which data an executed notebook ran on: ``"real"``, ``"simulated"`` or ``"unknown"``."""
    text = json.dumps([c.get("outputs", []) for c in nb.cells if c.cell_type == "code"])
    if REAL_DATA_MARKER in text:
        return "real"
    return "simulated" if SIMULATED_MARKER in text else "unknown"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 2)[2],
    )  # fmt: skip
    parser.add_argument("--execute", action="store_true", help="run the notebook (needed to write the committed one)")
    parser.add_argument("--out", default=str(NOTEBOOK), help="where to write it (default: the committed notebook)")
    parser.add_argument("--data", metavar="PATH", default=None,
                        help="Arabidopsis CSV for --execute (default: $PMP_ARABIDOPSIS_CSV, "
                             "else beside the clone)")  # fmt: skip
    parser.add_argument("--allow-simulated", action="store_true",
                        help="let --execute overwrite the committed notebook with a run on simulated data")  # fmt: skip
    args = parser.parse_args(argv)
    committed = Path(args.out).resolve() == NOTEBOOK.resolve()
    if committed and not args.execute:
        parser.exit(2, (
            f"{parser.prog}: not writing an unexecuted notebook over {str(NOTEBOOK)!r}, which holds the "
            "outputs of a full run: pass --execute to run it, or --out PATH to write the source as a "
            "notebook elsewhere.\n"
        ))  # fmt: skip
    nb = build()
    if args.execute:
        from pymc_partition.datasets import ARABIDOPSIS_ENV, arabidopsis_path

        try:
            data = arabidopsis_path(args.data)  # a path given (option or variable) must exist
        except FileNotFoundError as err:
            parser.error(str(err))
        if data is None and committed and not args.allow_simulated:
            parser.exit(2, (
                f"{parser.prog}: refusing to overwrite the committed real-data notebook {str(NOTEBOOK)!r} "
                "with a run on SIMULATED data: no Arabidopsis CSV found (no --data, "
                f"{ARABIDOPSIS_ENV} unset, nothing beside the clone). Give the data with --data PATH or "
                f"`export {ARABIDOPSIS_ENV}=PATH` (see pymc_partition.datasets.load_arabidopsis for the R "
                "export), write elsewhere with --out, or pass --allow-simulated.\n"
            ))  # fmt: skip
        # the kernel inherits the environment: point the notebook at the file ("" = not given)
        os.environ[ARABIDOPSIS_ENV] = str(data) if data is not None else ""
        print(f"executing on {'the Arabidopsis data ' + str(data) if data else 'SIMULATED data'}", file=sys.stderr)
        t0 = time.perf_counter()
        execute(nb, HERE)
        used = data_used(nb)
        print(f"executed in {time.perf_counter() - t0:.0f} s; data used: "
              f"{data if used == 'real' else used.upper()}", file=sys.stderr)  # fmt: skip
        if committed and used != "real" and not args.allow_simulated:
            parser.exit(2, f"{parser.prog}: the run used {used} data, not the real data; "
                        f"{str(NOTEBOOK)!r} left unchanged (pass --allow-simulated to write it anyway).\n")  # fmt: skip
    import nbformat

    nbformat.write(nb, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
