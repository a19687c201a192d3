"""The exchange plan's kernel: a row cut into ``parts`` pieces, each held in one block's dynamic shared memory, the
blocks of a row exchanging their (max, sum) pairs through global memory.

DRAM sees the row read once and written once, in one launch, where the split plan reads it twice in two launches;
and a row wider than one block's shared memory still fits, over several blocks.

The grid is persistent: as many blocks as are resident at once (rounded down to whole rows of ``parts`` blocks),
block b taking part b % parts of rows b // parts, b // parts + groups, ... A block loads its part into shared
memory keeping a running max and sum of exp (split.py's online_step); its thread 0 writes the part's pair,
fences, adds 1 to the row's arrival counter, and waits for the counter to reach the row's next multiple of
``parts``. The counters are never reset: each call, a CUDA graph's replays included, adds ``parts`` to each of
its rows, so a call needs no zeroing launch. The pairs are then read with atomics, since an SM's L1 is not kept
coherent with another SM's stores, a thread a pair, and the block writes its part from shared memory.

A row's blocks wait for one another, so all of them must be resident at once: the grid is what the occupancy
query says fits (launch.py), every block resident from the start on a GPU no other never-ending kernel holds.
"""

from functools import cache

import numpy as np
from numba import cuda, float32

from kernelscope.backends.numba.common import NEG_INF, ZERO, block_max, block_sum, jit_bounded

from .exps import exp_of
from .split import online_step

ONE = np.float32(1.0)


@cache
def softmax_exchange_kernel(threads: int, unroll: int, parts: int, fast_exp: bool = False):
    """The "exchange" plan's kernel for one block size and part count (each compiles once)."""
    exp = exp_of(fast_exp)
    online_update = online_step(fast_exp)

    @jit_bounded(threads)
    def softmax_exchange(x, y, pairs, counters, rows, cols, part_cols):
        piece = cuda.shared.array(0, float32)  # dynamic: part_cols floats
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        part = cuda.blockIdx.x % parts
        groups = cuda.gridDim.x // parts
        start = part * part_cols
        n = min(cols, start + part_cols) - start
        v = cuda.local.array(unroll, float32)
        r = cuda.blockIdx.x // parts
        while r < rows:
            base = r * cols + start
            # DRAM -> shared memory, `unroll` loads in flight a thread, the exps computed as they arrive
            m = NEG_INF
            s = ZERO
            j = t
            while j + (unroll - 1) * threads < n:
                for u in range(unroll):
                    v[u] = x[base + j + u * threads]
                for u in range(unroll):
                    piece[j + u * threads] = v[u]
                    m, s = online_update(m, s, v[u])
                j += unroll * threads
            while j < n:
                e = x[base + j]
                piece[j] = e
                m, s = online_update(m, s, e)
                j += threads
            part_max = block_max(m, scratch)
            s = s * exp(m - part_max) if m > NEG_INF else ZERO
            part_sum = block_sum(s, scratch)
            if t == 0:
                slot = 2 * (r * parts + part)
                pairs[slot] = part_max
                pairs[slot + 1] = part_sum
                cuda.threadfence()  # the pair before the count, for the blocks that read it after the count
                target = (cuda.atomic.add(counters, r, 1) // parts + 1) * parts
                while cuda.atomic.add(counters, r, 0) < target:
                    pass
                cuda.threadfence()
            cuda.syncthreads()
            # The row's pairs, a thread each (one round trip, not one a pair), then the block's max and sum.
            m = NEG_INF
            s = ZERO
            for q in range(t, parts, threads):
                q_max = cuda.atomic.add(pairs, 2 * (r * parts + q), ZERO)
                q_sum = cuda.atomic.add(pairs, 2 * (r * parts + q) + 1, ZERO)
                if q_max > m:  # a part all -inf (q_max = -inf) adds nothing
                    s = s * exp(m - q_max) + q_sum
                    m = q_max
                elif q_max > NEG_INF:
                    s += q_sum * exp(q_max - m)
            row_max = block_max(m, scratch)
            s = s * exp(m - row_max) if m > NEG_INF else ZERO
            inv = ONE / block_sum(s, scratch)
            for j in range(t, n, threads):
                y[base + j] = exp(piece[j] - row_max) * inv
            cuda.syncthreads()  # piece is the next row's
            r += groups

    return softmax_exchange
