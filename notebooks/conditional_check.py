# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The conditional check: a wrong posterior that R-hat cannot see, at 200 items
#
# Chains can mix well, agree with each other and still sample the wrong posterior: a
# hyperparameter that is not the model's, an off-by-one in a sampler's weight, a tempered target.
# R-hat, ESS and chain agreement look at the chains alone and pass them. From a few dozen items
# on no partition recurs, so Hotelling-RS (which compares visits to the top states with their
# posterior probabilities) has nothing to count either. The conditional check does: for each
# item `i` and a function `f` of the partition,
#
# $$\sum_k \pi(c_i = k \mid c_{-i})\, f(c^{i\to k}) - f(c)$$
#
# has mean zero under the posterior $\pi$ (one Gibbs update of `i` leaves $\pi$ invariant),
# whatever sampler produced the draw $c$. `pmp.compute_conditional_checks(idata, model=model)`
# computes these terms for four functions (number of clusters, squared cluster sizes, a partner
# item, the log posterior), over a random half of the items per draw, and `regen_summary` tests
# them beside R-hat, ESS, chain agreement and Hotelling-RS. The maths is in
# `docs/maths/conditional_check.md`; the simulations behind the table at the end are
# `benchmarks/bench_conditional_check.py` and `benchmarks/bench_verdict_calibration.py`.
#
# This notebook is paired with `conditional_check.ipynb` (jupytext); it runs in about a minute.

# %%
import numpy as np
import pymc as pm

import arviz_regen
import pymc_partition as pmp

rng = np.random.default_rng(0)
y = np.sort(np.repeat([-4.0, 0.0, 4.0], 67)[:200]) + rng.normal(0, 1, 200)


def clustering_model(alpha):
    """200 items, DP(alpha) prior, normal-inverse-gamma family."""
    with pm.Model() as model:
        z = pmp.Partition("z", n_items=200, prior=pmp.DirichletProcess(alpha))
        pmp.MarginalLikelihood("y", partition=z, observed=y,
                               family=pmp.NormalInverseGamma(0.0, 0.1, 2.0, 2.0))
    return model


model = clustering_model(1.0)  # the model the draws should follow

# %% [markdown]
# ## Two samplers that mix equally well
#
# Exact Gibbs on the model, and Gibbs on a slightly wrong posterior: DP α = 1.1 instead of 1.

# %%
runs = {}
for name, alpha in {"exact Gibbs": 1.0, "Gibbs of a wrong posterior (DP 1.1)": 1.1}.items():
    with clustering_model(alpha):
        runs[name] = pm.sample(draws=5_000, tune=200, chains=4, random_seed=1, progressbar=False,
                               compute_convergence_checks=False)
    pmp.compute_conditional_checks(runs[name], model=model)  # adds the conditional_checks group

# %% [markdown]
# ## The verdict
#
# R-hat at most 1.01, about a thousand effective draws and chain agreement pass for both; only the
# conditional check separates them.

# %%
for name, idata in runs.items():
    table = arviz_regen.regen_summary(idata, var_names="z")
    print(f"{name}\n{table[['ess_bulk', 'r_hat', 'p_value_all']].round(3).to_string()}")
    print(table.attrs["verdict"][:150], "...\n")

# %% [markdown]
# Per test function: the mean of its terms (zero under the model's posterior) and its p-value.
# The number of clusters carries the DP's α; the log posterior carries the family's
# hyperparameters.

# %%
import pandas as pd

wrong = runs["Gibbs of a wrong posterior (DP 1.1)"]
pd.DataFrame({kind: arviz_regen.conditional_check(wrong, kind=kind)["z"].to_series()
              for kind in ("mean", "mcse", "p_value")})

# %% [markdown]
# ## Calibration
#
# % of runs rejected at α = 0.05 ± binomial SE, half the items per draw (the default), each
# check's batches at least four times its test function's autocorrelation time (`check_tau`, at most
# an eighth of a chain), `log_post` less its regression on the other checks tested beside
# `n_clusters` (Bonferroni). Levels pool session 12's saved runs, re-scored, with fresh runs; power
# rows are fresh runs only, generated after the rule was chosen (`benchmarks/bench_conditional_check.py`;
# the full tables, with the rules before and the verdict's rows, are in `docs/guides/diagnostic.md`):
#
# | design (correct samplers: level; wrong ones: power) | runs | conditional check |
# |---|---|---|
# | 8 items, independent exact draws, 4 x 1,000 | 1,300 | 5.7 ± 0.6 |
# | 8 items, exact Gibbs, 4 x 1,000 | 1,300 | 5.0 ± 0.6 |
# | 8 items, sticky Gibbs (hold 0.9), 4 x 2,000 | 1,300 | 5.7 ± 0.6 |
# | 8 items, exact Gibbs, one chain of 1,000 | 1,300 | 5.0 ± 0.6 |
# | 200 items, Gibbs of the right model, 4 x 1,000 | 1,400 | 5.0 ± 0.6 |
# | 200 items, DP α x 1.1 (Δ clusters +0.29 of 6.76) | 60 | 86.7 ± 4.4 |
# | 200 items, DP α x 1.3 (saved runs) | 100 | 100 |
# | 200 items, NIG β0 x 1.3 | 60 | 100 |
# | 2,000 items, Gibbs of the right model, 4 x 1,000 | 714 | 3.9 ± 0.7 |
# | 2,000 items, DP α x 1.1 | 71 | 90.1 ± 3.5 |
# | 2,000 items, NIG β0 x 1.3 (half a cluster) | 71 | 97.2 ± 2.0 |
