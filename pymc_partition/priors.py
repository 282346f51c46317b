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
from scipy import stats
from scipy.special import gammaln, logsumexp

__all__ = [
    "PartitionPrior",
    "UniformMultinomialDirichlet",
    "DirichletProcess",
    "PitmanYor",
    "UniformPartition",
    "MixtureOfFiniteMixtures",
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


#: Relative truncation error allowed in the MFM coefficients V_n(t) for unbounded p(K)
_MFM_TAIL_TOL = 1e-17
_K_PRIORS = ("uniform", "poisson", "geometric")


def _log_vn_series(n_items, gamma, log_pk):
    """``log V_N(t)``, ``t = 1..N``, from ``log p(k)``, ``k = 1..len(log_pk)`` (finite sum).

    ``V_N(t) = sum_{k >= t} exp(c_k - log (k-t)!)`` with ``c_k = log k! + log Gamma(gamma k) -
    log Gamma(gamma k + N) + log p(k)``; rows of ``t`` are done in blocks so that memory stays
    ``O(N + K)`` blocks of a few million entries (``O(N K)`` time).
    """
    k_max = log_pk.size
    k = np.arange(1, k_max + 1)
    log_fact = gammaln(np.arange(k_max + 1) + 1.0)
    c = log_fact[k] + gammaln(gamma * k) - gammaln(gamma * k + n_items) + log_pk
    out = np.full(n_items, -np.inf)
    rows = max(1, (1 << 22) // k_max)
    for start in range(1, min(n_items, k_max) + 1, rows):
        t = np.arange(start, min(start + rows, n_items + 1, k_max + 1))
        lag = k[None, :] - t[:, None]  # k - t
        terms = np.where(lag >= 0, c[None, :] - log_fact[np.maximum(lag, 0)], -np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[t - 1] = logsumexp(terms, axis=1)
    return out


class MixtureOfFiniteMixtures(PartitionPrior):
    r"""Mixture of finite mixtures (Miller & Harrison 2018, JASA): a prior ``p(K)`` on the number
    of components and symmetric Dirichlet(``gamma``) weights, marginalized over both.

    A partition with ``t`` blocks of sizes ``n_1..n_t`` has probability

    .. math:: \pi(z) = V_N(t) \prod_c \frac{\Gamma(\gamma + n_c)}{\Gamma(\gamma)}, \qquad
              V_N(t) = \sum_{k \ge t} \frac{k!}{(k-t)!}
                       \frac{\Gamma(\gamma k)}{\Gamma(\gamma k + N)}\, p(k),

    the probability of a *labelled* allocation into ``K`` components (some possibly empty),
    summed over the ``k!/(k-t)!`` labellings of the partition and over ``K``. With
    ``k_prior="uniform"`` (``K`` uniform on ``1..N``) and ``gamma=1`` the labelled allocation has
    the paper's printed probability :math:`(K-1)! \prod_k N_k! / (N (N+K-1)!)`, so this is the
    prior on partitions that the description of Asgharian, Lysy & Partovi Nia (2019) implies
    (:class:`UniformMultinomialDirichlet` reads the printed formula as a pmf on partitions).

    Parameters
    ----------
    k_prior : {"uniform", "poisson", "geometric"} or array_like, default "uniform"
        Prior of the number of components ``K``:

        - ``"uniform"``: uniform on ``1..N`` (``N`` the number of items);
        - ``"poisson"``: ``K - 1 ~ Poisson(k_param)``;
        - ``"geometric"``: ``P(K = k) = (1 - k_param)^(k-1) k_param`` for ``k >= 1``;
        - a vector ``p`` of non-negative weights: ``P(K = k)`` proportional to ``p[k - 1]``.
    gamma : float, default 1.0
        Concentration of the symmetric Dirichlet prior on the component weights.
    k_param : float, optional
        The rate of ``"poisson"`` (> 0) or the success probability of ``"geometric"`` (in (0, 1]);
        not used otherwise.

    Notes
    -----
    For unbounded ``p(K)`` the series for ``V_N(t)`` is truncated where the remaining terms are
    below ``1e-17`` of the sum, using the bound
    :math:`k_{(t)} \Gamma(\gamma k)/\Gamma(\gamma k + N) \le \gamma^{-t} (\gamma k)^{t-N}`.
    """

    _param_names = ("k_prior", "gamma", "k_param")

    def __init__(self, k_prior="uniform", gamma=1.0, k_param=None):
        self.gamma = _check_positive("gamma", gamma)
        if isinstance(k_prior, str):
            if k_prior not in _K_PRIORS:
                raise ValueError(
                    f"`k_prior` must be one of {_K_PRIORS} or a vector of probabilities, got {k_prior!r}."
                )
            if k_prior == "uniform":
                if k_param is not None:
                    raise ValueError('`k_param` is not used with k_prior="uniform"; leave it out.')
            else:
                if k_param is None:
                    raise ValueError(
                        f'k_prior="{k_prior}" needs `k_param` (the '
                        + ("Poisson rate of K - 1)." if k_prior == "poisson" else "success probability).")
                    )
                k_param = _check_positive("k_param", k_param)
                if k_prior == "geometric" and k_param > 1:
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
        self.k_prior, self.k_param = k_prior, k_param

    def log_pk(self, k):
        """``log P(K = k)`` for an integer array ``k >= 1`` (``"uniform"`` needs ``n_items``: use
        :meth:`log_vn`)."""
        k = np.asarray(k)
        if self.k_prior == "poisson":
            return stats.poisson.logpmf(k - 1, self.k_param)
        if self.k_prior == "geometric":
            return stats.geom.logpmf(k, self.k_param)
        if isinstance(self.k_prior, tuple):
            p = np.array(self.k_prior)
            out = np.full(k.shape, -np.inf)
            inside = (k >= 1) & (k <= p.size)
            with np.errstate(divide="ignore"):
                out[inside] = np.log(p[k[inside] - 1])
            return out
        raise ValueError('log_pk of k_prior="uniform" depends on n_items.')

    def _log_sf(self, k):
        """``log P(K > k)`` for unbounded ``p(K)``."""
        if self.k_prior == "poisson":
            return stats.poisson.logsf(k - 1, self.k_param)
        return stats.geom.logsf(k, self.k_param)

    def log_vn(self, n_items):
        """``log V_N(t)`` for ``t = 0..N`` (entry 0 is ``-inf``)."""
        n_items = _check_n_items(n_items)
        t = np.arange(1, n_items + 1)
        if self.k_prior == "uniform":
            k_max, log_pk = n_items, None
        elif isinstance(self.k_prior, tuple):
            k_max, log_pk = len(self.k_prior), None
        else:
            k_max = n_items + 64
        while True:
            k = np.arange(1, k_max + 1)
            if self.k_prior == "uniform":
                log_pk = np.full(k_max, -np.log(n_items))
            else:
                log_pk = self.log_pk(k)
            log_v = _log_vn_series(n_items, self.gamma, log_pk)
            if self.k_prior == "uniform" or isinstance(self.k_prior, tuple):
                break
            tail = self._log_sf(k_max) - t * np.log(self.gamma) + (t - n_items) * np.log(self.gamma * k_max)
            finite = np.isfinite(log_v)
            if np.all(tail[finite] - log_v[finite] < np.log(_MFM_TAIL_TOL)):
                break
            k_max *= 2
            if k_max > 1 << 24:  # pragma: no cover - p(K) with an astronomically heavy tail
                raise ValueError("The series for V_N(t) does not converge: p(K) has too heavy a tail.")
        return np.concatenate([[-np.inf], log_v])

    def _unnormalized_tables(self, n_items):
        n = np.arange(n_items + 1)
        log_h = gammaln(self.gamma + n) - gammaln(self.gamma)
        return self.log_vn(n_items), log_h

    def _log_normalizer(self, n_items, log_g, log_h):
        return 0.0  # V_N(t) sums p(K) exactly: a normalized pmf (checked by the tests)

    def __repr__(self):
        kp = self.k_prior if isinstance(self.k_prior, str) else f"[{len(self.k_prior)} probabilities]"
        extra = "" if self.k_param is None else f", k_param={self.k_param!r}"
        return f"{type(self).__name__}(k_prior={kp!r}, gamma={self.gamma!r}{extra})"
