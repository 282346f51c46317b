"""One-way ANOVA F ratios of features across groups of units, and their permutation maxima.

Numpy in, numpy out: the kernels of the chain-agreement test
(:func:`arviz_regen.chain_agreement`), where the features are scalar traces and pair indicators,
the units are batches of draws and the groups are chains.
"""

from __future__ import annotations

import numpy as np

from .lazy_jit import lazy_njit

__all__ = ["anova_f", "max_f"]


def anova_f(Y, groups, n_groups):
    """One-way ANOVA ratio F of each row of ``Y`` (features × units) for a grouping of the units.

    F = [B/(G − 1)] / [W/(N − G)] with B, W the between- and within-group sums of squares; NaN
    for a feature without variation, ∞ when all variation is between groups.
    """
    Y = np.asarray(Y, dtype=float)
    N = Y.shape[1]
    sums = np.zeros((Y.shape[0], n_groups))
    np.add.at(sums.T, groups, Y.T)
    size = np.bincount(groups, minlength=n_groups).astype(float)
    grand = Y.sum(axis=1)
    total = ((Y - (grand / N)[:, None]) ** 2).sum(axis=1)
    between = (sums**2 / size).sum(axis=1) - grand**2 / N
    within = np.maximum(total - between, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = (between / (n_groups - 1)) / (within / (N - n_groups))
    return np.where(total > 1e-12 * np.maximum((Y**2).sum(axis=1), 1e-300), f, np.nan)


@lazy_njit(cache=True)
def max_f(Y, total, grand, group, n_groups):
    """Largest F over the rows of ``Y`` for each grouping of the units (rows of ``group``).

    ``group[b, u]`` is the group of unit u in permutation b; all groups have the same size.
    Rows with zero ``total`` are skipped. One feature at a time against all permutations, so
    its row stays in cache.
    """
    F, N = Y.shape
    B = group.shape[0]
    m = N // n_groups
    out = np.full(B, -np.inf)
    dfb = n_groups - 1.0
    dfw = N - n_groups + 0.0
    s = np.zeros(n_groups)
    for f in range(F):
        if total[f] <= 0.0:
            continue
        for b in range(B):
            s[:] = 0.0
            for u in range(N):
                s[group[b, u]] += Y[f, u]
            ss = 0.0
            for g in range(n_groups):
                ss += s[g] * s[g]
            between = ss / m - grand[f] * grand[f] / N
            within = total[f] - between
            if within <= 1e-12 * total[f]:
                val = np.inf
            else:
                val = (between / dfb) / (within / dfw)
            if val > out[b]:
                out[b] = val
    return out
