"""Partition states: canonical labels (restricted growth strings) and compact state keys.

The implementation lives in the lower layer, :mod:`arviz_regen.state` (one implementation for
both packages; ``arviz_regen`` never imports PyMC). This module re-exports it under the
``pymc_partition`` name, with the private helpers other modules here use (``_bits_per_label``,
``_canonicalize_rows``).
"""

from __future__ import annotations

from arviz_regen import state as _regen_state
from arviz_regen.state import (
    _bits_per_label,
    _canonicalize_rows,
    bell_number,
    canonicalize,
    check_labels,
    cluster_sizes,
    is_canonical,
    keys_to_labels,
    n_clusters,
    state_keys,
)

__all__ = list(_regen_state.__all__)  # one list: the public names of the lower layer

_PRIVATE_REEXPORTS = (_bits_per_label, _canonicalize_rows)
