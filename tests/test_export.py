"""Exporting stored results: the H100 data in results/ as a tidy table."""

import json
import shutil
from pathlib import Path

import pytest

from kernelscope.results import export

RESULTS = Path(__file__).resolve().parents[1] / "results"
pytestmark = pytest.mark.skipif(not (RESULTS / "benchmarks.json").exists(), reason="no stored results")


@pytest.fixture(scope="module")
def stored():
    """Every stored row, failed ones included: read once for the tests that read the committed results as they are."""
    return export.rows(RESULTS, include_failed=True)


@pytest.fixture(scope="module")
def measured(stored):
    return [r for r in stored if r["status"] == export.MEASURED]


def one_commit(dest: Path, prefix: str) -> Path:
    """A copy of results/ with only the result files of the commit ``prefix`` (and every machine's facts)."""
    shutil.copytree(RESULTS, dest, ignore=lambda folder, names: [
        n for n in names if n[:8] != prefix and len(n) > 9 and n[8] == "-" and all(c in "0123456789abcdef" for c in n[:8])])
    return dest


def first_calls(rows):
    # 8eac40ea: the full run recorded FirstCall under its old name (track_first_call), 27 variants then
    return sorted(r["variant"] for r in rows if r["mode"] == "first_call" and r["commit"].startswith("8eac40ea"))


def test_results_of_a_renamed_benchmark_still_export(measured):
    # Suite version 3 renamed FirstCall.track_first_call to time_first_call; asv's
    # benchmarks.json now describes only the new name, but the 27 first calls that
    # 8eac40ea recorded under the old one are still data.
    described = json.loads((RESULTS / "benchmarks.json").read_text())
    assert not any(name.endswith("track_first_call") for name in described)
    assert len(first_calls(measured)) == 27


def test_every_stored_row_has_its_bandwidth_model(measured):
    for row in measured:
        assert row["time_s"] > 0 and row["variant"] and row["machine"]
        if not row["op"]:  # graph mode's floor, Launch.track_graph: an empty kernel moves no bytes
            assert row["variant"] == "empty-kernel" and row["mode"] == "graph" and row["gbps"] is None
        elif row["mode"] != "first_call":
            assert row["gbps"] == pytest.approx(row["bytes"] / row["time_s"] / 1e9)


def test_rows_carry_the_clock_of_the_samples_asv_kept(tmp_path):
    from kernelscope.results import clock_logs

    copy = one_commit(tmp_path / "results", "8eac40ea")
    result = next(p for p in copy.glob("*/8eac40ea-*.json"))
    row = next(r for r in export.rows(copy) if r["commit"].startswith("8eac40ea") and r["mode"] == "warm"
               and r["variant"] == "square-torch" and r["size"] == "64x64")
    n = row["samples"]
    assert row["sm_mhz"] is None and row["throttled"] is None  # no log was written then
    # Warm-up readings first (asv keeps only the last n samples), then 3 throttled ones among the kept.
    readings = [500.0] * 5 + [1980.0] * (n - 3) + [1000.0] * 3
    record = {"benchmark": "benchmarks.Square.time_warm", "params": ["square-torch", "64x64", "float32"],
              "mhz": readings, "max_mhz": 1980.0, "fraction": 0.75}
    result.with_name(result.stem + clock_logs.SUFFIX).write_text(json.dumps(record) + "\n")
    row = next(r for r in export.rows(copy) if r["commit"].startswith("8eac40ea") and r["mode"] == "warm"
               and r["variant"] == "square-torch" and r["size"] == "64x64")
    assert row["throttled"] == 3 and row["sm_mhz"] == 1980.0


def test_results_compares_two_machines_beside_their_bandwidth(tmp_path, capsys):
    from kernelscope.cli import main

    from sitebuild import SYNTHETIC, newest_result_file, with_second_machine

    results = with_second_machine(tmp_path / "results", speedup=2.0, copy_gbps=4506)
    newest = newest_result_file(results)  # what the comparison reads of the H100: its newest run
    for path in results.glob("nvidia-*/*"):
        if path.name[:9] != newest.name[:9] and path.name[8:9] == "-":
            path.unlink()
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


def test_a_case_rerun_in_a_second_environment_is_not_a_failure_of_its_commit(stored):
    # 60691b52 on the H100: the CUDA variants failed in asv's syssite env and were rerun
    # on the same commit from the editable install (the existing-py result file).
    every = stored
    failed = {export._case(r) for r in every if r["status"] != export.MEASURED}
    assert not failed & {export._case(r) for r in every if r["status"] == export.MEASURED}
    vec4 = [r for r in every if r["commit"].startswith("60691b52") and r["variant"] == "square-cuda-vec4"]
    assert vec4 and all(r["status"] == export.MEASURED for r in vec4)


def test_launch_bound_is_a_warm_or_cold_gpu_time_under_20_us(measured):
    from kernelscope.timing import processes

    assert processes.launch_bound_result("warm", 5e-6, "NVIDIA H100") and processes.launch_bound_result("cold", 19e-6, "x")
    assert not processes.launch_bound_result("graph", 5e-6, "NVIDIA H100")  # replays agree across processes
    assert not processes.launch_bound_result("warm", 25e-6, "NVIDIA H100")
    assert not processes.launch_bound_result("warm", 5e-6, "")  # the CPU path: no launch queue
    assert not processes.launch_bound_result("warm", None, "NVIDIA H100")  # failed
    # A multi-kernel variant's cold time past 20 us, sampled per process because its warm time was not.
    assert processes.launch_bound_result("cold", 21e-6, "NVIDIA H100", samples=3)
    # host mode: only one value per process says so (a host time of 30 us is no GPU time)
    assert processes.launch_bound_result("host", 30e-6, "NVIDIA H100", samples=3)
    assert not processes.launch_bound_result("host", 9e-6, "NVIDIA H100", samples=30)  # version 1: one process
    assert not processes.launch_bound_result("cold", 21e-6, "NVIDIA H100", samples=40)
    rows = measured
    assert any(r["launch_bound"] for r in rows)
    assert all(r["launch_bound"] == processes.launch_bound_result(r["mode"], r["time_s"], r["gpu"], r["samples"])
               for r in rows)


def test_graph_samples_taken_again_are_not_counted_among_those_asv_kept(tmp_path):
    # Graph mode v8 logs every reading, the retaken (low) ones too, and how many it retook.
    from kernelscope.results import clock_logs

    copy = one_commit(tmp_path / "results", "8eac40ea")
    result = next(p for p in copy.glob("*/8eac40ea-*.json"))

    def graph_row():
        return next(r for r in export.rows(copy) if r["commit"].startswith("8eac40ea") and r["mode"] == "graph"
                    and r["variant"] == "square-torch" and r["size"] == "64x64")

    n = graph_row()["samples"]
    # The first batch with 4 low readings among n, its 4 retakes (one low again), then that one's retake, low
    # still and kept as the last round's: 5 retaken, 1 low sample among the n kept.
    first = [1900.0] * n
    for i in (0, 3, n // 2, n - 1):
        first[i] = 300.0
    readings = first + [1970.0, 1000.0, 1970.0, 1970.0] + [900.0]
    record = {"benchmark": "benchmarks.Square.track_graph", "params": ["square-torch", "64x64", "float32"],
              "mhz": readings, "max_mhz": 1980.0, "fraction": 0.75, "retaken": 5}
    result.with_name(result.stem + clock_logs.SUFFIX).write_text(json.dumps(record) + "\n")
    row = graph_row()
    assert row["throttled"] == 1 and row["sm_mhz"] == 1900.0
