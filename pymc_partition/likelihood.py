"""The observed side: closed-form marginal likelihood of the data given a partition.

``MarginalLikelihood(name, partition, family, observed, item_index)`` adds an observed variable
whose logp is ``sum_c family.log_marginal(sum_{i in c} stats_i)``, computed from the per-item
statistics with one scatter-add (O(n_items * n_stats)), so ``model.compile_logp()`` is the exact
unnormalized log posterior of the partition.
"""

from __future__ import annotations

import inspect
from collections import namedtuple

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Continuous
from pytensor.tensor.random.op import RandomVariable

from ._symbolic import is_symbolic, tag_hyperparameters
from .distribution import PartitionRV
from .families.base import ConjugateFamily, check_data

__all__ = [
    "MarginalLikelihood",
    "MarginalLikelihoodRV",
    "MarginalLikelihoodParams",
    "marginal_loglik_graph",
]

#: the inputs of a MarginalLikelihood variable by name (:meth:`MarginalLikelihoodRV.params_of`):
#: ``hyperparameters`` is a tuple in the order of the Op's ``param_names``
MarginalLikelihoodParams = namedtuple("MarginalLikelihoodParams", "partition item_stats hyperparameters item_index")


class MarginalLikelihoodRV(RandomVariable):
    """Observed data given a partition.

    Inputs: the labels, the per-item statistics (a constant, or a graph of ``pm.Data`` and of
    hyperparameters they depend on) and the family's random hyperparameters, in the order of
    ``param_names``. The family (a template whose random hyperparameters the logp replaces by
    the inputs) and the data shape are properties of the Op instance (one per likelihood term).
    """

    name = "marginal_likelihood"
    dtype = "float64"
    _print_name = ("MarginalLikelihood", "\\operatorname{MarginalLikelihood}")
    # the family is part of the Op's identity so that rebuilt Ops (dtype changes, rewrites) keep it
    __props__ = ("name", "signature", "dtype", "inplace", "family", "param_names")

    def __init__(self, family=None, signature=None, param_names=(), **kwargs):
        self.family = family
        self.param_names = tuple(param_names)
        super().__init__(signature=signature or "(n),(n,s)->(r,v)", **kwargs)

    @staticmethod
    def params_of(var):
        """Return the inputs of MarginalLikelihood variable ``var``, by name (:data:`MarginalLikelihoodParams`)."""
        node = var.owner
        partition, item_stats, *hyperparameters, item_index = node.op.dist_params(node)
        return MarginalLikelihoodParams(partition, item_stats, tuple(hyperparameters), item_index)

    def family_at(self, params):
        """Return the family with its random hyperparameters replaced by ``params`` (tensors or numbers)."""
        if not self.param_names:
            return self.family
        return self.family.replace_params(dict(zip(self.param_names, params)))

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        # the data's shape is fixed in the signature ("...->(rows,vars)"): no need to draw
        rows, n_vars = self.signature.split("->")[1].strip("()").split(",")
        return (int(rows), int(n_vars))

    def rng_fn(self, rng, z, item_stats, *rest):
        """Draw data given the partition and the hyperparameters (cluster parameters drawn from their prior).

        What ``pm.sample_prior_predictive`` and ``pm.sample_posterior_predictive`` draw.
        """
        *params, item_index, size = rest
        family = self.family_at([np.asarray(p, dtype=float) for p in params])
        rows, n_vars = self._supp_shape_from_params(None)
        z = np.asarray(z)
        batch = tuple(size) if size is not None else z.shape[:-1]
        flat_z = np.broadcast_to(z, batch + z.shape[-1:]).reshape(-1, z.shape[-1])
        out = np.stack([family.draw_data(rng, zz, item_index, n_vars) for zz in flat_z])
        return out.reshape(batch + (rows, n_vars))


def marginal_loglik_graph(z, item_stats, family):
    """``sum_c log_marginal(cluster stats)`` for labels ``z`` (any labels in ``[0, n_items)``)."""
    z = pt.as_tensor_variable(z)
    n = item_stats.shape[0]
    zc = pt.clip(z, 0, n - 1)
    cluster_stats = pt.inc_subtensor(pt.zeros_like(item_stats)[zc], item_stats)
    counts = pt.bincount(zc, minlength=n)
    per_cluster = family.log_marginal(cluster_stats)
    return pt.sum(pt.switch(pt.gt(counts, 0), per_cluster, 0.0))


class MarginalLikelihood(Continuous):
    r"""Closed-form marginal likelihood of observed data given a :class:`Partition`.

    Parameters
    ----------
    name : str
        Variable name.
    partition : TensorVariable
        A :class:`~pymc_partition.Partition` variable of the same model.
    family : ConjugateFamily
        Conjugate model of one cluster, e.g. :class:`~pymc_partition.SpikeSlabNormal`.
    observed : array_like, shape (n_rows,) or (n_rows, n_vars)
        Data, one row per observation (replicate).
    item_index : array_like of int, shape (n_rows,), optional
        Item of each row (items numbered ``0 .. n_items-1``); default one row per item.

    Notes
    -----
    The family's parameters are integrated out, so the logp is
    :math:`\sum_c \log p(y_c)` over the clusters of the current partition. The per-item
    statistics are computed once, here; the graph only sums them per cluster.


    Examples
    --------
    Six items of two variables, clustered under a Dirichlet process; ``model.compile_logp()``
    is the exact log posterior of the partition (up to a constant):

    >>> import numpy as np, pymc as pm, pymc_partition as pmp
    >>> x = np.r_[np.zeros((3, 2)), np.ones((3, 2)) * 4.0] + np.arange(6)[:, None] * 0.1
    >>> with pm.Model() as model:
    ...     z = pmp.Partition("z", n_items=6, prior=pmp.DirichletProcess(1.0))
    ...     y = pmp.MarginalLikelihood("y", partition=z, observed=x,
    ...                                family=pmp.NormalInverseGamma.from_data(x, n_clusters=2))
    >>> logp = model.compile_logp()
    >>> bool(logp({"z": [0, 0, 0, 1, 1, 1]}) > logp({"z": [0, 1, 0, 1, 0, 1]}))
    True
    """

    rv_type = MarginalLikelihoodRV
    rv_op = None

    def __new__(cls, name, partition=None, family=None, observed=None, item_index=None, **kwargs):
        if observed is None:
            raise TypeError(f"MarginalLikelihood {name!r} needs `observed` data.")
        return super().__new__(
            cls,
            name,
            partition=partition,
            family=family,
            observed_values=observed,
            item_index=item_index,
            observed=_observed_2d(observed),
            **kwargs,
        )

    @classmethod
    def dist(cls, partition=None, family=None, observed_values=None, item_index=None, **kwargs):
        if partition is None or not _is_partition(partition):
            raise TypeError(f"`partition` must be a pmp.Partition variable, got {type(partition).__name__}.")
        if not isinstance(family, ConjugateFamily):
            raise TypeError(
                f"`family` must be a conjugate family such as pmp.SpikeSlabNormal(...), got {type(family).__name__}."
            )
        # PyMC passes the observed shape along; the shape is the data's anyway
        kwargs.pop("shape", None)
        if kwargs.pop("size", None) is not None:
            raise ValueError("MarginalLikelihood does not take `size`; it is the data's shape.")
        n_items = _partition_n_items(partition)
        data = observed_values
        symbolic_data = is_symbolic(data)
        # check (and, for pm.Data, look at) the current values of the data
        current = _current_value(data) if symbolic_data else data
        values, item_index, n_items = check_data(current, item_index, n_items)
        family._check_values(values)
        random = family.random_params
        if symbolic_data and not set(random) & set(family._stats_params):
            family.item_stats(values, item_index, n_items)  # the current data's statistics must be finite
        if symbolic_data or set(random) & set(family._stats_params):
            data_2d = _keep_rows(_as_2d_graph(data), values.shape[0]) if symbolic_data else pt.constant(values)
            stats = family.item_stats_graph(data_2d, item_index, n_items)
        else:
            stats = pt.constant(family.item_stats(values, item_index, n_items))
        params = [getattr(family, k) for k in random]
        letters = iter("abcdefghijklm")
        param_sig = "".join(",(" + ",".join(next(letters) for _ in range(p.ndim)) + ")" for p in params)
        op = MarginalLikelihoodRV(
            family=family, param_names=random,
            signature=f"(n),(n,s){param_sig},(r)->({values.shape[0]},{values.shape[1]})",
        )  # fmt: skip
        rv = _call_rv(op, partition, stats, *params, pt.constant(item_index), **kwargs)
        rv.tag.item_index = item_index
        for k in random:  # which step may sample them: see pymc_partition.step_methods.hyper
            tag_hyperparameters([getattr(family, k)], "stats" if k in family._stats_params else "cluster",
                                owner=partition)  # fmt: skip
        return rv


def _call_rv(op, *args, **kwargs):
    """``op(*args)``'s draw; PyTensor 3 warns unless asked for the next rng too (and dropped)."""
    if _RETURNS_NEXT_RNG:
        return op(*args, return_next_rng=True, **kwargs)[1]
    return op(*args, **kwargs)


_RETURNS_NEXT_RNG = "return_next_rng" in inspect.signature(RandomVariable.__call__).parameters


def _current_value(var):
    """Return the current numbers of a graph of ``pm.Data`` (shared) variables and constants."""
    from pytensor.graph.traversal import ancestors

    free = [a for a in ancestors([var]) if a.owner is None and not isinstance(a, (pt.TensorConstant,))
            and not hasattr(a, "get_value")]  # fmt: skip
    if free:
        raise TypeError(
            f"`observed` must be numbers or pm.Data (or a graph of them); it depends on {[a.name or a for a in free]}."
        )
    return var.eval()


def rows_changed_message(n_rows, name=None, now=None):
    """Why data given as ``pm.Data`` must keep the number of rows the model was built with."""
    which = f"the MarginalLikelihood {name!r}" if name else "a MarginalLikelihood"
    return (
        f"The observed data of {which} now have {now if now is not None else 'another number of'} "
        f"rows, but it was built with {n_rows}: which item each row belongs to (item_index), and "
        "the partition's n_items, were fixed then. pm.set_data may change the values, not the "
        "number of rows: to cluster other items or rows, build the model again (e.g. in a "
        "function of the data)."
    )


def _keep_rows(x, n_rows):
    """``x`` checked, whenever the graph is evaluated, to have the ``n_rows`` rows of the item index.

    ``pm.set_data`` with other rows fails otherwise deep in pytensor, with "array is not broadcastable".
    """
    from pytensor.raise_op import CheckAndRaise

    return CheckAndRaise(ValueError, rows_changed_message(n_rows))(x, pt.eq(x.shape[0], n_rows))


def _as_2d_graph(x):
    x = pt.as_tensor_variable(x).astype("float64")
    return x[:, None] if x.ndim == 1 else x


def _observed_2d(x):
    if is_symbolic(x):
        return _as_2d_graph(x)
    x = x.to_numpy() if hasattr(x, "to_numpy") else x
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError("`observed` must be a numeric array.") from None
    return arr[:, None] if arr.ndim == 1 else arr


def _is_partition(var):
    owner = getattr(var, "owner", None)
    return owner is not None and isinstance(owner.op, PartitionRV)


def _partition_n_items(partition):
    return int(PartitionRV.params_of(partition).log_g.type.shape[0]) - 1


from pymc.logprob.abstract import _logprob  # noqa: E402


@_logprob.register(MarginalLikelihoodRV)
def _marginal_likelihood_logp(op, values, rng, size, z, item_stats, *rest, **kwargs):
    from ._pytensor_modes import untraced

    # built at every model.logp() (pm.sample's step assignment among them): its nodes' creation
    # stacks would point into this function, and collecting them is a fifth of the building
    with untraced():
        family = op.family_at(rest[:-1])  # the last input is the rows' item index
        logp = marginal_loglik_graph(z, item_stats, family)
        conditions = family.conditions()
        if conditions:
            from pymc.distributions.dist_math import check_parameters

            conds, msgs = zip(*conditions)
            logp = check_parameters(logp, *conds, msg=", ".join(msgs))
    return logp
