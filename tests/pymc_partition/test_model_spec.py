"""The reader of a partition's numbers at random hyperparameters (pymc_partition.model_spec)."""

import numpy as np
import pymc as pm
import pytest
from numpy.testing import assert_allclose

import pymc_partition as pmp
from pymc_partition.model_spec import HyperparameterReader, partition_spec


def _model(n_items=8, seed=0):
    x = np.random.default_rng(seed).normal(size=(n_items, 2))
    with pm.Model() as model:
        scale = pm.LogNormal("scale", 0.0, 1.0)
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = pmp.Partition("z", n_items=n_items, prior=pmp.DirichletProcess(alpha))
        family = pmp.NormalInverseGamma.from_data(x, n_clusters=2, scale=scale)
        pmp.MarginalLikelihood("y", partition=z, observed=x, family=family)
    return model, z


def test_reader_spec_is_partition_spec_at_the_point():
    model, z = _model()
    point = dict(model.initial_point(), scale_log__=np.array(0.3), alpha_log__=np.array(-0.2))
    reader = HyperparameterReader(model, z)
    assert reader._prior is not None  # the prior's routine computes the tables
    got = reader.spec(model, z, point)
    want = partition_spec(model, z, point=point)
    assert got.n_items == want.n_items == 8
    assert_allclose(got.log_g, want.log_g, rtol=1e-12)
    assert_allclose(got.log_h, want.log_h, rtol=1e-12)
    assert len(got.terms) == len(want.terms) == 1
    assert_allclose(got.terms[0].item_stats, want.terms[0].item_stats, rtol=1e-12)
    for name in ("mu0", "kappa0", "alpha0", "beta0"):
        assert_allclose(getattr(got.terms[0].family, name), getattr(want.terms[0].family, name), rtol=1e-12)
    # read at the point already: the same values again are no news, other values are
    assert reader.read(dict(point)) is None
    numbers = reader.read(dict(point, alpha_log__=np.array(0.1)))
    assert numbers is not None and not np.allclose(numbers.log_g, got.log_g)


def test_reader_refuses_a_point_outside_the_domain_at_every_read():
    model, z = _model()
    reader = HyperparameterReader(model, z)
    bad = dict(model.initial_point(), scale_log__=np.array(np.nan))
    for _ in range(2):  # an error leaves nothing recorded: the same values raise again
        with pytest.raises(ValueError, match="not finite|outside"):
            reader.read(bad)


def test_reader_hands_over_numeric_statistics_once():
    """Statistics that are numbers are read once: every read hands over the same read-only array,
    and the engine's refresh knows it by identity (no comparison, no copy)."""
    model, z = _model()
    reader = HyperparameterReader(model, z)
    start = model.initial_point()
    a = reader.read(dict(start, alpha_log__=np.array(0.1)))
    b = reader.read(dict(start, alpha_log__=np.array(0.2), scale_log__=np.array(0.4)))
    assert a.item_stats is b.item_stats and not a.item_stats.flags.writeable
    assert_allclose(a.item_stats, partition_spec(model, z, point=start).terms[0].item_stats, rtol=0, atol=0)
    step = pmp.GibbsPartition([z], model=model)
    step.engine.refresh(a)
    step.engine.refresh(b)
    assert step.engine._stats_seen is b.item_stats
    assert np.array_equal(step.engine.item_stats, b.item_stats)
    assert step.engine.item_stats is not b.item_stats  # the engine's own copy


def test_reader_family_is_what_replace_params_makes():
    """The family a read builds from the template's state equals ``replace_params`` at the graph's values."""
    model, z = _model()
    reader = HyperparameterReader(model, z)
    numbers = reader.read(dict(model.initial_point(), scale_log__=np.array(0.3), alpha_log__=np.array(-0.2)))
    values = {k: getattr(numbers.family, k) for k in reader.op.param_names}
    assert all(type(v) is float for v in values.values()) or any(np.ndim(v) for v in values.values())
    want = reader.op.family.replace_params(values)
    assert type(numbers.family) is type(want)
    assert numbers.family.__getstate__().keys() == want.__getstate__().keys()
    for key, value in want.__getstate__().items():
        assert np.array_equal(np.asarray(getattr(numbers.family, key)), np.asarray(value)), key


def test_initial_values_are_the_models_initial_point():
    """The restricted initial point equals the model's bit for bit (the variables asked and their parents)."""
    from pymc_partition.model_spec import initial_values

    x = np.random.default_rng(1).normal(size=(6, 1))
    with pm.Model() as model:
        m = pm.Normal("m", 1.5, 2.0)
        mu0 = pm.Normal("mu0", m, 1.0)
        kappa0 = pm.Gamma("kappa0", 2.0, 3.0, initval=0.7)
        pm.HalfNormal("unrelated", 1.0)
        z = pmp.Partition("z", n_items=6, prior=pmp.DirichletProcess(1.0))
        family = pmp.NormalInverseGamma(mu0=mu0, kappa0=kappa0, alpha0=2.0, beta0=1.0)
        pmp.MarginalLikelihood("y", partition=z, observed=x, family=family)
    got = initial_values(model, ["mu0", "kappa0_log__"])
    assert set(got) == {"m", "mu0", "kappa0_log__"}
    want = model.initial_point()
    for name, value in got.items():
        assert np.asarray(value).tobytes() == np.asarray(want[name]).tobytes(), name


def _pitman_yor_model(n_items=8, seed=1):
    x = np.random.default_rng(seed).normal(size=(n_items, 2))
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        d = pm.Beta("d", 2.0, 5.0)
        z = pmp.Partition("z", n_items=n_items, prior=pmp.PitmanYor(alpha=alpha, d=d))
        pmp.MarginalLikelihood("y", partition=z, observed=x, family=pmp.NormalInverseGamma.from_data(x, n_clusters=2))
    return model, z


def test_reader_tables_by_the_priors_routine_are_the_graphs():
    """A prior with a numba routine: its tables at each read are the graph's (partition_spec's) at the point.

    (The Dirichlet process's: test_reader_spec_is_partition_spec_at_the_point.)
    """
    model, z = _pitman_yor_model()
    reader = HyperparameterReader(model, z)
    assert reader._prior is not None  # the routine, not the graph, computes them
    rng = np.random.default_rng(3)
    start = model.initial_point()
    for _ in range(2):  # (partition_spec compiles at each point)
        point = {k: np.asarray(v + rng.normal(scale=2.0)) if k in reader.names else v for k, v in start.items()}
        numbers = reader.read(point)
        want = partition_spec(model, z, point=point)
        assert_allclose(numbers.log_g, want.log_g, rtol=1e-13, atol=1e-12)  # entries near 0: differences of ~50s
        assert_allclose(numbers.log_h, want.log_h, rtol=1e-13, atol=1e-12)


def test_reader_refuses_tables_that_are_not_numbers():
    """alpha = inf makes the Dirichlet process's tables NaN: refused, and a NaN alpha is outside the domain."""
    model, z = _model()
    reader = HyperparameterReader(model, z)
    with pytest.raises(ValueError, match="not finite"):
        reader.read(dict(model.initial_point(), alpha_log__=np.array(np.inf)))
    with pytest.raises(ValueError, match=r"outside its domain \(alpha > 0\)"):
        reader.read(dict(model.initial_point(), alpha_log__=np.array(np.nan)))


def test_reader_survives_pickling():
    import pickle

    import cloudpickle  # what pm.sample sends steps to worker processes with

    model, z = _model()
    reader = HyperparameterReader(model, z)
    point = dict(model.initial_point(), alpha_log__=np.array(0.4))
    want = reader.read(point)
    want = (want.log_g.copy(), want.log_h.copy())
    copy = pickle.loads(cloudpickle.dumps(reader))
    copy.forget()
    got = copy.read(point)
    assert np.array_equal(got.log_g, want[0]) and np.array_equal(got.log_h, want[1])


def _numbers(numbers):
    """A read's numbers as copies (the reader overwrites its arrays at its next read)."""
    family = {k: np.asarray(v).copy() for k, v in numbers.family.__getstate__().items()}
    return numbers.log_g.copy(), numbers.log_h.copy(), family


def test_lean_reads_are_the_full_reads():
    """After its first read a reader takes the lean path (and, on PyTensor 3, the compiled function's entry
    point): at every later point it gives the numbers a full read gives, bit for bit, for PyMC's 0-d arrays,
    for values to convert (numpy scalars, Python floats) and after pickling (the entry taken again)."""
    import cloudpickle

    x = np.random.default_rng(0).normal(size=(8, 2))
    with pm.Model() as model:  # scalar hyperparameters of the prior and the family: the lean path's kind
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        family = pmp.NormalInverseGamma(mu0=pm.Normal("mu0", 0.0, 5.0), kappa0=pm.Gamma("kappa0", 2.0, 10.0),
                                        alpha0=2.0, beta0=2.0)  # fmt: skip
        z = pmp.Partition("z", n_items=8, prior=pmp.DirichletProcess(alpha=alpha))
        pmp.MarginalLikelihood("y", partition=z, family=family, observed=x)
    lean, full = HyperparameterReader(model, z), HyperparameterReader(model, z)
    rng = np.random.default_rng(5)
    start = model.initial_point()
    points = [{k: np.asarray(v + rng.normal(scale=0.5)) if k in lean.names else v for k, v in start.items()}
              for _ in range(6)]  # fmt: skip
    points[3] = dict(points[3], alpha_log__=float(points[3]["alpha_log__"]))  # a float: converted
    points[4] = dict(points[4], mu0=np.float64(points[4]["mu0"]))  # a numpy scalar: converted
    lean.read(start)
    assert lean._lean
    entry = lean._lean_entry
    for k, point in enumerate(points):
        if k == 5:  # as sent to a worker process: the entry point is taken again after its first call
            lean = cloudpickle.loads(cloudpickle.dumps(lean))
            assert lean._lean and lean._lean_entry is False
        got = _numbers(lean.read(point))
        full._lean = False  # every read the full one
        full.forget()
        want = _numbers(full.read(point))
        assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes(), k
        assert got[2].keys() == want[2].keys()
        for key in lean.op.param_names:  # the hyperparameters (the rest is the template's, as it was)
            assert got[2][key].tobytes() == want[2][key].tobytes(), (k, key)
        assert lean.read(point) is None  # the same values again: nothing new
    assert (lean._lean_entry is None) == (entry is None)  # taken again after pickling, where there was one
