"""Triton kernels, one module per op.

Every kernel loads its inputs, computes in float32 and stores in the output's
dtype: float16/bfloat16 arithmetic would lose accuracy (and the Triton
interpreter does not multiply bfloat16 at all).
"""

import torch
import triton


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
