"""The synthetic chains of ``arviz_regen.testing`` take ``random_seed``; the old name ``rng``
still works for a release, with a DeprecationWarning, and gives the same draws."""

from __future__ import annotations

import numpy as np
import pytest

from arviz_regen import testing

PROBS = testing.zipf_probs(6)
STATES = np.array([[0, 0], [0, 1]])


@pytest.mark.parametrize(
    "draw",
    [
        lambda **kw: testing.random_partitions(5, 6, **kw),
        lambda **kw: testing.iid_chain(PROBS, 2, 30, **kw),
        lambda **kw: testing.metropolis_chain(PROBS, 2, 30, **kw),
        lambda **kw: testing.excursion_chain(PROBS, 2, 30, **kw),
        lambda **kw: testing.two_basin_chain(PROBS, 2, 30, **kw),
        lambda **kw: testing.gibbs_chain(STATES, np.zeros(2), 2, 30, **kw),
        lambda **kw: testing.BlockModel(n_items=16, n_blocks=2, n_extra=1).chains(2, 5, **kw)[0],
        lambda **kw: testing.block_chain(testing.BlockModel(n_items=16, n_blocks=2, n_extra=1), 2, 5,
                                         **kw)["posterior"]["z"].values,
    ],
    ids=["random_partitions", "iid", "metropolis", "excursion", "two_basin", "gibbs", "BlockModel.chains",
         "block_chain"],
)  # fmt: skip
def test_random_seed_and_its_old_name(draw):
    new = draw(random_seed=np.random.default_rng(4))
    np.testing.assert_array_equal(new, draw(random_seed=4))  # an int or a Generator
    with pytest.warns(DeprecationWarning, match="`rng` is deprecated"):
        old = draw(rng=np.random.default_rng(4))
    np.testing.assert_array_equal(new, old)
    with pytest.raises(TypeError, match="not both"):
        draw(random_seed=1, rng=1)
