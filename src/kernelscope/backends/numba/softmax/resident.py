"""The resident plan's kernel: one launch of as many blocks as are resident at once, each block a contiguous span of
the tensor, read once into a running (max, sum), the end of the span kept in shared memory, a grid-wide barrier,
then the span written.

The split plan reads every element twice from memory in two launches. Here the second read is taken from shared
memory for the last ``keep`` elements of each block's span, so what the GPU's shared memory holds in all (an H100's
132 SMs x 227 KiB) is never read again from memory, and pass 1 read the rest asking L2 to keep it (cache_hints.py),
so that its re-read finds it there as far as L2 holds it. The elements kept in shared memory are read
as last uses: L2 need not keep them. Pass 2 writes each row's part of the span (last row first, the re-read
part before the part in shared memory) from the row's totals.

A span crosses rows: each (row, block) part writes its (max, sum) to the row's slot for that block (the blocks of a
row are consecutive, at most ``slots`` of them), and pass 2 combines a row's slots, read with atomics, since an SM's
L1 is not kept coherent with another SM's stores (exchange.py reads its pairs so too).

The barrier: each block's thread 0 fences its stores, adds 1 to a counter and waits for it to reach the next
multiple of the grid. The counter is never reset (a call, or a CUDA graph's replay, adds the grid to it), so a call
needs no zeroing launch; a counter serves one grid size. Every block must be resident at once: the grid is what the
occupancy query says fits (launch.py), as for the exchange plan. The simulator runs one block after another, so
there the barrier is a launch boundary (``passes``: 1, then 2; on a GPU 3, both with the barrier between), with
nothing kept in shared memory, or one block does it all.

``vector``: 16-byte loads and stores (cols, span and keep whole vectors, x and y 16-byte aligned: the launcher's to
check); shared memory then holds a vector's four lanes in four planes, so that a warp's stores to it hit 32 banks.
"""

from functools import cache

import numpy as np
from numba import cuda, float32, uint64

from kernelscope.backends.numba.cache_hints import pass_accesses
from kernelscope.backends.numba.common import NEG_INF, ZERO, block_max, block_sum, jit_bounded

from .exps import exp_of
from .split import online_step

ONE = np.float32(1.0)
SPIN_NS = np.uint32(100)  # the wait between a waiting block's reads of the barrier counter


@cache
def _constants(threads: int, unroll: int, vector: bool) -> tuple:
    """(width, steps, lanes, uwidth, usteps_span): elements an access, accesses in flight a thread, elements a
    thread holds a step, and the unsigned constants the index arithmetic takes (Numba takes uint64 with int64 to
    float64)."""
    width = 4 if vector else 1
    steps = max(1, unroll // width)
    return width, steps, steps * width, np.uint64(width), np.uint64((steps - 1) * threads)


@cache
def _reader(threads: int, unroll: int, fast_exp: bool, hints: bool, vector: bool, to_shared: bool):
    """The device function (m, s) after the elements [lo, hi) of x, each also put in shared memory at its offset
    from kept_lo where ``to_shared`` (loads as last uses), else loaded asking L2 to keep it for pass 2."""
    online_update = online_step(fast_exp)
    load, load4, _, _ = pass_accesses(hints, keep=not to_shared)
    width, steps, lanes, uwidth, usteps_span = _constants(threads, unroll, vector)

    @cuda.jit(device=True)
    def read(x, lo, hi, m, s, piece, kept_lo, plane):
        t = cuda.threadIdx.x
        v = cuda.local.array(lanes, float32)
        j = lo // uwidth + uint64(t)
        stop = hi // uwidth
        while j < stop:
            full = j + usteps_span < stop  # a whole step of `steps` accesses a thread
            count = 0
            for u in range(steps):
                k = j + uint64(u * threads)
                if full or k < stop:
                    count += 1
                    if vector:
                        v[4 * u], v[4 * u + 1], v[4 * u + 2], v[4 * u + 3] = load4(x, k)
                    else:
                        v[u] = load(x, k)
            if to_shared:
                for u in range(steps):
                    k = j + uint64(u * threads)
                    if full or k < stop:
                        q = k - kept_lo // uwidth
                        for w in range(width):
                            piece[uint64(w) * plane + q] = v[width * u + w]
            for u in range(steps):
                if full or u < count:
                    for w in range(width):
                        m, s = online_update(m, s, v[width * u + w])
            j += uint64(steps * threads)
        return m, s

    return read


@cache
def _writer(threads: int, unroll: int, fast_exp: bool, hints: bool, vector: bool, from_shared: bool):
    """The device function that writes y[lo:hi] = exp(x - row_max) * inv, x from shared memory where
    ``from_shared``, else re-read as its last use."""
    exp = exp_of(fast_exp)
    load, load4, store, store4 = pass_accesses(hints, keep=False)
    width, steps, lanes, uwidth, usteps_span = _constants(threads, unroll, vector)

    @cuda.jit(device=True)
    def write(x, y, lo, hi, row_max, inv, piece, kept_lo, plane):
        t = cuda.threadIdx.x
        v = cuda.local.array(lanes, float32)
        j = lo // uwidth + uint64(t)
        stop = hi // uwidth
        while j < stop:
            full = j + usteps_span < stop
            for u in range(steps):
                k = j + uint64(u * threads)
                if full or k < stop:
                    if from_shared:
                        q = k - kept_lo // uwidth
                        for w in range(width):
                            v[width * u + w] = piece[uint64(w) * plane + q]
                    elif vector:
                        v[4 * u], v[4 * u + 1], v[4 * u + 2], v[4 * u + 3] = load4(x, k)
                    else:
                        v[u] = load(x, k)
            for u in range(steps):
                k = j + uint64(u * threads)
                if full or k < stop:
                    if vector:
                        store4(y, k, exp(v[4 * u] - row_max) * inv, exp(v[4 * u + 1] - row_max) * inv,
                               exp(v[4 * u + 2] - row_max) * inv, exp(v[4 * u + 3] - row_max) * inv)
                    else:
                        store(y, k, exp(v[u] - row_max) * inv)
            j += uint64(steps * threads)

    return write


@cache
def softmax_resident_kernel(threads: int, unroll: int, fast_exp: bool = False, hints: bool = False,
                            vector: bool = False):
    """The "resident" plan's kernel for one block size, loads in flight a thread (``unroll``: elements, as the split
    plan counts them; vectors of 4 with ``vector``) and form; each compiles once."""
    exp = exp_of(fast_exp)
    read_kept = _reader(threads, unroll, fast_exp, hints, vector, False)  # what pass 2 re-reads
    read_to_shared = _reader(threads, unroll, fast_exp, hints, vector, True)
    write_reread = _writer(threads, unroll, fast_exp, hints, vector, False)
    write_from_shared = _writer(threads, unroll, fast_exp, hints, vector, True)
    uwidth = _constants(threads, unroll, vector)[3]

    @jit_bounded(threads, max(1, 1024 // threads))  # 64 registers a thread: 1024 threads an SM
    def softmax_resident(x, y, stats, counter, rows, cols, span, keep, slots, passes):
        piece = cuda.shared.array(0, float32)  # dynamic: keep floats
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        b = uint64(cuda.blockIdx.x)
        grid = cuda.gridDim.x
        ucols = uint64(cols)
        uspan = uint64(span)
        uslots = uint64(slots)
        total = uint64(rows) * ucols
        e0 = b * uspan
        busy = e0 < total
        e1 = min(total, e0 + uspan) if busy else e0
        kept_lo = e1 - min(uint64(keep), e1 - e0)
        plane = uint64(keep) // uwidth
        first_row = e0 // ucols
        last_row = (e1 - uint64(1)) // ucols if busy else first_row
        # Pass 1: each row part's (max, sum), the span's end into shared memory.
        if busy and passes != 2:
            for r in range(first_row, last_row + uint64(1)):
                lo = max(e0, r * ucols)
                hi = min(e1, r * ucols + ucols)
                m = NEG_INF
                s = ZERO
                m, s = read_kept(x, lo, max(lo, min(hi, kept_lo)), m, s, piece, kept_lo, plane)
                m, s = read_to_shared(x, max(lo, kept_lo), hi, m, s, piece, kept_lo, plane)
                part_max = block_max(m, scratch)
                s = s * exp(m - part_max) if m > NEG_INF else ZERO
                part_sum = block_sum(s, scratch)
                if t == 0:
                    slot = uint64(2) * (r * uslots + b - r * ucols // uspan)
                    stats[slot] = part_max
                    stats[slot + uint64(1)] = part_sum
        if passes == 1:
            return
        # The barrier: every block's parts written before any block reads a row's.
        cuda.syncthreads()
        if t == 0 and passes == 3:
            cuda.threadfence()
            target = (cuda.atomic.add(counter, 0, 1) // grid + 1) * grid
            while cuda.atomic.add(counter, 0, 0) < target:
                cuda.nanosleep(SPIN_NS)  # a waiting block's atomics off the L2 slice the others still add to
            cuda.threadfence()
        cuda.syncthreads()
        if not busy:
            return
        # Pass 2: the rows last to first, each from its parts' (max, sum).
        r = last_row + uint64(1)
        while r > first_row:
            r -= uint64(1)
            row_end = min(total, r * ucols + ucols)
            parts = (row_end - uint64(1)) // uspan - r * ucols // uspan + uint64(1)
            m = NEG_INF
            for q in range(uint64(t), parts, uint64(threads)):
                m = max(m, cuda.atomic.add(stats, uint64(2) * (r * uslots + q), ZERO))
            row_max = block_max(m, scratch)
            s = ZERO
            for q in range(uint64(t), parts, uint64(threads)):  # a part all -inf: sum 0, times exp(-inf) = 0
                slot = uint64(2) * (r * uslots + q)
                s += cuda.atomic.add(stats, slot + uint64(1), ZERO) * exp(cuda.atomic.add(stats, slot, ZERO)
                                                                           - row_max)
            inv = ONE / block_sum(s, scratch)
            lo = max(e0, r * ucols)
            hi = min(e1, row_end)
            # The re-read part first, while L2 still holds what pass 1 asked it to keep; the part in shared
            # memory, which no other block's traffic can evict, after it.
            write_reread(x, y, lo, max(lo, min(hi, kept_lo)), row_max, inv, piece, kept_lo, plane)
            write_from_shared(x, y, max(lo, kept_lo), hi, row_max, inv, piece, kept_lo, plane)

    return softmax_resident
