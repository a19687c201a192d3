"""Results stored by an older kernelscope, brought to the names and keys the suite gives them now.

Run once over a results folder (``kernelscope migrate-results results/``); a
second run changes nothing. Three changes, each what a run of today's suite
would have stored, none of them a new measurement:

1. **What a box is, is not the machine's configuration.** The copy bandwidth,
   and the host's CPU, cores, memory and kernel release, leave every result
   file's ``params`` and ``machine.json`` (where asv drew one graph per
   distinct set of them) for ``results/<machine>/boxes.jsonl``: one line per
   run, with its box unrecorded.
2. **Host-dependent benchmarks name their box.** ``Square.track_host`` becomes
   ``SquareHost.track_host`` and ``FirstCall.time_first_call`` gains the
   ``host`` parameter. Which box ran an older result was not recorded, so each
   run's are filed under a box of their own, ``unrecorded-<commit>``: compared
   with nothing from another run, never with another box's.
3. **One environment file per commit.** A commit whose failed cases were rerun
   in a second asv environment (``existing``) has that file's values merged into
   the first where the first has none, and the second removed.
4. **No interval bound a time cannot have.** A case sampled one value per
   process whose stored 99% interval starts at or below zero (asv's fit beyond
   three values, one of them far above the others) gets the lower bound today's
   rule derives from its stored samples (:func:`kernelscope.asv.intervals.widen`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from datetime import datetime, timezone
from pathlib import Path

from .runs import n_cases
from kernelscope.results.machine import BOXES_FILE

BOX_PARAMS = {"copy_gbps": None, "cpu": "", "num_cpu": "", "ram": ""}  # a box's facts; what the params keep of them
HOST_MODES = ("track_host",)  # methods moved to a class of their own, named <class>Host
HOST_PARAM_BENCHMARKS = ("benchmarks.FirstCall.time_first_call",)  # benchmarks that gained the host parameter


def unrecorded_box(commit: str) -> str:
    return f"unrecorded-{commit[:8]}"


def _rows(data: dict) -> dict[str, dict]:
    columns = data["result_columns"]
    return {name: dict(itertools.zip_longest(columns, row)) for name, row in data["results"].items()}


def _store(data: dict, rows: dict[str, dict]) -> None:
    columns = data["result_columns"]
    out = {}
    for name, record in rows.items():
        row = [record.get(c) for c in columns]
        while row and row[-1] is None:
            row.pop()
        out[name] = row
    data["results"] = out


def _expanded(value, n: int) -> list:
    return list(value) if isinstance(value, list) else [value] * n


def with_host(name: str, record: dict, host: str) -> tuple[str, dict]:
    """A host-dependent benchmark's name and record as the suite stores them now (unchanged if they already are)."""
    module, cls, method = name.split(".")
    if method in HOST_MODES and not cls.endswith("Host"):
        name, record = f"{module}.{cls}Host.{method}", {**record, "params": [*record["params"], [repr(host)]]}
    elif name in HOST_PARAM_BENCHMARKS and len(record.get("params") or []) == 1:
        record = {**record, "params": [*record["params"], [repr(host)]]}
    return name, record


def merge_environments(first: dict, second: dict) -> int:
    """Put ``second``'s values into ``first`` wherever ``first`` has none (same benchmark, version and case);
    the number of cases filled in."""
    ours, theirs = _rows(first), _rows(second)
    filled = 0
    for name, other in theirs.items():
        mine = ours.get(name)
        if mine is None:
            ours[name] = other
            filled += sum(isinstance(v, float) and not math.isnan(v) for v in other.get("result") or [])
            continue
        if mine.get("version") != other.get("version") or mine.get("params") != other.get("params"):
            continue
        n = n_cases(mine["params"])
        columns = [c for c in first["result_columns"] if c not in ("params", "version", "started_at", "duration")]
        merged = {c: _expanded(mine.get(c), n) for c in columns}
        given = {c: _expanded(other.get(c), n) for c in columns}
        for j in range(n):
            value = given["result"][j]
            if merged["result"][j] is None and isinstance(value, float) and not math.isnan(value):
                for c in columns:
                    merged[c][j] = given[c][j]
                filled += 1
        for c in columns:
            mine[c] = merged[c] if any(v is not None for v in merged[c]) else None
    _store(first, ours)
    return filled


def positive_lower_bounds(path: Path) -> int:
    """Give every case of a result file whose stored interval starts at or below zero the lower bound
    :func:`kernelscope.asv.intervals.widen` derives from its samples; how many cases changed."""
    from asv.results import Results

    from kernelscope.asv.intervals import widen

    data = json.loads(path.read_text())
    rows = _rows(data)
    if not any(v is not None and v <= 0 for r in rows.values() for v in r.get("stats_ci_99_a") or []):
        return 0
    derived = Results.load(str(path))
    widen(derived)
    fixed = 0
    for name, record in rows.items():
        low = record.get("stats_ci_99_a") or []
        stats = derived._stats.get(name) or []
        for j, value in enumerate(low):
            new = stats[j].get("ci_99_a") if j < len(stats) and stats[j] else None
            if value is not None and value <= 0 and new is not None and new > 0:
                low[j] = new
                fixed += 1
    if fixed:
        _store(data, rows)
        path.write_text(json.dumps(data) + "\n")
    return fixed


def _started(data: dict) -> str | None:
    starts = [r.get("started_at") for r in _rows(data).values() if r.get("started_at")]
    return datetime.fromtimestamp(min(starts) / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if starts else None


def migrate(results_dir: str | Path) -> list[str]:
    """Migrate every result file under ``results_dir`` in place; what was done, one line each."""
    results_dir = Path(results_dir)
    done: list[str] = []
    hosts: dict[str, set[str]] = {}
    for machine_dir in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        files = sorted(p for p in machine_dir.glob("*.json") if p.name != "machine.json")
        by_commit: dict[str, list[Path]] = {}
        for path in files:
            by_commit.setdefault(path.name.split("-", 1)[0], []).append(path)
        boxes = []
        for commit8, paths in by_commit.items():
            datas = {p: json.loads(p.read_text()) for p in paths}
            keep = min(paths, key=lambda p: ("existing" in p.name, p.name))  # asv's own environment first
            for other in paths:
                if other != keep:
                    filled = merge_environments(datas[keep], datas[other])
                    other.unlink()
                    done.append(f"{other.relative_to(results_dir)}: {filled} cases merged into {keep.name}, removed")
            data = datas[keep]
            box = unrecorded_box(data["commit_hash"])
            params = data["params"]
            facts = {k: params[k] for k in BOX_PARAMS if params.get(k)}
            system = str(params.get("os", "")).split(" ", 1)[0]
            if "os" in params and params["os"] != system:
                facts["os"] = params["os"]
            notes = [f"the box's facts to {BOXES_FILE}"] if facts else []
            if "copy_gbps" in facts:
                boxes.append({"host": box, **facts, "copy_gbps": float(facts["copy_gbps"]), "at": _started(data),
                              "recorded": f"from {keep.name}'s params"})
            params.pop("copy_gbps", None)
            params.update({k: v for k, v in BOX_PARAMS.items() if k in params and v is not None})
            if "os" in params:
                params["os"] = system
            rows, rekeyed = {}, False
            for name, record in _rows(data).items():
                new_name, new_record = with_host(name, record, box)
                rekeyed |= new_name != name or new_record is not record
                rows[new_name] = new_record
                if new_record.get("params") and new_name.endswith(("Host.track_host", "FirstCall.time_first_call")):
                    hosts.setdefault(new_name, set()).update(json.loads(h.replace("'", '"')) for h in new_record["params"][-1])
            if rekeyed:
                notes.append(f"host-dependent benchmarks under {box}")
            if notes or len(paths) > 1:
                _store(data, rows)
                keep.write_text(json.dumps(data) + "\n")
                done.append(f"{keep.relative_to(results_dir)}: {', '.join(notes) or 'merged'}")
        for path in sorted(p for p in machine_dir.glob("*.json") if p.name != "machine.json"):
            fixed = positive_lower_bounds(path)
            if fixed:
                done.append(f"{path.relative_to(results_dir)}: {fixed} intervals' lower bounds from their samples")
        if boxes:
            boxes.sort(key=lambda b: b["at"] or "")
            with open(machine_dir / BOXES_FILE, "a") as f:
                for b in boxes:
                    f.write(json.dumps(b, sort_keys=True) + "\n")
        machine_file = machine_dir / "machine.json"
        if machine_file.exists():
            info = json.loads(machine_file.read_text())
            before = dict(info)
            info.pop("copy_gbps", None)
            info.update({k: v for k, v in BOX_PARAMS.items() if k in info and v is not None})
            info["os"] = str(info.get("os", "")).split(" ", 1)[0]
            if info != before:
                machine_file.write_text(json.dumps(info, indent=4, sort_keys=True) + "\n")
                done.append(f"{machine_file.relative_to(results_dir)}: the box's facts removed")
    bench_file = results_dir / "benchmarks.json"
    if bench_file.exists() and hosts:
        benchmarks = json.loads(bench_file.read_text())
        renamed = False
        for name in list(benchmarks):
            if name == "version":
                continue
            entry = benchmarks[name]
            new_name, new_entry = with_host(name, {"params": entry.get("params", [])}, "")
            if new_name == name and new_entry["params"] == entry.get("params"):
                continue
            entry = {**entry, "name": new_name, "params": [*entry["params"], sorted(repr(h) for h in hosts.get(new_name, []))],
                     "param_names": [*entry["param_names"], "host"]}
            del benchmarks[name]
            benchmarks[new_name] = entry
            renamed = True
    if bench_file.exists() and hosts and renamed:
        bench_file.write_text(json.dumps(benchmarks, indent=4, sort_keys=True) + "\n")
        done.append(f"{bench_file.relative_to(results_dir)}: host-dependent benchmarks renamed, host parameter added")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernelscope migrate-results", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", nargs="?", default="results", help="asv's results folder (default: results)")
    args = parser.parse_args(argv)
    for line in migrate(args.results_dir):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
