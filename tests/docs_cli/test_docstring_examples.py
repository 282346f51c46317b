"""The Examples sections of the public docstrings run, on whichever PyMC/ArviZ generation is installed.

Every public name of both packages is collected (``__all__``) and each docstring's examples are
run by :mod:`doctest` in a fresh namespace; outputs are compared with ELLIPSIS and whitespace
normalized. The names a user calls first must have an example that runs (not one skipped).
"""

from __future__ import annotations

import doctest
import inspect
import warnings

import matplotlib
import pytest

matplotlib.use("Agg")

import arviz_regen  # noqa: E402
import pymc_partition as pmp  # noqa: E402

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

#: what a user calls first: each needs an example that runs
FIRST_CALLED = [
    "pymc_partition.Partition",
    "pymc_partition.MarginalLikelihood",
    "pymc_partition.DirichletProcess",
    "pymc_partition.PitmanYor",
    "pymc_partition.UniformPartition",
    "pymc_partition.UniformMultinomialDirichlet",
    "pymc_partition.MixtureOfFiniteMixtures",
    "pymc_partition.NormalInverseGamma",
    "pymc_partition.NormalInverseWishart",
    "pymc_partition.SpikeSlabNormal",
    "pymc_partition.BetaBernoulli",
    "pymc_partition.GibbsPartition",
    "pymc_partition.SplitMerge",
    "pymc_partition.SequentialMergeSplit",
    "pymc_partition.ParticleMergeSplit",
    "pymc_partition.exact_posterior",
    "pymc_partition.fit_spike_slab",
    "pymc_partition.fit_hyperparameters",
    "arviz_regen.hotelling_rs",
    "arviz_regen.regen_summary",
    "arviz_regen.coclustering",
    "arviz_regen.conditional_check",
    "arviz_regen.partition_traces",
]


def _public():
    out = {}
    for mod in (pmp, arviz_regen):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                out[f"{mod.__name__}.{name}"] = obj
    return out


PUBLIC = _public()


def _examples(qualname):
    finder = doctest.DocTestFinder(recurse=False)
    return [t for t in finder.find(PUBLIC[qualname], qualname) if t.examples]


def test_first_called_names_have_examples_that_run():
    missing = []
    for qualname in FIRST_CALLED:
        tests = _examples(qualname)
        runs = [ex for t in tests for ex in t.examples if not ex.options.get(doctest.SKIP)]
        if not runs:
            missing.append(qualname)
    assert not missing, f"no runnable Examples section: {missing}"


@pytest.mark.parametrize("qualname", sorted(q for q in PUBLIC if _examples(q)))
def test_docstring_examples_run(qualname):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the examples show results, not warnings
        for test in _examples(qualname):
            test.globs = dict(test.globs)  # the module's names, as doctest gives them; no leak between tests
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {qualname} failed (see stdout)"
