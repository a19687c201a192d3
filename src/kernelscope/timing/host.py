"""Host mode: what a call costs a Python loop that calls the kernel, as ``torch.utils.benchmark`` measures it.

The lecture's first point: CUDA is asynchronous, so the host and the GPU keep
separate clocks, and the profiler's table shows "Self CPU time total" beside
"Self CUDA time total" because both matter. Warm mode holds the stream so the
host's cost never shows; this mode shows it. A sample is ``number`` calls back
to back between two readings of the host clock, each reading after a
synchronize (``torch.utils.benchmark.Timer``'s timer does the same): per call,
the larger of what the host spends launching it and what the GPU spends
running it, since the queue lets one hide the other.

One module per timing mode, beside ``warm``, ``cold`` and
``graph``. In the suite, a launch-bound
case's host mode is one value per process, as its warm and cold modes are
(:mod:`kernelscope.timing.processes`): a host's cost of a call is a property of
the process.
"""

from __future__ import annotations

import gc
import math
import time
from typing import Callable

import torch

from kernelscope.timing.primitives import budget

# Host time per sample. A sample pays once what the loop's steady state hides: the first call's
# launch before the GPU has work, and the last kernel after the host is done. Timer's blocks
# last 0.1 s or more; at 2 ms (version 1) a GPU-bound Numba call at 2^28 elements read 10-37%
# over its loop's per-call time (three calls a sample on the H100). At 20 ms that
# share is at most the host's cost of one call over 20 ms: 1.5% for Numba's 0.3 ms.
HOST_TARGET_S = 20e-3
HOST_MAX_CALLS = 10000  # per sample, for the fastest calls (a torch op is about 10 us on the H100's host)
HOST_PROBE_CALLS = 3


def _synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def block_s(fn: Callable[[], object], device: str, number: int) -> float:
    """Seconds per call of ``number`` calls between two synchronized readings of the host clock.

    The garbage collector is off during the block (version 4), as ``timeit``, and
    so ``torch.utils.benchmark.Timer``, keep it: the same method as the peer host
    mode is checked against. It is worth little: on the H100,
    results-proofs/host-mode-vs-timer/timer_probe.py read a block with it off 0-0.5% below one with it
    on for most cases (square-torch 4096x4096: 48.2-48.6 us against 48.6-48.7;
    results-proofs/host-mode-vs-timer). Most of host mode's lead
    over Timer (196 of the 251 pairs of an H100 crosscheck above it, median +0.6%)
    is the sample's length: 20 ms pays once for the first launch and the last
    kernel, which ``blocked_autorange``'s blocks of 0.2 s or more amortize (so the
    crosscheck pairs each sample with a Timer block of as many calls).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        _synchronize(device)
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        _synchronize(device)
        return (time.perf_counter() - t0) / number
    finally:
        if enabled:
            gc.enable()


def plan_host(fn: Callable[[], object], device: str) -> int:
    """Calls per sample: enough for a sample to last about HOST_TARGET_S."""
    per_call = block_s(fn, device, HOST_PROBE_CALLS)
    return max(1, min(HOST_MAX_CALLS, math.ceil(HOST_TARGET_S / max(per_call, 1e-9))))


def time_host(fn: Callable[[], object], device: str, samples: int, number: int, max_time: float = 3.0) -> list[float]:
    """Seconds per call from ``samples`` samples of ``number`` calls (fewer once ``max_time`` has passed)."""
    return [block_s(fn, device, number) for _ in budget(samples, max_time)]
