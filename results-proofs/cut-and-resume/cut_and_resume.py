#!/usr/bin/env python3
"""Kill an asv run at several moments, resume each, and say what the cut cost.

    python3 results-proofs/cut-and-resume/cut_and_resume.py --at 45 90 150 --out DIR -- --machine M -b "Gelu\\." HEAD^!

For each moment T: a fresh results folder (DIR/cut-T/results), ``asv run ARGS``
killed with SIGKILL (asv, its forkserver and the benchmark process in flight)
T seconds after it started, then ``asv run --skip-existing-successful ARGS``
into the same folder. Every benchmark process logs the case it ran
(``KERNELSCOPE_PHASE_LOG``), so the script can tell, per cut:

* how many processes the cut run started, and how many of their cases the
  results file kept (the rest: the case in flight, at most one);
* which cases the file lacked, and which the resumed run started processes for
  (only those, and no others, is the claim);
* the resumed run's seconds.

It prints one line per cut and writes DIR/cut-and-resume.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

METHOD_OF = {"FirstCall": "time_first_call", "Launch": "track_graph"}  # a process that names no method: its class's


def _config(results: Path, out: Path) -> Path:
    import json5

    conf = json5.loads(Path("asv.conf.json").read_text())
    conf["results_dir"] = str(results)
    out.write_text(json.dumps(conf, indent=2))
    return out


def _processes(phase_log: Path) -> dict[int, str]:
    """pid -> the benchmark case its process ran, as 'Class.method(params)'."""
    setups, methods = {}, {}
    if not phase_log.exists():
        return {}
    for line in phase_log.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("kind") == "setup" and rec["pid"] not in setups:
            setups[rec["pid"]] = (rec.get("class"), rec.get("params"), rec.get("method"))
        elif rec.get("kind") == "method":
            methods[rec["pid"]] = rec["method"]
    out = {}
    for pid, (cls, params, named) in setups.items():
        method = methods.get(pid) or named or METHOD_OF.get(cls, "time_warm")
        out[pid] = f"{cls}.{method}({', '.join(map(str, params or []))})"
    return out


def _stored(results: Path) -> dict[str, object]:
    """'Class.method(params)' -> stored value, for every case of every result file in ``results``."""
    import itertools

    found = {}
    for path in results.glob("*/*.json"):
        if path.name == "machine.json":
            continue
        data = json.loads(path.read_text())
        for name, row in data["results"].items():
            record = dict(zip(data["result_columns"], row))
            combos = itertools.product(*record["params"])
            values = record.get("result") or [None] * math.prod(len(p) for p in record["params"])
            for combo, value in zip(combos, values):
                params = ", ".join(json.loads(c.replace("'", '"')) for c in combo)
                found[f"{name.split('.', 1)[1]}({params})"] = value
    return found


def _measured(stored: dict) -> set[str]:
    return {k for k, v in stored.items() if isinstance(v, float) and not math.isnan(v)}


def _asv(config: Path, args: list[str], phase_log: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "KERNELSCOPE_PHASE_LOG": str(phase_log)}
    with open(log, "w") as f:
        return subprocess.Popen(["asv", "run", "--config", str(config), *args], env=env, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)


def cut(at: float, out: Path, args: list[str]) -> dict:
    folder = out / f"cut-{at:g}"
    folder.mkdir(parents=True, exist_ok=True)
    results = folder / "results"
    config = _config(results, Path(f"asv.cut-{at:g}.json"))
    first = _asv(config, args, folder / "cut.phases.jsonl", folder / "cut.log")
    time.sleep(at)
    if first.poll() is not None:
        return {"at_s": at, "error": "the run ended before the cut"}
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    started = _processes(folder / "cut.phases.jsonl")
    kept_before = _stored(results)
    measured_before = _measured(kept_before)
    lost = sorted({case for case in started.values() if case not in kept_before})
    t0 = time.time()
    resumed = _asv(config, ["--skip-existing-successful", *args], folder / "resumed.phases.jsonl",
                   folder / "resumed.log")
    resumed.wait()
    seconds = time.time() - t0
    after = _stored(results)
    missing = _measured(after) - measured_before
    ran = set(_processes(folder / "resumed.phases.jsonl").values())
    config.unlink()
    return {"at_s": at, "processes_started": len(started), "cases_kept": len(measured_before),
            "processes_whose_case_was_lost": lost, "cases_missing": len(missing),
            "resumed_processes": len(ran), "resumed_processes_for_kept_cases": sorted(ran & measured_before),
            "missing_cases_not_run_by_a_process_of_their_own": len(missing - ran),
            "resumed_seconds": round(seconds, 1), "resumed_rc": resumed.returncode,
            "cases_measured_after": len(_measured(after))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--at", type=float, nargs="+", required=True, help="seconds after the start to kill the run")
    parser.add_argument("--out", type=Path, required=True, help="folder for each cut's results and logs")
    parser.add_argument("asv_args", nargs=argparse.REMAINDER, help="after --: asv run's arguments")
    args = parser.parse_args()
    asv_args = args.asv_args[1:] if args.asv_args[:1] == ["--"] else args.asv_args
    reports = []
    for at in args.at:
        report = cut(at, args.out, asv_args)
        reports.append(report)
        print(json.dumps({k: (len(v) if isinstance(v, list) else v) for k, v in report.items()}), flush=True)
    (args.out / "cut-and-resume.json").write_text(json.dumps(reports, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
