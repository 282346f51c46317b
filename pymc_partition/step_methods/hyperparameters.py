"""Random hyperparameters read from the point at each step (a compound step with NUTS).

When the partition's prior or its likelihood depends on other free variables of the model, a
partition step must leave ``p(z | theta, y)`` invariant for the *current* ``theta``. One compiled
function (built once) maps the values of those variables in the point to the numbers the kernels
read: the prior's ``log_g``/``log_h`` tables, the per-item statistics (they depend on some
hyperparameters, e.g. the spike-and-slab's ``mu``), the family's hyperparameters, and each item's
singleton log marginal. When they changed since the last step, the step copies them into its
arrays in place (the kernels hold their addresses) and rebuilds its cluster state from the labels;
nothing is recompiled and no Python runs per item.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.traversal import ancestors

from .._pytensor_modes import numba_mode
from ..likelihood import MarginalLikelihoodRV

__all__ = ["Hyperparameters"]


class Hyperparameters:
    """The partition's numbers as a compiled function of the point's value variables.

    Parameters
    ----------
    model : pymc.Model
    rv : TensorVariable
        The Partition random variable.
    """

    def __init__(self, model, rv):
        terms = [
            obs for obs in model.observed_RVs
            if isinstance(obs.owner.op, MarginalLikelihoodRV) and obs.owner.inputs[2] is rv
        ]  # fmt: skip
        if len(terms) != 1:
            raise NotImplementedError(
                "A partition with random hyperparameters is sampled with one MarginalLikelihood "
                f"term; {rv.name!r} has {len(terms)}."
            )
        obs = terms[0]
        self.op = obs.owner.op
        tables = list(rv.owner.inputs[2:4])
        stats = obs.owner.inputs[3]
        params = list(obs.owner.inputs[4:-1])
        # the numbers, and each item's singleton log marginal, in one compiled call
        item_lm = self.op.family_at(params).log_marginal(stats)
        graphs = model.replace_rvs_by_values(tables + [stats] + params + [item_lm])
        used = set(ancestors(graphs))
        self.inputs = [v for v in model.value_vars if v in used and v is not model.rvs_to_values[rv]]
        self.names = [v.name for v in self.inputs]
        self._fn = pytensor.function(self.inputs, graphs, mode=numba_mode(), on_unused_input="ignore")
        # the values come from the graph (checked finite below): no need to validate them again,
        # unless the family derives quantities from them in its constructor
        self._validate = self.op.family._derived_from_params
        self._last = None

    def read(self, point):
        """``(log_g, log_h, stats, family, item_lm)`` at ``point``, or None if unchanged."""
        values = [np.asarray(point[n]) for n in self.names]
        if self._last is not None and all(np.array_equal(a, b) for a, b in zip(values, self._last)):
            return None
        self._last = [v.copy() for v in values]
        log_g, log_h, stats, *params, item_lm = (np.asarray(x, dtype=float) for x in self._fn(*values))
        numbers = dict(zip(self.op.param_names, params))
        if self._validate:
            family = self.op.family.with_values(**numbers)
        else:
            family = self.op.family.replace_params({k: v if v.ndim else float(v) for k, v in numbers.items()})
        if np.isnan(log_g).any() or not np.all(np.isfinite(stats)) or not np.all(np.isfinite(item_lm)):
            raise ValueError(
                f"At {dict(zip(self.names, values))} the partition's prior tables or likelihood "
                "are not finite: a hyperparameter is outside its domain."
            )
        return log_g, log_h, stats, family, item_lm
