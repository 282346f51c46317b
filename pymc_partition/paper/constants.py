"""Every number of the paper's Arabidopsis illustration, and the settings of our reproduction.

Asgharian, Lysy & Partovi Nia (2019), *A Convergence Diagnostic for Bayesian Clustering*,
section 4. The first block is what the paper prints; the second is what the paper leaves open
and this reproduction fixes (seeds, chains, evaluation grids). Plain Python: importing this
module costs nothing (the command line's ``--help`` reads it).
"""

from __future__ import annotations

__all__ = [
    "EB_TABLE",
    "EB_HYPERPARAMETERS",
    "MAP_PROBABILITY",
    "TOP_MASS",
    "TOP_K",
    "N_ITEMS",
    "N_VARS",
    "REPLICATES",
    "N_PARTITIONS",
    "K_VALUES",
    "DRAWS",
    "CV_THRESHOLD",
    "CV_DRAW",
    "SPLIT_MERGE_ERRORS",
    "COCLUSTERING_THRESHOLD",
    "SEED",
    "CHAINS",
    "ALPHA",
    "N_POINTS",
]

# ------------------------------------------------------------------------------------------
# printed in the paper
# ------------------------------------------------------------------------------------------

#: Empirical-Bayes estimates and standard errors (section 4.1) as printed: strings keep the
#: printed precision, which is what a fit is compared at.
EB_TABLE = {
    "mu": ("0.083", "0.03"),
    "sigma2": ("0.16", "0.005"),
    "sigma2_eta": ("0.37", "0.033"),
    "sigma2_theta": ("5.1", "2.7"),
    "p": ("0.034", "0.02"),
}

#: The estimates of :data:`EB_TABLE` as floats: the hyperparameters simulated data are drawn from.
EB_HYPERPARAMETERS = {name: float(estimate) for name, (estimate, _) in EB_TABLE.items()}

#: Posterior probability of the MAP partition (section 4.2, Figure 1 left).
MAP_PROBABILITY = 0.43

#: "About 80 % of the posterior probability is in the 10 most probable allocations".
TOP_MASS = 0.80

#: The number of most probable partitions whose mass :data:`TOP_MASS` is (and of Figure 1 right).
TOP_K = 10

#: Data: 14 mutants, 43 metabolites, 4 replicates each except ColWT (the first item) with 3.
N_ITEMS = 14
N_VARS = 43
REPLICATES = (3,) + (4,) * 13

#: B(14): the number of partitions of the 14 mutants.
N_PARTITIONS = 190_899_322

#: Hotelling-RS on the K most probable states, K = 2, 3, 5, 10 (Figure 2c).
K_VALUES = (2, 3, 5, 10)

#: "Both samplers were run ... for n = 50,000 iterations".
DRAWS = 50_000

#: The split-merge sampler's CVs "drop below 5 % after about n = 20,000 iterations" (Figure 2b).
CV_THRESHOLD = 0.05
CV_DRAW = 20_000

#: "after n = 50,000 iterations, the split-merge sampler estimates a good portion of the
#: co-occurrence probabilities with 10-20 % absolute error" (Figure 2a).
SPLIT_MERGE_ERRORS = (0.10, 0.20)

#: Figure 1 right shows the pairs with co-clustering probability above 0.05.
COCLUSTERING_THRESHOLD = 0.05

# ------------------------------------------------------------------------------------------
# our settings (the paper does not state them)
# ------------------------------------------------------------------------------------------

#: Random seed of simulation and sampling.
SEED = 2019

#: Chains per sampler (the paper shows one trace per sampler; two chains show between-chain
#: disagreement too).
CHAINS = 2

#: Level of the dashed reference line of the p-value panels.
ALPHA = 0.05

#: Evaluation draws of the cumulative co-clustering traces (Figure 2a and 2b).
N_POINTS = 100
