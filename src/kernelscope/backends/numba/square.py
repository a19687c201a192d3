"""Numba CUDA square kernels.

The two lecture kernels index a 2-D grid of 16x16 blocks, one element a thread.
``square_flat`` is the tuned one: elementwise.py's map of ``square_f32`` over
the array flattened to 1-D, tiled (the default: one contiguous tile a block,
one lap) or grid-stride. On the H100 the grid-stride version plateaued at
87-91% of copy bandwidth (so did the CUDA C++ grid-stride kernels), while
torch's and Triton's one-lap tiles reach 99-100%, and so does the tiled one.

It moves 8 bytes an element: x read once, y written once.
"""

import math

import torch
from numba import cuda

from kernelscope.backends.numba import as_array, elementwise, stream

BLOCK = (16, 16)


@cuda.jit(cache=True)  # compiled once, then loaded from __pycache__: every benchmark process calls it anew
def square_lecture_kernel(x, y):
    # As in the lecture: the first grid coordinate (threadIdx.x, the fast one
    # inside a warp) indexes rows, so neighbouring threads touch addresses a
    # whole row apart and each warp's loads are scattered.
    row, col = cuda.grid(2)
    if row < x.shape[0] and col < x.shape[1]:
        y[row, col] = x[row, col] * x[row, col]


@cuda.jit(cache=True)
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
FLAT_DEFAULTS = elementwise.Defaults(FLAT_THREADS, FLAT_BLOCKS_PER_SM, FLAT_UNROLL, FLAT_TILED)


@cuda.jit(device=True)
def square_f32(v):
    return v * v


def launch_square_flat(x: torch.Tensor, out: torch.Tensor | None = None, threads: int | None = None,
                       blocks_per_sm: int | None = None, unroll: int | None = None,
                       tiled: bool | None = None, direct: bool = False) -> torch.Tensor:
    """square_flat with an explicit launch shape and mode (None: the module defaults)."""
    return elementwise.launch(square_f32, "square", FLAT_DEFAULTS, x, out, threads, blocks_per_sm, unroll, tiled,
                              direct)


def square_flat(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_square_flat(x, out)


_square_flat_direct = elementwise.direct_map(square_f32, "square", FLAT_DEFAULTS)


def square_flat_direct(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """square_flat's kernel, launched through the driver after its first call (direct.py): a cheaper call."""
    return _square_flat_direct(x, out)


def square_flat_plan_of(shape: tuple[int, ...], dtype: str, facts):
    """square-numba-flat's launch at ``shape`` on the GPU of ``facts`` (`kernelscope plan`)."""
    return elementwise.map_plan_of("square", FLAT_DEFAULTS, shape, facts)


def square_flat_direct_plan_of(shape: tuple[int, ...], dtype: str, facts):
    """square-numba-direct's launch: square_flat's kernel and grid, through the driver after the first call."""
    return elementwise.map_plan_of("square", FLAT_DEFAULTS, shape, facts,
                                   "launched through the driver after the first call")
