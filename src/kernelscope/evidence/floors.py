"""The floors as data: what moving a hard case's bytes costs, and each wide-row design with free exps.

The question it answers: how far is each hard case from the least it must
cost, and how much of that gap is the design's rather than the exps'?

``scripts/gpu/floors.py --kernels`` measures, on one GPU, in one process:
the copy of the input at each case's own size (one read and one write of
every element, the least a softmax moves), ``torch.sum`` for the mean, and
each wide-row plan of softmax-cuda and softmax-triton-tuned checked against the
reference and timed with the warm clock, beside the same plan with its exps
made free. It writes ``evidence/<machine>/floors.json``; the softmax
page shows it beside the suite's results. ``wrap`` makes that file from what a
run's probe printed (``floors.txt``: every row, to 0.01 us and 0.1%) and its
``machine.json``, for a run whose probe wrote no evidence file (or a ``--json``
that holds the copies alone)::

    python -m kernelscope.evidence.floors wrap STATE_DIR OUT.json --commit HASH [--command CMD]
    python -m kernelscope.evidence.floors table floors.json

floors.json, ``"schema": 1``::

    {
      "schema": 1,
      "machine": "nvidia-h100-80gb-hbm3",   # asv's machine name: the results' folder
      "gpu": "NVIDIA H100 80GB HBM3",
      "commit": "<40 hex>",                 # the code that ran
      "date": "2026-11-26T00:00:00+00:00",  # when the file was written (UTC)
      "command": "python3 scripts/gpu/floors.py --kernels",
      "copy_gbps": 3002.0,                  # the 1 GiB copy bandwidth every pct_copy is of
      "rows": [                             # the probe's rows, in the order it timed them
        {"op": "softmax", "shape": "64x262144", "dtype": "float32",
         "config": "cuda loop threads=512 cluster=16 (default)",   # a copy, a torch op, or "<backend> <plan>",
                                                                   # " free exps" at the end for a free row
         "time_us": 57.28, "gbps": 2343.0, "pct_copy": 78.0}
      ]
    }
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = 1
FILE = "floors.json"  # evidence/<machine>/floors.json
FREE = " free exps"  # the suffix of a row timed with free exps
DEFAULT = " (default)"  # the suffix of the variant's own plan
ROW_KEYS = ("op", "shape", "dtype", "config", "time_us", "gbps", "pct_copy")


@dataclass
class Line:
    """One way of doing a case: a floor (copy, torch.sum) or a kernel's plan, with its free-exps twin if timed."""

    config: str
    pct_copy: float
    time_us: float
    free_pct: float | None = None
    free_us: float | None = None

    @property
    def default(self) -> bool:
        return self.config.endswith(DEFAULT)


@dataclass
class Case:
    op: str
    shape: str
    dtype: str
    lines: list[Line] = field(default_factory=list)

    @property
    def copy(self) -> Line | None:
        """The case's floor: its copy (softmax) or torch.sum (mean); the first of several (the probe times it
        again before the kernels)."""
        return next((ln for ln in self.lines if ln.config.startswith(("copy", "torch.sum"))), None)


def op_of(shape: str) -> str:
    """The op a row of the probe's plain JSON belongs to, from its shape: rows x cols is softmax, n is mean."""
    return "softmax" if "x" in shape else "mean"


def cases(data: dict) -> list[Case]:
    """The file's rows by (op, shape, dtype), in order; a free-exps row joins the row it follows with its config.
    A case measured twice (the copy in both of the probe's tables) keeps its first copy."""
    found: dict[tuple, Case] = {}
    for row in data["rows"]:
        key = (row["op"], row["shape"], row["dtype"])
        case = found.setdefault(key, Case(*key))
        config = row["config"]
        if config.endswith(FREE):
            twin = next((ln for ln in reversed(case.lines) if ln.config == config[:-len(FREE)]), None)
            if twin is not None:
                twin.free_pct, twin.free_us = row["pct_copy"], row["time_us"]
                continue
        if any(ln.config == config for ln in case.lines):
            continue
        case.lines.append(Line(config, row["pct_copy"], row["time_us"]))
    return list(found.values())


def best(case: Case, backend: str, free: bool = False) -> Line | None:
    """The backend's fastest plan at the case (by its free-exps time where ``free``)."""
    lines = [ln for ln in case.lines if ln.config.startswith(backend + " ") and (not free or ln.free_pct is not None)]
    return max(lines, key=lambda ln: ln.free_pct if free else ln.pct_copy, default=None)


# The targets for the wide rows (512x50257, 64x262144), % of the copy bandwidth, by dtype
WIDE_ROW_TARGETS = {"float32": 85.0, "bfloat16": 80.0}


@dataclass
class Verdict:
    """Where a backend's plans stand at a case against its target: "met" (its own plan reaches it), "open" (it does
    not, but some plan with free exps does: the design could) or "out of reach" (no plan measured does, even with
    free exps). Its own plan is judged by the suite's committed run where one is given (``suite_pct``: the
    targets are the committed results'), else by the probe's reading."""
    target: float
    state: str
    plan: Line  # the backend's own plan (its default)
    fastest_free: Line | None  # its fastest plan with free exps
    suite_pct: float | None = None  # the suite's committed reading of the same case, % of the copy bandwidth


def verdict(case: Case, backend: str, suite_pct: float | None = None) -> Verdict | None:
    """``backend``'s standing at ``case`` against WIDE_ROW_TARGETS; None where no target or no plan of it.
    ``suite_pct``: the suite's committed reading of the backend's variant there, which then decides "met"."""
    target = WIDE_ROW_TARGETS.get(case.dtype)
    plan = next((ln for ln in case.lines if ln.config.startswith(backend + " ") and ln.default), None)
    if target is None or case.op != "softmax" or plan is None:
        return None
    fastest = best(case, backend, free=True)
    reading = plan.pct_copy if suite_pct is None else suite_pct
    state = ("met" if reading >= target else
             "open" if fastest is not None and fastest.free_pct >= target else "out of reach")
    return Verdict(target, state, plan, fastest, suite_pct)


def _lacking(rows: list[dict]) -> list[str]:
    """The row keys some row lacks."""
    return sorted({k for r in rows for k in ROW_KEYS if k not in r})


def stamp(machine: str, gpu: str, commit: str, command: str, copy_gbps: float, rows: list[dict]) -> dict:
    if _lacking(rows):
        raise ValueError(f"floors rows lack {', '.join(_lacking(rows))}")
    return {"schema": SCHEMA, "machine": machine, "gpu": gpu, "commit": commit,
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "command": command,
            "copy_gbps": float(copy_gbps), "rows": [{k: r[k] for k in ROW_KEYS} for r in rows]}


def read(path: str | Path) -> dict:
    return check(json.loads(Path(path).read_text()))


def check(data: dict) -> dict:
    """``data`` if it is a floors file this module reads, else ValueError saying what is wrong."""
    if data.get("schema") != SCHEMA:
        raise ValueError(f"schema {data.get('schema')!r}, this reads {SCHEMA}")
    if _lacking(data["rows"]):
        raise ValueError(f"rows lack {', '.join(_lacking(data['rows']))}")
    return data


# A row as tune.Table prints it: shape, dtype, label, "<time> us", "<GB/s> GB/s", "<pct>%"
PRINTED = re.compile(r"^\s*(\S+)\s+(float32|bfloat16)\s+(.*?)\s+([\d.]+) us\s+(\d+) GB/s\s+([\d.]+)%$")


def printed_rows(text: str) -> list[dict]:
    """The rows of the probe's printed tables, in order; their op found from their shape."""
    rows = []
    for line in text.splitlines():
        m = PRINTED.match(line)
        if m:
            shape, dtype, config, time_us, gbps, pct = m.groups()
            rows.append({"op": op_of(shape), "shape": shape, "dtype": dtype, "config": config,
                         "time_us": float(time_us), "gbps": float(gbps), "pct_copy": float(pct)})
    return rows


def wrap(state: Path, commit: str, command: str) -> dict:
    """A run's floors.txt (what the probe printed) and machine.json as an evidence file."""
    machine = json.loads((state / "machine.json").read_text())
    rows = printed_rows((state / "floors.txt").read_text())
    if not rows:
        raise ValueError(f"{state / 'floors.txt'}: no rows the probe printed")
    return stamp(machine["machine"], machine["gpu"], commit, command, float(machine["copy_gbps"]), rows)


def table(data: dict) -> str:
    out = [f"{data['machine']} ({data['gpu']}) at {data['commit'][:8]}, copy {data['copy_gbps']:.0f} GB/s"]
    for case in cases(data):
        out.append(f"== {case.op} {case.shape} {case.dtype}")
        for ln in case.lines:
            free = f"  free exps {ln.free_pct:5.1f}%" if ln.free_pct is not None else ""
            out.append(f"  {ln.config:<60} {ln.time_us:9.2f} us {ln.pct_copy:5.1f}%{free}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    w = sub.add_parser("wrap", help="a run's floors.txt and machine.json as evidence/<machine>/floors.json")
    w.add_argument("state", type=Path, help="the run's state folder (floors.txt, machine.json)")
    w.add_argument("out", type=Path)
    w.add_argument("--commit", required=True, help="the commit the probe ran")
    w.add_argument("--command", default="python3 scripts/gpu/floors.py --kernels")
    t = sub.add_parser("table", help="print an evidence file's cases")
    t.add_argument("path", type=Path)
    opts = ap.parse_args(argv)
    if opts.what == "wrap":
        data = wrap(opts.state, opts.commit, opts.command)
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(json.dumps(data, indent=1) + "\n")
    else:
        data = read(opts.path)
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
