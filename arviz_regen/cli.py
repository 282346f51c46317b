"""Command line: ``arviz-regen-summary PATH`` prints the verdict beside R-hat and ESS.

The table is :func:`arviz_regen.regen_summary`'s; the last line is the verdict (PASS, FAIL or NOT
REACHED), which check failed and what that means, or why no verdict was reached
(:mod:`arviz_regen.diagnostics.verdict`). ``--fail-below ALPHA`` turns it into an exit status for scripts and
CI: 0 pass, 1 fail, 3 no verdict reached (one chain, a check that could not decide, R-hat / ESS
failing or not computable; 2 is kept for errors). ``--scheduler ADDRESS`` runs the reading and the
heavy blocks on the workers of a ``dask.distributed`` cluster (the store is opened with dask; the
workers must be able to read its path).
"""

from __future__ import annotations

import argparse
import sys
import warnings

from .xr.io import open_inference_data, save_inference_data

__all__ = ["main", "open_inference_data", "save_inference_data"]

#: Exit statuses of ``arviz-regen-summary``.
EXIT_OK, EXIT_FAIL, EXIT_ERROR, EXIT_NO_VERDICT = 0, 1, 2, 3
#: how long ``--scheduler`` waits for the scheduler to answer
_CONNECT_TIMEOUT = "10s"


def _parser():
    p = argparse.ArgumentParser(
        prog="arviz-regen-summary",
        description=(
            "Print R-hat and ESS of traces that see the partition (n_clusters, partition_logp, "
            "distances to reference partitions) and the checks that apply (Hotelling-RS "
            "p_value_all when states recur, the chain-agreement test when it cannot compare the "
            "chains, the conditional check when its group is present), then one verdict line "
            "combining them, for a saved InferenceData (netCDF file or zarr store)."
        ),
        epilog=(
            "Exit status: 0 ok (with --fail-below: PASS); 1 FAIL (the checks' combined p-value < "
            "ALPHA); 2 error; 3 NOT REACHED with --fail-below (a check could not decide, one "
            "chain (R-hat not computable), or an R-hat above 1.01 / a bulk ESS below 100 per "
            "chain beside checks that did not reject)."
        ),
    )
    p.add_argument("path", help="InferenceData file (.nc) or zarr store (.zarr)")
    p.add_argument("--var-name", default=None, help="partition variable (default: the only one)")
    p.add_argument("-k", type=_int_at_least(2), nargs="+", default=[2, 3, 5, 10],
                   help="numbers of top states, each >= 2 (default: 2 3 5 10)")  # fmt: skip
    p.add_argument("--logp-var", default="partition_logp", help="sample_stats log posterior (default: partition_logp)")
    p.add_argument("--per-chain", action="store_true", help="rank top states per chain instead of pooled")
    p.add_argument("--chunk-draws", type=_int_at_least(1), default=None,
                   help="open with dask, this many draws per chunk (>= 1)")  # fmt: skip
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="address of a dask.distributed scheduler (e.g. tcp://10.0.0.5:8786) whose workers read "
        "the store and compute the summary's heavy blocks; the store is opened with dask (its own "
        "chunks unless --chunk-draws) and its path must be readable by the workers",
    )
    p.add_argument(
        "--method",
        choices=("bootstrap", "chi2"),
        default=None,
        help="reference distribution of Hotelling-RS's per-chain p-values (default: bootstrap); "
        "the verdict p_value_all always uses the renewal bootstrap",
    )
    p.add_argument("--n-bootstrap", type=_int_at_least(19), default=499,
                   help="bootstrap replicates, >= 19 (default 499)")  # fmt: skip
    p.add_argument("--n-permutations", type=_int_at_least(19), default=199,
                   help="permutations of the chain-agreement test, >= 19 (default 199)")  # fmt: skip
    p.add_argument(
        "--no-pairs", action="store_true", help="chain agreement on the traces only, not on every pair of items"
    )
    p.add_argument("--seed", type=_int_at_least(0), default=0,
                   help="seed of the bootstrap and permutations, >= 0 (default 0)")  # fmt: skip
    p.add_argument(
        "--fail-below",
        type=_alpha,
        default=None,
        metavar="ALPHA",
        help="level of the verdict, and exit with its status: 0 PASS, 1 FAIL (the checks' "
        "combined p-value < ALPHA), 3 NOT REACHED (default: the verdict at 0.05 is printed, status 0)",
    )
    p.add_argument("--round", type=_int_at_least(0), default=3, dest="round_to", help="decimals, >= 0 (default 3)")
    return p


def _int_at_least(low):
    """Return an argparse type: an integer of at least ``low`` (checked before anything is read)."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def _alpha(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"ALPHA must be strictly between 0 and 1, got {text}")
    return value


def main(argv=None):
    """Entry point of ``arviz-regen-summary``; returns the exit status.

    0: table and verdict printed (with ``--fail-below ALPHA``: the verdict is PASS); 1:
    ``--fail-below`` and FAIL; 2: error (unreadable file, bad variable, ...); 3: ``--fail-below``
    and NOT REACHED.
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:  # --help (0) or a usage error (2, message already printed)
        return stop.code if isinstance(stop.code, int) else EXIT_ERROR
    from .diagnostics.summary import regen_summary

    alpha = 0.05 if args.fail_below is None else args.fail_below
    client = None
    try:
        chunks = None if args.chunk_draws is None else {"draw": args.chunk_draws}
        if args.scheduler is not None:
            client = _connect(args.scheduler)
            chunks = {} if chunks is None else chunks  # lazily, the store's chunks: read by the workers
        idata = open_inference_data(args.path, chunks=chunks)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = regen_summary(
                idata,
                var_names=args.var_name,
                k=args.k,
                logp_var=args.logp_var,
                pooled=not args.per_chain,
                method=args.method,
                n_bootstrap=args.n_bootstrap,
                n_permutations=args.n_permutations,
                pairs=not args.no_pairs,
                alpha=alpha,
                random_seed=args.seed,
                round_to=None,
                client=False if client is None else client,
            )
    except (OSError, ValueError, TypeError, ImportError) as err:
        print(f"arviz-regen-summary: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as err:  # a bug: still status 2, never 1 (which --fail-below reads as "failed")
        import traceback

        traceback.print_exc(file=sys.stderr)
        print(f"arviz-regen-summary: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if client is not None:
            client.close()
    import pandas as pd

    shown = table if args.round_to is None else table.round(args.round_to)
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        print(shown.to_string(na_rep=""))
    for msg in dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, UserWarning)):
        print(f"warning: {msg}", file=sys.stderr)
    print(table.attrs["verdict"])
    from .diagnostics.verdict import EXIT_STATUS  # here: the verdict module imports xarray

    status = EXIT_STATUS[table.attrs["verdict_status"]]
    if args.fail_below is None:
        return EXIT_OK
    if status == EXIT_NO_VERDICT:
        print(f"arviz-regen-summary: {table.attrs['verdict']}", file=sys.stderr)
    return status


def _connect(address):
    """Return a dask.distributed client of the scheduler at ``address`` (OSError when none answers)."""
    try:
        from distributed import Client
    except ImportError as err:
        raise ImportError("--scheduler needs dask.distributed: pip install 'pymc-partition[dask]'") from err
    try:
        return Client(address, timeout=_CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as err:
        raise OSError(f"no dask scheduler answers at {address!r}: {err}") from err


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
