"""``pymc-partition-demo``: the main job from the command line.

::

    pymc-partition-demo --out output
    pymc-partition-demo --data path/to/arabidopsis_messerli2007.csv --out output
    python -m pymc_partition.demo --draws 5000 --out output      # same thing, shorter

Without ``--data`` (and without the environment variable ``PMP_ARABIDOPSIS_CSV``) it runs on
data simulated from the paper's fitted model, so no download is needed. Every argument (the
data file's existence and layout and the output folder included) is checked before anything
heavy is imported or computed: ``--help`` and argument errors import neither PyMC nor the
kernels, PyMC is imported only once the run starts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import datasets
from . import constants
from .job import INT_BOUNDS, bound_text, check_int, check_output_folder

__all__ = ["main", "parser"]


def _int_option(name):
    """Return an argparse type for an integer option with the bounds of ``INT_BOUNDS[name]``."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        try:
            return check_int(name, value)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"must be {bound_text(name)}, got {value}") from err

    parse.__name__ = "integer"
    return parse


def parser():
    """Return the command line's argument parser."""
    env = datasets.ARABIDOPSIS_ENV
    p = argparse.ArgumentParser(
        prog="pymc-partition-demo",
        description="Bayesian clustering with exact posterior, Gibbs and split-merge sampling, "
        "and the Hotelling-RS convergence diagnostic (Asgharian, Lysy & Partovi Nia 2019).",
        epilog=f"Data: --data PATH, else the environment variable {env}, else data simulated "
        "from the paper's fitted model (no download needed). The Arabidopsis CSV is bclust's "
        "`gaelle` exported from R: library(bclust); data(gaelle); "
        f'write.csv(gaelle, "{datasets.ARABIDOPSIS_FILENAME}").',
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument("--data", default=None, metavar="PATH",
                        help=f"Arabidopsis CSV (bclust's gaelle) or its folder; default: ${env} if set, "
                        "else simulated data")  # fmt: skip
    source.add_argument("--simulate", action="store_true", help=f"use simulated data even if {env} is set")
    p.add_argument("--out", default="output", metavar="DIR", help="output folder (default: output)")
    p.add_argument("--draws", type=_int_option("draws"), default=constants.DRAWS,
                   help=f"draws per chain and sampler, >= 100 (default {constants.DRAWS})")  # fmt: skip
    p.add_argument("--chains", type=_int_option("chains"), default=constants.CHAINS,
                   help=f"chains per sampler, >= 1 (default {constants.CHAINS})")  # fmt: skip
    p.add_argument("--cores", type=_int_option("cores"), default=1, help="processes for sampling, >= 1 (default 1)")
    p.add_argument("--seed", type=_int_option("random_seed"), default=constants.SEED,
                   help=f"random seed, >= 0 (default {constants.SEED})")  # fmt: skip
    p.add_argument("--dpi", type=_int_option("dpi"), default=90,
                   help="resolution of the PNG figures, {}-{} (default 90)".format(*INT_BOUNDS["dpi"]))  # fmt: skip
    p.add_argument("--force", action="store_true",
                   help="replace the files of an earlier run in --out (else such a folder is refused)")  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return p


def main(argv=None):
    """Command-line entry point (``pymc-partition-demo``).

    Every argument (including the data file's existence and layout, and the output folder) is
    checked before PyMC is imported; argument errors exit with status 2.
    """
    p = parser()
    args = p.parse_args(argv)
    data_path = None
    if not args.simulate:
        try:  # --data, else $PMP_ARABIDOPSIS_CSV; never the file beside the clone, silently
            data_path = datasets.arabidopsis_path(args.data, use_default=False)
            if data_path is not None:
                datasets.load_arabidopsis(data_path)
        except (FileNotFoundError, ValueError) as err:
            p.error(str(err))
    out = Path(args.out).expanduser()
    if out.exists() and not out.is_dir():
        p.error(f"--out {str(out)!r} exists and is not a folder.")
    try:
        check_output_folder(out, args.force)
    except ValueError as err:
        p.error(str(err))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        p.error(f"cannot create the output folder {str(out)!r}: {err}")
    from .job import run

    try:
        run(data_path, out, draws=args.draws, chains=args.chains, cores=args.cores,
            random_seed=args.seed, progressbar=not args.no_progress, dpi=args.dpi,
            overwrite=args.force)  # fmt: skip
    except (FileNotFoundError, ValueError) as err:
        print(f"pymc-partition-demo: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
