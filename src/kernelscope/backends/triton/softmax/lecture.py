"""The lecture's row softmax (softmax-triton-row): one program a row, the whole row in its registers."""

import torch
import triton
import triton.language as tl

from kernelscope.backends.triton import launch_per_row


@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # The lecture kernel: the whole row sits in registers, so memory is read once
    # and written once. Rows wider than one block do not fit.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    numerator = tl.exp(z)
    denominator = tl.sum(numerator, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, (numerator / denominator).to(y_ptr.dtype.element_ty), mask=mask)


def softmax_rows(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_per_row(softmax_row_kernel, x, out)
