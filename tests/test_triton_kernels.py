"""The tuned Triton kernels' own logic: softmax's launch plan and each of its paths, mean's one-launch finish.

On a machine without a GPU the kernels run under the Triton interpreter, so
the shapes stay small; the plan's thresholds are parameters, which lets a
3x5000 softmax take the split path the GPU takes at 512x50257.
"""

import functools

import pytest
import torch

from kernelscope import backends
from kernelscope.check import error_against_reference
from kernelscope.ops import scaled
from kernelscope.ops import softmax as softmax_op
from kernelscope.ops import mean as mean_op

backends.configure_interpreters()  # before the kernel modules import triton's decorators

from kernelscope.backends.triton import mean as tmean  # noqa: E402
from kernelscope.backends.triton import softmax as tsoftmax  # noqa: E402
from kernelscope.backends.triton.softmax import softmax_plan  # noqa: E402

DEVICE = backends.default_device()
H100_SMS = 132


# --- softmax: the plan ----------------------------------------------------------

def _io(rows, cols, itemsize):
    return rows * cols * itemsize


@pytest.mark.parametrize("itemsize", [4, 2])
def test_plan_keeps_moderate_rows_whole(itemsize):
    for rows, cols in [(4096, 4096), (8192, 8192), (16384, 16384), (256, 256)]:
        plan = softmax_plan(rows, cols, itemsize, H100_SMS)
        assert plan.strategy == "row", (rows, cols, plan)
        assert plan.block == triton_next_pow2(cols) and plan.rows_per_program == 1
        assert plan.predict(rows, cols, itemsize) == {"dram_bytes": 2 * _io(rows, cols, itemsize),
                                                     "l2_reread_bytes": 0, "launches": 1, "group_bytes": 0}
    # num_warps grows with the row, within Triton's powers of two
    warps = [softmax_plan(4096, c, itemsize, H100_SMS).num_warps for c in (2048, 4096, 16384)]
    assert warps == sorted(warps) and all(w in (1, 2, 4, 8, 16) for w in warps)
    # at most FEW_WARPS up to FEW_WARPS_COLS columns (4 warps measured best at 4096), MAX_WARPS beyond
    assert [softmax_plan(4096, c, itemsize, H100_SMS).num_warps for c in (1024, 4096, 8192)] == [
        tsoftmax.FEW_WARPS, tsoftmax.FEW_WARPS, tsoftmax.MAX_WARPS]
    assert softmax_plan(4096, 4096, itemsize, H100_SMS, few_warps_cols=2048).num_warps == tsoftmax.MAX_WARPS


def test_plan_packs_narrow_rows_but_leaves_a_program_per_sm():
    # 1024-wide rows measured faster one to a program with 4 warps than packed 4 to a program
    for rows in (1024, 16384):
        plan = softmax_plan(rows, 1000, 4, H100_SMS)
        assert (plan.strategy, plan.block, plan.rows_per_program, plan.num_warps) == ("row", 1024, 1, 4)
    plan = softmax_plan(16384, 1000, 4, H100_SMS, narrow_cols=1024)  # the previous default
    assert (plan.strategy, plan.block, plan.rows_per_program, plan.num_warps) == ("narrow", 1024, 4, 16)
    plan = softmax_plan(16384, 500, 4, H100_SMS)
    assert (plan.strategy, plan.block, plan.rows_per_program) == ("narrow", 512, 8)
    # 64 or 256 rows cannot fill 132 SMs even one to a program: no packing
    assert softmax_plan(64, 64, 4, H100_SMS).rows_per_program == 1
    assert softmax_plan(256, 256, 4, H100_SMS).rows_per_program == 1
    # packing is capped at narrow_elems per program, in powers of two
    plan = softmax_plan(1 << 20, 64, 4, H100_SMS)
    assert plan.rows_per_program * plan.block == tsoftmax.NARROW_ELEMS
    assert softmax_plan(1 << 20, 64, 4, H100_SMS, narrow_cols=32).rows_per_program == 1


@pytest.mark.parametrize("rows,cols,itemsize", [(512, 50257, 4), (512, 50257, 2), (64, 262144, 4),
                                                (64, 262144, 2)])
def test_plan_splits_wide_rows_in_groups_that_fit_l2(rows, cols, itemsize):
    plan = softmax_plan(rows, cols, itemsize, H100_SMS, persistent=False)  # 512x50257's default: tiles
    assert plan.strategy == "split"
    assert plan.chunks == -(-cols // plan.block) and plan.block == tsoftmax.SPLIT_CHUNK
    groups = -(-rows // plan.group_rows)
    assert plan.group_rows * cols * itemsize <= tsoftmax.GROUP_BYTES
    # even groups: none is less than one row short of the others
    assert rows - (groups - 1) * plan.group_rows >= plan.group_rows - groups
    p = plan.predict(rows, cols, itemsize)
    assert p["launches"] == 2 * groups and p["l2_reread_bytes"] == _io(rows, cols, itemsize)
    assert p["dram_bytes"] == 2 * _io(rows, cols, itemsize)


def test_a_pipelined_plan_takes_one_launch_more_than_its_groups():
    plan = softmax_plan(64, 262144, 4, H100_SMS, pipelined=True)
    assert plan.strategy == "pipe" and plan.group_rows * 262144 * 4 <= tsoftmax.PIPE_GROUP_BYTES
    groups = -(-64 // plan.group_rows)
    assert groups > 1 and plan.launches(64) == groups + 1  # the split plan: 2 x groups
    assert plan.predict(64, 262144, 4)["dram_bytes"] == 2 * _io(64, 262144, 4)


def test_a_persistent_plan_is_one_launch_of_about_a_program_an_sm():
    plan = softmax_plan(512, 50257, 4, H100_SMS, persistent=True, persist_programs_per_sm=1)
    assert (plan.strategy, plan.programs, plan.stages, plan.launches(512)) == ("persist", H100_SMS, 4, 1)
    # what L2 must keep for the re-read: a grid's worth of rows, 26.5 MB of the H100's 50
    assert plan.programs * 50257 * 4 < 30e6 and plan.predict(512, 50257, 4)["l2_reread_bytes"] == _io(512, 50257, 4)
    # the default where "tiles" does not hold the row (tiles_max_cols=0 here): float32 rows enough for the grid
    # (H100: 62.7% of copy, split 56.3%); where L2's size is not known, 2 programs an SM
    assert softmax_plan(512, 50257, 4, H100_SMS, tiles_max_cols=0).strategy == "persist"
    assert softmax_plan(512, 50257, 4, H100_SMS, tiles_max_cols=0).programs == 2 * H100_SMS
    # 16 KiB chunks: 8192 bfloat16 columns (51.5% against split's 45.4%)
    bf16 = softmax_plan(512, 50257, 2, H100_SMS, tiles_max_cols=0)
    assert (bf16.strategy, bf16.block) == ("persist", tsoftmax.PERSIST_CHUNK_BYTES // 2)
    assert softmax_plan(512, 50257, 4, H100_SMS, tiles_max_cols=0).block == tsoftmax.PERSIST_CHUNK_BYTES // 4
    assert softmax_plan(64, 262144, 4, H100_SMS).strategy == "split"  # 64 rows for 264 programs
    assert softmax_plan(512, 50257, 4, H100_SMS, persistent=False).strategy == "split"
    assert softmax_plan(64, 262144, 2, H100_SMS, persistent=True, persist_programs_per_sm=2).programs == 64
    assert softmax_plan(4096, 4096, 4, H100_SMS, persistent=True).strategy == "row"  # rows one program holds
    # pass 1 folds a thread's share of each chunk into one (max, sum) pair: 4096 columns over 16 warps, 8 each,
    # two vectors of 4; 8192 bfloat16 columns, 16 each, two vectors of 8
    for itemsize in (4, 2):
        plan = softmax_plan(512, 50257, itemsize, H100_SMS, tiles_max_cols=0)
        assert (plan.num_warps, plan.group, plan.vectorize) == (16, 2, True)
        assert plan.group * (16 // itemsize) * 32 * plan.num_warps == plan.block
    assert softmax_plan(512, 50257, 4, H100_SMS, persistent=True, persist_group=1).group == 1
    with pytest.raises(ValueError, match="persist_group=3"):
        softmax_plan(512, 50257, 4, H100_SMS, persistent=True, persist_group=3)


H100_L2 = 50 << 20


def test_the_persist_grid_keeps_its_rows_in_flight_within_half_of_l2():
    # A grid's rows in flight are what pass 2 re-reads from L2. H100, 512x50257: float32 rows (201 KB)
    # at 2 programs an SM are 53 MB, the re-read missed (59.5% of copy, L2 hit 52%); at 1, 26.5 MB: 63.9%.
    # bfloat16 rows (100 KB) at 2 an SM are 26.5 MB: 61.2%.
    f32 = softmax_plan(512, 50257, 4, H100_SMS, l2_bytes=H100_L2, tiles_max_cols=0)
    bf16 = softmax_plan(512, 50257, 2, H100_SMS, l2_bytes=H100_L2, tiles_max_cols=0)
    assert (f32.strategy, f32.programs) == ("persist", H100_SMS)
    assert (bf16.strategy, bf16.programs) == ("persist", 2 * H100_SMS)
    for plan, itemsize in ((f32, 4), (bf16, 2)):
        assert plan.programs * 50257 * itemsize <= 0.55 * H100_L2
    # a lone program an SM keeps 3 chunks in flight (4 stages), two keep 2 each (tune_triton.py --quick,
    # float32 at one an SM: 4 stages 66.4% of copy on the H100 and 60.6% on the H200, 3 stages 63.5% and 55.3%;
    # bfloat16 at two an SM: 3 stages 60.3% and 51.1%, 4 stages 59.5% and 49.6%)
    assert (f32.stages, bf16.stages) == (4, 3)
    assert softmax_plan(512, 50257, 4, H100_SMS, l2_bytes=H100_L2, persist_stages=6, tiles_max_cols=0).stages == 6
    # narrower rows: never more than 2 an SM; rows wider than half of L2 over the SMs: still 1
    assert tsoftmax.persist_programs(20_000 * 4, H100_SMS, H100_L2) == tsoftmax.PERSIST_MAX_PROGRAMS_PER_SM
    assert tsoftmax.persist_programs(1 << 20, H100_SMS, H100_L2) == 1
    assert tsoftmax.persist_programs(201_028, H100_SMS, 0) == tsoftmax.PERSIST_MAX_PROGRAMS_PER_SM
    # 512 rows fill the grid of 132 or 264; fewer rows than the grid keep the split plan
    assert softmax_plan(200, 60000, 4, H100_SMS, l2_bytes=H100_L2).strategy == "persist"
    assert softmax_plan(200, 60000, 2, H100_SMS, l2_bytes=H100_L2).strategy == "split"


def test_plan_thresholds_are_parameters():
    plan = softmax_plan(3, 5000, 4, 4, max_row_block=1024, chunk=1024, group_bytes=2 * 5000 * 4, tiles_max_cols=0)
    assert (plan.strategy, plan.chunks, plan.group_rows, plan.launches(3)) == ("split", 5, 2, 4)
    assert softmax_plan(3, 5000, 4, 4).strategy == "row"
    # a group is never less than a row, whatever the budget
    assert softmax_plan(3, 5000, 4, 4, max_row_block=1024, group_bytes=1, persistent=False).group_rows == 1
    assert softmax_plan(3, 5000, 4, 4, max_row_block=1024, split_warps=2, persistent=False).num_warps == 2
    assert softmax_plan(3, 5000, 4, 4, max_row_block=1024).strategy == "tiles"


def test_a_row_is_cut_into_at_most_three_power_of_two_tiles():
    # 50257 columns: 51200 slots (2% spare) where one power of two, 65536, would be 30% spare
    assert tsoftmax.row_tiles(50257) == (32768, 16384, 2048)
    assert tsoftmax.row_tiles(65536) == (65536, 1, 1) and tsoftmax.row_tiles(4000) == (4096, 1, 1)
    assert tsoftmax.row_tiles(14003) == (8192, 4096, 2048)
    for cols in (2049, 20000, 33000, 50257, 60000, 65535):
        tiles = tsoftmax.row_tiles(cols)
        assert sum(t for t in tiles if t > 1) >= cols and all(t & (t - 1) == 0 for t in tiles), (cols, tiles)
        assert list(tiles) == sorted(tiles, reverse=True)
    # 512x50257's plan in both dtypes (H100: float32 75.1% of copy against persist's 67.5%, bfloat16
    # 63.3% against 61.3%): a program a row
    for itemsize in (4, 2):
        plan = softmax_plan(512, 50257, itemsize, H100_SMS)
        assert (plan.strategy, plan.tiles, plan.block, plan.num_warps) == ("tiles", (32768, 16384, 2048), 51200, 32)
        assert plan.launches(512) == 1
        assert plan.predict(512, 50257, itemsize)["l2_reread_bytes"] == 0  # one read, one write
    assert softmax_plan(64, 262144, 4, H100_SMS).strategy != "tiles"  # too wide for a program's registers
    assert softmax_plan(512, 51201, 4, H100_SMS).strategy == "persist"  # wider than TILES_MAX_COLS
    # asking for persist or pipe gets them
    assert softmax_plan(512, 50257, 4, H100_SMS, persistent=True).strategy == "persist"
    assert softmax_plan(512, 50257, 4, H100_SMS, pipelined=True).strategy == "pipe"
    assert softmax_plan(512, 50257, 4, H100_SMS, tiles_max_cols=0).strategy == "persist"


def triton_next_pow2(n):
    return 1 << (n - 1).bit_length()


# --- softmax: each path against the float64 reference ------------------------------

# Forced plans on small shapes, one per path: (shape, plan arguments, expected strategy).
PATHS = {
    "narrow": ((13, 100), dict(sm_count=2), "narrow"),  # 4 rows a program, the last program part empty
    "row": ((5, 3000), dict(sm_count=4), "row"),
    # 3 rows in groups of 2 (so the stats buffer is reused), 5 chunks a row, the last one part full
    "split": ((3, 5000), dict(sm_count=4, max_row_block=1024, chunk=1024, group_bytes=2 * 5000 * 4,
                              tiles_max_cols=0), "split"),
    # 5 rows in groups of 2, 2 and 1: four launches (pass 1 alone, two with both passes, the last one with more
    # pass-2 programs than pass-1 ones, then pass 2 alone), the statistics' two slots each used twice
    "pipe": ((5, 5000), dict(sm_count=4, max_row_block=1024, chunk=1024, pipelined=True,
                             pipe_group_bytes=2 * 5000 * 4), "pipe"),
    # 5 rows over 2 programs: each takes its rows in turn (3 and 2), 5 chunks a row, the last one part full; 5003
    # columns: each row starts at another offset from 16 bytes, so the cut's head and tail differ row to row
    "persist": ((5, 5003), dict(sm_count=2, max_row_block=1024, chunk=1024, persistent=True), "persist"),
    # the same, a (max, sum) pair per element and no 16-byte cut (the form before 16-byte rows), and tiles of 32
    "persist-per-element": ((5, 5003), dict(sm_count=2, max_row_block=1024, chunk=1024, persistent=True,
                                            persist_group=1, persist_vectorize=False), "persist"),
    "persist-group-32": ((5, 5000), dict(sm_count=2, max_row_block=1024, chunk=1024, persistent=True,
                                         persist_group=32), "persist"),
    # a program a row held in three tiles (8192 + 4096 + 2048 slots for 14003 columns, the last part masked);
    # 14003 columns: each row's 16-byte cut differs, as 50257's does
    "tiles": ((3, 14003), dict(sm_count=4, max_row_block=1024, tiles_max_cols=16384), "tiles"),
    # a row that one tile covers, the other two unused (one masked-off column each)
    "tiles-one": ((3, 4000), dict(sm_count=4, max_row_block=1024, tiles_max_cols=16384), "tiles"),
}


def _input(kind, shape, dtype, seed=0):
    if kind == "masked":  # about half of each row at -inf
        return softmax_op.masked(shape, dtype, DEVICE, seed)
    if kind == "offset":  # exp without the max subtracted overflows
        return scaled(shape, dtype, DEVICE, seed, offset=1000.0)
    if kind == "large":
        return scaled(shape, dtype, DEVICE, seed, scale=100.0)
    if kind == "masked-chunk":  # a whole chunk of the split at -inf: its sum is 0, not NaN
        x = scaled(shape, dtype, DEVICE, seed)
        x[:, 1024:2048] = float("-inf")
        return x
    return scaled(shape, dtype, DEVICE, seed)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("kind", ["normal", "masked", "offset", "large", "masked-chunk"])
@pytest.mark.parametrize("path", list(PATHS))
def test_softmax_path_matches_reference(path, kind, dtype):
    shape, kwargs, strategy = PATHS[path]
    x = _input(kind, shape, dtype)
    kwargs = dict(kwargs)
    for budget in ("group_bytes", "pipe_group_bytes"):
        if budget in kwargs:
            kwargs[budget] = 2 * shape[1] * x.element_size()
    plan = softmax_plan(*shape, x.element_size(), **kwargs)
    assert plan.strategy == strategy
    out = torch.full_like(x, float("nan"))  # an element never written stays NaN and fails
    tsoftmax.softmax_planned(x, out, plan)
    assert torch.isfinite(out).all()
    err = error_against_reference(softmax_op.OP, x, out)
    assert err <= softmax_op.OP.tolerance[dtype], (path, kind, dtype, err)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("cols", [3, 13, 1031])
@pytest.mark.parametrize("where", ["aligned", "x off 16 bytes", "y off 16 bytes", "y strided"])
@pytest.mark.parametrize("strategy", ["persist", "tiles"])
def test_rows_cut_at_16_bytes_match_the_reference(strategy, cols, where, dtype):
    # Rows narrower than a vector (all edge), and wider, at every offset from 16 bytes; the cut only where x and
    # y start aligned with one row stride, else one element an access (cut_vec says which).
    rows = 9
    plan = softmax_plan(rows, cols, 4 if dtype == "float32" else 2, 2, max_row_block=2, chunk=256,
                        persistent=True if strategy == "persist" else None)
    assert plan.strategy == strategy and plan.vectorize
    if where == "x off 16 bytes":  # the same row stride as y, one element past an aligned start
        x = scaled((rows * cols + 1,), dtype, DEVICE, 0)[1:].view(rows, cols)
    else:
        x = scaled((rows, cols), dtype, DEVICE, 0)
    nan = dict(dtype=x.dtype, device=DEVICE)
    if where == "y off 16 bytes":  # the same row stride as x, one element past an aligned start
        y = torch.full((rows * cols + 1,), float("nan"), **nan)[1:].view(rows, cols)
    elif where == "y strided":  # aligned, rows cols + 8 apart
        y = torch.full((rows, cols + 8), float("nan"), **nan)[:, :cols]
    else:
        y = torch.full((rows, cols), float("nan"), **nan)
    vec = tsoftmax.persist_vec(plan, x, y) if strategy == "persist" else tsoftmax.cut_vec(x, y)
    assert vec == (16 // x.element_size() if where == "aligned" else 1), (where, vec)
    tsoftmax.softmax_planned(x, y, plan)
    assert torch.isfinite(y).all()
    err = error_against_reference(softmax_op.OP, x, y)
    assert err <= softmax_op.OP.tolerance[dtype], (cols, where, dtype, err)


def test_softmax_tuned_allocates_its_output():
    x = _input("normal", (31, 1031), "float32")
    torch.testing.assert_close(tsoftmax.softmax_tuned(x), torch.softmax(x, dim=-1))


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # -inf padding times a free exp
def test_the_floors_probe_runs_the_wide_row_plans_with_free_exps_and_the_suite_keeps_its_exps():
    # scripts/gpu/floors.py --kernels times each wide-row plan beside a copy of the package whose wide-row kernels
    # take every exp as an identity (the design's floor); the suite's kernels have no such switch
    import inspect
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "gpu"))
    import floors

    free = floors.triton_free_exps()
    for module in (free.split, free.persistent, free.tiles):
        assert "tl.exp(" not in inspect.getsource(module) and "_free_exp(" in inspect.getsource(module)
    for path in ("split", "pipe", "persist", "tiles"):
        shape, kwargs, strategy = PATHS[path]
        x = _input("normal", shape, "float32")
        plan = softmax_plan(*shape, x.element_size(), **kwargs)
        assert plan.strategy == strategy
        without_exps = free.softmax_planned(x, torch.zeros_like(x), plan)
        softmax = tsoftmax.softmax_planned(x, torch.zeros_like(x), plan)
        torch.testing.assert_close(softmax, torch.softmax(x, dim=-1))
        assert not torch.equal(without_exps, softmax), path


# --- mean: one launch, the last program finishes -------------------------------------

def test_mean_programs_make_equal_steps():
    n, block = 2**24, 4096
    programs = tmean.mean_programs(n, block, 4 * H100_SMS)
    assert programs == 512  # 8 steps each, not 528 programs of 7 or 8
    for n in (1, 4095, 4097, 2**24 + 1, 2**28):
        p = tmean.mean_programs(n, block, 528)
        steps = -(-n // (block * p))
        assert p <= 528 and (p - 1) * block * steps < n <= p * block * steps


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("finish_block", [tmean.FINISH_BLOCK, 1])  # 1: the finish loops over the partials
def test_mean_one_launch_resets_its_counter_and_calls_again(dtype, finish_block, monkeypatch):
    monkeypatch.setattr(tmean, "FINISH_BLOCK", finish_block)
    monkeypatch.setattr(tmean, "_tuned_launch", functools.cache(tmean._tuned_launch.__wrapped__))  # kept per size
    counter = tmean.arrival_counter(torch.device(DEVICE))
    for seed, n in [(1, 10007), (2, 10007), (3, 5000)]:  # several programs each (the loop loops on the CPU)
        x = mean_op.make_input((n,), dtype, DEVICE, seed)
        out = torch.full((), float("nan"), device=DEVICE, dtype=x.dtype)
        tmean.mean_tuned(x, out)
        # a finish that never ran, or ran on a stale count, leaves NaN or the last call's mean
        assert error_against_reference(mean_op.OP, x, out) <= mean_op.OP.tolerance[dtype], (seed, n)
        assert counter.item() == 0


def test_a_one_program_mean_writes_the_mean_without_the_counter():
    # 4096 elements (the suite's smallest mean) are one program's block: its sum is the total. The counter is
    # not touched: set to 5 (as if other programs had arrived), the counting path would never find itself last.
    counter = tmean.arrival_counter(torch.device(DEVICE))
    counter.fill_(5)
    try:
        for n in (4096, 1):
            x = mean_op.make_input((n,), "float32", DEVICE, 6)
            assert tmean.mean_programs(n, tmean.TUNED_BLOCK, 528) == 1
            out = torch.full((), float("nan"), device=DEVICE, dtype=x.dtype)
            tmean.mean_tuned(x, out)
            assert error_against_reference(mean_op.OP, x, out) <= mean_op.OP.tolerance["float32"], n
            assert counter.item() == 5
    finally:
        counter.zero_()


@pytest.mark.parametrize("overrides", [dict(contiguous=True), dict(evict="evict_first"),
                                       dict(contiguous=True, block=1024, num_warps=4, num_stages=2)])
def test_mean_one_pass_launch_variants(overrides):
    # the tuning script's candidates: contiguous spans (the last one part full), evict_first loads, stages
    counter = tmean.arrival_counter(torch.device(DEVICE))
    for seed, n in [(4, 10007), (5, 4096 * 2 + 1)]:
        x = mean_op.make_input((n,), "float32", DEVICE, seed)
        out = torch.full((), float("nan"), device=DEVICE, dtype=x.dtype)
        tmean.mean_one_pass(x, out, **overrides)
        assert error_against_reference(mean_op.OP, x, out) <= mean_op.OP.tolerance["float32"], (overrides, n)
        assert counter.item() == 0


# --- the interpreter, lightened (backends/triton/__init__.py) ---------------------------------------------------

@pytest.mark.skipif(backends.cuda_available(), reason="the interpreter runs where torch sees no GPU")
def test_the_interpreter_drops_only_work_whose_result_it_threw_away():
    import triton.language as tl
    from triton.runtime import interpreter

    options = interpreter.interpreter_builder.options
    assert not options.debug and not options.sanitize_overflow  # no debug mode: the checks were never asserted
    lookup = interpreter._get_np_dtype
    scalars = [tl.int1, tl.int8, tl.uint8, tl.int16, tl.uint16, tl.int32, tl.uint32, tl.int64, tl.uint64,
               tl.float16, tl.bfloat16, tl.float32, tl.float64]
    for dtype in scalars + [tl.pointer_type(tl.float32), tl.block_type(tl.float16, [4]),
                            tl.block_type(tl.pointer_type(tl.bfloat16), [8])]:
        assert lookup(dtype) == lookup.__wrapped__(dtype) == lookup(dtype), dtype
    assert set(scalars) <= set(lookup.memo)  # pointer and block types are unhashable: never memoized
    assert not any(isinstance(k, (tl.pointer_type, tl.block_type)) for k in lookup.memo)
    # one value's float conversions, remembered: the same bits out as the interpreter's own, every bfloat16 once
    import numpy as np

    convert = interpreter._convert_float
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for bits in patterns[::7]:
        one = np.array([bits], dtype=np.uint16)
        for _ in range(2):  # converted, then remembered
            assert convert(one, tl.bfloat16, tl.float32, None).tobytes() == \
                convert.__wrapped__(one, tl.bfloat16, tl.float32, None).tobytes(), bits
    block = convert(patterns, tl.bfloat16, tl.float32, None)  # a block converts as before, not remembered
    assert block.tobytes() == convert.__wrapped__(patterns, tl.bfloat16, tl.float32, None).tobytes()
    assert all(len(key[0]) <= 8 for key in convert.memo)  # single values only
