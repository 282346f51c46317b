"""The raw-address module (``predictive._types``): a context keeps the arrays it names alive,
and wrong arrays are refused before any compiled function reads through an address."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import pymc_partition as pmp
from pymc_partition.predictive._types import call_pred, context_arrays, make_context

NO_LM = np.zeros(2, np.int64)


def _form_and_stats():
    y = np.random.default_rng(3).normal(size=(12, 2))
    spec = pmp.PartitionSpec.from_data(pmp.DirichletProcess(1.0), pmp.NormalInverseGamma(0.0, 1.0, 2.0, 1.0), y)
    form = spec.family.predictive_form(spec.item_stats)
    stats = np.zeros((4, spec.item_stats.shape[1]))
    stats[0] = spec.item_stats[:5].sum(axis=0)
    stats[1] = spec.item_stats[5:9].sum(axis=0)
    return form, stats


def _scores(form, ctx):
    """The log marginals of slots 0 and 1 and the log predictives of items 9-11 for both."""
    lms = [form.init(ctx, c) for c in (0, 1)]
    slots, out = np.array([0, 1], np.int64), np.zeros(2)
    call = call_pred(form.pred, ctx, slots, out)
    preds = []
    for i in (9, 10, 11):
        call(i)
        preds.extend(out)
    return np.array(lms + preds)


def test_a_context_keeps_its_arrays_alive():
    form, stats = _form_and_stats()
    want = _scores(form, make_context(form.params, stats.copy(), np.zeros((4, form.cache_width)), form.aux, NO_LM))
    # only the context refers to these copies: collected arrays would be reused by the garbage below
    ctx = make_context(form.params.copy(), stats.copy(), np.zeros((4, form.cache_width)), form.aux.copy(), NO_LM)
    gc.collect()
    garbage = [np.full(a.shape, np.nan) for a in (form.params, stats, form.aux) for _ in range(50)]
    # through the raw addresses alone first (freed arrays gave NaN here), then through call_pred
    np.testing.assert_array_equal([form.init(ctx, c) for c in (0, 1)], want[:2])
    np.testing.assert_array_equal(_scores(form, ctx), want)
    params, held_stats, _, aux = context_arrays(ctx)
    np.testing.assert_array_equal(params, form.params)
    np.testing.assert_array_equal(held_stats, stats)
    del garbage


@pytest.mark.parametrize(
    "change, error, match",
    [
        (dict(params=np.zeros(5, np.float32)), TypeError, "params"),
        (dict(params=np.zeros((5, 1))), TypeError, "params"),
        (dict(stats=np.zeros((4, 10))[:, ::2]), TypeError, "stats"),
        (dict(cache=np.zeros(4)), TypeError, "cache"),
        (dict(aux=[[0.0]]), TypeError, "aux"),
        (dict(cache=np.zeros((3, 2))), ValueError, "one row per slot"),
        (dict(lm_addr=np.zeros(3, np.int64)), TypeError, "lm_addr"),
        (dict(lm_addr=np.zeros(2)), TypeError, "lm_addr"),
    ],
)
def test_wrong_arrays_are_refused_before_any_call(change, error, match):
    form, stats = _form_and_stats()
    args = dict(params=form.params, stats=stats, cache=np.zeros((4, form.cache_width)), aux=form.aux, lm_addr=NO_LM)
    args.update(change)
    with pytest.raises(error, match=match):
        make_context(**args)


def test_call_pred_checks_its_arrays():
    form, stats = _form_and_stats()
    ctx = make_context(form.params, stats, np.zeros((4, form.cache_width)), form.aux, NO_LM)
    with pytest.raises(TypeError, match="slots"):
        call_pred(form.pred, ctx, np.zeros(2, np.int32), np.zeros(2))
    with pytest.raises(TypeError, match="out"):
        call_pred(form.pred, ctx, np.zeros(2, np.int64), np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="entries"):
        call_pred(form.pred, ctx, np.zeros(3, np.int64), np.zeros(2))
    with pytest.raises(TypeError, match="make_context"):
        call_pred(form.pred, np.zeros(12, np.int64), np.zeros(2, np.int64), np.zeros(2))
    call = call_pred(form.pred, ctx, np.array([0, 4], np.int64), np.zeros(2))
    with pytest.raises(IndexError, match="slots"):
        call(0)
    with pytest.raises(IndexError, match="item"):
        call_pred(form.pred, ctx, np.zeros(2, np.int64), np.zeros(2))(12)
