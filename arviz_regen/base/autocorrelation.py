"""Integrated autocorrelation time of one chain's scalar trace (numpy core).

τ = 1 + 2 Σ_{k≥1} ρ_k, estimated as Stan and ArviZ estimate the effective sample size
(Geyer 1992): autocorrelations from the FFT of the centred trace, summed in pairs
Γ_m = ρ_{2m} + ρ_{2m+1} up to the first negative pair, the pairs made non-increasing (the
initial monotone sequence). n/τ is the chain's effective sample size. It is the within-chain
time only (no between-chain variance): the batch length of the chain-agreement test is set from
it, so chains trapped in different modes, each mixing well inside its own, keep long enough
batches for their disagreement to show.
"""

from __future__ import annotations

import numpy as np

__all__ = ["integrated_time"]


def _autocorrelation(x):
    """Autocorrelations ρ_0 … ρ_{n−1} of the rows of ``x`` (…, n) by FFT (ρ_0 = 1; NaN if constant)."""
    n = x.shape[-1]
    xc = x - x.mean(axis=-1, keepdims=True)
    size = 1 << int(np.ceil(np.log2(2 * n)))
    f = np.fft.rfft(xc, n=size, axis=-1)
    acov = np.fft.irfft(f * np.conj(f), n=size, axis=-1)[..., :n] / n
    with np.errstate(invalid="ignore", divide="ignore"):
        return acov / acov[..., :1]


def integrated_time(x):
    """Integrated autocorrelation time of each row of ``x`` (…, n_draw): Geyer's initial monotone sequence.

    Parameters
    ----------
    x : array_like, shape (..., n_draw)
        Scalar traces, one chain per row.

    Returns
    -------
    numpy.ndarray, shape x.shape[:-1]
        τ (below 1 for antithetic chains); NaN for a constant trace or fewer than 4 draws.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> e = rng.normal(size=200_000)
    >>> x = np.empty_like(e); x[0] = e[0]
    >>> for t in range(1, e.size): x[t] = 0.9 * x[t - 1] + e[t]  # AR(1): τ = 1.9 / 0.1 = 19
    >>> bool(17 < integrated_time(x) < 21)
    True
    """
    x = np.asarray(x, dtype=float)
    lead = x.shape[:-1]
    n = x.shape[-1]
    flat = x.reshape(-1, n)
    out = np.full(flat.shape[0], np.nan)
    if n < 4:
        return out.reshape(lead)
    rho = _autocorrelation(flat)
    n_pairs = n // 2
    for i in range(flat.shape[0]):
        r = rho[i]
        if not np.isfinite(r[0]):
            continue
        gam = r[0 : 2 * n_pairs : 2] + r[1 : 2 * n_pairs : 2]
        neg = np.flatnonzero(gam < 0)
        m = neg[0] if neg.size else gam.size
        g = np.minimum.accumulate(gam[:m])
        out[i] = -1.0 + 2.0 * g.sum()
    return out.reshape(lead)
