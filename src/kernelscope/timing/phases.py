"""Where a benchmark process's time goes, when most of a run is not measuring.

asv runs every benchmark case (benchmark x parameter set x round) in a process
of its own, forked from its forkserver. A case's process creates a CUDA
context, makes its input, calls the variant once (JIT, ``torch.compile``, the
CUDA extension's load), checks the output against the float64 reference,
plans warm mode, and only then takes the samples that asv keeps. With
``KERNELSCOPE_PHASE_LOG=PATH`` set, each benchmark process appends to PATH:

* one ``setup`` record when its case is first set up: the process's start (its
  fork), when setup began, and the seconds of each phase (``cuda``,
  ``input``, ``first_call``, ``gate``, ``plan``, ``flush``);
* a ``sample`` record at every teardown (asv tears down after each sample):
  the last one closes the ``body``, the part of the process that measured.

asv's own process (the one that spawns the benchmark processes) appends a
``case`` record per case it runs: when it asked for the case, the seconds
until the case's result came back, and the seconds it then spent saving
(:mod:`kernelscope.asv.saves`), of which waiting for the results folder's lock.

Setup is shared by a class's benchmarks and does not know which one asv runs:
the ``track_*`` bodies name themselves (:func:`method`); a process that did
not is the class's ``time_*`` benchmark. A sibling benchmark run in the same
process after it (:mod:`kernelscope.asv.sibling_process`) writes a ``sibling``
record with its seconds instead, and does not rename the process.

:func:`summarize` reads the log back: per phase and per benchmark, the
seconds a run spent, and the gaps between processes (asv's own work: spawning,
reading results). ``scripts/gpu/run_cost.py`` prints it beside the asv log's
own steps (environment, build, discovery). Off by default: one ``os.environ``
lookup per setup.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

LOG_ENV = "KERNELSCOPE_PHASE_LOG"
PHASES = ("cuda", "input", "first_call", "gate", "plan", "flush")

_case: dict | None = None  # the record of the case this process set up
_in_sibling = False  # a sibling benchmark is running in this process after its own


def process_start() -> float | None:
    """When this process started (its fork from asv's forkserver), in seconds since the epoch; None off Linux."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime: seconds since boot
        uptime = float(Path("/proc/uptime").read_text().split()[0])  # /proc/stat's btime is whole seconds
        return time.time() - (uptime - started)
    except (OSError, ValueError, IndexError):
        return None


def begin(cls: str, params, method: str | None = None) -> bool:
    """Start the record of this process's case (class, parameters, and the benchmark method if setup knows it).

    False if it was already begun: asv re-runs setup before every sample.
    """
    global _case
    if not os.environ.get(LOG_ENV) or _in_sibling:  # a sibling (SquareHost's, in Square's process) is the host's
        return False
    key = (cls, tuple(map(str, params)))
    if _case is not None and _case["key"] == key:
        return False
    _case = {"key": key, "class": cls, "method": method, "params": list(key[1]), "pid": os.getpid(),
             "process_start": process_start(), "setup_start": time.time(), "phases": {}}
    return True


def method(name: str) -> None:
    """Name the benchmark method this process runs (from its body; setup cannot tell)."""
    if _case is not None and _case["method"] != name and not _in_sibling:
        _case["method"] = name
        _write({"kind": "method", "pid": _case["pid"], "method": name})


@contextmanager
def phase(name: str):
    """Time a part of the case's setup (no-op without the log)."""
    if _case is None or "setup_end" in _case:
        yield
        return
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _case["phases"][name] = _case["phases"].get(name, 0.0) + time.perf_counter() - t0


@contextmanager
def sibling(benchmark_id: str):
    """A sibling benchmark (asv's id: ``benchmarks.Square.track_cold-17``) measured in this process after its own."""
    global _in_sibling
    t0, _in_sibling = time.perf_counter(), True
    try:
        yield
    finally:
        _in_sibling = False
        if _case is not None:
            name = ".".join(benchmark_id.rsplit("-", 1)[0].split(".")[-2:])
            _write({"kind": "sibling", "pid": _case["pid"], "benchmark": name, "seconds": time.perf_counter() - t0})


def setup_done() -> None:
    """End of the first setup: write the setup record."""
    if _case is None or "setup_end" in _case:
        return
    _case["setup_end"] = time.time()
    _write({k: v for k, v in _case.items() if k != "key"} | {"kind": "setup"})


def sample_done() -> None:
    """At every teardown: the time, so the last one closes the body."""
    if _case is not None and "setup_end" in _case:
        _write({"kind": "sample", "pid": _case["pid"], "t": time.time()})


def suite_imported() -> None:
    """The suite's import is done (asv imports it in discovery and in its forkserver): from the process's start."""
    if os.environ.get(LOG_ENV):
        _write({"kind": "import", "pid": os.getpid(), "start": process_start(), "end": time.time()})


def parent_case(benchmark: str, index: int, start: float, ran_s: float, saved_s: float, lock_wait_s: float) -> None:
    """In asv's process: one case as asv saw it (asked for at ``start``, epoch seconds; run, then saved)."""
    if os.environ.get(LOG_ENV):
        _write({"kind": "case", "pid": os.getpid(), "benchmark": benchmark, "index": index, "start": start,
                "ran_s": ran_s, "saved_s": saved_s, "lock_wait_s": lock_wait_s})


def parent_cases(path: str | Path) -> list[dict]:
    """The ``case`` records of asv's process(es), oldest first."""
    found = [json.loads(line) for line in Path(path).read_text().splitlines() if '"kind": "case"' in line]
    return sorted(found, key=lambda r: r["start"])


def _write(record: dict) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def imports(path: str | Path) -> list[dict]:
    """The suite's imports (discovery, then the forkserver): start and end of each, oldest first."""
    found = [json.loads(line) for line in Path(path).read_text().splitlines() if '"kind": "import"' in line]
    return sorted(found, key=lambda r: r["end"])


def read(path: str | Path) -> list[dict]:
    """One dict per process: its setup record, with ``body`` (seconds from setup's end to the last teardown)."""
    by_pid: dict[int, dict] = {}
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec["kind"] in ("import", "case"):
            continue
        if rec["kind"] == "setup":
            by_pid[rec["pid"]] = {**rec, "end": rec["setup_end"]}
        elif rec["pid"] not in by_pid:
            continue
        elif rec["kind"] == "method":
            by_pid[rec["pid"]]["method"] = rec["method"]
        elif rec["kind"] == "sibling":
            by_pid[rec["pid"]].setdefault("siblings", {})[rec["benchmark"]] = rec["seconds"]
        else:
            by_pid[rec["pid"]]["end"] = max(by_pid[rec["pid"]]["end"], rec["t"])
    found = sorted(by_pid.values(), key=lambda r: r["setup_start"])
    for r in found:
        r["benchmark"] = f"{r['class']}.{r['method'] or 'time_warm'}"
        r["siblings_s"] = sum(r.get("siblings", {}).values())
        r["body"] = r["end"] - r["setup_end"] - r["siblings_s"]  # the process's own samples
        r["to_setup"] = (r["setup_start"] - r["process_start"]) if r.get("process_start") else None
    return found


def summarize(records: list[dict]) -> dict:
    """Seconds spent per phase, per benchmark, and between processes, over a run's processes.

    A sibling measured in another benchmark's process counts under its own
    benchmark as ``in_other_processes``, with its seconds; its process's
    ``siblings`` phase has the same seconds.
    """
    totals: dict[str, float] = defaultdict(float)
    per_benchmark: dict[str, dict] = defaultdict(
        lambda: {"processes": 0, "seconds": 0.0, "body": 0.0, "in_other_processes": 0})
    gaps = 0.0
    for prev, r in zip([None, *records], records):
        for name, seconds in r["phases"].items():
            totals[name] += seconds
        totals["body"] += r["body"]
        totals["siblings"] += r["siblings_s"]
        for name, seconds in r.get("siblings", {}).items():
            per_benchmark[name]["in_other_processes"] += 1
            per_benchmark[name]["seconds"] += seconds
            per_benchmark[name]["body"] += seconds
        if r["to_setup"] is not None:
            totals["fork_to_setup"] += r["to_setup"]
        start = r.get("process_start") or r["setup_start"]
        if prev is not None:
            gaps += max(0.0, start - prev["end"])
        b = per_benchmark[r["benchmark"]]
        b["processes"] += 1
        b["seconds"] += r["end"] - start - r["siblings_s"]
        b["body"] += r["body"]
    span = (records[-1]["end"] - (records[0].get("process_start") or records[0]["setup_start"])) if records else 0.0
    return {"processes": len(records), "span_s": span, "between_processes_s": gaps,
            "phases_s": dict(totals), "benchmarks": dict(per_benchmark)}
