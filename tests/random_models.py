"""Small partition models with random hyperparameters, for exactness tests (tests only)."""

from __future__ import annotations

import numpy as np
import pymc as pm

import pymc_partition as pmp

FAMILIES = ("nig", "niw", "bernoulli", "poisson", "spike")
PRIORS = ("dp", "py", "umd", "uniform", "mfm")


def all_partitions(n):
    """All canonical label vectors (restricted growth strings) of ``n`` items."""
    out = [[0]]
    for _ in range(n - 1):
        out = [p + [lab] for p in out for lab in range(max(p) + 2)]
    return np.array(out, dtype=np.int64)


def random_prior(kind, rng):
    if kind == "dp":
        return pmp.DirichletProcess(alpha=rng.uniform(0.3, 3.0))
    if kind == "py":
        return pmp.PitmanYor(alpha=rng.uniform(0.2, 2.0), d=rng.uniform(0.05, 0.7))
    if kind == "umd":
        return pmp.UniformMultinomialDirichlet()
    if kind == "uniform":
        return pmp.UniformPartition()
    if kind == "mfm":
        return pmp.MixtureOfFiniteMixtures("poisson", gamma=rng.uniform(0.5, 2.0),
                                           k_param=rng.uniform(1.0, 3.0))  # fmt: skip
    raise ValueError(kind)


def random_model(family, prior, n, seed):
    """``n`` items in two groups, ``family`` (one of :data:`FAMILIES`) and ``prior`` (one of
    :data:`PRIORS`) with hyperparameters drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    group = np.arange(n) < n // 2
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=n, prior=random_prior(prior, rng))
        if family == "nig":
            y = np.where(group, -1.5, 1.5)[:, None] + rng.normal(0, 1.0, (n, 2))
            fam = pmp.NormalInverseGamma(mu0=rng.normal(0, 1), kappa0=rng.uniform(0.2, 2.0),
                                         alpha0=rng.uniform(1.5, 4.0), beta0=rng.uniform(0.5, 2.0))  # fmt: skip
        elif family == "niw":
            y = np.where(group, -1.5, 1.5)[:, None] + rng.normal(0, 1.2, (n, 2))
            fam = pmp.NormalInverseWishart(mu0=rng.normal(0, 1, 2), kappa0=rng.uniform(0.2, 2.0),
                                           nu0=rng.uniform(3.0, 6.0),
                                           psi0=np.eye(2) * rng.uniform(0.5, 2.0))  # fmt: skip
        elif family == "bernoulli":
            y = (rng.random((n, 4)) < np.where(group, 0.2, 0.8)[:, None]).astype(float)
            fam = pmp.BetaBernoulli(a=rng.uniform(0.3, 3.0), b=rng.uniform(0.3, 3.0))
        elif family == "poisson":
            y = rng.poisson(np.where(group, 1.0, 5.0)[:, None], (n, 2)).astype(float)
            fam = pmp.GammaPoisson(a=rng.uniform(0.5, 3.0), b=rng.uniform(0.3, 2.0))
        elif family == "spike":
            y = np.where(group, -1.0, 1.0)[:, None] + rng.normal(0, 0.7, (n, 2))
            fam = pmp.SpikeSlabNormal(mu=0.0, sigma2=rng.uniform(0.3, 1.0), sigma2_eta=0.3,
                                      sigma2_theta=rng.uniform(1.0, 5.0), p=rng.uniform(0.1, 0.5))  # fmt: skip
        else:  # pragma: no cover
            raise ValueError(family)
        pmp.MarginalLikelihood("y", partition=z, family=fam, observed=y)
    return model


def tempered_log_posterior(spec, states, beta):
    """``log pi(z) + beta log L(z)`` of canonical ``states (S, n)``: the target of a copy at
    likelihood power ``beta`` (the prior from ``spec``'s tables, ``L`` the rest of its posterior)."""
    n_c = states.max(axis=1) + 1
    sizes = np.stack([np.bincount(z, minlength=states.shape[1]) for z in states])
    log_prior = spec.log_g[n_c] + np.where(sizes > 0, spec.log_h[sizes], 0.0).sum(axis=1)
    return log_prior + beta * (spec.log_posterior(states) - log_prior)


def step_chain(step, model, seed, n):
    """Labels ``(n, n_items)`` of ``n`` steps of a partition step from the model's initial point,
    the chain started with ``setup_chain`` on a generator seeded with ``seed``."""
    step.setup_chain(np.random.default_rng(seed), 0, n)
    point, out = model.initial_point(), []
    for _ in range(n):
        point, _ = step.step(point)
        out.append(point["z"])
    return np.array(out)


def point_function(model, output):
    """A graph of ``model``'s value variables as a function of a point (a dict, as
    ``model.compile_logp`` takes), run by pytensor's Python linker: the model's own graph
    evaluated without compiling it. With the C backend, the gradient graphs of the families and
    priors cost minutes of compiler CPU in a fresh environment."""
    from pymc_partition._pytensor_modes import python_function

    fn = python_function(model.value_vars, [output])
    return lambda point: fn(*[point[v.name] for v in model.value_vars])[0]


def value_of(expr):
    """The value of a graph without inputs (``expr.eval()`` without compiling it)."""
    from pymc_partition._pytensor_modes import python_function

    return python_function([], [expr])()[0]
