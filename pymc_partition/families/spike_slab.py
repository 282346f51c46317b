"""The paper's spike-and-slab normal model with replicates (Gaussian model of R's bclust).

Per variable ``v`` and cluster ``c``::

    y = mu + gamma * theta + eta_item + eps,
    eps ~ N(0, sigma2), eta ~ N(0, sigma2_eta), theta ~ N(0, sigma2_theta), gamma ~ Bernoulli(p).

With per-item replicate count ``r_i``, mean ``m_i``, corrected sum of squares ``s_i``,
``d_i = sigma2 / r_i + sigma2_eta`` and ``e_i = m_i - mu``, the cluster depends on the data only
through ``A = sum 1/d_i``, ``B_v = sum e_iv/d_i`` and an additive constant, so the per-item statistics
row is ``[const_i, 1/d_i, e_i1/d_i, ..., e_iV/d_i]``.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from .._symbolic import is_symbolic
from .base import (
    ConjugateFamily,
    check_finite,
    check_positive,
    check_probability,
    group_sums,
    group_sums_graph,
)
from .numba_draws import draw_spike_slab

__all__ = ["SpikeSlabNormal", "replicate_summaries"]

_LOG_2PI = float(np.log(2 * np.pi))


def replicate_summaries(values, item_index, n_items):
    """Per-item replicate count ``r (n_items,)``, means and corrected sums of squares ``(n_items, V)``."""
    r = np.bincount(item_index, minlength=n_items).astype(float)
    m = group_sums(values, item_index, n_items) / r[:, None]
    s = group_sums((values - m[item_index]) ** 2, item_index, n_items)
    return r, m, s


def item_terms(r, m, s, mu, sigma2, sigma2_eta, xp=np):
    """``const (n,)``, ``A (n,)``, ``B (n, V)`` for each item; ``xp`` is numpy or pytensor.tensor.

    Written once for both backends so that the samplers' statistics and the empirical-Bayes
    likelihood (symbolic hyperparameters) are the same formula.
    """
    d = sigma2 / r + sigma2_eta
    e = m - mu
    const = xp.sum(
        -0.5 * (r[:, None] - 1) * xp.log(2 * np.pi * sigma2)
        - 0.5 * xp.log(r)[:, None]
        - s / (2 * sigma2)
        - 0.5 * xp.log(2 * np.pi * d)[:, None]
        - e**2 / (2 * d[:, None]),
        axis=1,
    )
    return const, 1.0 / d, e / d[:, None]


def cluster_log_marginal(const, A, B, sigma2_theta, p, xp=np):
    """Cluster log marginal from summed ``const (...)``, ``A (...)``, ``B (..., V)``.

    Written so that tiny variances (huge ``A`` and ``B``) or a huge slab variance overflow
    nothing the answer does not: ``sigma2_theta B^2 / (1 + sigma2_theta A)`` as
    ``(B sqrt(t))^2`` with ``t = 1 / (1/sigma2_theta + A)``, and ``log(1 + sigma2_theta A)`` by
    ``log1p`` where the product is small, else as ``log sigma2_theta + log(A + 1/sigma2_theta)``.
    """
    where = xp.where if xp is np else xp.switch
    prod = sigma2_theta * A
    small = prod < 1.0
    log_one_plus = where(
        small,
        xp.log1p(where(small, prod, 0.0)),
        xp.log(sigma2_theta) + xp.log(A + 1.0 / sigma2_theta),
    )
    root_t = xp.sqrt(1.0 / (1.0 / sigma2_theta + A))
    slab = -0.5 * log_one_plus[..., None] + 0.5 * (B * root_t[..., None]) ** 2
    mix = xp.logaddexp(xp.log1p(-p), xp.log(p) + slab)
    return const + xp.sum(mix, axis=-1)


_TINY = float(np.finfo(np.float64).tiny)


class SpikeSlabNormal(ConjugateFamily):
    r"""Spike-and-slab normal clustering model with item replicates (the paper's model).

    Parameters
    ----------
    mu : float
        Overall mean.
    sigma2 : float
        Between-replicate (residual) variance, > 0.
    sigma2_eta : float
        Between-item variance within a cluster, > 0.
    sigma2_theta : float
        Variance of the cluster mean shift (the slab), > 0.
    p : float
        Probability that a variable has a cluster-specific shift, in (0, 1).

    Notes
    -----
    For one variable and a cluster of items with summaries ``r_i, m_i, s_i``:

    .. math::

        \log p(y) = \sum_i \Big[-\tfrac{r_i-1}{2}\log(2\pi\sigma^2) - \tfrac12\log r_i
        - \tfrac{s_i}{2\sigma^2} - \tfrac12\log(2\pi d_i) - \tfrac{e_i^2}{2 d_i}\Big]
        + \log\Big(1-p + p\, e^{-\frac12\log(1+\sigma^2_\theta A)
        + \frac12 \sigma^2_\theta B^2/(1+\sigma^2_\theta A)}\Big)

    Variables are independent given the partition, so the cluster log marginal sums over them.


    Examples
    --------
    Items measured in replicates (``item_index`` gives each row's item), with the
    hyperparameters estimated by empirical Bayes as the paper does:

    >>> import pymc as pm, pymc_partition as pmp
    >>> data = pmp.datasets.simulate_spike_slab(n_items=6, n_vars=8, random_seed=1)
    >>> eb = pmp.fit_spike_slab(data.values, data.item_index)
    >>> family = pmp.SpikeSlabNormal(**eb.estimates)
    >>> with pm.Model():
    ...     z = pmp.Partition("z", n_items=data.n_items, prior=pmp.DirichletProcess(1.0))
    ...     y = pmp.MarginalLikelihood("y", partition=z, family=family, observed=data.values,
    ...                                item_index=data.item_index)
    """

    _param_names = ("mu", "sigma2", "sigma2_eta", "sigma2_theta", "p")
    _param_domains = {
        "mu": "finite", "sigma2": "positive", "sigma2_eta": "positive",
        "sigma2_theta": "positive", "p": "probability",
    }  # fmt: skip
    _stats_params = ("mu", "sigma2", "sigma2_eta")
    _magnitude_limits = {"mu": 1e150}

    def __init__(self, mu, sigma2, sigma2_eta, sigma2_theta, p):
        self.mu = check_finite("mu", mu)
        self.sigma2 = check_positive("sigma2", sigma2)
        self.sigma2_eta = check_positive("sigma2_eta", sigma2_eta)
        self.sigma2_theta = check_positive("sigma2_theta", sigma2_theta)
        self.p = check_probability("p", p)
        self._check_magnitudes()
        for name in ("sigma2", "sigma2_eta", "sigma2_theta"):
            value = getattr(self, name)
            if not is_symbolic(value) and np.any(np.asarray(value, dtype=float) < _TINY):
                # their reciprocals overflow: a wrong posterior without a word (scale 1e-154)
                raise ValueError(
                    f"`{name}` must be at least {_TINY:g}, the smallest normal float64, for "
                    f"SpikeSlabNormal: below it its reciprocal overflows (got {value!r}). Rescale the "
                    f"data and the hyperparameters together."
                )

    def _item_stats(self, values, item_index, n_items):
        r, m, s = replicate_summaries(values, item_index, n_items)
        const, A, B = item_terms(r, m, s, self.mu, self.sigma2, self.sigma2_eta)
        return np.column_stack([const, A, B])

    _draw_kernel = staticmethod(draw_spike_slab)

    def _draw_cluster(self, rng, item_index, n_vars):
        # y = mu + gamma theta (per cluster, variable) + eta (per item, variable) + eps (per row)
        shift = (rng.random(n_vars) < self.p) * rng.normal(0.0, np.sqrt(self.sigma2_theta), n_vars)
        items, local = np.unique(item_index, return_inverse=True)
        eta = rng.normal(0.0, np.sqrt(self.sigma2_eta), (items.size, n_vars))
        eps = rng.normal(0.0, np.sqrt(self.sigma2), (item_index.size, n_vars))
        return self.mu + shift + eta[local] + eps

    def _item_stats_graph(self, values, item_index, n_items):
        r = np.bincount(item_index, minlength=n_items).astype(float)
        m = group_sums_graph(values, item_index, n_items) / r[:, None]
        s = group_sums_graph((values - m[item_index]) ** 2, item_index, n_items)
        const, A, B = item_terms(r, m, s, self._param("mu"), self._param("sigma2"), self._param("sigma2_eta"), xp=pt)
        return pt.concatenate([const[:, None], A[:, None], B], axis=1)

    def predictive_form(self, item_stats):
        """Specialised log predictive for the samplers (:mod:`pymc_partition.predictive.spike_slab`)."""
        from ..predictive.spike_slab import spike_slab_form

        return spike_slab_form(self, item_stats)

    def log_marginal(self, stats):
        stats = pt.as_tensor_variable(stats)
        return cluster_log_marginal(
            stats[..., 0], stats[..., 1], stats[..., 2:], self._param("sigma2_theta"),
            self._param("p"), xp=pt,
        )  # fmt: skip
