#!/usr/bin/env python3
"""Where an asv run's time went: asv's own steps, then each benchmark process's phases.

    python3 scripts/gpu/run_cost.py RUN.log RUN.phases.jsonl [--json OUT]
    python3 scripts/gpu/run_cost.py - RUN.phases.jsonl   # no asv log (kernelscope asv-run's are not stamped)

RUN.log is asv's output through scripts/gpu/stamp.py (seconds since the start
on every line); RUN.phases.jsonl the phase log the benchmark processes wrote
(KERNELSCOPE_PHASE_LOG, kernelscope.timing.phases). Prints one table: the
environment, build and install, discovery, the forkserver's start, then per
phase of the benchmark processes (fork to setup, CUDA context, input, first
call, the correctness gate, planning, the samples), and asv's time between
processes; and the same per benchmark (a case measured in another benchmark's
process, kernelscope.asv.siblings, counts under "in another's"). Then, per
asv process (one per GPU under ``kernelscope asv-run``), its cases as it saw
them: how long it waited for the benchmark processes, how long it saved; and
every first call over 5 s (a compile or build that a cache should have held).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from kernelscope.timing import phases  # noqa: E402

def asv_log(log: Path) -> tuple[float, float, list[tuple[float, str]]]:
    """(epoch of the log's start, seconds at its last line, [(seconds, line)])."""
    started, last, lines = 0.0, 0.0, []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("# started"):
            started = float(line.split()[2])
            continue
        m = re.match(r"\s*([\d.]+) (.*)", line)
        if m:
            last = float(m.group(1))
            lines.append((last, m.group(2)))
    return started, last, lines


def table(log: Path, phase_log: Path) -> dict:
    """The run's time in consecutive parts: asv before the first benchmark process, the processes' phases, after."""
    started, end, _ = asv_log(log)
    procs = phases.read(phase_log)
    summary = phases.summarize(procs)
    imports = phases.imports(phase_log)
    first = (procs[0].get("process_start") or procs[0]["setup_start"]) - started if procs else end
    suite = sum(r["end"] - r["start"] for r in imports if r.get("start"))
    rows = [("asv: environment, build, install (the rest before the first benchmark)", first - suite),
            ("suite import (import torch and the frameworks; discovery, forkserver)", suite)]
    per_phase = summary["phases_s"]
    for key, label in [("fork_to_setup", "process start to setup (fork, asv_runner)"),
                       ("cuda", "CUDA context"), ("input", "input"),
                       ("first_call", "first call (JIT, compile, extension load)"),
                       ("gate", "correctness gate"), ("plan", "warm plan"), ("body", "samples (asv's benchmark body)"),
                       ("siblings", "other modes of the case, in its process (kernelscope.asv.siblings)")]:
        rows.append((label, per_phase.get(key, 0.0)))
    rows.append(("asv between processes (spawn, results)", summary["between_processes_s"]))
    tail = end - (first + summary["span_s"]) if procs else 0.0
    rows.append(("after the last process (saving, tables)", max(tail, 0.0)))
    return {"total_s": end, "rows": rows, "processes": summary["processes"], "benchmarks": summary["benchmarks"]}


def asv_processes(phase_log: Path) -> None:
    """Per asv process: its cases, their span, the seconds waiting for results and saving; then slow first calls."""
    cases = phases.parent_cases(phase_log)
    by_pid: dict[int, list[dict]] = {}
    for c in cases:
        by_pid.setdefault(c["pid"], []).append(c)
    if by_pid:
        print()
        print("asv process  cases  span s  running s  saving s  lock wait s")
    for pid, own in by_pid.items():
        span = own[-1]["start"] + own[-1]["ran_s"] + own[-1]["saved_s"] - own[0]["start"]
        print(f"{pid:11d}  {len(own):5d}  {span:6.1f}  {sum(c['ran_s'] for c in own):9.1f}"
              f"  {sum(c['saved_s'] for c in own):8.1f}  {sum(c['lock_wait_s'] for c in own):11.2f}")
    slow = [p for p in phases.read(phase_log) if p["phases"].get("first_call", 0.0) > 5.0]
    print()
    print(f"first calls over 5 s: {len(slow)}")
    for p in slow:
        print(f"  {p['class']} {' '.join(p['params'])}: {p['phases']['first_call']:.1f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", help="asv's output through stamp.py, or - for none")
    ap.add_argument("phase_log", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.log == "-":
        asv_processes(args.phase_log)
        return 0
    t = table(Path(args.log), args.phase_log)
    width = max(len(r[0]) for r in t["rows"])
    print(f"{'part of the run':<{width}}  seconds  share")
    for name, seconds in t["rows"]:
        print(f"{name:<{width}}  {seconds:7.1f}  {seconds / t['total_s']:5.1%}")
    print(f"{'total':<{width}}  {t['total_s']:7.1f}   ({t['processes']} benchmark processes)")
    print()
    print(f"{'benchmark':<32} processes  in another's  seconds  per case  samples share")
    for name, b in sorted(t["benchmarks"].items()):
        cases = b["processes"] + b.get("in_other_processes", 0)
        print(f"{name:<32} {b['processes']:9d}  {b.get('in_other_processes', 0):12d}  {b['seconds']:7.1f}"
              f"  {b['seconds'] / cases if cases else 0:8.2f}  {b['body'] / b['seconds'] if b['seconds'] else 0:13.0%}")
    asv_processes(args.phase_log)
    if args.json:
        args.json.write_text(json.dumps(t, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
