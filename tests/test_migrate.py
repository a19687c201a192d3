"""Results stored by an older kernelscope, keyed as the suite keys them now (kernelscope.asv.migrate)."""

import json
import math

from kernelscope.asv import migrate
from kernelscope.results import export, machine

COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
           "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]
PARAMS = [["'square-mul'", "'square-cuda-vec4'"], ["'64x64'"], ["'float32'"]]


def _file(env: str, results: dict, copy="3003") -> dict:
    return {"commit_hash": "ab" * 20, "env_name": env, "date": 1, "python": "3.12", "requirements": {}, "env_vars": {},
            "params": {"machine": "nvidia-h100-80gb-hbm3", "gpu": "NVIDIA H100 80GB HBM3", "copy_gbps": copy,
                       "cpu": "Intel", "num_cpu": "16", "ram": "135148564480", "os": "Linux 6.18.44"},
            "result_columns": COLUMNS, "results": results, "durations": {}, "version": 2}


def _row(values, version="3"):
    return [values, PARAMS, version, 1_700_000_000_000, 1.0, values, values, values, values, [1] * 2, [3] * 2]


def _old_results(tmp_path):
    d = tmp_path / "results" / "nvidia-h100-80gb-hbm3"
    d.mkdir(parents=True)
    (d / "machine.json").write_text(json.dumps({"machine": "nvidia-h100-80gb-hbm3", "copy_gbps": "3003", "version": 1}))
    (d / f"{'ab' * 4}-syssite-py3.12.json").write_text(json.dumps(_file("syssite-py3.12", {
        "benchmarks.Square.time_warm": _row([2e-6, None]),
        "benchmarks.Square.track_host": _row([1e-5, None], "4"),
        # one process timed a cold build: asv's fit beyond three values put the interval below zero
        "benchmarks.FirstCall.time_first_call": [[0.5], [["'square-mul'"]], "4", 1_700_000_000_000, 1.0, [-3.0],
                                                 [30.0], [0.5], [12.0], [1], [3], [[0.5, 0.52, 24.0]]]})))
    (d / f"{'ab' * 4}-existing-py_opt_python3.json").write_text(json.dumps(_file("existing-py_opt_python3", {
        "benchmarks.Square.time_warm": _row([None, 3e-6])}, copy="3002")))
    (tmp_path / "results" / "benchmarks.json").write_text(json.dumps({
        "benchmarks.Square.track_host": {"name": "benchmarks.Square.track_host", "params": PARAMS,
                                         "param_names": ["variant", "size", "dtype"], "version": "4"},
        "benchmarks.FirstCall.time_first_call": {"name": "benchmarks.FirstCall.time_first_call",
                                                 "params": [["'square-mul'"]], "param_names": ["variant"]},
        "version": 2}))
    return tmp_path / "results"


def test_old_results_are_rekeyed_once_and_keep_every_value(tmp_path):
    results = _old_results(tmp_path)
    done = migrate.migrate(results)
    assert any("1 cases merged" in line for line in done)  # the second environment's one value the first lacked
    (path,) = (results / "nvidia-h100-80gb-hbm3").glob("ab*.json")
    data = json.loads(path.read_text())
    assert "copy_gbps" not in data["params"] and "existing" not in path.name
    assert (data["params"]["cpu"], data["params"]["num_cpu"], data["params"]["os"]) == ("", "", "Linux")  # the box's
    (box,) = machine.boxes(results, "nvidia-h100-80gb-hbm3")
    assert (box["host"], box["cpu"], box["num_cpu"], box["os"]) == ("unrecorded-abababab", "Intel", "16", "Linux 6.18.44")
    rows = {name: dict(zip(COLUMNS, row)) for name, row in data["results"].items()}
    assert rows["benchmarks.Square.time_warm"]["result"] == [2e-6, 3e-6]
    host = rows["benchmarks.SquareHost.track_host"]
    assert "benchmarks.Square.track_host" not in rows
    assert host["params"] == [*PARAMS, ["'unrecorded-abababab'"]] and host["result"] == [1e-5, None]
    first = rows["benchmarks.FirstCall.time_first_call"]
    assert first["params"] == [["'square-mul'"], ["'unrecorded-abababab'"]]
    assert first["stats_ci_99_a"] == [0.5] and first["stats_ci_99_b"] == [30.0]  # the smallest sample; the top kept
    assert "copy_gbps" not in json.loads((results / "nvidia-h100-80gb-hbm3" / "machine.json").read_text())
    assert machine.copy_gbps(results, "nvidia-h100-80gb-hbm3") == 3003  # the run's reading, now the box's
    bench = json.loads((results / "benchmarks.json").read_text())
    assert bench["benchmarks.SquareHost.track_host"]["param_names"] == ["variant", "size", "dtype", "host"]
    assert migrate.migrate(results) == []  # a second run changes nothing
    rows = {(r["benchmark"], r["variant"], r["host"]): r for r in export.rows(results)}
    assert rows[("benchmarks.SquareHost.track_host", "square-mul", "unrecorded-abababab")]["mode"] == "host"
    assert rows[("benchmarks.Square.time_warm", "square-cuda-vec4", None)]["copy_gbps"] == 3003
    assert math.isclose(rows[("benchmarks.Square.time_warm", "square-mul", None)]["pct_of_peak"],
                        100 * 2 * 4 * 64 * 64 / 2e-6 / 1e9 / 3003)
