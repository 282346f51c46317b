"""Mixture of finite mixtures (Miller & Harrison 2018): a prior on the number of components."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats
from scipy.special import gammaln

from .._special import log_rising
from ._ops import NUMPY, PYTENSOR, is_symbolic
from .base import POSITIVE, PartitionPrior, check_n_items, check_param
from .classic import check_positive

__all__ = ["MixtureOfFiniteMixtures"]

_K_PRIORS = ("uniform", "poisson", "geometric")
#: Relative truncation error allowed in V_N(t) for an unbounded p(K) with fixed parameters
_TAIL_TOL = 1e-17
#: ... and with random parameters (checked in the graph: a larger error makes the logp -inf)
_TAIL_TOL_RANDOM = 1e-12
#: Rows of t per block in the numpy series: memory stays a few million entries
_BLOCK_ENTRIES = 1 << 22
#: Most terms (n_items x k_max) the numpy series may take before it is refused (a second or so)
_SERIES_BUDGET = 1 << 23


def _log_vn_series(n_items, gamma, log_pk, k_max, xp):
    """``log V_N(t)``, ``t = 1..N``, from ``log p(k)``, ``k = 1..k_max`` (a finite sum).

    ``V_N(t) = sum_{k >= t} exp(c_k - log (k-t)!)`` with ``c_k = log k! + log Gamma(gamma k) -
    log Gamma(gamma k + N) + log p(k)``. Numpy does the rows of ``t`` in blocks (memory
    ``O(N + K)`` beyond a block, time ``O(N K)``); pytensor builds one block.
    """
    k = np.arange(1, k_max + 1)
    log_fact = gammaln(np.arange(k_max + 1) + 1.0)
    kx = xp.asarray(k.astype(float))
    c = xp.asarray(log_fact[k]) - log_rising(kx * gamma, float(n_items), xp) + log_pk
    t_top = min(n_items, k_max)  # V_N(t) = 0 for t > K
    rows = t_top if xp.symbolic else max(1, _BLOCK_ENTRIES // k_max)
    parts = []
    for start in range(1, t_top + 1, rows):
        t = np.arange(start, min(start + rows, t_top + 1))
        lag = k[None, :] - t[:, None]
        base = np.where(lag >= 0, -log_fact[np.maximum(lag, 0)], -np.inf)
        parts.append(xp.logsumexp(c[None, :] + base, axis=1))
    parts.append(np.full(n_items - t_top, -np.inf))
    return xp.concatenate(parts)


class MixtureOfFiniteMixtures(PartitionPrior):
    r"""Mixture of finite mixtures (Miller & Harrison 2018, JASA).

    A prior ``p(K)`` on the number of components and symmetric Dirichlet(``gamma``) weights, marginalized over both.

    A partition with ``t`` blocks of sizes ``n_1..n_t`` has probability

    .. math:: \pi(z) = V_N(t) \prod_c \frac{\Gamma(\gamma + n_c)}{\Gamma(\gamma)}, \qquad
              V_N(t) = \sum_{k \ge t} \frac{k!}{(k-t)!}
                       \frac{\Gamma(\gamma k)}{\Gamma(\gamma k + N)}\, p(k),

    the probability of a *labelled* allocation into ``K`` components (some possibly empty),
    summed over the ``k!/(k-t)!`` labellings of the partition and over ``K``. With
    ``k_prior="uniform"`` (``K`` uniform on ``1..N``) and ``gamma=1`` the labelled allocation has
    the paper's printed probability :math:`(K-1)! \prod_k N_k! / (N (N+K-1)!)`, so this is the
    prior on partitions that the description of Asgharian, Lysy & Partovi Nia (2019) implies
    (:class:`~pymc_partition.UniformMultinomialDirichlet` reads the printed formula as a pmf on
    partitions).

    Parameters
    ----------
    k_prior : {"uniform", "poisson", "geometric"} or array_like, default "uniform"
        Prior of the number of components ``K``:

        - ``"uniform"``: uniform on ``1..N`` (``N`` the number of items);
        - ``"poisson"``: ``K - 1 ~ Poisson(k_param)``;
        - ``"geometric"``: ``P(K = k) = (1 - k_param)^(k-1) k_param`` for ``k >= 1``;
        - a vector ``p`` of non-negative weights: ``P(K = k)`` proportional to ``p[k - 1]``.
    gamma : float or scalar PyMC variable, default 1.0
        Concentration of the symmetric Dirichlet prior on the component weights, > 0.
    k_param : float or scalar PyMC variable, optional
        The rate of ``"poisson"`` (> 0) or the success probability of ``"geometric"`` (in
        (0, 1]); not used otherwise.
    k_max : int, optional
        Where the series for ``V_N(t)`` stops when ``p(K)`` is unbounded and a parameter is a
        PyMC variable (default ``max(2 N, N + 200, 2000)``: enough for a Poisson rate up to
        about 1,500 or a geometric probability down to about 0.015). The graph checks that the neglected terms
        are below ``1e-12`` of the sum and gives ``-inf`` logp otherwise (then raise ``k_max``).
        With fixed parameters the series stops by itself where the rest is below ``1e-17``.

    Notes
    -----
    The truncation uses the bound
    :math:`k_{(t)} \Gamma(\gamma k)/\Gamma(\gamma k + N) \le \gamma^{-t} (\gamma k)^{t-N}`.
    Computing the tables costs ``O(N K)``, once per model (figures on the documentation's
    performance page).

    Examples
    --------
    >>> import pymc as pm, pymc_partition as pmp
    >>> paper = pmp.MixtureOfFiniteMixtures()  # K uniform on 1..N, Dirichlet(1) weights
    >>> with pm.Model():
    ...     gamma = pm.Gamma("gamma", 2.0, 2.0)
    ...     z = pmp.Partition("z", n_items=10,
    ...                       prior=pmp.MixtureOfFiniteMixtures("poisson", gamma=gamma, k_param=3.0))
    """

    _param_names = ("k_prior", "gamma", "k_param", "k_max")
    _normalized = True  # V_N(t) sums p(K) exactly (checked by the tests)

    def __init__(self, k_prior="uniform", gamma=1.0, k_param=None, k_max=None):
        self.gamma = check_param("gamma", gamma, check_positive, support=POSITIVE)
        if isinstance(k_prior, str):
            if k_prior not in _K_PRIORS:
                raise ValueError(f"`k_prior` must be one of {_K_PRIORS} or a vector of probabilities, got {k_prior!r}.")
            if k_prior == "uniform":
                if k_param is not None:
                    raise ValueError('`k_param` is not used with k_prior="uniform"; leave it out.')
            else:
                if k_param is None:
                    what = "Poisson rate of K - 1" if k_prior == "poisson" else "success probability"
                    raise ValueError(f'k_prior="{k_prior}" needs `k_param` (the {what}).')
                support = POSITIVE if k_prior == "poisson" else ((-1e-3, 1.001), "in (0, 1]")
                k_param = check_param("k_param", k_param, check_positive, support=support)
                if k_prior == "geometric" and not is_symbolic(k_param) and k_param > 1:
                    raise ValueError(f"`k_param` of a geometric p(K) must lie in (0, 1], got {k_param}.")
        else:
            try:
                w = np.asarray(k_prior, dtype=float)
            except (TypeError, ValueError):
                raise TypeError(
                    "`k_prior` must be 'uniform', 'poisson', 'geometric' or a vector of probabilities."
                ) from None
            if w.ndim != 1 or w.size == 0:
                raise ValueError("`k_prior` as probabilities must be a non-empty 1-D vector (P(K=1), P(K=2), ...).")
            if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
                raise ValueError("`k_prior` probabilities must be finite, non-negative and not all zero.")
            if k_param is not None:
                raise ValueError("`k_param` is not used with a vector `k_prior`; leave it out.")
            k_prior = tuple(float(x) for x in w / w.sum())
        if k_max is not None:
            k_max = check_n_items(k_max)
        self.k_prior, self.k_param, self.k_max = k_prior, k_param, k_max

    @property
    def _unbounded(self):
        return self.k_prior in ("poisson", "geometric")

    def _log_pk(self, k, n_items, xp):
        """``log P(K = k)`` for ``k = 1..len(k)`` (integers)."""
        if self.k_prior == "uniform":
            return xp.asarray(np.full(k.shape, -np.log(n_items)))
        if isinstance(self.k_prior, tuple):
            p = np.zeros(k.shape)
            inside = k <= len(self.k_prior)
            p[inside] = np.array(self.k_prior)[k[inside] - 1]
            with np.errstate(divide="ignore"):
                return xp.asarray(np.log(p))
        lam = xp.asarray(self.k_param)  # float64 also for a number (pytensor casts 2.0 to float32)
        if not xp.symbolic:
            if self.k_prior == "poisson":
                return stats.poisson.logpmf(k - 1, lam)
            return stats.geom.logpmf(k, lam)
        kx = xp.asarray(k.astype(float))
        if self.k_prior == "poisson":
            return (kx - 1) * xp.log(lam) - lam - xp.gammaln(kx)
        # (k - 1) log(1 - p) with p = 1 allowed: zero at k = 1
        return xp.where(kx > 1, (kx - 1) * xp.log1p(-lam), 0.0) + xp.log(lam)

    def _log_tail(self, k_max, xp):
        """``log P(K > k_max)`` for an unbounded ``p(K)``."""
        lam = xp.asarray(self.k_param)
        if not xp.symbolic:
            if self.k_prior == "poisson":
                return stats.poisson.logsf(k_max - 1, lam)
            return stats.geom.logsf(k_max, lam)
        if self.k_prior == "poisson":
            import pytensor.tensor as pt

            return pt.log(pt.gammainc(float(k_max), lam))  # P(Poisson(lam) >= k_max)
        return k_max * xp.log1p(-lam)

    def _tail_ratio(self, n_items, k_max, log_v, xp):
        """Bound on the neglected terms over ``V_N(t)``, in logs, for ``t = 1..N``."""
        t = np.arange(1, n_items + 1, dtype=float)
        g = xp.asarray(self.gamma)
        tx = xp.asarray(t)
        return self._log_tail(k_max, xp) - tx * xp.log(g) + (tx - n_items) * xp.log(g * k_max) - log_v

    def log_vn(self, n_items):
        """``log V_N(t)`` for ``t = 0..N`` (entry 0 is ``-inf``), with fixed parameters."""
        return self.tables(n_items)[0]

    def _formula(self, n_items, xp):
        n = np.arange(n_items + 1, dtype=float)
        gamma = xp.asarray(self.gamma)
        log_h = log_rising(gamma, xp.asarray(n), xp)
        if self.k_prior == "uniform":
            k_max = n_items
        elif isinstance(self.k_prior, tuple):
            k_max = len(self.k_prior)
        elif xp.symbolic:
            k_max = self.k_max or max(2 * n_items, n_items + 200, 2000)
        else:
            k_max = n_items + 64
        while True:
            k = np.arange(1, k_max + 1)
            log_v = _log_vn_series(n_items, gamma, self._log_pk(k, n_items, xp), k_max, xp)
            if not self._unbounded or xp.symbolic:
                break
            with np.errstate(divide="ignore", invalid="ignore"):  # p(K) = 1 at K = 1: -inf tails
                ratio = self._tail_ratio(n_items, k_max, log_v, NUMPY)
            if np.all(ratio[np.isfinite(log_v)] < np.log(_TAIL_TOL)):
                break
            k_cap = max(n_items + 64, _SERIES_BUDGET // n_items)
            if k_max >= k_cap:
                raise ValueError(self._series_refusal(n_items, k_cap))
            k_max = min(2 * k_max, k_cap)
        self._k_used = k_max
        return xp.concatenate([-np.inf, log_v]), log_h

    def _series_refusal(self, n_items, k_cap):
        """Why the series for V_N(t) is refused, with the parameters' workable ranges."""
        if self.gamma < 1 and -n_items * math.log(self.gamma) > 20:
            # the tail bound carries gamma^-N: tiny gamma needs p(K) to vanish that much faster
            where = (f"`gamma` = {self.gamma:g} is so small that the terms' bound (gamma^-N) needs "
                     f"p(K) to vanish faster; gamma of at least about {math.exp(-20 / n_items):.2g} "
                     f"is safe for {n_items} items")  # fmt: skip
        elif self.k_prior == "poisson":
            where = (f"`k_param` = {self.k_param:g}, the Poisson rate of K - 1, puts K beyond them "
                     f"(it must stay below about {k_cap / 2:.3g} for {n_items} items)")  # fmt: skip
        else:
            where = (f"`k_param` = {self.k_param:g}, the geometric success probability, puts K "
                     f"beyond them (it must stay above about {60.0 / k_cap:.2g} for {n_items} items)")  # fmt: skip
        return (
            f"The series for V_N(t) of {self!r} would need more than {k_cap:,} terms of p(K) "
            f"for {n_items} items: {where}. Choose values inside these ranges."
        )

    def _conditions(self, xp):
        conds = [(self.gamma > 0, "gamma > 0")]
        if self._unbounded and is_symbolic(self.k_param):
            conds.append((self.k_param > 0, "k_param > 0"))
            if self.k_prior == "geometric":
                conds.append((self.k_param <= 1, "k_param <= 1"))
        return conds

    def _tables_formula_graph(self, n_items):
        log_g, log_h = super()._tables_formula_graph(n_items)
        if self._unbounded:  # random parameters here (the tables' node holds this graph)
            import pytensor.tensor as pt
            from pymc.distributions.dist_math import check_parameters

            ratio = self._tail_ratio(n_items, self._k_used, log_g[1:], PYTENSOR)
            ok = pt.all(pt.or_(pt.isinf(log_g[1:]), ratio < np.log(_TAIL_TOL_RANDOM)))
            log_g = check_parameters(log_g, ok, msg=f"the V_N(t) series needs more than k_max = {self._k_used} terms")
        return log_g, log_h

    def __repr__(self):
        kp = self.k_prior if isinstance(self.k_prior, str) else f"[{len(self.k_prior)} probabilities]"
        extra = "" if self.k_param is None else f", k_param={self._param_repr('k_param')}"
        extra += "" if self.k_max is None else f", k_max={self.k_max}"
        return f"{type(self).__name__}(k_prior={kp!r}, gamma={self._param_repr('gamma')}{extra})"
