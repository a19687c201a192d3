"""Warm mode: back-to-back calls with the launch queue full, timed by a clock that holds the stream.

``HeldClock`` is asv's ``timer``; ``plan_warm`` decides how many calls a
sample takes and how long the hold must be, from probe samples (the GPU's
time per call and the host's cost of enqueuing one). ``calibrate`` is the CPU
path's plan. See :mod:`kernelscope.timing`.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Callable

import torch

from kernelscope.timing import clocks
from kernelscope.timing.clocks import ClockWatch, ProbedSpin
from kernelscope.timing.primitives import grown_hold


class HeldClock:
    """asv's timer for warm mode: GPU seconds between two readings, the stream held at the first.

    asv (timeit) reads a timer twice per sample, around ``number`` calls. The
    first reading parks a spin of ``hold_s`` on the stream and records the
    start event; the second records the end event, waits for it and returns
    the elapsed GPU time (the first returns 0). If the host took longer than
    ``hold_s`` to enqueue the calls, the GPU may have waited on it: the sample
    counts as ``starved`` and the hold grows for the next one.

    The spin also reads the SM clock of each sample into ``watch``.

    Created lazily (CUDA objects at import time would break asv's forkserver),
    and safe to store as a class attribute: it is an instance, not a function.
    """

    def __init__(self, hold_s: float = 0.0):
        self.hold_s = hold_s
        self.starved = 0  # samples in which the host fell behind the GPU
        self.last_host_s = 0.0  # host time to enqueue the last sample's calls
        self.last_longest_call_s = 0.0  # the longest of them, from sample()
        self.watch = ClockWatch(None)  # the SM clock of each sample (max clock looked up on the first)
        self._start = None
        self._spin: ProbedSpin | None = None
        self._host_t0 = 0.0
        self._case_key: object = None

    def __call__(self) -> float:
        if not torch.cuda.is_available():
            return time.perf_counter()
        if self._start is None:  # opens a sample
            self._spin = ProbedSpin(self.hold_s)
            self._start = torch.cuda.Event(enable_timing=True)
            self._start.record()
            self._host_t0 = time.perf_counter()
            return 0.0
        self.last_host_s = time.perf_counter() - self._host_t0
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        end.synchronize()
        elapsed = self._start.elapsed_time(end) / 1e3
        self._read_clock()
        self._start = None
        if self.last_host_s > self.hold_s:
            self.starved += 1
            self.hold_s = grown_hold(self.last_host_s)
        return elapsed

    def _read_clock(self) -> None:
        mhz = self._spin.mhz(self._start) if self._spin else None
        if mhz is not None:
            if self.watch.max_mhz is None and not self.watch.readings:
                self.watch.max_mhz = clocks.max_sm_mhz()
            self.watch.add(mhz)

    def hold_for(self, case_key: object, hold_s: float) -> None:
        """Hold for a case: its planned hold, or, for the same case, what the hold has grown to.

        asv re-runs setup before every sample; a hold grown after a starved
        sample, and the clock readings so far, must survive that.
        """
        if case_key != self._case_key:
            self._case_key, self.hold_s = case_key, hold_s
            self.watch = ClockWatch(None)

    def sample(self, fn: Callable[[], object], number: int) -> float:
        """One sample as asv takes it: seconds for ``number`` calls.

        Also keeps the longest single call's host time (``last_longest_call_s``),
        which tells a host that waited on the GPU from one that was just slow.
        """
        longest = 0.0
        t0 = self()
        for _ in range(number):
            c0 = time.perf_counter()
            fn()
            longest = max(longest, time.perf_counter() - c0)
        elapsed = self() - t0
        self.last_longest_call_s = longest
        return elapsed


PROBE_HOLD_S = 10e-3  # covers 8 calls of the slowest launch path here (Numba, about 0.25 ms a call)
MAX_QUEUED_CALLS = 128  # CUDA queues about a thousand launches; softmax-manual is 5 a call
WARM_TARGET_S = 2e-3  # GPU time per warm sample: with the queue full, enough for 0.1% event resolution


@dataclass
class WarmPlan:
    number: int  # calls per sample
    hold_s: float  # spin before each sample
    per_call_s: float  # GPU seconds a call, from the plan's last sample
    host_per_call_s: float  # host seconds to enqueue a call


def next_plan(plan: WarmPlan, host_s: float, longest_call_s: float) -> WarmPlan | None:
    """After a planning sample: None if the hold covered the enqueue, else the plan to try next.

    ``host_s`` is the time the host took to enqueue the sample's calls,
    ``longest_call_s`` the longest single call among them. One call that
    stalls for a good part of the hold means the host waited on the held GPU:
    the launch queue was full (fewer calls), or the call synchronizes. Without
    a stall, the host was just slower than planned: a longer hold.
    """
    if host_s <= plan.hold_s:
        return None
    if longest_call_s > plan.hold_s / 2:
        number = max(1, plan.number // 2)
        return WarmPlan(number, grown_hold(number * plan.host_per_call_s), plan.per_call_s, plan.host_per_call_s)
    return WarmPlan(plan.number, grown_hold(host_s), plan.per_call_s, host_s / plan.number)


def plan_warm(fn: Callable[[], object], device: str, target_s: float = WARM_TARGET_S,
              max_calls: int = MAX_QUEUED_CALLS) -> WarmPlan:
    """Calls per warm sample and the hold that keeps the queue full for them."""
    if device != "cuda":  # synchronous: nothing to hold; 10 ms samples, as a shared CPU is noisy
        number, per_call = calibrate(fn, device)
        return WarmPlan(number, 0.0, per_call, per_call)
    probe = 8
    clock = HeldClock(hold_s=PROBE_HOLD_S)
    gpu_s = clock.sample(fn, probe)
    if clock.starved:  # a launch path slower than the probe's hold: again, behind one that covers it
        clock = HeldClock(grown_hold(clock.last_host_s))
        gpu_s = clock.sample(fn, probe)
    host_per_call = clock.last_host_s / probe
    number = max(1, min(max_calls, math.ceil(target_s / max(gpu_s / probe, 1e-9))))
    plan = WarmPlan(number, grown_hold(number * host_per_call), gpu_s / probe, host_per_call)
    for _ in range(6):
        clock = HeldClock(plan.hold_s)
        plan.per_call_s = clock.sample(fn, plan.number) / plan.number
        retry = next_plan(plan, clock.last_host_s, clock.last_longest_call_s)
        if retry is None:
            return plan
        plan = retry
    print(f"kernelscope: could not keep the launch queue full ({plan.number} calls, hold "
          f"{plan.hold_s * 1e3:.2f} ms): warm samples include host time", file=sys.stderr)
    return plan


def calibrate(fn: Callable[[], object], device: str, target_s: float = 0.01, max_number: int = 100_000) -> tuple[int, float]:
    """How many back-to-back calls fill ``target_s`` on a synchronous device, and the time of one call.

    The CPU path's calibration: a host clock around calls that finish when they
    return. The GPU's is plan_warm.
    """
    if device == "cuda":
        raise ValueError("calibrate times synchronous calls with a host clock; on a GPU use plan_warm")
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        t1 = time.perf_counter()
        per_call = max((t1 - t0) / number, 1e-9)
        if t1 - t0 >= target_s / 10 or number >= max_number:
            return max(1, min(max_number, math.ceil(target_s / per_call))), per_call
        number *= 10
