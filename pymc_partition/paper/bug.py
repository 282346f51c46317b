"""A sampler with a plausible bug: what Hotelling-RS is for, and R-hat does not see.

Not a sampler to use: the notebook runs it beside the two exact samplers to show the diagnostic
catching a chain that has converged, to the wrong distribution.

The bug. Collapsed Gibbs for a mixture of finite mixtures (Miller & Harrison 2018, their
algorithm for the MFM) puts an item in a new cluster with weight γ V_n(t + 1) / V_n(t), t the
number of clusters of the other items. Reading the table one entry too far,
γ V_n(t + 2) / V_n(t + 1), is an off-by-one of the usual kind: every move is still a valid Gibbs
update, the chain mixes exactly as well, the chains agree with each other, and it converges,
to another posterior. That chain is exactly the collapsed Gibbs sampler of the exchangeable
prior whose log g(C) is the right one shifted by one entry, log g'(C) = log g(C + 1)
(:class:`OffByOneNewCluster`), so ``GibbsPartition`` on a model with that prior runs it. Its
draws are labelled with the *right* model's log posterior (:func:`relabel_logp`), as a sampler
that scores its states with the model's logp records them.
"""

from __future__ import annotations

import numpy as np

from ..priors.base import PartitionPrior
from . import constants
from .readings import paper_prior
from .workflow import build_model, sample_timed

__all__ = ["OffByOneNewCluster", "relabel_logp", "sample_off_by_one", "total_variation"]


class OffByOneNewCluster(PartitionPrior):
    """The prior whose collapsed Gibbs sampler is ``prior``'s with the new-cluster weight read one entry too far.

    log g'(C) = log g(C + 1) for C < N, and −∞ for C = N (g(N + 1) would need more clusters
    than items); log h unchanged.
    """

    def __init__(self, prior=None):
        self.right = paper_prior() if prior is None else prior
        super().__init__()

    def _unnormalized_tables(self, n_items):
        log_g, log_h = self.right.tables(n_items)
        shifted = np.full_like(log_g, -np.inf)
        shifted[:-1] = log_g[1:]
        return shifted, log_h

    def __repr__(self):
        return f"OffByOneNewCluster({self.right!r})"


def relabel_logp(idata, wrong, right, n_items, var_name="z"):
    """Replace ``partition_logp`` of draws made under prior ``wrong`` by the one under ``right``.

    Both models share the likelihood, so the log posteriors differ by the log priors only:
    log g_right(C) − log g_wrong(C) with C the number of clusters of the draw (log h is the same).
    """
    from arviz_regen.xr.containers import add_group, get_group

    stats = get_group(idata, "sample_stats")
    labels = get_group(idata, "posterior")[var_name]
    n_clusters = labels.max(dim=labels.dims[-1]) + 1
    g_right, h_right = right.tables(n_items)
    g_wrong, h_wrong = wrong.tables(n_items)
    if not np.allclose(h_right[1:], h_wrong[1:]):
        raise ValueError("`wrong` and `right` must share log h: only log g is corrected.")
    with np.errstate(invalid="ignore"):  # C = 0 (−∞ − −∞) is never indexed
        shift = (g_right - g_wrong)[n_clusters.values]
    fixed = stats.assign(partition_logp=stats["partition_logp"] + shift)
    add_group(idata, "sample_stats", fixed, replace=True)
    return idata


def sample_off_by_one(data, estimates, *, draws=constants.DRAWS, chains=constants.CHAINS, cores=1,
                      random_seed=constants.SEED, progressbar=True, item_names=None):  # fmt: skip
    """Collapsed Gibbs with the off-by-one new-cluster weight on the paper's model.

    Returns ``(idata, seconds)`` as :func:`~pymc_partition.paper.workflow.sample_timed`, with
    ``partition_logp`` the paper's model's (:func:`relabel_logp`).
    """
    import pymc_partition as pmp

    right = paper_prior()
    wrong = OffByOneNewCluster(right)
    model, z = build_model(data, estimates, prior=wrong)
    idata, seconds = sample_timed(
        model, z, lambda: pmp.GibbsPartition([z]), draws=draws, chains=chains, cores=cores,
        random_seed=random_seed, progressbar=progressbar, item_names=item_names,
    )  # fmt: skip
    return relabel_logp(idata, wrong, right, data.n_items), seconds


def total_variation(exact_a, exact_b, k=1000):
    """½ Σ |p_a − p_b| over the union of the ``k`` most probable partitions of two exact posteriors.

    A partition outside one posterior's top ``k`` counts as probability 0 there, so this is a
    lower bound on the total variation when the top ``k`` do not hold all the mass.
    """
    tables = []
    for ex in (exact_a, exact_b):
        labels, probs = ex.top(k)
        tables.append({row.tobytes(): float(p) for row, p in zip(np.asarray(labels, dtype=np.int64), probs)})
    keys = set(tables[0]) | set(tables[1])
    return 0.5 * sum(abs(tables[0].get(key, 0.0) - tables[1].get(key, 0.0)) for key in keys)
