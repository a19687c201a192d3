"""The regs plan's kernels: a block a row, the row held in registers, as softmax-cuda's block kernel holds it.

Each thread loads its ``ept`` elements (j = t, t + threads, ...) into a local array of compile-time length, all
loads before the first use; then the max, the exps and their sum, and the writes come from registers. No
shared-memory staging (the row plan stores each element to shared memory and reads it back twice); registers
bound the width (plan.py's REGS_MAX_EPT a thread).
"""

from functools import cache

import numpy as np
from numba import cuda, float32, uint64

from kernelscope.backends.numba.common import NEG_INF, ZERO, block_max, block_sum, jit_bounded
from kernelscope.backends.numba.vector import load_f32x4, store_f32x4

from .exps import exp_of

ONE = np.float32(1.0)


@cache
def _exps_in_registers(ept: int, exp):
    """The device function (row max, partial sum) that takes the block's max of ``m`` (the thread's max of what is
    not in ``v``) and the thread's ``ept`` registers ``v``, then turns ``v`` into exp(v - max) and sums them."""

    @cuda.jit(device=True)
    def exps(v, m, scratch):
        for u in range(ept):
            m = max(m, v[u])
        m = block_max(m, scratch)
        s = ZERO
        for u in range(ept):  # the padding's -inf gives exp 0
            e = exp(v[u] - m)
            v[u] = e
            s += e
        return m, s

    return exps


@cache
def softmax_regs_kernel(threads: int, ept: int, fast_exp: bool = False, min_blocks: int = 1, unchecked: int = 0,
                        vector: bool = False):
    """The "regs" plan's kernel: a block a row, ``ept`` elements a thread in registers (each shape compiles once);
    ``fast_exp``: libdevice's fast_expf for the exps (the device function it closes over); ``min_blocks``: the
    blocks an SM its launch bounds ask registers for (2 at 512 threads: 64 registers a thread); ``unchecked``: the
    laps (element u of every thread; vector u in the ``vector`` form) that lie in the row for every thread, so
    need no column check (full_laps(); ept where the row is exactly threads x ept wide); ``vector``: 16-byte loads and
    stores (vector.load_f32x4, store_f32x4), thread t holding the row's vectors t, t + threads, ... (rows a whole
    number of vectors, x and y 16-byte aligned: the launcher's to check; ept a multiple of 4).

    Indices are unsigned: Numba wraps a signed index that is negative (idx + len), which cost every element a
    shift, an and and an add in 64 bits, and the column check a compare and a branch around each load, and kept
    the SM busier than DRAM. Unsigned, the offsets u * threads are constants of the loads' addresses: 600 SASS
    instructions for 32 elements a thread where signed indices took 1,992 (results-proofs/numba-codegen/).
    """
    exps = _exps_in_registers(ept, exp_of(fast_exp))
    if vector:
        return _softmax_regs_vector_kernel(threads, ept, exps, min_blocks, unchecked)

    @jit_bounded(threads, min_blocks)
    def softmax_regs(x, y, cols):
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        base = uint64(cuda.blockIdx.x) * uint64(cols) + uint64(t)
        v = cuda.local.array(ept, float32)  # registers: ept is a compile-time constant, every index too
        for u in range(ept):  # every load before the first use: ept in flight a thread
            if u < unchecked or t + u * threads < cols:
                v[u] = x[base + uint64(u * threads)]
            else:
                v[u] = NEG_INF
        _, s = exps(v, NEG_INF, scratch)
        inv = ONE / block_sum(s, scratch)
        for u in range(ept):
            if u < unchecked or t + u * threads < cols:
                y[base + uint64(u * threads)] = v[u] * inv
    return softmax_regs


def _softmax_regs_vector_kernel(threads: int, ept: int, exps, min_blocks: int, unchecked: int):
    """softmax_regs_kernel's ``vector`` form: the same passes, a load and a store a vector of 4 elements."""
    vecs = ept // 4

    @jit_bounded(threads, min_blocks)
    def softmax_regs_vector(x, y, cols):
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        row_vecs = uint64(cols) // uint64(4)
        base = uint64(cuda.blockIdx.x) * row_vecs + uint64(t)
        v = cuda.local.array(ept, float32)
        for u in range(vecs):  # every load before the first use
            if u < unchecked or uint64(t + u * threads) < row_vecs:
                v[4 * u], v[4 * u + 1], v[4 * u + 2], v[4 * u + 3] = load_f32x4(x, base + uint64(u * threads))
            else:
                for k in range(4):
                    v[4 * u + k] = NEG_INF
        _, s = exps(v, NEG_INF, scratch)
        inv = ONE / block_sum(s, scratch)
        for u in range(vecs):
            if u < unchecked or uint64(t + u * threads) < row_vecs:
                store_f32x4(y, base + uint64(u * threads), v[4 * u] * inv, v[4 * u + 1] * inv, v[4 * u + 2] * inv,
                            v[4 * u + 3] * inv)
    return softmax_regs_vector


def full_laps(cols: int, threads: int, ept: int, vector: bool) -> int:
    """softmax_regs_kernel's ``unchecked`` for rows of ``cols``: ept where the row fills every lap, ept - 1 where
    only the last lap is partial, else 0 (every lap checked). A compile-time constant of the kernel, so that each
    load and store of a full lap goes unchecked: at 1024 threads x 50 (512x50257), fifty checks kept live to the
    stores cost more registers than 1024 threads have (64 a thread) and the row spilled. Only those three values,
    so a plan compiles at most three kernels whatever the widths it meets."""
    laps = (cols // 4 if vector else cols) // threads
    lanes = ept // 4 if vector else ept
    return min(laps, lanes) if laps >= lanes - 1 else 0


TAIL_LOADS = 4  # the shared-memory part's loads in flight a thread


@cache
def softmax_regs_shared_kernel(threads: int, ept: int, fast_exp: bool = False, min_blocks: int = 1):
    """The regs plan's kernel with the row's columns past ``threads`` x ``ept`` (all of whose loads lie in the row)
    held in dynamic shared memory, the launch's to size (cols - threads x ept floats). Thread t keeps the columns
    threads x ept + t, + threads, ... there, so no thread reads another's: no barrier but the reductions'.
    4-byte accesses: rows that are whole vectors take the vector form of the plain kernel."""
    exp = exp_of(fast_exp)
    exps = _exps_in_registers(ept, exp)
    held = uint64(threads * ept)

    @jit_bounded(threads, min_blocks)
    def softmax_regs_shared(x, y, cols):
        tail = cuda.shared.array(0, float32)  # dynamic: cols - threads x ept floats
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        ucols = uint64(cols)
        row = uint64(cuda.blockIdx.x) * ucols
        base = row + uint64(t)
        v = cuda.local.array(ept, float32)
        for u in range(ept):  # every register load before the first use
            v[u] = x[base + uint64(u * threads)]
        w = cuda.local.array(TAIL_LOADS, float32)
        m = NEG_INF
        j = held + uint64(t)
        while j < ucols:
            for u in range(TAIL_LOADS):
                k = j + uint64(u * threads)
                if k < ucols:
                    w[u] = x[row + k]
            for u in range(TAIL_LOADS):
                k = j + uint64(u * threads)
                if k < ucols:
                    tail[k - held] = w[u]
                    m = max(m, w[u])
            j += uint64(TAIL_LOADS * threads)
        m, s = exps(v, m, scratch)
        j = held + uint64(t)
        while j < ucols:
            e = exp(tail[j - held] - m)
            tail[j - held] = e
            s += e
            j += uint64(threads)
        inv = ONE / block_sum(s, scratch)
        for u in range(ept):
            y[base + uint64(u * threads)] = v[u] * inv
        j = held + uint64(t)
        while j < ucols:
            y[row + j] = tail[j - held] * inv
            j += uint64(threads)
    return softmax_regs_shared
