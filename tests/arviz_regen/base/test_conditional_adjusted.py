"""The adjusted combination of :func:`arviz_regen.base.conditional.conditional_test`: one check less
its regression on the others, beside some checks as they are (Bonferroni).

(The test's level, power and batch lengths without it: ``tests/arviz_regen/diagnostics/test_conditional.py``;
this file has another name because pytest needs unique basenames.)
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.signal import lfilter

from arviz_regen.base.conditional import batch_lengths, conditional_test

#: a long-run covariance of four checks like the partition's at 2,000 items (n_clusters,
#: cluster_size, partner, log_post): cluster_size and log_post correlated +0.8
CORR = np.array([
    [1.0, 0.2, 0.1, 0.3],
    [0.2, 1.0, 0.4, 0.8],
    [0.1, 0.4, 1.0, 0.3],
    [0.3, 0.8, 0.3, 1.0],
])  # fmt: skip
CHOL = np.linalg.cholesky(CORR)
#: the partition's combination: log_post adjusted, n_clusters as it is
PLAN = {"adjusted": 3, "raw": [0]}


def _terms(rng, runs, chains=4, draws=1000, phi=0.0, burn=200):
    """``(runs, chains, draws, 4)`` stationary terms: AR(1) in time (``phi``), unit long-run variance,
    long-run correlation :data:`CORR` across checks."""
    e = rng.normal(size=(runs, chains, draws + burn, 4))
    if phi:
        e = lfilter([1.0 - phi], [1.0, -phi], e, axis=2)  # long-run variance of each coordinate: 1
    return e[:, :, burn:] @ CHOL.T


def _rate(p):
    return float(np.mean(np.asarray(p) < 0.05))


def test_residual_invariant_to_the_other_checks():
    """Adding multiples of the other checks to the adjusted one moves ``beta`` by them and leaves the
    residual, its t and p-value and every other check's test unchanged."""
    rng = np.random.default_rng(0)
    x = _terms(rng, 1)[0] + np.array([0.0, -0.01, 0.0, 0.03])
    y = x.copy()
    y[..., 3] += 2.5 * x[..., 0] - 0.7 * x[..., 1] + 10.0 * x[..., 2]
    a, b = (conditional_test(v, check_tau=[40.0, 120.0, 120.0, 120.0], **PLAN) for v in (x, y))
    np.testing.assert_allclose(b.beta - a.beta, [2.5, -0.7, 10.0], atol=1e-9)
    for field in ("adjusted_mean", "adjusted_t", "adjusted_p_value", "p_value_all"):
        assert getattr(b, field) == pytest.approx(getattr(a, field), rel=1e-9, abs=1e-12), field
    assert a.adjusted_df == b.adjusted_df and list(a.batch) == list(b.batch)
    np.testing.assert_allclose(a.p_value[:3], b.p_value[:3])
    assert a.combination == "adjusted" and a.adjusted == 3 and a.raw == (0,)
    assert a.p_value_all == pytest.approx(min(1.0, 2 * min(a.p_value[0], a.adjusted_p_value)))


def test_residual_t_scaling_and_df():
    """The residual's t uses the longest batch ``L``, variance ``L / (A - 4) sum (Y - Ybar)^2`` (the
    batch-means estimate times ``(A - 1) / (A - 4)``) and ``A - 4`` degrees of freedom."""
    rng = np.random.default_rng(1)
    x = _terms(rng, 1, phi=0.5)[0]
    res = conditional_test(x, check_tau=[10.0, 250.0, np.nan, 30.0], **PLAN)
    M, N, _ = x.shape
    L = int(res.batch.max())
    assert L == N // 4 and list(res.batch) == list(batch_lengths(x, check_tau=[10.0, 250.0, np.nan, 30.0]))
    r = x[..., 3] - x[..., :3] @ res.beta
    Y = r[:, : (N // L) * L].reshape(M, N // L, L).mean(axis=2).ravel()
    A = Y.size
    var = L * np.sum((Y - r.mean()) ** 2) / (A - 4)
    t = r.mean() / np.sqrt(var / (M * N))
    assert res.adjusted_df == A - 4 == 12
    assert res.adjusted_t == pytest.approx(t, rel=1e-10)
    assert res.adjusted_p_value == pytest.approx(2 * stats.t.sf(abs(t), A - 4), rel=1e-10)
    assert res.df == min(res.df_each[0], A - 4)
    # beta estimates the long-run regression of log_post on the others (from batches of sqrt(N))
    want = np.linalg.solve(CORR[:3, :3], CORR[:3, 3])
    np.testing.assert_allclose(res.beta, want, atol=0.15)
    # the cap: with min_batches = 8 every slow batch is at most N // 8
    eight = conditional_test(x, check_tau=[10.0, 250.0, np.nan, 30.0], min_batches=8, **PLAN)
    assert eight.batch.max() == N // 8 and eight.adjusted_df == 4 * 8 - 4


@pytest.mark.parametrize("phi, check_tau", [(0.0, [1e4] * 4), (0.6, None)])
def test_level(phi, check_tau):
    """On mean-zero terms with a known long-run covariance, 400 runs: the residual's test rejects at
    the rate its reference predicts and all checks together hold the level (3 binomial SEs).

    With independent batch means (white noise) the residual's batch-means t has Student's ``A - 1``
    degrees of freedom; scaled by ``sqrt((A - 1) / (A - 4))`` against ``t(A - 4)`` it rejects
    ``P(|t_{A-1}| > sqrt((A - 1)/(A - 4)) t_{A-4, 0.975})``: 2.7 % with ``A = 16`` (batches capped at a
    quarter of a chain, as at 2,000 items). Slow chains (AR(1), ``phi = 0.6``) get batches of twelve
    autocorrelation times and many of them: the residual's test then rejects about 5 %.
    """
    rng = np.random.default_rng(7)
    runs = 400
    x = _terms(rng, runs, phi=phi)
    res = [conditional_test(v, check_tau=check_tau, **PLAN) for v in x]
    se = np.sqrt(0.05 * 0.95 / runs)
    assert _rate([r.p_value_all for r in res]) < 0.05 + 3 * se
    if phi == 0.0:
        A = res[0].adjusted_df + 4
        crit = np.sqrt((A - 1) / (A - 4)) * stats.t.ppf(0.975, A - 4)
        want = 2 * stats.t.sf(crit, A - 1)
        got = _rate([r.adjusted_p_value for r in res])
        assert abs(got - want) < 3 * np.sqrt(want * (1 - want) / runs), (got, want, A)
    else:  # slow chains: batches of twelve autocorrelation times, the same level
        assert abs(_rate([r.adjusted_p_value for r in res]) - 0.05) < 3 * se


def test_power_in_the_joint_direction():
    """A shift of log_post's mean up and cluster_size's down (as NIG beta0 x 1.3 moves them at 2,000
    items): each check alone is 2 and -1 standard errors off, which the per-check Bonferroni
    combination sees in about a third of the runs; log_post less its regression on the others is 4.8 of its own standard
    errors off (beta = 0.15, 0.78, -0.03; residual SD 0.58 of log_post's). 200 runs, 16 batches."""
    rng = np.random.default_rng(11)
    runs, n = 200, 4 * 1000
    x = _terms(rng, runs) + np.array([0.0, -1.0, 0.0, 2.0]) / np.sqrt(n)
    tau = [50.0, 170.0, 170.0, 170.0]
    landed = _rate([conditional_test(v, check_tau=tau).p_value_all for v in x])
    adjusted = [conditional_test(v, check_tau=tau, **PLAN) for v in x]
    # after the (A - 1)/(A - 4) scaling about 4.3 against t(12)'s 2.56 at 0.0125
    power = _rate([r.p_value_all for r in adjusted])  # 94.5 % against 36 % (SE 3.4 at most)
    assert landed < 0.5 and power > 0.85 and power - landed > 0.4, (landed, power)
    assert np.median([r.adjusted_t for r in adjusted]) > 3.5
    np.testing.assert_allclose(np.mean([r.beta for r in adjusted], axis=0), [0.15, 0.78, -0.03], atol=0.05)


def test_degenerate_and_bad_arguments():
    rng = np.random.default_rng(3)
    x = _terms(rng, 1)[0]
    # the adjusted check equal to a combination of the others: its residual is zero
    y = x.copy()
    y[..., 3] = x[..., 0] - x[..., 1]
    res = conditional_test(y, check_tau=[5.0] * 4, **PLAN)
    assert res.adjusted_p_value == 1.0 and res.adjusted_t == 0.0
    # a regressor constant in every chain costs no degree of freedom
    z = x.copy()
    z[..., 2] = 0.0
    res = conditional_test(z, **PLAN)
    assert res.adjusted_df == res.df_each[3] - 2 and np.isfinite(res.p_value_all)
    # too few batches for the regression: the raw checks still decide
    few = conditional_test(rng.normal(size=(1, 8, 4)), **PLAN)
    assert np.isnan(few.adjusted_p_value) or few.adjusted_df >= 1
    # no raw check: the adjusted test alone
    alone = conditional_test(x, check_tau=[5.0] * 4, adjusted=3)
    assert alone.raw == () and alone.p_value_all == pytest.approx(alone.adjusted_p_value)
    for kwargs, match in (
        ({"adjusted": 4}, "adjusted"),
        ({"adjusted": 1.0}, "adjusted"),
        ({"adjusted": True}, "adjusted"),
        ({"adjusted": 3, "raw": [3]}, "raw"),
        ({"adjusted": 3, "raw": [0, 0]}, "raw"),
        ({"adjusted": 3, "raw": ["n_clusters"]}, "raw"),
        ({"raw": [0]}, "adjusted"),
        ({"min_batches": 1}, "min_batches"),
        ({"min_batches": 4.0}, "min_batches"),
    ):
        with pytest.raises(ValueError, match=match):
            conditional_test(x, **kwargs)
    with pytest.raises(ValueError, match="other checks"):
        conditional_test(x[..., :1], adjusted=0)
