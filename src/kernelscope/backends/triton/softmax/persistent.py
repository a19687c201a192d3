"""The persist plan's kernel: a persistent grid taking rows in turn, each row read twice, the second time from L2.

A program reads its row in chunks, a running (max, sum) a thread, its loads software-pipelined (``STAGES``), then
re-reads the row and writes it. A grid's worth of rows in flight is what L2 keeps for the re-read, so DRAM sees
one read and one write, in one launch with no chunk statistics: the grid is sized so its rows fit L2 (plan.py's
PERSIST_L2_SHARE). The online kernel launches a program for every row at once, so its re-read misses L2.
"""

import torch
import triton
import triton.language as tl

from .plan import SoftmaxPlan
from .row_cut import _row_cut, cut_vec


@triton.jit
def softmax_persistent_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride, CHUNK: tl.constexpr,
                              GROUP: tl.constexpr, VEC: tl.constexpr, STAGES: tl.constexpr, KEEP: tl.constexpr,
                              LAST_USE: tl.constexpr, WIDE: tl.constexpr = False):
    """The persist plan: program p takes rows p, p + grid, ...; each row read twice (the second time from L2).

    VEC > 1: x and y start 16-byte aligned with equal row strides, VEC elements are 16 bytes, and each row is
    cut where it is aligned (row_cut.py): under VEC elements at each end (the edges), the body between them read
    and written 16 bytes an instruction. Uncut, every access is one element wide (sm_90 SASS of this kernel for
    512x50257 float32: 1,256 instructions and 124 registers at VEC = 1, 544 and 47 at VEC = 4). VEC = 1: no
    alignment assumed, the whole row is body.

    Pass 1 sees a chunk of the body as a GROUP x (CHUNK / (GROUP x VEC)) x VEC tile, one running (max, sum) pair
    per middle index: a thread folds the GROUP x VEC elements it holds into its pair, one rescale a chunk, not
    two exps an element. GROUP = VEC = 1: a pair per element.
    """
    first = tl.program_id(0)
    if WIDE:  # past 2^31 elements a row's offset overflows 32 bits (a kernel of its own: wide_index)
        first = first.to(tl.int64)
    for row in tl.range(first, n_rows, tl.num_programs(0)):
        y_row, n_body, x_body, y_body, e_col, e_mask, x_edge = _row_cut(x_ptr, y_ptr, row, n_cols, x_row_stride,
                                                                         y_row_stride, VEC)

        lanes: tl.constexpr = CHUNK // (GROUP * VEC)
        tile = (tl.arange(0, GROUP)[:, None, None] * (lanes * VEC) + tl.arange(0, lanes)[None, :, None] * VEC
                + tl.arange(0, VEC)[None, None, :])
        m = tl.full([lanes], -float("inf"), dtype=tl.float32)
        s = tl.zeros([lanes], dtype=tl.float32)
        for start in tl.range(0, n_body, CHUNK, num_stages=STAGES):
            cols = start + tile
            x = tl.load(x_body + cols, mask=cols < n_body, other=-float("inf"), eviction_policy=KEEP)
            x = x.to(tl.float32)
            m_new = tl.maximum(m, tl.max(tl.max(x, axis=2), axis=0))
            shift = tl.where(m_new == -float("inf"), 0.0, m_new)  # lanes of padding only: no -inf - -inf
            s = (s * tl.exp(m - shift)
                 + tl.sum(tl.sum(tl.exp(x - shift[None, :, None]), axis=2), axis=0))
            m = m_new
        row_max = tl.maximum(tl.max(m, axis=0), tl.max(x_edge, axis=0))
        shift = tl.where(row_max == -float("inf"), 0.0, row_max)
        inv = 1.0 / (tl.sum(s * tl.exp(m - shift), axis=0)
                     + tl.sum(tl.exp(x_edge - shift), axis=0))
        tl.store(y_row + e_col, (tl.exp(x_edge - shift) * inv).to(y_ptr.dtype.element_ty), mask=e_mask)
        for start in tl.range(0, n_body, CHUNK, num_stages=STAGES):
            cols = start + tl.arange(0, CHUNK)
            mask = cols < n_body
            x = tl.load(x_body + cols, mask=mask, other=0.0, eviction_policy=LAST_USE).to(tl.float32)
            tl.store(y_body + cols, (tl.exp(x - shift) * inv).to(y_ptr.dtype.element_ty), mask=mask,
                     eviction_policy=LAST_USE)


def persist_vec(plan: SoftmaxPlan, x: torch.Tensor, y: torch.Tensor) -> int:
    """The persist kernel's VEC: cut_vec's, or 1 where the plan asks for the per-element form or its chunk's
    tiles do not divide into vectors."""
    vec = cut_vec(x, y) if plan.vectorize else 1
    return vec if plan.block % (plan.group * vec) == 0 else 1
