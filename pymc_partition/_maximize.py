"""Maximum of a log-likelihood with an exact gradient, and its observed information.

Shared by the empirical-Bayes fits (:func:`pymc_partition.fit_hyperparameters` and its special
case :func:`pymc_partition.fit_spike_slab`): trust-region Newton with the Hessian differentiated
numerically from the exact gradient (quasi-Newton if that fails), a few safeguarded Newton steps
to polish, and the covariance of the estimates from the observed information.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.optimize

__all__ = ["Objective", "Optimum", "maximize", "hessian_from_gradient"]


def hessian_from_gradient(grad, x, rel_step=1e-3):
    """Hessian by central differences of an exact gradient, Richardson-extrapolated.

    ``D(h) = (g(x + h e_i) - g(x - h e_i)) / 2h`` has error ``O(h^2)``; ``(4 D(h/2) - D(h)) / 3``
    has ``O(h^4)``: with ``h = 1e-3 (1 + |x_i|)`` about ``1e-12`` plus rounding ``eps / h``.
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    H = np.empty((k, k))
    for i in range(k):
        h = rel_step * (1.0 + abs(x[i]))
        e = np.zeros(k)
        e[i] = 1.0

        def d(step, e=e):
            return (grad(x + step * e) - grad(x - step * e)) / (2 * step)

        H[:, i] = (4 * d(h / 2) - d(h)) / 3
    return (H + H.T) / 2


class Objective:
    """Negative log-likelihood, gradient and Hessian of ``fn(x) -> (loglik, gradient)``, memoized on the last point."""

    def __init__(self, fn):
        self.fn = fn
        self._x = self._out = self._hx = self._h = None

    def _eval(self, x):
        x = np.asarray(x, dtype=float)
        if self._x is None or not np.array_equal(x, self._x):
            with np.errstate(all="ignore"):
                ll, g = self.fn(x)
            self._x, self._out = x.copy(), (float(ll), np.asarray(g, dtype=float))
        return self._out

    def _grad(self, x):
        with np.errstate(all="ignore"):
            return np.asarray(self.fn(x)[1], dtype=float)

    def fun(self, x):
        ll = self._eval(x)[0]
        return -ll if np.isfinite(ll) else np.inf

    def jac(self, x):
        return -self._eval(x)[1]

    def hess(self, x):
        x = np.asarray(x, dtype=float)
        if self._hx is None or not np.array_equal(x, self._hx):
            self._hx, self._h = x.copy(), -hessian_from_gradient(self._grad, x)
        return self._h


def newton_polish(obj, x, max_steps=8):
    """Take a few safeguarded Newton steps on the negative log-likelihood."""
    steps = 0
    for _ in range(max_steps):
        f0, g, H = obj.fun(x), obj.jac(x), obj.hess(x)
        if np.max(np.abs(g)) < 1e-10:
            break
        try:
            np.linalg.cholesky(H)
        except np.linalg.LinAlgError:
            break
        step = np.linalg.solve(H, g)
        t = 1.0
        while t > 1e-4:
            x_new = x - t * step
            if obj.fun(x_new) <= f0 + 1e-12 * abs(f0):
                break
            t /= 2
        else:
            break
        x = x_new
        steps += 1
    return x, steps


@dataclass(frozen=True, eq=False)
class Optimum:
    """Where :func:`maximize` ended.

    Point, log-likelihood, gradient, Hessian (of the log-likelihood), covariance (inverse observed information, NaN if
    not positive definite).
    """

    x: np.ndarray
    loglik: float
    gradient: np.ndarray
    hessian: np.ndarray
    covariance: np.ndarray
    positive_definite: bool
    converged: bool
    n_iter: int
    message: str


def maximize(obj, x0, *, gtol=1e-6, maxiter=200, describe=str):
    """Maximize the log-likelihood of ``obj`` (an :class:`Objective`) from ``x0``.

    ``describe(x)`` turns a point into words for error messages. Raises RuntimeError when no
    finite optimum is reached; warns (RuntimeWarning) when the Hessian there is not negative
    definite (the covariance is then NaN).
    """
    x0 = np.asarray(x0, dtype=float)
    if not np.isfinite(obj.fun(x0)):
        raise RuntimeError(f"The log-likelihood is not finite at the starting point {describe(x0)}.")
    try:
        res = scipy.optimize.minimize(
            obj.fun, x0, jac=obj.jac, hess=obj.hess, method="trust-exact",
            options={"gtol": gtol, "maxiter": maxiter},
        )  # fmt: skip
    except (ValueError, np.linalg.LinAlgError):  # pragma: no cover - defensive
        res = None
    if res is None or not np.all(np.isfinite(res.x)) or not np.isfinite(res.fun):
        res = scipy.optimize.minimize(obj.fun, x0, jac=obj.jac, method="L-BFGS-B", options={"maxiter": 10 * maxiter})
    if not np.all(np.isfinite(res.x)) or not np.isfinite(res.fun):
        raise RuntimeError(f"The optimization failed: {res.message} (last point {describe(res.x)}).")
    x, n_polish = newton_polish(obj, np.asarray(res.x, dtype=float))
    ll, g = obj._eval(x)
    H = -obj.hess(x)
    if not (np.isfinite(ll) and np.all(np.isfinite(g)) and np.all(np.isfinite(H))):
        raise RuntimeError(f"The optimization ended at a non-finite point: {describe(x)} ({res.message}).")
    info = -np.asarray(H)
    try:
        np.linalg.cholesky(info)
        cov, pd = np.linalg.inv(info), True
    except np.linalg.LinAlgError:
        cov, pd = np.full(info.shape, np.nan), False
        warnings.warn(
            "The Hessian of the log-likelihood at the optimum is not negative definite "
            f"(eigenvalues of the observed information: {np.linalg.eigvalsh(info)}); the point "
            "may be a saddle or a flat ridge and the standard errors are NaN.",
            RuntimeWarning,
            stacklevel=3,
        )
    grad_ok = float(np.max(np.abs(g))) < max(1e-3, 1e-6 * abs(ll))
    return Optimum(
        x=x, loglik=float(ll), gradient=np.asarray(g, dtype=float), hessian=np.asarray(H, dtype=float),
        covariance=cov, positive_definite=pd, converged=bool(pd and grad_ok),
        n_iter=int(getattr(res, "nit", 0)) + n_polish, message=str(res.message),
    )  # fmt: skip
