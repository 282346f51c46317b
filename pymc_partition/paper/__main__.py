"""``python -m pymc_partition.paper``: the main job (same as ``pymc-partition-demo``)."""

import sys

from .cli import main

sys.exit(main())
