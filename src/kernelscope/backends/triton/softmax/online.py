"""Online row softmax (softmax-triton-online): one program a row of any width, the row read twice."""

import torch
import triton
import triton.language as tl

from kernelscope.backends.triton import launch_per_row

ONLINE_BLOCK = 4096  # columns a step: the widest block a program loads


@triton.jit
def softmax_online_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # Pass 1 keeps a running max m and a running sum s of exp(x - m) per lane,
    # rescaling s whenever m grows; pass 2 writes exp(x - M) / S. Two reads and
    # one write of the row, for rows of any width.
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    m = tl.full([BLOCK_SIZE], -float("inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # Lanes that have seen only padding keep m = -inf; subtract a finite
        # stand-in there so no -inf - -inf (NaN) is ever formed.
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - shift) + tl.exp(x - shift)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (tl.exp(x - row_max) / row_sum).to(y_ptr.dtype.element_ty), mask=mask)


def softmax_online(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_per_row(softmax_online_kernel, x, out, max_block=ONLINE_BLOCK)
