"""Numbers or PyMC variables: the one test the priors and families share."""

from __future__ import annotations

__all__ = ["is_symbolic", "RandomParams"]


def is_symbolic(value):
    """Whether ``value`` is a pytensor variable other than a constant (a PyMC variable, a graph)."""
    try:
        from pytensor.graph.basic import Constant, Variable
    except ImportError:  # pragma: no cover - pytensor comes with pymc
        return False
    return isinstance(value, Variable) and not isinstance(value, Constant)


class RandomParams:
    """Mixin of priors and families whose constructor arguments (``_param_names``) may be PyMC
    variables: which are, and a copy with numbers in their place."""

    _param_names: tuple = ()

    @property
    def random_params(self):
        """Names of the parameters given as PyMC variables (empty when all are numbers)."""
        return tuple(k for k in self._param_names if is_symbolic(getattr(self, k)))

    @property
    def is_random(self):
        return bool(self.random_params)

    def with_values(self, **values):
        """A copy with some parameters replaced by numbers (validated as in the constructor)."""
        import numpy as np

        params = {k: getattr(self, k) for k in self._param_names}
        unknown = set(values) - set(params)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no parameter(s) {sorted(unknown)}.")
        params.update({k: np.asarray(v, dtype=float) if np.ndim(v) else float(v) for k, v in values.items()})
        return type(self)(**params)
