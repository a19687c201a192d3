"""Every stored asv result as a tidy table: one row per benchmark, parameter set and commit.

Reads asv's own files (``results/MACHINE/HASH-ENV.json`` with their
``result_columns``, and ``results/benchmarks.json``) and joins each timing with
the catalog's bytes model: bytes moved, achieved GB/s, and percent of the
machine's measured copy bandwidth.
"""

from __future__ import annotations

import ast
import csv
import io
import itertools
import json
import math
from pathlib import Path

from kernelscope.catalog import VARIANTS
from kernelscope.ops import numel, parse_shape

COLUMNS = ["machine", "gpu", "commit", "date", "op", "variant", "backend", "mode", "size", "numel", "dtype",
           "time_s", "ci_low", "ci_high", "samples", "bytes", "gbps", "pct_of_peak"]

PARAM_NAMES = {"first_call": ["variant"]}
# track_first_call: the name of first-call results before suite version 3
MODES = {"time_warm": "warm", "track_cold": "cold", "track_graph": "graph", "time_first_call": "first_call",
         "track_first_call": "first_call"}


def _unquote(value: str):
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def iter_rows(results_dir: str | Path = "results"):
    results_dir = Path(results_dir)
    bench_file = results_dir / "benchmarks.json"
    if not bench_file.exists():
        raise FileNotFoundError(f"no asv results in {results_dir}/ (benchmarks.json missing): run `asv run` first")
    benchmarks = _load(bench_file)
    for machine_dir in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        for path in sorted(machine_dir.glob("*.json")):
            if path.name == "machine.json":
                continue
            data = _load(path)
            params = data.get("params", {})
            yield from _rows_of(data, params, benchmarks)


def _rows_of(data: dict, params: dict, benchmarks: dict):
    columns = data.get("result_columns", [])
    peak = float(params.get("copy_gbps") or "nan")
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
            if time_s is None or (isinstance(time_s, float) and math.isnan(time_s)):
                continue  # skipped (n/a) or failed: nothing measured
            p = {k: _unquote(v) for k, v in zip(param_names, combo)}
            variant = VARIANTS.get(p.get("variant"))
            size = p.get("size") or (None if variant is None else "x".join(map(str, variant.op_spec.bench_shapes[0])))
            dtype = p.get("dtype", "float32")
            shape = parse_shape(size) if size else None
            nbytes = variant.op_spec.bytes_for(shape, dtype) if (variant and shape) else None
            mode = MODES[method]
            gbps = nbytes / time_s / 1e9 if (nbytes and mode != "first_call") else None
            samples = (record.get("samples") or [None] * len(param_sets))[i]
            yield {
                "machine": params.get("machine", ""),
                "gpu": params.get("gpu", ""),
                "commit": data.get("commit_hash", ""),
                "date": data.get("date"),
                "op": variant.op if variant else "",
                "variant": p.get("variant", ""),
                "backend": variant.backend if variant else "",
                "mode": mode,
                "size": size,
                "numel": numel(shape) if shape else None,
                "dtype": dtype,
                "time_s": time_s,
                "ci_low": _at(record.get("stats_ci_99_a"), i),
                "ci_high": _at(record.get("stats_ci_99_b"), i),
                "samples": len(samples) if samples else None,
                "bytes": nbytes if mode != "first_call" else None,
                "gbps": gbps,
                "pct_of_peak": 100 * gbps / peak if (gbps and peak == peak) else None,
            }


def _at(values, i):
    return values[i] if values and i < len(values) else None


def rows(results_dir: str | Path = "results") -> list[dict]:
    return list(iter_rows(results_dir))


def to_csv(table: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return buf.getvalue()
