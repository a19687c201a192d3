"""Exporting stored results: the H100 data in results/ as a tidy table."""

import json
import shutil
from pathlib import Path

import pytest

from kernelscope.results import export

RESULTS = Path(__file__).resolve().parents[1] / "results"
pytestmark = pytest.mark.skipif(not (RESULTS / "benchmarks.json").exists(), reason="no stored results")


def first_calls(rows):
    return sorted(r["variant"] for r in rows if r["mode"] == "first_call")


def test_results_of_a_renamed_benchmark_still_export(tmp_path):
    # Suite version 3 renamed FirstCall.track_first_call; asv then drops it from
    # benchmarks.json, but the results recorded under the old name are still data.
    before = first_calls(export.rows(RESULTS))
    assert len(before) == 27
    copy = tmp_path / "results"
    shutil.copytree(RESULTS, copy)
    described = json.loads((copy / "benchmarks.json").read_text())
    old = [name for name in described if name.endswith("track_first_call")]
    assert old
    for name in old:
        del described[name]
    (copy / "benchmarks.json").write_text(json.dumps(described))
    assert first_calls(export.rows(copy)) == before


def test_every_stored_row_has_its_bandwidth_model():
    for row in export.rows(RESULTS):
        assert row["time_s"] > 0 and row["variant"] and row["machine"]
        if row["mode"] != "first_call":
            assert row["gbps"] == pytest.approx(row["bytes"] / row["time_s"] / 1e9)
