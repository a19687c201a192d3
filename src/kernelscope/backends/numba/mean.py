"""Numba CUDA mean: a one-launch reduction (or, as an option, two launches).

Launch 1 (``partial_sums``): a grid of a few resident blocks per SM walks the
array in a grid-stride loop, ``unroll`` independent loads a thread in flight
(16 bytes each where x is 16-byte aligned, else one element), each added to its
own float32 accumulator (independent adds, and shorter sums: less rounding). The
grid is balanced so that every thread's laps are whole. The block then reduces
its threads' sums with warp shuffles and one slot per warp of shared memory, and
writes one partial sum.

One launch (the default): a grid of one block (up to threads x unroll
elements, 4096 at the defaults) writes the mean at once. Otherwise, after writing its partial, thread 0 of each block
calls cuda.threadfence() (the partial is visible device-wide) and takes a
ticket, cuda.atomic.add on a device counter. The block that draws the last
ticket sums all the partials the same way, divides by n, and resets the
counter to 0 for the next call. No block waits for another, so there is no
deadlock however the blocks are scheduled (and it runs in the simulator). The
counter is one int32 on each device, allocated once and cached; calls that
share it must not run concurrently on two streams.

Two launches (``one_launch=False``): launch 2 (``finish_mean``), one block,
sums the partials and divides by n. The one launch saves the second launch's
~2 us at 2^24 elements.

The partials live in a small torch buffer on the same device, so a call makes
no host round trip and can be captured in a CUDA graph.

Every launch goes through the driver after its first call with given argument
types (direct.py): the same kernels and grids, at a few microseconds of Python
a call where Numba's dispatcher costs the host a hundred or more. ``mean``
keeps its launch shape per (n, device, alignment), a pure function of them.

It moves 4 bytes an element (x read once) and writes one float.
"""

from functools import cache

import numpy as np
import torch
from numba import cuda, float32, float64, int32, uint64

from kernelscope.backends.numba import direct as numba_direct
from kernelscope.backends.device import DeviceFacts
from kernelscope.backends.numba.common import (SIM_THREADS, SIMULATED, ZERO, block_sum, check_threads, gpu_facts,
                                                jit_bounded, launch_blocks, quick_barriers, resident_blocks_per_sm)
from kernelscope.backends.numba.vector import load_f32x4, load_f32x4_streaming

# Launch defaults: 4 blocks of 512 threads fill an SM's 2048 thread slots; 8
# loads a thread in flight (32 KiB an SM) cover DRAM latency. Fewer blocks
# than square's also mean fewer partials for launch 2.
THREADS = 512
BLOCKS_PER_SM = 4
UNROLL = 8
FINISH_THREADS = 256
ONE_LAUNCH = True
# 16-byte loads (vector.load_f32x4) where x is 16-byte aligned: four elements a load, a quarter of the load
# instructions and their address arithmetic, VECTOR_UNROLL of them a lap. 8 a lap is slower (H100: 33.18 us at
# 2^24 against the scalar loads' 27.54): ptxas keeps a thread in 32 registers and puts 40 bytes of it in local
# memory (numba_asm_probe.py). 2 a lap, no local memory, read 27.10 us against 27.36 on the H100 and 20.56 against
# 20.81 on the H200 (tune_numba.py --quick, balanced grids).
VECTOR_LOADS = True
VECTOR_UNROLL = 2
# The 16-byte loads marked evict-first (vector.load_f32x4_streaming, ld.global.cs), as mean-cuda's __ldcs. H100
# (tune_numba.py --quick): 26.43 us at 2^24 against 27.25 (numba_asm_probe.py: 30 registers, no local
# memory); at 2^28 349.4 against 350.3.
STREAMING_LOADS = True
# The grid: the fewest blocks (at most BLOCKS_PER_SM an SM) whose laps are whole (common.grid_stride_blocks). At
# 2^24 elements the full grid's threads each read 62 elements: 7 laps of 8, then 6 loads one after another, each
# waiting on DRAM; a grid of 512 blocks reads 64 a thread, 8 whole laps.
BALANCED_GRID = True


@cache
def thread_sum(unroll: int, vector: bool = False, streaming: bool = False):
    """This thread's share of x: a grid-stride walk, ``unroll`` loads in flight, each
    into its own float32 accumulator (independent adds, shorter sums, less rounding).
    ``vector``: the walk is over 16-byte vectors (x 16-byte aligned), then the
    last x.size % 4 elements one at a time; ``streaming``: those vectors loaded evict-first."""
    load4 = load_f32x4_streaming if streaming else load_f32x4

    @cuda.jit(device=True)
    def thread_sum_of(x):
        n = x.size
        stride = cuda.gridsize(1)
        i = cuda.grid(1)
        acc = cuda.local.array(unroll, float32)  # registers: unroll is a compile-time constant
        for u in range(unroll):
            acc[u] = ZERO
        if vector:
            n4 = n // 4
            while i + (unroll - 1) * stride < n4:
                for u in range(unroll):
                    a, b, c, d = load4(x, uint64(i + u * stride))
                    acc[u] += (a + b) + (c + d)
                i += unroll * stride
            while i < n4:
                a, b, c, d = load4(x, uint64(i))
                acc[0] += (a + b) + (c + d)
                i += stride
            i = n4 * 4 + cuda.grid(1)  # fewer than 4 elements left, for the first threads
        while i + (unroll - 1) * stride < n:
            for u in range(unroll):  # unsigned: no wraparound of a negative index to work out (softmax/registers.py)
                acc[u] += x[uint64(i + u * stride)]
            i += unroll * stride
        while i < n:
            acc[0] += x[uint64(i)]
            i += stride
        total = ZERO
        for u in range(unroll):
            total += acc[u]
        return total

    return thread_sum_of


@cache
def partial_sums_kernel(threads: int, blocks_per_sm: int, unroll: int, vector: bool = False,
                        streaming: bool = False):
    """Launch 1 for one launch shape (each shape compiles once)."""

    sum_of = thread_sum(unroll, vector, streaming)

    @jit_bounded(threads, blocks_per_sm)
    def partial_sums(x, partials):
        total = sum_of(x)
        scratch = cuda.shared.array(32, float32)
        total = block_sum(total, scratch)
        if cuda.threadIdx.x == 0:
            partials[cuda.blockIdx.x] = total

    return partial_sums


@cache
def mean_one_launch_kernel(threads: int, blocks_per_sm: int, unroll: int, vector: bool = False,
                           streaming: bool = False):
    """Partial sums, and the last block to finish sums them (each shape compiles once)."""

    sum_of = thread_sum(unroll, vector, streaming)

    @jit_bounded(threads, blocks_per_sm)
    def mean_one_launch(x, partials, counter, out, n_elements):
        total = sum_of(x)
        scratch = cuda.shared.array(32, float32)
        last = cuda.shared.array(1, int32)
        total = block_sum(total, scratch)
        t = cuda.threadIdx.x
        if cuda.gridDim.x == 1:  # one block (a small input): its sum is the total, no ticket, no read-back
            if t == 0:
                out[0] = float32(float64(total) / float64(n_elements))
            return
        if t == 0:
            partials[cuda.blockIdx.x] = total
            cuda.threadfence()  # the partial reaches device scope before the ticket
            ticket = cuda.atomic.add(counter, 0, 1)
            last[0] = 1 if ticket == cuda.gridDim.x - 1 else 0
        cuda.syncthreads()
        if last[0] == 1:  # uniform across the block: every thread enters, so block_sum's barriers are safe
            cuda.threadfence()
            s = ZERO
            for j in range(t, cuda.gridDim.x, cuda.blockDim.x):
                s += partials[j]
            s = block_sum(s, scratch)
            if t == 0:
                out[0] = float32(float64(s) / float64(n_elements))
                counter[0] = 0  # ready for the next call; no other block touches it any more

    return mean_one_launch


_COUNTERS: dict = {}


def ticket_counter(device: torch.device) -> torch.Tensor:
    """The one-launch kernel's int32 ticket counter on ``device``: allocated (zeroed) once, then cached.

    The kernel leaves it at 0. Allocate it outside graph capture: the first call
    on a device (every benchmark and capture warms up first) does.
    """
    key = (device.type, device.index or 0)
    counter = _COUNTERS.get(key)
    if counter is None:
        counter = _COUNTERS[key] = torch.zeros(1, device=device, dtype=torch.int32)
    return counter


@jit_bounded(FINISH_THREADS)
def finish_mean(partials, out, n):
    """Launch 2, one block: sum the partials, divide by n."""
    acc = ZERO
    for j in range(cuda.threadIdx.x, partials.size, cuda.blockDim.x):
        acc += partials[j]
    scratch = cuda.shared.array(32, float32)
    acc = block_sum(acc, scratch)
    if cuda.threadIdx.x == 0:
        # One division in one thread: float64 costs nothing here and rounds once.
        out[0] = float32(float64(acc) / float64(n))


def mean_launch(n: int, facts: DeviceFacts | None, aligned: bool = True, threads: int | None = None,
                blocks_per_sm: int | None = None, unroll: int | None = None, vector_loads: bool | None = None,
                balanced_grid: bool | None = None, streaming_loads: bool | None = None) -> tuple:
    """(threads, blocks_per_sm, unroll, vector, streaming, blocks) of the partial sums' launch over n elements on
    the GPU of ``facts`` (None: the simulator's sizes), x's data 16-byte ``aligned`` or not: each argument given,
    else the module defaults; the grid from launch_blocks."""
    simulated = facts is None
    threads = threads or (SIM_THREADS if simulated else THREADS)
    blocks_per_sm = resident_blocks_per_sm(threads, blocks_per_sm or BLOCKS_PER_SM)
    vector = (VECTOR_LOADS if vector_loads is None else vector_loads) and aligned
    unroll = unroll or (2 if simulated else VECTOR_UNROLL if vector else UNROLL)
    balanced = BALANCED_GRID if balanced_grid is None else balanced_grid
    streaming = vector and (STREAMING_LOADS if streaming_loads is None else streaming_loads)
    blocks = launch_blocks(facts, n, threads * unroll * (4 if vector else 1), blocks_per_sm, balanced)
    return threads, blocks_per_sm, unroll, vector, streaming, blocks


def launch_mean(x: torch.Tensor, out: torch.Tensor | None = None, threads: int | None = None,
                blocks_per_sm: int | None = None, unroll: int | None = None,
                one_launch: bool | None = None, vector_loads: bool | None = None,
                balanced_grid: bool | None = None, streaming_loads: bool | None = None) -> torch.Tensor:
    """mean with an explicit launch shape for the partial sums, one launch or two, 16-byte loads or 4-byte ones,
    the grid balanced to whole laps or full, the 16-byte loads evict-first or not (None: the module defaults).
    16-byte loads only where x's data is 16-byte aligned (a sliced view may not be)."""
    n = x.numel()
    shape = mean_launch(n, None if SIMULATED else gpu_facts(x.device.index or 0), x.data_ptr() % 16 == 0, threads,
                        blocks_per_sm, unroll, vector_loads, balanced_grid, streaming_loads)
    check_threads(shape[0])
    return _mean(x, out, shape, ONE_LAUNCH if one_launch is None else one_launch)


@cache
def default_launch(n: int, device: torch.device, aligned: bool) -> tuple:
    """mean_launch's defaults for n elements on ``device``, x 16-byte ``aligned`` or not: worked out once."""
    shape = mean_launch(n, None if SIMULATED else gpu_facts(device.index or 0), aligned)
    check_threads(shape[0])
    return shape


_FIXED: dict = {}  # (n, dtype, device, x 16-byte aligned) -> the one-launch mean, fixed, its partials kept with it
numba_direct._FORGET_ALSO.append(_FIXED)


def mean(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """launch_mean's defaults, the launch shape kept per (n, device, alignment). In one launch, the launch itself is
    kept per n, dtype, device and alignment with its partials (direct.fixed; like the ticket counter, one per
    device), and a later call of those, x contiguous, writes two data pointers and launches."""
    y = torch.empty((), device=x.device, dtype=x.dtype) if out is None else out
    x_ptr = x.data_ptr()
    key = (x.numel(), x.dtype, x.device, x_ptr & 15 == 0)
    kept = _FIXED.get(key)
    if kept is not None and _fits(x, y):
        kept(x_ptr, y.data_ptr())
        return y
    shape = default_launch(x.numel(), x.device, x_ptr % 16 == 0)
    partials = torch.empty(shape[-1], device=x.device, dtype=torch.float32)
    _mean(x, y, shape, ONE_LAUNCH, partials)
    if ONE_LAUNCH and _fits(x, y):
        threads, blocks_per_sm, unroll, vector, streaming, blocks = shape
        kept = numba_direct.fixed(mean_one_launch_kernel(threads, blocks_per_sm, unroll, vector, streaming), blocks,
                                  threads, x, partials, ticket_counter(x.device), y, np.int64(x.numel()), vary=(0, 3))
        if kept is not None:
            _FIXED[key] = kept
    return y


def _fits(x: torch.Tensor, y: torch.Tensor) -> bool:
    """x contiguous, y one element of x's dtype on x's device: what a fixed launch's words take for granted."""
    return x.is_contiguous() and y.numel() == 1 and y.dtype == x.dtype and y.device == x.device


def _mean(x: torch.Tensor, out: torch.Tensor | None, shape: tuple, one_launch: bool,
          partials: torch.Tensor | None = None) -> torch.Tensor:
    """The launches of a mean with launch shape ``shape`` (mean_launch's), each through direct.launch: every
    tensor passed flat (x, and y 0-d, as 1-D arrays), n as an np.int64, so its Numba type is int64 on every call."""
    threads, blocks_per_sm, unroll, vector, streaming, blocks = shape
    y = torch.empty((), device=x.device, dtype=x.dtype) if out is None else out
    if partials is None:
        partials = torch.empty(blocks, device=x.device, dtype=torch.float32)
    n = np.int64(x.numel())
    with quick_barriers():
        if one_launch:
            numba_direct.launch(mean_one_launch_kernel(threads, blocks_per_sm, unroll, vector, streaming), blocks,
                                threads, x, partials, ticket_counter(x.device), y, n, flat=True)
            return y
        numba_direct.launch(partial_sums_kernel(threads, blocks_per_sm, unroll, vector, streaming), blocks, threads,
                            x, partials, flat=True)
        numba_direct.launch(finish_mean, 1, SIM_THREADS if SIMULATED else FINISH_THREADS, partials, y, n, flat=True)
    return y


def mean_plan_of(shape: tuple[int, ...], dtype: str, facts: DeviceFacts):
    """mean-numba's launch at ``shape`` on the GPU of ``facts`` (`kernelscope plan`): mean_launch's defaults, x
    16-byte aligned (as torch allocates it)."""
    from kernelscope.backends.launches import Launch, LaunchPlan

    n = 1
    for s in shape:
        n *= s
    threads, blocks_per_sm, unroll, vector, streaming, blocks = mean_launch(n, facts)
    src = "src/kernelscope/backends/numba/mean.py"
    fields = {"loads a lap": f"{unroll} x {'16' if vector else '4'} bytes", "streaming loads": streaming,
              "launch bound (blocks an SM)": blocks_per_sm, "balanced grid": BALANCED_GRID}
    if ONE_LAUNCH:
        note = ("one block: its sum is the mean" if blocks == 1 else
                "grid-stride; the last block to take a ticket sums the partials")
        return LaunchPlan(None, (Launch("mean_one_launch", src, (blocks,), threads, note=note),),
                          fields)
    return LaunchPlan(None, (Launch("partial_sums", src, (blocks,), threads, note="grid-stride"),
                             Launch("finish_mean", src, (1,), FINISH_THREADS)), fields)
