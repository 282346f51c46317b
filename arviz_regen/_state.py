"""Private alias of :mod:`arviz_regen.state`, kept for old imports (use ``arviz_regen.state``)."""

from .state import canonicalize, check_labels, is_canonical, keys_to_labels, state_keys

__all__ = ["canonicalize", "check_labels", "is_canonical", "keys_to_labels", "state_keys"]
