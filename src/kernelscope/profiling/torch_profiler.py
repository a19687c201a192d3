"""One variant under torch.profiler, as the lecture's ``pt_profiler.py`` does it.

The schedule skips ``wait`` steps, warms up for ``warmup`` (the profiler runs
but discards them: the first profiled calls carry its own start-up cost), then
records ``active`` steps. Each call runs inside a range named
``op:variant``: ``record_function`` for the profiler's table and trace, and an
NVTX range on a GPU, so Nsight Systems and Nsight Compute (``--nvtx
--nvtx-include``) can find the same region. Not ``op/variant``: Nsight
Compute's filter reads ``/`` as the boundary between nested ranges.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule


@contextmanager
def nvtx_range(name: str):
    """A named range in the profiler's trace and, on a GPU, in NVTX."""
    with record_function(name):
        if torch.cuda.is_available():
            torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            if torch.cuda.is_available():
                torch.cuda.nvtx.range_pop()


@dataclass
class Profile:
    table: str  # key_averages().table(...): self and total time per op and kernel
    ops: dict[str, int]  # event name -> calls recorded in the active steps
    kernels: dict[str, int] = field(default_factory=dict)  # GPU kernel name -> launches (empty on the CPU)
    trace: Path | None = None  # chrome trace of the active steps: open in Perfetto or chrome://tracing
    active: int = 0  # steps recorded
    self_device_us: float | None = None  # the kernels' self time, per step (None on the CPU)
    self_cpu_us: float | None = None  # the CPU events' self time, per step


def profile_call(fn, name: str, wait: int = 1, warmup: int = 1, active: int = 3, trace: str | Path | None = None,
                 row_limit: int = 12) -> Profile:
    """Run ``fn()`` ``wait + warmup + active`` times under the profiler; keep what the active steps recorded."""
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    done: list[profile] = []

    def on_trace_ready(prof):
        done.append(prof)
        if trace is not None:
            prof.export_chrome_trace(str(trace))

    with profile(activities=activities, schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
                 on_trace_ready=on_trace_ready) as prof:
        for _ in range(wait + warmup + active):
            with nvtx_range(name):
                fn()
            prof.step()
    if cuda:
        torch.cuda.synchronize()
    averages = done[0].key_averages()
    sort_by = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    # On the GPU the named range also appears as a CUDA-side annotation: not a kernel.
    kernels = {e.key: e.count for e in averages
               if cuda and e.device_type == torch.autograd.DeviceType.CUDA and e.key != name}
    device_rows = [e for e in averages if cuda and e.device_type == torch.autograd.DeviceType.CUDA and e.key != name]
    cpu_rows = [e for e in averages if e.device_type == torch.autograd.DeviceType.CPU]
    return Profile(table=averages.table(sort_by=sort_by, row_limit=row_limit),
                   ops={e.key: e.count for e in averages}, kernels=kernels,
                   trace=Path(trace) if trace is not None else None, active=active,
                   self_device_us=sum(_self_device_us(e) for e in device_rows) / active if cuda else None,
                   self_cpu_us=sum(e.self_cpu_time_total for e in cpu_rows) / active)


def _self_device_us(event) -> float:
    # torch 2.4 renamed self_cuda_time_total to self_device_time_total
    return getattr(event, "self_device_time_total", None) or getattr(event, "self_cuda_time_total", 0.0)


def profile_variant(variant, x: torch.Tensor, **kwargs) -> Profile:
    """A catalog variant on ``x`` (validated once, outside the profile), in a range named ``op:variant``."""
    variant(x)  # compile, JIT, load: not what the active steps should show
    fn = variant.function()
    return profile_call(lambda: fn(x), range_name(variant), **kwargs)


def range_name(variant) -> str:
    return f"{variant.op}:{variant.name}"


def legacy_autograd_profile(fn) -> str:
    """The lecture's autograd profiler as today's torch spells it: ``use_device="cuda"``, not ``use_cuda=True``."""
    device = "cuda" if torch.cuda.is_available() else None
    with torch.autograd.profiler.profile(use_device=device) as prof:
        fn()
    sort_by = "cuda_time_total" if device else "cpu_time_total"
    return prof.key_averages().table(sort_by=sort_by, row_limit=10)


def trace_events(path: str | Path) -> list[dict]:
    """The events of a chrome trace the profiler exported."""
    return json.loads(Path(path).read_text())["traceEvents"]
