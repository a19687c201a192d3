"""Nsight Compute's kernel time per call, for every measured case, in one ncu process.

The in-process clocks must not run under ncu, so this is a second pass, as in
``kernelscope profile --ncu``: :func:`run` writes the cases into a spec and
starts ``ncu ... python -m kernelscope.evidence.peers.ncu_pass --child SPEC``, built
by :func:`kernelscope.profiling.ncu.command` (``--clock-control none``: the
clocks the suite ran at; the NVTX filter: only kernels launched inside our
ranges). The child prepares each case as the suite does (input, check, the
first call outside any range) and calls ``case.call`` :data:`CALLS` times
inside a range named ``op:<variant>-<size>-<dtype>``; the report's CSV is read
by :func:`kernelscope.profiling.ncu.parse_details_csv`, which groups the
kernels by that range. One metric, ``gpu__time_duration.sum``, so each kernel
is profiled in one pass without replay.

ncu flushes the caches before every kernel it profiles (its default
``--cache-control all``) and serializes the launches: the sum is a
kernel-only, cold-cache time, to set beside graph and cold mode. It is not
part of the gate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.evidence.peers.data import MEASURED, Record
from kernelscope.profiling import ncu

METRICS = ("gpu__time_duration.sum",)
CALLS = 3
TIMEOUT_S = 900


def range_key(rec: Record) -> str:
    """``square-torch-4096x4096-float32``: the part of the case's range name after ``op:``, as ncu's filter and
    its CSV parser read it (lower-case letters, digits and dashes)."""
    return f"{rec.variant}-{rec.size}-{rec.dtype}"


@dataclass
class Outcome:
    per_call_s: dict[str, float] = field(default_factory=dict)  # range key -> summed kernel seconds per call
    kernels: dict[str, int] = field(default_factory=dict)  # range key -> kernels a call launches
    skipped: str | None = None  # why the pass did not run at all
    errors: dict[str, str] = field(default_factory=dict)  # range key ("*": the whole pass) -> what went wrong
    seconds: float = 0.0
    log: str = ""


def run(records: list[Record], calls: int = CALLS, timeout_s: float = TIMEOUT_S, log=None) -> Outcome:
    """Profile every measured record's call under one ncu process; summed kernel time per call, per case."""
    why = ncu.unavailable()
    if why:
        return Outcome(skipped=why)
    jobs = [{"op": r.op, "variant": r.variant, "size": r.size, "dtype": r.dtype, "key": range_key(r)}
            for r in records if r.status == MEASURED]
    if not jobs:
        return Outcome(skipped="no case was measured")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelscope-peers-ncu-") as tmp:
        tmp = Path(tmp)
        spec, status, report = tmp / "spec.json", tmp / "status.json", tmp / "report.ncu-rep"
        spec.write_text(json.dumps({"jobs": jobs, "calls": calls, "status": str(status)}))
        child_cmd = [sys.executable, "-m", "kernelscope.evidence.peers.ncu_pass", "--child", str(spec)]
        cmd = ncu.command(ncu.find_ncu(), report, child_cmd, sections=(), metrics=METRICS)
        env = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        returncode, output, timed_out = ncu._stream(cmd, env, timeout_s, log)
        out = Outcome(log=output, seconds=time.perf_counter() - start)
        if timed_out:
            out.errors["*"] = f"ncu did not finish in {timeout_s:.0f} s"
            return out
        denied = ncu.permission_message(output)
        if denied:
            out.skipped = denied
            return out
        if not report.exists():
            tail = "\n".join(output.strip().splitlines()[-5:])
            out.errors["*"] = f"ncu wrote no report (exit {returncode}): {tail}"
            return out
        as_csv, _ = ncu.import_commands(ncu.find_ncu(), report)
        try:
            grouped = ncu.parse_details_csv(ncu._checked(as_csv))
        except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as exc:
            out.errors["*"] = f"reading ncu's report: {exc}"
            return out
        failed = json.loads(status.read_text()) if status.exists() else {}
    for job in jobs:
        key = job["key"]
        kernels = grouped.get(key)
        if kernels:
            out.per_call_s[key] = sum(k.duration_us for k in kernels) / 1e6 / calls
            out.kernels[key] = round(len(kernels) / calls)
        else:
            out.errors[key] = (f"the child failed before its range: {failed[key]}" if key in failed
                               else "no kernel was profiled in its NVTX range")
    out.seconds = time.perf_counter() - start
    return out


def apply(outcome: Outcome, records: list[Record]) -> None:
    """Each measured record's ``ncu`` clock from the pass, or why it has none."""
    for rec in records:
        if rec.status != MEASURED:
            continue
        key = range_key(rec)
        if key in outcome.per_call_s:
            rec.seconds["ncu"] = outcome.per_call_s[key]
            rec.details["ncu_kernels"] = outcome.kernels[key]
        elif outcome.skipped:
            rec.skipped["ncu"] = outcome.skipped
        else:
            rec.errors["ncu"] = outcome.errors.get("*") or outcome.errors.get(key) or "not profiled"


# --- the child ncu runs ----------------------------------------------------------------------------------------------

def child(spec_path: str) -> int:
    """Each case prepared as the suite prepares it, then ``calls`` calls inside its own NVTX range."""
    import torch

    from kernelscope.profiling.torch_profiler import nvtx_range
    from kernelscope.timing import cases

    spec = json.loads(Path(spec_path).read_text())
    calls = int(spec["calls"])
    failed: dict[str, str] = {}
    for i, job in enumerate(spec["jobs"], 1):
        print(f"kernelscope crosscheck ncu child: [{i}/{len(spec['jobs'])}] {job['variant']} {job['size']}",
              file=sys.stderr, flush=True)
        try:
            case = cases.prepare(job["op"], job["variant"], job["size"], job["dtype"])  # checked, called: outside
            case.call()
            if case.device == "cuda":
                torch.cuda.synchronize()
            with nvtx_range(f"{job['op']}:{job['key']}"):
                for _ in range(calls):
                    case.call()
            if case.device == "cuda":
                torch.cuda.synchronize()
        except Exception as exc:  # the next case still runs
            failed[job["key"]] = f"{type(exc).__name__}: {exc}"
            print(f"kernelscope crosscheck ncu child: {job['key']}: {failed[job['key']]}", file=sys.stderr)
        finally:
            case = None
            cases._CASES.clear()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    Path(spec["status"]).write_text(json.dumps(failed))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2]))
    print("usage: python -m kernelscope.evidence.peers.ncu_pass --child SPEC.json (started by ncu; see ncu_pass.run)",
          file=sys.stderr)
    sys.exit(2)
