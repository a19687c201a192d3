"""Triton square kernels."""

import torch
import triton
import triton.language as tl

from kernelscope.backends.triton import cdiv, direct, launch_per_row, wide_index


@triton.jit
def square_row_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # The lecture kernel: one program per row, the whole row in one block.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask).to(tl.float32)
    tl.store(y_ptr + row * y_row_stride + cols, (x * x).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def square_flat_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr, WIDE: tl.constexpr = False):
    # The tensor as one flat array, cut into fixed blocks: any width works.
    pid = tl.program_id(0)
    if WIDE:  # past 2^31 elements a block's start overflows 32 bits (a kernel of its own: wide_index)
        pid = pid.to(tl.int64)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(y_ptr + offsets, (x * x).to(y_ptr.dtype.element_ty), mask=mask)


def square_rows(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_per_row(square_row_kernel, x, out)


FLAT_BLOCK_SIZE = 1024


def square_flat(x: torch.Tensor, out: torch.Tensor | None = None, block_size: int = FLAT_BLOCK_SIZE) -> torch.Tensor:
    y = torch.empty_like(x) if out is None else out
    n = x.numel()
    square_flat_kernel[(triton.cdiv(n, block_size),)](x, y, n, BLOCK_SIZE=block_size, WIDE=wide_index(n))
    return y


def square_flat_direct(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """square_flat's kernel, launched through its compiled kernel after the first call (direct.py): a cheaper call."""
    y = torch.empty_like(x) if out is None else out
    n = x.numel()
    direct.launch(square_flat_kernel, (cdiv(n, FLAT_BLOCK_SIZE),), x, y, n, BLOCK_SIZE=FLAT_BLOCK_SIZE,
                  WIDE=wide_index(n))
    return y


# The same kernel with other block sizes (num_warps stays at Triton's default of 4):
# a smaller block means more, lighter programs; a larger one fewer, each thread
# handling more elements. The asv suite measures what the choice costs.
FLAT256_BLOCK_SIZE = 256
FLAT4096_BLOCK_SIZE = 4096


def square_flat256(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return square_flat(x, out, FLAT256_BLOCK_SIZE)


def square_flat4096(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return square_flat(x, out, FLAT4096_BLOCK_SIZE)


# --- kernelscope plan: what a call launches: a program a BLOCK_SIZE of the flat array, Triton's default warps ---

def _flat_plan_of(shape: tuple[int, ...], block_size: int, note: str = ""):
    from kernelscope.backends.triton import DEFAULT_WARPS
    from kernelscope.backends.launches import Launch, LaunchPlan

    n = 1
    for s in shape:
        n *= s
    launch = Launch("square_flat_kernel", "src/kernelscope/backends/triton/square.py",
                    (triton.cdiv(n, block_size),), DEFAULT_WARPS * 32, note=note or f"a program a block of {block_size}")
    return LaunchPlan(None, (launch,), {"BLOCK_SIZE": block_size, "num_warps": DEFAULT_WARPS,
                                        "elements a thread": block_size // (DEFAULT_WARPS * 32)})


def square_flat_plan_of(shape: tuple[int, ...], dtype: str, facts):
    """square-triton-flat1024's launch (and square-triton-direct's: the same kernel and grid)."""
    return _flat_plan_of(shape, FLAT_BLOCK_SIZE)


def square_flat256_plan_of(shape: tuple[int, ...], dtype: str, facts):
    return _flat_plan_of(shape, FLAT256_BLOCK_SIZE)


def square_flat4096_plan_of(shape: tuple[int, ...], dtype: str, facts):
    return _flat_plan_of(shape, FLAT4096_BLOCK_SIZE)


def square_flat_direct_plan_of(shape: tuple[int, ...], dtype: str, facts):
    """square-triton-direct's launch: square_flat's, through the compiled kernel's launcher after the first call."""
    return _flat_plan_of(shape, FLAT_BLOCK_SIZE, f"a program a block of {FLAT_BLOCK_SIZE}; launched through the "
                                                 "compiled kernel after the first call")
