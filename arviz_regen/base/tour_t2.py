"""Per-chain test of the top states' visits per tour against their known means (bootstrap-t).

What is tested. Every whole tour starts with the only visit to the regeneration state δ = S_1 it
contains. Under convergence the tours are iid, and the visits y_r = (v_r2 … v_rK) of tour r to
the other top states have known means: E v_ri / E v_r1 = π_i / π_1 = q_i with v_r1 = 1, so
E y_r = q_{2:K}. The statistic is Hotelling's one-sample T² of the R tours against that mean,

    T² = R (ȳ − q)' S⁻¹ (ȳ − q),     S = Σ_r (y_r − ȳ)(y_r − ȳ)' / R.

Why a bootstrap-t. A correct chain that reaches its top states only through long excursions
visits them in a few large clumps, one per excursion, of very variable size. Pearson's X² of
the pooled counts calibrated by resampling tours (the previous default) then rejects 9-17% of
correct chains at α = 0.05: when by chance the chain made few or small excursions, the
resampled counts are as little spread as the observed ones, and the deviation looks large. A
statistic studentized by the chain's own S carries that spread with it; resampling the tours
(the deviation centred at the observed ȳ) and recomputing T²* with each replicate's own S*
gives a reference that stays within Monte Carlo error of the level in those
regimes, and is conservative when a top state appears in a handful of tours (a replicate that
misses the state has no variance for it: T²* = ∞). See ``tests/arviz_regen/diagnostics/test_hotelling_excursions.py``.

Singular S. A coordinate that does not vary (a state visited identically in every tour, e.g.
never) contributes ∞ when ȳ_i differs from its centre and nothing when it does not; otherwise
T² uses the pseudo-inverse on the correlation scale, and a deviation outside the range of S
(linearly dependent visit counts that the deviation does not respect) gives ∞.
"""

from __future__ import annotations

import numpy as np

from .tour_bootstrap import tour_types
from .tour_tests import _batch_seed, sequential_p_values

__all__ = ["quadratic_form", "TourT2", "tour_t2_test"]

#: relative tolerance for a variance or an eigenvalue (correlation scale) to count as zero
RTOL = 1e-10


def quadratic_form(d, S, scale2, rtol=RTOL):
    """Compute d' S⁺ d for a batch of deviations and covariance matrices, ∞ outside the range of S.

    Parameters
    ----------
    d : numpy.ndarray, shape (..., m)
    S : numpy.ndarray, shape (..., m, m)
        Symmetric positive semi-definite.
    scale2 : numpy.ndarray, shape (..., m)
        A typical squared size of each coordinate (e.g. the mean of y²): a variance below
        ``rtol`` times it counts as zero.
    rtol : float

    Returns
    -------
    numpy.ndarray, shape d.shape[:-1]
    """
    d = np.asarray(d, dtype=float)
    S = np.asarray(S, dtype=float)
    m = d.shape[-1]
    var = np.diagonal(S, axis1=-2, axis2=-1)
    tiny = rtol * np.maximum(np.asarray(scale2, dtype=float), np.finfo(float).tiny)
    live = var > tiny
    # a coordinate that does not vary: ∞ if the deviation moves it, nothing otherwise
    dead_dev = np.abs(d) > np.sqrt(tiny) * 1e-3
    out = np.where(np.any(~live & dead_dev, axis=-1), np.inf, 0.0)
    sd = np.sqrt(np.where(live, var, 1.0))
    z = np.where(live, d / sd, 0.0)
    R = np.where(live[..., :, None] & live[..., None, :], S / (sd[..., :, None] * sd[..., None, :]), 0.0)
    # dead coordinates get a unit diagonal so that they are a harmless direction with z = 0
    eye = np.eye(m, dtype=bool)
    R = np.where(eye & ~live[..., :, None], 1.0, R)
    lam, V = np.linalg.eigh(R)
    c = np.einsum("...ij,...i->...j", V, z)
    keep = lam > rtol * np.maximum(lam[..., -1:], 1.0)
    t = np.sum(np.where(keep, c * c / np.where(keep, lam, 1.0), 0.0), axis=-1)
    norm = np.sqrt(np.sum(z * z, axis=-1))
    leak = np.any(~keep & (np.abs(c) > 1e-8 * np.maximum(norm, 1e-300)[..., None]), axis=-1)
    return np.where(leak | np.isinf(out), np.inf, t)


class TourT2:
    """Observed T² of one chain's tours for nested K, and its bootstrap-t replicates.

    Parameters
    ----------
    counts : numpy.ndarray, shape (R, Kmax)
        Visits to the ranked top states per whole tour (rank 0: δ, one visit per tour).
    q : numpy.ndarray, shape (Kmax,)
        exp(logp_i − logp_1) of the ranked states.
    ks : array_like of int
        Numbers of states K (2 ≤ K ≤ Kmax).
    """

    def __init__(self, counts, q, ks):
        counts = np.asarray(counts, dtype=float)
        self.ks = np.asarray(ks, dtype=np.int64)
        self.q = np.asarray(q, dtype=float)
        kmax = int(self.ks.max())
        if counts.ndim != 2 or counts.shape[1] < kmax:
            raise ValueError(f"`counts` must be (tours, >= {kmax}), got shape {counts.shape}.")
        if counts.shape[0] and not np.all(counts[:, 0] == 1):
            raise ValueError("rank 0 (the regeneration state) must be visited exactly once per whole tour.")
        types = tour_types(counts[:, 1:kmax].astype(np.int64), np.zeros(counts.shape[0], dtype=np.int64))
        self.R = counts.shape[0]
        self.y = types.counts.astype(float)  # (U, Kmax − 1) distinct visit vectors
        self.mult = types.mult.astype(float)
        self.prob = self.mult / max(self.R, 1)
        m = self.y.shape[1]
        self.yy = (self.y[:, :, None] * self.y[:, None, :]).reshape(-1, m * m)
        self.ybar = self.prob @ self.y
        self.mom2 = (self.prob @ self.yy).reshape(m, m)
        self.scale2 = np.maximum(np.diagonal(self.mom2), self.q[1:kmax] ** 2)
        #: states (ranks 1 … Kmax − 1) never visited in any whole tour
        self.unseen = self.ybar == 0

    def _stat(self, ybar, mom2, centre, n_tours):
        """T² for every K from the first moments (..., m) and second moments (..., m, m)."""
        out = []
        for K in self.ks:
            j = int(K) - 1
            yb = ybar[..., :j]
            S = mom2[..., :j, :j] - yb[..., :, None] * yb[..., None, :]
            out.append(n_tours * quadratic_form(yb - centre[:j], S, self.scale2[:j]))
        return np.stack(out)

    def observed(self):
        """T² against the known means q, shape (len(ks),)."""
        return self._stat(self.ybar, self.mom2, self.q[1:], self.R)

    def undecided(self):
        """Which K include a state never visited in any whole tour (no per-chain test), (len(ks),)."""
        first = np.flatnonzero(self.unseen)
        if first.size == 0:
            return np.zeros(self.ks.size, dtype=bool)
        return self.ks > first[0] + 1

    def replicates(self, size, rng):
        """Bootstrap-t replicates (len(ks), size): tours resampled, T²* about the observed ȳ.

        The Poisson bootstrap: each observed tour enters a replicate Poisson(1) times (so a tour
        type of multiplicity m, Poisson(m) times), R* = Σ of them. It is asymptotically the
        multinomial bootstrap of R tours, and costs one Poisson draw per tour *type* instead of
        a multinomial over hundreds of types.
        """
        m = self.y.shape[1]
        w = rng.poisson(self.mult, size=(int(size), self.mult.size)).astype(float)
        n = np.maximum(w.sum(axis=1), 1.0)
        s1 = w @ self.y
        s2 = w @ self.yy
        ybar = s1 / n[:, None]
        mom2 = (s2 / n[:, None]).reshape(size, m, m)
        return self._stat(ybar, mom2, self.ybar, n)


def tour_t2_test(counts, q, ks, *, n_rep=999, seed=0):
    """Per-chain T² of the visits per tour against their known means, with a bootstrap-t p-value.

    Parameters
    ----------
    counts : numpy.ndarray, shape (R, Kmax)
        Visits to the ranked top states per whole tour (rank 0: the regeneration state).
    q : numpy.ndarray, shape (Kmax,)
        Relative probabilities exp(logp_i − logp_1).
    ks : array_like of int
        Numbers of states K (2 ≤ K ≤ Kmax).
    n_rep : int
        Most bootstrap replicates (sequential stopping, :func:`sequential_p_values`).
    seed : int

    Returns
    -------
    t2, p_value : numpy.ndarray, shape (len(ks),)
        NaN with fewer than two tours, and for K that include a top state never visited in any
        whole tour (the chain carries no information on it: see ``undecided``).
    undecided : numpy.ndarray of bool, shape (len(ks),)
        K left without a test because a top state was never visited within whole tours.
    """
    ks = np.asarray(ks, dtype=np.int64)
    counts = np.asarray(counts, dtype=float)
    nan = np.full(ks.size, np.nan)
    if counts.shape[0] < 2:
        return nan, nan.copy(), np.zeros(ks.size, dtype=bool)
    test = TourT2(counts, q, ks)
    t2 = test.observed()
    undecided = test.undecided()
    observed = np.where(undecided, np.nan, t2)

    def draw(i, size):
        return test.replicates(size, np.random.default_rng(_batch_seed(seed, i)))

    p, _ = sequential_p_values(observed, draw, n_rep)
    return np.where(undecided, np.nan, t2), p, undecided
