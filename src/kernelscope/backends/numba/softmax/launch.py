"""softmax-numba's launches: the plan plan.py picks for the input on this GPU (or the simulator), run as its
kernels' grids.

Every launch goes through the driver after its first call with given argument types (direct.py): the same
kernels, grids and blocks, at a few microseconds of Python a call where Numba's dispatcher costs the host a hundred
or more. ``softmax`` keeps its plan per (rows, cols, device) (``default_plan``).
"""

from functools import cache

import numpy as np
import torch

from kernelscope.backends import streams
from kernelscope.backends.numba import direct as numba_direct
from kernelscope.backends.numba.common import SIMULATED, check_threads, quick_barriers

from .gpu import gpu_facts
from .exchange import softmax_exchange_kernel
from .plan import Plan, softmax_launch
from .registers import full_laps, softmax_regs_kernel, softmax_regs_shared_kernel
from .resident import softmax_resident_kernel
from .shared_row import allow_large_shared, softmax_row_kernel
from .split import chunk_stats_kernel, chunk_write_kernel

SIM_GRID = 3  # the resident plan's blocks under the simulator, where it keeps nothing in shared memory


def plan_softmax(rows: int, cols: int, device: torch.device, max_threads: int | None = None,
                 cols_per_thread: int | None = None, unroll: int | None = None, chunk: int | None = None,
                 split_threads: int | None = None, max_cached_cols: int | None = None,
                 l2_share: float | None = None, path: str | None = None, recompute: bool | None = None,
                 fast_exp: bool | None = None, min_blocks: int = 1, vector: bool | None = None,
                 online: bool | None = None, reverse: bool | None = None, parts: int | None = None,
                 hints: bool | None = None, keep: int | None = None) -> Plan:
    """softmax_launch on ``device``'s GPU (gpu_facts), or under the simulator its own sizes."""
    return softmax_launch(rows, cols, None if SIMULATED else gpu_facts(device.index or 0), max_threads,
                          cols_per_thread, unroll, chunk, split_threads, max_cached_cols, l2_share, path, recompute,
                          fast_exp, min_blocks, vector, online, reverse, parts, hints, keep)


def launch_softmax(x: torch.Tensor, out: torch.Tensor | None = None, plan: Plan | None = None,
                   **overrides) -> torch.Tensor:
    """Softmax with an explicit plan, or the plan ``plan_softmax(**overrides)`` picks."""
    rows, cols = x.shape
    y = torch.empty_like(x) if out is None else out
    if x.numel() == 0:
        return y
    plan = plan or plan_softmax(rows, cols, x.device, **overrides)
    _check(plan, cols)
    with quick_barriers():
        return _launch(x, y, plan, overrides)


@cache
def default_plan(rows: int, cols: int, device: torch.device) -> Plan:
    """plan_softmax's default plan for a (rows, cols) input on ``device``, checked: worked out once."""
    plan = plan_softmax(rows, cols, device)
    _check(plan, cols)
    return plan


_FIXED: dict = {}  # (shape, dtype, device, x and y 16-byte aligned) -> the default plan's one launch, fixed
numba_direct._FORGET_ALSO.append(_FIXED)


def softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """launch_softmax's default plan, kept per (rows, cols, device). Where that plan is one launch (regs, row), the
    launch itself is kept per shape, dtype, device and alignment (direct.fixed), and a later call of those, its
    tensors contiguous, writes two data pointers and launches."""
    y = torch.empty_like(x) if out is None else out
    x_ptr, y_ptr = x.data_ptr(), y.data_ptr()
    key = (x.shape, x.dtype, x.device, (x_ptr | y_ptr) & 15 == 0)
    kept = _FIXED.get(key)
    if kept is not None and _like(x, y):
        kept(x_ptr, y_ptr)
        return y
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return y
    plan = default_plan(rows, cols, x.device)
    with quick_barriers():
        _launch(x, y, plan, {})
    single = _single(x, y, plan) if _like(x, y) else None
    if single is not None:
        kept = numba_direct.fixed(single[0], rows, plan.threads, x, y, np.int64(cols), shared=single[1])
        if kept is not None:
            _FIXED[key] = kept
    return y


def _like(x: torch.Tensor, y: torch.Tensor) -> bool:
    """y is x's shape, dtype and device, and both are contiguous: what a fixed launch's words take for granted."""
    return (y.shape == x.shape and y.dtype == x.dtype and y.device == x.device and x.is_contiguous()
            and y.is_contiguous())


def _check(plan: Plan, cols: int) -> None:
    check_threads(plan.threads)
    if plan.path != "regs":
        return
    held = plan.threads * plan.unroll
    if held < cols and not plan.keep:
        raise ValueError(f"softmax-numba: the regs plan's {plan.threads} threads x {plan.unroll} elements hold "
                         f"{held} of a row's {cols} columns")
    if plan.keep and not held <= cols <= held + plan.keep:
        raise ValueError(f"softmax-numba: the regs plan's {plan.threads} threads x {plan.unroll} elements and "
                         f"{plan.keep} in shared memory do not hold a row of {cols} columns, registers first")


def _launch(x: torch.Tensor, y: torch.Tensor, plan: Plan, overrides: dict) -> torch.Tensor:
    """The plan's launches, each through direct.launch: x and y passed flat (as their 1-D views), the sizes as
    np.int64, so their Numba type is int64 on every call."""
    rows, cols = x.shape
    ncols = np.int64(cols)
    single = _single(x, y, plan)
    if single is not None:
        numba_direct.launch(single[0], rows, plan.threads, x, y, ncols, flat=True, shared=single[1])
        return y
    if plan.path == "row":  # this Numba cannot opt in to the shared memory the row takes
        plan = plan_softmax(rows, cols, x.device, **{**overrides, "path": "split"})
    if plan.path == "exchange":
        return _launch_exchange(x, y, plan)
    if plan.path == "resident":
        return _launch_resident(x, y, plan)
    chunks = -(-cols // plan.chunk)
    stats = torch.empty((2, plan.group_rows * chunks), device=x.device, dtype=torch.float32)
    stats_max, stats_sum = stats[0], stats[1]
    vector = plan.vector and _aligned(x, y)  # the plan saw whole vectors
    stats_kernel = chunk_stats_kernel(plan.threads, plan.unroll, plan.fast_exp, plan.hints, vector)
    write_kernel = chunk_write_kernel(plan.threads, plan.unroll, plan.fast_exp, plan.reverse, plan.hints, vector)
    chunk = np.int64(plan.chunk)
    for row0 in range(0, rows, plan.group_rows):
        grid = (min(plan.group_rows, rows - row0), chunks)
        first = np.int64(row0)
        numba_direct.launch(stats_kernel, grid, plan.threads, x, stats_max, stats_sum, ncols, chunk, first,
                            flat=True)
        numba_direct.launch(write_kernel, grid, plan.threads, x, y, stats_max, stats_sum, ncols, chunk, first,
                            flat=True)
    return y


_EXCHANGE_BUFFERS: dict = {}  # (device, stream, parts) -> (pairs, counters), grown to the most rows seen
_BARRIER_COUNTERS: dict = {}  # (device, stream, grid) -> the resident plan's barrier counter
_EXCHANGE_GRIDS: dict = {}  # (id(kernel), device, shared bytes, threads) -> the blocks resident at once


def _aligned(x: torch.Tensor, y: torch.Tensor) -> bool:
    """x and y start 16-byte aligned: a 16-byte access elsewhere is a CUDA error."""
    return x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0


def _single(x: torch.Tensor, y: torch.Tensor, plan: Plan) -> tuple | None:
    """(kernel, dynamic shared bytes) of a plan that is one launch of a block a row: regs, and row where this Numba
    can opt in to the shared memory the row takes; else None."""
    rows, cols = x.shape
    if plan.path == "regs" and plan.keep:
        kernel = softmax_regs_shared_kernel(plan.threads, plan.unroll, plan.fast_exp, plan.min_blocks)
        shared = (cols - plan.threads * plan.unroll) * 4
        if SIMULATED or allow_large_shared(kernel, lambda: numba_direct.numba_args((x, y, np.int64(cols)), True),
                                           shared):
            return kernel, shared
        raise ValueError(f"softmax-numba: the regs plan's {shared} B of shared memory a block need an opt-in this "
                         "Numba cannot make")
    if plan.path == "regs":
        vector = plan.vector and cols % 4 == 0 and _aligned(x, y)
        return softmax_regs_kernel(plan.threads, plan.unroll, plan.fast_exp, plan.min_blocks,
                                   full_laps(cols, plan.threads, plan.unroll, vector), vector), 0
    if plan.path == "row":
        kernel = softmax_row_kernel(plan.threads, plan.unroll, plan.recompute, plan.online, plan.fast_exp)
        # the arguments as Numba's first launch sees them: what allow_large_shared compiles the kernel for
        if SIMULATED or allow_large_shared(kernel, lambda: numba_direct.numba_args((x, y, np.int64(cols)), True),
                                           cols * 4):
            return kernel, cols * 4
    return None


def _launch_exchange(x: torch.Tensor, y: torch.Tensor, plan: Plan) -> torch.Tensor:
    """The exchange plan (exchange.py): one launch of as many blocks as are resident at once, whole rows of
    ``plan.parts`` blocks."""
    rows, cols = x.shape
    if SIMULATED and plan.parts > 1:
        raise ValueError("softmax-numba: the simulator runs one block after another, so a row's blocks would wait "
                         "for each other forever; the exchange plan takes parts=1 there")
    part_cols = -(-cols // plan.parts)
    shared = part_cols * 4
    pairs, counters = _exchange_buffers(x.device, rows, plan.parts)
    kernel = softmax_exchange_kernel(plan.threads, plan.unroll, plan.parts, plan.fast_exp)
    args = (x, y, pairs, counters, np.int64(rows), np.int64(cols), np.int64(part_cols))

    def wrapped():  # the arguments as Numba's first launch sees them
        return numba_direct.numba_args(args, True)

    if not SIMULATED and not allow_large_shared(kernel, wrapped, shared):
        raise ValueError(f"softmax-numba: the exchange plan's {shared} B of shared memory a block need an opt-in "
                         "this Numba cannot make")
    resident = _resident_blocks(kernel, wrapped, plan.threads, shared, x.device)
    if resident < plan.parts:
        raise ValueError(f"softmax-numba: the exchange plan's {plan.parts} blocks a row cannot all be resident at "
                         f"once ({resident} blocks of {plan.threads} threads and {shared} B fit the GPU)")
    grid = min(rows, resident // plan.parts) * plan.parts
    numba_direct.launch(kernel, grid, plan.threads, *args, flat=True, shared=shared)
    return y


def _launch_resident(x: torch.Tensor, y: torch.Tensor, plan: Plan) -> torch.Tensor:
    """The resident plan (resident.py): one launch of as many blocks as are resident at once (under the simulator,
    which runs one block after another, one), a block a span of the tensor, up to ``plan.keep`` elements of it
    kept in shared memory."""
    rows, cols = x.shape
    vector = plan.vector and cols % 4 == 0 and _aligned(x, y)
    width = 4 if vector else 1
    keep = plan.keep // width * width
    kernel = softmax_resident_kernel(plan.threads, plan.unroll, plan.fast_exp, plan.hints, vector)
    stream = streams.current_stream_handle() if x.device.type == "cuda" else 0

    def args(grid: int, span: int, keep: int, passes: int = 3) -> tuple:
        slots = -(-cols // span) + 1  # the most blocks a row's parts take
        stats = torch.empty(2 * rows * slots, device=x.device, dtype=torch.float32)
        counter = _BARRIER_COUNTERS.get((x.device, stream, grid))
        if counter is None:
            counter = _BARRIER_COUNTERS[(x.device, stream, grid)] = torch.zeros(1, device=x.device, dtype=torch.int64)
        return (x, y, stats, counter, np.int64(rows), np.int64(cols), np.int64(span), np.int64(keep),
                np.int64(slots), np.int64(passes))

    def wrapped():  # arguments of the types Numba's first launch sees (x stands in for the statistics)
        counter = torch.empty(1, device=x.device, dtype=torch.int64)
        return numba_direct.numba_args((x, y, x, counter, *(np.int64(1),) * 6), True)

    shared = keep * 4
    if SIMULATED:
        # One block after another: a grid's blocks would wait at the barrier forever. Kept elements: one block;
        # none: SIM_GRID blocks in two launches, the barrier their boundary, so spans cross rows.
        grid = 1 if keep else SIM_GRID
    else:
        if not allow_large_shared(kernel, wrapped, shared):
            raise ValueError(f"softmax-numba: the resident plan's {shared} B of shared memory a block need an "
                             "opt-in this Numba cannot make")
        grid = _resident_blocks(kernel, wrapped, plan.threads, shared, x.device)
    span = -(-(rows * cols) // grid)
    span = -(-span // width) * width
    if SIMULATED and grid > 1:
        stats_args = args(grid, span, 0, passes=1)
        numba_direct.launch(kernel, grid, plan.threads, *stats_args, flat=True)
        numba_direct.launch(kernel, grid, plan.threads, *stats_args[:-1], np.int64(2), flat=True)
        return y
    numba_direct.launch(kernel, grid, plan.threads, *args(grid, span, min(keep, span)), flat=True, shared=shared)
    return y


def _exchange_buffers(device: torch.device, rows: int, parts: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The (max, sum) pairs and the arrival counters the exchange plan's blocks share, kept per device, stream and
    parts (a counter counts in whole rows of ``parts`` arrivals); grown, the counters start again from zero."""
    key = (device, streams.current_stream_handle() if device.type == "cuda" else 0, parts)
    kept = _EXCHANGE_BUFFERS.get(key)
    if kept is None or kept[1].numel() < rows:
        kept = (torch.empty(2 * rows * parts, device=device, dtype=torch.float32),
                torch.zeros(rows, device=device, dtype=torch.int64))
        _EXCHANGE_BUFFERS[key] = kept
    return kept


def _resident_blocks(kernel, wrapped, threads: int, shared: int, device: torch.device) -> int:
    """How many blocks of the kernel are resident at once on the GPU (the occupancy query); under the simulator two,
    so its rows loop."""
    if SIMULATED:
        return 2
    key = (id(kernel), device, shared, threads)
    if key not in _EXCHANGE_GRIDS:
        from numba import typeof

        compiled = kernel.compile(tuple(typeof(a) for a in wrapped()))
        _EXCHANGE_GRIDS[key] = compiled.max_cooperative_grid_blocks(threads, shared)
    return _EXCHANGE_GRIDS[key]
