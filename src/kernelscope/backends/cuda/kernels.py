"""Python entry points of the CUDA C++ variants (validated by the catalog first).

The tuned kernels take their launch shapes as arguments; the defaults are the
constants below, so scripts/gpu/tune_cuda.py sweeps them without rebuilding.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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

# softmax: softmax_plan's launch shape from the row count, width, element size and GPU. The sweeps behind each
# number are in results-proofs/: tuning-sweeps/h100-first-pass (the narrow and block rows), softmax-wide-rows (rows
# wider than a block, the cluster, loop, pipe and ring plans), softmax-cuda-h200 and tuning-sweeps (the wide-DRAM
# GPU's lone rows), softmax-floors (ring1e), softmax-ring-stage (the ring's stage size).
SOFTMAX_WARP_MAX_COLS = 1024  # rows up to this wide: a warp a row ...
SOFTMAX_WARP_MAX_COLS_F32 = 512  # ... but float32 rows of 513-1024: a block of this many threads a row, faster on
SOFTMAX_NARROW_BLOCK_THREADS = 128  # the H100 than the warps (bfloat16 stays on warps)
SOFTMAX_WARP_THREADS = 128  # warp strategy: 4 rows a block
SOFTMAX_BLOCK_EPT = 32  # block strategy: elements a thread holds (threads = slice / this, 256 to 1024)
SOFTMAX_BLOCK_MIN_THREADS = 256  # fewer threads, fewer bytes in flight: 128 read less of copy at 4096 columns
SOFTMAX_CLUSTER_EPT_F32 = 64  # float32 slices of a cluster: 64 elements a thread (half the threads of 32, faster
#                               at 512x50257); bfloat16 keeps SOFTMAX_BLOCK_EPT
SOFTMAX_BLOCK_MAX_COLS = 16384  # wider rows are split across a cluster (a block: 64 KiB of float32 registers)
SOFTMAX_BLOCK_MAX_COLS_F32_C8 = 32768  # float32 past a cluster of 8: 512 threads x 64 (fewer, larger blocks)
SOFTMAX_CLUSTER_FILL = 2  # few rows: split across a cluster until rows x cluster >= this x SMs ...
SOFTMAX_MIN_SLICE = 2048  # ... as long as each block keeps this many elements
SOFTMAX_MAX_CLUSTER = 16  # H100 allows 16 (non-portable); 8 is portable
SOFTMAX_LOOP_THREADS = 1024  # rows wider than 16 blocks hold in registers
# float32 rows split over this many blocks or more: the loop kernel, faster there than the register-held cluster
# and the pipe; its shape on the H100, and on a wide-DRAM GPU (below: the H200), where 8 blocks a row lead.
SOFTMAX_F32_LOOP_FROM_CLUSTER = 8
SOFTMAX_F32_LOOP = (512, 16)
SOFTMAX_F32_LOOP_WIDE_DRAM = (512, 8)
# bfloat16 rows split over this many blocks or more: the loop kernel in a persistent grid (a cluster takes rows in
# turn), ahead of the pipe and the one-cluster-a-row loop at 64x262144 on the H100 and the H200.
SOFTMAX_BF16_LOOP_FROM_CLUSTER = 16
SOFTMAX_BF16_LOOP = (512, 8)
SOFTMAX_PIPE_THREADS = 256  # other bfloat16 rows split over a cluster: the pipe kernel, 256 threads, that cluster ...
# ... or over a cluster this small or smaller, the ring kernel of 2 stages (256 threads), which keeps more rows in
# flight a block: ahead of the pipe at 4 blocks a row, behind it at 16.
SOFTMAX_BF16_RING_MAX_CLUSTER = 4
# A GPU whose DRAM asks each SM for this many GB/s or more (its peak from the device's attributes / SMs: the H200's
# 36.5, the H100's about 25) needs more bytes in flight an SM: a float32 row of a block each gets
# SOFTMAX_LONE_EPT_WIDE_DRAM elements a thread, twice the threads up to 1024 (bfloat16 keeps the block plan,
# whose 256 threads beat 512 there).
SOFTMAX_WIDE_DRAM_GBPS_PER_SM = WIDE_DRAM_GBPS_PER_SM  # the line both backends' softmax plans read
SOFTMAX_LONE_EPT_WIDE_DRAM = 16
# Rows too wide for one block's registers whose slice fits one stage of shared memory (226 KiB): the ring of one
# stage, 512 threads a block, float32 over the cluster its registers would need, bfloat16 over
# SOFTMAX_BF16_RING1_CLUSTER blocks (2 beat 1) where the rows fill the SMs. Ahead of the cluster plan and the ring of
# 2 stages at 512x50257; at 64x262144 the loop kernels are faster.
SOFTMAX_RING1_THREADS = 512
SOFTMAX_BF16_RING1_CLUSTER = 2
# The ring of one stage launches in its one-exp form, "ring1e": the sum pass stores its exps over the stage
# (float32 exactly; bfloat16 rounded once more, so an output is within one bfloat16 ulp, not half of one) and the
# write pass scales them. Ahead of ring1 in bfloat16, level in float32.
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
SOFTMAX_RING_MAX_BYTES = 226 * 1024  # sm_90: 227 KiB a block, less 1 KiB static (softmax_ring.cuh's)


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
    its ``threads`` (the launcher sizes a stage to the slice, not to whole vectors a thread: SoftmaxShipped)."""
    return stages * -(-(cols // (16 // itemsize)) // cluster) * 16


def pipe_capacity(threads: int) -> int:
    """The most elements a thread of softmax_pipe_kernel holds: 32 up to 512 threads, 64 up to 256 (one block an SM:
    the prefetch needs the registers of the current row and the next row's addresses); 0 past 512 threads."""
    return 64 if threads <= 256 else 32 if threads <= 512 else 0


class _Facts(NamedTuple):
    """What softmax_plan's rules read: the input, its GPU, and the cluster and threads a row held in registers takes."""

    rows: int
    cols: int
    itemsize: int
    sm_count: int
    wide_dram: bool  # the GPU's DRAM asks SOFTMAX_WIDE_DRAM_GBPS_PER_SM or more of each SM
    cluster: int  # blocks a row is split across in registers (_register_cluster)
    threads: int  # threads a block of that split (_register_threads)

    @property
    def f32(self) -> bool:
        return self.itemsize == 4

    @property
    def bf16(self) -> bool:
        return not self.f32

    @property
    def narrow(self) -> bool:  # a warp's row
        return self.cols <= (SOFTMAX_WARP_MAX_COLS_F32 if self.f32 else SOFTMAX_WARP_MAX_COLS)

    @property
    def wider_than_a_block(self) -> bool:
        return self.cols > SOFTMAX_BLOCK_MAX_COLS

    @property
    def fits_registers(self) -> bool:  # its register split holds it
        need = floats_per_thread(self.cols, self.itemsize, self.threads, self.cluster)
        return need <= register_capacity(self.threads)

    @property
    def fits_pipe(self) -> bool:  # the pipe kernel's registers hold its slice of the same cluster
        need = floats_per_thread(self.cols, self.itemsize, SOFTMAX_PIPE_THREADS, self.cluster)
        return need <= pipe_capacity(SOFTMAX_PIPE_THREADS)

    def fits_ring(self, threads: int, cluster: int, stages: int) -> bool:
        return ring_bytes(self.cols, self.itemsize, threads, cluster, stages) <= SOFTMAX_RING_MAX_BYTES


def _register_cluster(rows: int, cols: int, sm_count: int, f32: bool) -> int:
    """Blocks a row is split across to hold it in registers: doubled from 1 while a block's slice is wider than it
    holds, or while the rows give the SMs fewer than SOFTMAX_CLUSTER_FILL blocks each and every block would keep
    SOFTMAX_MIN_SLICE elements; 16 at most."""
    def max_slice(cluster: int) -> int:
        return SOFTMAX_BLOCK_MAX_COLS_F32_C8 if f32 and cluster >= 8 else SOFTMAX_BLOCK_MAX_COLS

    cluster = 1
    while cluster < SOFTMAX_MAX_CLUSTER and (
            cols > cluster * max_slice(cluster)
            or (rows * cluster < SOFTMAX_CLUSTER_FILL * sm_count and cols >= 2 * cluster * SOFTMAX_MIN_SLICE)):
        cluster *= 2
    return cluster


def _register_threads(cols: int, cluster: int, f32: bool) -> int:
    """A block's threads for its slice in registers: a float32 slice of a cluster SOFTMAX_CLUSTER_EPT_F32 elements a
    thread (128 to 512 threads), any other SOFTMAX_BLOCK_EPT (SOFTMAX_BLOCK_MIN_THREADS, in a cluster 128, to 1024)."""
    slice_cols = -(-cols // cluster)
    if cluster > 1 and f32:
        return min(512, max(128, _next_pow2(-(-slice_cols // SOFTMAX_CLUSTER_EPT_F32))))
    least = 128 if cluster > 1 else SOFTMAX_BLOCK_MIN_THREADS
    return min(1024, max(least, _next_pow2(-(-slice_cols // SOFTMAX_BLOCK_EPT))))


# A rule's threads or cluster: a number, or one of these functions of the input's facts.
def _split_cluster(f: _Facts) -> int:  # its register split's cluster
    return f.cluster


def _split_threads(f: _Facts) -> int:  # its register split's threads
    return f.threads


def _lone_row_threads(f: _Facts) -> int:  # SOFTMAX_LONE_EPT_WIDE_DRAM elements a thread, up to 1024 threads
    return min(1024, max(f.threads, _next_pow2(-(-f.cols // SOFTMAX_LONE_EPT_WIDE_DRAM))))


class _Rule(NamedTuple):
    strategy: str
    threads: int | Callable[[_Facts], int]
    cluster: int | Callable[[_Facts], int]
    when: Callable[[_Facts], bool]


_F32_LOOP_FROM, _BF16_LOOP_FROM = SOFTMAX_F32_LOOP_FROM_CLUSTER, SOFTMAX_BF16_LOOP_FROM_CLUSTER
_RING1, _RING1_THREADS, _BF16_RING1_CLUSTER = SOFTMAX_RING1_STRATEGY, SOFTMAX_RING1_THREADS, SOFTMAX_BF16_RING1_CLUSTER

# softmax_plan's rules, in order: the first whose condition holds gives (strategy, threads, cluster). The constants
# above say why each.
SOFTMAX_RULES = (
    # narrow rows: a warp a row; float32 rows of 513-1024 a block a row
    _Rule("warp", SOFTMAX_WARP_THREADS, 1, lambda f: f.narrow),
    _Rule("block", SOFTMAX_NARROW_BLOCK_THREADS, 1, lambda f: f.cols <= SOFTMAX_WARP_MAX_COLS),
    # a slice wider than 16 blocks' registers: the loop kernel, which holds none
    _Rule("loop", SOFTMAX_LOOP_THREADS, _split_cluster, lambda f: not f.fits_registers),
    # float32 split over 8 blocks or more: the loop kernel, shaped by the GPU's DRAM
    _Rule("loop", *SOFTMAX_F32_LOOP_WIDE_DRAM, lambda f: f.f32 and f.cluster >= _F32_LOOP_FROM and f.wide_dram),
    _Rule("loop", *SOFTMAX_F32_LOOP, lambda f: f.f32 and f.cluster >= _F32_LOOP_FROM),
    # wider than a block, its slice in one stage of shared memory: the ring of one stage, float32 over its split's
    # cluster, bfloat16 over SOFTMAX_BF16_RING1_CLUSTER blocks where the rows fill the SMs
    _Rule(_RING1, _RING1_THREADS, _split_cluster,
          lambda f: f.f32 and f.wider_than_a_block and f.fits_ring(_RING1_THREADS, f.cluster, 1)),
    _Rule(_RING1, _RING1_THREADS, _BF16_RING1_CLUSTER,
          lambda f: f.bf16 and f.wider_than_a_block and f.rows >= f.sm_count
          and f.fits_ring(_RING1_THREADS, _BF16_RING1_CLUSTER, 1)),
    # bfloat16 split across a cluster: over 16 blocks the persistent loop, up to 4 the ring of 2 stages, else the pipe
    _Rule("loopp", *SOFTMAX_BF16_LOOP, lambda f: f.bf16 and f.cluster >= _BF16_LOOP_FROM),
    _Rule("ring", SOFTMAX_PIPE_THREADS, _split_cluster,
          lambda f: f.bf16 and 1 < f.cluster <= SOFTMAX_BF16_RING_MAX_CLUSTER
          and f.fits_ring(SOFTMAX_PIPE_THREADS, f.cluster, 2)),
    _Rule("pipe", SOFTMAX_PIPE_THREADS, _split_cluster, lambda f: f.bf16 and f.cluster > 1 and f.fits_pipe),
    # the row in registers: a float32 row of a block on a wide-DRAM GPU in more threads; else its register split
    _Rule("block", _lone_row_threads, 1, lambda f: f.f32 and f.cluster == 1 and f.wide_dram),
    _Rule("cluster", _split_threads, _split_cluster, lambda f: f.cluster > 1),
    _Rule("block", _split_threads, 1, lambda f: True),
)


def softmax_plan(rows: int, cols: int, sm_count: int, itemsize: int = 4, dram_gbps_per_sm: float = 0.0) -> SoftmaxPlan:
    """Strategy, threads and cluster size of softmax-cuda for a (rows, cols) input: the first of SOFTMAX_RULES that
    holds for it. ``dram_gbps_per_sm``: the GPU's DRAM peak over its SMs (0 where the driver does not say)."""
    f32 = itemsize == 4
    cluster = _register_cluster(rows, cols, sm_count, f32)
    facts = _Facts(rows, cols, itemsize, sm_count, dram_gbps_per_sm >= SOFTMAX_WIDE_DRAM_GBPS_PER_SM, cluster,
                   _register_threads(cols, cluster, f32))
    rule = next(rule for rule in SOFTMAX_RULES if rule.when(facts))
    return SoftmaxPlan(rule.strategy, *(v(facts) if callable(v) else v for v in (rule.threads, rule.cluster)))


def softmax_launch_args(plan: SoftmaxPlan | tuple[str, int, int]) -> tuple[int, int, int]:
    """What launch_softmax is given for ``plan``: its strategy's code (softmax_strategies.def), threads, cluster."""
    strategy, threads, cluster = plan
    return SOFTMAX_STRATEGIES[strategy], threads, cluster


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
    return softmax_launch_args(device_softmax_plan(rows, cols, itemsize, device_index))


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
        strategy, threads, cluster = softmax_launch_args(plan)
    if module is not None:  # a measurement build
        return module.softmax(x, _out(x, out), strategy, threads, cluster)
    return extension().softmax(x, _out(x, out), strategy, threads, cluster)


def mean(x, out=None, streaming=MEAN_STREAMING, blocks_per_sm=MEAN_BLOCKS_PER_SM, unroll=MEAN_UNROLL):
    y = torch.empty((), device=x.device, dtype=x.dtype) if out is None else out
    return extension().mean(x, y, streaming, blocks_per_sm, unroll)


# --- kernelscope plan: what a call launches -------------------------------------------------------
# The launch shape comes from the functions the calls above use (softmax_launch, elementwise_launch, the mean
# constants); the grids are what the C++ launchers work out from it, which choose nothing: softmax_launch.cuh's
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
    from kernelscope.backends.launches import Launch, LaunchPlan

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
    from kernelscope.backends.launches import Launch, LaunchPlan

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
    from kernelscope.backends.launches import Launch, LaunchPlan

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
