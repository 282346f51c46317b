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
# # A convergence diagnostic for Bayesian clustering: the Arabidopsis illustration
#
# **Start with the conditional check** (`conditional_check.ipynb` beside this notebook): at any
# number of items it tests whether the draws follow *this* model's posterior, from the draws and
# the model alone (`pmp.compute_conditional_checks(idata, model=model)`, then `regen_summary`).
# At 200 items, where no partition recurs and Hotelling-RS has nothing to count, it rejects a
# sampler of DP α off by 10 % that R-hat, ESS and chain agreement pass; on correct samplers it
# holds its level (the calibration table is there). This notebook shows the other half: where
# states recur (14 items), Hotelling-RS compares the visits to the top states with their
# posterior probabilities.
#
# This notebook reproduces section 4 of Asgharian, Lysy & Partovi Nia (2019), *A Convergence
# Diagnostic for Bayesian Clustering*, with `pymc_partition` (Bayesian clustering in PyMC) and
# `arviz_regen` (the Hotelling-RS diagnostic, in ArviZ style):
#
# 1. **Data and model**: metabolite profiles of 14 *Arabidopsis thaliana* mutants (Messerli et al.
#    2007), clustered with the paper's spike-and-slab model, its hyperparameters fitted by
#    empirical Bayes (EB).
# 2. **The exact posterior** over all $B(14) \approx 1.9\times 10^8$ partitions: cumulative
#    probability of the states and the co-clustering matrix (the paper's Figure 1), under each
#    reading of the paper's prior.
# 3. **Three MCMC samplers**, 50,000 iterations each: collapsed Gibbs, a deliberately badly mixing
#    split-merge sampler, and a Gibbs sampler with a plausible bug (an off-by-one in its
#    new-cluster weight), diagnosed by (a) the absolute error of the co-clustering estimates
#    against the exact values, (b) their coefficient of variation and (c) the Hotelling-RS p-values
#    for $K = 2, 3, 5, 10$ (the paper's Figure 2).
# 4. **What we find against what the paper reports.**
#
# What the diagnostic is for: the buggy sampler mixes as well as Gibbs and its chains agree with
# each other, so R-hat, ESS and the CV of Figure 2b all look fine; it has converged, to the wrong
# posterior. Hotelling-RS compares the chains' visits with the posterior probabilities the model
# assigns to the states it visits, and rejects it. That is the paper's Figure 2 message (an
# estimate that has converged to the wrong value), reproduced in section 7.
#
# The outputs committed with this notebook come from a full run on the real data. This file is
# the notebook's source (`notebooks/arabidopsis_convergence.py`, jupytext percent format, paired
# with the `.ipynb`); `python notebooks/_build_notebook.py --execute` runs it into the `.ipynb`.
# The test suite runs it top to bottom with fewer draws (`PMP_NOTEBOOK_DRAWS=2000`) and, where the
# data file is absent, on simulated data. The paper's numbers and the code shared with the main
# job (`pymc-partition-demo`) live in `pymc_partition.paper`.

# %% [markdown]
# ## Parameters
#
# Read from environment variables so that the same notebook serves the full run and the tests.
# The data are the R package **bclust**'s data set `gaelle`, exported to CSV (see the README or
# `pymc_partition.datasets.load_arabidopsis` for the two lines of R); the project does not ship
# them. `pmp.datasets.arabidopsis_path()` finds the file as the demo, tests and benchmarks do:
# the environment variable `PMP_ARABIDOPSIS_CSV`, else `../shared/data/` beside the clone.

# %%
import os

import pymc_partition as pmp
from pymc_partition.paper import constants

DRAWS = int(os.environ.get("PMP_NOTEBOOK_DRAWS", constants.DRAWS))  # iterations per chain and sampler
CHAINS = int(os.environ.get("PMP_NOTEBOOK_CHAINS", constants.CHAINS))
DATA_PATH = pmp.datasets.arabidopsis_path()  # None: not found, simulated data instead
SEED = constants.SEED
K = list(constants.K_VALUES)  # Hotelling-RS: the K most probable states
DPI = 80  # resolution of the embedded figures
print(f"DRAWS={DRAWS:,}, CHAINS={CHAINS}, DATA_PATH={str(DATA_PATH) if DATA_PATH else None!r}")

# %%
import logging
import time

import arviz as az
import matplotlib.pyplot as plt
import pandas as pd
import pymc as pm
import xarray as xr

import arviz_regen  # registers az.hotelling_rs and friends
from pymc_partition.exact import exact_posterior
from pymc_partition.paper import comparison, figures, readings, workflow

logging.getLogger("pymc").setLevel(logging.WARNING)  # no "Sequential sampling ..." messages
print(f"pymc {pm.__version__}, arviz {az.__version__}, pymc_partition {pmp.__version__}")

# %% [markdown]
# ## 1. Data
#
# 55 rows (14 mutants × 4 replicates, `ColWT` has 3) of 43 metabolites. `item_index` says which
# mutant each row belongs to: the model clusters mutants, not rows. If the CSV is missing we fall
# back to data simulated from the paper's fitted model, with the same shape, so that the notebook
# still runs (the numbers below are then *not* the paper's).

# %%
REAL_DATA = DATA_PATH is not None
data = workflow.load_data(DATA_PATH, random_seed=SEED)
if REAL_DATA:
    print(f"Arabidopsis data from {DATA_PATH}")
else:
    print(
        "NOTE: no Arabidopsis CSV found, so this run uses data SIMULATED from the paper's fitted "
        "model (same shape); the comparisons with the paper below do not apply."
    )
print(data)
print("items:", ", ".join(data.item_names))

# %% [markdown]
# ## 2. Empirical Bayes
#
# The hyperparameters $(\mu, \sigma^2, \sigma^2_\eta, \sigma^2_\theta, p)$ of the spike-and-slab
# model maximize the marginal likelihood of the all-singletons allocation; standard errors come from
# the observed information and the delta method. Beside them, the paper's table (section 4.1),
# compared to its printed precision (on simulated data: the values the data were simulated from).

# %%
t0 = time.perf_counter()
eb = pmp.fit_spike_slab(data.values, data.item_index)
print(f"converged={eb.converged}, log-likelihood {eb.log_likelihood:.2f}, {time.perf_counter() - t0:.1f} s")
eb_comparison = comparison.compare_eb(eb) if REAL_DATA else None
eb_comparison if REAL_DATA else comparison.compare_with_truth(eb, constants.EB_HYPERPARAMETERS)

# %% [markdown]
# ## 3. The model
#
# A partition of the 14 mutants is a PyMC variable, `pmp.Partition`, with the paper's prior. The
# paper's text: the number of clusters is uniform on $1..N$ and the cluster totals given it are
# uniform multinomial-Dirichlet, which gives its printed formula
# $(K-1)!\,\prod_k N_k! / (N (N+K-1)!)$ for a *labelled* allocation into $K$ components, some
# possibly empty. Summed over the labellings of each partition and over $K$, this is a mixture of
# finite mixtures (Miller & Harrison 2018) with $K$ uniform on $1..N$ and Dirichlet(1) weights,
# `pmp.MixtureOfFiniteMixtures(k_prior="uniform", gamma=1.0)`: the prior we use as the paper's.
# (Section 4 compares it with other readings.) The data enter through the closed-form marginal
# likelihood of the spike-and-slab model, so the model's logp is the exact unnormalized log
# posterior of the partition.

# %%
prior = readings.paper_prior()
print("the paper's prior:", prior)
with pm.Model() as model:
    z = pmp.Partition("z", n_items=data.n_items, prior=prior)
    pmp.MarginalLikelihood(
        "y", partition=z, family=pmp.SpikeSlabNormal(**eb.estimates),
        observed=data.values, item_index=data.item_index,
    )  # fmt: skip
model

# %% [markdown]
# ## 4. The exact posterior (Figure 1)
#
# With 14 items the posterior can be computed exactly: the normalizing constant and the
# co-clustering matrix $\rho_{ij} = P(z_i = z_j \mid y)$ by a dynamic program over the $2^{14}$
# subsets, and the most probable partitions by enumerating all $B(14)$ of them (a few seconds).
# These exact values are the ground truth the samplers are judged against.

# %%
t0 = time.perf_counter()
exact = exact_posterior(model, top_k=1000, progressbar=False)
top_labels, top_probs = exact.top(1000)
print(f"{exact.n_states:,} partitions, log Z = {exact.log_z:.3f} ({time.perf_counter() - t0:.1f} s)")
print(f"MAP probability {top_probs[0]:.3f}; top-10 mass {top_probs[:10].sum():.3f}; "
      f"top-1000 mass {top_probs.sum():.3f}")  # fmt: skip
workflow.top_partitions(exact, data.item_names)

# %% [markdown]
# **Figure 1.** Left: cumulative probability of the partitions by decreasing posterior probability
# (the leftmost point is the MAP probability). Right: exact co-clustering probabilities of all pairs
# with $\rho_{ij} > 0.05$, split into the contribution of the 10 most probable partitions (black) and
# of all the others (red), as in the paper. Below, the whole co-clustering matrix as a heat map.

# %%
fig = figures.figure1(exact, data.item_names, n_states=1000, dpi=DPI)
plt.show()
fig = figures.coclustering_matrix(exact, data.item_names, dpi=DPI)
plt.show()

# %% [markdown]
# ### The paper's prior, read several ways
#
# Read directly as a prior on partitions (`UniformMultinomialDirichlet`), the printed formula
# is not uniform on the number of clusters $C$: summed over the partitions with $C$ blocks it
# gives the prior $P(C)$ below, which favours few clusters. The mixture of finite mixtures of
# section 3 is uniform on the number of *components* $K$, not on the number $C$ of non-empty
# clusters. A third reading makes $P(C) = 1/N$ hold exactly (uniform $C$, uniform over the
# compositions of $N$ into $C$ positive sizes, uniform over the allocations with those sizes:
# $\pi(z) \propto C!\,(C-1)!\,(N-C)!\,\prod_c n_c!$,
# `pymc_partition.paper.readings.UniformClusterCount`); a Dirichlet process is shown for scale.
# The exact posterior of the same data under each, beside the paper's MAP probability and top-10
# mass:

# %%
reading_numbers, _ = workflow.exact_under_readings(data, eb.estimates)
comparison.readings_table(reading_numbers, paper=REAL_DATA)

# %% [markdown]
# ## 5. Two samplers, 50,000 iterations each
#
# Both step methods are exact: each leaves the posterior invariant. They differ only in how fast
# they explore it.
#
# * `pmp.GibbsPartition`: collapsed Gibbs, one sweep per iteration, each mutant in random order
#   drawn from its full conditional over the existing clusters and a new one.
# * `pmp.SplitMerge.badly_mixing()`: the Jain & Neal (2004) split-merge sampler with a mix of moves
#   deliberately chosen to mix badly (the paper's "balance between singleton and group updates
#   deliberately tuned to achieve poor mixing"). Its parameters are `pmp.SplitMerge.BADLY_MIXING`.
#
# `tune=0`: there is nothing to tune, and the diagnostics use whole regeneration tours, so no
# burn-in needs discarding. Progress bars are off to keep the notebook small.

# %%
print("BADLY_MIXING =", pmp.SplitMerge.BADLY_MIXING)
idatas, seconds = workflow.sample_both(model, z, draws=DRAWS, chains=CHAINS, random_seed=SEED, progressbar=False)
for name in idatas:
    print(f"{name}: {CHAINS} chains x {DRAWS:,} draws in {seconds[name]:.1f} s")
xr.Dataset({k: idatas["split_merge"].sample_stats[k] for k in ["partition_logp", "n_clusters", "proposal", "proposal_accepted"]})

# %% [markdown]
# ### 5b. A third sampler, with a plausible bug
#
# Collapsed Gibbs for a mixture of finite mixtures puts a mutant in a new cluster with weight
# $\gamma\,V_n(t+1)/V_n(t)$, $t$ the number of clusters of the other mutants (Miller & Harrison
# 2018). Reading the table one entry too far, $V_n(t+2)/V_n(t+1)$, is an off-by-one of the usual
# kind: every update is still a valid Gibbs update of *some* posterior, the chain mixes as fast as
# the right one, and its chains agree with each other. It is exactly the Gibbs sampler of the
# prior whose $\log g(C)$ is the paper prior's shifted by one entry
# (`pymc_partition.paper.bug.OffByOneNewCluster`), so `GibbsPartition` on that model runs it. Its
# draws record the *right* model's log posterior as `partition_logp`, as a sampler that scores its
# states with the model's logp would. This sampler is part of the demonstration only
# (`pymc_partition.paper.bug`), not of the package's API.

# %%
from pymc_partition.paper import bug

idatas["off_by_one"], seconds["off_by_one"] = bug.sample_off_by_one(
    data, eb.estimates, draws=DRAWS, chains=CHAINS, random_seed=SEED, progressbar=False
)
wrong_exact = exact_posterior(workflow.build_model(data, eb.estimates, prior=bug.OffByOneNewCluster())[0],
                              top_k=1000, progressbar=False)  # fmt: skip
print(f"off_by_one: {CHAINS} chains x {DRAWS:,} draws in {seconds['off_by_one']:.1f} s")
print(f"MAP probability: {exact.top(1)[1][0]:.3f} under the model, {wrong_exact.top(1)[1][0]:.3f} under what the "
      f"buggy sampler targets; total variation between the two over their top 1,000 partitions "
      f"{bug.total_variation(exact, wrong_exact):.3f}")  # fmt: skip

# %% [markdown]
# ## 6. Convergence tables
#
# `az.hotelling_rs` (registered by `import arviz_regen`) tests whether the visit frequencies of
# the $K$ most probable visited states match their known relative posterior probabilities
# (ratios of `exp(partition_logp)`), using regenerative tours that start and end at the most
# probable state. Small p-values mean the chains have not converged *on the posterior*, whether
# they are still exploring or have settled on something else. `p_value_all` is the verdict for all
# chains: their pooled tours, their agreement with each other and equal recurrence of the
# regeneration state, combined; compare it, not the minimum over chains, with α. Per chain,
# `p_value` (default `method="bootstrap"`: T² of the visits per tour against their known means,
# calibrated by a bootstrap-t of the chain's own tours) holds its level also when the top states
# are reached only through a few long excursions; `method="chi2"` is the paper's χ² limit.
#
# `arviz_regen.regen_summary` puts the verdict beside ArviZ's rank-normalized R-hat and ESS of
# scalar traces: the number of clusters, the log posterior, and the distances (VI, Binder) of
# every draw to two reference partitions, which see which mutants cluster together. Its last line
# (`table.attrs["verdict"]`) says PASS, FAIL or NOT REACHED and which test decided: here
# Hotelling-RS, because the states recur. Warnings (e.g. a top state visited in too few tours)
# are shown as they come.

# %%
hot = {name: az.hotelling_rs(idata, var_names="z", k=K) for name, idata in idatas.items()}
hot["off_by_one"]

# %%
summaries = {name: arviz_regen.regen_summary(idata, var_names="z", k=K) for name, idata in idatas.items()}
for name, table in summaries.items():
    print(f"{workflow.SAMPLER_LABELS[name]:28s} {table.attrs['verdict']}")
pd.concat(summaries, names=["sampler", "statistic"])

# %% [markdown]
# ## 7. Diagnostics along the iterations (Figure 2)
#
# For each sampler and chain, computed cumulatively along the draws from the regeneration tours
# completed so far:
#
# * (a) absolute error $|\hat\rho_{ij} - \rho_{ij}|$ of the regenerative-sampling estimate of every
#   co-clustering probability against its exact value;
# * (b) $\mathrm{CV}_{ij} = \mathrm{se}(\hat\rho_{ij}) / \max(\hat\rho_{ij}, 1 - \hat\rho_{ij})$, the
#   Jones et al. (2006) style criterion (dashed line: 5%);
# * (c) the Hotelling-RS p-value for $K = 2, 3, 5, 10$ (dashed line: 0.05), each point computed from
#   the draws so far only; the thick lines are the all-chains verdict.
#
# Which sampler is which: the first row is Gibbs (exact, mixes well), the second the badly mixing
# split-merge sampler (exact, mixes slowly), the third Gibbs with the off-by-one bug (mixes well,
# wrong target). Without the exact posterior, which a user never has, only panels (b) and (c)
# are available: (b) cannot tell the third row from the first, (c) can.

# %%
diags = {name: workflow.convergence_diagnostics(idata, exact.coclustering, k=K) for name, idata in idatas.items()}
fig = figures.figure2(diags, dpi=DPI)
plt.show()

# %% [markdown]
# The same numbers at the end of the chains (worst chain for errors and CV; for the p-values
# `p_value_all`, the all-chains verdict):

# %%
diag_table = workflow.diagnostics_table(diags, seconds=seconds, idatas=idatas)
diag_table.T

# %% [markdown]
# ## 7b. When could we have stopped? (the paper's open problem)
#
# `arviz_regen.StopWhenConverged` is a `pm.sample` callback: at a geometric grid of draws
# (1,000, 1,500, 2,250, …) it looks at the draws so far, without look-ahead, and stops sampling
# once the co-clustering probabilities are known to the requested precision (here: every 95%
# half-width at most 0.01, from regenerative standard errors of the pooled chains) *and* the
# all-chains Hotelling-RS verdict has never flagged the chains. The verdict's level is spent over
# the checkpoints (Bonferroni), so a correct sampler is ever flagged with probability at most
# α = 0.05 over the whole run. `when_converged` replays the same rule on chains already drawn:

# %%
stops = {name: arviz_regen.when_converged(idata, var_names="z", epsilon=0.01, k=[2, 5]) for name, idata in idatas.items()}
pd.DataFrame(
    {
        name: {
            "decision": h.attrs["status"], "stopped at (draws/chain)": h.attrs["stopped_at"],
            "checkpoints looked at": h.sizes["checkpoint"], "last half-width": float(h.precision.values[-1]),
            "smallest p_value_all": float(h.p_value_all.min()),
        }  # fmt: skip
        for name, h in stops.items()
    }
).T

# %% [markdown]
# Gibbs reaches the precision after a few thousand draws per chain, far fewer than 50,000. The
# deliberately badly mixing split-merge sampler is not declared converged: at 20,000 draws, where
# its CV of section 7 already looks fine, its regenerative half-widths are still several times the
# target, because its tours are long and few. Used as a callback,
# `pm.sample(draws=1_000_000, chains=4, cores=4, callback=StopWhenConverged(n_chains=4, epsilon=0.01))`
# stops Gibbs at its stopping checkpoint and lets the split-merge sampler run on
# (`monitor.annotate(idata)` records the decision in the InferenceData). The sampler with the
# off-by-one bug is flagged at the first checkpoint: the rule never stops it as converged.

# %% [markdown]
# ## 8. What we find against what the paper reports
#
# The table is computed from this run (`pymc_partition.paper.comparison.closing_table`, which the
# main job prints too); the MAP probability and top-10 mass are compared under each reading of the
# prior of section 4, the samplers' rows are for the paper's prior (the mixture of finite mixtures). The agreement column applies simple rules stated in the `criterion` column.
# Discussion below.

# %%
comparison.closing_table(eb_comparison=eb_comparison, readings=reading_numbers, diagnostics=diag_table,
                         real_data=REAL_DATA)  # fmt: skip

# %% [markdown]
# ### Discussion
#
# *(Written for the committed full run: real data, 2 chains × 50,000 draws per sampler, under the
# paper's prior read as its text describes it. A run with other settings may differ in the details.)*
#
# **Empirical Bayes.** All five estimates and standard errors agree with the paper's table to its
# printed digits.
#
# **Exact posterior.** Under the mixture of finite mixtures (K uniform on 1..14, Dirichlet(1)
# weights), the prior the paper's text describes, the exact posterior puts probability **0.434** on
# the MAP partition and **0.823** on the 10 most probable ones; the paper reports 0.43 and about
# 80%. Nothing was tuned: the hyperparameters are our EB fit and the prior is the text's
# description. Read the printed formula directly as a prior on partitions
# (`UniformMultinomialDirichlet`) and the same data give 0.651 and 0.948: that reading puts 64% of
# its prior mass on a single cluster, the text's reading 8%. A prior exactly uniform on the number
# of non-empty clusters gives 0.469 and 0.839, a Dirichlet process with α = 1 gives 0.408 and
# 0.890; so the paper's two numbers single out the text's reading, though with two printed numbers
# this is strong evidence rather than proof. The MAP partition is {ColWT, sex3} | {dpe2, mex1} |
# the ten other mutants under every reading shown; the paper does not list its MAP partition, so we
# cannot compare the partitions themselves.
#
# **What the diagnostic is for: the sampler with a bug.** The off-by-one Gibbs sampler targets a
# posterior whose MAP probability is 0.320 instead of 0.434 (total variation 0.159 over the top
# 1,000 partitions). Its chains mix as fast as Gibbs's (bulk ESS 26,000 to 62,000 of 100,000
# draws), agree with each other (R-hat at most 1.0001 for the number of clusters, the log
# posterior and the four distance traces) and its CVs are as small as Gibbs's (at most 0.0075 at
# 20,000 draws, 0.0045 at the end): every check that looks at the chains alone says it has
# converged, and it has, to the wrong posterior. Only the exact posterior, which a user does not
# have, shows its co-clustering estimates off by up to 0.125 (mean 0.015): in the third row of
# Figure 2 the error settles at about 12% while the CV looks like Gibbs's. Hotelling-RS rejects it
# at every look: `p_value_all` is 0.006 for every K, the smallest value its bootstrap gives with
# 499 replicates and three combined tests, each chain's p-value 0.002; `regen_summary` says FAIL
# and the online rule of section 7b flags it at its first look (1,000 draws). That is the reading
# of the paper's Figure 2 (small CVs, an estimate converged to the wrong value, a test that
# rejects), reproduced here with a sampler whose defect is known.
#
# **Gibbs.** As in the paper: the co-clustering estimates converge to the exact values quickly (max
# error 0.004 at 50,000 iterations), CVs are tiny, and the Hotelling-RS p-values wander over (0, 1)
# (`p_value_all` 0.58–0.73 at the end). The online rule of section 7b stops Gibbs after about
# 7,600 draws per chain.
#
# **Split-merge.** `SplitMerge.badly_mixing()` uses group moves only (one split-merge proposal per
# iteration from a random launch state, never a Gibbs update of a single mutant): about 5% of the
# proposals are accepted. It mixes much more slowly than Gibbs: bulk ESS 750 to 1,700 (Gibbs:
# 38,000 to 60,000), co-clustering errors about ten times larger (max 0.038, mean 0.006) and CVs
# about ten times larger, the largest still 0.077 at 20,000 iterations and 0.046 at 50,000. It is
# exact, and at 50,000 iterations the diagnostic says so: `p_value_all` 0.28–0.32, R-hat at most
# 1.004, verdict PASS; at 2,000 iterations (the test suite's short run) the same sampler gets NOT
# REACHED, because R-hat of the number of clusters is then above 1.01. A cumulative p-value
# trace is a sequence of dependent looks at the same chains: its all-chains verdict dips below
# 0.05 around 45,000 draws before recovering; judge the end of the run, or use the online rule,
# whose level is spent over its looks. The online rule does not declare it converged (its
# regenerative half-widths stay about three times the target).
#
# **What we do not reproduce.** Under this prior the paper's Figure 2 story for split-merge does
# not appear with our sampler: its errors stay below 4% (the paper: 10–20% for a good portion of
# the pairs), its CVs drop below 5% only towards 50,000 iterations (the paper: by about 20,000),
# and its Hotelling-RS p-values do not reject (all-chains verdict about 0.3; the paper:
# "unequivocally" not converged). The story itself, small CVs over an estimate converged to the
# wrong value and a test that says so, is the third sampler's above. Our split-merge sampler is exact (each move
# leaves the posterior invariant, which the test suite checks against the exact posterior on small
# problems) and, with regeneration tours every two or three iterations, slow but not confidently
# wrong: the visit frequencies of its top states match their posterior ratios within their
# (larger) standard errors, so a calibrated test has nothing to flag at this run length; what
# shows its slowness is the precision, not the p-values. The paper's 10–20% errors with small CVs
# point to a stickier sampler than any exact mix of these moves we tried (earlier runs under the
# printed-formula prior: 0 to 100 intermediate restricted scans, Gibbs sweeps with probability 0 to
# 0.001, lazy Gibbs, none above about 5% error at 50,000 iterations); we did not re-tune the mix
# under this prior.
