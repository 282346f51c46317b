"""Numbers or PyMC variables: the one test the priors and families share."""

from __future__ import annotations

__all__ = ["is_symbolic"]


def is_symbolic(value):
    """Whether ``value`` is a pytensor variable other than a constant (a PyMC variable, a graph)."""
    try:
        from pytensor.graph.basic import Constant, Variable
    except ImportError:  # pragma: no cover - pytensor comes with pymc
        return False
    return isinstance(value, Variable) and not isinstance(value, Constant)
