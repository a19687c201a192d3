"""Triton kernels, one module per op.

Every kernel loads its inputs, computes in float32 and stores in the output's
dtype: float16/bfloat16 arithmetic would lose accuracy (and the Triton
interpreter does not multiply bfloat16 at all).
"""

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
