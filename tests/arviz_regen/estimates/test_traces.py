"""partition_traces goes straight to ArviZ's rhat / ess / summary, on ArviZ 0.23 and 1.x."""

import arviz as az
import numpy as np

import arviz_regen
from arviz_regen.testing import BlockModel, block_chain


def test_partition_traces_go_straight_to_arviz():
    idata = block_chain(BlockModel(40), 2, 60, 4)
    tr = arviz_regen.partition_traces(idata)
    # the reference partitions ride along as a coordinate, not as a (chain, draw)-less variable
    assert "reference_labels" not in tr.data_vars
    assert tr.reference_labels.dims == ("reference", tr.reference_labels.dims[1])
    assert tr.reference_labels.shape == (2, 40)
    rhat, ess = az.rhat(tr), az.ess(tr)
    for name in tr.data_vars:
        assert np.isfinite(float(rhat[name])) and np.isfinite(float(ess[name]))
    table = az.summary(tr)
    assert set(tr.data_vars) <= set(table.index)
