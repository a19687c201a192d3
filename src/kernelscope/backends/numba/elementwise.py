"""Numba CUDA elementwise maps, shared by square_flat and gelu: y[i] = f(x[i]) on the array flattened to 1-D.

Two modes, both with ``unroll`` independent loads a thread issued before any store:

* tiled (the default): one lap, no loop. Block b owns the contiguous tile
  [b * threads * unroll, (b + 1) * threads * unroll); thread t loads elements
  tile + t + u * threads for u < unroll (each load a coalesced warp access),
  and the grid is ceil(n / tile) blocks, as torch and Triton launch theirs.
* grid-stride: a grid of a few resident blocks per SM, each thread walking the
  array in steps of the whole grid.

``f`` is a ``@cuda.jit(device=True)`` function of one float32. Each (f, launch
shape) compiles once; the kernels are named after ``f`` (``square_tiled``).
"""

from dataclasses import dataclass
from functools import cache

import torch
from numba import cuda, float32

from kernelscope.backends.numba import as_array, stream
from kernelscope.backends.numba import direct as numba_direct
from kernelscope.backends.device import DeviceFacts
from kernelscope.backends.numba.common import (SIM_THREADS, SIMULATED, check_threads, gpu_facts, jit_bounded,
                                                launch_blocks, resident_blocks_per_sm)


@dataclass(frozen=True)
class Defaults:
    """An op's launch defaults (its module's constants; scripts/gpu/tune_numba.py sweeps them)."""

    threads: int
    blocks_per_sm: int  # the launch bound; in grid-stride mode also the grid
    unroll: int
    tiled: bool


def _named(fn, name: str):
    fn.__name__ = fn.__qualname__ = name  # the name Numba's PTX and the profiler show
    return fn


@cache
def grid_stride_kernel(f, name: str, threads: int, blocks_per_sm: int, unroll: int):
    """The grid-stride kernel of ``f`` for one launch shape."""

    # launch_bounds: ptxas keeps registers low enough for blocks_per_sm blocks an SM,
    # so the whole grid is resident at once.
    def kernel(x, y):
        n = x.size
        stride = cuda.gridsize(1)
        i = cuda.grid(1)
        v = cuda.local.array(unroll, float32)  # registers: unroll is a compile-time constant
        # Full steps: all `unroll` elements of the thread are in range, every load
        # issued before the first store, so they are in flight together.
        while i + (unroll - 1) * stride < n:
            for u in range(unroll):
                v[u] = x[i + u * stride]
            for u in range(unroll):
                y[i + u * stride] = f(v[u])
            i += unroll * stride
        while i < n:  # the tail, one element at a time
            y[i] = f(x[i])
            i += stride

    return jit_bounded(threads, blocks_per_sm)(_named(kernel, f"{name}_flat"))


@cache
def tiled_kernel(f, name: str, threads: int, blocks_per_sm: int, unroll: int):
    """The tiled one-lap kernel of ``f`` for one launch shape."""

    def kernel(x, y):
        n = x.size
        i = cuda.blockIdx.x * (threads * unroll) + cuda.threadIdx.x
        v = cuda.local.array(unroll, float32)
        if cuda.blockIdx.x * (threads * unroll) + threads * unroll <= n:  # a full tile: no bounds checks
            for u in range(unroll):
                v[u] = x[i + u * threads]
            for u in range(unroll):
                y[i + u * threads] = f(v[u])
        else:  # the last, partial tile
            for u in range(unroll):
                if i + u * threads < n:
                    y[i + u * threads] = f(x[i + u * threads])

    return jit_bounded(threads, blocks_per_sm)(_named(kernel, f"{name}_tiled"))


@dataclass(frozen=True)
class Shape:
    """A launch shape worked out: the kernel compiled for it, its block, and how its grid follows from n."""

    kernel: object
    threads: int
    per_block: int  # elements a block covers in one lap: threads * unroll
    tiled: bool
    blocks_per_sm: int

    def blocks(self, device: torch.device, n: int) -> int:
        facts = None if SIMULATED or self.tiled else gpu_facts(device.index or 0)
        return map_blocks(n, self.per_block, self.tiled, self.blocks_per_sm, facts)


def map_launch(defaults: Defaults, simulated: bool, threads: int | None = None, blocks_per_sm: int | None = None,
               unroll: int | None = None, tiled: bool | None = None) -> tuple[int, int, int, bool]:
    """(threads, blocks_per_sm, unroll, tiled) of a launch of a map: each argument given, else ``defaults``' (the
    simulator's own sizes there)."""
    threads = threads or (SIM_THREADS if simulated else defaults.threads)
    blocks_per_sm = resident_blocks_per_sm(threads, blocks_per_sm or defaults.blocks_per_sm)
    unroll = unroll or (2 if simulated else defaults.unroll)
    return threads, blocks_per_sm, unroll, defaults.tiled if tiled is None else tiled


def map_blocks(n: int, per_block: int, tiled: bool, blocks_per_sm: int, facts: DeviceFacts | None) -> int:
    """The grid of a map over n elements: one lap of tiles (a block a tile), or launch_blocks' grid-stride grid on
    the GPU of ``facts`` (None: the simulator's)."""
    if tiled:
        return -(-n // per_block)  # one lap: a block a tile
    return launch_blocks(facts, n, per_block, blocks_per_sm)


def launch_shape(f, name: str, defaults: Defaults, threads: int | None = None, blocks_per_sm: int | None = None,
                 unroll: int | None = None, tiled: bool | None = None) -> Shape:
    """The shape of a launch of ``f``'s map: map_launch's, with its kernel."""
    threads, blocks_per_sm, unroll, tiled = map_launch(defaults, SIMULATED, threads, blocks_per_sm, unroll, tiled)
    check_threads(threads)
    make = tiled_kernel if tiled else grid_stride_kernel
    return Shape(make(f, name, threads, blocks_per_sm, unroll), threads, threads * unroll, tiled, blocks_per_sm)


def launch(f, name: str, defaults: Defaults, x: torch.Tensor, out: torch.Tensor | None = None,
           threads: int | None = None, blocks_per_sm: int | None = None, unroll: int | None = None,
           tiled: bool | None = None, direct: bool = False) -> torch.Tensor:
    """y = f(x) elementwise with an explicit launch shape and mode (None: ``defaults``); ``direct``: launched
    through the driver after the first call (:mod:`kernelscope.backends.numba.direct`), not Numba's dispatcher."""
    return _map(launch_shape(f, name, defaults, threads, blocks_per_sm, unroll, tiled), x, out, direct)


def direct_map(f, name: str, defaults: Defaults):
    """``launch(f, name, defaults, x, out, direct=True)`` as a function of (x, out), its launch shape worked out
    on its first call and kept: what a call then costs is the tensor checks and the driver's launch."""
    shape: Shape | None = None

    def call(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        nonlocal shape
        if shape is None:
            shape = launch_shape(f, name, defaults)
        return _map(shape, x, out, direct=True)

    return call


def _map(shape: Shape, x: torch.Tensor, out: torch.Tensor | None, direct: bool) -> torch.Tensor:
    y = torch.empty_like(x) if out is None else out
    n = x.numel()
    if n == 0:
        return y
    if direct:
        numba_direct.launch_map(shape.kernel, shape.blocks(x.device, n), shape.threads, x, y)
    else:
        shape.kernel[shape.blocks(x.device, n), shape.threads, stream()](as_array(x.view(-1)), as_array(y.view(-1)))
    return y


def map_plan_of(name: str, defaults: Defaults, shape: tuple[int, ...], facts: DeviceFacts, note: str = ""):
    """A map's launch at ``shape`` on the GPU of ``facts`` (`kernelscope plan`): map_launch's defaults, map_blocks'
    grid; the kernel named as launch_shape names it."""
    from kernelscope.backends.launches import Launch, LaunchPlan

    n = 1
    for s in shape:
        n *= s
    threads, blocks_per_sm, unroll, tiled = map_launch(defaults, False)
    grid = map_blocks(n, threads * unroll, tiled, blocks_per_sm, facts)
    how = f"a block a tile of {threads} x {unroll} elements, one lap" if tiled else \
        f"grid-stride, at most {blocks_per_sm} blocks an SM"
    launch = Launch(f"{name}_tiled" if tiled else f"{name}_flat", "src/kernelscope/backends/numba/elementwise.py",
                    (grid,), threads, note=how + (f"; {note}" if note else ""))
    return LaunchPlan(None, (launch,), {"elements a thread": unroll, "launch bound (blocks an SM)": blocks_per_sm,
                                        "persistent": not tiled})
