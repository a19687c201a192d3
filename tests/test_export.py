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


def test_rows_carry_the_clock_of_the_samples_asv_kept(tmp_path):
    from kernelscope.timing import clocks

    copy = tmp_path / "results"
    shutil.copytree(RESULTS, copy)
    result = next(p for p in copy.glob("*/8eac40ea-*.json"))
    row = next(r for r in export.rows(copy) if r["commit"].startswith("8eac40ea") and r["mode"] == "warm"
               and r["variant"] == "square-torch" and r["size"] == "64x64")
    n = row["samples"]
    assert row["sm_mhz"] is None and row["throttled"] is None  # no log was written then
    # Warm-up readings first (asv keeps only the last n samples), then 3 throttled ones among the kept.
    readings = [500.0] * 5 + [1980.0] * (n - 3) + [1000.0] * 3
    record = {"benchmark": "benchmarks.Square.time_warm", "params": ["square-torch", "64x64", "float32"],
              "mhz": readings, "max_mhz": 1980.0, "fraction": 0.75}
    result.with_name(result.stem + clocks.SUFFIX).write_text(json.dumps(record) + "\n")
    row = next(r for r in export.rows(copy) if r["commit"].startswith("8eac40ea") and r["mode"] == "warm"
               and r["variant"] == "square-torch" and r["size"] == "64x64")
    assert row["throttled"] == 3 and row["sm_mhz"] == 1980.0


def test_results_compares_two_machines_beside_their_bandwidth(tmp_path, capsys):
    from kernelscope.cli import main

    from sitebuild import SYNTHETIC, with_second_machine

    results = with_second_machine(tmp_path / "results", speedup=2.0, copy_gbps=4506)
    assert main(["results", "--results-dir", str(results), "--mode", "warm", "--compare-machines",
                 "nvidia-h100-80gb-hbm3", SYNTHETIC]) == 0
    out = capsys.readouterr().out
    assert "Copy bandwidth test-gpu-b / nvidia-h100-80gb-hbm3: 1.50x" in out
    assert main(["results", "--results-dir", str(results), "--mode", "warm", "--json", "--compare-machines",
                 "nvidia-h100-80gb-hbm3", SYNTHETIC]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["speedup"] == pytest.approx(2.0) and r["mode"] == "warm" for r in rows)
    assert main(["results", "--results-dir", str(results), "--compare-machines", "nvidia-h100-80gb-hbm3",
                 "no-such-gpu"]) == 2
