"""Timing on the GPU, never a host clock on asynchronous work.

Four modes, each in its own module, after nvbench's methodology (which keeps
measure_hot and measure_cold apart), over the primitives of
:mod:`~kernelscope.timing.primitives` (the spin kernel that holds a stream, the
hold's margin, the sample budget) and the clock reading of
:mod:`~kernelscope.timing.clocks`:

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
throttled. Their names are all importable from here; the modules themselves
import each name from the module that defines it, so none of them imports this
package back.

On a machine without a GPU the same functions time with ``time.perf_counter``
(CPU torch, the Triton interpreter and the Numba simulator are synchronous),
and graph mode is unavailable.
"""

from __future__ import annotations

# Names only: each module imports what it uses from the module that defines it, never from here.
from kernelscope.timing.clocks import ClockWatch, ProbedSpin
from kernelscope.timing.cold import ColdHold, L2Flusher, copy_bandwidth, time_cold
from kernelscope.timing.graph import (
    GRAPH_SETTLE_MIN, GRAPH_SETTLE_S, GRAPH_SPIN_S, GraphUnavailable, capture_graph, settle_graph, time_graph)
from kernelscope.timing.primitives import (
    HOLD_MARGIN_S, MIN_SAMPLES, grown_hold, hold_stream, spin_cycles_per_second)
from kernelscope.timing.warm import (
    MAX_QUEUED_CALLS, PROBE_HOLD_S, WARM_TARGET_S, HeldClock, WarmPlan, calibrate, next_plan, plan_warm)

__all__ = ["ClockWatch", "ColdHold", "GRAPH_SETTLE_MIN", "GRAPH_SETTLE_S", "GRAPH_SPIN_S", "GraphUnavailable",
           "HOLD_MARGIN_S", "HeldClock", "L2Flusher", "MAX_QUEUED_CALLS", "MIN_SAMPLES", "PROBE_HOLD_S", "ProbedSpin",
           "WARM_TARGET_S", "WarmPlan", "calibrate", "capture_graph", "copy_bandwidth", "grown_hold", "hold_stream",
           "next_plan", "plan_warm", "settle_graph", "spin_cycles_per_second", "time_cold", "time_graph"]
