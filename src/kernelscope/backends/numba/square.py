"""Numba CUDA square kernels."""

import math

import torch
from numba import cuda

from kernelscope.backends.numba import as_array, stream

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
