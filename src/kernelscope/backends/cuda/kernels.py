"""Python entry points of the CUDA C++ variants (validated by the catalog first).

The tuned kernels take their launch shapes as arguments; the defaults are the
constants below, so scripts/gpu/tune_cuda.py sweeps them without rebuilding.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import torch

from kernelscope.backends import WIDE_DRAM_GBPS_PER_SM
from kernelscope.backends.cuda.build import extension
from kernelscope.backends.device import DeviceFacts

# square_vec4, gelu_vec4: tiles of threads x unroll 16-byte vectors, a block a tile, one lap of blocks
# (blocks_per_sm 0; -k: k blocks an SM striding over the tiles; k > 0: the grid-stride loop, one
# resident wave of k blocks an SM). On an H100 the grid-stride wave stayed at 92-94% of copy
# bandwidth at 2^26 and 2^28 elements in every configuration; torch's one-lap launch read 99-100%.
# 128 threads: on the H200 128-thread tiles read about 3 points more of copy than 256 at both sweep sizes; on
# the H100 the two are level (tune_cuda --quick).
ELEMENTWISE_THREADS = 128
ELEMENTWISE_BLOCKS_PER_SM = 0  # one lap: n / (128 x 4 x 16 B) blocks, 16 of them resident an SM (32 registers)
ELEMENTWISE_UNROLL = 4  # 16-byte loads a thread before its first store: a 16 KiB tile a block
ELEMENTWISE_SMALL_MIN_THREADS = 128  # the smallest tile a small input gets: 128 threads x 1 vector (elementwise_shape)

# mean: x read with streaming loads (__ldcs) or through the read-only path (__ldg); tune_cuda.py times both.
# Streaming reads about 2 points more of copy at 2^24 on the H100 (83.7% against 81.5%; mean-compile 85.6%).
MEAN_STREAMING = True
# The grid: at most this many 512-thread blocks an SM (mean.cu's mean_partial_count); 3 is the fastest of 2-4 at
# 2^24 on the H100 (26.25 us, mean-compile 26.40).
MEAN_BLOCKS_PER_SM = 3
MEAN_UNROLL = 4  # 16-byte loads a thread issues a lap before adding them (4 or 8: the kernels mean.cu builds)

# softmax: the launch shape from the row count, width and element size (softmax_plan), from an H100 sweep.
SOFTMAX_WARP_MAX_COLS = 1024  # rows up to this wide: one warp a row ...
SOFTMAX_WARP_MAX_COLS_F32 = 512  # ... but float32 rows of 513-1024: a 128-thread block each (4.29 vs 4.65 us
SOFTMAX_NARROW_BLOCK_THREADS = 128  # at 1024x1024, 47.7 vs 48.6 us at 16384x1000; bfloat16 stays on warps)
SOFTMAX_WARP_THREADS = 128  # warp strategy: 4 rows a block
SOFTMAX_BLOCK_EPT = 32  # block strategy: elements a thread holds (threads = slice / this, 256 to 1024)
SOFTMAX_BLOCK_MIN_THREADS = 256  # 4096 columns: 256 threads read 92.5% of copy, 128 threads 89.7%
SOFTMAX_CLUSTER_EPT_F32 = 64  # float32 slices of a cluster: 64 elements a thread (512x50257: 256 threads
#                               78.7% vs 512 threads 67.8%); bfloat16 keeps SOFTMAX_BLOCK_EPT
SOFTMAX_BLOCK_MAX_COLS = 16384  # wider rows are split across a cluster (a block: 64 KiB of float32 registers)
SOFTMAX_BLOCK_MAX_COLS_F32_C8 = 32768  # float32 past a cluster of 8: 512 threads x 64 (64x262144: cluster 8,
#                                        65.1% vs cluster 16, 62.3%)
SOFTMAX_CLUSTER_FILL = 2  # few rows: split across a cluster until rows x cluster >= this x SMs ...
SOFTMAX_MIN_SLICE = 2048  # ... as long as each block keeps this many elements
SOFTMAX_MAX_CLUSTER = 16  # H100 allows 16 (non-portable); 8 is portable
SOFTMAX_LOOP_THREADS = 1024  # rows wider than 16 blocks hold in registers
# The wide rows on the H100 (tune_cuda.py --quick): float32 rows split over 8 blocks or more are faster in the loop
# kernel (512 threads, clusters of 16) than in the register-held cluster, and slower in the pipe kernel; bfloat16
# rows split over a cluster are fastest in the pipe kernel at 256 threads.
SOFTMAX_F32_LOOP_FROM_CLUSTER = 8  # float32: a cluster this large or larger -> the loop kernel ...
SOFTMAX_F32_LOOP = (512, 16)  # ... with these threads and cluster, and on a wide-DRAM GPU (below) with these:
SOFTMAX_F32_LOOP_WIDE_DRAM = (512, 8)
# 64x262144 float32 (tune_wide_rows.py): 512 x 8 is the fastest shape on the H200, 512 x 16 on the H100.
# bfloat16 rows split over this many blocks or more take the loop kernel in a persistent grid (a cluster takes rows
# in turn), SOFTMAX_BF16_LOOP's threads and cluster: at 64x262144 it beats the pipe kernel and the non-persistent
# loop on the H100 and the H200 (tune_wide_rows.py --sweep; one H100 box of three read the pipe kernel ahead).
SOFTMAX_BF16_LOOP_FROM_CLUSTER = 16
SOFTMAX_BF16_LOOP = (512, 8)
SOFTMAX_PIPE_THREADS = 256  # bfloat16 rows split over a cluster: the pipe kernel, 256 threads, the same cluster
# ... unless the cluster is this small or smaller: then the ring kernel (256 threads, 2 stages), which keeps the
# slices of a block's next rows in flight: ahead of the pipe at 512x50257 bfloat16 (cluster 4) on the H100, behind
# it at 64x262144 (cluster 16).
SOFTMAX_BF16_RING_MAX_CLUSTER = 4
# A GPU whose DRAM asks each SM for this many GB/s or more (its peak from the device's attributes / SMs) gives a
# float32 row of a block each half the elements a thread of the block plan, twice the threads, up to 1024: more
# bytes in flight an SM. The attributes give the H200 4,814 GB/s, 36.5 an SM; the H100 3.35 TB/s, about 25.
# On the H200 float32 reads 95.6% of copy at 8192x8192 as 512 threads x 16 against 88.1% as 256 x 32, and about
# 98% at 16384x16384 as 1024 x 16 (tune_wide_rows.py --sweep-set lone); bfloat16 keeps the block plan, whose
# 256 threads beat 512.
SOFTMAX_WIDE_DRAM_GBPS_PER_SM = WIDE_DRAM_GBPS_PER_SM  # the line both backends' softmax plans read
SOFTMAX_LONE_EPT_WIDE_DRAM = 16
# Rows too wide for one block's registers whose slice fits one stage of shared memory (226 KiB) take the ring of
# one stage, 512 threads a block: float32 over the same cluster (2 to 4 blocks), bfloat16 over a cluster of
# SOFTMAX_BF16_RING1_CLUSTER when the rows fill the SMs. At 512x50257 on the H100 (tune_wide_rows.py) it reads
# about 5 points more of copy than the cluster plan in float32 and 12 more than the ring of 2 stages in bfloat16;
# at 64x262144 (a 1 MiB row: clusters of 5 to 16) the loop kernel is faster.
SOFTMAX_RING1_THREADS = 512
# 512x50257 bfloat16 in the ring of one stage over 2 blocks, not 1: about 2 points more of copy on the H100 and
# the H200 (tune_wide_rows.py).
SOFTMAX_BF16_RING1_CLUSTER = 2
# The ring of one stage is launched in its one-exp form, "ring1e": the sum pass stores its exps over the stage
# (float32 exactly; bfloat16 rounded there once more, so an output is within one bfloat16 ulp, not half of one),
# the write pass scales them: at 512x50257 it is ahead of ring1 in bfloat16 on the H100 and the H200 and level in
# float32 (floors.py --kernels).
# Its stage is the block's slice, not rounded to whole vectors a thread (softmax.cu, ring_bytes): the same
# 512x50257 launches, four blocks an SM where the rounded stage fits three; ring_stage_probe.py's A/B is in softmax.cu.
SOFTMAX_RING1_STRATEGY = "ring1e"


def _strategies(path: Path) -> dict[str, int]:
    """Plan name -> launch code, from the list the C++ launcher's enum is made of (softmax_strategies.def)."""
    codes: dict[str, int] = {}
    enums: dict[str, int] = {}
    for line in path.read_text().splitlines():
        if m := re.match(r"SOFTMAX_STRATEGY\((\w+), (\w+), (\d+)\)", line):
            enums[m.group(1)] = codes[m.group(2)] = int(m.group(3))
        elif m := re.match(r"SOFTMAX_ALIAS\((\w+), (\w+)\)", line):
            codes[m.group(1)] = enums[m.group(2)]
    return codes


SOFTMAX_STRATEGIES = _strategies(Path(__file__).with_name("softmax_strategies.def"))  # plan name -> launch code
SOFTMAX_RING_STAGES = {"ring1": 1, "ring1e": 1, "ring": 2, "ring3": 3}
SOFTMAX_RING_MAX_BYTES = 226 * 1024  # sm_90: 227 KiB a block, less 1 KiB static (softmax.cu: SOFTMAX_RING_MAX_BYTES)


class SoftmaxPlan(NamedTuple):
    strategy: str  # "warp", "block", "cluster", "loop", "loopp" (the loop kernel's clusters persistent, taking rows
    #                in turn), "pipe" (persistent clusters, the next row prefetched into
    #                shared memory) or "ring1"/"ring"/"ring3" (persistent clusters, a block's slices of its next 1,
    #                2 or 3 rows in a ring of stages of shared memory; "ring1e": ring1 with its exps stored)
    threads: int  # a block's threads (warp: rows a block = threads / 32)
    cluster: int  # blocks a row is split across (1: no cluster)


def _next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


def floats_per_thread(cols: int, itemsize: int, lanes: int, cluster: int = 1) -> int:
    """Elements a thread of the register-held kernels holds; launch_softmax rounds the same way."""
    per_pack = 16 // itemsize
    vectors_per_block = -(-(cols // per_pack) // cluster)
    return -(-vectors_per_block // lanes) * per_pack


def register_capacity(threads: int) -> int:
    """The most elements a thread of softmax_block_kernel holds: 64 registers a thread at 1024 threads, 128 at 512."""
    return 32 if threads > 512 else 64


def ring_bytes(cols: int, itemsize: int, threads: int, cluster: int, stages: int) -> int:
    """Shared memory a block of the ring kernel takes: ``stages`` slices of its rows, 16 bytes a vector, whatever
    its ``threads`` (softmax.cu sizes a stage to the slice, not to whole vectors a thread)."""
    return stages * -(-(cols // (16 // itemsize)) // cluster) * 16


def pipe_capacity(threads: int) -> int:
    """The most elements a thread of softmax_pipe_kernel holds: 32 up to 512 threads, 64 up to 256 (one block an SM:
    the prefetch needs the registers of the current row and the next row's addresses); 0 past 512 threads."""
    return 64 if threads <= 256 else 32 if threads <= 512 else 0


def softmax_plan(rows: int, cols: int, sm_count: int, itemsize: int = 4, dram_gbps_per_sm: float = 0.0) -> SoftmaxPlan:
    """Strategy, threads and cluster size of softmax-cuda for a (rows, cols) input.

    Narrow rows: a warp each (float32 rows of 513 to 1024: a 128-thread block
    each). Otherwise a block each (threads chosen so a thread holds about
    SOFTMAX_BLOCK_EPT elements, 256 threads at least), split across a cluster of
    2 to 16 blocks when a row is wider than one block holds or when there are
    too few rows to give every SM SOFTMAX_CLUSTER_FILL blocks. In a cluster a
    float32 thread holds about 64 elements, and float32 slices grow to 32768
    before the cluster goes past 8. Rows wider than 16 blocks hold in registers
    loop over memory instead, and so do float32 rows split over 8 blocks or
    more. A row wider than a block's registers whose slice fits one stage of shared memory takes the ring
    kernel of one stage (SOFTMAX_RING1_STRATEGY, SOFTMAX_RING1_THREADS): float32 over its cluster, bfloat16 over
    SOFTMAX_BF16_RING1_CLUSTER blocks where the rows fill the SMs. Other bfloat16 rows split over a cluster of
    up to 4 take the ring kernel, over larger clusters the pipe kernel, and over 16 the persistent loop kernel
    (SOFTMAX_BF16_LOOP). Where the DRAM's peak bandwidth an SM
    (``dram_gbps_per_sm``) reaches SOFTMAX_WIDE_DRAM_GBPS_PER_SM, a float32 row of a block each is held
    SOFTMAX_LONE_EPT_WIDE_DRAM elements a thread, up to 1024 threads, and the loop kernel's float32 rows take
    SOFTMAX_F32_LOOP_WIDE_DRAM. The thresholds are H100 and H200 sweeps' (scripts/gpu/tune_cuda.py,
    scripts/gpu/tune_wide_rows.py).
    """
    f32 = itemsize == 4
    if cols <= (SOFTMAX_WARP_MAX_COLS_F32 if f32 else SOFTMAX_WARP_MAX_COLS):
        return SoftmaxPlan("warp", SOFTMAX_WARP_THREADS, 1)
    if cols <= SOFTMAX_WARP_MAX_COLS:
        return SoftmaxPlan("block", SOFTMAX_NARROW_BLOCK_THREADS, 1)

    def max_slice(cluster: int) -> int:
        return SOFTMAX_BLOCK_MAX_COLS_F32_C8 if f32 and cluster >= 8 else SOFTMAX_BLOCK_MAX_COLS

    cluster = 1
    while cluster < SOFTMAX_MAX_CLUSTER and (
            cols > cluster * max_slice(cluster)
            or (rows * cluster < SOFTMAX_CLUSTER_FILL * sm_count and cols >= 2 * cluster * SOFTMAX_MIN_SLICE)):
        cluster *= 2
    slice_cols = -(-cols // cluster)
    if cluster > 1 and f32:
        threads = min(512, max(128, _next_pow2(-(-slice_cols // SOFTMAX_CLUSTER_EPT_F32))))
    else:
        threads = min(1024, max(128 if cluster > 1 else SOFTMAX_BLOCK_MIN_THREADS,
                                _next_pow2(-(-slice_cols // SOFTMAX_BLOCK_EPT))))
    if floats_per_thread(cols, itemsize, threads, cluster) > register_capacity(threads):
        return SoftmaxPlan("loop", SOFTMAX_LOOP_THREADS, cluster)
    if f32 and cluster >= SOFTMAX_F32_LOOP_FROM_CLUSTER:
        wide_dram = dram_gbps_per_sm >= SOFTMAX_WIDE_DRAM_GBPS_PER_SM
        return SoftmaxPlan("loop", *(SOFTMAX_F32_LOOP_WIDE_DRAM if wide_dram else SOFTMAX_F32_LOOP))
    if cols > SOFTMAX_BLOCK_MAX_COLS:  # too wide for a block's registers: one stage of shared memory, if it holds
        if f32 and ring_bytes(cols, itemsize, SOFTMAX_RING1_THREADS, cluster, 1) <= SOFTMAX_RING_MAX_BYTES:
            return SoftmaxPlan(SOFTMAX_RING1_STRATEGY, SOFTMAX_RING1_THREADS, cluster)
        if (not f32 and rows >= sm_count and ring_bytes(cols, itemsize, SOFTMAX_RING1_THREADS,
                                                        SOFTMAX_BF16_RING1_CLUSTER, 1) <= SOFTMAX_RING_MAX_BYTES):
            return SoftmaxPlan(SOFTMAX_RING1_STRATEGY, SOFTMAX_RING1_THREADS, SOFTMAX_BF16_RING1_CLUSTER)
    if not f32 and cluster >= SOFTMAX_BF16_LOOP_FROM_CLUSTER:
        return SoftmaxPlan("loopp", *SOFTMAX_BF16_LOOP)
    if (not f32 and 1 < cluster <= SOFTMAX_BF16_RING_MAX_CLUSTER
            and ring_bytes(cols, itemsize, SOFTMAX_PIPE_THREADS, cluster, 2) <= SOFTMAX_RING_MAX_BYTES):
        return SoftmaxPlan("ring", SOFTMAX_PIPE_THREADS, cluster)
    if not f32 and cluster > 1 and (floats_per_thread(cols, itemsize, SOFTMAX_PIPE_THREADS, cluster)
                                    <= pipe_capacity(SOFTMAX_PIPE_THREADS)):
        return SoftmaxPlan("pipe", SOFTMAX_PIPE_THREADS, cluster)
    if f32 and cluster == 1 and dram_gbps_per_sm >= SOFTMAX_WIDE_DRAM_GBPS_PER_SM:
        threads = min(1024, max(threads, _next_pow2(-(-cols // SOFTMAX_LONE_EPT_WIDE_DRAM))))
    return SoftmaxPlan("cluster" if cluster > 1 else "block", threads, cluster)


@lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


@lru_cache(maxsize=None)
def dram_gbps_per_sm(device_index: int) -> float:
    """The DRAM's peak bandwidth (GB/s, from the device's attributes) over its SMs; 0 where the driver does not say."""
    return extension().dram_peak_gbps(device_index) / _sm_count(device_index)


@lru_cache(maxsize=None)
def loop_resident_clusters(device_index: int, itemsize: int, threads: int, cluster: int) -> int:
    """Clusters of the loop kernel (``threads`` a block, ``cluster`` blocks) that fit on the GPU at once."""
    return extension().softmax_loop_resident_clusters_on(device_index, itemsize == 2, threads, cluster)


def gpu_facts(device_index: int) -> DeviceFacts:
    """What softmax's launch reads of the GPU at ``device_index``: its SMs and its DRAM's bandwidth an SM."""
    return DeviceFacts(f"cuda:{device_index}", _sm_count(device_index),
                       dram_gbps_per_sm=dram_gbps_per_sm(device_index))


def softmax_launch(rows: int, cols: int, itemsize: int, facts: DeviceFacts) -> SoftmaxPlan:
    """softmax_plan on the GPU of ``facts``: what a call launches there (and what `kernelscope plan` shows)."""
    return softmax_plan(rows, cols, facts.sm_count, itemsize, facts.dram_gbps_per_sm)


def device_softmax_plan(rows: int, cols: int, itemsize: int, device_index: int = 0) -> SoftmaxPlan:
    """softmax_plan for the GPU at ``device_index``: its SMs and its DRAM's bandwidth an SM."""
    return softmax_launch(rows, cols, itemsize, gpu_facts(device_index))


@lru_cache(maxsize=1024)
def _softmax_launch(rows: int, cols: int, itemsize: int, device_index: int) -> tuple[int, int, int]:
    plan = device_softmax_plan(rows, cols, itemsize, device_index)
    return SOFTMAX_STRATEGIES[plan.strategy], plan.threads, plan.cluster


def _out(x, out):
    return torch.empty_like(x) if out is None else out


def square_lecture(x, out=None):
    return extension().square_lecture(x, _out(x, out))


def elementwise_shape(n: int, itemsize: int, sm_count: int) -> tuple[int, int]:
    """(threads, unroll) of the one-lap tiled launch for ``n`` elements: the defaults while their tiles give
    every SM a block; a smaller input gets smaller tiles (unroll halved down to 1, then threads down to
    ELEMENTWISE_SMALL_MIN_THREADS), so its few tiles spread over more SMs rather than one SM moving them all.
    On the H100 square-cuda-vec4 at 64x64 (one 256 x 4 tile) read 1.41 us in graph mode against the lecture
    kernel's sixteen one-element blocks at 1.06, where a launch-bound size should come within 1.3x of an empty
    kernel's 0.81.
    """
    vectors = -(-n // (16 // itemsize))
    threads, unroll = ELEMENTWISE_THREADS, ELEMENTWISE_UNROLL
    while -(-vectors // (threads * unroll)) < sm_count and (unroll > 1 or threads > ELEMENTWISE_SMALL_MIN_THREADS):
        if unroll > 1:
            unroll //= 2
        else:
            threads //= 2
    return threads, unroll


def elementwise_launch(n: int, itemsize: int, facts: DeviceFacts) -> tuple[int, int]:
    """elementwise_shape on the GPU of ``facts`` (its SMs)."""
    return elementwise_shape(n, itemsize, facts.sm_count)


@lru_cache(maxsize=1024)
def _elementwise_launch(n: int, itemsize: int, device_index: int) -> tuple[int, int]:
    return elementwise_launch(n, itemsize, DeviceFacts(f"cuda:{device_index}", _sm_count(device_index)))


def _tiles(x, threads: int | None, unroll: int | None) -> tuple[int, int]:
    """(threads, unroll) as given (the tuning script's sweep), else elementwise_shape's for x."""
    if threads is None or unroll is None:
        auto = _elementwise_launch(x.numel(), x.element_size(), x.device.index or 0)
        return threads or auto[0], unroll or auto[1]
    return threads, unroll


def square_vec4(x, out=None, threads=None, blocks_per_sm=ELEMENTWISE_BLOCKS_PER_SM, unroll=None):
    threads, unroll = _tiles(x, threads, unroll)
    return extension().square_vec4(x, _out(x, out), threads, blocks_per_sm, unroll)


def gelu_lecture(x, out=None):
    return extension().gelu_lecture(x, _out(x, out))


def gelu_vec4(x, out=None, threads=None, blocks_per_sm=ELEMENTWISE_BLOCKS_PER_SM, unroll=None):
    threads, unroll = _tiles(x, threads, unroll)
    return extension().gelu_vec4(x, _out(x, out), threads, blocks_per_sm, unroll)


def softmax(x, out=None, plan: SoftmaxPlan | None = None, module=None):
    """Row softmax; plan (strategy, threads, cluster) overrides softmax_plan's choice; module: another build of
    the extension (a measurement build: build.extension(softmax=...), floors.py's)."""
    rows, cols = x.shape
    if plan is None:
        strategy, threads, cluster = _softmax_launch(rows, cols, x.element_size(), x.device.index)
    else:
        strategy, threads, cluster = SOFTMAX_STRATEGIES[plan[0]], plan[1], plan[2]
    if module is not None:  # a measurement build
        return module.softmax(x, _out(x, out), strategy, threads, cluster)
    return extension().softmax(x, _out(x, out), strategy, threads, cluster)


def mean(x, out=None, streaming=MEAN_STREAMING, blocks_per_sm=MEAN_BLOCKS_PER_SM, unroll=MEAN_UNROLL):
    y = torch.empty((), device=x.device, dtype=x.dtype) if out is None else out
    return extension().mean(x, y, streaming, blocks_per_sm, unroll)


# --- kernelscope plan: what a call launches -------------------------------------------------------
# The launch shape comes from the functions the calls above use (softmax_launch, elementwise_launch, the mean
# constants); the grids are what the C++ launchers work out from it, which choose nothing: softmax.cu's
# launch_softmax_t (the warp kernel's rows a block, rows x cluster, the register sizes), mean.cu's
# mean_partial_count, pack16.cuh's tiled_grid. tests/test_plan.py holds each line below to its line there.

_CU = "src/kernelscope/backends/cuda/"
MEAN_THREADS = 512  # mean.cu: MEAN_THREADS
_MEAN_ONE_BLOCK = 16 * MEAN_THREADS  # mean.cu: MEAN_ONE_BLOCK
_WARP_EPTS = (8, 16, 32)  # softmax_launch.cuh: softmax_warp_kernel<T, 8 | 16 | 32>
_BLOCK_EPTS = (8, 16, 32, 64)  # softmax_launch.cuh: launch_block_rows<T, 8 | 16 | 32 | 64> (64: threads <= 512)
_PIPE_EPTS = (16, 32, 64)  # softmax_launch.cuh: softmax_pipe_kernel<T, 16 | 32 | 64>
# The file that holds each softmax kernel: a Launch's source
_SOFTMAX_FILES = {"softmax_warp_kernel": "softmax_warp.cuh", "softmax_block_kernel": "softmax_block.cuh",
                  "softmax_exact_kernel": "softmax_block.cuh", "softmax_loop_kernel": "softmax_loop.cuh",
                  "softmax_pipe_kernel": "softmax_pipe.cuh", "softmax_ring_kernel": "softmax_ring.cuh"}


def _softmax_source(kernel: str) -> str:
    return _CU + _SOFTMAX_FILES[kernel]


def _itemsize(dtype: str) -> int:
    from kernelscope.ops import itemsize

    return itemsize(dtype)


def _template(sizes: tuple[int, ...], need: int) -> int:
    """The smallest register size the launcher instantiates that holds ``need`` elements a thread."""
    return next(size for size in sizes if need <= size)


def mean_partial_count(n: int, sm_count: int, blocks_per_sm: int) -> int:
    """mean.cu's mean_partial_count: one block up to MEAN_ONE_BLOCK elements, else a block for every 4 x 512
    elements, at most SMs x blocks_per_sm."""
    if n <= _MEAN_ONE_BLOCK:
        return 1
    return max(1, min(-(-n // (4 * MEAN_THREADS)), sm_count * blocks_per_sm))


def tiled_grid(n: int, per_pack: int, threads: int, unroll: int, blocks_per_sm: int, sm_count: int) -> int:
    """pack16.cuh's tiled_grid: a block a tile of threads x unroll vectors (blocks_per_sm 0: one lap), or at most
    SMs x blocks_per_sm blocks striding over the tiles."""
    tiles = -(-(-(-n // per_pack)) // (threads * unroll))
    if blocks_per_sm > 0:
        tiles = min(tiles, sm_count * blocks_per_sm)
    return max(1, tiles)


def resident_grid(items: int, threads: int, blocks_per_sm: int, sm_count: int) -> int:
    """pack16.cuh's resident_grid: the grid-stride kernels' blocks, enough for the items, one resident wave at most."""
    return max(1, min(-(-items // threads), sm_count * blocks_per_sm))


def softmax_plan_of(shape: tuple[int, int], dtype: str, facts: DeviceFacts):
    """softmax-cuda's launch at ``shape`` on the GPU of ``facts``: softmax_launch's plan, as launch_softmax runs it."""
    from kernelscope.plan import Launch, LaunchPlan

    rows, cols = shape
    itemsize = _itemsize(dtype)
    plan = softmax_launch(rows, cols, itemsize, facts)
    strategy, threads, cluster = plan
    lanes = 32 if strategy == "warp" else threads
    need = floats_per_thread(cols, itemsize, lanes, cluster)
    fields = {"elements a thread": need}
    if strategy == "warp":
        ept = _template(_WARP_EPTS, need)
        launch = Launch("softmax_warp_kernel", _softmax_source("softmax_warp_kernel"), (-(-rows // (threads // 32)),),
                        threads, note=f"{threads // 32} rows a block, a warp a row")
        fields.update({"registers a thread (EPT)": ept, "persistent": False})
    elif strategy in ("block", "cluster"):
        ept = _template(_BLOCK_EPTS, need)
        exact = cluster == 1 and cols == ept * threads  # and x, y 16-byte aligned, as torch allocates them
        kernel = "softmax_exact_kernel" if exact else "softmax_block_kernel"
        launch = Launch(kernel, _softmax_source(kernel), (rows * cluster,), threads, cluster,
                        note=f"{rows} rows x {cluster} block{'s' if cluster > 1 else ''} a row")
        fields.update({"registers a thread (EPT)": ept, "persistent": False})
    elif strategy == "loop":
        launch = Launch("softmax_loop_kernel", _softmax_source("softmax_loop_kernel"), (rows * cluster,), threads,
                        cluster, note=f"{rows} rows x {cluster} blocks a row")
        fields = {"persistent": False}
    else:  # the persistent kernels: as many clusters as fit at once (the driver's occupancy query), one a row at most
        stages = SOFTMAX_RING_STAGES.get(strategy, 0)
        if strategy == "loopp":
            kernel, fields = "softmax_loop_kernel", {}
        elif strategy == "pipe":
            kernel = "softmax_pipe_kernel"
            fields.update({"registers a thread (EPT)": _template(_PIPE_EPTS, need),
                           "shared memory a block": f"{need // (16 // itemsize) * threads * 16} B (the next row)"})
        else:
            kernel = "softmax_ring_kernel"
            fields.update({"stages": stages, "exps stored": strategy == "ring1e",
                           "shared memory a block": f"{ring_bytes(cols, itemsize, threads, cluster, stages)} B"})
        launch = Launch(kernel, _softmax_source(kernel), None, threads, cluster, most=rows * cluster,
                        note=f"min({rows} rows, clusters resident at once) x {cluster} blocks: persistent, "
                             "the clusters that fit from the driver's occupancy query")
        fields["persistent"] = True
    return LaunchPlan(strategy, (launch,), fields)


def mean_plan_of(shape: tuple[int, ...], dtype: str, facts: DeviceFacts):
    """mean-cuda's launch: MEAN_BLOCKS_PER_SM, MEAN_UNROLL and MEAN_STREAMING, as launch_mean runs them."""
    from kernelscope.plan import Launch, LaunchPlan

    n = 1
    for s in shape:
        n *= s
    blocks = mean_partial_count(n, facts.sm_count, MEAN_BLOCKS_PER_SM)
    launch = Launch("mean_kernel", _CU + "mean.cu", (blocks,), MEAN_THREADS,
                    note="one block: its sum is the mean" if blocks == 1 else
                    f"at most {MEAN_BLOCKS_PER_SM} blocks an SM; the last block to finish adds the partials")
    return LaunchPlan(None, (launch,), {"16-byte loads a lap": MEAN_UNROLL, "streaming loads (__ldcs)": MEAN_STREAMING,
                                        "grid-stride loop": True})


def _elementwise_plan_of(op: str, shape: tuple[int, ...], dtype: str, facts: DeviceFacts):
    """square_vec4's and gelu_vec4's launch (their launch_*_vec4_t): elementwise_launch's tiles, a block a tile
    (ELEMENTWISE_BLOCKS_PER_SM 0: one lap; -k: k blocks an SM over the tiles), or the grid-stride kernel (k > 0)."""
    from kernelscope.plan import Launch, LaunchPlan

    n = 1
    for s in shape:
        n *= s
    itemsize = _itemsize(dtype)
    threads, unroll = elementwise_launch(n, itemsize, facts)
    per_pack, k = 16 // itemsize, ELEMENTWISE_BLOCKS_PER_SM
    if k > 0:
        launch = Launch(f"{op}_vec4_kernel", f"{_CU}{op}.cu", (resident_grid(-(-n // per_pack), threads, k,
                                                                            facts.sm_count),),
                        threads, note=f"grid-stride, at most {k} blocks an SM")
    else:
        launch = Launch(f"{op}_tiled_kernel", f"{_CU}{op}.cu",
                        (tiled_grid(n, per_pack, threads, unroll, -k, facts.sm_count),), threads,
                        note=f"a block a tile of {threads} x {unroll} 16-byte vectors"
                             + (", one lap" if k == 0 else f", {-k} blocks an SM striding over them"))
    return LaunchPlan(None, (launch,), {"16-byte loads a thread": unroll, "elements a thread": unroll * per_pack,
                                        "persistent": k > 0})


def square_vec4_plan_of(shape: tuple[int, ...], dtype: str, facts: DeviceFacts):
    """square-cuda-vec4's launch at ``shape`` on the GPU of ``facts``."""
    return _elementwise_plan_of("square", shape, dtype, facts)


def gelu_vec4_plan_of(shape: tuple[int, ...], dtype: str, facts: DeviceFacts):
    """gelu-cuda-vec4's launch at ``shape`` on the GPU of ``facts``."""
    return _elementwise_plan_of("gelu", shape, dtype, facts)
