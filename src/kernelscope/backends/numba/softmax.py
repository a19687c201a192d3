"""Numba CUDA row softmax over the last dimension of a 2-D tensor.

Three launch plans, chosen per (rows, cols) on the host by ``plan_softmax``:

* "row": one block per row, the row cached in dynamic shared memory. Pass 1
  reads the row from DRAM into shared memory, keeping each thread's max;
  a block max; pass 2 replaces each element by exp(x - max) in shared memory
  and sums; a block sum; pass 3 writes e / sum. DRAM sees the row read once
  and written once: 8 bytes an element. Each thread touches only its own
  columns (j = t, t + threads, ...), so the passes need no barrier between
  them beyond those inside the reductions. With ``recompute`` pass 2 only
  sums exp(x - max), leaving the row in shared memory, and pass 3 computes
  exp(x - max) / sum again: one exp more an element, one shared-memory store
  pass less.
* "split": rows wider than a block's shared memory (or too few rows to fill
  the GPU) are cut into chunks of ``chunk`` columns, one block a chunk, in two
  launches. Launch 1 reads its chunk once, keeping a running max m and a sum
  s of exp(x - m) that it rescales when m grows (online softmax), and writes
  the chunk's (max, sum). Launch 2 combines its row's chunk statistics and
  re-reads its chunk to write exp(x - M) / S. The rows go through in groups
  that fit in half the L2 cache, launch 1 then launch 2 a group, so the
  re-read mostly comes from L2.

* "regs": one block per row, the row held in registers, as softmax-cuda's
  block kernel holds it: each thread loads its ``ept`` elements (j = t,
  t + threads, ...) into a local array of compile-time length, all loads
  before the first use, then the max, the exps and their sum, and the writes
  come from registers. No shared-memory staging (the row plan stores each
  element to shared memory and reads it back twice); registers bound the
  width (``REGS_MAX_EPT`` a thread). The row plan reads 86.6% and 84.6% of
  the copy bandwidth at 8192x8192 and 16384x16384 on the H100, where
  softmax-cuda's register-held blocks read 98-100%. The default up to
  REGS_DEFAULT_MAX_COLS columns, where the H100 measured it faster (with the fast exp).

Every maximum is subtracted before exp, so logits around +1000 do not
overflow; elements at -inf (masked) give exp(-inf) = 0, and a running
maximum still at -inf is never subtracted from itself (no -inf - -inf = NaN).
A row needs one finite element, as torch.softmax does.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import cache

import numpy as np
import torch
from numba import cuda, float32, uint64
from numba.cuda import libdevice

from kernelscope.backends import WIDE_DRAM_GBPS_PER_SM
from kernelscope.backends.device import DeviceFacts
from kernelscope.backends.numba import as_array, stream
from kernelscope.backends.numba.common import (NEG_INF, SIM_THREADS, SIMULATED, ZERO, block_max, block_sum,
                                                check_threads, dram_gbps_per_sm, jit_bounded, quick_barriers,
                                                resident_blocks_per_sm, sm_count)
from kernelscope.backends.numba.vector import load_f32x4, store_f32x4

ONE = np.float32(1.0)
# The regs plan's fast exp: libdevice's __nv_fast_expf (ex2.approx, as softmax-cuda's __expf; about 2 ulp,
# far inside the float32 tolerance) in place of math.exp's accurate expf (a few dozen instructions an element:
# the regs plan read 88.1% of copy at 8192x8192 where softmax-cuda's like-shaped blocks read 97.8%). The
# simulator has no libdevice (its fast_expf returns NaN): math.exp there.
# The H100 (tune_numba --quick, warm, % of copy): regs with the fast exp 97.3% at 16384x16384
# (737 us; 66.8% accurate, 84.7% for the row plan), 93.4% at 8192x8192 (88.2% accurate), 86.9% at 4096x4096
# (81.5%), 86.0% at 16384x1000 (84.4%).
REGS_FAST_EXP = True
# The regs plan's 16-byte loads and stores (vector.load_f32x4, store_f32x4), where a row is a whole number of
# vectors and x and y start 16-byte aligned: a quarter of the memory instructions and their address arithmetic.
# At 8192x8192 on the H200 the 4-byte form read 94.1% of copy where softmax-cuda's block kernel, 16 bytes an
# access, read 95.8%.
REGS_VECTOR = True


@cuda.jit(device=True)
def exp_accurate(x):
    return math.exp(x)


if SIMULATED:
    exp_fast = exp_accurate
else:
    @cuda.jit(device=True)
    def exp_fast(x):
        return libdevice.fast_expf(x)

# Launch defaults; scripts/gpu/tune_numba.py sweeps them.
MAX_THREADS = 256  # row plan: the widest block (H100: 256 beat 512 at 8192-16384 columns: more blocks an SM overlap their passes)
LONE_BLOCK_THREADS = 1024  # row plan, a row filling an SM's shared memory: a lone block keeps the loads in flight
COLS_PER_THREAD = 16  # row plan: a row's block gets about this many columns a thread (at least 32 threads)
ROW_UNROLL = 16  # row plan: loads a thread has in flight in pass 1 (H100: 16 beat 8 and 4 at 256 threads, 4096-16384 columns)
RECOMPUTE = False  # row plan: pass 3 recomputes exp instead of pass 2 storing it to shared memory
UNROLL = 4  # split plan: loads a thread has in flight in the DRAM passes
CHUNK = 8192  # split plan: columns a block
SPLIT_THREADS = 256  # split plan: 32 columns a thread; 8 blocks an SM, so a row group's chunks fit in one wave
MAX_CACHED_COLS: int | None = None  # widest row the row plan caches (None: what shared memory holds)
L2_SHARE = 0.5  # the split plan's row groups fill at most this share of L2

# Under the simulator: tiny blocks and chunks, and the split plan from 17 columns
# on, so the check shapes run both plans and their loops really loop.
SIM_MAX_CACHED_COLS = 16
SIM_CHUNK = 12  # 17 columns: a full chunk and a partial one
SIM_UNROLL = 2
SCRATCH_BYTES = 32 * 4  # the static shared memory of the reductions
REGS_EPT = 32  # regs plan: elements a thread holds (softmax-cuda's SOFTMAX_BLOCK_EPT) ...
# ... with at least this many threads a block: 16384x1000, 64 threads x 16 read 90.6% of copy on the H100 and 73.1%
# on the H200 against 128 x 8's 86.0% and 64.8%: more, smaller blocks an SM ...
REGS_MIN_THREADS = 64
REGS_MAX_THREADS = 512  # ... and at most this many (max_threads overrides it) ...
REGS_MAX_EPT = 64  # ... so a thread holds up to this many: 32768 columns at 512 threads
# The regs plan on a GPU whose DRAM asks WIDE_DRAM_GBPS_PER_SM or more of each SM (the H200): REGS_EPT_WIDE_DRAM
# elements a thread, half REGS_EPT in twice the threads, as softmax-cuda's lone rows there. H200, tune_numba.py
# --quick (two sweeps), 8192x8192 with 16-byte accesses: 512 x 16 95.6% and 95.7% of copy, 256 x 32 95.0% and
# 94.8%.
REGS_EPT_WIDE_DRAM = 16
# The default plan for rows up to this wide. On the H100 the regs plan beat the row plan at every
# width up to 8192 columns: 64x64 2.70 against 2.91 us, 1024x1024 5.32 against 5.84, 16384x1000 51.5 against
# 83.4, 4096x4096 54.7 against 58.9, 8192x8192 201.5 against 206.1 (and 202.9 against 214.8 in the sweep);
# at 16384 columns it lost with the accurate exp (1,076 against 846 us at 16384x16384, 140 against 118 at
# 2048x16384), and won with the fast one (737 against 847 us at 16384x16384).
REGS_DEFAULT_MAX_COLS = 16384


@cuda.jit(device=True)
def online_update(m, s, v):
    """(m, s) after element v: m the running max, s the sum of exp(x - m) so far."""
    if v > m:  # a new maximum: rescale the sum to it (m = -inf: exp(-inf) = 0)
        return v, s * math.exp(m - v) + ONE
    if m > NEG_INF:
        return m, s + math.exp(v - m)
    return m, s  # v and m both -inf: masked so far, nothing to add


@cache
def softmax_row_kernel(threads: int, unroll: int, recompute: bool):
    """The "row" plan's kernel for one block size (each compiles once)."""

    @jit_bounded(threads)
    def softmax_row(x, y, cols):
        row = cuda.shared.array(0, float32)  # dynamic: cols floats
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        base = cuda.blockIdx.x * cols
        v = cuda.local.array(unroll, float32)  # registers: unroll is a compile-time constant
        # Pass 1: DRAM -> shared memory, `unroll` loads in flight a thread.
        m = NEG_INF
        j = t
        while j + (unroll - 1) * threads < cols:
            for u in range(unroll):
                v[u] = x[base + j + u * threads]
            for u in range(unroll):
                row[j + u * threads] = v[u]
                m = max(m, v[u])
            j += unroll * threads
        while j < cols:
            e = x[base + j]
            row[j] = e
            m = max(m, e)
            j += threads
        m = block_max(m, scratch)
        s = ZERO
        if recompute:  # compile-time constant: one branch is compiled
            # Pass 2: the sum of the exponentials; the row stays as it is.
            for j in range(t, cols, threads):
                s += math.exp(row[j] - m)
            inv = ONE / block_sum(s, scratch)
            # Pass 3: the exponentials again, scaled, shared memory -> DRAM.
            for j in range(t, cols, threads):
                y[base + j] = math.exp(row[j] - m) * inv
        else:
            # Pass 2: exponentials in place, and their sum.
            for j in range(t, cols, threads):
                e = math.exp(row[j] - m)
                row[j] = e
                s += e
            inv = ONE / block_sum(s, scratch)
            # Pass 3: shared memory -> DRAM.
            for j in range(t, cols, threads):
                y[base + j] = row[j] * inv

    return softmax_row


@cache
def softmax_regs_kernel(threads: int, ept: int, fast_exp: bool = False, min_blocks: int = 1, exact: bool = False,
                        vector: bool = False):
    """The "regs" plan's kernel: a block a row, ``ept`` elements a thread in registers (each shape compiles once);
    ``fast_exp``: libdevice's fast_expf for the exps (the device function it closes over); ``min_blocks``: the
    blocks an SM its launch bounds ask registers for (2 at 512 threads: 64 registers a thread); ``exact``: the
    row is exactly threads x ept wide, so no element needs its column checked; ``vector``: 16-byte loads and
    stores (vector.load_f32x4, store_f32x4), thread t holding the row's vectors t, t + threads, ... (rows a whole
    number of vectors, x and y 16-byte aligned: the launcher's to check; ept a multiple of 4).

    Indices are unsigned: Numba wraps a signed index that is negative (idx + len), which cost every element a
    shift, an and and an add in 64 bits, and the column check a compare and a branch around each load. With
    signed indices the H200 (kernelscope profile --ncu, 8192x8192) ran 1,992 SASS instructions for 32 elements
    a thread, 60 an element, the SM 79.7% busy against DRAM's 68.0%, where softmax-cuda's block read DRAM at
    82.9%. Unsigned, the offsets u * threads are constants of the loads' addresses: 600 instructions, the SM
    26.4% busy, DRAM 82.4%; 96.6% of copy at 16384x16384 on the H200 (79.6% signed) and 99.1% on the H100
    (97.8%), 94.2% and 97.6% at 8192x8192 (80.5%, 93.5%; tune_numba --quick).
    """
    exp = exp_fast if fast_exp else exp_accurate
    if vector:
        return _softmax_regs_vector_kernel(threads, ept, exp, min_blocks, exact)

    @jit_bounded(threads, min_blocks)
    def softmax_regs(x, y, cols):
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        base = uint64(cuda.blockIdx.x) * uint64(cols) + uint64(t)
        v = cuda.local.array(ept, float32)  # registers: ept is a compile-time constant, every index too
        for u in range(ept):  # every load before the first use: ept in flight a thread
            if exact or t + u * threads < cols:
                v[u] = x[base + uint64(u * threads)]
            else:
                v[u] = NEG_INF
        m = NEG_INF
        for u in range(ept):
            m = max(m, v[u])
        m = block_max(m, scratch)
        s = ZERO
        for u in range(ept):  # the padding's -inf gives exp 0
            e = exp(v[u] - m)
            v[u] = e
            s += e
        inv = ONE / block_sum(s, scratch)
        for u in range(ept):
            if exact or t + u * threads < cols:
                y[base + uint64(u * threads)] = v[u] * inv
    return softmax_regs


def _softmax_regs_vector_kernel(threads: int, ept: int, exp, min_blocks: int, exact: bool):
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
            if exact or uint64(t + u * threads) < row_vecs:
                v[4 * u], v[4 * u + 1], v[4 * u + 2], v[4 * u + 3] = load_f32x4(x, base + uint64(u * threads))
            else:
                for k in range(4):
                    v[4 * u + k] = NEG_INF
        m = NEG_INF
        for u in range(ept):
            m = max(m, v[u])
        m = block_max(m, scratch)
        s = ZERO
        for u in range(ept):
            e = exp(v[u] - m)
            v[u] = e
            s += e
        inv = ONE / block_sum(s, scratch)
        for u in range(vecs):
            if exact or uint64(t + u * threads) < row_vecs:
                store_f32x4(y, base + uint64(u * threads), v[4 * u] * inv, v[4 * u + 1] * inv, v[4 * u + 2] * inv,
                            v[4 * u + 3] * inv)
    return softmax_regs_vector


@cache
def chunk_stats_kernel(threads: int, unroll: int):
    """Launch 1 of the "split" plan: (max, sum of exp(x - max)) of each chunk."""

    @jit_bounded(threads, resident_blocks_per_sm(threads, 64))  # a full SM of blocks: fewer waves
    def chunk_stats(x, stats_max, stats_sum, cols, chunk, row0):
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        r = cuda.blockIdx.x  # the row within the group; the grid's y is the chunk
        c = cuda.blockIdx.y
        base = (row0 + r) * cols
        stop = min(cols, (c + 1) * chunk)
        v = cuda.local.array(unroll, float32)
        m = NEG_INF
        s = ZERO
        j = c * chunk + t
        while j + (unroll - 1) * threads < stop:
            for u in range(unroll):
                v[u] = x[base + j + u * threads]
            for u in range(unroll):
                m, s = online_update(m, s, v[u])
            j += unroll * threads
        while j < stop:
            m, s = online_update(m, s, x[base + j])
            j += threads
        chunk_max = block_max(m, scratch)
        # Each thread's sum, rescaled to the chunk's max (a thread that saw only -inf adds 0).
        s = s * math.exp(m - chunk_max) if m > NEG_INF else ZERO
        s = block_sum(s, scratch)
        if t == 0:
            stats_max[r * cuda.gridDim.y + c] = chunk_max
            stats_sum[r * cuda.gridDim.y + c] = s

    return chunk_stats


@cache
def chunk_write_kernel(threads: int, unroll: int):
    """Launch 2 of the "split" plan: combine the row's chunk statistics, write the chunk."""

    @jit_bounded(threads, resident_blocks_per_sm(threads, 64))
    def chunk_write(x, y, stats_max, stats_sum, cols, chunk, row0):
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        r = cuda.blockIdx.x
        c = cuda.blockIdx.y
        chunks = cuda.gridDim.y
        m = NEG_INF
        for k in range(t, chunks, threads):
            m = max(m, stats_max[r * chunks + k])
        row_max = block_max(m, scratch)
        s = ZERO
        for k in range(t, chunks, threads):  # a chunk all -inf: sum 0, times exp(-inf) = 0
            s += stats_sum[r * chunks + k] * math.exp(stats_max[r * chunks + k] - row_max)
        inv = ONE / block_sum(s, scratch)
        base = (row0 + r) * cols
        stop = min(cols, (c + 1) * chunk)
        v = cuda.local.array(unroll, float32)
        j = c * chunk + t
        while j + (unroll - 1) * threads < stop:
            for u in range(unroll):
                v[u] = x[base + j + u * threads]
            for u in range(unroll):
                y[base + j + u * threads] = math.exp(v[u] - row_max) * inv
            j += unroll * threads
        while j < stop:
            y[base + j] = math.exp(x[base + j] - row_max) * inv
            j += threads

    return chunk_write


# --- host side ----------------------------------------------------------------------------------

@cache
def _device_limits(index: int) -> tuple[int, int]:
    """(dynamic shared memory a block may opt in to, L2 bytes) of a GPU."""
    props = torch.cuda.get_device_properties(index)
    optin = getattr(props, "shared_memory_per_block_optin", 48 * 1024)
    return optin - SCRATCH_BYTES, getattr(props, "L2_cache_size", 50 * 2**20)


_OPTED_IN: dict[int, bool] = {}


def _allow_large_shared(kernel, args, nbytes: int) -> bool:
    """Let ``kernel`` (compiled for ``args``) take ``nbytes`` of dynamic shared memory; False if it cannot.

    Over 48 KiB a kernel must opt in (cuFuncSetAttribute), which Numba's launch
    does not do. Done once a kernel, to the device's maximum, through Numba's
    driver wrapper; if this Numba lacks it, the caller falls back to the split plan.
    """
    if nbytes <= 48 * 1024:
        return True
    key = id(kernel)
    if key not in _OPTED_IN:
        try:
            from numba import typeof
            from numba.cuda.cudadrv.driver import binding, driver

            cufunc = kernel.compile(tuple(typeof(a) for a in args))._codelibrary.get_cufunc()
            attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            limit = _device_limits(cufunc.device.id)[0]
            driver.cuKernelSetAttribute(attr, limit, cufunc.handle, cufunc.device.id)
            try:  # the L1/shared split: this kernel wants all of it as shared memory
                cufunc.set_shared_memory_carveout(100)
            except Exception:  # a hint only
                pass
            _OPTED_IN[key] = True
        except Exception as exc:
            _OPTED_IN[key] = False
            warnings.warn(f"softmax-numba: no opt-in to more than 48 KiB of shared memory ({exc!r}); "
                          "rows over 12,288 columns take the split plan", RuntimeWarning, stacklevel=3)
    return _OPTED_IN[key]


@dataclass(frozen=True)
class Plan:
    path: str  # "row", "split" or "regs"
    threads: int
    unroll: int  # row and split: loads in flight a thread; regs: elements a thread holds
    chunk: int = 0  # split: columns a block
    group_rows: int = 0  # split: rows a launch pair
    recompute: bool = False  # row: pass 3 recomputes exp (see the module docstring)
    fast_exp: bool = False  # regs: libdevice's fast_expf for the exps (REGS_FAST_EXP)
    min_blocks: int = 1  # regs: blocks an SM the launch bounds keep registers for
    vector: bool = False  # regs: 16-byte loads and stores where the rows allow (REGS_VECTOR)

    def __str__(self) -> str:
        extra = f" chunk={self.chunk} group={self.group_rows}" if self.path == "split" else ""
        extra += " recompute" if self.recompute else ""
        extra += " fast-exp" if self.fast_exp else ""
        extra += f" min-blocks={self.min_blocks}" if self.min_blocks > 1 else ""
        extra += " 16B" if self.vector else ""
        return f"{self.path} threads={self.threads} unroll={self.unroll}{extra}"


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def regs_plan(cols: int, max_threads: int | None = None, fast_exp: bool | None = None, min_blocks: int = 1,
              ept: int | None = None, vector: bool | None = None) -> Plan:
    """The "regs" plan for rows of ``cols``: ``ept`` (REGS_EPT) elements a thread, REGS_MIN_THREADS to
    ``max_threads`` (default REGS_MAX_THREADS) threads, more elements a thread once the threads run out.

    Its own limit, not the row plan's: at 16384 columns the row plan's 256 threads would hold 64 elements each,
    and the H100 read 56.7% of the copy bandwidth there against 88.1% at 8192 columns, 32 a thread.
    ``vector`` (default REGS_VECTOR): 16-byte accesses where a thread holds whole vectors and the rows allow.
    """
    wanted = _pow2_at_least(-(-cols // (ept or REGS_EPT)))
    threads = min(max_threads or REGS_MAX_THREADS, max(REGS_MIN_THREADS, wanted))
    ept = _pow2_at_least(-(-cols // threads))
    if ept > REGS_MAX_EPT:
        raise ValueError(f"softmax-numba: a row of {cols} columns is wider than the regs plan holds "
                         f"({threads} threads x {REGS_MAX_EPT} elements); take the row or split plan")
    vector = (REGS_VECTOR if vector is None else vector) and ept % 4 == 0  # whole vectors a thread
    return Plan("regs", threads, ept, fast_exp=REGS_FAST_EXP if fast_exp is None else fast_exp, min_blocks=min_blocks,
                vector=vector)


@cache
def gpu_facts(device_index: int) -> DeviceFacts:
    """What plan_softmax reads of the GPU at ``device_index``: its SMs, L2, the dynamic shared memory a block may opt
    in to, and its DRAM's bandwidth an SM."""
    shared, l2 = _device_limits(device_index)
    return DeviceFacts(f"cuda:{device_index}", sm_count(device_index), l2, dram_gbps_per_sm(device_index),
                       shared + SCRATCH_BYTES)


def plan_softmax(rows: int, cols: int, device: torch.device, max_threads: int | None = None,
                 cols_per_thread: int | None = None, unroll: int | None = None, chunk: int | None = None,
                 split_threads: int | None = None, max_cached_cols: int | None = None,
                 l2_share: float | None = None, path: str | None = None, recompute: bool | None = None,
                 fast_exp: bool | None = None, min_blocks: int = 1, vector: bool | None = None) -> Plan:
    """softmax_launch on ``device``'s GPU (gpu_facts), or under the simulator its own sizes."""
    return softmax_launch(rows, cols, None if SIMULATED else gpu_facts(device.index or 0), max_threads,
                          cols_per_thread, unroll, chunk, split_threads, max_cached_cols, l2_share, path, recompute,
                          fast_exp, min_blocks, vector)


def softmax_launch(rows: int, cols: int, facts: DeviceFacts | None, max_threads: int | None = None,
                   cols_per_thread: int | None = None, unroll: int | None = None, chunk: int | None = None,
                   split_threads: int | None = None, max_cached_cols: int | None = None,
                   l2_share: float | None = None, path: str | None = None, recompute: bool | None = None,
                   fast_exp: bool | None = None, min_blocks: int = 1, vector: bool | None = None) -> Plan:
    """The launch plan for a (rows, cols) input on the GPU of ``facts`` (None: the simulator's sizes); None
    arguments: the module defaults; path forces a plan.

    The default: the regs plan for rows up to REGS_DEFAULT_MAX_COLS that it holds (under the simulator, rows
    that its 32 threads hold), else the row plan while shared memory caches the row, else the split plan.
    """
    simulated = facts is None
    regs_threads = max_threads or (SIM_THREADS if simulated else None)
    if path is None and cols <= REGS_DEFAULT_MAX_COLS and cols <= (regs_threads or REGS_MAX_THREADS) * REGS_MAX_EPT:
        path = "regs"
    if path == "regs":  # cols_per_thread: the elements a thread holds
        wide_dram = not simulated and facts.dram_gbps_per_sm >= WIDE_DRAM_GBPS_PER_SM
        if cols_per_thread is None and wide_dram:
            cols_per_thread = REGS_EPT_WIDE_DRAM
        return regs_plan(cols, regs_threads, fast_exp, min_blocks, cols_per_thread, vector)
    row_unroll = unroll or (SIM_UNROLL if simulated else ROW_UNROLL)
    unroll = unroll or (SIM_UNROLL if simulated else UNROLL)
    if simulated:
        max_threads, split_threads = max_threads or SIM_THREADS, split_threads or SIM_THREADS
        cached, chunk, sms, l2 = max_cached_cols or SIM_MAX_CACHED_COLS, chunk or SIM_CHUNK, 1, 2**20
    else:
        shared, l2 = facts.shared_bytes_per_block - SCRATCH_BYTES, facts.l2_bytes
        cached = min(shared // 4, max_cached_cols or MAX_CACHED_COLS or shared // 4)
        chunk, sms = chunk or CHUNK, facts.sm_count
        lone = cols * 4 > shared // 2  # one block a row fills an SM's shared memory
        max_threads = max_threads or (LONE_BLOCK_THREADS if lone else MAX_THREADS)
    if path is None:
        # Split a row that does not fit, or a few wide rows that would leave SMs idle.
        few_wide = rows < sms and cols >= 2 * chunk
        path = "split" if cols > cached or few_wide else "row"
    if path == "row":
        if not simulated and cols > shared // 4:
            raise ValueError(f"softmax-numba: a row of {cols} columns does not fit in shared memory "
                             f"(at most {shared // 4}); take the split plan")
        per_thread = cols_per_thread or COLS_PER_THREAD
        threads = min(max_threads, max(32, _pow2_at_least(-(-cols // per_thread))))
        return Plan("row", threads, row_unroll, recompute=RECOMPUTE if recompute is None else recompute)
    chunk = min(chunk, cols)
    threads = min(split_threads or SPLIT_THREADS, max(32, _pow2_at_least(chunk)))
    group = max(1, min(rows, int((l2_share or L2_SHARE) * l2) // (cols * 4)))
    return Plan("split", threads, unroll, chunk, group)


def launch_softmax(x: torch.Tensor, out: torch.Tensor | None = None, plan: Plan | None = None,
                   **overrides) -> torch.Tensor:
    """Softmax with an explicit plan, or the plan ``plan_softmax(**overrides)`` picks."""
    rows, cols = x.shape
    y = torch.empty_like(x) if out is None else out
    if x.numel() == 0:
        return y
    plan = plan or plan_softmax(rows, cols, x.device, **overrides)
    check_threads(plan.threads)
    if plan.path == "regs" and plan.threads * plan.unroll < cols:
        raise ValueError(f"softmax-numba: the regs plan's {plan.threads} threads x {plan.unroll} elements hold "
                         f"{plan.threads * plan.unroll} of a row's {cols} columns")
    with quick_barriers():
        return _launch(x, y, plan, overrides)


def _launch(x: torch.Tensor, y: torch.Tensor, plan: Plan, overrides: dict) -> torch.Tensor:
    rows, cols = x.shape
    xa, ya, s = as_array(x.view(-1)), as_array(y.view(-1)), stream()
    if plan.path == "regs":
        vector = plan.vector and cols % 4 == 0 and x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0
        kernel = softmax_regs_kernel(plan.threads, plan.unroll, plan.fast_exp, plan.min_blocks,
                                     plan.threads * plan.unroll == cols, vector)
        kernel[rows, plan.threads, s](xa, ya, np.int64(cols))
        return y
    if plan.path == "row":
        kernel = softmax_row_kernel(plan.threads, plan.unroll, plan.recompute)
        args = (xa, ya, np.int64(cols))
        if SIMULATED or _allow_large_shared(kernel, args, cols * 4):
            kernel[rows, plan.threads, s, cols * 4](*args)
            return y
        plan = plan_softmax(rows, cols, x.device, **{**overrides, "path": "split"})
    chunks = -(-cols // plan.chunk)
    stats = torch.empty((2, plan.group_rows * chunks), device=x.device, dtype=torch.float32)
    stats_max, stats_sum = as_array(stats[0]), as_array(stats[1])
    stats_kernel = chunk_stats_kernel(plan.threads, plan.unroll)
    write_kernel = chunk_write_kernel(plan.threads, plan.unroll)
    for row0 in range(0, rows, plan.group_rows):
        grid = (min(plan.group_rows, rows - row0), chunks)
        stats_kernel[grid, plan.threads, s](xa, stats_max, stats_sum, np.int64(cols), np.int64(plan.chunk),
                                            np.int64(row0))
        write_kernel[grid, plan.threads, s](xa, ya, stats_max, stats_sum, np.int64(cols), np.int64(plan.chunk),
                                            np.int64(row0))
    return y


def softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_softmax(x, out)


def softmax_plan_of(shape: tuple[int, int], dtype: str, facts: DeviceFacts):
    """softmax-numba's launches at ``shape`` on the GPU of ``facts`` (`kernelscope plan`): softmax_launch's default
    plan, as _launch runs it (x and y 16-byte aligned, as torch allocates them)."""
    from kernelscope.plan import Launch, LaunchPlan

    rows, cols = shape
    plan = softmax_launch(rows, cols, facts)
    src = "src/kernelscope/backends/numba/softmax.py"
    if plan.path == "regs":
        vector = plan.vector and cols % 4 == 0
        launches = (Launch("softmax_regs_vector" if vector else "softmax_regs", src, (rows,), plan.threads,
                           note="a block a row, the row in registers"),)
        fields = {"elements a thread": plan.unroll, "16-byte loads": vector, "fast exp": plan.fast_exp,
                  "exact rows (no column checks)": plan.threads * plan.unroll == cols,
                  "launch bound (blocks an SM)": plan.min_blocks}
    elif plan.path == "row":
        launches = (Launch("softmax_row", src, (rows,), plan.threads,
                           note=f"a block a row, the row in {cols * 4} B of dynamic shared memory"),)
        fields = {"loads in flight a thread": plan.unroll, "recompute exps": plan.recompute}
    else:
        groups = -(-rows // plan.group_rows)
        chunks = -(-cols // plan.chunk)
        last = rows - (groups - 1) * plan.group_rows
        note = f"a group of {plan.group_rows} rows x {chunks} chunks" + (
            f"; the last group's {last} rows" if last != plan.group_rows else "")
        launches = tuple(Launch(name, src, (plan.group_rows, chunks), plan.threads, count=groups, note=note)
                         for name in ("chunk_stats", "chunk_write"))
        fields = {"chunk (columns a block)": plan.chunk, "rows a group": plan.group_rows,
                  "loads in flight a thread": plan.unroll}
    return LaunchPlan(plan.path, launches, {**fields, "persistent": False})
