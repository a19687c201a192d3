"""The tuned Numba kernels' launchers, under the CUDA simulator (on a GPU: the same launchers, real shapes).

The catalog's check shapes stay under the simulator's 1024-element cap, where a
grid-stride loop may never take a second step. Here each launcher gets a
launch shape small enough that the loops must: the main (unrolled) loop more
than once, then the tail; blocks of two warps, so the block reductions go
through shared memory; and, for softmax, both plans, several chunks and row
groups, and the stress inputs (masked rows, offset and large logits).
"""

import dataclasses
import importlib.util
import math
from pathlib import Path

import pytest
import torch

from kernelscope import backends
from kernelscope.catalog import OPS
from kernelscope.check import error_against_reference

backends.configure_interpreters()  # before Numba is imported: the simulator, where there is no GPU

from kernelscope.backends.numba import common  # noqa: E402
from kernelscope.backends.numba.gelu import launch_gelu  # noqa: E402
from kernelscope.backends.numba.mean import launch_mean  # noqa: E402
from kernelscope.backends.numba.softmax import Plan, launch_softmax, plan_softmax  # noqa: E402
from kernelscope.backends.numba.square import launch_square_flat  # noqa: E402

DEVICE = backends.default_device()
simulated = pytest.mark.skipif(not common.SIMULATED, reason="grid sizes are the simulator's here")


def within_tolerance(op: str, x: torch.Tensor, out: torch.Tensor) -> None:
    err = error_against_reference(OPS[op], x, out)
    assert err <= OPS[op].tolerance["float32"], err


def grid_steps(n: int, threads: int, unroll: int) -> tuple[int, int]:
    """(full unrolled steps, tail elements) of a grid-stride loop over n under the simulator's grid."""
    blocks = common.grid_stride_blocks(torch.device(DEVICE), n, threads * unroll, 8)
    step = blocks * threads * unroll
    return n // step, n % step


@simulated
@pytest.mark.parametrize("op, launcher", [("square", launch_square_flat), ("gelu", launch_gelu)])
@pytest.mark.parametrize("threads, unroll", [(32, 3), (64, 2)])
def test_elementwise_grid_stride_loop_covers_every_element(op, launcher, threads, unroll):
    shape = (7, 91)  # 637 elements: 3 steps of 192 and a tail, or 2 steps of 256 and a tail
    full, tail = grid_steps(math.prod(shape), threads, unroll)
    assert full >= 2 and tail > 0  # the test means something only if both loops run
    x = OPS[op].make_input(shape, "float32", DEVICE, 3) * 3
    out = torch.full_like(x, float("nan"))  # an element never written stays NaN and fails
    assert launcher(x, out, threads, 8, unroll, False) is out
    within_tolerance(op, x, out)


@pytest.mark.parametrize("op, launcher", [("square", launch_square_flat), ("gelu", launch_gelu)])
@pytest.mark.parametrize("shape, threads, unroll", [((7, 91), 32, 3), ((4, 64), 64, 2), ((1, 5), 32, 4)])
def test_elementwise_tiled_one_lap_covers_every_element(op, launcher, shape, threads, unroll):
    # 637 elements in tiles of 96: six full tiles and a partial one; 256 in tiles of 128: full tiles only;
    # 5 elements: one partial tile.
    x = OPS[op].make_input(shape, "float32", DEVICE, 3) * 3
    out = torch.full_like(x, float("nan"))
    assert launcher(x, out, threads, 8, unroll, True) is out
    within_tolerance(op, x, out)


@pytest.mark.parametrize("tiled", [True, False])
def test_gelus_fast_form_matches_the_reference_far_out_too(tiled):
    # x / (1 + exp(-2u)): far out exp(-2u) is 0 or inf, and the quotient x or 0. On the GPU through libdevice's
    # fast exp and divide (test_gelus_fast_form_on_the_gpu), here the same formula through the simulator's math.
    x = OPS["gelu"].make_input((5, 61), "float32", DEVICE, 4) * 3
    x[0, :6] = torch.tensor([-200.0, -30.0, -0.0, 0.0, 30.0, 200.0])
    out = launch_gelu(x, torch.full_like(x, float("nan")), 32, 8, 2, tiled, fast=True)
    assert torch.isfinite(out).all()
    within_tolerance("gelu", x, out)
    assert abs(out[0, 0]) < 1e-30 and out[0, 5] == 200.0  # (the simulator caps the exp: -1.2e-36, not -0)


def test_gelus_tanhf_form_stays_a_choice():
    # The default is the fast form since the H200 measured it (gelu.FAST); tanhf stays one keyword away.
    x = OPS["gelu"].make_input((3, 77), "float32", DEVICE, 6) * 3
    out = launch_gelu(x, torch.full_like(x, float("nan")), 32, 8, 2, True, fast=False)
    within_tolerance("gelu", x, out)


@pytest.mark.gpu
def test_gelus_fast_form_on_the_gpu():
    x = OPS["gelu"].make_input((4096, 4096), "float32", "cuda", 4) * 4
    x.view(-1)[:6] = torch.tensor([-200.0, -30.0, -0.0, 0.0, 30.0, 200.0], device="cuda")
    out = launch_gelu(x, fast=True)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    within_tolerance("gelu", x, out)


@pytest.mark.parametrize("needed, cap, blocks", [
    (4096, 528, 512),  # mean at 2^24, 512 x 8 a block-lap, H100: 8 whole laps, not 7.76
    (1024, 528, 512),  # the same in 16-byte loads: 2 laps
    (529, 528, 265),  # one block-lap too many for one lap: two laps, half the blocks
    (100, 528, 100),  # fewer than a grid: one lap each
    (5000, 1, 1),
])
def test_a_balanced_grid_takes_whole_laps_in_no_more_laps_than_the_full_grid(needed, cap, blocks):
    got = common.balanced_blocks(needed, cap)
    assert got == blocks and got <= cap
    assert -(-needed // got) == -(-needed // cap)  # laps a block: the full grid's


@simulated
@pytest.mark.parametrize("one_launch", [True, False])
@pytest.mark.parametrize("n, threads, unroll", [(1000, 64, 3), (1, 32, 4), (517, 32, 8)])
def test_mean_partials_and_finish(n, threads, unroll, one_launch):
    x = OPS["mean"].make_input((n,), "float32", DEVICE, 5)
    for _ in range(2):  # twice: the one-launch kernel must leave its ticket counter at 0
        out = torch.full((), float("nan"))
        assert launch_mean(x, out, threads, 8, unroll, one_launch) is out
        within_tolerance("mean", x, out)
    if one_launch:
        from kernelscope.backends.numba.mean import ticket_counter

        assert int(ticket_counter(x.device)[0]) == 0
    if n == 1000:
        full, tail = grid_steps(n, threads, unroll)
        assert full >= 2 and tail > 0


@simulated
@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("one_launch", [True, False])
@pytest.mark.parametrize("n, threads, unroll", [(1000, 32, 2), (1003, 64, 3), (3, 32, 4)])
def test_mean_with_16_byte_loads_covers_every_element(n, threads, unroll, one_launch, streaming):
    # vector.load_f32x4's walk: whole laps of unroll vectors, the vectors left, then the n % 4 elements left
    # (under the simulator four plain loads, the same indices); n = 3 has no vector at all; evict-first or not
    x = OPS["mean"].make_input((n,), "float32", DEVICE, 6)
    out = torch.full((), float("nan"))
    launch_mean(x, out, threads, 8, unroll, one_launch, vector_loads=True, streaming_loads=streaming)
    within_tolerance("mean", x, out)


@pytest.mark.gpu
@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("n", [2**24, 2**24 + 3, 1000, 5])
@pytest.mark.parametrize("offset", [0, 1])
def test_mean_with_16_byte_loads_on_the_gpu(n, offset, streaming):
    # ld.global.v4.f32 from Numba (an @intrinsic), or ld.global.cs.v4.f32 (inline PTX, evict-first); x one
    # element past a 16-byte boundary takes the 4-byte loads
    x = OPS["mean"].make_input((n + offset,), "float32", "cuda", 7)[offset:]
    for one_launch in (True, False):
        out = torch.full((), float("nan"), device="cuda")
        launch_mean(x, out, None, None, None, one_launch, vector_loads=True, streaming_loads=streaming)
        within_tolerance("mean", x, out)


@simulated
def test_a_one_block_mean_writes_the_mean_without_a_ticket():
    # A small input is one block's: its sum is the total. The ticket counter is not touched: set to 5 (as if
    # other blocks had arrived), the multi-block path would wait for a ticket it never draws and write nothing.
    from kernelscope.backends.numba.mean import ticket_counter

    x = OPS["mean"].make_input((100,), "float32", DEVICE, 5)
    counter = ticket_counter(x.device)
    counter.fill_(5)
    try:
        out = torch.full((), float("nan"))
        launch_mean(x, out, 32, 8, 4, True)  # 100 elements, 128 a block: one block
        within_tolerance("mean", x, out)
        assert int(counter[0]) == 5
    finally:
        counter.zero_()


def softmax_inputs(shape):
    op = OPS["softmax"]
    yield "random", op.make_input(shape, "float32", DEVICE, 7)
    for stress in op.stress:
        if stress.name != "long-row":  # the same kernels as random input, only wider
            yield stress.name, stress.make(shape, "float32", DEVICE, 11)
    # Whole chunks of -inf: a chunk's max stays -inf and must add nothing, not NaN.
    x = op.make_input(shape, "float32", DEVICE, 13)
    x[:, shape[1] // 3:] = float("-inf")
    yield "masked-tail", x


@simulated
@pytest.mark.parametrize("plan", [
    Plan("row", threads=64, unroll=2),  # 300 columns: 2 unrolled steps of 128 and a tail, two warps
    Plan("row", threads=64, unroll=2, recompute=True),  # the same, exp recomputed in pass 3
    Plan("row", threads=64, unroll=2, online=True),  # the running max and sum kept in pass 1 (the fast exp is
    # math.exp under the simulator: the GPU test takes the fast forms)
    Plan("split", threads=32, unroll=2, chunk=140, group_rows=2),  # chunks of 140, 140, 20; row groups of 2 and 1
    Plan("split", threads=64, unroll=3, chunk=300, group_rows=3),  # one chunk a row, two warps
    Plan("split", threads=32, unroll=2, chunk=140, group_rows=2, reverse=True),  # launch 2's chunks last to first
    # A row's blocks wait for each other, and the simulator runs one block after another: one part a row here
    # (the GPU tests take several); 2 blocks for 3 rows, so the persistent loop loops, and every call adds to the
    # same arrival counters.
    Plan("exchange", threads=32, unroll=2, parts=1),
    Plan("exchange", threads=64, unroll=3, parts=1),
    Plan("regs", threads=32, unroll=16),  # 300 columns in 32 x 16 registers: 212 padded with -inf
    Plan("regs", threads=64, unroll=8),  # the same in two warps: the block reductions' barriers
    Plan("regs", threads=32, unroll=16, vector=True),  # 75 vectors of 4 in 32 x 4: the last 53 padded
    Plan("regs", threads=64, unroll=8, vector=True),
    Plan("regs", threads=32, unroll=10),  # elements a thread not a power of two (cols_per_thread asked): 20 padded
])
def test_softmax_plans_on_stress_inputs(plan):
    shape = (3, 300)
    for name, x in softmax_inputs(shape):
        out = torch.full_like(x, float("nan"))
        assert launch_softmax(x, out, plan=plan) is out
        assert torch.isfinite(out).all(), name
        err = error_against_reference(OPS["softmax"], x, out)
        assert err <= OPS["softmax"].tolerance["float32"], (name, err)


@simulated
@pytest.mark.parametrize("plan", [Plan("resident", threads=32, unroll=2, keep=0),
                                  Plan("resident", threads=32, unroll=8, keep=0, vector=True),
                                  Plan("resident", threads=32, unroll=8, keep=8, vector=True, hints=True,
                                       fast_exp=True)])
@pytest.mark.parametrize("shape", [(5, 20), (7, 17)])
def test_the_resident_plans_spans_cross_rows(plan, shape):
    # The stress inputs of test_softmax_plans_on_stress_inputs, on spans that cross rows. Three simulated blocks
    # share the 100 elements of 5x20 as spans of 36, 36 and 28 (whole vectors): a span holds the end of one row
    # and the start of the next, and a row's parts come from two blocks; 7x17 in spans of 40 (4-byte accesses: 17
    # columns are no whole vectors). With kept elements one block takes every row, its span's end from shared
    # memory.
    for name, x in softmax_inputs(shape):
        out = torch.full_like(x, float("nan"))
        assert launch_softmax(x, out, plan=plan) is out
        assert torch.isfinite(out).all(), name
        within_tolerance("softmax", x, out)


@simulated
@pytest.mark.parametrize("plan", [Plan("regs", threads=32, unroll=8), Plan("regs", threads=64, unroll=4),
                                  Plan("regs", threads=32, unroll=8, vector=True),
                                  Plan("regs", threads=64, unroll=4, vector=True)])
def test_the_regs_plan_on_rows_that_fill_it_exactly(plan):
    # 256 columns = threads x elements: the kernel built without the column checks
    shape = (3, 256)
    for name, x in softmax_inputs(shape):
        out = torch.full_like(x, float("nan"))
        launch_softmax(x, out, plan=plan)
        assert torch.isfinite(out).all(), name
        err = error_against_reference(OPS["softmax"], x, out)
        assert err <= OPS["softmax"].tolerance["float32"], (name, err)


@simulated
@pytest.mark.parametrize("plan, cols", [
    (Plan("regs", threads=32, unroll=2, keep=64), 100),  # 36 columns past the registers, a partial lap of them
    (Plan("regs", threads=32, unroll=3, keep=64, fast_exp=True), 97),  # one column past them
    (Plan("regs", threads=32, unroll=2, keep=64), 64),  # none: the registers hold the row
    (Plan("regs", threads=32, unroll=1, keep=500), 300),  # most of the row in shared memory, several laps of loads
])
def test_the_regs_plan_keeps_the_columns_past_its_registers_in_shared_memory(plan, cols):
    for name, x in softmax_inputs((3, cols)):
        out = torch.full_like(x, float("nan"))
        assert launch_softmax(x, out, plan=plan) is out
        assert torch.isfinite(out).all(), name
        within_tolerance("softmax", x, out)


@simulated
@pytest.mark.parametrize("cols", [63, 101])
def test_the_regs_plan_with_shared_memory_refuses_rows_it_does_not_hold_registers_first(cols):
    # 32 x 2 registers and 36 kept hold 64 to 100 columns; 63 would leave a register load outside the row
    with pytest.raises(ValueError, match=f"do not hold a row of {cols} columns, registers first"):
        launch_softmax(torch.randn(2, cols), plan=Plan("regs", threads=32, unroll=2, keep=36))


@simulated
@pytest.mark.parametrize("plan, cols, laps", [
    (Plan("regs", 32, 8), 256, 8),  # the row fills every lap: no column checks
    (Plan("regs", 32, 10), 300, 9),  # only the last lap leaves the row: only its element checked
    (Plan("regs", 32, 16), 300, 0),  # laps 9 to 15 leave it: every element checked
    (Plan("regs", 32, 12, vector=True), 380, 2),  # 95 vectors: laps 0 and 1 full, the third partial
    (Plan("regs", 32, 16, vector=True), 300, 0),  # 75 vectors in 4 laps of 32: two partial or empty
])
def test_the_regs_kernel_checks_columns_only_in_laps_that_leave_the_row(monkeypatch, plan, cols, laps):
    # A compile-time count of laps without checks: at 1024 threads x 50 (512x50257) fifty checks held to the
    # stores spilled the row out of registers, where one check (the last lap's) does not
    from kernelscope.backends.numba.softmax import launch

    built = []
    kernel = launch.softmax_regs_kernel
    monkeypatch.setattr(launch, "softmax_regs_kernel", lambda *args: built.append(args[4]) or kernel(*args))
    for name, x in softmax_inputs((3, cols)):
        out = torch.full_like(x, float("nan"))
        launch_softmax(x, out, plan=plan)
        assert torch.isfinite(out).all(), name
        within_tolerance("softmax", x, out)
    assert set(built) == {laps}


@simulated
def test_softmax_plan_choice_under_the_simulator():
    # The catalog's check shapes run the plans the GPU's defaults use: the regs plan up to what 32 simulated
    # threads hold (2048 columns), the split plan past the simulated cache (9001 columns); the row plan, the
    # GPU's default from 16385 columns until shared memory runs out, runs in test_softmax_plans_on_stress_inputs.
    # The regs plan takes the fast exp by default (the simulator runs math.exp in its place).
    from kernelscope.backends.numba.softmax import REGS_FAST_EXP

    cpu = torch.device("cpu")
    assert REGS_FAST_EXP
    assert plan_softmax(1, 7, cpu) == Plan("regs", 32, 1, fast_exp=True)  # 1 element a thread: no vector
    assert plan_softmax(31, 1031, cpu) == Plan("regs", 32, 64, fast_exp=True, vector=True)
    assert not plan_softmax(31, 1031, cpu, vector=False).vector
    assert not plan_softmax(1, 7, cpu, fast_exp=False).fast_exp
    split = plan_softmax(2, 9001, cpu)
    assert split.path == "split" and split.chunk < 9001
    assert plan_softmax(13, 17, cpu, path="row").path == "row"
    assert plan_softmax(13, 17, cpu, path="split").chunk < 17
    assert plan_softmax(4, 300, cpu, path="row", max_threads=64, max_cached_cols=1024, cols_per_thread=8) == Plan(
        "row", 64, 2, online=True, fast_exp=True)
    split = plan_softmax(4, 300, cpu, path="split")  # every row in one pair of launches, the second reversed
    assert (split.group_rows, split.reverse, split.fast_exp) == (4, True, True)


@simulated
@pytest.mark.parametrize("cols, offset, chunk, vector", [
    (36, 0, None, True),  # three chunks of 12 (the simulator's), each thread's vectors one at a time
    (520, 0, 256, True),  # two vectors in flight a thread (unroll 8 elements), then the last chunk's 8 columns
    (37, 0, None, False),  # not whole vectors: the 4-byte kernels
    (36, 1, None, False),  # x one element past a 16-byte boundary: the 4-byte kernels
])
def test_the_split_plan_reads_16_bytes_an_access_only_where_the_rows_allow(monkeypatch, cols, offset, chunk, vector):
    from kernelscope.backends.numba.softmax import launch

    built = []
    stats, write = launch.chunk_stats_kernel, launch.chunk_write_kernel
    monkeypatch.setattr(launch, "chunk_stats_kernel", lambda *args: built.append(args[-1]) or stats(*args))
    monkeypatch.setattr(launch, "chunk_write_kernel", lambda *args: built.append(args[-1]) or write(*args))
    x = OPS["softmax"].make_input((2, cols), "float32", DEVICE, 5)
    x[1, cols // 2:] = float("-inf")  # a masked tail: chunks of -inf add nothing
    x = torch.cat([torch.zeros(offset), x.reshape(-1)])[offset:].view(2, cols)  # the same values, moved
    out = torch.full_like(x, float("nan"))
    launch_softmax(x, out, path="split", vector=True, unroll=8, **({"chunk": chunk} if chunk else {}))
    assert torch.isfinite(out).all()
    within_tolerance("softmax", x, out)
    assert set(built) == {vector}


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_wide_rows_that_fill_the_sms_take_the_regs_plan_at_1024_threads(gpu):
    # Past 16384 columns up to 1024 x 64, each thread holding just what covers the row (512x50257: 50 a thread, not
    # the 64 that spilled); fewer rows than SMs keep the split plan, and an asked shape is taken as asked
    from kernelscope.backends.device import PRESETS
    from kernelscope.backends.numba.softmax import softmax_launch

    facts = PRESETS[gpu]
    assert softmax_launch(512, 50257, facts) == Plan("regs", 1024, 50, fast_exp=True)
    assert softmax_launch(2048, 20000, facts) == Plan("regs", 1024, 20, fast_exp=True, vector=True)
    assert softmax_launch(256, 65536, facts) == Plan("regs", 1024, 64, fast_exp=True, vector=True)
    assert softmax_launch(facts.sm_count - 1, 50257, facts).path == "split"
    assert softmax_launch(512, 65537, facts).path == "split"  # past what 1024 x 64 and shared memory hold
    assert softmax_launch(512, 50257, facts, max_threads=512).path == "row"
    assert softmax_launch(512, 16384, facts).threads <= 512  # the narrower rows keep their shapes


@simulated
def test_the_regs_plan_holds_the_whole_row_or_refuses():
    cpu = torch.device("cpu")
    plan = plan_softmax(3, 300, cpu, path="regs")
    assert plan.path == "regs" and plan.threads * plan.unroll >= 300
    x = OPS["softmax"].make_input((3, 300), "float32", DEVICE, 3)
    with pytest.raises(ValueError, match="regs plan's 32 threads x 8 elements hold 256 of a row's 300 columns"):
        launch_softmax(x, plan=Plan("regs", 32, 8))
    with pytest.raises(ValueError, match="wider than the regs plan holds"):
        plan_softmax(2, 20000, cpu, path="regs")


@simulated
@pytest.mark.parametrize("cols, offset, vector", [(256, 0, True), (300, 0, True), (301, 0, False), (256, 1, False)])
def test_the_regs_plan_reads_16_bytes_an_access_only_where_the_rows_allow(monkeypatch, cols, offset, vector):
    # Whole vectors a row, x and y 16-byte aligned: the vector kernel; a row of 301 columns, or x one element past
    # a 16-byte boundary, the 4-byte kernel (a misaligned vector access is a CUDA error on the GPU)
    from kernelscope.backends.numba.softmax import launch

    built = []
    kernel = launch.softmax_regs_kernel
    monkeypatch.setattr(launch, "softmax_regs_kernel", lambda *args: built.append(args[-1]) or kernel(*args))
    x = OPS["softmax"].make_input((3, cols * 3 + offset), "float32", DEVICE, 8).view(-1)[offset:offset + 3 * cols]
    x = x.view(3, cols)
    out = launch_softmax(x, plan=Plan("regs", 32, 16, vector=True))
    assert built == [vector]
    within_tolerance("softmax", x, out)


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [512, 7])
def test_the_regs_plan_holds_a_row_of_50257_in_50_registers_a_thread_on_the_gpu(rows):
    for name, x in softmax_inputs((rows, 50257)):
        out = torch.full_like(x, float("nan"))
        launch_softmax(x, out, path="regs", max_threads=1024, cols_per_thread=50)
        assert torch.isfinite(out).all(), name
        within_tolerance("softmax", x, out)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(64, 262144), (7, 70000)])
@pytest.mark.parametrize("hints", [True, False])
def test_the_split_plans_16_byte_form_on_the_gpu(shape, hints):
    for name, x in softmax_inputs(shape):
        out = torch.full_like(x, float("nan"))
        launch_softmax(x, out, path="split", vector=True, hints=hints)
        assert torch.isfinite(out).all(), name
        within_tolerance("softmax", x, out)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(64, 262144), (7, 70001)])
def test_the_split_plans_l2_hints_change_no_bit_on_the_gpu(shape):
    # The hints (cache_hints.py's PTX loads and stores with L2 policies) change where lines stay, not what is read
    for name, x in softmax_inputs(shape):
        hinted, plain = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
        launch_softmax(x, hinted, path="split", hints=True)
        launch_softmax(x, plain, path="split", hints=False)
        assert torch.equal(hinted, plain), name
        within_tolerance("softmax", x, hinted)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(64, 8192), (100, 16384), (37, 1000), (5, 1001)])
@pytest.mark.parametrize("offset", [0, 1])
def test_the_regs_plan_on_the_gpu_on_random_and_stress_rows(shape, offset):
    # The default regs plan with its 16-byte accesses (exact rows at 8192 and 16384 columns, padded at 1000) or,
    # at 1001 columns and one element off a 16-byte boundary, 4-byte ones
    from kernelscope.backends.numba.common import dram_gbps_per_sm

    assert dram_gbps_per_sm(0) > 10  # the driver's attributes were read (0 would hide a wide-DRAM GPU's plan)
    rows, cols = shape
    plan = plan_softmax(rows, cols, torch.device("cuda"))
    assert plan.path == "regs" and plan.vector
    for name, x in softmax_inputs(shape):
        if offset:  # the same rows, one element past a 16-byte boundary
            x = torch.cat([x.new_zeros(offset), x.view(-1)])[offset:].view(rows, cols)
        out = torch.full_like(x, float("nan"))
        launch_softmax(x, out)
        torch.cuda.synchronize()
        assert torch.isfinite(out).all(), name
        err = error_against_reference(OPS["softmax"], x, out)
        assert err <= OPS["softmax"].tolerance["float32"], (name, err)


def test_the_regs_plan_on_a_gpu_keeps_32_elements_a_thread_up_to_512_threads():
    # Not the row plan's thread limit (256): that would be 64 elements a thread at 16384 columns, 56.7% of
    # the copy bandwidth on the H100 against 88.1% with 32 a thread at 8192 columns
    from kernelscope.backends.numba.softmax import regs_plan

    shape = lambda plan: (plan.path, plan.threads, plan.unroll)  # noqa: E731 (fast_exp: its own test)
    assert shape(regs_plan(16384)) == ("regs", 512, 32) and shape(regs_plan(8192)) == ("regs", 256, 32)
    assert shape(regs_plan(1000)) == ("regs", 64, 16)  # at least 64 threads
    assert shape(regs_plan(4096)) == ("regs", 128, 32)
    assert shape(regs_plan(16384, max_threads=256)) == ("regs", 256, 64)  # asked for: the row plan's thread limit
    assert shape(regs_plan(32768)) == ("regs", 512, 64)
    assert shape(regs_plan(8192, ept=16)) == ("regs", 512, 16)  # asked for: half the elements, twice the threads
    assert shape(regs_plan(16384, ept=16, max_threads=1024)) == ("regs", 1024, 16)
    with pytest.raises(ValueError, match="a row of 32769 columns is wider than the regs plan holds"):
        regs_plan(32769)


@pytest.fixture
def fresh_gpu_facts():
    """softmax-numba's gpu_facts read anew in the test, and forgotten after it (its readers are patched there)."""
    from kernelscope.backends.numba import softmax as nb_softmax

    nb_softmax.gpu_facts.cache_clear()
    yield
    nb_softmax.gpu_facts.cache_clear()


def test_the_regs_plan_holds_16_elements_a_thread_where_the_dram_asks_more_of_each_sm(monkeypatch, fresh_gpu_facts):
    # The plan reads the GPU's DRAM bandwidth an SM (common.dram_gbps_per_sm, in gpu_facts), not its name: the
    # H200's 36.5 GB/s gets 512 threads x 16 at 8192 columns (95.6% of copy against 256 x 32's 95.0%), the H100's
    # 25.4 keeps 256 x 32. Nothing is launched: the plan is pure Python past the simulator's switch.
    from dataclasses import replace

    from kernelscope.backends.device import H100
    from kernelscope.backends.numba.softmax import gpu, launch

    shape = lambda plan: (plan.path, plan.threads, plan.unroll)  # noqa: E731
    cuda = torch.device("cuda", 0)
    monkeypatch.setattr(launch, "SIMULATED", False)
    monkeypatch.setattr(gpu, "sm_count", lambda index: 132)
    monkeypatch.setattr(gpu, "device_limits", lambda index: (227 * 1024 - 128, 50 * 2**20))
    monkeypatch.setattr(gpu, "dram_gbps_per_sm", lambda index: 36.5)
    assert gpu.gpu_facts(0) == replace(H100, name="cuda:0", dram_gbps_per_sm=36.5)
    assert shape(plan_softmax(8192, 8192, cuda)) == ("regs", 512, 16)
    assert shape(plan_softmax(64, 4096, cuda)) == ("regs", 256, 16)
    assert shape(plan_softmax(16384, 16384, cuda)) == ("regs", 512, 32)  # the threads run out first
    assert shape(plan_softmax(8192, 8192, cuda, cols_per_thread=32)) == ("regs", 256, 32)  # asked for
    monkeypatch.setattr(gpu, "dram_gbps_per_sm", lambda index: 25.4)
    gpu.gpu_facts.cache_clear()
    assert shape(plan_softmax(8192, 8192, cuda)) == ("regs", 256, 32)
    assert shape(plan_softmax(16384, 16384, cuda)) == ("regs", 512, 32)
    # elements a thread asked: a thread holds what covers the row, not rounded up to a power of two (64 would
    # spill at 1024 threads)
    assert shape(plan_softmax(512, 50257, cuda, path="regs", max_threads=1024, cols_per_thread=50)) == (
        "regs", 1024, 50)
    assert shape(plan_softmax(512, 50257, cuda, path="regs", max_threads=1024, cols_per_thread=40)) == (
        "regs", 1024, 50)
    assert shape(plan_softmax(512, 50257, cuda, path="regs", max_threads=1024)) == ("regs", 1024, 64)


def test_launchers_refuse_blocks_of_partial_warps():
    x = torch.ones(4, 4, device=DEVICE)
    with pytest.raises(ValueError, match="multiple of 32"):
        launch_square_flat(x, None, 48)
    with pytest.raises(ValueError, match="multiple of 32"):
        launch_softmax(x, plan=Plan("row", 40, 2))


TUNE_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "tune_numba.py"


def load_tune_script():
    spec = importlib.util.spec_from_file_location("tune_numba", TUNE_SCRIPT)
    tune = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tune)
    return tune


@simulated
def test_tuning_script_sweeps_run_and_check_under_the_simulator(monkeypatch):
    # The script runs on the GPU box only; here its sweeps run every configuration
    # (and its correctness check) at tiny shapes, with a table that calls instead of timing.
    tune = load_tune_script()
    calls = []

    class CallingTable:
        def __init__(self, title, copy_gbps=None):
            self.copy_gbps = 1.0

        def add(self, label, fn, nbytes, shape="", dtype="float32", graph=False):
            fn()
            calls.append((label, shape))

    swept = [o for s in tune.SOFTMAX_SWEEP.values() for o in s]
    all_overrides = [dict(o) for o in {tuple(sorted(o.items())) for o in swept if "plan" not in o}]
    # Plans asked as such, at a simulated block's size: the same path and fields, 32 threads x 2 and 36 kept
    asked = [{"plan": dataclasses.replace(o["plan"], threads=32, unroll=2, keep=36)} for o in swept if "plan" in o]
    assert asked and all(o["plan"].path == "regs" for o in asked)
    monkeypatch.setattr(tune, "Table", CallingTable)
    monkeypatch.setattr(tune, "DEVICE", DEVICE)
    monkeypatch.setattr(tune, "ELEMENTWISE_SHAPES", [(3, 70)])
    monkeypatch.setattr(tune, "MEAN_SHAPES", [(300,)])
    monkeypatch.setattr(tune, "SOFTMAX_SMALL", [])
    monkeypatch.setattr(tune, "SOFTMAX_SWEEP", {(1, 16): all_overrides, (2, 100): asked})
    # Blocks of 1024 simulated threads take seconds: the same configurations with at most two warps.
    for name in ("ELEMENTWISE_CONFIGS", "MEAN_CONFIGS"):
        monkeypatch.setattr(tune, name, [(min(c[0], 64),) + tuple(c[1:]) for c in getattr(tune, name)])
    tune.sweep_elementwise(None, False, "square", "square-numba-flat", tune.nb_square.launch_square_flat,
                           "torch.square", torch.square)
    tune.sweep_mean(None, False)
    tune.sweep_softmax(None, False)
    assert len(calls) == (2 + len(tune.ELEMENTWISE_CONFIGS)) + (2 + len(tune.MEAN_CONFIGS)) + (2 + len(all_overrides)) \
        + (2 + len(asked))
    assert sum("(asked)" in label for label, _ in calls) == len(asked)


def test_tuning_script_summary_compares_the_defaults_with_the_targets(capsys):
    tune = load_tune_script()
    rows = [{"config": f"{v} (catalog default)", "shape": shape, "pct_copy": 91.0 if v != "gelu-numba" else 80.0,
             "time_us": 1.0} for v, shapes in tune.BANDWIDTH_TARGETS.items() for shape in shapes]
    rows += [{"config": "mean-numba (catalog default)", "shape": str(2**24), "pct_copy": 0, "time_us": 30.0},
             {"config": "torch (torch.mean)", "shape": str(2**24), "pct_copy": 0, "time_us": 25.0}]
    tune.summarize(rows)
    lines = capsys.readouterr().out.splitlines()
    assert sum("(>= 90%: met)" in line for line in lines) == 6
    assert sum("(>= 90%: MISSED)" in line and "gelu-numba" in line for line in lines) == 2
    assert "MISSED" in lines[-1] and "torch.mean 25.0 us" in lines[-1]


@pytest.mark.gpu
def test_row_plan_opts_in_to_more_than_48_kib_of_shared_memory():
    # 20,000 columns are 80 KB a row: the row plan must opt in, not fall back to the split plan. (Asked for by
    # name: rows this wide that fill the SMs take the regs plan by default.)
    from kernelscope.backends.numba.softmax import shared_row

    x = OPS["softmax"].make_input((200, 20000), "float32", "cuda", 17)
    plan = plan_softmax(200, 20000, x.device, path="row")
    assert plan.path == "row"
    out = launch_softmax(x, plan=plan)
    torch.cuda.synchronize()
    kernel = shared_row.softmax_row_kernel(plan.threads, plan.unroll, plan.recompute, plan.online, plan.fast_exp)
    assert shared_row._OPTED_IN[id(kernel)]
    within_tolerance("softmax", x, out)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(140, 20000), (3, 70000), (512, 50257), (300, 16384), (1000, 1000)])
def test_softmax_plans_agree_on_the_gpu(shape):
    x = OPS["softmax"].make_input(shape, "float32", "cuda", 19)
    for path in (None, "split") + (("row",) if shape[1] <= 50257 else ()) + (("regs",) if shape[1] <= 16384 else ()):
        within_tolerance("softmax", x, launch_softmax(x, path=path))
    if shape[1] <= 16384:  # the regs plan with libdevice's fast exp, on the stress rows too
        within_tolerance("softmax", x, launch_softmax(x, path="regs", fast_exp=True))
        within_tolerance("softmax", x, launch_softmax(x, path="regs", min_blocks=2))  # 64 registers a thread
        for name, sx in softmax_inputs(shape):
            out = launch_softmax(sx, path="regs", fast_exp=True)
            assert torch.isfinite(out).all(), name
            within_tolerance("softmax", sx, out)
    # the row plan's online form and every plan's fast exp, on the stress rows too
    forms = [{"path": "split", "fast_exp": True}, {"path": "split", "reverse": True, "l2_share": 100.0},
             {"path": "exchange"}, {"path": "exchange", "parts": 2, "fast_exp": False},
             {"path": "resident"}, {"path": "resident", "vector": False, "hints": False, "fast_exp": False},
             {"path": "resident", "keep": 0}, {"path": "resident", "max_threads": 512, "keep": 4096, "unroll": 32}]
    if shape[1] <= 50257:
        forms += [{"path": "row", "online": True, "fast_exp": True}, {"path": "row", "online": True}]
    if 512 * 44 <= shape[1] <= 512 * 44 + 27729:  # two rows an SM: 512 x 44 registers, the rest in shared memory
        forms += [{"plan": Plan("regs", 512, 44, keep=27729, min_blocks=2, fast_exp=True)}]
    for form in forms:
        within_tolerance("softmax", x, launch_softmax(x, **form))
        for name, sx in softmax_inputs(shape):
            out = launch_softmax(sx, **form)
            assert torch.isfinite(out).all(), (form, name)
            within_tolerance("softmax", sx, out)
    if shape[1] > 60000:
        with pytest.raises(ValueError, match="does not fit"):
            launch_softmax(x, path="row")


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["exchange", "resident"])
def test_the_plans_with_counters_replay_in_a_cuda_graph(path):
    # The arrival and barrier counters are never reset: each replay of a captured call must wait for its own
    # pairs, not pass on the counts of the replay before. New logits between replays must give their own softmax.
    x = OPS["softmax"].make_input((300, 50257), "float32", "cuda", 23)
    y = torch.empty_like(x)
    launch_softmax(x, y, path=path)  # compiles, opts in, makes the buffers
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch_softmax(x, y, path=path)
    for seed in (29, 31, 37):
        x.copy_(OPS["softmax"].make_input(x.shape, "float32", "cuda", seed))
        graph.replay()
        torch.cuda.synchronize()
        within_tolerance("softmax", x, y)
