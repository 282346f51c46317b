"""Normal model with unknown mean and variance per variable (Normal--Inverse-Gamma prior).

Per variable ``v`` and cluster ``c``, independently across variables::

    y ~ N(mu_v, sigma2_v),  mu_v | sigma2_v ~ N(mu0, sigma2_v / kappa0),
    sigma2_v ~ InvGamma(alpha0, beta0).

Every data row of a cluster (all replicate rows of all its items) is one draw. The per-item
statistics row is ``[n_i, sum_y_i1, ..., sum_y_iV, sum_y2_i1, ..., sum_y2_iV]``
(``1 + 2V`` columns): row count, per-variable sums and per-variable sums of squares over the
item's rows.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from .._special import log_rising_tensor
from .base import (
    CentredLocation,
    ConjugateFamily,
    _length,
    check_finite,
    check_param_length,
    check_positive,
    group_sums,
    group_sums_graph,
    scalar_or_vector_param,
)
from .data_scaled import DEFAULT_KAPPA0, data_scaled
from .numba_draws import draw_normal_inverse_gamma

__all__ = ["NormalInverseGamma"]

_LOG_2PI = float(np.log(2 * np.pi))


class NormalInverseGamma(CentredLocation, ConjugateFamily):
    r"""Normal data with a Normal--Inverse-Gamma prior on each variable's mean and variance.

    Parameters
    ----------
    mu0 : float or array_like (V,)
        Prior mean of the cluster means.
    kappa0 : float or array_like (V,)
        Prior precision multiplier of the mean (pseudo-count), > 0.
    alpha0 : float or array_like (V,)
        Shape of the inverse-gamma prior on the variance, > 0.
    beta0 : float or array_like (V,)
        Scale of the inverse-gamma prior on the variance, > 0.

    Notes
    -----
    Statistics per item: ``[n, S_1 (V), S_2 (V)]`` with ``S_1 = \sum y``, ``S_2 = \sum y^2`` over
    the item's rows, ``y`` the data less :attr:`centre` (``mu0`` when it is a number: sums of
    squares far from zero would cancel) and ``mu0`` read less it too. For one variable of a cluster
    with summed ``n, S_1, S_2``, write ``d = S_1 - n\mu_0 = \sum (y - \mu_0)`` and
    ``Q = S_2 - 2\mu_0 S_1 + n\mu_0^2 = \sum (y-\mu_0)^2``; then ``\kappa_n = \kappa_0 + n``,
    ``\alpha_n = \alpha_0 + n/2``,
    ``\beta_n = \beta_0 + \tfrac12 (Q - d^2/\kappa_n)`` and

    .. math::

        \log p(y) = -\tfrac n2 \log(2\pi) + \tfrac12\log\frac{\kappa_0}{\kappa_n}
        + \alpha_0\log\beta_0 - \alpha_n\log\beta_n + \log\Gamma(\alpha_n) - \log\Gamma(\alpha_0).

    Variables are independent given the partition, so the cluster log marginal sums over them.
    Vector hyperparameters must have one value per variable of the data.

    See Also
    --------
    NormalInverseGamma.from_data : hyperparameters from the data (mclust's default prior).


    Examples
    --------
    One observation's marginal is Student-t with ``2 alpha0`` degrees of freedom, centred on
    ``mu0``, with squared scale ``beta0 (kappa0 + 1) / (alpha0 kappa0)``:

    >>> import numpy as np, pymc_partition as pmp
    >>> from scipy import stats
    >>> family = pmp.NormalInverseGamma(mu0=0.0, kappa0=1.0, alpha0=1.0, beta0=1.0)
    >>> one = family.item_stats([0.7])              # per-item statistics, shape (1, 3)
    >>> t = stats.t(df=2.0, loc=0.0, scale=np.sqrt(2.0))
    >>> bool(np.isclose(family.log_marginal_numpy(one)[0], t.logpdf(0.7)))
    True

    For your own data, mclust's data-scaled prior: ``NormalInverseGamma.from_data(x,
    n_clusters=3)``.
    """

    _param_names = ("mu0", "kappa0", "alpha0", "beta0")
    _param_domains = {"mu0": "finite", "kappa0": "positive", "alpha0": "positive", "beta0": "positive"}
    _magnitude_limits = {"mu0": 1e150}

    def __init__(self, mu0=0.0, kappa0=1.0, alpha0=1.0, beta0=1.0):
        self.mu0 = scalar_or_vector_param("mu0", mu0, check_finite)
        self.kappa0 = scalar_or_vector_param("kappa0", kappa0, check_positive)
        self.alpha0 = scalar_or_vector_param("alpha0", alpha0, check_positive)
        self.beta0 = scalar_or_vector_param("beta0", beta0, check_positive)
        lengths = {
            k: _length(getattr(self, k))
            for k in self._param_names
            if getattr(getattr(self, k), "ndim", np.ndim(getattr(self, k))) == 1
            and _length(getattr(self, k)) is not None
        }
        if len(set(lengths.values())) > 1:
            raise ValueError(f"Hyperparameter vectors have different lengths: {lengths}.")
        self._n_vars = next(iter(lengths.values()), None)
        self._check_magnitudes()
        self._set_centre()

    @classmethod
    def from_data(cls, observed, *, n_clusters, kappa0=DEFAULT_KAPPA0, alpha0=1.5, scale=1.0):
        r"""Data-scaled hyperparameters: mclust's default prior (Fraley & Raftery 2007) per variable.

        Parameters
        ----------
        observed : array_like, shape (n_rows,) or (n_rows, V)
            The data (every row, replicates included). Standardise the variables first if their
            units are arbitrary.
        n_clusters : float
            ``G``, the number of clusters you expect. A rough value is enough: ``beta0`` depends
            on it only through ``G^(-2/V)``.
        kappa0 : float, default 0.01
            mclust's ``shrinkage``: a cluster's mean is normal about the data mean with
            ``1 / kappa0`` times the cluster's variance.
        alpha0 : float, default 1.5
            Shape of the inverse-gamma prior of each variance: mclust's univariate
            ``nu_P / 2 = 3 / 2``, the smallest half-integer with a prior mean; must exceed 1.
        scale : float or PyMC variable, default 1
            Multiplies ``beta0``: a hyperprior on it (``scale=pm.LogNormal("scale", 0, 1)``) lets
            the data set how wide a cluster is, about the default.

        Returns
        -------
        NormalInverseGamma
            ``mu0`` the data means, ``beta0_v = scale (alpha0 - 1) s_v^2 / G^(2/V)`` with ``s_v^2``
            the sample variance of variable ``v``: a cluster's prior mean variance is
            ``scale s_v^2 / G^(2/V)`` whatever ``alpha0``, the diagonal of
            :meth:`NormalInverseWishart.from_data`'s. With one variable and the defaults this is
            mclust's univariate prior, ``beta0 = s^2 / (2 G^2)``.

        Notes
        -----
        The derivation, and mclust's choice for the full covariance, are in
        :mod:`pymc_partition.families.data_scaled` and
        :meth:`NormalInverseWishart.from_data`; the reference is Fraley & Raftery (2007),
        *Journal of Classification* 24:155-181.

        Examples
        --------
        One variable of variance 4, three clusters expected: ``beta0 = 4 / (2 * 3^2)``.

        >>> import pymc_partition as pmp
        >>> float(pmp.NormalInverseGamma.from_data([-2.0, 2.0, -2.0, 2.0, 0.0], n_clusters=3).beta0[0])
        0.2222222222222222
        """
        mean, alpha0, beta0 = data_scaled(
            observed, n_clusters, full=False, scale=scale, shape=("alpha0", alpha0), minimum=1.0
        )
        return cls(mean, kappa0, alpha0, beta0)

    def _check_values(self, values):
        for name in self._param_names:
            check_param_length(name, getattr(self, name), values.shape[1])

    def _item_stats(self, values, item_index, n_items):
        n = np.bincount(item_index, minlength=n_items).astype(float)
        values = self._centred(values)
        s1 = group_sums(values, item_index, n_items)
        s2 = group_sums(values**2, item_index, n_items)
        return np.column_stack([n, s1, s2])

    _draw_kernel = staticmethod(draw_normal_inverse_gamma)

    def _draw_cluster(self, rng, item_index, n_vars):
        mu0, kappa0, alpha0, beta0 = (np.broadcast_to(self._param(k), (n_vars,)) for k in self._param_names)
        sigma2 = beta0 / rng.gamma(alpha0)  # inverse gamma(alpha0, beta0)
        mu = rng.normal(mu0, np.sqrt(sigma2 / kappa0))
        return rng.normal(mu, np.sqrt(sigma2), size=(item_index.size, n_vars))

    def _item_stats_graph(self, values, item_index, n_items):
        n = np.bincount(item_index, minlength=n_items).astype(float)[:, None]
        values = self._centred(values)
        return pt.concatenate(
            [pt.as_tensor_variable(n), group_sums_graph(values, item_index, n_items),
             group_sums_graph(values**2, item_index, n_items)], axis=1,
        )  # fmt: skip

    def predictive_form(self, item_stats):
        """Specialised log predictive for the samplers (:mod:`pymc_partition.predictive.normal_inverse_gamma`)."""
        from ..predictive.normal_inverse_gamma import normal_inverse_gamma_form

        return normal_inverse_gamma_form(self, item_stats)

    def log_marginal(self, stats):
        stats = pt.as_tensor_variable(stats)
        n_vars = self._n_vars if self._n_vars is not None else (stats.shape[-1] - 1) // 2
        n = stats[..., 0][..., None]
        s1 = stats[..., 1 : 1 + n_vars]
        s2 = stats[..., 1 + n_vars : 1 + 2 * n_vars]
        mu0, kappa0, alpha0, beta0 = (self._param(k) for k in self._param_names)
        mu0 = self._mu0_from_centre()  # the statistics are sums about the centre
        # beta_n - beta0 = (sum of squares about the mean + n kappa0 / kappa_n (mean - mu0)^2) / 2,
        # without the cancellation of the raw moments at extreme kappa0 or mu0; an empty row
        # (never used: masked) is read as one row of zeros, so gradients stay finite
        n_rows = pt.switch(pt.gt(n, 0), n, 1.0)
        mean = s1 / n_rows
        # one row has no spread: exactly 0, not the rounding of s2 - s1^2 (which a fused
        # multiply-add makes about 1e-16 s2: all of beta_n when beta0 is tiny)
        spread = pt.switch(pt.gt(n, 1), pt.maximum(s2 - s1 * mean, 0.0), 0.0)
        r = 0.5 * (spread + n * kappa0 / (kappa0 + n) * (mean - mu0) ** 2)
        # log(beta_n / beta0): log1p where r is small against beta0, a difference of logs where
        # r / beta0 could overflow (each branch sees only its own range)
        log_ratio = pt.switch(
            pt.lt(r, beta0),
            pt.log1p(pt.minimum(r, beta0) / beta0),
            pt.log(beta0 + pt.maximum(r, beta0)) - pt.log(beta0),
        )
        # alpha0 log beta0 - alpha_n log beta_n + log Gamma(alpha_n) - log Gamma(alpha0), exact
        # for any alpha0 and beta0
        per_var = (
            -0.5 * n * _LOG_2PI
            - 0.5 * pt.log1p(n / kappa0)
            - alpha0 * log_ratio
            - 0.5 * n * (pt.log(beta0) + log_ratio)
            + log_rising_tensor(alpha0, 0.5 * n)
        )
        return pt.sum(per_var, axis=-1)
