"""Partition states: canonical labels (restricted growth strings) and compact state keys.

The implementation lives in the lower layer, :mod:`arviz_regen.base.state` (one implementation for
both packages; ``arviz_regen`` never imports PyMC). This module re-exports it under the
``pymc_partition`` name.
"""

from __future__ import annotations

from arviz_regen.base import state as _regen_state
from arviz_regen.base.state import (
    bell_number,
    bits_per_label,
    canonicalize,
    check_labels,
    cluster_sizes,
    is_canonical,
    keys_to_labels,
    n_clusters,
    state_keys,
)

__all__ = list(_regen_state.__all__)  # one list: the public names of the lower layer
