"""The base class of exchangeable partition priors and its normalization.

Every prior here has the form ``log pi(z) = g(C) + sum_c h(n_c)`` with ``C`` the number of
clusters and ``n_c`` their sizes. A prior is therefore fully described, for a given number of
items ``N``, by two small tables ``log_g[0..N]`` and ``log_h[0..N]``: the PyMC logp, the samplers'
compiled kernels and the exact posterior all read the same tables (:meth:`PartitionPrior.tables`).

The tables are normalized exactly, so ``sum_z pi(z) = 1`` holds for every prior, including those
whose printed formula is only given up to a constant (the paper's prior): each built-in prior has a
closed-form normalizer (``O(N)``), and a user-defined prior falls back to the recursion on the
block holding the first item (``O(N^3)``).

Parameters may be numbers or PyMC variables (``DirichletProcess(alpha=pm.Gamma(...))``): the
tables are then a pytensor graph of them (:meth:`PartitionPrior.tables_graph`), written with the
same formula as the numbers (:mod:`._ops`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp

from .._symbolic import POSITIVE, RandomParams, check_support
from ._ops import NUMPY, PYTENSOR, is_symbolic

__all__ = ["PartitionPrior", "check_n_items", "check_param", "log_stirling_weighted", "POSITIVE"]


def log_stirling_weighted(log_h, n_items):
    """``L[C] = log sum over partitions of n_items into C blocks of prod_c exp(log_h[n_c])``.

    Generic ``O(N^3)`` recursion on the size ``k`` of the block holding the first item; priors
    with a closed-form normalizer override :meth:`PartitionPrior._log_normalizer` instead.
    """
    S = np.full((n_items + 1, n_items + 1), -np.inf)
    S[0, 0] = 0.0
    for n in range(1, n_items + 1):
        k = np.arange(1, n + 1)
        log_binom = gammaln(n) - gammaln(k) - gammaln(n - k + 1)
        # S[n, C] = logsumexp_k (binom(n-1, k-1) h(k) S[n-k, C-1]) for all C at once
        terms = (log_binom + log_h[k])[:, None] + S[n - k, :-1]
        S[n, 1:] = logsumexp(terms, axis=0)
    return S[n_items]


def check_n_items(n_items):
    """Return ``n_items`` as a Python int, refusing non-integers (bool included) and values below 1."""
    if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)):
        raise TypeError(f"`n_items` must be an integer, got {type(n_items).__name__}.")
    if n_items < 1:
        raise ValueError(f"`n_items` must be at least 1, got {n_items}.")
    return int(n_items)


def check_param(name, value, check, support=None):
    """Return a number validated by ``check(name, value)``, or a scalar pytensor variable.

    A variable is checked when the model is evaluated instead (the logp is ``-inf`` outside the
    parameter's domain, as for PyMC's own distributions), and, when it is a PyMC random variable,
    now: ``support=(outside, domain)`` (values outside the domain, and the domain in words, see
    :func:`~pymc_partition._symbolic.check_support`) refuses a distribution that reaches them.
    """
    if is_symbolic(value):
        if support is not None:
            check_support(name, value, *support)
        if value.ndim != 0:
            raise ValueError(f"`{name}` must be a scalar, got a {value.ndim}-d variable {value}.")
        if value.dtype.startswith(("complex", "bool")):
            raise TypeError(f"`{name}` must be real, got a variable of dtype {value.dtype}.")
        return value.astype("float64") if value.dtype != "float64" else value
    if type(value).__name__.endswith("Constant") and hasattr(value, "data"):
        value = value.data  # a pytensor constant is a number
    return check(name, value)


class PartitionPrior(RandomParams):
    """Base class of exchangeable partition priors.

    Subclasses implement :meth:`_formula` (or, for numbers only, :meth:`_unnormalized_tables`),
    returning ``(log_g, log_h)`` of length ``n_items + 1`` (entries at 0 are unused); the base
    class normalizes them. Priors whose formula is a normalized pmf set ``_normalized = True`` and
    may then take PyMC variables as parameters.
    """

    #: constructor arguments, shown in repr and used by :meth:`with_values`
    _param_names: tuple = ()
    #: the formula is normalized (no normalizer to compute, symbolic parameters allowed)
    _normalized = False
    #: name of a routine in :mod:`._numba` computing the normalized tables from the parameters, if any
    _tables_routine = None

    # ------------------------------------------------------------------ formulas
    def _formula(self, n_items, xp):
        """Unnormalized ``(log_g, log_h)`` written against ``xp`` (numpy or pytensor)."""
        if xp.symbolic:  # pragma: no cover - only priors with _normalized may be symbolic
            raise NotImplementedError
        return self._unnormalized_tables(n_items)

    def _unnormalized_tables(self, n_items):  # pragma: no cover - abstract
        raise NotImplementedError

    def _conditions(self, xp):
        """``[(condition, message)]`` the parameters must satisfy (checked in the graph)."""
        return []

    def _log_normalizer(self, n_items, log_g, log_h):
        """``log sum_z exp(log_g[C] + sum_c log_h[n_c])`` over all partitions of ``n_items``."""
        if self._normalized:
            return 0.0
        per_c = log_stirling_weighted(log_h, n_items)
        return logsumexp(log_g[1:] + per_c[1:])

    # ------------------------------------------------------------------ tables
    def tables(self, n_items):
        """Return the normalized ``(log_g, log_h)`` tables for ``n_items`` items.

        ``log pi(z) = log_g[C] + sum_c log_h[n_c]`` sums to one over all partitions.
        """
        n_items = check_n_items(n_items)
        if self.is_random:
            raise TypeError(
                f"{self!r} has random parameter(s) {list(self.random_params)}: its tables depend "
                "on their values. Use tables_graph(n_items) for the pytensor graph, or "
                "with_values(name=number).tables(n_items)."
            )
        log_g, log_h = self._formula(n_items, NUMPY)
        log_g = np.asarray(log_g, dtype=float).copy()
        log_h = np.asarray(log_h, dtype=float).copy()
        log_g[0] = -np.inf
        log_h[0] = 0.0
        log_g[1:] -= self._log_normalizer(n_items, log_g, log_h)
        return log_g, log_h

    def tables_graph(self, n_items):
        """Return the normalized tables as pytensor tensors.

        Constants for a fixed prior, else a graph of the random parameters, whose evaluation outside their domain gives
        ``-inf`` logp: the outputs of one inline node (:func:`expand_prior_tables` gives the graph it holds).
        """
        import pytensor.tensor as pt

        n_items = check_n_items(n_items)
        if not self.is_random:
            log_g, log_h = self.tables(n_items)
            return pt.constant(log_g), pt.constant(log_h)
        if not self._normalized:  # pragma: no cover - guarded by the constructors
            raise NotImplementedError(f"{type(self).__name__} does not take random parameters.")
        op = _tables_op(self, n_items)
        return tuple(op(*(getattr(self, k) for k in op.prior_params)))

    def _tables_formula_graph(self, n_items):
        """Return the normalized tables as a graph of the random parameters (:meth:`tables_graph`'s node holds it)."""
        import pytensor.tensor as pt
        from pymc.distributions.dist_math import check_parameters

        log_g, log_h = self._formula(n_items, PYTENSOR)
        log_g = pt.set_subtensor(pt.as_tensor_variable(log_g)[0], -np.inf)
        log_h = pt.set_subtensor(pt.as_tensor_variable(log_h)[0], 0.0)
        conditions = self._conditions(PYTENSOR)
        if conditions:
            conds, msgs = zip(*conditions)
            log_g = check_parameters(log_g, *conds, msg=", ".join(msgs))
        return log_g, log_h

    def logp(self, labels):
        """Exact log prior probability of canonical label vector(s) ``(..., n_items)``."""
        from ..state import check_labels

        labels = check_labels(labels)
        n = labels.shape[-1]
        log_g, log_h = self.tables(n)
        flat = labels.reshape(-1, n)
        out = np.empty(flat.shape[0])
        for r, row in enumerate(flat):
            sizes = np.bincount(row)
            sizes = sizes[sizes > 0]
            out[r] = log_g[sizes.size] + log_h[sizes].sum()
        return out.reshape(labels.shape[:-1]) if labels.ndim > 1 else out[0]

    # ------------------------------------------------------------------ dunder
    def _param_repr(self, name):
        value = getattr(self, name)
        return f"<{value.name or 'variable'}>" if is_symbolic(value) else repr(value)

    def __repr__(self):
        args = ", ".join(f"{k}={self._param_repr(k)}" for k in self._param_names)
        return f"{type(self).__name__}({args})"

    def _key(self):
        return tuple(
            ("variable", id(v)) if is_symbolic(v) else v for v in (getattr(self, k) for k in self._param_names)
        )

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__,) + self._key())


# ----------------------------------------------------------------------------- the tables' node
#: one node per prior class, number of items and fixed parameters, shared by every model (its gradient is built once)
_TABLES_OPS: dict = {}


def _tables_op(prior, n_items):
    """Return the inline ``OpFromGraph`` that computes ``prior``'s normalized tables from its random parameters.

    PyMC rewrites a model's whole graph whenever it builds the model's logp (``pm.sample`` does, to assign steps):
    the tables' few dozen nodes (a Dirichlet process's exact log rising factorial) cost more there than the rest of
    the model, about 140 ms on PyMC 5; one node costs nothing. Inline: a compiled function expands it before any
    other rewrite, so it computes what the graph itself would.
    """
    import copy

    import pytensor.tensor as pt
    from pytensor.compile.builders import OpFromGraph
    from pytensor.graph.traversal import ancestors

    from .._pytensor_modes import untraced

    names = prior.random_params
    key = (type(prior), n_items) + tuple(
        (k, getattr(prior, k).type) if k in names else (k, getattr(prior, k)) for k in prior._param_names
    )
    try:
        op = _TABLES_OPS.get(key)
    except TypeError:  # pragma: no cover - a fixed parameter that cannot be hashed: no sharing
        op, key = None, None
    if op is None:
        with untraced():  # an internal graph: no creation stacks
            inner = copy.copy(prior)
            dummies = [getattr(prior, k).type() for k in names]
            for k, d in zip(names, dummies):
                setattr(inner, k, d)
            outputs = list(inner._tables_formula_graph(n_items))
            # PyMC seeds the model's random generators in the order a walk up the graph meets them: the node's inputs
            # are ordered so that the walk meets the parameters as it met them in the graph (seeded draws stay the same)
            where = {id(d): i for i, d in enumerate(dummies)}
            both = pt.add(outputs[0][0], outputs[1][0])  # a node over (log_g, log_h), as the partition's
            met = list(dict.fromkeys(where[id(v)] for v in ancestors([both]) if id(v) in where))
            order = met + [i for i in range(len(dummies)) if i not in met]
            x, y = pt.dscalar(), pt.dscalar()
            if [v for v in ancestors([x + y]) if v is x or v is y][0] is y:  # the walk takes a node's inputs last first
                order = order[::-1]
            dummies = [dummies[i] for i in order]
            op = OpFromGraph(dummies, outputs, inline=True, name=f"{type(prior).__name__}Tables")
        op.prior_tables = True
        op.prior_params = tuple(names[i] for i in order)
        if key is not None:
            if len(_TABLES_OPS) >= 64:
                _TABLES_OPS.pop(next(iter(_TABLES_OPS)))
            _TABLES_OPS[key] = op
    return op


def _inline_ofg_node(node):
    """Return the outputs of an ``OpFromGraph`` node expanded into its graph, on the node's own inputs (not copies)."""
    try:  # PyTensor >= 3: the inner graph is frozen; binding it keeps the inputs given
        from pytensor.compile.rewriting import inline_ofg_node
    except ImportError:  # PyTensor 2: its inline_ofg_node copies the inputs' graphs too (model variables lost)
        from pytensor.graph.basic import clone_get_equiv

        op = node.op
        memo = dict(zip(op.inner_inputs, node.inputs))
        equiv = clone_get_equiv(op.inner_inputs, op.inner_outputs, copy_inputs=False, copy_orphans=True, memo=memo)
        return [equiv[o] for o in op.inner_outputs]
    return inline_ofg_node(node)


def expand_prior_tables(graphs):
    """Return ``graphs`` with every prior-tables node (:meth:`PartitionPrior.tables_graph`) expanded into its graph.

    What the samplers compile is then the formula's graph itself: its numbers are hoisted and its structure shared
    between models as for any other graph.
    """
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import ancestors

    graphs = list(graphs)
    nodes = {
        v.owner: None for v in ancestors(graphs) if v.owner is not None and getattr(v.owner.op, "prior_tables", False)
    }
    if not nodes:
        return graphs
    replace = {}
    for node in nodes:
        replace.update(zip(node.outputs, _inline_ofg_node(node)))
    return graph_replace(graphs, replace, strict=False)
