"""``python -m pymc_partition.demo``: the main job (same as ``pymc-partition-demo``).

The reproduction of the paper lives in :mod:`pymc_partition.paper`; this module only forwards
to its command line, :func:`pymc_partition.paper.cli.main`.
"""

import sys

from .paper.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
