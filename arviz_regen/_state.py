"""Canonical labels and state keys, shared with :mod:`pymc_partition.state` (one implementation)."""

from pymc_partition.state import (
    canonicalize,
    check_labels,
    is_canonical,
    keys_to_labels,
    state_keys,
)

__all__ = ["canonicalize", "check_labels", "is_canonical", "keys_to_labels", "state_keys"]
