"""The tiles plan's kernel: a row too wide for one power-of-two block held whole in registers as up to three.

50257 columns are 32768 + 16384 + 2048 (plan.py's row_tiles), 51200 slots where one power of two would be 65536:
one read and one write, no re-read. One program of 32 warps a row fills an SM's registers (sm_90 SASS: 64
registers a thread; with the 16-byte cut 120 bytes of a float32 thread's values on its stack, 16 in bfloat16,
where the row kernel's single 65536 tile keeps 296).
"""

import triton
import triton.language as tl

from .row_cut import _row_cut


@triton.jit
def _tile_load(x_body, start, n_body, TILE: tl.constexpr):
    cols = start + tl.arange(0, TILE)
    return tl.load(x_body + cols, mask=cols < n_body, other=-float("inf")).to(tl.float32)


@triton.jit
def _tile_store(y_body, start, n_body, e, inv, TILE: tl.constexpr):
    cols = start + tl.arange(0, TILE)
    tl.store(y_body + cols, (e * inv).to(y_body.dtype.element_ty), mask=cols < n_body)


@triton.jit
def softmax_tiles_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, A: tl.constexpr, B: tl.constexpr,
                         C: tl.constexpr, VEC: tl.constexpr, WIDE: tl.constexpr = False):
    """The tiles plan: program r holds row r whole, its 16-byte body (cut as softmax_persistent_kernel's, VEC
    elements an access) in tiles of A, B and C columns and its edges in one of 2 x VEC: one read, one write.
    One row a program, no loop: the same kernel taking rows in turn, and its persistent form with the next row
    pipelined into shared memory, read slower on the H100."""
    row = tl.program_id(0)
    if WIDE:  # past 2^31 elements a row's offset overflows 32 bits (a kernel of its own: wide_index)
        row = row.to(tl.int64)
    y_row, n_body, x_body, y_body, e_col, e_mask, x_edge = _row_cut(x_ptr, y_ptr, row, n_cols, x_row_stride,
                                                                     y_row_stride, VEC)
    xa = _tile_load(x_body, 0, n_body, A)
    xb = _tile_load(x_body, A, n_body, B)
    xc = _tile_load(x_body, A + B, n_body, C)
    row_max = tl.maximum(tl.maximum(tl.max(xa, axis=0), tl.max(xb, axis=0)),
                         tl.maximum(tl.max(xc, axis=0), tl.max(x_edge, axis=0)))
    shift = tl.where(row_max == -float("inf"), 0.0, row_max)  # a row all -inf: exps of 0, no -inf - -inf
    ea, eb, ec = tl.exp(xa - shift), tl.exp(xb - shift), tl.exp(xc - shift)
    ee = tl.exp(x_edge - shift)
    inv = 1.0 / (tl.sum(ea, axis=0) + tl.sum(eb, axis=0) + tl.sum(ec, axis=0) + tl.sum(ee, axis=0))
    tl.store(y_row + e_col, (ee * inv).to(y_ptr.dtype.element_ty), mask=e_mask)
    _tile_store(y_body, 0, n_body, ea, inv, A)
    _tile_store(y_body, A, n_body, eb, inv, B)
    _tile_store(y_body, A + B, n_body, ec, inv, C)
