"""Exchangeable priors on partitions.

Every prior here has the form ``log pi(z) = g(C) + sum_c h(n_c)`` with ``C`` the number of
clusters and ``n_c`` their sizes. A prior is therefore fully described, for a given number of
items ``N``, by two small tables ``log_g[0..N]`` and ``log_h[0..N]``: the PyMC logp, the samplers'
compiled kernels and the exact posterior all read the same tables (:meth:`PartitionPrior.tables`).

The tables are normalized exactly, so ``sum_z pi(z) = 1`` holds for every prior, including those
whose printed formula is only given up to a constant (the paper's prior): each built-in prior has a
closed-form normalizer (``O(N)``, so 10^5 items cost nothing), and a user-defined prior falls back
to the recursion on the block holding the first item (``O(N^3)``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp

__all__ = [
    "PartitionPrior",
    "UniformMultinomialDirichlet",
    "DirichletProcess",
    "PitmanYor",
    "UniformPartition",
]


def _log_stirling_weighted(log_h, n_items):
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


def _log_bell(n):
    """``log B(n)`` by Dobinski's formula, ``B(n) = e^{-1} sum_k k^n / k!`` (exact to rounding)."""
    if n == 0:
        return 0.0
    k_max = int(max(10, 4 * n / max(np.log(n), 1.0) + 50))
    k = np.arange(1, k_max + 1)
    return float(logsumexp(n * np.log(k) - gammaln(k + 1)) - 1.0)


class PartitionPrior:
    """Base class of exchangeable partition priors.

    Subclasses implement :meth:`_unnormalized_tables`, returning ``(log_g, log_h)`` arrays of
    length ``n_items + 1`` (entries at 0 are unused). The base class normalizes them.
    """

    #: parameters shown in repr
    _param_names: tuple = ()

    def _unnormalized_tables(self, n_items):  # pragma: no cover - abstract
        raise NotImplementedError

    def tables(self, n_items):
        """Normalized ``(log_g, log_h)`` tables for ``n_items`` items.

        ``log pi(z) = log_g[C] + sum_c log_h[n_c]`` sums to one over all partitions.
        """
        n_items = _check_n_items(n_items)
        log_g, log_h = self._unnormalized_tables(n_items)
        log_g = np.asarray(log_g, dtype=float).copy()
        log_h = np.asarray(log_h, dtype=float).copy()
        log_g[0] = -np.inf
        log_h[0] = 0.0
        log_g[1:] -= self._log_normalizer(n_items, log_g, log_h)
        return log_g, log_h

    def _log_normalizer(self, n_items, log_g, log_h):
        """``log sum_z exp(log_g[C] + sum_c log_h[n_c])`` over all partitions of ``n_items``."""
        per_c = _log_stirling_weighted(log_h, n_items)
        return logsumexp(log_g[1:] + per_c[1:])

    def logp(self, labels):
        """Exact log prior probability of canonical label vector(s) ``(..., n_items)``."""
        from .state import check_labels

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

    def __repr__(self):
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._param_names)
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and all(
            getattr(self, k) == getattr(other, k) for k in self._param_names
        )

    def __hash__(self):
        return hash((type(self).__name__,) + tuple(getattr(self, k) for k in self._param_names))


def _check_n_items(n_items):
    if isinstance(n_items, bool) or not isinstance(n_items, (int, np.integer)):
        raise TypeError(f"`n_items` must be an integer, got {type(n_items).__name__}.")
    if n_items < 1:
        raise ValueError(f"`n_items` must be at least 1, got {n_items}.")
    return int(n_items)


def _check_positive(name, value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a number, got {value!r}.") from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"`{name}` must be a finite positive number, got {value}.")
    return value


class UniformMultinomialDirichlet(PartitionPrior):
    r"""The prior of Asgharian, Lysy & Partovi Nia (2019), after Heard et al. (2006).

    Uniform on the number of clusters and a uniform multinomial-Dirichlet on cluster totals:

    .. math:: \pi(z) \propto \frac{(C-1)!\, \prod_c n_c!}{N\,(N+C-1)!}

    normalized exactly over all partitions of ``N`` items.
    """

    def _unnormalized_tables(self, n_items):
        C = np.arange(n_items + 1)
        n = np.arange(n_items + 1)
        log_g = gammaln(np.maximum(C, 1)) - np.log(n_items) - gammaln(n_items + C)
        log_h = gammaln(n + 1)
        return log_g, log_h

    def _log_normalizer(self, n_items, log_g, log_h):
        # sum over partitions into C blocks of prod n_c! = N!/C! * binom(N-1, C-1): each
        # composition of N into C positive parts carries N!/prod n_c! labelled allocations
        C = np.arange(1, n_items + 1)
        per_c = (
            gammaln(n_items + 1) - gammaln(C + 1)
            + gammaln(n_items) - gammaln(C) - gammaln(n_items - C + 1)
        )
        return logsumexp(log_g[1:] + per_c)


class DirichletProcess(PartitionPrior):
    r"""Chinese restaurant process / Dirichlet process prior with concentration ``alpha``.

    .. math:: \pi(z) = \frac{\alpha^C \prod_c (n_c - 1)!}{\alpha (\alpha+1) \cdots (\alpha+N-1)}
    """

    _param_names = ("alpha",)

    def __init__(self, alpha=1.0):
        self.alpha = _check_positive("alpha", alpha)

    def _unnormalized_tables(self, n_items):
        C = np.arange(n_items + 1)
        n = np.arange(n_items + 1)
        log_g = C * np.log(self.alpha) - (gammaln(self.alpha + n_items) - gammaln(self.alpha))
        log_h = gammaln(np.maximum(n, 1))
        return log_g, log_h

    def _log_normalizer(self, n_items, log_g, log_h):
        return 0.0  # the CRP formula is a normalized pmf


class PitmanYor(PartitionPrior):
    r"""Pitman-Yor (two-parameter) partition prior with discount ``d`` in [0, 1), ``alpha > -d``.

    .. math:: \pi(z) = \frac{\prod_{k=1}^{C-1} (\alpha + k d)}{(\alpha+1)_{N-1}}
              \prod_c \frac{\Gamma(n_c - d)}{\Gamma(1 - d)}
    """

    _param_names = ("alpha", "d")

    def __init__(self, alpha=1.0, d=0.5):
        try:
            alpha, d = float(alpha), float(d)
        except (TypeError, ValueError):
            raise TypeError("`alpha` and `d` must be numbers.") from None
        if not np.isfinite(d) or not 0 <= d < 1:
            raise ValueError(f"`d` must lie in [0, 1), got {d}.")
        if not np.isfinite(alpha) or alpha <= -d:
            raise ValueError(f"`alpha` must be finite and greater than -d = {-d}, got {alpha}.")
        self.alpha, self.d = alpha, d

    def _unnormalized_tables(self, n_items):
        a, d = self.alpha, self.d
        log_g = np.full(n_items + 1, -np.inf)
        k = np.arange(1, n_items)
        log_g[1:] = np.concatenate([[0.0], np.cumsum(np.log(a + k * d))])
        log_g -= gammaln(a + n_items) - gammaln(a + 1)
        n = np.arange(n_items + 1)
        log_h = gammaln(np.maximum(n, 1) - d) - gammaln(1 - d)
        return log_g, log_h

    def _log_normalizer(self, n_items, log_g, log_h):
        return 0.0  # the Pitman-Yor EPPF is a normalized pmf


class UniformPartition(PartitionPrior):
    """Uniform prior over all ``B(N)`` partitions."""

    def _unnormalized_tables(self, n_items):
        return np.zeros(n_items + 1), np.zeros(n_items + 1)

    def _log_normalizer(self, n_items, log_g, log_h):
        return _log_bell(n_items)
