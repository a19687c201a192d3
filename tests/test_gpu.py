"""GPU versions of the CPU-path checks (run on the GPU box: pytest -m gpu).

Their CPU counterparts: test_variants.py (same harness through the
interpreters) and test_cuda_sources.py (the .cu files through nvcc).
"""

import pytest
import torch

from kernelscope.catalog import OPS, VARIANTS, get
from kernelscope.check import PASS, check_variant

pytestmark = pytest.mark.gpu


def softmax_rows(rows, cols, dtype, seed):
    """(name, x) pairs: random rows, then the masked, offset and large-logit stress rows (the next seed)."""
    op = OPS["softmax"]
    inputs = [("random", op.make_input((rows, cols), dtype, "cuda", seed))]
    return inputs + [(s.name, s.make((rows, cols), dtype, "cuda", seed + 1)) for s in op.stress
                     if s.name in ("masked", "offset", "large-logits")]


def placed(t, off):
    """t's values at an address `off` elements past a 16-byte boundary."""
    flat = torch.empty(t.numel() + 8, dtype=t.dtype, device="cuda")
    return flat[off:off + t.numel()].view_as(t).copy_(t)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_variant_matches_reference_on_gpu(name):
    res = check_variant(VARIANTS[name], device="cuda")
    assert res.status == PASS, res.reason
    assert {s.dtype for s in res.shapes} == set(VARIANTS[name].dtypes)


@pytest.mark.parametrize("name", ["square-numba-lecture", "square-cuda-vec4", "mean-cuda", "square-triton-flat1024",
                                  "square-numba-direct", "square-triton-direct"])
def test_kernels_launch_on_torchs_current_stream(name):
    # Run on a side stream and read the result there without a device-wide
    # sync: a kernel launched on another stream would race and read stale data.
    v = get(name)
    x = v.op_spec.make_input(v.op_spec.check_shapes[-1], "float32", "cuda", 1234)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            out = v(x)
        expected = v.op_spec.reference(x.double())
        err = ((out.double() - expected).abs().max() / expected.abs().max()).item()
    side.synchronize()
    assert err < 1e-5


def test_the_raw_stream_handle_is_torchs_current_stream():
    from kernelscope.backends import streams

    side = torch.cuda.Stream()
    assert streams._raw_stream is not None  # a CUDA build of torch has it; without it launches pay 10+ us
    with torch.cuda.stream(side):
        assert streams.current_stream_handle() == side.cuda_stream != 0
    assert streams.current_stream_handle() == torch.cuda.current_stream().cuda_stream


def test_cuda_build_is_cached_and_timed():
    from kernelscope.backends.cuda import build

    get("square-cuda-vec4")(torch.randn(4, 4, device="cuda"))
    assert build.BUILD_TIMES and all(t > 0 for t in build.BUILD_TIMES.values())
    assert str(build.cache_root()) in build.extension().__file__


def test_lecture_square_refuses_a_grid_it_cannot_cover():
    x = torch.randn(16 * 65536, 1, device="cuda")
    with pytest.raises(RuntimeError, match="more rows than a 2-D grid"):
        get("square-cuda-lecture")(x)


def test_spin_kernel_rate_is_a_plausible_sm_clock():
    from kernelscope import timing

    assert 0.5e9 < timing.spin_cycles_per_second() < 3.5e9


def test_held_warm_clock_reads_the_kernel_not_the_launch():
    # The CPU counterpart (test_timing.py) runs the same logic on a simulated stream.
    from kernelscope import timing
    from kernelscope.timing.cases import prepare

    case = prepare("square", "square-torch", "64x64", "float32")
    plan = timing.plan_warm(case.call, "cuda")
    clock = timing.HeldClock(plan.hold_s)
    clock.sample(case.call, plan.number)  # asv's warm-up sample: a first sample may starve, and grows the hold
    clock.starved = 0  # (on the H100 1 of 11 did, in one of three runs)
    per_call = sorted(clock.sample(case.call, plan.number) / plan.number for _ in range(11))[5]
    assert clock.starved == 0
    assert per_call < plan.host_per_call_s / 2  # a 4096-element square is ~2 us of GPU, ~8 us of launch
    graph, _ = timing.capture_graph(case.call, 100)
    graph_per_call = sorted(timing.time_graph(graph, 100, 11))[5]
    assert graph_per_call <= per_call * 1.2  # a graph drops launch costs, it adds none


def test_graph_capture_gives_every_call_the_same_output_block():
    # CPU counterpart: test_timing.py checks no earlier output is alive at each captured call.
    from kernelscope import timing
    from kernelscope.timing.cases import prepare

    case = prepare("square", "square-torch", "1024x1024", "float32")
    ptrs = []

    def call():
        out = case.call()
        ptrs.append(out.data_ptr())
        return out

    graph, out = timing.capture_graph(call, 4)
    graph.replay()
    assert len(set(ptrs[-4:])) == 1 and out.data_ptr() == ptrs[-1]
    case.check(out)


def test_held_samples_read_a_plausible_sm_clock():
    # CPU counterpart: test_timing.py's simulated clock (readings, throttle flags, settle).
    from kernelscope import timing
    from kernelscope.timing import clocks
    from kernelscope.timing.cases import prepare

    case = prepare("square", "square-torch", "4096x4096", "float32")
    plan = timing.plan_warm(case.call, "cuda")
    clock = timing.HeldClock(plan.hold_s)
    for _ in range(5):
        clock.sample(case.call, plan.number)
    top = clocks.max_sm_mhz()
    assert top and len(clock.watch.readings) == 5
    assert all(0.3 * top < m < 1.05 * top for m in clock.watch.readings), (clock.watch.readings, top)


def test_profile_of_a_variant_lists_its_kernels_once_per_active_step():
    from kernelscope.profiling.torch_profiler import profile_variant

    x = torch.randn(1024, 1024, device="cuda")
    prof = profile_variant(get("square-mul"), x, wait=1, warmup=1, active=2)
    assert sum(prof.kernels.values()) == 2 and prof.ops["square:square-mul"] == 2


def test_machine_records_the_max_sm_clock():
    from kernelscope.results.machine import describe, fp32_peak

    info = describe()
    assert float(info["gpu_max_sm_mhz"]) > 500
    assert fp32_peak(info)[1].endswith("MHz")  # derived from this GPU, not the datasheet table


def test_a_reference_on_the_cpu_gives_the_error_it_gives_on_the_gpu(monkeypatch):
    from kernelscope import check

    x = torch.randn(256, 256, device="cuda")
    out = torch.softmax(x, dim=-1)
    on_cpu = check.error_against_reference(OPS["softmax"], x, out)
    monkeypatch.setattr(check, "HOST_REFERENCE_NUMEL", 0)
    on_gpu = check.error_against_reference(OPS["softmax"], x, out)
    assert 0 < on_cpu < 1e-5 and on_cpu == pytest.approx(on_gpu, rel=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("rows, cols, plan", [
    (300, 5003, ("ring", 128, 2)),  # the ring kernel: 2 or 3 rows in flight, each row's alignment its own
    (300, 5003, ("ring3", 256, 1)),
    (130, 50257, ("ring", 256, 8)),
    (20, 262144, ("ring", 512, 16)),  # fewer rows than resident clusters: the ring's later stages stay empty
    (300, 5003, ("pipe", 128, 2)),  # odd columns: every row's alignment differs; ~4 rows a cluster
    (300, 5003, ("pipe", 256, 1)),  # no cluster: a persistent block a row at a time
    (40, 50257, ("pipe", 512, 4)),  # fewer rows than resident clusters: one row each, no prefetch
    (130, 50257, ("pipe", 256, 8)),
    (20, 262144, ("pipe", 512, 16)),  # non-portable clusters of 16, rows beyond the resident clusters
    (300, 5003, ("ring1", 128, 2)),  # one stage: the next row fetched once this one is written
    (1000, 50257, ("ring1", 512, 4)),  # softmax_plan's float32 512x50257 launch, ~8 rows a cluster
    (1000, 50257, ("ring1", 512, 2)),  # its bfloat16 launch
    (1000, 50257, ("ring1", 512, 1)),  # in float32 a 50257-wide row in one block's stage
    (40, 50257, ("ring1", 512, 4)),  # fewer rows than resident clusters: nothing to fetch after the first
    (70, 262144, ("ring1", 1024, 8)),  # clusters of 8, some with a second row
    # one exp an element: the sum pass's exps stored over the stage (bfloat16: rounded), the write pass scales them
    (300, 5003, ("ring1e", 128, 2)),
    (1000, 50257, ("ring1e", 512, 4)),
    (1000, 50257, ("ring1e", 512, 2)),
    (40, 50257, ("ring1e", 512, 4)),
    (70, 262144, ("ring1e", 512, 16)),  # non-portable clusters of 16, more rows than resident clusters (the probes')
    # the loop kernel: a cluster a row, not persistent, but its pairs exchanged as the persistent kernels' are
    # (st.async, mbarriers: cluster_combine<true>)
    (300, 5003, ("loop", 128, 2)),  # odd columns: every row's alignment differs
    (20, 262144, ("loop", 512, 16)),  # non-portable clusters of 16, softmax_plan's 64x262144 float32 launch
    (70, 262144, ("loop", 1024, 8)),
    (100, 100003, ("loop", 256, 2)),  # 6 laps and a few vectors a thread: pass 2 takes them backwards
    # the loop kernel in a persistent grid: a cluster takes rows in turn, its pairs' half and mbarrier phase by parity
    (300, 5003, ("loopp", 128, 2)),
    (100, 100003, ("loopp", 256, 2)),
    (70, 262144, ("loopp", 512, 16)),  # more rows than resident clusters of 16
    (70, 262144, ("loopp", 256, 4)),  # 8 whole laps a thread
])
def test_the_persistent_plans_match_the_reference_on_random_and_stress_rows(rows, cols, plan, dtype):
    # softmax_pipe_kernel and softmax_ring_kernel: persistent clusters whose blocks copy their slices of the next
    # rows into shared memory while the current row is reduced and written (the wide rows). Each row's
    # unaligned ends, the partials' parity between rows, and the last rows (nothing left to fetch) are on this path.
    from kernelscope.backends.cuda import kernels as K
    from kernelscope.check import error_against_reference

    op = OPS["softmax"]
    p = K.SoftmaxPlan(*plan)
    item = 4 if dtype == "float32" else 2
    if p.strategy == "pipe":
        assert K.floats_per_thread(cols, item, p.threads, p.cluster) <= K.pipe_capacity(p.threads)
    elif p.strategy in K.SOFTMAX_RING_STAGES:
        assert K.ring_bytes(cols, item, p.threads, p.cluster, K.SOFTMAX_RING_STAGES[p.strategy]) <= K.SOFTMAX_RING_MAX_BYTES
    for name, x in softmax_rows(rows, cols, dtype, 7):
        out = K.softmax(x, plan=p)
        err = error_against_reference(op, x, out)
        assert err <= op.tolerance[dtype], (name, plan, err)


@pytest.mark.parametrize("dtype, cluster", [("float32", 4), ("bfloat16", 2)])
def test_a_ring_stage_filled_to_the_last_vector_matches_the_reference(dtype, cluster):
    # The launcher sizes a ring's stage to a block's slice, not to whole vectors a thread: 231307 columns over these
    # clusters are 14457 vectors a block, 225.9 KiB, which 29 vectors a thread of 512 (232 KiB) would not fit. The
    # last threads' last vectors sit at the stage's end, rows of every alignment (odd columns) among them.
    from kernelscope.backends.cuda import kernels as K
    from kernelscope.check import error_against_reference

    op, cols, item = OPS["softmax"], 231307, 4 if dtype == "float32" else 2
    p = K.SoftmaxPlan("ring1e", 512, cluster)
    assert K.ring_bytes(cols, item, 512, cluster, 1) <= K.SOFTMAX_RING_MAX_BYTES
    assert K.floats_per_thread(cols, item, 512, cluster) * item * 512 > K.SOFTMAX_RING_MAX_BYTES
    for name, x in softmax_rows(140, cols, dtype, 13):
        out = K.softmax(x, plan=p)
        err = error_against_reference(op, x, out)
        assert err <= op.tolerance[dtype], (name, p, err)


@pytest.mark.parametrize("dtype, threads", [("float32", 1024), ("bfloat16", 512)])
@pytest.mark.parametrize("layout", ["exact", "one column short", "x off by one element", "y off by one element"])
def test_the_block_kernels_exact_rows_and_their_near_misses_match_the_reference(dtype, threads, layout):
    # launch_block_rows sends rows of exactly EPT x threads elements, x and y 16-byte aligned, to softmax_exact_kernel
    # (no bounds, unaligned ends or cluster: 16384 columns at these launches, the suite's 16384x16384 plans); a row
    # one column short, or x or y one element off 16 bytes, goes to softmax_block_kernel and must be right too.
    from kernelscope.backends.cuda import kernels as K
    from kernelscope.check import error_against_reference

    op = OPS["softmax"]
    rows, cols = 96, 16384 - (layout == "one column short")

    for name, x in softmax_rows(rows, cols, dtype, 11):
        x = placed(x, 1 if layout == "x off by one element" else 0)
        out = placed(torch.full_like(x, float("nan")), 1 if layout == "y off by one element" else 0)
        K.softmax(x, out, plan=K.SoftmaxPlan("block", threads, 1))
        err = error_against_reference(op, x, out)
        assert err <= op.tolerance[dtype], (name, layout, err)


def test_a_softmax_launch_the_kernels_refuse_raises_with_the_plan_in_its_message():
    # launch_softmax's own refusals reach Python as a RuntimeError naming the plan and the shape (a process that
    # crashed here instead, on the H100 and the H200, is why the message goes through check_launch)
    from kernelscope.backends.cuda import build

    x = OPS["softmax"].make_input((4, 100003), "float32", "cuda", 27)
    with pytest.raises(RuntimeError, match=r"strategy 1, threads 128, cluster 1, rows 4, cols 100003"):
        build.extension().softmax(x, torch.empty_like(x), 1, 128, 1)  # a row wider than a block's registers
    with pytest.raises(RuntimeError, match=r"strategy 99, threads 128, cluster 1"):
        build.extension().softmax(x, torch.empty_like(x), 99, 128, 1)  # no such strategy


def test_the_loop_kernels_resident_clusters_fit_the_gpus_block_slots():
    # the persistent loop's grid: clusters sit in one GPC each, so no more than SMs x blocks an SM / cluster fit
    from kernelscope.backends.cuda import kernels as K

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for itemsize, threads, cluster in ((4, 512, 16), (4, 512, 8), (4, 1024, 8), (2, 512, 16)):
        resident = K.loop_resident_clusters(0, itemsize, threads, cluster)
        assert 1 <= resident <= sms * (2048 // threads) // cluster, (itemsize, threads, cluster, resident)


def test_the_dram_peak_the_softmax_plan_reads_sits_above_what_a_copy_moves():
    # CPU counterpart: test_cuda_kernels.py's choice of threads from a given bandwidth an SM. Here the attributes
    # themselves: the H100's peak is about 3.35 TB/s (copy 3.0), the H200's about 4.8 (copy 4.2).
    from kernelscope.backends.cuda import kernels as K
    from kernelscope.timing.cold import copy_bandwidth

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    peak = K.dram_gbps_per_sm(0) * sms
    copy = copy_bandwidth() / 1e9
    assert copy < peak < 1.5 * copy, (peak, copy)
    plan = K.device_softmax_plan(16384, 16384, 4)
    assert plan == ("block", 1024 if K.dram_gbps_per_sm(0) >= K.SOFTMAX_WIDE_DRAM_GBPS_PER_SM else 512, 1)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("layout", ["aligned", "x off by one element", "y off by one element"])
@pytest.mark.parametrize("overrides", [{}, {"persist_group": 1, "persist_vectorize": False}])
def test_the_triton_persist_plan_cut_at_16_bytes_matches_the_reference(overrides, layout, dtype):
    # softmax-triton-tuned's persist kernel compiled for the GPU (the CPU path runs it in the interpreter, where
    # alignment changes no code): 50257-wide rows, each starting at its own offset from 16 bytes, cut into edges
    # and a 16-byte body, or one element an access where x or y starts off 16 bytes; and the kernel's old form.
    from kernelscope.backends.triton import softmax as tsoftmax
    from kernelscope.check import error_against_reference

    op = OPS["softmax"]
    rows, cols = 300, 50257
    plan = tsoftmax.softmax_plan(rows, cols, 4 if dtype == "float32" else 2, 64, persistent=True, **overrides)
    assert plan.strategy == "persist" and plan.programs < rows  # programs take several rows in turn
    for name, x in softmax_rows(rows, cols, dtype, 7):
        x = placed(x, 1 if layout == "x off by one element" else 0)
        y = placed(torch.full_like(x, float("nan")), 1 if layout == "y off by one element" else 0)
        want = 16 // x.element_size() if layout == "aligned" and plan.vectorize else 1
        assert tsoftmax.persist_vec(plan, x, y) == want
        tsoftmax.softmax_planned(x, y, plan)
        err = error_against_reference(op, x, y)
        assert err <= op.tolerance[dtype], (name, layout, overrides, err)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("layout", ["aligned", "x off by one element", "y off by one element"])
def test_the_triton_tiles_plan_matches_the_reference(layout, dtype):
    # softmax-triton-tuned's tiles kernel compiled for the GPU: a 50257-wide row held whole by one program of 32
    # warps in tiles of 32768, 16384 and 2048 columns, each row at its own offset from 16 bytes (the cut), or one
    # element an access where x or y starts off 16 bytes
    from kernelscope.backends.triton import softmax as tsoftmax
    from kernelscope.check import error_against_reference

    op = OPS["softmax"]
    rows, cols = 300, 50257
    plan = tsoftmax.softmax_plan(rows, cols, 4 if dtype == "float32" else 2, 64)
    assert (plan.strategy, plan.tiles) == ("tiles", (32768, 16384, 2048))
    for name, x in softmax_rows(rows, cols, dtype, 11):
        x = placed(x, 1 if layout == "x off by one element" else 0)
        y = placed(torch.full_like(x, float("nan")), 1 if layout == "y off by one element" else 0)
        assert tsoftmax.cut_vec(x, y) == (16 // x.element_size() if layout == "aligned" else 1)
        tsoftmax.softmax_planned(x, y, plan)
        err = error_against_reference(op, x, y)
        assert err <= op.tolerance[dtype], (name, layout, err)
