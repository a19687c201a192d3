"""A row cut where it is 16-byte aligned, so that its body moves 16 bytes an access (the persist and tiles plans).

A row of 50257 columns starts 16-byte aligned one row in four; uncut, every access of such rows is one element
wide. Cut, the body between under VEC elements at each end (the edges) is aligned in every row.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_cut(x_ptr, y_ptr, row, n_cols, x_row_stride, y_row_stride, VEC: tl.constexpr):
    """Row ``row`` cut where it is 16-byte aligned (softmax_persistent_kernel's and softmax_tiles_kernel's): y's
    row, the body's length (a multiple of VEC) and its start in x and y, and the edges: e_col and e_mask of a
    2 x VEC tile (e < VEC the head's elements, e >= VEC the tail's, after the body), their x loaded."""
    x_row = x_ptr + row * x_row_stride  # 64-bit where the caller's row is (its WIDE form)
    y_row = y_ptr + row * y_row_stride
    head = tl.minimum((VEC - (row * x_row_stride) % VEC) % VEC, n_cols)  # elements to the 16-byte boundary
    n_body = tl.multiple_of((n_cols - head) // VEC * VEC, VEC)
    x_body = x_ptr + tl.multiple_of(row * x_row_stride + head, VEC)
    y_body = y_ptr + tl.multiple_of(row * y_row_stride + head, VEC)
    e = tl.arange(0, 2 * VEC)
    e_col = tl.where(e < VEC, e, head + n_body + e - VEC)
    e_mask = tl.where(e < VEC, e < head, e_col < n_cols)
    x_edge = tl.load(x_row + e_col, mask=e_mask, other=-float("inf")).to(tl.float32)
    return y_row, n_body, x_body, y_body, e_col, e_mask, x_edge


def cut_vec(x: torch.Tensor, y: torch.Tensor) -> int:
    """The elements of 16 bytes where x and y start 16-byte aligned with one row stride (every row of both then
    cut at the same column, softmax_persistent_kernel's and softmax_tiles_kernel's VEC), else 1."""
    same_cut = x.stride(0) == y.stride(0) and x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0
    return 16 // x.element_size() if same_cut else 1
