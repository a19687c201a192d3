"""The pipe plan's kernel: the split plan's two passes software-pipelined over row groups that fit L2.

Launch k runs pass 2 of group k - 1 beside pass 1 of group k, their programs interleaved, so that every launch
reads new rows from DRAM, re-reads from L2 the rows the launch before read, and writes: G groups take G + 1
launches, not 2G. Offered, not chosen by default (softmax_plan's ``pipelined``): on the H100 it read level with
the split plan or slower, in both dtypes at both wide shapes (results-proofs/tuning-sweeps/h100-f50f9f1).
"""

import triton
import triton.language as tl

from .split import _chunk_stats, _chunk_write


@triton.jit(do_not_specialize=["write_row0", "n_write_rows", "stats_row0", "n_stats_rows"])
def softmax_pipe_kernel(x_ptr, y_ptr, write_max_ptr, write_sum_ptr, stats_max_ptr, stats_sum_ptr,
                        write_row0, n_write_rows, stats_row0, n_stats_rows, n_cols, x_row_stride, y_row_stride,
                        n_chunks, CHUNK: tl.constexpr, CHUNKS_BLOCK: tl.constexpr, KEEP: tl.constexpr,
                        LAST_USE: tl.constexpr, WIDE: tl.constexpr = False):
    """The pipe plan's launch: pass 2 of one row group (its statistics at write_*) and pass 1 of the next
    (statistics into stats_*), as the split plan's two kernels do them, in one grid. Programs alternate
    between the two while both have chunks left, so every wave reads from DRAM, re-reads from L2 and writes.
    """
    pid = tl.program_id(0)
    n_write = n_write_rows * n_chunks
    n_stats = n_stats_rows * n_chunks
    both = tl.minimum(n_write, n_stats)
    if pid < 2 * both:
        is_write = pid % 2 == 0
        index = pid // 2
    else:
        is_write = n_write > n_stats
        index = pid - both
    if is_write:  # backwards, as the split's pass 2: the chunks pass 1 read last first
        _chunk_write(x_ptr, y_ptr, write_max_ptr, write_sum_ptr, n_write - 1 - index, write_row0, n_cols,
                     x_row_stride, y_row_stride, n_chunks, CHUNK, CHUNKS_BLOCK, LAST_USE, WIDE)
    else:
        _chunk_stats(x_ptr, stats_max_ptr, stats_sum_ptr, index, stats_row0, n_cols, x_row_stride, n_chunks,
                     CHUNK, KEEP, WIDE)
