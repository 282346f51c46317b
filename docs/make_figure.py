"""Draw the landing-page figure, ``docs/_static/coclustering.png`` (README and docs index).

``python docs/make_figure.py``: the paper's model on data simulated from its fitted values,
sampled by exact Gibbs and by Gibbs with an off-by-one new-cluster weight
(``pymc_partition.paper.bug``: it mixes as well and its R-hat is as good, but it targets another
posterior); left the posterior co-clustering matrix, right each sampler's all-chains Hotelling-RS
p-value along the draws.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pymc as pm  # noqa: E402

import arviz_regen  # noqa: E402
import pymc_partition as pmp  # noqa: E402
from pymc_partition.paper.bug import sample_off_by_one  # noqa: E402
from pymc_partition.paper.workflow import build_model  # noqa: E402

DRAWS = 10_000
OUT = Path(__file__).resolve().parent / "_static" / "coclustering.png"


def main() -> None:
    """Sample both samplers, draw the two panels and save the figure."""
    data = pmp.datasets.simulate_spike_slab(random_seed=1)
    eb = pmp.fit_spike_slab(data.values, data.item_index)
    model, z = build_model(data, eb.estimates)
    with model:
        exact = pm.sample(draws=DRAWS, tune=0, chains=4, step=pmp.GibbsPartition([z]), random_seed=1, progressbar=False)
    buggy, _ = sample_off_by_one(data, eb.estimates, draws=DRAWS, chains=4, random_seed=1, progressbar=False)
    runs = {"exact Gibbs": exact, "off-by-one Gibbs": buggy}
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), constrained_layout=True)
    arviz_regen.plot_coclustering(exact, var_names="z", ax=left)
    left.set_title("posterior co-clustering (exact Gibbs, 4 x 10,000 draws)")
    for name, idata in runs.items():
        trace = arviz_regen.hotelling_rs(idata, var_names="z", k=5, cumulative=True, n_points=20)
        p = trace["p_value_all"]
        right.plot(p[p.dims[-1]], p, marker="o", label=name)
    right.axhline(0.05, color="grey", ls="--", lw=1)
    right.set(
        xlabel="draw", ylabel="Hotelling-RS p_value_all (K = 5)", ylim=(0, 1), title="the diagnostic along the draws"
    )
    right.legend()
    OUT.parent.mkdir(exist_ok=True)
    fig.savefig(OUT, dpi=110)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
