"""Cold mode: the L2 flushed before every call, each call alone between events behind a spin.

See :mod:`kernelscope.timing`. ``copy_bandwidth`` is here because it is cold
mode's measurement of a device-to-device copy: the practical ceiling the
results report percent of.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from kernelscope.timing.clocks import ClockWatch, ProbedSpin, read_clocks
from kernelscope.timing.primitives import MIN_SAMPLES, budget, grown_hold


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


def time_cold(fn: Callable[[], object], device: str, samples: int, flusher: L2Flusher | None = None,
              max_time: float = 3.0, hold_s: float = 100e-6, watch: ClockWatch | None = None) -> list[float]:
    """Seconds per call with a cold L2: flush, then time the call alone.

    ``hold_s`` must outlast the host's launch path of one call (see plan_warm);
    ``watch``, if given, gets the SM clock of each sample.
    """
    flusher = flusher or L2Flusher(device)
    if device != "cuda":
        times = []
        for _ in budget(samples, max_time):
            flusher()
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return times
    pairs, hold = [], ColdHold(hold_s)
    for _ in budget(samples, max_time):
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
    read_clocks(watch, [(spin, start) for spin, start, _, _ in pairs])
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
