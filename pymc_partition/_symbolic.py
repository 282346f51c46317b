"""Numbers or PyMC variables: the one test the priors and families share."""

from __future__ import annotations

__all__ = [
    "is_symbolic",
    "RandomParams",
    "check_support",
    "POSITIVE",
    "tag_hyperparameters",
    "hyperparameter_role",
    "hyperparameter_owners",
    "HYPERPARAMETER_TAG",
    "HYPERPARAMETER_OWNERS_TAG",
]

#: tag of a random variable the partition's prior or family depends on: ``"cluster"`` when it
#: enters only through the prior's tables or the cluster log marginal (an ``O(C)`` conditional
#: given the partition), ``"stats"`` when it also scales the per-item statistics (``O(N)``)
HYPERPARAMETER_TAG = "partition_hyperparameter"
#: tag listing the partitions (random variables) such a variable hangs off
HYPERPARAMETER_OWNERS_TAG = "partition_hyperparameter_owners"

#: ``(outside, domain)`` of a positive parameter for :func:`check_support`
POSITIVE = ((-1e-3, -1.0), "positive")


def is_symbolic(value):
    """Whether ``value`` is a pytensor variable other than a constant (a PyMC variable, a graph)."""
    try:
        from pytensor.graph.basic import Constant, Variable
    except ImportError:  # pragma: no cover - pytensor comes with pymc
        return False
    return isinstance(value, Variable) and not isinstance(value, Constant)


class RandomParams:
    """Mixin of priors and families whose constructor arguments may be PyMC variables.

    Which are (``_param_names``), and a copy with numbers in their place.
    """

    _param_names: tuple = ()

    @property
    def random_params(self):
        """Names of the parameters given as PyMC variables (empty when all are numbers)."""
        return tuple(k for k in self._param_names if is_symbolic(getattr(self, k)))

    @property
    def is_random(self):
        return bool(self.random_params)

    def with_values(self, **values):
        """Return a copy with some parameters replaced by numbers (validated as in the constructor)."""
        import numpy as np

        params = {k: getattr(self, k) for k in self._param_names}
        unknown = set(values) - set(params)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no parameter(s) {sorted(unknown)}.")
        params.update({k: np.asarray(v, dtype=float) if np.ndim(v) else float(v) for k, v in values.items()})
        return type(self)(**params)


def check_support(name, value, outside, domain):
    """Refuse a PyMC random variable given as a parameter whose distribution leaves its domain.

    That is a distribution that reaches values where the parameter is not defined (a ``pm.Normal`` for a concentration,
    say).

    The model's logp would be ``-inf`` there: the step methods would fail when built, at an
    initial point such as 0, with PyTensor's bare "ParameterValueError", or NUTS would run into
    the wall. Checked by the variable's own logp at the values ``outside`` (finite: reachable).
    A graph of variables (``pm.math.exp(x)``) is not checked here: the model's logp checks it.

    Parameters
    ----------
    name : str
        The parameter, as the user named it (e.g. ``"alpha"``).
    value : TensorVariable
    outside : sequence of float
        Values outside the closure of the parameter's domain (a distribution reaching only its
        boundary, ``pm.Uniform(0, 10)`` for a positive parameter, never gives it there: PyMC's
        transforms map onto the open interval).
    domain : str
        The domain in words, e.g. ``"positive"`` or ``"in [0, 1)"``.
    """
    import numpy as np
    from pytensor.tensor.random.op import RandomVariable

    owner = getattr(value, "owner", None)
    if owner is None or not isinstance(owner.op, RandomVariable) or not outside:
        return
    try:
        import pymc as pm
        import pytensor.tensor as pt

        from ._pytensor_modes import compile_function

        # a log density above -inf there: reachable (NaN compares False)
        graphs = [pt.any(pt.gt(pm.logp(value, pt.full_like(value, float(v))), -np.inf)) for v in outside]
        reachable = [bool(r) for r in compile_function([], graphs, mode="FAST_COMPILE")()]
    except Exception:  # noqa: BLE001 - a distribution without a logp: the model's checks remain
        return
    bad = [v for v, r in zip(outside, reachable) if r]
    if bad:
        kind = type(owner.op).__name__.removesuffix("RV")
        raise ValueError(
            f"`{name}` must be {domain}, but the PyMC variable {value.name or value} given for it "
            f"({kind}) can take the value {bad[0]:g}, where it is not defined. Give it a "
            f"distribution that is {domain} (for a positive parameter e.g. pm.Gamma, "
            "pm.HalfNormal, pm.LogNormal; in an interval pm.Uniform or pm.Beta), or a graph that "
            "is, e.g. pm.math.exp(x)."
        )


def tag_hyperparameters(graphs, role, owner=None):
    """Tag the continuous random variables among the ancestors of ``graphs`` with their role.

    The ancestors are a prior's or a family's random parameters; the tag is :data:`HYPERPARAMETER_TAG` = ``role``
    (``"cluster"`` or ``"stats"``; ``"stats"`` is kept once given): how a step method's competence, which sees one
    variable and no model, knows it hangs off a partition. ``owner`` (the partition) is added to the variable's
    :data:`HYPERPARAMETER_OWNERS_TAG` list: one that hangs off several partitions is not sampled given one of them
    (:func:`hyperparameter_owners`).
    """
    from pymc.distributions.distribution import SymbolicRandomVariable
    from pytensor.graph.traversal import ancestors
    from pytensor.tensor.random.op import RandomVariable

    partition = owner
    for var in ancestors([g for g in graphs if is_symbolic(g)]):
        node = var.owner
        if node is None or not isinstance(node.op, RandomVariable | SymbolicRandomVariable):
            continue
        if var is node.outputs[0] and len(node.outputs) > 1:
            continue  # the next random generator, not the draw
        if not str(var.dtype).startswith("float"):
            continue
        if getattr(var.tag, HYPERPARAMETER_TAG, None) != "stats":
            setattr(var.tag, HYPERPARAMETER_TAG, role)
        if partition is not None:
            owners = getattr(var.tag, HYPERPARAMETER_OWNERS_TAG, [])
            if not any(o is partition for o in owners):
                setattr(var.tag, HYPERPARAMETER_OWNERS_TAG, [*owners, partition])


def hyperparameter_owners(var):
    """How many partitions ``var`` hangs off (as tagged by :func:`tag_hyperparameters`)."""
    tag = getattr(var, "tag", None)
    return len(getattr(tag, HYPERPARAMETER_OWNERS_TAG, ())) if tag is not None else 0


def hyperparameter_role(var):
    """``"cluster"``, ``"stats"`` or None: how ``var`` enters a partition's terms (:func:`tag_hyperparameters`)."""
    tag = getattr(var, "tag", None)
    return getattr(tag, HYPERPARAMETER_TAG, None) if tag is not None else None
