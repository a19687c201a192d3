"""What every timing mode is built from: how long a spin kernel holds a stream, and how many samples to take.

* the spin kernel (``torch.cuda._sleep``) that holds a stream while the host
  enqueues the timed calls behind it: :func:`spin_cycles_per_second` measures
  once how many SM cycles it spins a second, :func:`hold_stream` enqueues one
  that lasts a given time;
* the hold's margin (:func:`grown_hold`): a hold that outlasts an enqueue of a
  known length, with room for jitter;
* the sample budget (:func:`budget`): at least ``MIN_SAMPLES``, then until the
  time is up.

The modes (:mod:`~kernelscope.timing.warm`, :mod:`~kernelscope.timing.cold`,
:mod:`~kernelscope.timing.graph`, :mod:`~kernelscope.timing.host`) and the
clock reading (:mod:`~kernelscope.timing.clocks`) import these from here;
:mod:`kernelscope.timing` re-exports them.
"""

from __future__ import annotations

import time

import torch

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


def budget(samples: int, max_time: float):
    """Yield sample indices until ``samples`` are taken or ``max_time`` has passed (after MIN_SAMPLES)."""
    deadline = time.perf_counter() + max_time
    for i in range(samples):
        if i >= MIN_SAMPLES and time.perf_counter() > deadline:
            return
        yield i
