"""Timing on the GPU, never a host clock on asynchronous work.

Three modes, after nvbench's methodology:

* **warm** -- back-to-back launches between two CUDA events. ``EventClock`` is a
  zero-argument clock that asv uses as its ``timer``: each reading records an
  event, waits for it, and returns seconds since a reference event, so asv's
  ``(t_after - t_before) / number`` is GPU time per call.
* **cold** -- the L2 cache flushed before every call (a memset of twice the L2,
  outside the timed region), each call between its own pair of events.
* **graph** -- the calls captured into a CUDA graph and replayed: the kernels'
  own time, without the host's launch overhead.

On a machine without a GPU the same functions time with ``time.perf_counter``
(CPU torch, the Triton interpreter and the Numba simulator are synchronous),
and graph mode is unavailable.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import torch


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


class EventClock:
    """A clock reading GPU time: record an event, wait for it, seconds since the first.

    Created lazily (CUDA objects at import time would break asv's forkserver),
    and safe to store as a class attribute: it is an instance, not a function.
    A reading costs about 22 us of host time on an H100, none of it inside the
    interval it measures.
    """

    def __init__(self):
        self._start = None

    def __call__(self) -> float:
        if not torch.cuda.is_available():
            return time.perf_counter()
        if self._start is None:
            self._start = torch.cuda.Event(enable_timing=True)
            self._start.record()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        event.synchronize()
        return self._start.elapsed_time(event) / 1e3


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
    """How many back-to-back calls fill ``target_s``, and the time of one call."""
    clock = EventClock() if device == "cuda" else time.perf_counter
    number = 1
    while True:
        synchronize(device)
        t0 = clock()
        for _ in range(number):
            fn()
        t1 = clock()
        per_call = max((t1 - t0) / number, 1e-9)
        if t1 - t0 >= target_s / 10 or number >= max_number:
            return max(1, min(max_number, math.ceil(target_s / per_call))), per_call
        number *= 10


HOLD_CYCLES = 200_000  # about 100 us at H100 clocks: longer than a Python launch path
MIN_SAMPLES = 6  # asv's Mann-Whitney test needs at least 6 samples a side


def _budget(samples: int, max_time: float):
    """Yield sample indices until ``samples`` are taken or ``max_time`` has passed (after MIN_SAMPLES)."""
    deadline = time.perf_counter() + max_time
    for i in range(samples):
        if i >= MIN_SAMPLES and time.perf_counter() > deadline:
            return
        yield i


def time_cold(fn: Callable[[], object], device: str, samples: int, flusher: L2Flusher | None = None,
              max_time: float = 3.0) -> list[float]:
    """Seconds per call with a cold L2: flush, then time the call alone."""
    flusher = flusher or L2Flusher(device)
    if device != "cuda":
        times = []
        for _ in _budget(samples, max_time):
            flusher()
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return times
    pairs = []
    for _ in _budget(samples, max_time):
        flusher()
        # Hold the stream with a spin kernel while the host enqueues the timed
        # call (nvbench's blocking kernel): otherwise, when the host is slower
        # to launch than the GPU is to finish the flush, the idle gap lands
        # between the events.
        torch.cuda._sleep(HOLD_CYCLES)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    return [s.elapsed_time(e) / 1e3 for s, e in pairs]


class GraphUnavailable(RuntimeError):
    pass


def capture_graph(fn: Callable[[], torch.Tensor], calls: int):
    """Capture ``calls`` back-to-back calls of ``fn`` into a CUDA graph.

    Returns the graph and the output of its last call (valid after each replay).
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
            for _ in range(calls):
                out = fn()
    except Exception as exc:  # e.g. a library that synchronizes inside the call
        torch.cuda.synchronize()
        raise GraphUnavailable(f"graph capture failed: {type(exc).__name__}: {exc}") from exc
    return graph, out


def time_graph(graph, calls: int, samples: int, max_time: float = 3.0) -> list[float]:
    """Seconds per call from timed replays of a graph of ``calls`` calls."""
    graph.replay()  # the first replay uploads the graph
    pairs = []
    for _ in _budget(samples, max_time):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    return [s.elapsed_time(e) / 1e3 / calls for s, e in pairs]


def copy_bandwidth(nbytes: int = 2**30, samples: int = 20) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus written.

    The practical ceiling for memory-bound kernels (3.0 TB/s on an H100 against
    a 3.35 TB/s datasheet figure); results report percent of this, not of the
    datasheet.
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
