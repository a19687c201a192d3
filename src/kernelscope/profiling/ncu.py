"""Nsight Compute over the selected variants: one ncu process, each variant's own kernels only.

:func:`run` writes a spec of the variants (name, shape, dtype, seed) and
starts ``ncu ... python -m kernelscope.profiling.ncu --child SPEC``. The child
makes each variant's input, calls it once outside any range (compile, JIT,
load), then once inside an NVTX range named ``op:variant``; ncu's
``--nvtx-include`` filter profiles only the kernels launched in such a range,
so the input's random generation and the warm-up call are not profiled. One
process for every variant: ncu's start-up and the Python imports are paid
once. ``--clock-control none`` leaves the GPU at the clocks the suite's
timings ran at (ncu locks them to base by default), so the two can be compared.

The report is imported twice: as CSV (``--page details``), parsed into
:class:`~kernelscope.profiling.artifacts.KernelMetrics` grouped by the NVTX
range, and as ncu prints it (the lecture's slides), split per variant.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.profiling import tools
from kernelscope.profiling.artifacts import Hint, KernelMetrics

# A push/pop range named op:variant at the top of the stack (the trailing "/" is ncu's
# syntax for a push/pop range; torch_profiler.range_name makes these names).
NVTX_INCLUDE = "regex:^[a-z]+:[a-z0-9-]+/"
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WorkloadDistribution")
METRICS = ("gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed")
PERMISSION_ERROR = "ERR_NVGPUCTRPERM"
TIMEOUT_S = 1500  # the whole pass; profile.sh aims at 5 minutes for every variant


DEFAULT_CUDA_HOME = tools.DEFAULT_CUDA_HOME


def find_ncu() -> str | None:
    """ncu on PATH, else in the CUDA toolkit (CUDA_HOME, /usr/local/cuda)."""
    return tools.find_tool("ncu", DEFAULT_CUDA_HOME)


def unavailable() -> str | None:
    """Why Nsight Compute cannot run here, or None."""
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU visible to torch: Nsight Compute profiles GPU kernels"
    if find_ncu() is None:
        return "Nsight Compute (ncu) not found on PATH or in $CUDA_HOME/bin: install Nsight Compute"
    return None


def version(ncu: str | None = None) -> str:
    ncu = ncu or find_ncu()
    if not ncu:
        return "not found"
    out = tools.version_output(ncu)
    if out is None:
        return "unknown"
    found = re.search(r"Version\s+(\S+)", out)
    return found.group(1) if found else out.strip().splitlines()[-1] if out.strip() else "unknown"


def command(ncu: str, report: Path, child: list[str], sections: tuple[str, ...] = SECTIONS,
            metrics: tuple[str, ...] = METRICS) -> list[str]:
    """The ncu command line that profiles ``child``'s op:variant ranges into ``report`` (.ncu-rep).

    ``sections=()`` and one metric: a single pass per kernel, no replay (``kernelscope crosscheck``'s durations).
    """
    cmd = [ncu, "--clock-control", "none", "--nvtx", "--nvtx-include", NVTX_INCLUDE]
    for section in sections:
        cmd += ["--section", section]
    cmd += ["--metrics", ",".join(metrics), "--force-overwrite", "--export", str(report)]
    return cmd + child


def import_commands(ncu: str, report: Path) -> tuple[list[str], list[str]]:
    """(CSV of the details page, the details page as ncu prints it, kernels named range/kernel)."""
    base = [ncu, "--import", str(report), "--page", "details"]
    return base + ["--csv"], base + ["--print-nvtx-rename", "kernel"]


# --- parsing the CSV ---------------------------------------------------------------------------------------------

NVTX_COLUMN = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
# One pushed range as the CSV writes it: "<domain>:<name>:<6 payload/colour/message fields>"
_RANGE = re.compile(r'"[^":]*:([a-z]+:[a-z0-9-]+)(?::[^:"]*){6}"')
_RENAMED = re.compile(r"^([a-z]+:[a-z0-9-]+)/")

_TIME_US = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6,
            "second": 1e6}
_FREQ_MHZ = {"ghz": 1e3, "mhz": 1.0, "khz": 1e-3, "hz": 1e-6, "cycle/nsecond": 1e3, "cycle/usecond": 1.0,
             "cycle/second": 1e-6}
_BYTES = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "kibyte": 2**10, "mibyte": 2**20}


def number(text: str | None) -> float | None:
    """ncu's printed number ("16,384", "80.92"), or None for anything else (n/a, charts, words)."""
    if text is None:
        return None
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        return None


def _scaled(value: float | None, unit: str, table: dict[str, float]) -> float | None:
    if value is None:
        return None
    unit = unit.strip().lower().removesuffix("/block")
    if unit not in table:
        raise ValueError(f"unexpected ncu unit {unit!r}")
    return value * table[unit]


def _dims(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text or ""))


def variant_of(row: dict) -> str | None:
    """The variant whose op:variant range launched this kernel (its NVTX push/pop stack), or None."""
    found = _RANGE.findall(row.get(NVTX_COLUMN) or "")
    if found:
        return found[0].split(":", 1)[1]  # the outermost such range: the one the child pushed
    renamed = _RENAMED.match(row.get("Kernel Name") or "")
    return renamed.group(1).split(":", 1)[1] if renamed else None


def parse_details_csv(text: str) -> dict[str, list[KernelMetrics]]:
    """``ncu --import R --csv --page details`` -> variant -> its kernels in launch order."""
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r.get("ID", "").strip().isdigit()]
    launches: dict[int, list[dict]] = {}
    for r in rows:
        launches.setdefault(int(r["ID"]), []).append(r)
    grouped: dict[str, list[KernelMetrics]] = {}
    for _, kernel_rows in sorted(launches.items()):
        variant = variant_of(kernel_rows[0])
        if variant is None:
            continue  # outside our ranges (the include filter should have left none)
        grouped.setdefault(variant, []).append(_kernel(kernel_rows))
    return grouped


def _kernel(rows: list[dict]) -> KernelMetrics:
    first = rows[0]
    # Section metrics only: the rows with a body item label are charts and breakdown tables.
    metrics: dict[str, tuple[str, str]] = {}
    for r in rows:
        name = r.get("Metric Name") or ""
        if name and not r.get("Body Item Label") and name not in metrics:
            metrics[name] = (r.get("Metric Unit") or "", r.get("Metric Value") or "")

    def value(*names: str) -> float | None:
        for n in names:
            if n in metrics and number(metrics[n][1]) is not None:
                return number(metrics[n][1])
        return None

    def timed(*names: str) -> float | None:
        for n in names:
            if n in metrics and number(metrics[n][1]) is not None:
                return _scaled(number(metrics[n][1]), metrics[n][0], _TIME_US)
        return None

    def shared(name: str) -> float:
        if name not in metrics or number(metrics[name][1]) is None:
            return 0.0
        return _scaled(number(metrics[name][1]), metrics[name][0], _BYTES)

    freq = metrics.get("SM Frequency")
    regs = value("Registers Per Thread")
    cluster = value("Cluster Size")
    has_shared = "Static Shared Memory Per Block" in metrics or "Dynamic Shared Memory Per Block" in metrics
    hints = [Hint(section=r.get("Section Name") or "", rule=r["Rule Name"], type=r.get("Rule Type") or "",
                  text=" ".join((r.get("Rule Description") or "").split()),
                  speedup_type=r.get("Estimated Speedup Type") or "", speedup_pct=number(r.get("Estimated Speedup")))
             for r in rows if r.get("Rule Name")]
    duration = timed("gpu__time_duration.sum", "Duration")
    return KernelMetrics(
        name=first.get("Kernel Name") or "",
        duration_us=duration if duration is not None else float("nan"),
        dram_pct=value("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM Throughput"),
        memory_pct=value("Memory Throughput"),
        compute_pct=value("Compute (SM) Throughput"),
        achieved_occupancy_pct=value("Achieved Occupancy"),
        theoretical_occupancy_pct=value("Theoretical Occupancy"),
        registers_per_thread=int(regs) if regs is not None else None,
        shared_bytes_per_block=round(shared("Static Shared Memory Per Block")
                                     + shared("Dynamic Shared Memory Per Block")) if has_shared else None,
        block=_dims(first.get("Block Size", "")),
        grid=_dims(first.get("Grid Size", "")),
        cluster=int(cluster) if cluster is not None else None,
        waves_per_sm=value("Waves Per SM"),
        sm_mhz=_scaled(number(freq[1]), freq[0], _FREQ_MHZ) if freq else None,
        hints=hints,
    )


# --- splitting the printout --------------------------------------------------------------------------------------

# A kernel's header line: "  [op:variant/]kernel (grid)x(block), Context 1, Stream 7, Device 0, CC 9.0"
_HEADER = re.compile(r"^  \S.*, Context \d+, Stream \d+, Device \d+, CC [\d.]+\s*$")
_PROCESS = re.compile(r"^\[\d+\] ")
_STACK_ENTRY = re.compile(r"<\d+,([a-z]+:[a-z0-9-]+)>")


def split_text(text: str) -> dict[str, str]:
    """ncu's details printout -> variant -> the blocks of its kernels, in order.

    With ``--print-nvtx-rename kernel`` each header names the range
    (``op:variant/kernel``); without, the block's NVTX stack does.
    """
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if _HEADER.match(line):
            current = [line]
            blocks.append(current)
        elif _PROCESS.match(line) or line.startswith("==PROF==") or line.startswith("==WARNING=="):
            current = None
        elif current is not None:
            current.append(line)
    out: dict[str, list[str]] = {}
    for block in blocks:
        renamed = _RENAMED.match(block[0][2:])
        stack = next((m for m in map(_STACK_ENTRY.search, block) if m), None)
        name = renamed.group(1) if renamed else stack.group(1) if stack else None
        if name is None:
            continue
        while block and not block[-1].strip():
            block.pop()
        out.setdefault(name.split(":", 1)[1], []).append("\n".join(block))
    return {variant: "\n\n".join(parts) + "\n" for variant, parts in out.items()}


# --- running it --------------------------------------------------------------------------------------------------


@dataclass
class Job:
    """One variant for the child: its input's shape, dtype and seed."""

    variant: str
    shape: str
    dtype: str
    seed: int


@dataclass
class Result:
    metrics: dict[str, list[KernelMetrics]] = field(default_factory=dict)  # variant -> kernels
    text: dict[str, str] = field(default_factory=dict)  # variant -> ncu's printout of its kernels
    skipped: str | None = None  # why ncu did not run at all
    errors: dict[str, str] = field(default_factory=dict)  # variant -> what went wrong ("*": the whole pass)
    seconds: float = 0.0
    log: str = ""  # ncu's own output, for diagnosis


def permission_message(output: str) -> str | None:
    if PERMISSION_ERROR in output:
        return (f"Nsight Compute needs access to the GPU's performance counters ({PERMISSION_ERROR}): run as "
                "root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
                "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
    return None


def run(jobs: list[Job], workdir: Path | None = None, timeout_s: float = TIMEOUT_S, log=None) -> Result:
    """Profile every job's variant under one ncu process and parse what it measured."""
    why = unavailable()
    if why:
        return Result(skipped=why)
    if not jobs:
        return Result(skipped="no variant passed its check here")
    ncu = find_ncu()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelscope-ncu-", dir=workdir) as tmp:
        tmp = Path(tmp)
        spec, status, report = tmp / "spec.json", tmp / "status.json", tmp / "report.ncu-rep"
        spec.write_text(json.dumps({"jobs": [vars(j) for j in jobs], "status": str(status)}))
        child = [sys.executable, "-m", "kernelscope.profiling.ncu", "--child", str(spec)]
        # Inductor's compile workers would be more processes for ncu to follow: compile in the child.
        env = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        returncode, output, timed_out = _stream(command(ncu, report, child), env, timeout_s, log)
        if timed_out:
            return Result(errors={"*": f"ncu did not finish in {timeout_s:.0f} s"}, log=output,
                          seconds=time.perf_counter() - start)
        result = Result(log=output)
        denied = permission_message(output)
        if denied:
            result.skipped = denied
            return result
        if not report.exists():
            tail = "\n".join(output.strip().splitlines()[-5:])
            result.errors["*"] = f"ncu wrote no report (exit {returncode}): {tail}"
            return result
        as_csv, as_text = import_commands(ncu, report)
        try:
            result.metrics = parse_details_csv(_checked(as_csv))
            result.text = split_text(_checked(as_text))
        except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as exc:
            result.errors["*"] = f"reading ncu's report: {exc}"
            return result
        done = json.loads(status.read_text()) if status.exists() else {}
    for job in jobs:
        if job.variant in result.metrics:
            continue
        failed = done.get(job.variant)
        result.errors[job.variant] = (f"the child failed before its range: {failed}" if failed
                                      else "no kernel was profiled in its NVTX range")
    result.seconds = time.perf_counter() - start
    return result


def _stream(cmd: list[str], env: dict, timeout_s: float, log) -> tuple[int, str, bool]:
    """Run cmd, passing each line of its output to ``log`` as it comes (ncu's per-kernel lines are the pass's
    progress); (exit status, the output, whether it was killed for running past timeout_s)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            errors="replace")
    killed = threading.Event()

    def kill():
        killed.set()
        proc.kill()

    watchdog = threading.Timer(timeout_s, kill)
    watchdog.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if log:
                log(line.rstrip("\n"))
        proc.wait()
    finally:
        watchdog.cancel()
    return proc.returncode, "".join(lines), killed.is_set()


def _checked(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


# --- the child ncu runs ------------------------------------------------------------------------------------------


def child(spec_path: str) -> int:
    """Run each job's variant once outside and once inside its op:variant range; record failures."""
    import torch

    from kernelscope.backends import default_device
    from kernelscope.catalog import get
    from kernelscope.ops import parse_shape
    from kernelscope.profiling.torch_profiler import nvtx_range, range_name

    spec = json.loads(Path(spec_path).read_text())
    device = default_device()  # cuda under ncu; the CPU only in the tests' stand-in for ncu
    failed: dict[str, str] = {}
    jobs = [Job(**j) for j in spec["jobs"]]
    for i, job in enumerate(jobs, 1):
        print(f"kernelscope ncu child: [{i}/{len(jobs)}] {job.variant} {job.shape} {job.dtype}", file=sys.stderr,
              flush=True)
        try:
            variant = get(job.variant)
            x = variant.op_spec.make_input(parse_shape(job.shape), job.dtype, device, job.seed)
            variant(x)  # validated; compiles, JITs, loads: outside the range
            fn = variant.function()
            fn(x)
            if device == "cuda":
                torch.cuda.synchronize()
            with nvtx_range(range_name(variant)):
                fn(x)
            if device == "cuda":
                torch.cuda.synchronize()
            del x
        except Exception as exc:  # the next variant still runs
            failed[job.variant] = f"{type(exc).__name__}: {exc}"
            print(f"kernelscope ncu child: {job.variant}: {failed[job.variant]}", file=sys.stderr)
    Path(spec["status"]).write_text(json.dumps(failed))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2]))
    print("usage: python -m kernelscope.profiling.ncu --child SPEC.json (started by ncu; see ncu.run)",
          file=sys.stderr)
    sys.exit(2)
