"""The classical partition priors: the paper's, Dirichlet and Pitman-Yor processes, uniform."""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln, logsumexp

from .._special import log_rising
from ._ops import is_symbolic
from .base import POSITIVE, PartitionPrior, check_param

__all__ = [
    "UniformMultinomialDirichlet",
    "DirichletProcess",
    "PitmanYor",
    "UniformPartition",
    "check_positive",
]


def check_positive(name, value):
    """Return parameter ``name`` as a finite positive float.

    A TypeError when ``value`` is not a number, a ValueError when it is not finite or not positive.
    """
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a number or a PyMC variable, got {value!r}.") from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"`{name}` must be a finite positive number, got {value}.")
    return value


def _log_bell(n):
    """``log B(n)`` by Dobinski's formula, ``B(n) = e^{-1} sum_k k^n / k!`` (exact to rounding)."""
    if n == 0:
        return 0.0
    k_max = int(max(10, 4 * n / max(np.log(n), 1.0) + 50))
    k = np.arange(1, k_max + 1)
    return float(logsumexp(n * np.log(k) - gammaln(k + 1)) - 1.0)


class UniformMultinomialDirichlet(PartitionPrior):
    r"""The paper's printed prior, read as a pmf on partitions (after Heard et al. 2006).

    Uniform on the number of clusters and a uniform multinomial-Dirichlet on cluster totals:

    .. math:: \pi(z) \propto \frac{(C-1)!\, \prod_c n_c!}{N\,(N+C-1)!}

    normalized exactly over all partitions of ``N`` items. The formula is the probability of a
    *labelled* allocation; summing it over labellings gives
    :class:`~pymc_partition.MixtureOfFiniteMixtures` with ``K`` uniform on ``1..N``, the prior the
    paper's text describes.

    Examples
    --------
    The probabilities of the five partitions of three items sum to one:

    >>> import numpy as np, pymc_partition as pmp
    >>> partitions = [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 1, 2]]
    >>> np.exp(pmp.UniformMultinomialDirichlet().logp(partitions)).round(4)
    array([0.7895, 0.0658, 0.0658, 0.0658, 0.0132])
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
        )  # fmt: skip
        return logsumexp(log_g[1:] + per_c)


class DirichletProcess(PartitionPrior):
    r"""Chinese restaurant process / Dirichlet process prior with concentration ``alpha``.

    .. math:: \pi(z) = \frac{\alpha^C \prod_c (n_c - 1)!}{\alpha (\alpha+1) \cdots (\alpha+N-1)}

    Parameters
    ----------
    alpha : float or scalar PyMC variable
        Concentration, > 0. A PyMC variable (e.g. ``pm.Gamma("alpha", 2, 1)``) makes the prior
        hierarchical: the partition's logp is then a graph of ``alpha``.

    Examples
    --------
    Two items together and one apart, at ``alpha = 1``: ``1 / (1 * 2 * 3)``.

    >>> import numpy as np, pymc_partition as pmp
    >>> prior = pmp.DirichletProcess(alpha=1.0)
    >>> bool(np.isclose(prior.logp([0, 0, 1]), np.log(1 / 6)))
    True

    With a hyperprior on the concentration, in a model:

    >>> import pymc as pm
    >>> with pm.Model():
    ...     alpha = pm.Gamma("alpha", alpha=2.0, beta=1.0)
    ...     z = pmp.Partition("z", n_items=10, prior=pmp.DirichletProcess(alpha))
    """

    _param_names = ("alpha",)
    _normalized = True
    #: the tables as a numba routine (:mod:`._numba`), for the samplers' per-draw reads
    _tables_routine = "dirichlet_process_tables"

    def __init__(self, alpha=1.0):
        self.alpha = check_param("alpha", alpha, check_positive, support=POSITIVE)

    def _formula(self, n_items, xp):
        a = xp.asarray(self.alpha)
        C = np.arange(n_items + 1, dtype=float)
        # log(alpha (alpha + 1) ... (alpha + N - 1)), exact for any alpha (see .._special)
        log_g = xp.asarray(C) * xp.log(a) - log_rising(a, float(n_items), xp)
        log_h = gammaln(np.maximum(np.arange(n_items + 1), 1))
        return log_g, log_h

    def _conditions(self, xp):
        return [(self.alpha > 0, "alpha > 0")]


class PitmanYor(PartitionPrior):
    r"""Pitman-Yor (two-parameter) partition prior with discount ``d`` in [0, 1), ``alpha > -d``.

    .. math:: \pi(z) = \frac{\prod_{k=1}^{C-1} (\alpha + k d)}{(\alpha+1)_{N-1}}
              \prod_c \frac{\Gamma(n_c - d)}{\Gamma(1 - d)}

    Parameters
    ----------
    alpha, d : float or scalar PyMC variable
        Strength ``alpha > -d`` and discount ``0 <= d < 1``; either may be a PyMC variable.

    Examples
    --------
    >>> import numpy as np, pymc_partition as pmp
    >>> prior = pmp.PitmanYor(alpha=1.0, d=0.5)
    >>> round(float(prior.logp([0, 0, 1])), 4)
    -2.0794
    >>> partitions = [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 1, 2]]
    >>> round(float(np.exp(prior.logp(partitions)).sum()), 12)  # normalized exactly
    1.0
    """

    _param_names = ("alpha", "d")
    _normalized = True
    _tables_routine = "pitman_yor_tables"

    def __init__(self, alpha=1.0, d=0.5):
        def number(name, value):
            try:
                return float(value)
            except (TypeError, ValueError):
                raise TypeError("`alpha` and `d` must be numbers or PyMC variables.") from None

        d = check_param("d", d, number, support=((-1e-3, 1.001), "in [0, 1)"))
        below = None if is_symbolic(d) else ((-d - 1e-3, -d - 1.0), f"greater than -d = {-d:g}")
        alpha = check_param("alpha", alpha, number, support=below)
        if not is_symbolic(d) and (not np.isfinite(d) or not 0 <= d < 1):
            raise ValueError(f"`d` must lie in [0, 1), got {d}.")
        if not is_symbolic(alpha) and not np.isfinite(alpha):
            raise ValueError(f"`alpha` must be finite, got {alpha}.")
        if not is_symbolic(alpha) and not is_symbolic(d) and alpha <= -d:
            raise ValueError(f"`alpha` must be finite and greater than -d = {-d}, got {alpha}.")
        self.alpha, self.d = alpha, d

    def _formula(self, n_items, xp):
        a, d = xp.asarray(self.alpha), xp.asarray(self.d)
        k = xp.asarray(np.arange(1, n_items, dtype=float))
        log_g = xp.concatenate([-np.inf, 0.0, xp.cumsum(xp.log(k * d + a))])
        log_g = log_g - log_rising(a + 1, float(n_items - 1), xp)
        n = xp.asarray(np.maximum(np.arange(n_items + 1), 1).astype(float))
        log_h = log_rising(1 - d, n - 1, xp)  # log Gamma(n - d) - log Gamma(1 - d)
        return log_g, log_h

    def _conditions(self, xp):
        a, d = self.alpha, self.d
        return [(d >= 0, "0 <= d"), (d < 1, "d < 1"), (a + d > 0, "alpha > -d")]


class UniformPartition(PartitionPrior):
    """Uniform prior over all ``B(N)`` partitions.

    Examples
    --------
    Three items have ``B(3) = 5`` partitions:

    >>> import numpy as np, pymc_partition as pmp
    >>> bool(np.isclose(pmp.UniformPartition().logp([0, 1, 1]), np.log(1 / 5)))
    True
    """

    def _unnormalized_tables(self, n_items):
        return np.zeros(n_items + 1), np.zeros(n_items + 1)

    def _log_normalizer(self, n_items, log_g, log_h):
        return _log_bell(n_items)
