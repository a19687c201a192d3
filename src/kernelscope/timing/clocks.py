"""The SM clock each timed sample ran at, and samples taken while the GPU throttled.

Every sample already starts behind a spin kernel (``torch.cuda._sleep``), which
spins for a given number of SM clock cycles. Timing the spin with a pair of
events therefore reads the SM clock of that moment, for free: cycles / seconds.
A short lead spin goes first, so that the event before the measured spin is
stamped while the GPU is busy, not while it waits for the host's next launch.

As in nvbench, a sample whose clock is below ``THROTTLE_FRACTION`` of the
GPU's maximum SM clock (NVML's, else nvidia-smi's) is flagged as throttled. A
benchmark process appends, per case, the clock of every sample it took to a
log beside asv's result file (:mod:`kernelscope.results.clock_logs`: where the
log goes, its records, how it is read and stored); ``kernelscope results``
joins it to the stored result: how many of its samples were flagged, and the
median clock.
"""

from __future__ import annotations

import os
import statistics
import subprocess
from dataclasses import dataclass, field
from functools import cache

THROTTLE_FRACTION = 0.75  # nvbench's default threshold
LEAD_S = 30e-6  # covers the host's enqueue of the marker event and the measured spin


@dataclass
class ClockWatch:
    """The SM clock of each sample of one case, and which were throttled.

    Pure bookkeeping: fed MHz readings, it knows nothing of GPUs (the tests
    feed it a simulated clock).
    """

    max_mhz: float | None
    fraction: float = THROTTLE_FRACTION
    readings: list[float] = field(default_factory=list)
    retaken: int = 0  # samples dropped for a low reading and taken again (graph mode)

    def add(self, mhz: float) -> bool:
        """Record one sample's clock; True if it was throttled."""
        self.readings.append(mhz)
        return self.throttled(mhz)

    def throttled(self, mhz: float) -> bool:
        return self.max_mhz is not None and mhz < self.fraction * self.max_mhz

    def summary(self, last: int | None = None) -> dict:
        """Of the ``last`` readings (all by default): count, flagged, median and lowest clock."""
        chosen = self.readings[-last:] if last else self.readings
        flagged = sum(self.throttled(m) for m in chosen)
        return {"samples": len(chosen), "throttled": flagged,
                "median_mhz": statistics.median(chosen) if chosen else None,
                "min_mhz": min(chosen) if chosen else None, "max_mhz": self.max_mhz,
                "mostly_throttled": bool(chosen) and flagged > len(chosen) / 2}


class ProbedSpin:
    """A hold on the stream that also reads the SM clock: [lead spin][marker][spin of N cycles][caller's start event]."""

    def __init__(self, seconds: float):
        import torch

        from kernelscope.timing.primitives import hold_stream

        self.marker, self.cycles = None, 0
        if seconds <= 0:  # no hold asked for: nothing to spin, no clock to read
            return
        hold_stream(LEAD_S)
        self.marker = torch.cuda.Event(enable_timing=True)
        self.marker.record()
        self.cycles = hold_stream(seconds)

    def mhz(self, start) -> float | None:
        """The clock during the spin, once ``start`` (recorded right after it) has completed."""
        if self.marker is None:
            return None
        elapsed_ms = self.marker.elapsed_time(start)
        return self.cycles / (elapsed_ms * 1e3) if elapsed_ms > 0 else None


def read_clocks(watch: ClockWatch | None, spins: list[tuple[ProbedSpin, object]]) -> None:
    """Give ``watch`` the SM clock of each (spin, the start event recorded right after it), once they completed."""
    if watch is None:
        return
    if watch.max_mhz is None:
        watch.max_mhz = max_sm_mhz()
    for spin, start in spins:
        mhz = spin.mhz(start)
        if mhz is not None:
            watch.add(mhz)


@cache
def max_sm_mhz() -> float | None:
    """The GPU's maximum SM clock in MHz: NVML, else nvidia-smi, else None."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(_device_index())
        return float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:  # no pynvml, no driver: try the command line tool
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits",
                              "-i", str(_device_index())], capture_output=True, text=True, timeout=30)
        return float(out.stdout.split()[0]) if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def _device_index() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    return int(visible) if visible.isdigit() else 0


def throttle_reasons() -> list[str]:
    """Why NVML says the clocks are held down right now (names), or [] if it cannot say."""
    try:
        import pynvml

        handle = pynvml.nvmlDeviceGetHandleByIndex(_device_index())
        get = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = get(handle)
    except Exception:
        return []
    names = {name: getattr(pynvml, name) for name in dir(pynvml)
             if name.startswith(("nvmlClocksThrottleReason", "nvmlClocksEventReason")) and not name.endswith(("All", "None"))}
    return sorted({n.split("Reason", 1)[1] for n, bit in names.items() if isinstance(bit, int) and mask & bit})
