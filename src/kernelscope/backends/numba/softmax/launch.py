"""softmax-numba's launches: the plan plan.py picks for the input on this GPU (or the simulator), run as its
kernels' grids."""

import numpy as np
import torch

from kernelscope.backends.numba import as_array, stream
from kernelscope.backends.numba.common import SIMULATED, check_threads, quick_barriers

from .gpu import gpu_facts
from .plan import Plan, softmax_launch
from .registers import softmax_regs_kernel
from .shared_row import allow_large_shared, softmax_row_kernel
from .split import chunk_stats_kernel, chunk_write_kernel


def plan_softmax(rows: int, cols: int, device: torch.device, max_threads: int | None = None,
                 cols_per_thread: int | None = None, unroll: int | None = None, chunk: int | None = None,
                 split_threads: int | None = None, max_cached_cols: int | None = None,
                 l2_share: float | None = None, path: str | None = None, recompute: bool | None = None,
                 fast_exp: bool | None = None, min_blocks: int = 1, vector: bool | None = None) -> Plan:
    """softmax_launch on ``device``'s GPU (gpu_facts), or under the simulator its own sizes."""
    return softmax_launch(rows, cols, None if SIMULATED else gpu_facts(device.index or 0), max_threads,
                          cols_per_thread, unroll, chunk, split_threads, max_cached_cols, l2_share, path, recompute,
                          fast_exp, min_blocks, vector)


def launch_softmax(x: torch.Tensor, out: torch.Tensor | None = None, plan: Plan | None = None,
                   **overrides) -> torch.Tensor:
    """Softmax with an explicit plan, or the plan ``plan_softmax(**overrides)`` picks."""
    rows, cols = x.shape
    y = torch.empty_like(x) if out is None else out
    if x.numel() == 0:
        return y
    plan = plan or plan_softmax(rows, cols, x.device, **overrides)
    check_threads(plan.threads)
    if plan.path == "regs" and plan.threads * plan.unroll < cols:
        raise ValueError(f"softmax-numba: the regs plan's {plan.threads} threads x {plan.unroll} elements hold "
                         f"{plan.threads * plan.unroll} of a row's {cols} columns")
    with quick_barriers():
        return _launch(x, y, plan, overrides)


def _launch(x: torch.Tensor, y: torch.Tensor, plan: Plan, overrides: dict) -> torch.Tensor:
    rows, cols = x.shape
    xa, ya, s = as_array(x.view(-1)), as_array(y.view(-1)), stream()
    if plan.path == "regs":
        vector = plan.vector and cols % 4 == 0 and x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0
        kernel = softmax_regs_kernel(plan.threads, plan.unroll, plan.fast_exp, plan.min_blocks,
                                     plan.threads * plan.unroll == cols, vector)
        kernel[rows, plan.threads, s](xa, ya, np.int64(cols))
        return y
    if plan.path == "row":
        kernel = softmax_row_kernel(plan.threads, plan.unroll, plan.recompute)
        args = (xa, ya, np.int64(cols))
        if SIMULATED or allow_large_shared(kernel, args, cols * 4):
            kernel[rows, plan.threads, s, cols * 4](*args)
            return y
        plan = plan_softmax(rows, cols, x.device, **{**overrides, "path": "split"})
    chunks = -(-cols // plan.chunk)
    stats = torch.empty((2, plan.group_rows * chunks), device=x.device, dtype=torch.float32)
    stats_max, stats_sum = as_array(stats[0]), as_array(stats[1])
    stats_kernel = chunk_stats_kernel(plan.threads, plan.unroll)
    write_kernel = chunk_write_kernel(plan.threads, plan.unroll)
    for row0 in range(0, rows, plan.group_rows):
        grid = (min(plan.group_rows, rows - row0), chunks)
        stats_kernel[grid, plan.threads, s](xa, stats_max, stats_sum, np.int64(cols), np.int64(plan.chunk),
                                            np.int64(row0))
        write_kernel[grid, plan.threads, s](xa, ya, stats_max, stats_sum, np.int64(cols), np.int64(plan.chunk),
                                            np.int64(row0))
    return y


def softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_softmax(x, out)
