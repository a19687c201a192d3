"""The split plan's kernels: rows too wide for a block's shared memory (or too few to fill the GPU) cut into chunks.

A block a chunk of ``chunk`` columns, in two launches. Launch 1 reads its chunk once, keeping a running max m and
a sum s of exp(x - m) that it rescales when m grows (online softmax), and writes the chunk's (max, sum). Launch 2
combines its row's chunk statistics and re-reads its chunk to write exp(x - M) / S, by default taking the chunks
last to first, so that its first blocks re-read what launch 1 read last, the likeliest still in L2. The rows go
through in one pair of launches, or (plan.py's L2_SHARE) in groups that fit a share of L2, launch 1 then launch 2 a
group.

With ``hints`` the loads and stores carry L2 eviction policies (cache_hints.py): launch 1 asks L2 to keep what it
reads, launch 2 reads and writes as last uses, so that neither its re-read nor its output pushes out what is kept.
Indices are unsigned, as in the regs plan: Numba wraps a signed index that is negative, at a shift, an and and an add
an element. With ``vector`` each load and store moves 16 bytes (4 elements), a quarter of the instructions, where
rows and chunks are whole vectors and x and y start 16-byte aligned (the launcher's to check).
"""

from functools import cache

import numpy as np
from numba import cuda, float32, uint64

from kernelscope.backends.numba.common import NEG_INF, ZERO, block_max, block_sum, jit_bounded, resident_blocks_per_sm

from kernelscope.backends.numba.cache_hints import pass_accesses

from .exps import exp_of

ONE = np.float32(1.0)


@cache
def online_step(fast_exp: bool = False):
    """The device function (m, s) after element v: m the running max, s the sum of exp(x - m) so far."""
    exp = exp_of(fast_exp)

    @cuda.jit(device=True)
    def online_update(m, s, v):
        if v > m:  # a new maximum: rescale the sum to it (m = -inf: exp(-inf) = 0)
            return v, s * exp(m - v) + ONE
        if m > NEG_INF:
            return m, s + exp(v - m)
        return m, s  # v and m both -inf: masked so far, nothing to add

    return online_update


@cache
def chunk_totals(fast_exp: bool = False):
    """The device function that writes a chunk's (max, sum of exp(x - max)) from each thread's running (m, s),
    every thread of the block taking part (launch 1's last step, in both its forms)."""
    exp = exp_of(fast_exp)

    @cuda.jit(device=True)
    def totals(m, s, stats_max, stats_sum, r, c, t, scratch):
        chunk_max = block_max(m, scratch)
        # Each thread's sum, rescaled to the chunk's max (a thread that saw only -inf adds 0).
        s = s * exp(m - chunk_max) if m > NEG_INF else ZERO
        s = block_sum(s, scratch)
        if t == 0:
            stats_max[r * cuda.gridDim.y + c] = chunk_max
            stats_sum[r * cuda.gridDim.y + c] = s

    return totals


@cache
def write_totals(threads: int, fast_exp: bool = False, reverse: bool = False):
    """The device function (r, c, row max, 1 / row sum) of launch 2's block: the row and chunk it writes (``reverse``:
    the chunks last to first) and that row's totals from its chunks' statistics, every thread of the block taking
    part (launch 2's first step, in both its forms)."""
    exp = exp_of(fast_exp)

    @cuda.jit(device=True)
    def totals(stats_max, stats_sum, t, scratch):
        r = cuda.blockIdx.x
        c = cuda.blockIdx.y
        chunks = cuda.gridDim.y
        if reverse:  # compile-time constant
            r = cuda.gridDim.x - 1 - r
            c = chunks - 1 - c
        m = NEG_INF
        for k in range(t, chunks, threads):
            m = max(m, stats_max[r * chunks + k])
        row_max = block_max(m, scratch)
        s = ZERO
        for k in range(t, chunks, threads):  # a chunk all -inf: sum 0, times exp(-inf) = 0
            s += stats_sum[r * chunks + k] * exp(stats_max[r * chunks + k] - row_max)
        return r, c, row_max, ONE / block_sum(s, scratch)

    return totals


@cache
def chunk_stats_kernel(threads: int, unroll: int, fast_exp: bool = False, hints: bool = False,
                       vector: bool = False):
    """Launch 1 of the "split" plan: (max, sum of exp(x - max)) of each chunk; ``hints``: its loads ask L2 to keep
    the chunk for launch 2; ``vector``: 16-byte loads (unroll of them in flight a thread)."""
    online_update = online_step(fast_exp)
    totals = chunk_totals(fast_exp)
    load, load4, _, _ = pass_accesses(hints, keep=True)
    if vector:
        return _chunk_stats_vector(threads, unroll, online_update, totals, load4)

    @jit_bounded(threads, resident_blocks_per_sm(threads, 64))  # a full SM of blocks: fewer waves
    def chunk_stats(x, stats_max, stats_sum, cols, chunk, row0):
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        r = cuda.blockIdx.x  # the row within the group; the grid's y is the chunk
        c = cuda.blockIdx.y
        base = uint64(row0 + r) * uint64(cols)
        stop = uint64(min(cols, (c + 1) * chunk))
        v = cuda.local.array(unroll, float32)
        m = NEG_INF
        s = ZERO
        j = uint64(c * chunk + t)
        while j + uint64((unroll - 1) * threads) < stop:
            for u in range(unroll):
                v[u] = load(x, base + j + uint64(u * threads))
            for u in range(unroll):
                m, s = online_update(m, s, v[u])
            j += uint64(unroll * threads)
        while j < stop:
            m, s = online_update(m, s, load(x, base + j))
            j += uint64(threads)
        totals(m, s, stats_max, stats_sum, r, c, t, scratch)

    return chunk_stats


@cache
def chunk_write_kernel(threads: int, unroll: int, fast_exp: bool = False, reverse: bool = False,
                       hints: bool = False, vector: bool = False):
    """Launch 2 of the "split" plan: combine the row's chunk statistics, write the chunk. ``reverse``: the blocks
    take the chunks last to first, so the first to run re-read what launch 1 read last, the likeliest still in L2
    (for groups of rows larger than L2); ``hints``: the re-read and the writes are last uses to L2; ``vector``:
    16-byte loads and stores."""
    exp = exp_of(fast_exp)
    totals = write_totals(threads, fast_exp, reverse)
    load, load4, store, store4 = pass_accesses(hints, keep=False)
    if vector:
        return _chunk_write_vector(threads, unroll, exp, totals, load4, store4)

    @jit_bounded(threads, resident_blocks_per_sm(threads, 64))
    def chunk_write(x, y, stats_max, stats_sum, cols, chunk, row0):
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        r, c, row_max, inv = totals(stats_max, stats_sum, t, scratch)
        base = uint64(row0 + r) * uint64(cols)
        stop = uint64(min(cols, (c + 1) * chunk))
        v = cuda.local.array(unroll, float32)
        j = uint64(c * chunk + t)
        while j + uint64((unroll - 1) * threads) < stop:
            for u in range(unroll):
                v[u] = load(x, base + j + uint64(u * threads))
            for u in range(unroll):
                store(y, base + j + uint64(u * threads), exp(v[u] - row_max) * inv)
            j += uint64(unroll * threads)
        while j < stop:
            store(y, base + j, exp(load(x, base + j) - row_max) * inv)
            j += uint64(threads)

    return chunk_write


def _chunk_stats_vector(threads: int, unroll: int, online_update, totals, load4):
    """chunk_stats_kernel's ``vector`` form: the same pass over vectors of 4 elements (cols and chunk whole
    vectors); ``unroll`` counts elements in flight a thread, as the 4-byte form's do: unroll // 4 vectors (more
    spilled at the launch bound's 32 registers a thread)."""
    unroll = max(1, unroll // 4)
    lanes = 4 * unroll  # the elements a thread holds a step: a compile-time constant

    @jit_bounded(threads, resident_blocks_per_sm(threads, 64))
    def chunk_stats_vector(x, stats_max, stats_sum, cols, chunk, row0):
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        r = cuda.blockIdx.x
        c = cuda.blockIdx.y
        row_vecs = uint64(cols) // uint64(4)
        chunk_vecs = uint64(chunk) // uint64(4)
        base = uint64(row0 + r) * row_vecs
        stop = min(row_vecs, uint64(c + 1) * chunk_vecs)
        v = cuda.local.array(lanes, float32)
        m = NEG_INF
        s = ZERO
        j = uint64(c) * chunk_vecs + uint64(t)
        while j + uint64((unroll - 1) * threads) < stop:
            for u in range(unroll):
                v[4 * u], v[4 * u + 1], v[4 * u + 2], v[4 * u + 3] = load4(x, base + j + uint64(u * threads))
            for u in range(lanes):
                m, s = online_update(m, s, v[u])
            j += uint64(unroll * threads)
        while j < stop:
            a, b, e, f = load4(x, base + j)
            m, s = online_update(m, s, a)
            m, s = online_update(m, s, b)
            m, s = online_update(m, s, e)
            m, s = online_update(m, s, f)
            j += uint64(threads)
        totals(m, s, stats_max, stats_sum, r, c, t, scratch)

    return chunk_stats_vector


def _chunk_write_vector(threads: int, unroll: int, exp, totals, load4, store4):
    """chunk_write_kernel's ``vector`` form: the same pass, a load and a store a vector of 4 elements; unroll // 4
    vectors in flight a thread (see _chunk_stats_vector)."""
    unroll = max(1, unroll // 4)
    lanes = 4 * unroll

    @jit_bounded(threads, resident_blocks_per_sm(threads, 64))
    def chunk_write_vector(x, y, stats_max, stats_sum, cols, chunk, row0):
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        r, c, row_max, inv = totals(stats_max, stats_sum, t, scratch)
        row_vecs = uint64(cols) // uint64(4)
        chunk_vecs = uint64(chunk) // uint64(4)
        base = uint64(row0 + r) * row_vecs
        stop = min(row_vecs, uint64(c + 1) * chunk_vecs)
        v = cuda.local.array(lanes, float32)
        j = uint64(c) * chunk_vecs + uint64(t)
        while j + uint64((unroll - 1) * threads) < stop:
            for u in range(unroll):
                v[4 * u], v[4 * u + 1], v[4 * u + 2], v[4 * u + 3] = load4(x, base + j + uint64(u * threads))
            for u in range(unroll):
                k = base + j + uint64(u * threads)
                a = exp(v[4 * u] - row_max) * inv
                b = exp(v[4 * u + 1] - row_max) * inv
                e = exp(v[4 * u + 2] - row_max) * inv
                f = exp(v[4 * u + 3] - row_max) * inv
                store4(y, k, a, b, e, f)
            j += uint64(unroll * threads)
        while j < stop:
            a, b, e, f = load4(x, base + j)
            store4(y, base + j, exp(a - row_max) * inv, exp(b - row_max) * inv, exp(e - row_max) * inv,
                   exp(f - row_max) * inv)
            j += uint64(threads)

    return chunk_write_vector
