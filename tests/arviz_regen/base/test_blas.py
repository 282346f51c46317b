"""One BLAS thread inside the diagnostics, the caller's limit restored after (arviz_regen.base.blas)."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import arviz_regen
from arviz_regen.base import tour_t2
from arviz_regen.base.blas import one_blas_thread
from arviz_regen.testing import make_idata, metropolis_chain, random_partitions, zipf_probs


def blas_threads():
    """The thread counts of the loaded BLAS libraries."""
    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture
def two_blas_threads():
    """The caller's limit: two threads (the suite runs with one, tests/conftest.py)."""
    if not blas_threads():
        pytest.skip("no BLAS library that threadpoolctl controls")
    with threadpool_limits(limits=2, user_api="blas"):
        if set(blas_threads().values()) != {2}:
            pytest.skip("the BLAS libraries do not take two threads here")
        yield


def test_limit_holds_inside_and_is_restored_after_also_on_error(two_blas_threads):
    seen = []

    @one_blas_thread
    def work(fail):
        seen.append(set(blas_threads().values()))
        if fail:
            raise ValueError("inside")
        return 7

    assert work(False) == 7 and work.__wrapped__ is not None
    with pytest.raises(ValueError, match="inside"):
        work(True)
    assert seen == [{1}, {1}]
    assert set(blas_threads().values()) == {2}


@pytest.mark.parametrize("name", ["hotelling_rs", "chain_agreement", "conditional_check", "regen_summary"])
def test_diagnostics_run_with_one_blas_thread(name):
    assert getattr(getattr(arviz_regen, name), "one_blas_thread", False)


def test_hotelling_bootstrap_products_see_one_thread(two_blas_threads, monkeypatch):
    seen = []
    replicates = tour_t2.TourT2.replicates

    def spy(self, size, rng):
        seen.append(set(blas_threads().values()))
        return replicates(self, size, rng)

    monkeypatch.setattr(tour_t2.TourT2, "replicates", spy)
    states = random_partitions(30, 6, random_seed=1)
    probs = zipf_probs(30)
    index = metropolis_chain(probs, 2, 2_000, random_seed=2)
    idata = make_idata(states, index, np.log(probs))
    arviz_regen.hotelling_rs(idata, k=[2, 3], method="bootstrap", n_bootstrap=99)
    assert seen and all(s == {1} for s in seen)
    assert set(blas_threads().values()) == {2}
