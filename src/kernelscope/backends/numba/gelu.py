"""Numba CUDA gelu, tanh approximation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).

The same two modes as ``square_flat`` (see square.py), on the array flattened
to 1-D: tiled (the default; one contiguous tile of threads * unroll elements a
block, one lap, a grid of ceil(n / tile)), or grid-stride (a few resident
blocks per SM); ``unroll`` independent loads a thread in flight either way. It moves 8 bytes an element: x read once, y written once;
the arithmetic (libdevice's tanhf is a few dozen instructions) stays under
what the SMs issue while DRAM delivers an element.

All arithmetic is float32: the constants are np.float32, so Numba does not
promote the expression to float64, and math.tanh of a float32 calls
libdevice's tanhf. No fastmath: its tanh.approx.f32 is off by up to about
5e-4 relative, far over the float32 tolerance of 1e-5.
"""

import math
from functools import cache

import numpy as np
import torch
from numba import cuda, float32

from kernelscope.backends.numba import as_array, stream
from kernelscope.backends.numba.common import (SIM_THREADS, SIMULATED, check_threads, grid_stride_blocks, jit_bounded,
                                                resident_blocks_per_sm)

SQRT_2_OVER_PI = np.float32(0.7978845608028654)
CUBIC = np.float32(0.044715)
HALF = np.float32(0.5)
ONE = np.float32(1.0)

# Launch defaults, as for square_flat; scripts/gpu/tune_numba.py sweeps them.
THREADS = 256
BLOCKS_PER_SM = 8
UNROLL = 4
TILED = True


@cuda.jit(device=True)
def gelu_f32(x):
    inner = SQRT_2_OVER_PI * (x + CUBIC * x * x * x)
    return HALF * x * (ONE + math.tanh(inner))


@cache
def gelu_kernel(threads: int, blocks_per_sm: int, unroll: int):
    """The grid-stride kernel for one launch shape (each shape compiles once)."""

    @jit_bounded(threads, blocks_per_sm)
    def gelu_flat(x, y):
        n = x.size
        stride = cuda.gridsize(1)
        i = cuda.grid(1)
        v = cuda.local.array(unroll, float32)
        while i + (unroll - 1) * stride < n:  # all loads of a step issued before any store
            for u in range(unroll):
                v[u] = x[i + u * stride]
            for u in range(unroll):
                y[i + u * stride] = gelu_f32(v[u])
            i += unroll * stride
        while i < n:
            y[i] = gelu_f32(x[i])
            i += stride

    return gelu_flat


@cache
def gelu_tiled_kernel(threads: int, blocks_per_sm: int, unroll: int):
    """The tiled one-lap kernel for one launch shape (see square.py's square_tiled_kernel)."""

    @jit_bounded(threads, blocks_per_sm)
    def gelu_tiled(x, y):
        n = x.size
        i = cuda.blockIdx.x * (threads * unroll) + cuda.threadIdx.x
        v = cuda.local.array(unroll, float32)
        if cuda.blockIdx.x * (threads * unroll) + threads * unroll <= n:  # a full tile: no bounds checks
            for u in range(unroll):
                v[u] = x[i + u * threads]
            for u in range(unroll):
                y[i + u * threads] = gelu_f32(v[u])
        else:  # the last, partial tile
            for u in range(unroll):
                if i + u * threads < n:
                    y[i + u * threads] = gelu_f32(x[i + u * threads])

    return gelu_tiled


def launch_gelu(x: torch.Tensor, out: torch.Tensor | None = None, threads: int | None = None,
                blocks_per_sm: int | None = None, unroll: int | None = None,
                tiled: bool | None = None) -> torch.Tensor:
    """gelu with an explicit launch shape and mode (None: the module defaults)."""
    threads = threads or (SIM_THREADS if SIMULATED else THREADS)
    blocks_per_sm = resident_blocks_per_sm(threads, blocks_per_sm or BLOCKS_PER_SM)
    unroll = unroll or (2 if SIMULATED else UNROLL)
    check_threads(threads)
    y = torch.empty_like(x) if out is None else out
    n = x.numel()
    if n == 0:
        return y
    if TILED if tiled is None else tiled:
        blocks, kernel = -(-n // (threads * unroll)), gelu_tiled_kernel(threads, blocks_per_sm, unroll)
    else:
        blocks, kernel = grid_stride_blocks(x.device, n, threads * unroll, blocks_per_sm), gelu_kernel(
            threads, blocks_per_sm, unroll)
    kernel[blocks, threads, stream()](as_array(x.view(-1)), as_array(y.view(-1)))
    return y


def gelu(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_gelu(x, out)
