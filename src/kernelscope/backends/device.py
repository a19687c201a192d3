"""What the tuned kernels' launch shapes are chosen from: a few facts about the GPU, as data.

Each backend's launch reads the facts it needs from the GPU it runs on (its
``gpu_facts``: SMs, L2, the DRAM's peak bandwidth an SM, shared memory a block)
and hands them to a pure function of (shape, element size, facts), the same
function ``kernelscope plan`` calls with a preset below to show what a call
would launch on that GPU without one. This module imports no framework.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class DeviceFacts:
    """A GPU as the launch-shape functions see it. A field a backend's launch does not read stays at its
    default (0: not read); a preset fills every field."""

    name: str
    sm_count: int
    l2_bytes: int = 0
    # The DRAM's peak bandwidth (memory clock x bus width, two transfers a clock, as the driver's attributes give
    # it) over the SMs, in GB/s: softmax-cuda's and softmax-numba's plans keep more bytes in flight an SM where it
    # reaches backends.WIDE_DRAM_GBPS_PER_SM. 0: not read, or the driver does not say.
    dram_gbps_per_sm: float = 0.0
    shared_bytes_per_block: int = 0  # dynamic shared memory a block may opt in to
    max_threads_per_block: int = 1024
    max_threads_per_sm: int = 2048

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """'132 SMs, 50 MiB L2, 25.4 GB/s of DRAM an SM, 227 KiB of shared memory a block' (the fields read)."""
        parts = [f"{self.sm_count} SMs"]
        if self.l2_bytes:
            parts.append(f"{self.l2_bytes / 2**20:g} MiB L2")
        if self.dram_gbps_per_sm:
            parts.append(f"{self.dram_gbps_per_sm:.1f} GB/s of DRAM an SM")
        if self.shared_bytes_per_block:
            parts.append(f"{self.shared_bytes_per_block / 1024:g} KiB of shared memory a block")
        return ", ".join(parts)


def dram_peak_gbps(memory_clock_khz: float, bus_bits: int) -> float:
    """The DRAM's peak from the driver's attributes, as bindings.cpp's dram_peak_gbps and Numba's reader compute it."""
    return 2 * memory_clock_khz * 1e3 * bus_bits / 8 / 1e9


SM90_SHARED_OPTIN = 227 * 1024  # sm_90: 227 KiB of dynamic shared memory a block may opt in to

# The H100 SXM (80 GB HBM3): 132 SMs, 50 MiB of L2, a 2,619 MHz memory clock on a 5120-bit bus: 3,352 GB/s,
# 25.4 an SM.
H100 = DeviceFacts("NVIDIA H100 80GB HBM3", 132, 50 * 2**20, dram_peak_gbps(2_619_000, 5120) / 132,
                   SM90_SHARED_OPTIN)
# The H200: the same 132 SMs, 60 MiB of L2, HBM3e on a 6144-bit bus: the attributes give 4,814 GB/s, 36.5 an SM.
H200 = DeviceFacts("NVIDIA H200", 132, 60 * 2**20, 4814.0 / 132, SM90_SHARED_OPTIN)

PRESETS: dict[str, DeviceFacts] = {"h100": H100, "h200": H200}
THIS = "this"  # the GPU of this machine, read as each backend's launch reads it
GPU_CHOICES = (THIS, *PRESETS)
