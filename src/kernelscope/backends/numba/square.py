"""Numba CUDA square kernels.

The two lecture kernels index a 2-D grid of 16x16 blocks, one element a thread.
``square_flat`` is the tuned one, on the array flattened to 1-D, in two modes:

* tiled (the default): one lap, no loop. Block b owns the contiguous tile
  [b * threads * unroll, (b + 1) * threads * unroll); thread t loads elements
  tile + t + u * threads for u < unroll (each load a coalesced warp access),
  all loads before any store, and the grid is ceil(n / tile) blocks, as torch
  and Triton launch theirs. On the H100 the grid-stride version plateaued at
  87-91% of copy bandwidth (so did the CUDA C++ grid-stride kernels), while
  torch's and Triton's one-lap tiles reach 99-100%.
* grid-stride: a grid of a few resident blocks per SM, each thread walking the
  array in steps of the whole grid with ``unroll`` loads in flight.

It moves 8 bytes an element: x read once, y written once.
"""

import math
from functools import cache

import torch
from numba import cuda, float32

from kernelscope.backends.numba import as_array, stream
from kernelscope.backends.numba.common import (SIM_THREADS, SIMULATED, check_threads, grid_stride_blocks, jit_bounded,
                                                resident_blocks_per_sm)

BLOCK = (16, 16)


@cuda.jit
def square_lecture_kernel(x, y):
    # As in the lecture: the first grid coordinate (threadIdx.x, the fast one
    # inside a warp) indexes rows, so neighbouring threads touch addresses a
    # whole row apart and each warp's loads are scattered.
    row, col = cuda.grid(2)
    if row < x.shape[0] and col < x.shape[1]:
        y[row, col] = x[row, col] * x[row, col]


@cuda.jit
def square_coalesced_kernel(x, y):
    # threadIdx.x indexes columns: a warp reads 32 consecutive floats.
    col, row = cuda.grid(2)
    if row < x.shape[0] and col < x.shape[1]:
        y[row, col] = x[row, col] * x[row, col]


def _launch(kernel, grid, x, out):
    y = torch.empty_like(x) if out is None else out
    kernel[grid, BLOCK, stream()](as_array(x), as_array(y))
    return y


def square_lecture(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    rows, cols = x.shape
    grid = (math.ceil(rows / BLOCK[0]), math.ceil(cols / BLOCK[1]))
    return _launch(square_lecture_kernel, grid, x, out)


def square_coalesced(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    rows, cols = x.shape
    grid = (math.ceil(cols / BLOCK[0]), math.ceil(rows / BLOCK[1]))
    return _launch(square_coalesced_kernel, grid, x, out)


# Launch defaults of square_flat: 8 blocks of 256 threads fill an SM's 2048
# thread slots, and 4 loads a thread in flight (32 KiB an SM at full
# occupancy) cover DRAM latency. In the tiled mode blocks_per_sm only sets the
# launch bound. scripts/gpu/tune_numba.py sweeps them.
FLAT_THREADS = 256
FLAT_BLOCKS_PER_SM = 8
FLAT_UNROLL = 4
FLAT_TILED = True


@cache
def square_flat_kernel(threads: int, blocks_per_sm: int, unroll: int):
    """The grid-stride kernel for one launch shape (each shape compiles once)."""

    # launch_bounds: ptxas keeps registers low enough for blocks_per_sm blocks an SM,
    # so the whole grid is resident at once.
    @jit_bounded(threads, blocks_per_sm)
    def square_flat(x, y):
        n = x.size
        stride = cuda.gridsize(1)
        i = cuda.grid(1)
        v = cuda.local.array(unroll, float32)  # registers: unroll is a compile-time constant
        # Full steps: all `unroll` elements of the thread are in range. Every load
        # is issued before the first store, so they are in flight together.
        while i + (unroll - 1) * stride < n:
            for u in range(unroll):
                v[u] = x[i + u * stride]
            for u in range(unroll):
                y[i + u * stride] = v[u] * v[u]
            i += unroll * stride
        while i < n:  # the tail, one element at a time
            y[i] = x[i] * x[i]
            i += stride

    return square_flat


@cache
def square_tiled_kernel(threads: int, blocks_per_sm: int, unroll: int):
    """The tiled one-lap kernel for one launch shape (each shape compiles once)."""

    @jit_bounded(threads, blocks_per_sm)
    def square_tiled(x, y):
        n = x.size
        i = cuda.blockIdx.x * (threads * unroll) + cuda.threadIdx.x
        v = cuda.local.array(unroll, float32)
        if cuda.blockIdx.x * (threads * unroll) + threads * unroll <= n:  # a full tile: no bounds checks
            for u in range(unroll):
                v[u] = x[i + u * threads]
            for u in range(unroll):
                y[i + u * threads] = v[u] * v[u]
        else:  # the last, partial tile
            for u in range(unroll):
                if i + u * threads < n:
                    y[i + u * threads] = x[i + u * threads] * x[i + u * threads]

    return square_tiled


def tiled_blocks(n: int, threads: int, unroll: int) -> int:
    """The one-lap grid: one block a tile of threads * unroll elements."""
    return -(-n // (threads * unroll))


def launch_square_flat(x: torch.Tensor, out: torch.Tensor | None = None, threads: int | None = None,
                       blocks_per_sm: int | None = None, unroll: int | None = None,
                       tiled: bool | None = None) -> torch.Tensor:
    """square_flat with an explicit launch shape and mode (None: the module defaults)."""
    threads = threads or (SIM_THREADS if SIMULATED else FLAT_THREADS)
    blocks_per_sm = resident_blocks_per_sm(threads, blocks_per_sm or FLAT_BLOCKS_PER_SM)
    unroll = unroll or (2 if SIMULATED else FLAT_UNROLL)
    check_threads(threads)
    y = torch.empty_like(x) if out is None else out
    n = x.numel()
    if n == 0:
        return y
    if FLAT_TILED if tiled is None else tiled:
        blocks = tiled_blocks(n, threads, unroll)
        kernel = square_tiled_kernel(threads, blocks_per_sm, unroll)
    else:
        blocks = grid_stride_blocks(x.device, n, threads * unroll, blocks_per_sm)
        kernel = square_flat_kernel(threads, blocks_per_sm, unroll)
    kernel[blocks, threads, stream()](as_array(x.view(-1)), as_array(y.view(-1)))
    return y


def square_flat(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_square_flat(x, out)
