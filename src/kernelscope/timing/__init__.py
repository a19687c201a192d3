"""Timing on the GPU, never a host clock on asynchronous work.

Three modes, after nvbench's methodology:

* **warm** -- back-to-back calls between two CUDA events, with the launch queue
  full. ``HeldClock`` is the zero-argument clock asv uses as its ``timer``: the
  reading that opens a sample first parks a spin kernel on the stream (nvbench's
  blocking kernel), long enough for the host to enqueue all ``number`` calls
  behind it; the reading that closes it waits for the end event. The GPU then
  runs the calls back to back, as it does when a training loop runs ahead of
  it, and ``(t_after - t_before) / number`` is GPU time per call in steady
  state. Without the hold a 3 us kernel launched from Python reads as the
  host's 20 us launch path, which read 13-26% slower in a rerun of one commit.
* **cold** -- the L2 cache flushed before every call (a memset of twice the L2,
  outside the timed region), each call between its own pair of events, behind
  its own spin kernel.
* **graph** -- the calls captured into a CUDA graph and replayed: the kernels'
  own time, without the host's launch path or the per-launch cost of streams.

Every GPU sample also reads the SM clock it ran at, from the spin kernel that
precedes it (:mod:`kernelscope.timing.clocks`), and flags it when the GPU
throttled.

On a machine without a GPU the same functions time with ``time.perf_counter``
(CPU torch, the Triton interpreter and the Numba simulator are synchronous),
and graph mode is unavailable.
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


HOLD_MARGIN_S = 50e-6  # covers recording the start event and Python's jitter


def grown_hold(host_s: float) -> float:
    """A hold that outlasts an enqueue that took ``host_s``, with room for jitter."""
    return 1.5 * host_s + HOLD_MARGIN_S


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


class L2Flusher:
    """Evicts the L2 cache by writing a buffer twice its size."""

    def __init__(self, device: str):
        if device == "cuda":
            l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20)
            nbytes = 2 * max(l2, 2**20)
        else:
            nbytes = 64 * 2**20  # larger than the last-level cache of most CPUs
        self.buffer = torch.empty(nbytes, dtype=torch.uint8, device=device)

    def __call__(self) -> None:
        self.buffer.zero_()


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


MIN_SAMPLES = 6  # asv's Mann-Whitney test needs at least 6 samples a side


def _budget(samples: int, max_time: float):
    """Yield sample indices until ``samples`` are taken or ``max_time`` has passed (after MIN_SAMPLES)."""
    deadline = time.perf_counter() + max_time
    for i in range(samples):
        if i >= MIN_SAMPLES and time.perf_counter() > deadline:
            return
        yield i


def time_cold(fn: Callable[[], object], device: str, samples: int, flusher: L2Flusher | None = None,
              max_time: float = 3.0, hold_s: float = 100e-6, watch: ClockWatch | None = None) -> list[float]:
    """Seconds per call with a cold L2: flush, then time the call alone.

    ``hold_s`` must outlast the host's launch path of one call (see plan_warm);
    ``watch``, if given, gets the SM clock of each sample.
    """
    flusher = flusher or L2Flusher(device)
    if device != "cuda":
        times = []
        for _ in _budget(samples, max_time):
            flusher()
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return times
    pairs, hold = [], ColdHold(hold_s)
    for _ in _budget(samples, max_time):
        flusher()
        # Hold the stream with a spin kernel while the host enqueues the timed
        # call (nvbench's blocking kernel): otherwise, when the host is slower
        # to launch than the GPU is to finish the flush, the idle gap lands
        # between the events.
        t0 = time.perf_counter()
        spin = ProbedSpin(hold.hold_s)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((spin, start, end, hold.after(time.perf_counter() - t0)))
    torch.cuda.synchronize()
    _read_clocks(watch, [(spin, start) for spin, start, _, _ in pairs])
    return hold.kept([s.elapsed_time(e) / 1e3 for _, s, e, _ in pairs], [starved for *_, starved in pairs])


class ColdHold:
    """Cold mode's hold, grown when the host outlasts it, and which samples it may have failed to cover.

    A sample whose enqueue (spin, start event, the call) took the host longer
    than its hold may have had the GPU wait for the launch between its events,
    as warm mode's HeldClock counts a starved sample. The H100's Numba calls
    cost 220-300 us on the host, more some calls: softmax-numba at 4096x4096
    read 76.8 us cold in one full run and 60.1 in the next, with the same code
    (do_bench, host-bound there, read 61). The hold grows after such a sample,
    and the starved samples are dropped while enough others remain.
    """

    def __init__(self, hold_s: float):
        self.hold_s = hold_s

    def after(self, host_s: float) -> bool:
        """Whether the sample just enqueued in ``host_s`` may have starved; if so the next hold covers it."""
        starved = host_s > self.hold_s
        if starved:
            self.hold_s = grown_hold(host_s)
        return starved

    @staticmethod
    def kept(times: list[float], starved: list[bool]) -> list[float]:
        """The samples that were covered, if at least MIN_SAMPLES were; else every sample."""
        covered = [t for t, s in zip(times, starved) if not s]
        return covered if len(covered) >= MIN_SAMPLES else times


def _read_clocks(watch: ClockWatch | None, spins: list[tuple[ProbedSpin, object]]) -> None:
    if watch is None:
        return
    if watch.max_mhz is None:
        watch.max_mhz = clocks.max_sm_mhz()
    for spin, start in spins:
        mhz = spin.mhz(start)
        if mhz is not None:
            watch.add(mhz)


class GraphUnavailable(RuntimeError):
    pass


def capture_graph(fn: Callable[[], torch.Tensor], calls: int):
    """Capture ``calls`` back-to-back calls of ``fn`` into a CUDA graph.

    Returns the graph and the output of its last call (valid after each replay).
    Each call's output is released before the next call runs, so the graph's
    memory pool hands the same block to every call: one output alive, as in
    warm mode, where the caching allocator does the same. Holding each output
    until the next one was made (two 1 GiB outputs alternating at 2^28
    elements) read 3-16% slow, in samples that jumped between the warm time
    and the slow one.
    """
    if not torch.cuda.is_available():
        raise GraphUnavailable("CUDA graphs need a GPU")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm up on the capture stream (allocator, lazy inits)
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            out = None
            for _ in range(calls):
                out = None  # freed within the capture: the next call's output takes its block
                out = fn()
    except Exception as exc:  # e.g. a library that synchronizes inside the call
        torch.cuda.synchronize()
        raise GraphUnavailable(f"graph capture failed: {type(exc).__name__}: {exc}") from exc
    return graph, out


GRAPH_SPIN_S = 50e-6  # before each replay: reads the clock, and covers the host's graph launch
# After capture, replays untimed for this long (at least GRAPH_SETTLE_MIN of them) before
# the first sample: the first replays of a freshly captured graph can read slow (#13 item 1).
GRAPH_SETTLE_S = 25e-3
GRAPH_SETTLE_MIN = 3


def settle_graph(graph, seconds: float = GRAPH_SETTLE_S, least: int = GRAPH_SETTLE_MIN) -> int:
    """Replay ``graph`` untimed, each replay waited for, for ``seconds`` and ``least`` replays; how many ran.

    The first replay also uploads the graph. At 2^28 elements (a 1 GiB output)
    up to a third of the first 30 replays after a capture read 16% slow (829 us
    a call against 712) on the H100, and none after them
    (results-proofs/2026-11-25-h100/graph-state): do_bench_cudagraph replays
    its graph while estimating, before it times, which is why it never saw them.
    """
    deadline, ran = time.perf_counter() + seconds, 0
    while ran < max(1, least) or time.perf_counter() < deadline:
        graph.replay()
        torch.cuda.current_stream().synchronize()
        ran += 1
    return ran


def time_graph(graph, calls: int, samples: int, max_time: float = 3.0, watch: ClockWatch | None = None,
               settle_s: float = GRAPH_SETTLE_S) -> list[float]:
    """Seconds per call from timed replays of a graph of ``calls`` calls (``watch``: each sample's SM clock).

    The graph first settles (``settle_graph``); then the replays are queued
    back to back, each between events behind a spin that outlasts the host's
    graph launch (version 7). Version 5 waited for each replay before queuing
    the next, to cure slow replays that turned out to be the first ones after a
    capture (version 6 settles them away); its idle gaps let the SM clock sag:
    graph samples read under 75% of the maximum clock in 115-217 cases of a
    full H100 run, against 5 with replays back to back (the clock logs of
    03708299, e972512d and 76de865e).
    """
    settle_graph(graph, settle_s, GRAPH_SETTLE_MIN if settle_s > 0 else 1)  # 0: the upload alone
    pairs = []
    for _ in _budget(samples, max_time):
        spin = ProbedSpin(GRAPH_SPIN_S)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        pairs.append((spin, start, end))
    torch.cuda.synchronize()
    _read_clocks(watch, [(spin, start) for spin, start, _ in pairs])
    return [s.elapsed_time(e) / 1e3 / calls for _, s, e in pairs]


def copy_bandwidth(nbytes: int = 2**30, samples: int = 20) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus written.

    The practical ceiling for memory-bound kernels (the datasheet's peak is never
    reached); results report percent of this, not of the datasheet.
    """
    if not torch.cuda.is_available():
        raise RuntimeError("copy bandwidth is measured on a GPU")
    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").uniform_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = time_cold(lambda: dst.copy_(src), "cuda", samples, flusher=lambda: None)
    times.sort()
    return 2 * nbytes / times[len(times) // 2]
