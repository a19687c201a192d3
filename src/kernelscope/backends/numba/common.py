"""Launch sizing and block reductions shared by the tuned Numba kernels.

Grid-stride kernels launch a fixed number of blocks, ``sm_count * blocks_per_sm``:
every block stays resident (the kernels declare ``launch_bounds`` for it), so
there is no half-empty last wave, and each thread walks the array in steps of
the whole grid. Under the CUDA simulator every thread is a Python thread, so
grids and blocks there are tiny, and the loops really loop at the check shapes.

The reductions combine a value across a block: warp shuffles first (no shared
memory, no barrier), then one slot per warp in shared memory, and every thread
gets the result. The simulator has no warp shuffles: there a warp's values go
through shared memory instead.
"""

import contextlib
import sys
import threading
from functools import cache

import numpy as np
import torch
from numba import cuda, float32

from kernelscope.backends import numba_simulated
from kernelscope.backends.device import DeviceFacts

SIMULATED = numba_simulated()
SIM_THREADS = 32  # one warp a block under the simulator: ~1 ms a simulated thread
SIM_BLOCKS = 2  # blocks of a grid-stride kernel under the simulator
MAX_THREADS_PER_SM = 2048  # sm_80 .. sm_90
NEG_INF = np.float32(-np.inf)
ZERO = np.float32(0.0)


@cache
def sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


@cache
def dram_gbps_per_sm(device_index: int) -> float:
    """The DRAM's peak bandwidth (GB/s) over the GPU's SMs, from the driver's attributes: memory clock x bus width,
    two transfers a clock (softmax-cuda's kernels.dram_gbps_per_sm reads the same attributes through the runtime).
    0 under the simulator, or where the driver does not say."""
    if SIMULATED:
        return 0.0
    try:
        device = cuda.gpus[device_index]
        gbps = 2 * device.MEMORY_CLOCK_RATE * 1e3 * device.GLOBAL_MEMORY_BUS_WIDTH / 8 / 1e9
    except Exception:  # an attribute this driver or binding lacks: the plans' defaults for other GPUs
        return 0.0
    return gbps / sm_count(device_index)


@cache
def gpu_facts(device_index: int) -> DeviceFacts:
    """What the grid-stride launches read of the GPU at ``device_index``: its SMs."""
    return DeviceFacts(f"cuda:{device_index}", sm_count(device_index))


def grid_stride_blocks(device: torch.device, work_items: int, per_block: int, blocks_per_sm: int,
                       balanced: bool = False) -> int:
    """launch_blocks on ``device``'s GPU (under the simulator: its SIM_BLOCKS)."""
    facts = None if SIMULATED else gpu_facts(device.index or 0)
    return launch_blocks(facts, work_items, per_block, blocks_per_sm, balanced)


def launch_blocks(facts: DeviceFacts | None, work_items: int, per_block: int, blocks_per_sm: int,
                  balanced: bool = False) -> int:
    """Blocks for a grid-stride loop on the GPU of ``facts``: enough to cover ``work_items`` once, at most a resident
    grid (None: the simulator's SIM_BLOCKS).

    ``balanced``: of those, the fewest that still take the same number of laps (``per_block`` items a block a lap),
    so that every block's laps are whole: at 2^24 elements and 528 resident blocks of 4096 a lap, 512 blocks of 8
    laps each, not 528 of 7.76 (whose last 0.76 lap a thread reads an element at a time, a DRAM latency each).
    """
    needed = max(1, -(-work_items // per_block))
    cap = SIM_BLOCKS if facts is None else facts.sm_count * blocks_per_sm
    return balanced_blocks(needed, cap) if balanced else min(needed, cap)


def balanced_blocks(needed: int, cap: int) -> int:
    """The fewest blocks, at most ``cap``, that cover ``needed`` block-laps in as few laps as ``cap`` blocks do."""
    laps = -(-needed // cap)
    return -(-needed // laps)


def resident_blocks_per_sm(threads: int, blocks_per_sm: int) -> int:
    """``blocks_per_sm``, capped at what the SM's thread slots hold (the launch bound ptxas must meet)."""
    return max(1, min(blocks_per_sm, MAX_THREADS_PER_SM // threads))


def jit_bounded(threads: int, blocks_per_sm: int = 1):
    """cuda.jit with launch bounds: ptxas then keeps registers low enough for
    ``blocks_per_sm`` blocks of ``threads`` an SM. (The simulator's jit takes no bounds.)

    ``cache=True``: the compiled kernel is kept in ``__pycache__`` beside its
    module. Each benchmark process is a new one, and compiling a kernel took
    it about 1.9 s on the H100; the cache is keyed by the function's bytecode
    and the values it closes over (the device function, the launch shape).
    """
    return cuda.jit if SIMULATED else cuda.jit(launch_bounds=(threads, blocks_per_sm), cache=True)


def quick_barriers():
    """Under the simulator, hand the GIL over more often while kernels with barriers run.

    A simulated barrier waits until every thread of the block has reached it,
    each a Python thread that needs the GIL to get there: at Python's default
    switch interval (5 ms) a barrier of 32 threads takes about 8 ms; at 0.1 ms,
    about 1 ms. On a GPU this does nothing, and costs next to nothing: one kept
    nullcontext, not a generator's context manager (a microsecond or two a call).
    """
    return _quick_barriers() if SHARED_ARRAYS_SERIALIZED else _NO_SWITCH


_NO_SWITCH = contextlib.nullcontext()


@contextlib.contextmanager
def _quick_barriers():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def check_threads(threads: int) -> None:
    if threads % 32 or not 32 <= threads <= 1024:
        raise ValueError(f"threads per block must be a multiple of 32 in [32, 1024], got {threads}")


def _serialize_simulated_shared_arrays() -> bool:
    """Make the simulator's static shared arrays safe to create from racing threads; False if it cannot.

    The simulator makes a static shared array on the first call from any thread
    of a launch, keyed by the calling line. Two threads there at once may each
    make their own, and one then reads and writes a private copy: rare at
    Python's default switch interval, common at the short one that
    quick_barriers sets. This does the same under a lock (and finds the calling
    line from the frame, not from a traceback, which was most of its cost).
    """
    from numba.cuda.simulator import kernelapi

    shared = kernelapi.FakeCUDAShared
    if getattr(shared.array, "serialized", False):
        return True
    if not hasattr(shared(0), "_allocations"):
        return False
    unlocked = shared.array
    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # dynamic (one buffer a launch), or refused as before
            return unlocked(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            arr = self._allocations.get(key)
            if arr is None:
                if isinstance(dtype, kernelapi.types.Type):  # as the simulator converts it
                    dtype = kernelapi.numpy_support.as_dtype(dtype)
                arr = self._allocations[key] = np.empty(shape, dtype)
        return arr

    array.serialized = True
    shared.array = array
    return True


SHARED_ARRAYS_SERIALIZED = SIMULATED and _serialize_simulated_shared_arrays()


# --- warp and block reductions ------------------------------------------------------------------

if SIMULATED:
    # The simulator has no shuffles, and its barriers cost milliseconds each: a
    # warp's values go through shared memory once (two barriers, where ten
    # emulated shuffles would take ten). Every thread of the block must call
    # them, as ours all do. The GPU versions below are the ones that ship.
    @cuda.jit(device=True)
    def warp_max(v):
        lanes = cuda.shared.array(1024, float32)
        t = cuda.threadIdx.x
        lanes[t] = v
        cuda.syncthreads()
        first = t - t % 32
        for k in range(first, first + 32):
            v = max(v, lanes[k])
        cuda.syncthreads()
        return v

    @cuda.jit(device=True)
    def warp_sum(v):
        lanes = cuda.shared.array(1024, float32)
        t = cuda.threadIdx.x
        lanes[t] = v
        cuda.syncthreads()
        first = t - t % 32
        v = ZERO
        for k in range(first, first + 32):  # in lane order: the GPU's butterfly differs only in rounding
            v += lanes[k]
        cuda.syncthreads()
        return v
else:
    @cuda.jit(device=True)
    def warp_max(v):
        # Butterfly: after five exchanges every lane holds the warp's maximum.
        offset = 16
        while offset > 0:
            v = max(v, cuda.shfl_xor_sync(0xFFFFFFFF, v, offset))
            offset //= 2
        return v

    @cuda.jit(device=True)
    def warp_sum(v):
        offset = 16
        while offset > 0:
            v += cuda.shfl_xor_sync(0xFFFFFFFF, v, offset)
            offset //= 2
        return v


@cuda.jit(device=True)
def block_max(v, scratch):
    """The block's maximum of ``v``, returned to every thread; ``scratch``: 32 floats of shared memory."""
    v = warp_max(v)
    if cuda.blockDim.x == 32:  # one warp: done, no barrier
        return v
    lane = cuda.threadIdx.x % 32
    cuda.syncthreads()  # scratch may still be read by the previous reduction
    if lane == 0:
        scratch[cuda.threadIdx.x // 32] = v
    cuda.syncthreads()
    # Every warp reduces the per-warp values: the result reaches all threads without another barrier.
    v = scratch[lane] if lane < cuda.blockDim.x // 32 else NEG_INF
    return warp_max(v)


@cuda.jit(device=True)
def block_sum(v, scratch):
    """The block's sum of ``v``, returned to every thread; ``scratch``: 32 floats of shared memory."""
    v = warp_sum(v)
    if cuda.blockDim.x == 32:
        return v
    lane = cuda.threadIdx.x % 32
    cuda.syncthreads()
    if lane == 0:
        scratch[cuda.threadIdx.x // 32] = v
    cuda.syncthreads()
    v = scratch[lane] if lane < cuda.blockDim.x // 32 else ZERO
    return warp_sum(v)
