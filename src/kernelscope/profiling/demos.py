"""The lecture's demonstrations, measured on this machine (``demos.json``).

1. A host clock around asynchronous GPU work, without and with synchronizing,
   against CUDA events: the wrong number and the right one (GPU only: on the
   CPU every call is synchronous, so the host clock is right there).
2. The three squares (``torch.square(a)``, ``a * a``, ``a ** 2``) under
   torch.profiler: the aten ops each goes through and the kernels it launches,
   read from our own chrome traces.
3. The lecture's Triton square with BLOCK_SIZE fixed at 1024 per row
   (:func:`square_rows_fixed_1024`, not a catalog variant): for each width,
   whether it matches the reference, its time, the bandwidth the lecture's plot
   would report (every byte of the tensor over that time) beside the measured
   copy bandwidth, the real ceiling. Past 1024 columns it leaves most of each
   row unwritten, so it is "fast" and wrong (GPU only: the interpreter's times
   mean nothing).
4. The legacy autograd profiler as today's torch spells it (``use_device="cuda"``).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import torch

from kernelscope.catalog import OPS, VARIANTS
from kernelscope.check import error_against_reference, poison
from kernelscope.ops import shape_str
from kernelscope.profiling.artifacts import Demos, FixedBlockRow, HostClockDemo, SquareDemo
from kernelscope.profiling.torch_profiler import legacy_autograd_profile, profile_variant, trace_events

HOST_CLOCK_SHAPE = (4096, 4096)
HOST_CLOCK_CALLS = 20
SQUARES = {"square-torch": "torch.square(a)", "square-mul": "a * a", "square-pow": "a ** 2"}
FIXED_BLOCK_ROWS = 4096
FIXED_BLOCK_WIDTHS = (256, 512, 1024, 2048, 4096, 8192, 16384)
FIXED_BLOCK_SIZE = 1024


def square_rows_fixed_1024(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """The lecture's per-row Triton square after "fixing" BLOCK_SIZE at 1024: columns past 1024 are never written."""
    from kernelscope.backends.triton.square import square_row_kernel

    y = torch.empty_like(x) if out is None else out
    square_row_kernel[(x.shape[0],)](x, y, x.stride(0), y.stride(0), x.shape[1], BLOCK_SIZE=FIXED_BLOCK_SIZE)
    return y


def fixed_block_check(rows: int, cols: int, device: str, seed: int = 0) -> tuple[bool, float]:
    """Whether the fixed-block square matches the reference at rows x cols (output poisoned first), and its rel_err."""
    op = OPS["square"]
    x = op.make_input((rows, cols), "float32", device, seed)
    out = square_rows_fixed_1024(x, poison(torch.empty_like(x)))
    if device == "cuda":
        torch.cuda.synchronize()
    err = error_against_reference(op, x, out)
    return bool(err <= op.tolerance["float32"]), err  # NaN (unwritten columns) compares False


def _median_gpu_us(fn, samples: int = 20) -> float:
    from kernelscope.timing import time_cold

    for _ in range(3):
        fn()
    # Each call between its own pair of events, no flush: the kernel's time, as copy_bandwidth measures its copy.
    return statistics.median(time_cold(fn, "cuda", samples, flusher=lambda: None)) * 1e6


def fixed_block(widths=FIXED_BLOCK_WIDTHS, rows: int = FIXED_BLOCK_ROWS, copy_gbps: float | None = None
                ) -> list[FixedBlockRow]:
    from kernelscope.timing import copy_bandwidth

    copy_gbps = copy_gbps if copy_gbps is not None else copy_bandwidth() / 1e9
    found = []
    for cols in widths:
        passed, err = fixed_block_check(rows, cols, "cuda")
        x = OPS["square"].make_input((rows, cols), "float32", "cuda", 1)
        y = torch.empty_like(x)
        us = _median_gpu_us(lambda: square_rows_fixed_1024(x, y))
        nbytes = OPS["square"].bytes_for((rows, cols), "float32")
        found.append(FixedBlockRow(cols=cols, passed=passed, rel_err=err, time_us=us,
                                   reported_gbps=nbytes / (us * 1e-6) / 1e9, copy_gbps=copy_gbps, rows=rows))
    return found


def host_clock(calls: int = HOST_CLOCK_CALLS, shape=HOST_CLOCK_SHAPE) -> HostClockDemo:
    variant = VARIANTS["square-torch"]
    x = variant.op_spec.make_input(shape, "float32", "cuda", 1)
    fn = variant.function()
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()  # an empty queue before each reading
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(x)
    no_sync = time.perf_counter() - t0  # the launches only: the kernels are still queued
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(x)
    torch.cuda.synchronize()
    with_sync = time.perf_counter() - t0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn(x)
    end.record()
    end.synchronize()
    return HostClockDemo(variant=variant.name, shape=shape_str(shape), calls=calls,
                         host_no_sync_us=no_sync / calls * 1e6, host_sync_us=with_sync / calls * 1e6,
                         events_us=start.elapsed_time(end) / calls * 1e3)


def ops_and_kernels(events: list[dict], range_name: str) -> tuple[list[str], list[str]]:
    """The aten ops called inside ``range_name`` and the GPU kernels in the trace, each in first-call order."""
    spans = [e for e in events if e.get("ph") == "X"]
    ranges = [e for e in spans if e.get("name") == range_name and e.get("cat") == "user_annotation"]

    def inside(e) -> bool:
        return any(r["ts"] <= e["ts"] <= r["ts"] + r.get("dur", 0) for r in ranges)

    aten = [e for e in spans if e.get("cat") == "cpu_op" and e["name"].startswith("aten::") and inside(e)]
    kernels = [e for e in spans if e.get("cat") == "kernel"]
    return (list(dict.fromkeys(e["name"] for e in sorted(aten, key=lambda e: e["ts"]))),
            list(dict.fromkeys(e["name"] for e in sorted(kernels, key=lambda e: e["ts"]))))


def squares(device: str, shape=(1024, 1024)) -> list[SquareDemo]:
    found = []
    with tempfile.TemporaryDirectory(prefix="kernelscope-squares-") as tmp:
        for name, expression in SQUARES.items():
            variant = VARIANTS[name]
            x = variant.op_spec.make_input(shape, "float32", device, 1)
            trace = Path(tmp) / f"{name}.json"
            profile_variant(variant, x, wait=0, warmup=1, active=1, trace=trace)
            aten, kernels = ops_and_kernels(trace_events(trace), f"{variant.op}:{variant.name}")
            found.append(SquareDemo(variant=name, expression=expression, aten_ops=aten, kernels=kernels))
    return found


def legacy(device: str) -> str:
    variant = VARIANTS["square-torch"]
    x = variant.op_spec.make_input((1024, 1024), "float32", device, 1)
    fn = variant.function()
    fn(x)  # warm: the table should show the op, not the first call's set-up
    return legacy_autograd_profile(lambda: fn(x))


def run(machine: str, commit: str, device: str, copy_gbps: float | None = None, progress=None) -> Demos:
    """Every demo that can run on ``device``; the others are skipped with the reason, a failure is recorded."""
    demos = Demos(machine=machine, commit=commit)
    say = progress or (lambda msg: None)
    gpu = device == "cuda"
    parts = {
        "host_clock": (lambda: setattr(demos, "host_clock", host_clock())) if gpu else
        "needs a GPU: on the CPU every call is synchronous, so a host clock around it is right",
        "squares": lambda: setattr(demos, "squares", squares(device)),
        "fixed_block": (lambda: setattr(demos, "fixed_block", fixed_block(copy_gbps=copy_gbps))) if gpu else
        "needs a GPU: its point is the bandwidth it would report, and the interpreter's times are not a GPU's",
        "legacy_autograd": lambda: setattr(demos, "legacy_autograd_table", legacy(device)),
    }
    for part, action in parts.items():
        if isinstance(action, str):
            demos.skipped[part] = action
            continue
        t0 = time.perf_counter()
        try:
            action()
            say(f"demos: {part} {time.perf_counter() - t0:.1f} s")
        except Exception as exc:  # a failed demo is reported in its place; the others still run
            demos.errors[part] = f"{type(exc).__name__}: {exc}"
            say(f"demos: {part} failed: {type(exc).__name__}: {exc}")
    return demos
