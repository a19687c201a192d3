"""The host side of the CUDA C++ kernels, on the CPU: softmax's launch plan and the arguments the wrappers pass.

The plan must always be launchable (launch_softmax refuses a slice wider than a
thread's registers) and must pick the strategy the kernels were written for:
warps for narrow rows, a block for many wide rows, a cluster for few or very
wide rows. The extension itself is replaced by a recorder: no GPU, no nvcc.
"""

import pytest
import torch

from kernelscope.backends.cuda import kernels as K
from kernelscope.catalog import OPS

H100_SMS = 132
SOFTMAX = OPS["softmax"]
SHAPES = sorted({*SOFTMAX.bench_shapes, *SOFTMAX.check_shapes, *(s.shape for s in SOFTMAX.stress),
                 (8192, 8192), (1000, 1025), (3, 16385), (100000, 20000), (1, 2**20), (2, 2**24), (7, 1)})


@pytest.mark.parametrize("itemsize", [4, 2])
@pytest.mark.parametrize("sms", [H100_SMS, 78, 16])
@pytest.mark.parametrize("shape", SHAPES)
def test_every_softmax_plan_is_launchable(shape, sms, itemsize):
    rows, cols = shape
    plan = K.softmax_plan(rows, cols, sms, itemsize)
    assert plan.strategy in K.SOFTMAX_STRATEGIES
    assert 32 <= plan.threads <= 1024 and plan.threads % 32 == 0
    assert plan.cluster in (1, 2, 4, 8, 16)
    assert (plan.strategy in ("loop", "loopp", "pipe", "ring", "ring1", "ring1e")
            or (plan.strategy == "cluster") == (plan.cluster > 1))
    if plan.strategy == "warp":
        assert plan.cluster == 1 and K.floats_per_thread(cols, itemsize, 32) <= 32
    elif plan.strategy in ("block", "cluster"):
        assert K.floats_per_thread(cols, itemsize, plan.threads, plan.cluster) <= K.register_capacity(plan.threads)
    elif plan.strategy == "pipe":
        assert K.floats_per_thread(cols, itemsize, plan.threads, plan.cluster) <= K.pipe_capacity(plan.threads)
    elif plan.strategy == "ring":
        assert itemsize == 2 and K.ring_bytes(cols, itemsize, plan.threads, plan.cluster, 2) <= K.SOFTMAX_RING_MAX_BYTES
    elif plan.strategy in ("ring1", "ring1e"):
        assert K.ring_bytes(cols, itemsize, plan.threads, plan.cluster, 1) <= K.SOFTMAX_RING_MAX_BYTES
    assert rows * plan.cluster < 2**31  # grid.x


@pytest.mark.parametrize("shape", [(64, 64), (256, 256), (1024, 1024), (16384, 1000), (13, 17), (1, 1)])
def test_narrow_rows_take_a_warp_each(shape):
    assert K.softmax_plan(*shape, H100_SMS, 2).strategy == "warp"
    if shape[1] <= K.SOFTMAX_WARP_MAX_COLS_F32:
        assert K.softmax_plan(*shape, H100_SMS, 4).strategy == "warp"


@pytest.mark.parametrize("shape", [(1024, 1024), (16384, 1000), (7, 513)])
def test_float32_rows_of_513_to_1024_take_a_128_thread_block_each(shape):
    # the H100 sweep: block 128 beat warp 128 at 1024x1024 (4.29 vs 4.65 us) and 16384x1000 (47.7 vs 48.6 us)
    assert K.softmax_plan(*shape, H100_SMS, 4) == K.SoftmaxPlan("block", 128, 1)


@pytest.mark.parametrize("shape", [(4096, 4096), (8192, 8192), (16384, 16384)])
def test_many_wide_rows_take_a_block_each_with_the_row_in_registers(shape):
    rows, cols = shape
    plan = K.softmax_plan(rows, cols, H100_SMS)
    assert plan == K.SoftmaxPlan("block", plan.threads, 1)
    assert plan.threads >= K.SOFTMAX_BLOCK_MIN_THREADS  # 4096x4096: 256 threads 92.5% of copy, 128 threads 89.7%
    assert K.floats_per_thread(cols, 4, plan.threads) <= 32  # two blocks or more resident an SM


@pytest.mark.parametrize("shape", [(512, 50257), (64, 262144), (2, 131072), (2, 9001)])
def test_few_or_very_wide_rows_split_across_a_cluster(shape):
    rows, cols = shape
    for itemsize in (4, 2):
        plan = K.softmax_plan(rows, cols, H100_SMS, itemsize)
        if plan.strategy == K.SOFTMAX_RING1_STRATEGY:  # one stage of shared memory holds the slice: bfloat16 over 2
            assert cols > K.SOFTMAX_BLOCK_MAX_COLS and plan.threads == K.SOFTMAX_RING1_THREADS
            assert K.ring_bytes(cols, itemsize, plan.threads, plan.cluster, 1) <= K.SOFTMAX_RING_MAX_BYTES
            assert plan.cluster >= 2 if itemsize == 4 else (plan.cluster == K.SOFTMAX_BF16_RING1_CLUSTER
                                                            and rows >= H100_SMS)
            continue
        assert plan.cluster >= 2
        if plan.strategy == "loop":  # float32 split over 8 blocks or more: the loop kernel holds any slice
            assert itemsize == 4 and plan == K.SoftmaxPlan("loop", *K.SOFTMAX_F32_LOOP)
            continue
        if plan.strategy == "loopp":  # bfloat16 split over 16 blocks: the loop kernel, persistent
            assert itemsize == 2 and plan == K.SoftmaxPlan("loopp", *K.SOFTMAX_BF16_LOOP)
            continue
        if plan.strategy == "ring":  # bfloat16 over a cluster of up to 4: the ring kernel, its slices in shared memory
            assert itemsize == 2 and plan.cluster <= K.SOFTMAX_BF16_RING_MAX_CLUSTER
            assert K.ring_bytes(cols, itemsize, plan.threads, plan.cluster, 2) <= K.SOFTMAX_RING_MAX_BYTES
            continue
        # bfloat16 over larger clusters takes the pipe kernel, float32 the cluster; each block's slice fits its registers
        assert plan.strategy == ("cluster" if itemsize == 4 else "pipe")
        assert itemsize == 4 or plan.cluster > K.SOFTMAX_BF16_RING_MAX_CLUSTER
        capacity = K.register_capacity if plan.strategy == "cluster" else K.pipe_capacity
        assert K.floats_per_thread(cols, itemsize, plan.threads, plan.cluster) <= capacity(plan.threads)
        assert -(-cols // plan.cluster) <= (K.SOFTMAX_BLOCK_MAX_COLS_F32_C8 if itemsize == 4 and plan.cluster >= 8
                                            else K.SOFTMAX_BLOCK_MAX_COLS)


def test_the_wide_target_shapes_take_the_swept_winners():
    # The H100 sweeps' winners (kernels.py says by how much): 64x262144 float32 the loop kernel at 512 threads in
    # clusters of 16; bfloat16 split over a cluster the pipe kernel at 256 threads, or the ring kernel where the
    # cluster is 4 or smaller; 512x50257 the ring of one stage (float32 over the same 4 blocks, bfloat16 over 2),
    # launched in its one-exp form, ring1e (floors.py --kernels)
    assert K.softmax_plan(512, 50257, H100_SMS, 4) == K.SoftmaxPlan("ring1e", 512, 4)
    assert K.softmax_plan(64, 262144, H100_SMS, 4) == K.SoftmaxPlan("loop", 512, 16)
    assert K.softmax_plan(512, 50257, H100_SMS, 2) == K.SoftmaxPlan("ring1e", 512, 2)
    assert K.softmax_plan(100, 50257, H100_SMS, 2) == K.SoftmaxPlan("ring", 256, 4)  # too few rows for a block each
    # 64x262144 bfloat16 (tune_wide_rows.py --sweep): the loop kernel in a persistent grid, 512 x 8, ahead of the
    # pipe on the H100 and the H200
    assert K.softmax_plan(64, 262144, H100_SMS, 2) == K.SoftmaxPlan("loopp", 512, 8)
    assert K.softmax_plan(64, 131072, H100_SMS, 2) == K.SoftmaxPlan("pipe", 256, 8)  # clusters of 8 keep the pipe
    assert K.softmax_plan(4096, 4096, H100_SMS, 4) == K.SoftmaxPlan("block", 256, 1)


def test_the_target_shapes_fill_the_h100():
    for rows, cols in [(512, 50257), (64, 262144)]:
        plan = K.softmax_plan(rows, cols, H100_SMS)
        assert rows * plan.cluster >= 2 * H100_SMS, (rows, cols, plan)


def test_rows_wider_than_a_16_block_cluster_holds_loop_over_memory():
    assert K.softmax_plan(1, 2**20, H100_SMS) == K.SoftmaxPlan("loop", K.SOFTMAX_LOOP_THREADS, 16)
    assert K.softmax_plan(64, 262144, H100_SMS, 2).strategy == "loopp"  # 16 x 16384 would fit in registers


def test_a_ring_takes_its_stages_of_a_blocks_slice():
    # 512x50257 float32 over 8 blocks: 1571 vectors a block, 16 B each, whatever the threads (the launcher's stage
    # is the slice, not 7 vectors a thread of 256: that rounding took 28 KiB for 24.5)
    assert K.ring_bytes(50257, 4, 256, 8, 2) == K.ring_bytes(50257, 4, 512, 8, 2) == 2 * 1571 * 16
    assert K.ring_bytes(262144, 4, 512, 16, 3) == 3 * 64 * 1024 <= K.SOFTMAX_RING_MAX_BYTES
    assert K.ring_bytes(262144, 4, 512, 8, 2) > K.SOFTMAX_RING_MAX_BYTES  # two 128 KiB stages do not fit


def test_the_wide_rows_rings_leave_room_for_four_blocks_an_sm():
    # 512x50257 in its ring of one stage (float32 over 4 blocks, bfloat16 over 2): 3141 vectors a block, 49.1 KiB.
    # Four blocks of 512 threads fit an SM's registers (32 a thread) and, with their static shared memory and the
    # 1 KiB the GPU keeps a block (under 2 KiB together), its 228 KiB; rounded to 7 vectors a thread (56 KiB) only
    # three did. What the fourth block does to the time is measured, not assumed (results-proofs/softmax-ring-stage).
    sm_shared, per_block = 228 * 1024, 2048
    for itemsize in (4, 2):
        plan = K.softmax_plan(512, 50257, H100_SMS, itemsize)
        assert plan.strategy in K.SOFTMAX_RING_STAGES and plan.threads == 512
        stage = K.ring_bytes(50257, itemsize, plan.threads, plan.cluster, K.SOFTMAX_RING_STAGES[plan.strategy])
        assert stage == 3141 * 16 and 4 * (stage + per_block) <= sm_shared
        rounded = K.floats_per_thread(50257, itemsize, plan.threads, plan.cluster) * itemsize * plan.threads
        assert 4 * (rounded + per_block) > sm_shared >= 3 * (rounded + per_block)


def test_floats_per_thread_rounds_like_launch_softmax():
    # 50257 float32 columns over 4 blocks: 12564 vectors of 4 -> 3141 a block -> 7 vectors a thread at 512
    assert K.floats_per_thread(50257, 4, 512, 4) == 28
    assert K.floats_per_thread(50257, 2, 512, 4) == 32  # 6282 vectors of 8 -> 1571 a block -> 4 a thread
    assert K.floats_per_thread(1024, 4, 32) == 32 and K.floats_per_thread(1024, 2, 32) == 32
    assert K.floats_per_thread(3, 4, 32) == 0  # all in the unaligned ends


def test_elementwise_defaults_launch_one_lap_of_tiles():
    # blocks_per_sm 0: a block a tile, n / (threads x unroll) blocks (the grid-stride wave stayed at 92-94%)
    assert K.ELEMENTWISE_THREADS % 32 == 0 and 2048 % K.ELEMENTWISE_THREADS == 0
    assert K.ELEMENTWISE_BLOCKS_PER_SM == 0
    assert K.ELEMENTWISE_UNROLL in (1, 2, 4, 8)


H100_DRAM_GBPS = 2 * 2619e6 * 5120 / 8 / 1e9  # the H100's memory clock (kHz attribute 2,619,000) and 5120-bit bus
H200_DRAM_GBPS = 2 * 3201e6 * 6144 / 8 / 1e9  # the H200's 6144-bit HBM3e


class Recorder:
    def __init__(self, dram_gbps: float = H100_DRAM_GBPS):
        self.calls = []
        self.dram_gbps = dram_gbps

    def dram_peak_gbps(self, device_index):
        return self.dram_gbps

    def __getattr__(self, name):
        def call(x, out, *args):
            self.calls.append((name, tuple(out.shape), args))
            return out
        return call


@pytest.fixture
def ext(monkeypatch):
    recorder = Recorder()
    monkeypatch.setattr(K, "extension", lambda: recorder)
    monkeypatch.setattr(K, "_sm_count", lambda device_index: H100_SMS)
    K._softmax_launch.cache_clear()
    K._elementwise_launch.cache_clear()
    K.dram_gbps_per_sm.cache_clear()
    yield recorder
    K._softmax_launch.cache_clear()
    K._elementwise_launch.cache_clear()
    K.dram_gbps_per_sm.cache_clear()


def test_a_gpu_whose_dram_asks_more_of_each_sm_gets_more_threads_for_lone_float32_rows():
    # H200, 16384x16384 float32: 1024 threads x 16 97.8% of copy against 512 x 32's 82.9% and the ring kernel's
    # lone block's 90.9%; the H100 reads 100% at 512 x 32. bfloat16 keeps the block plan. The plan reads the GPU it
    # runs on, not a name.
    h100, h200 = H100_DRAM_GBPS / H100_SMS, H200_DRAM_GBPS / H100_SMS
    assert h100 < K.SOFTMAX_WIDE_DRAM_GBPS_PER_SM <= h200
    assert K.softmax_plan(16384, 16384, H100_SMS, 4, h200) == K.SoftmaxPlan("block", 1024, 1)
    assert K.softmax_plan(16384, 16384, H100_SMS, 4, h100) == K.SoftmaxPlan("block", 512, 1)
    assert K.softmax_plan(16384, 16384, H100_SMS, 2, h200) == K.SoftmaxPlan("block", 512, 1)
    assert K.softmax_plan(16384, 16384, H100_SMS, 4) == K.SoftmaxPlan("block", 512, 1)  # no attribute: 0


def test_narrower_float32_rows_on_that_gpu_get_twice_the_threads_in_their_block():
    # H200, 8192x8192 float32: 512 threads x 16 elements 95.6% of copy against 256 x 32's 88.1%; bfloat16 is
    # slower at 512 threads (83.6% against 87.4%), and the H100 keeps 256 x 32
    h100, h200 = H100_DRAM_GBPS / H100_SMS, H200_DRAM_GBPS / H100_SMS
    assert K.softmax_plan(8192, 8192, H100_SMS, 4, h200) == K.SoftmaxPlan("block", 512, 1)
    assert K.softmax_plan(8192, 6000, H100_SMS, 4, h200) == K.SoftmaxPlan("block", 512, 1)  # not the ring
    assert K.softmax_plan(8192, 8192, H100_SMS, 4, h100) == K.SoftmaxPlan("block", 256, 1)
    assert K.softmax_plan(8192, 8192, H100_SMS, 2, h200) == K.SoftmaxPlan("block", 256, 1)
    assert K.softmax_plan(4096, 4096, H100_SMS, 4, h200) == K.SoftmaxPlan("block", 256, 1)  # 16 a thread already
    assert K.softmax_plan(16384, 1000, H100_SMS, 4, h200) == K.softmax_plan(16384, 1000, H100_SMS, 4, h100)
    assert K.softmax_plan(512, 50257, H100_SMS, 4, h200) == K.softmax_plan(512, 50257, H100_SMS, 4, h100)


def test_the_loop_kernels_float32_rows_take_clusters_of_8_on_that_gpu():
    # tune_wide_rows.py, 64x262144 float32: H200 512 x 8 57.8% of copy, 1024 x 8 57.3%, 512 x 16 55.6%;
    # H100 512 x 16 71.8%, 512 x 8 61.8%
    h100, h200 = H100_DRAM_GBPS / H100_SMS, H200_DRAM_GBPS / H100_SMS
    assert K.softmax_plan(64, 262144, H100_SMS, 4, h200) == K.SoftmaxPlan("loop", 512, 8)
    assert K.softmax_plan(64, 262144, H100_SMS, 4, h100) == K.SoftmaxPlan("loop", 512, 16)
    assert K.softmax_plan(64, 262144, H100_SMS, 2, h200) == K.softmax_plan(64, 262144, H100_SMS, 2, h100)  # loopp


def test_the_launch_reads_the_dram_bandwidth_of_its_gpu(ext):
    x = torch.empty(16384, 16384)
    K.softmax(x)
    assert ext.calls[-1][2] == (K.SOFTMAX_STRATEGIES["block"], 512, 1)
    ext.dram_gbps = H200_DRAM_GBPS
    K._softmax_launch.cache_clear()
    K.dram_gbps_per_sm.cache_clear()
    K.softmax(x)
    assert ext.calls[-1][2] == (K.SOFTMAX_STRATEGIES["block"], 1024, 1)


def test_softmax_passes_the_plan_as_launch_arguments(ext):
    x = torch.empty(512, 50257)
    out = K.softmax(x)
    plan = K.softmax_plan(512, 50257, H100_SMS)
    assert out.shape == x.shape
    assert ext.calls[-1] == ("softmax", (512, 50257), (K.SOFTMAX_STRATEGIES[plan.strategy], plan.threads, plan.cluster))
    K.softmax(torch.empty(64, 64), torch.empty(64, 64))
    assert ext.calls[-1] == ("softmax", (64, 64), (0, K.SOFTMAX_WARP_THREADS, 1))
    K.softmax(x, plan=K.SoftmaxPlan("loop", 256, 8))
    assert ext.calls[-1][2] == (2, 256, 8)
    K.softmax(x, plan=K.SoftmaxPlan("pipe", 512, 4))
    assert ext.calls[-1][2] == (3, 512, 4)
    K.softmax(x, plan=K.SoftmaxPlan("ring", 256, 8))
    K.softmax(x, plan=K.SoftmaxPlan("ring3", 256, 8))
    assert [c[2] for c in ext.calls[-2:]] == [(4, 256, 8), (5, 256, 8)]
    K.softmax(x, plan=K.SoftmaxPlan("ring1", 1024, 1))
    assert ext.calls[-1][2] == (6, 1024, 1)
    bf16 = torch.empty(512, 50257, dtype=torch.bfloat16)
    K.softmax(bf16)
    plan = K.softmax_plan(512, 50257, H100_SMS, 2)
    assert ext.calls[-1][2] == (K.SOFTMAX_STRATEGIES[plan.strategy], plan.threads, plan.cluster)


def test_mean_passes_its_load_path_grid_and_laps(ext):
    x = torch.empty(2**24)
    K.mean(x)
    K.mean(x, torch.empty(()), True, 2, 8)
    defaults = (K.MEAN_STREAMING, K.MEAN_BLOCKS_PER_SM, K.MEAN_UNROLL)
    assert [c[2] for c in ext.calls] == [defaults, (True, 2, 8)]
    assert K.MEAN_UNROLL in (4, 8) and 1 <= K.MEAN_BLOCKS_PER_SM <= 4  # 4 blocks of 512 threads fill an SM


def test_elementwise_wrappers_pass_their_launch_shape(ext):
    x, big = torch.empty(8, 8), torch.empty(4096, 4096)
    K.square_vec4(big)
    K.square_vec4(x)
    K.gelu_vec4(x, torch.empty_like(x), threads=512, blocks_per_sm=4, unroll=2)
    defaults = (K.ELEMENTWISE_THREADS, K.ELEMENTWISE_BLOCKS_PER_SM, K.ELEMENTWISE_UNROLL)
    assert ext.calls == [("square_vec4", (4096, 4096), defaults),
                         ("square_vec4", (8, 8), (K.ELEMENTWISE_SMALL_MIN_THREADS, K.ELEMENTWISE_BLOCKS_PER_SM, 1)),
                         ("gelu_vec4", (8, 8), (512, 4, 2))]


def test_a_small_elementwise_input_gets_smaller_tiles_spread_over_more_sms():
    # the defaults while every SM gets a tile: 2^20 float32 elements are 512 tiles of 128 x 4 vectors
    assert K.elementwise_shape(2**20, 4, H100_SMS) == (K.ELEMENTWISE_THREADS, K.ELEMENTWISE_UNROLL)
    assert K.elementwise_shape(2**28, 2, H100_SMS) == (K.ELEMENTWISE_THREADS, K.ELEMENTWISE_UNROLL)
    # 64x64 float32 (1024 vectors): two default tiles; 8 tiles of 128 x 1 instead
    assert K.elementwise_shape(4096, 4, H100_SMS) == (128, 1)
    # 256x256 float32 (16384 vectors): 32 default tiles; unroll 1 gives 128, and 128 threads is the floor
    assert K.elementwise_shape(65536, 4, H100_SMS) == (128, 1)
    # just short of a default tile an SM: unroll 2 gives 131 x 2 = 262 tiles, enough
    short = (H100_SMS - 1) * K.ELEMENTWISE_THREADS * K.ELEMENTWISE_UNROLL * 4  # float32: 4 elements a vector
    assert K.elementwise_shape(short, 4, H100_SMS) == (K.ELEMENTWISE_THREADS, K.ELEMENTWISE_UNROLL // 2)
    for n in (1, 4096, 65536, 2**20, 3 * 2**20):
        threads, unroll = K.elementwise_shape(n, 4, H100_SMS)
        assert threads % 32 == 0 and threads >= K.ELEMENTWISE_SMALL_MIN_THREADS and unroll in (1, 2, 4, 8)
