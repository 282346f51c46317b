"""The numba routines of the priors' tables (pymc_partition.priors._numba) against the priors' formulas."""

import numpy as np
import pytest

import pymc_partition as pmp
from pymc_partition.priors._numba import dirichlet_process_tables, pitman_yor_tables


def _routine(routine, params, n_items, with_h=True):
    log_g, log_h = np.full(n_items + 1, 7.0), np.full(n_items + 1, 7.0)
    status = routine(np.array(params, dtype=np.float64), log_g, log_h, with_h)
    return status, log_g, log_h


def _assert_same(got, want):
    # the same operations as the formula's: rounding apart (the log-gammas' implementations differ)
    assert np.array_equal(np.isfinite(got), np.isfinite(want)) and np.array_equal(got[~np.isfinite(got)],
                                                                                  want[~np.isfinite(want)])  # fmt: skip
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("n_items", [1, 2, 14, 100])
@pytest.mark.parametrize("alpha", [1e-3, 0.5, 3.0, 29.9, 30.0, 40.0, 1e5])
def test_dirichlet_process_routine_is_the_formula(alpha, n_items):
    status, log_g, log_h = _routine(dirichlet_process_tables, [alpha], n_items)
    want_g, want_h = pmp.DirichletProcess(alpha).tables(n_items)
    assert status == 0
    _assert_same(log_g, want_g)
    _assert_same(log_h, want_h)


@pytest.mark.parametrize("n_items", [1, 2, 14, 100])
@pytest.mark.parametrize(("alpha", "d"), [(0.5, 0.0), (-0.2, 0.3), (2.0, 0.3), (50.0, 0.9), (1e4, 0.5)])
def test_pitman_yor_routine_is_the_formula(alpha, d, n_items):
    status, log_g, log_h = _routine(pitman_yor_tables, [alpha, d], n_items)
    want_g, want_h = pmp.PitmanYor(alpha, d).tables(n_items)
    assert status == 0
    _assert_same(log_g, want_g)
    _assert_same(log_h, want_h)


@pytest.mark.parametrize(
    ("routine", "params"),
    [(dirichlet_process_tables, [0.0]), (dirichlet_process_tables, [np.nan]), (pitman_yor_tables, [0.5, 1.0]),
     (pitman_yor_tables, [0.5, -0.1]), (pitman_yor_tables, [-0.3, 0.3]), (pitman_yor_tables, [np.nan, 0.3])],
)  # fmt: skip
def test_routines_refuse_parameters_outside_the_domain(routine, params):
    status, log_g, log_h = _routine(routine, params, 5)
    assert status == 1
    assert np.all(log_g == 7.0) and np.all(log_h == 7.0)  # nothing written


def test_routines_report_nan_tables():
    assert _routine(dirichlet_process_tables, [np.inf], 5)[0] == 2
    assert _routine(pitman_yor_tables, [np.inf, 0.3], 5)[0] == 2


def test_routines_leave_log_h_alone_unless_asked():
    for routine, params in ((dirichlet_process_tables, [2.0]), (pitman_yor_tables, [2.0, 0.3])):
        status, log_g, log_h = _routine(routine, params, 5, with_h=False)
        assert status == 0 and np.all(log_h == 7.0) and np.isfinite(log_g[1:]).all()
