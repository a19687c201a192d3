"""Timing on the GPU, never a host clock on asynchronous work.

Four modes, each in its own module, after nvbench's methodology (which keeps
measure_hot and measure_cold apart), over the primitives here (the spin kernel
that holds a stream, the hold's margin, the sample budget, the clock reading):

* **warm** (:mod:`~kernelscope.timing.warm`) -- back-to-back calls between two
  CUDA events, with the launch queue full. ``HeldClock`` is the zero-argument
  clock asv uses as its ``timer``: the reading that opens a sample first parks
  a spin kernel on the stream (nvbench's blocking kernel), long enough for the
  host to enqueue all ``number`` calls behind it; the reading that closes it
  waits for the end event. The GPU then runs the calls back to back, as it does
  when a training loop runs ahead of it, and ``(t_after - t_before) / number``
  is GPU time per call in steady state. Without the hold a 3 us kernel launched
  from Python reads as the host's 20 us launch path, which read 13-26% slower
  in a rerun of one commit.
* **cold** (:mod:`~kernelscope.timing.cold`) -- the L2 cache flushed before
  every call (a memset of twice the L2, outside the timed region), each call
  between its own pair of events, behind its own spin kernel.
* **graph** (:mod:`~kernelscope.timing.graph`) -- the calls captured into a
  CUDA graph and replayed: the kernels' own time, without the host's launch
  path or the per-launch cost of streams.
* **host** (:mod:`~kernelscope.timing.host`) -- a plain Python loop of calls
  between synchronized host-clock readings: what a call costs its caller.

Every GPU sample also reads the SM clock it ran at, from the spin kernel that
precedes it (:mod:`kernelscope.timing.clocks`), and flags it when the GPU
throttled. Their names are all importable from here.

On a machine without a GPU the same functions time with ``time.perf_counter``
(CPU torch, the Triton interpreter and the Numba simulator are synchronous),
and graph mode is unavailable.
"""

from __future__ import annotations

import time

import torch

from kernelscope.timing import clocks
from kernelscope.timing.clocks import ClockWatch, ProbedSpin

_SPIN_CYCLES_PER_S: float | None = None


def spin_cycles_per_second() -> float:
    """SM clock cycles per second, as ``torch.cuda._sleep`` counts them (measured once)."""
    global _SPIN_CYCLES_PER_S
    if _SPIN_CYCLES_PER_S is None:
        cycles = 2_000_000
        torch.cuda._sleep(cycles)  # wakes the clocks up
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        _SPIN_CYCLES_PER_S = cycles / (start.elapsed_time(end) / 1e3)
    return _SPIN_CYCLES_PER_S


def hold_stream(seconds: float) -> int:
    """Enqueue a kernel that spins for ``seconds`` on the current stream; the cycles it spins."""
    cycles = max(1, int(seconds * spin_cycles_per_second())) if seconds > 0 else 0
    if cycles:
        torch.cuda._sleep(cycles)
    return cycles


HOLD_MARGIN_S = 50e-6  # covers recording the start event and Python's jitter


def grown_hold(host_s: float) -> float:
    """A hold that outlasts an enqueue that took ``host_s``, with room for jitter."""
    return 1.5 * host_s + HOLD_MARGIN_S


MIN_SAMPLES = 6  # asv's Mann-Whitney test needs at least 6 samples a side


def _budget(samples: int, max_time: float):
    """Yield sample indices until ``samples`` are taken or ``max_time`` has passed (after MIN_SAMPLES)."""
    deadline = time.perf_counter() + max_time
    for i in range(samples):
        if i >= MIN_SAMPLES and time.perf_counter() > deadline:
            return
        yield i


def _read_clocks(watch: ClockWatch | None, spins: list[tuple[ProbedSpin, object]]) -> None:
    if watch is None:
        return
    if watch.max_mhz is None:
        watch.max_mhz = clocks.max_sm_mhz()
    for spin, start in spins:
        mhz = spin.mhz(start)
        if mhz is not None:
            watch.add(mhz)


# The modes, after the primitives they import from here.
from kernelscope.timing.warm import (  # noqa: E402
    MAX_QUEUED_CALLS, PROBE_HOLD_S, WARM_TARGET_S, HeldClock, WarmPlan, calibrate, next_plan, plan_warm)
from kernelscope.timing.cold import ColdHold, L2Flusher, copy_bandwidth, time_cold  # noqa: E402
from kernelscope.timing.graph import (  # noqa: E402
    GRAPH_SETTLE_MIN, GRAPH_SETTLE_S, GRAPH_SPIN_S, GraphUnavailable, capture_graph, settle_graph, time_graph)

__all__ = ["ClockWatch", "ColdHold", "GRAPH_SETTLE_MIN", "GRAPH_SETTLE_S", "GRAPH_SPIN_S", "GraphUnavailable",
           "HOLD_MARGIN_S", "HeldClock", "L2Flusher", "MAX_QUEUED_CALLS", "MIN_SAMPLES", "PROBE_HOLD_S", "ProbedSpin",
           "WARM_TARGET_S", "WarmPlan", "calibrate", "capture_graph", "copy_bandwidth", "grown_hold", "hold_stream",
           "next_plan", "plan_warm", "settle_graph", "spin_cycles_per_second", "time_cold", "time_graph"]
