"""Every stored asv result as a tidy table: one row per benchmark, parameter set and commit.

Reads asv's own files (``results/MACHINE/HASH-ENV.json`` with their
``result_columns``, and ``results/benchmarks.json``) and joins each timing with
the catalog's models: bytes moved, achieved GB/s, percent of the machine's
measured copy bandwidth (the median of its boxes' readings,
:func:`kernelscope.results.machine.copy_gbps`), and FLOP/s. Host mode and
first-call rows also name the box they ran on (``host``). The CLI (``kernelscope results``) and the
site read the same rows.

Each timed row also carries the SM clock its samples ran at and how many of
them ran throttled (below 75% of the GPU's max SM clock), from the clock log
the benchmark wrote beside asv's result file (:mod:`kernelscope.results.clock_logs`),
and whether it is a launch-bound one (:mod:`kernelscope.timing.processes`):
under 20 us a call warm (and the same case cold), its interval spanning processes.

A benchmark asv recorded as failed (``null``: the correctness gate refused the
output, or the process crashed) is a row with ``status = "failed"`` and no time
when asked for with ``include_failed``; a skipped one (``NaN``: the variant
does not run there) is no row at all.
"""

from __future__ import annotations

import ast
import csv
import functools
import hashlib
import io
import itertools
import json
import math
from pathlib import Path

from kernelscope import modes
from kernelscope.catalog import VARIANTS
from kernelscope.ops import numel, parse_shape
from kernelscope.results import clock_logs
from kernelscope.results.machine import copy_gbps as machine_copy_gbps
from kernelscope.timing import clocks, processes

COLUMNS = ["machine", "gpu", "commit", "date", "run_at", "benchmark", "version", "status", "op", "variant", "backend",
           "mode", "size", "numel", "dtype", "host", "time_s", "ci_low", "ci_high", "samples", "launch_bound", "bytes", "gbps",
           "pct_of_peak", "copy_gbps", "flops", "gflops", "sm_mhz", "throttled"]
MEASURED, FAILED = "measured", "failed"

PARAM_NAMES = {"first_call": ["variant"]}
MODES = modes.BY_METHOD  # a stored benchmark's method -> its timing mode


@functools.lru_cache(maxsize=4096)  # a few hundred distinct parameter values, each read thousands of times
def _unquote(value: str):
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


_shape = functools.lru_cache(maxsize=4096)(parse_shape)  # a few dozen sizes, each in thousands of rows


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _result_files(results_dir: Path):
    bench_file = results_dir / "benchmarks.json"
    if not bench_file.exists():
        raise FileNotFoundError(f"no asv results in {results_dir}/ (benchmarks.json missing): run `asv run` first")
    for machine_dir in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        for path in sorted(machine_dir.glob("*.json")):
            if path.name != "machine.json":
                yield path


def iter_rows(results_dir: str | Path = "results", include_failed: bool = False):
    results_dir = Path(results_dir)
    files = list(_result_files(results_dir))  # raises first if there are no results
    yield from _iter_rows(results_dir, [(path, _load(path)) for path in files], include_failed)


def _iter_rows(results_dir: Path, loaded: list[tuple[Path, dict]], include_failed: bool):
    benchmarks = _load(results_dir / "benchmarks.json")
    copy: dict[str, float | None] = {}
    for path, data in loaded:
        params = data.get("params", {})
        machine = params.get("machine", path.parent.name)
        if machine not in copy:
            copy[machine] = machine_copy_gbps(results_dir, machine)
        peak = copy[machine] or float(params.get("copy_gbps") or "nan")  # a file from before boxes.jsonl: its own
        yield from _rows_of(data, params, benchmarks, include_failed, clock_logs.read_log(path), peak)


def runs(results_dir: str | Path = "results") -> list[dict]:
    """One record per stored run (a machine and a commit): what ran, where, with which versions, and the machine's
    copy bandwidth."""
    return _runs(Path(results_dir), [(path, _load(path)) for path in _result_files(Path(results_dir))])


def _runs(results_dir: Path, loaded: list[tuple[Path, dict]]) -> list[dict]:
    found = []
    copy: dict[str, float | None] = {}
    for path, data in loaded:
        columns = data.get("result_columns", [])
        started = [dict(zip(columns, v)).get("started_at") for v in data.get("results", {}).values()]
        started = [s for s in started if s]
        params = data.get("params", {})
        machine = params.get("machine", path.parent.name)
        if machine not in copy:
            copy[machine] = machine_copy_gbps(results_dir, machine)
        found.append({"machine": machine, "commit": data.get("commit_hash", ""), "date": data.get("date"),
                      "run_at": min(started) if started else None, "env": data.get("env_name", ""),
                      "benchmarks": sorted(data.get("results", {})), "params": params,
                      "copy_gbps": copy[machine] or (float(params["copy_gbps"]) if params.get("copy_gbps") else None),
                      "file": str(path)})
    return found


def _rows_of(data: dict, params: dict, benchmarks: dict, include_failed: bool, clock_log: dict, peak: float):
    columns = data.get("result_columns", [])
    for name, values in data.get("results", {}).items():
        method = name.rsplit(".", 1)[-1]
        if method not in MODES:
            continue
        record = dict(zip(columns, values))
        # A result whose benchmark the suite has since renamed (track_first_call) is
        # no longer in benchmarks.json; its parameters follow the suite's convention.
        bench = benchmarks.get(name, {})
        param_sets = list(itertools.product(*record.get("params", bench.get("params", []))))
        param_names = bench.get("param_names") or PARAM_NAMES.get(MODES[method], ["variant", "size", "dtype"])
        results = record.get("result") or []
        for i, combo in enumerate(param_sets):
            time_s = results[i] if i < len(results) else None
            if isinstance(time_s, float) and math.isnan(time_s):
                continue  # skipped (n/a): the variant does not run there
            failed = time_s is None
            if failed and not include_failed:
                continue
            p = {k: _unquote(v) for k, v in zip(param_names, combo)}
            variant = VARIANTS.get(p.get("variant"))
            size = p.get("size") or (None if variant is None else "x".join(map(str, variant.op_spec.bench_shapes[0])))
            dtype = p.get("dtype", "float32")
            shape = _shape(size) if size else None
            mode = MODES[method]
            timed = not failed and mode != "first_call"
            nbytes = variant.op_spec.bytes_for(shape, dtype) if (variant and shape and mode != "first_call") else None
            flops = variant.op_spec.flops(shape) if (variant and shape and mode != "first_call") else None
            gbps = nbytes / time_s / 1e9 if (nbytes and timed) else None
            samples = (record.get("samples") or [None] * len(param_sets))[i]
            clock = _clock_of(clock_log.get((name, (p.get("variant"), size, dtype))), len(samples) if samples else None)
            yield {
                "machine": params.get("machine", ""),
                "gpu": params.get("gpu", ""),
                "commit": data.get("commit_hash", ""),
                "date": data.get("date"),
                "run_at": record.get("started_at"),  # ms since the epoch; "date" is the commit's
                "benchmark": name,
                "version": record.get("version"),
                "status": FAILED if failed else MEASURED,
                "op": variant.op if variant else "",
                "variant": p.get("variant", ""),
                "backend": variant.backend if variant else "",
                "mode": mode,
                "size": size,
                "numel": numel(shape) if shape else None,
                "dtype": dtype,
                "host": p.get("host"),  # the box, for the modes that time the host: host mode, the first call
                "time_s": time_s,
                "ci_low": _at(record.get("stats_ci_99_a"), i),
                "ci_high": _at(record.get("stats_ci_99_b"), i),
                "samples": len(samples) if samples else None,
                "launch_bound": processes.launch_bound_result(mode, None if failed else time_s, params.get("gpu"),
                                                              len(samples) if samples else None),
                "bytes": nbytes,
                "gbps": gbps,
                "pct_of_peak": 100 * gbps / peak if (gbps and peak == peak) else None,
                "copy_gbps": peak if peak == peak else None,
                "flops": flops,
                "gflops": flops / time_s / 1e9 if (flops and timed) else None,
                **clock,
            }


def mostly_low_clock(row: dict) -> bool:
    """Whether most of a result's samples read the SM clock under the throttle fraction (from its clock log)."""
    return bool(row.get("throttled") and row.get("samples")) and row["throttled"] > row["samples"] / 2


def _clock_of(record: dict | None, n_samples: int | None) -> dict:
    """Median SM clock and throttled count over the samples asv kept (the log's last ``n_samples`` readings)."""
    if not record or not record.get("mhz"):
        return {"sm_mhz": None, "throttled": None}
    readings, retaken = record["mhz"], record.get("retaken", 0)
    if retaken:  # graph v8: each retaken sample's reading was low and is not among the samples asv kept
        readings = sorted(readings)[retaken:]
    watch = clocks.ClockWatch(record.get("max_mhz"), record.get("fraction", clocks.THROTTLE_FRACTION), readings)
    summary = watch.summary(last=None if retaken else n_samples)
    return {"sm_mhz": summary["median_mhz"], "throttled": summary["throttled"]}


def _at(values, i):
    return values[i] if values and i < len(values) else None


def _case(row: dict) -> tuple:
    return row["machine"], row["commit"], row["benchmark"], row["variant"], row["size"], row["dtype"], row["host"]


def rows(results_dir: str | Path = "results", include_failed: bool = False) -> list[dict]:
    return _kept(list(iter_rows(results_dir, include_failed)), include_failed)


def _kept(found: list[dict], include_failed: bool) -> list[dict]:
    if include_failed:
        # A commit can have two result files (asv environments), the second a rerun of what
        # failed in the first: a case measured in either is not a failure of that commit.
        measured = {_case(r) for r in found if r["status"] == MEASURED}
        found = [r for r in found if r["status"] == MEASURED or _case(r) not in measured]
    return found


# A result file's rows, kept for this process by what they are made of: the file's bytes, its clock log's,
# benchmarks.json's and the machine's copy bandwidth. A process that reads results/ again (`mkdocs serve` after an
# edit, the tests' site builds of copies of results/) takes the rows of what did not change from here.
_FILE_ROWS: dict[tuple, list[dict]] = {}
_FILE_ROWS_KEPT = 512  # result files; results/ holds a few dozen


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.blake2b(data, digest_size=20).hexdigest()


def rows_and_runs(results_dir: str | Path = "results", include_failed: bool = False) -> tuple[list[dict], list[dict]]:
    """:func:`rows` and :func:`runs` of one folder, each result file read once for both (and its rows worked out
    once a process for the same bytes: :data:`_FILE_ROWS`)."""
    results_dir = Path(results_dir)
    files = list(_result_files(results_dir))  # raises first if there are no results
    bench_bytes = (results_dir / "benchmarks.json").read_bytes()
    bench_digest, benchmarks = _digest(bench_bytes), json.loads(bench_bytes)
    loaded, found = [], []
    copy: dict[str, float | None] = {}
    for path in files:
        raw = path.read_bytes()
        data = json.loads(raw)
        loaded.append((path, data))
        params = data.get("params", {})
        machine = params.get("machine", path.parent.name)
        if machine not in copy:
            copy[machine] = machine_copy_gbps(results_dir, machine)
        peak = copy[machine] or float(params.get("copy_gbps") or "nan")  # a file from before boxes.jsonl: its own
        log = clock_logs.stored(path.with_name(path.stem + clock_logs.SUFFIX))
        key = (_digest(raw), bench_digest, tuple(map(_digest, log)), repr(peak), path.parent.name, include_failed)
        if key not in _FILE_ROWS:
            if len(_FILE_ROWS) >= _FILE_ROWS_KEPT:
                _FILE_ROWS.pop(next(iter(_FILE_ROWS)))  # the oldest kept
            _FILE_ROWS[key] = list(_rows_of(data, params, benchmarks, include_failed,
                                            clock_logs.latest(clock_logs.lines_of(*log)), peak))
        found += map(dict, _FILE_ROWS[key])  # copies: a caller's change stays its own
    return _kept(found, include_failed), _runs(results_dir, loaded)


def to_csv(table: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return buf.getvalue()
