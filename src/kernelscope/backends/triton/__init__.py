"""Triton kernels, one module per op.

Every kernel loads its inputs, computes in float32 and stores in the output's
dtype: float16/bfloat16 arithmetic would lose accuracy (and the Triton
interpreter does not multiply bfloat16 at all).
"""

from functools import cache

import torch
import triton

from kernelscope.backends.device import DeviceFacts

DEFAULT_WARPS = 4  # Triton's num_warps where a launch gives none: a program of 128 threads


@cache
def gpu_facts(device: torch.device) -> DeviceFacts | None:
    """What the tuned kernels' launches read of ``device``'s GPU (its SMs and L2); None on the CPU (the interpreter,
    whose stand-ins each launch-shape function keeps)."""
    if device.type != "cuda":
        return None
    props = torch.cuda.get_device_properties(device)
    return DeviceFacts(props.name, props.multi_processor_count, props.L2_cache_size)


def gpu_facts_of(index: int) -> DeviceFacts:
    """gpu_facts of the CUDA device at ``index``."""
    return gpu_facts(torch.device("cuda", index))


def row_num_warps(block_size: int) -> int:
    """The lecture's (and Triton tutorial's) warps-per-row heuristic."""
    if block_size >= 4096:
        return 16
    if block_size >= 2048:
        return 8
    return 4


def next_power_of_2(n: int) -> int:
    return triton.next_power_of_2(n)


def launch_per_row(kernel, x: torch.Tensor, out: torch.Tensor | None, max_block: int | None = None) -> torch.Tensor:
    """The lecture's launch: one program per row, ``BLOCK_SIZE`` the row width's next power of two.

    ``kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE)``;
    ``max_block`` caps the block for kernels that loop over wider rows.
    """
    rows, cols = x.shape
    y = torch.empty_like(x) if out is None else out
    block = next_power_of_2(cols) if max_block is None else min(next_power_of_2(cols), max_block)
    kernel[(rows,)](x, y, x.stride(0), y.stride(0), cols, BLOCK_SIZE=block, num_warps=row_num_warps(block))
    return y
