"""Pearson's chi-square goodness of fit of sampled states against exact probabilities (tests only)."""

from __future__ import annotations

import numpy as np
from scipy import stats as sps


def chi_square_gof(observed_keys, keys, probs, min_expected=5.0):
    """Pearson chi-square p-value of observed state keys against exact probabilities."""
    n = observed_keys.shape[0]
    index = {k: i for i, k in enumerate(keys.tolist())}
    counts = np.zeros(len(keys))
    for k in observed_keys.tolist():
        counts[index[k]] += 1  # KeyError would mean a state outside the support
    expected = n * probs
    if np.any(counts[expected == 0] > 0):  # a draw where the exact probability is zero
        return 0.0, np.inf, 0
    counts, expected = counts[expected > 0], expected[expected > 0]
    if counts.size < 2:  # one possible value (a point mass): nothing to test beyond the support
        return 1.0, 0.0, 0
    big = expected >= min_expected
    obs_b = list(counts[big])
    exp_b = list(expected[big])
    if (~big).any():
        obs_b.append(counts[~big].sum())
        exp_b.append(expected[~big].sum())
    obs_b, exp_b = np.array(obs_b), np.array(exp_b)
    if exp_b[-1] < 1.0 and len(exp_b) > 2:  # fold a tiny pooled bin into the smallest other bin
        k = np.argmin(exp_b[:-1])
        obs_b[k] += obs_b[-1]
        exp_b[k] += exp_b[-1]
        obs_b, exp_b = obs_b[:-1], exp_b[:-1]
    chi2 = ((obs_b - exp_b) ** 2 / exp_b).sum()
    df = len(exp_b) - 1
    return float(sps.chi2.sf(chi2, df)), chi2, df
