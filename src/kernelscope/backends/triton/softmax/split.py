"""The split plan's kernels: a row too wide for one program cut into chunks, a program a chunk, in two passes.

Pass 1 writes each chunk's (max, sum of exp); pass 2 combines its row's chunk statistics and re-reads its chunk
to write it. The rows go through in groups, pass 1 then pass 2 a group, so that the re-read comes from L2. The
pipe plan (pipe.py) runs the same two passes of a chunk, _chunk_stats and _chunk_write.
"""

import triton
import triton.language as tl


# row0 (and the group's row count) change from group to group: one compiled
# kernel for all of them, not one per value's divisibility.
@triton.jit(do_not_specialize=["row0"])
def softmax_chunk_stats_kernel(x_ptr, max_ptr, sum_ptr, row0, n_cols, x_row_stride, n_chunks,
                               CHUNK: tl.constexpr, KEEP: tl.constexpr, WIDE: tl.constexpr = False):
    """Split pass 1: one program per chunk of a row, writes the chunk's max and sum of exp(x - max).

    Reads its CHUNK elements of x once (from DRAM) and writes two floats.
    KEEP is the L2 eviction policy of the read: "evict_last" asks L2 to keep
    the chunk for pass 2 ("" leaves the default).
    """
    _chunk_stats(x_ptr, max_ptr, sum_ptr, tl.program_id(0), row0, n_cols, x_row_stride, n_chunks, CHUNK, KEEP, WIDE)


@triton.jit
def _chunk_stats(x_ptr, max_ptr, sum_ptr, index, row0, n_cols, x_row_stride, n_chunks, CHUNK: tl.constexpr,
                 KEEP: tl.constexpr, WIDE: tl.constexpr):
    """Pass 1 of chunk ``index`` of the group from row0 (the split and pipe plans share it)."""
    row = index // n_chunks
    chunk = index % n_chunks
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + _row_offset(row0 + row, x_row_stride, WIDE) + cols, mask=cols < n_cols,
                other=-float("inf"), eviction_policy=KEEP)
    x = x.to(tl.float32)
    chunk_max = tl.max(x, axis=0)
    # A chunk entirely at -inf (a masked span) has sum 0: subtract a finite
    # stand-in so that no -inf - (-inf) = NaN is formed.
    shift = tl.where(chunk_max == -float("inf"), 0.0, chunk_max)
    tl.store(max_ptr + index, chunk_max)
    tl.store(sum_ptr + index, tl.sum(tl.exp(x - shift), axis=0))


@triton.jit(do_not_specialize=["row0", "n_group_rows"])
def softmax_chunk_write_kernel(x_ptr, y_ptr, max_ptr, sum_ptr, row0, n_group_rows, n_cols,
                               x_row_stride, y_row_stride, n_chunks, CHUNK: tl.constexpr,
                               CHUNKS_BLOCK: tl.constexpr, LAST_USE: tl.constexpr, WIDE: tl.constexpr = False):
    """Split pass 2: combine the row's chunk statistics, re-read the chunk, write exp(x - max) / sum.

    Reads n_chunks pairs of floats and CHUNK elements of x (from L2, pass 1
    just read them), writes CHUNK elements of y. LAST_USE is the L2 eviction
    policy of the re-read and of the write: "evict_first" lets neither push
    out the chunks still to be re-read.
    """
    # Walk the group backwards: the chunks pass 1 read last are the likeliest
    # to be still in L2 if the group turns out larger than the cache.
    _chunk_write(x_ptr, y_ptr, max_ptr, sum_ptr, n_group_rows * n_chunks - 1 - tl.program_id(0), row0, n_cols,
                 x_row_stride, y_row_stride, n_chunks, CHUNK, CHUNKS_BLOCK, LAST_USE, WIDE)


@triton.jit
def _row_offset(row, stride, WIDE: tl.constexpr):
    """row * stride, in 64 bits where WIDE: past 2^31 elements it overflows 32 (a kernel of its own: wide_index)."""
    if WIDE:
        row = row.to(tl.int64)
    return row * stride


@triton.jit
def _chunk_write(x_ptr, y_ptr, max_ptr, sum_ptr, index, row0, n_cols, x_row_stride, y_row_stride, n_chunks,
                 CHUNK: tl.constexpr, CHUNKS_BLOCK: tl.constexpr, LAST_USE: tl.constexpr, WIDE: tl.constexpr):
    """Pass 2 of chunk ``index`` of the group from row0 (the split and pipe plans share it)."""
    row = index // n_chunks
    chunk = index % n_chunks
    c = tl.arange(0, CHUNKS_BLOCK)
    stats = row * n_chunks + c
    chunk_max = tl.load(max_ptr + stats, mask=c < n_chunks, other=-float("inf"))
    chunk_sum = tl.load(sum_ptr + stats, mask=c < n_chunks, other=0.0)
    row_max = tl.max(chunk_max, axis=0)
    # Rescale each chunk's sum from its own max to the row's (0 for an all -inf chunk).
    row_sum = tl.sum(chunk_sum * tl.exp(chunk_max - row_max), axis=0)
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols
    x = tl.load(x_ptr + _row_offset(row0 + row, x_row_stride, WIDE) + cols, mask=mask, other=0.0,
                eviction_policy=LAST_USE)
    y = tl.exp(x.to(tl.float32) - row_max) * (1.0 / row_sum)
    tl.store(y_ptr + _row_offset(row0 + row, y_row_stride, WIDE) + cols, y.to(y_ptr.dtype.element_ty), mask=mask,
             eviction_policy=LAST_USE)
