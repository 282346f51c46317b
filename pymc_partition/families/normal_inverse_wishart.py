"""Multivariate normal model with unknown mean and full covariance (Normal--Inverse-Wishart prior).

Per cluster, every data row (all replicate rows of all its items) is a draw ``y in R^V``::

    y ~ N(mu, Sigma),  mu | Sigma ~ N(mu0, Sigma / kappa0),  Sigma ~ InvWishart(nu0, psi0).

The per-item statistics row is ``[n_i, sum_y_i (V), vec(sum y y^T)_i (V*V, row-major)]``
(``1 + V + V^2`` columns).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from .._special import log_rising_tensor
from .._symbolic import check_support, is_symbolic
from .base import CentredLocation, ConjugateFamily, check_finite, check_positive, group_sums_graph
from .data_scaled import DEFAULT_KAPPA0, data_scaled
from .numba_draws import draw_normal_inverse_wishart

__all__ = ["NormalInverseWishart"]

_LOG_PI = float(np.log(np.pi))


def _log_multigamma_ratio(x, n, dim):
    """``log Gamma_dim(x + n) - log Gamma_dim(x)`` for pytensor tensors (elementwise).

    Exact for any ``x`` (a sum of log rising factorials, not a difference of log-gammas).
    """
    offsets = (1.0 - np.arange(1, dim + 1)) / 2.0
    return pt.sum(log_rising_tensor(x[..., None] + offsets, n[..., None]), axis=-1)


def _logdet_pd(m):
    """Log-determinant of symmetric positive definite matrices ``(..., V, V)`` via Cholesky."""
    chol = pt.linalg.cholesky(m, lower=True)
    return 2.0 * pt.sum(pt.log(pt.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)


class NormalInverseWishart(CentredLocation, ConjugateFamily):
    r"""Multivariate normal data with a Normal--Inverse-Wishart prior on mean and covariance.

    Parameters
    ----------
    mu0 : float or array_like (V,)
        Prior mean of the cluster mean; a scalar is repeated over the ``V`` variables.
    kappa0 : float
        Prior precision multiplier of the mean (pseudo-count), > 0.
    nu0 : float
        Degrees of freedom of the inverse-Wishart prior, > V - 1.
    psi0 : array_like (V, V) or float
        Scale matrix of the inverse-Wishart prior, symmetric positive definite. A positive scalar
        means ``psi0 * I``; ``V`` is then taken from ``mu0`` (``V = 1`` if ``mu0`` is also scalar).

    Notes
    -----
    Statistics per item: ``[n, S_1 (V), vec(S_2) (V^2)]`` with ``S_1 = \sum y`` and
    ``S_2 = \sum y y^\top`` over the item's rows. For a cluster with summed ``n, S_1, S_2``, let
    ``d = S_1 - n\mu_0`` and ``Q = S_2 - \mu_0 S_1^\top - S_1\mu_0^\top + n\mu_0\mu_0^\top
    = \sum (y-\mu_0)(y-\mu_0)^\top``; then ``\kappa_n = \kappa_0 + n``, ``\nu_n = \nu_0 + n``,
    ``\Psi_n = \Psi_0 + Q - d d^\top/\kappa_n`` and

    .. math::

        \log p(y) = -\tfrac{nV}{2}\log\pi + \log\Gamma_V(\tfrac{\nu_n}{2})
        - \log\Gamma_V(\tfrac{\nu_0}{2}) + \tfrac{\nu_0}{2}\log|\Psi_0|
        - \tfrac{\nu_n}{2}\log|\Psi_n| + \tfrac V2 \log\frac{\kappa_0}{\kappa_n},

    with ``\Gamma_V`` the multivariate gamma function. ``\log|\Psi_n|`` is computed from a batched
    Cholesky factor.

    See Also
    --------
    NormalInverseWishart.from_data : hyperparameters from the data (mclust's default prior).


    Examples
    --------
    One observation's marginal is multivariate Student-t with ``nu0 - V + 1`` degrees of
    freedom and shape ``psi0 (kappa0 + 1) / (kappa0 (nu0 - V + 1))``:

    >>> import numpy as np, pymc_partition as pmp
    >>> from scipy import stats
    >>> family = pmp.NormalInverseWishart(mu0=[0.0, 0.0], kappa0=1.0, nu0=3.0, psi0=1.0)
    >>> one = family.item_stats([[0.5, -0.5]])
    >>> t = stats.multivariate_t(loc=[0.0, 0.0], shape=np.eye(2), df=2.0)
    >>> bool(np.isclose(family.log_marginal_numpy(one)[0], t.logpdf([0.5, -0.5])))
    True
    """

    _param_names = ("mu0", "kappa0", "nu0", "psi0")
    _param_domains = {"mu0": "finite", "kappa0": "positive", "nu0": "finite", "psi0": "finite"}
    _derived_from_params = True  # n_vars, psi0 as a matrix, log |psi0|
    _magnitude_limits = {"mu0": 1e150}

    def __init__(self, mu0, kappa0, nu0, psi0):
        if any(is_symbolic(x) for x in (mu0, kappa0, nu0, psi0)):
            self._init_random(mu0, kappa0, nu0, psi0)
            return
        mu0 = check_finite("mu0", mu0)
        mu0_arr = np.asarray(mu0, dtype=float)
        if mu0_arr.ndim > 1 or (mu0_arr.ndim == 1 and mu0_arr.size == 0):
            raise ValueError(
                f"`mu0` must be a scalar or a non-empty 1-d array (one value per variable), got shape {mu0_arr.shape}."
            )
        psi0 = check_finite("psi0", psi0)
        psi0_arr = np.asarray(psi0, dtype=float)
        if psi0_arr.ndim == 0:
            if psi0_arr <= 0:
                raise ValueError(f"`psi0` must be positive definite, got {psi0!r}.")
            n_vars = mu0_arr.shape[0] if mu0_arr.ndim == 1 else 1
            psi0_arr = float(psi0_arr) * np.eye(n_vars)
        elif psi0_arr.ndim != 2 or psi0_arr.shape[0] != psi0_arr.shape[1]:
            raise ValueError(f"`psi0` must be a square (V, V) matrix, got shape {psi0_arr.shape}.")
        n_vars = psi0_arr.shape[0]
        if mu0_arr.ndim == 1 and mu0_arr.shape[0] != n_vars:
            raise ValueError(f"`mu0` has {mu0_arr.shape[0]} values but `psi0` is {n_vars} x {n_vars}.")
        scale = max(np.abs(psi0_arr).max(), np.finfo(float).tiny)
        if not np.allclose(psi0_arr, psi0_arr.T, rtol=0.0, atol=1e-10 * scale):
            raise ValueError("`psi0` must be symmetric.")
        psi0_arr = 0.5 * (psi0_arr + psi0_arr.T)
        try:
            chol = np.linalg.cholesky(psi0_arr)
        except np.linalg.LinAlgError:
            raise ValueError("`psi0` must be positive definite.") from None
        self.n_vars = n_vars
        self.mu0 = np.broadcast_to(mu0_arr, (n_vars,)).copy()
        self.kappa0 = check_positive("kappa0", kappa0)
        if np.ndim(self.kappa0) != 0:
            raise ValueError(f"`kappa0` must be a scalar, got {kappa0!r}.")
        nu0 = check_finite("nu0", nu0)
        if np.ndim(nu0) != 0:
            raise ValueError(f"`nu0` must be a scalar, got {nu0!r}.")
        if nu0 <= n_vars - 1:
            raise ValueError(f"`nu0` must exceed V - 1 = {n_vars - 1}, got {nu0!r}.")
        self.nu0 = nu0
        self.psi0 = psi0_arr
        self._logdet_psi0 = float(2.0 * np.sum(np.log(np.diag(chol))))
        self._check_magnitudes()
        self._set_centre()

    @classmethod
    def from_data(cls, observed, *, n_clusters, kappa0=DEFAULT_KAPPA0, nu0=None, scale=1.0):
        r"""Data-scaled hyperparameters: the default prior of mclust (Fraley & Raftery 2007).

        Parameters
        ----------
        observed : array_like, shape (n_rows, V)
            The data (every row, replicates included). Standardise the variables first if their
            units are arbitrary: the prior follows the data's covariance, not its units.
        n_clusters : float
            ``G``, the number of clusters you expect. A rough value is enough: ``psi0`` depends
            on it only through ``G^(-2/V)`` (a factor 0.58 for ``G = 3``, ``V = 4``; 0.84 for
            ``V = 13``).
        kappa0 : float, default 0.01
            mclust's ``shrinkage``: the prior of the cluster means is ``V``-variate normal about
            the data mean with ``1 / kappa0`` times the cluster covariance.
        nu0 : float, optional
            Degrees of freedom; default ``V + 2``, the smallest integer with a prior mean
            of the covariance.
        scale : float or PyMC variable, default 1
            Multiplies ``psi0``: a hyperprior on it (``scale=pm.LogNormal("scale", 0, 1)``) lets
            the data set how wide a cluster is, about the default.

        Returns
        -------
        NormalInverseWishart
            ``mu0`` the data mean, ``psi0 = scale (nu0 - V - 1) S / G^(2/V)`` with ``S`` the
            sample covariance of the rows (its diagonal when there are no more rows than
            variables), so that a cluster's prior mean covariance is ``scale S / G^(2/V)``
            whatever ``nu0``; with the defaults (``nu0 = V + 2``) ``psi0 = S / G^(2/V)``,
            mclust's ``defaultPrior`` term by term.

        Notes
        -----
        Fraley & Raftery chose these for the posterior mode of a finite mixture (EM); here they
        enter the marginal likelihood of each cluster. A small ``kappa0`` then also penalises
        every extra cluster (the factor ``(kappa0 / kappa_n)^{V/2}`` of its log marginal), so
        the partition posterior favours few, well supported clusters. See
        :mod:`pymc_partition.families.data_scaled` for the derivation.

        References
        ----------
        C. Fraley and A. E. Raftery (2007). Bayesian regularization for normal mixture
        estimation and model-based clustering. *Journal of Classification* 24:155-181.

        Examples
        --------
        >>> import numpy as np, pymc_partition as pmp
        >>> x = np.random.default_rng(0).normal(size=(100, 2))
        >>> fam = pmp.NormalInverseWishart.from_data(x, n_clusters=3)
        >>> fam.nu0
        4.0
        """
        mean, nu0, psi0 = data_scaled(observed, n_clusters, full=True, scale=scale,
                                      shape=("nu0", (lambda v: v + 2.0) if nu0 is None else nu0),
                                      minimum=lambda v: v + 1.0)  # fmt: skip
        return cls(mean, kappa0, nu0, psi0)

    def _init_random(self, mu0, kappa0, nu0, psi0):
        """Set up random hyperparameters: shapes are checked now, values in the graph."""
        shapes = [np.shape(x) if not is_symbolic(x) else x.type.shape for x in (mu0, psi0)]
        n_vars = next((s[0] for s in shapes if len(s) >= 1 and s[0] is not None), None)
        if n_vars is None:
            raise ValueError(
                "NormalInverseWishart needs the number of variables: give `mu0` or `psi0` as "
                "numbers, or PyMC variables with a fixed shape (e.g. shape=V)."
            )
        self.n_vars = int(n_vars)
        for name, value in (("kappa0", kappa0), ("nu0", nu0)):
            if (value.ndim if is_symbolic(value) else np.ndim(value)) != 0:
                raise ValueError(f"`{name}` must be a scalar.")
        self.kappa0 = check_positive("kappa0", kappa0)
        if is_symbolic(nu0):
            outside = (self.n_vars - 1.001, self.n_vars - 2.0)
            check_support("nu0", nu0, outside, f"greater than V - 1 = {self.n_vars - 1}")
        self.nu0 = check_finite("nu0", nu0)
        if not is_symbolic(self.nu0) and self.nu0 <= self.n_vars - 1:
            raise ValueError(f"`nu0` must exceed V - 1 = {self.n_vars - 1}, got {nu0!r}.")
        self.mu0 = (
            check_finite("mu0", mu0)
            if is_symbolic(mu0)
            else np.broadcast_to(np.asarray(check_finite("mu0", mu0), dtype=float), (self.n_vars,)).copy()
        )
        if is_symbolic(psi0):
            psi0 = check_finite("psi0", psi0)
            self.psi0 = psi0 * np.eye(self.n_vars) if psi0.ndim == 0 else psi0
            self._logdet_psi0 = None
        else:
            fixed = NormalInverseWishart(np.zeros(self.n_vars), 1.0, self.n_vars + 1.0, psi0)
            self.psi0, self._logdet_psi0 = fixed.psi0, fixed._logdet_psi0
        self._check_magnitudes()
        self._set_centre()

    def conditions(self):
        out = super().conditions()
        if is_symbolic(self.nu0):
            out.append((self.nu0 > self.n_vars - 1, f"nu0 > V - 1 = {self.n_vars - 1}"))
        return out

    _draw_kernel = staticmethod(draw_normal_inverse_wishart)

    def _draw_kernel_shapes(self, n_vars):
        return (("mu0", (n_vars,)), ("kappa0", ()), ("nu0", ()), ("psi0", (n_vars, n_vars)))

    def _draw_cluster(self, rng, item_index, n_vars):
        from scipy.stats import invwishart

        sigma = np.atleast_2d(invwishart.rvs(df=float(self.nu0), scale=np.asarray(self.psi0), random_state=rng))
        mu = rng.multivariate_normal(np.asarray(self.mu0, dtype=float), sigma / float(self.kappa0))
        return rng.multivariate_normal(mu, sigma, size=item_index.size)

    def _item_stats_graph(self, values, item_index, n_items):
        n = np.bincount(item_index, minlength=n_items).astype(float)[:, None]
        values = self._centred(values)
        outer = (values[:, :, None] * values[:, None, :]).reshape((values.shape[0], self.n_vars**2))
        return pt.concatenate(
            [pt.as_tensor_variable(n), group_sums_graph(values, item_index, n_items),
             group_sums_graph(outer, item_index, n_items)], axis=1,
        )  # fmt: skip

    def _check_values(self, values):
        if values.shape[1] != self.n_vars:
            raise ValueError(f"`observed` has {values.shape[1]} variable(s) but `mu0`/`psi0` describe {self.n_vars}.")

    def _item_stats(self, values, item_index, n_items):
        n_vars = self.n_vars
        n = np.bincount(item_index, minlength=n_items).astype(float)
        values = self._centred(values)
        s1 = np.zeros((n_items, n_vars))
        np.add.at(s1, item_index, values)
        outer = (values[:, :, None] * values[:, None, :]).reshape(values.shape[0], n_vars * n_vars)
        s2 = np.zeros((n_items, n_vars * n_vars))
        np.add.at(s2, item_index, outer)
        return np.column_stack([n, s1, s2])

    def predictive_form(self, item_stats):
        """Specialised log predictive for the samplers (:mod:`pymc_partition.predictive.normal_inverse_wishart`)."""
        from ..predictive.normal_inverse_wishart import normal_inverse_wishart_form

        return normal_inverse_wishart_form(self, item_stats)

    def log_marginal(self, stats):
        stats = pt.as_tensor_variable(stats)
        v = self.n_vars
        lead = tuple(stats.shape[i] for i in range(stats.ndim - 1))
        n = stats[..., 0]
        s1 = stats[..., 1 : 1 + v]
        s2 = pt.reshape(stats[..., 1 + v : 1 + v + v * v], (*lead, v, v))
        mu0 = pt.as_tensor_variable(self._mu0_from_centre())  # statistics are sums about the centre
        kappa0, nu0 = self._param("kappa0"), self._param("nu0")
        logdet_psi0 = _logdet_pd(self.psi0) if self._logdet_psi0 is None else self._logdet_psi0
        # psi_n = psi0 + scatter about the mean + n kappa0 / kappa_n (mean - mu0)(mean - mu0)^T,
        # without the cancellation of raw moments at extreme kappa0 or mu0; an empty row (never
        # used: masked) is read as one row of zeros
        n_rows = pt.switch(pt.gt(n, 0), n, 1.0)
        mean = s1 / n_rows[..., None]
        # one row has no scatter: exactly 0, not the rounding of s2 - s1 s1^T (see NIG)
        scatter = pt.switch(pt.gt(n, 1)[..., None, None], s2 - s1[..., :, None] * mean[..., None, :], 0.0)
        delta = mean - mu0
        shrink = n * kappa0 / (kappa0 + n)
        psi_n = self.psi0 + scatter + shrink[..., None, None] * delta[..., :, None] * delta[..., None, :]
        nu_n = nu0 + n
        return (
            -0.5 * n * v * _LOG_PI
            + _log_multigamma_ratio(pt.as_tensor_variable(nu0 / 2.0), n / 2.0, v)
            + 0.5 * nu0 * logdet_psi0
            - 0.5 * nu_n * _logdet_pd(psi_n)
            - 0.5 * v * pt.log1p(n / kappa0)
        )
