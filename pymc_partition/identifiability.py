r"""Which hyperparameters an allocation can identify: checked before an empirical-Bayes fit.

:func:`~pymc_partition.fit_hyperparameters` maximizes the marginal likelihood of a fixed
allocation. When every cluster of that allocation holds a single data row (the default: each item
its own cluster, one row per item), the likelihood is a product over rows of one distribution, the
prior predictive of a single row,

.. math::

    L(\theta) = \prod_i p(y_i \mid \theta), \qquad
    p(y \mid \theta) = \int p(y \mid \phi)\, p(\phi \mid \theta)\, d\phi,

so the hyperparameters ``theta`` are identified only through that distribution. For each family:

``NormalInverseGamma`` (per variable)
    ``y ~ N(mu, s2)``, ``mu ~ N(mu0, s2/kappa0)``, ``s2 ~ InvGamma(alpha0, beta0)`` give
    ``y ~ Student-t(2 alpha0 dof, location mu0, squared scale beta0 (1 + 1/kappa0) / alpha0)``.
    ``kappa0`` and ``beta0`` enter only through ``beta0 (1 + 1/kappa0)``: fitting both climbs a
    flat ridge. ``alpha0`` is told apart from them only by the dof, i.e. by the tail weight of the
    pooled data: data with normal (or lighter, e.g. several separated clusters) tails put the
    maximum at ``alpha0 -> infinity``, the boundary.
``NormalInverseWishart``
    ``y ~ multivariate Student-t(nu0 - V + 1 dof, location mu0,
    scale psi0 (1 + 1/kappa0) / (nu0 - V + 1))``; ``psi0`` is kept as given, and ``kappa0`` and
    ``nu0`` are told apart only by the tail weight, as above.
``BetaBernoulli`` (per variable)
    ``y ~ Bernoulli(a / (a + b))``: ``a`` and ``b`` together are a ridge (any ``c a, c b``).
``DirichletCategorical``
    ``y ~ Categorical(alpha / sum(alpha))``: the total ``sum(alpha)`` never enters (a scalar
    ``alpha`` does not enter at all).
``GammaPoisson``
    ``y ~ NegativeBinomial``, whose two parameters are identified by the over-dispersion.

A fit of one spread hyperparameter alone (``kappa0``, ``alpha0``, ``beta0`` or ``nu0``) is
identified but is still a fit of the spread of a single row about ``mu0``: how that splits
into spread within a cluster and spread between cluster means is set by the hyperparameters kept
fixed, not by the data. With ``psi0`` or ``beta0`` at the scale of the whole data the prior then
expects one cluster as wide as the data set (the fit that "converged" to ARI -0.01): a warning.

Clusters of two or more rows (replicate rows of an item, or a given allocation) carry a
within-cluster scatter beside the spread of cluster means, which separates ``kappa0`` from the
variance scale; several such clusters identify ``alpha0`` / ``nu0`` from how the scatter varies
between clusters. With few of them the estimate may still run to the boundary: that is judged
after the optimization (:func:`~pymc_partition.fit_hyperparameters` refuses it).

``SpikeSlabNormal`` depends on the rows *per item*, whatever the allocation: with one row per
item ``sigma2`` and ``sigma2_eta`` enter only through ``d_i = sigma2 / r_i + sigma2_eta =
sigma2 + sigma2_eta`` (:func:`~pymc_partition.families.spike_slab.item_terms`), a ridge.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["UnidentifiedHyperparametersError", "IdentifiabilityWarning", "check_identifiable"]


class UnidentifiedHyperparametersError(ValueError):
    """The allocation (with these data) cannot identify the hyperparameters asked to be fitted."""


class IdentifiabilityWarning(UserWarning):
    """The fitted hyperparameters are identified, but not the thing they are usually meant for."""


#: family name -> (predictive of one row, [(hyperparameters fitted together, why not)],
#: hyperparameters whose fit alone only sets the spread of one row)
_ONE_ROW = {
    "NormalInverseGamma": (
        "per variable a Student t with 2 alpha0 degrees of freedom, location mu0 and squared "
        "scale beta0 (1 + 1/kappa0) / alpha0",
        [({"kappa0", "beta0"}, "enter only through beta0 (1 + 1/kappa0): a flat ridge"),
         ({"alpha0", "kappa0"}, "are told apart only by the tail weight of the pooled data"),
         ({"alpha0", "beta0"}, "are told apart only by the tail weight of the pooled data")],
        ("kappa0", "alpha0", "beta0"),
    ),
    "NormalInverseWishart": (
        "a multivariate Student t with nu0 - V + 1 degrees of freedom, location mu0 and scale "
        "psi0 (1 + 1/kappa0) / (nu0 - V + 1)",
        [({"kappa0", "nu0"}, "are told apart only by the tail weight of the pooled data")],
        ("kappa0", "nu0"),
    ),
    "BetaBernoulli": (
        "per variable a Bernoulli with probability a / (a + b)",
        [({"a", "b"}, "enter only through a / (a + b): a flat ridge")],
        (),
    ),
    "DirichletCategorical": (
        "per variable a categorical with probabilities alpha / sum(alpha)",
        [({"alpha"}, "enters only through alpha / sum(alpha): its total is not identified")],
        (),
    ),
}  # fmt: skip

_TAILS = (
    " Data with normal or lighter tails (e.g. several separated clusters) put the maximum at "
    "infinite degrees of freedom, the boundary, after a long optimization."
)


def _from_data(family):
    if not hasattr(type(family), "from_data"):
        return ""
    return (
        f" Or take data-scaled hyperparameters, {type(family).__name__}.from_data(observed, "
        "n_clusters=...): a cluster's spread from the data's and the number of clusters expected."
    )


def check_identifiable(family, fit, rows_per_item, labels):
    """Refuse (or warn about) a fit the allocation cannot identify, before optimizing.

    Parameters
    ----------
    family : ConjugateFamily
    fit : list of str
        The hyperparameters to fit.
    rows_per_item : ndarray (n_items,) of int
    labels : ndarray (n_items,) of int
        The allocation (any labels).

    Raises
    ------
    UnidentifiedHyperparametersError
        See the module's notes for the cases, with their mathematics.

    Warns
    -----
    IdentifiabilityWarning
        One spread hyperparameter fitted with one row per cluster.
    """
    name = type(family).__name__
    fit = set(fit)
    if name == "SpikeSlabNormal":
        if {"sigma2", "sigma2_eta"} <= fit and np.all(rows_per_item == 1):
            raise UnidentifiedHyperparametersError(
                "Every item has one row: sigma2 and sigma2_eta enter the likelihood only through "
                "their sum (d_i = sigma2 / r_i + sigma2_eta with r_i = 1), whatever the allocation. "
                "Fit one of them (leave the other out of `fit`), or give replicate rows."
            )
        return
    if name not in _ONE_ROW:
        return
    cluster_rows = np.bincount(np.unique(labels, return_inverse=True)[1], weights=rows_per_item)
    if np.any(cluster_rows > 1):
        return
    predictive, ridges, spreads = _ONE_ROW[name]
    lead = (
        f"Every cluster of the allocation holds one data row (the default: each item its own "
        f"cluster, one row per item), so the marginal likelihood is that of independent draws "
        f"of one row's prior predictive, {predictive}."
    )
    for together, why in ridges:
        if together <= fit:
            raise UnidentifiedHyperparametersError(
                f"{lead} {', '.join(sorted(together))} {why}."
                f"{_TAILS if 'tail' in why else ''} Fit fewer of them (leave the others out of "
                "`fit`), or give an allocation with clusters of several rows (`labels=`, e.g. a "
                f"preliminary clustering) or replicate rows.{_from_data(family)}"
            )
    fitted = sorted(fit.intersection(spreads))
    if fitted:
        warnings.warn(
            f"{lead} Fitting {', '.join(fitted)} matches that predictive's spread to the pooled "
            "data, whose spread includes the differences between clusters; how it splits into "
            "spread within a cluster and spread of the cluster means is set by the "
            "hyperparameters kept fixed, not by the data. If those are at the scale of the whole "
            "data set, the prior expects one cluster as wide as the data. Consider an "
            f"allocation with clusters of several rows.{_from_data(family)}",
            IdentifiabilityWarning,
            stacklevel=3,
        )
