"""The tuned Triton kernels past 2^31 elements: their offsets from a program id or a row are 64-bit.

The interpreter cannot hold 2^31 elements, so on the CPU path the sources are read for the 64-bit casts, the
catalog for the limits, and small inputs at block and row edges for unchanged results; the GPU test runs each
tuned variant on an input past 2^31 elements.
"""

import inspect

import pytest
import torch

from kernelscope import backends
from kernelscope.catalog import INT32, VARIANTS

backends.configure_interpreters()  # before the kernel modules import triton's decorators

from kernelscope.backends.triton import gelu as tgelu  # noqa: E402
from kernelscope.backends.triton import mean as tmean  # noqa: E402
from kernelscope.backends.triton import square as tsquare  # noqa: E402
from kernelscope.backends.triton.softmax import lecture, online, persistent, pipe, row_cut, split, tiles  # noqa: E402
from kernelscope.backends.triton.softmax import whole_rows  # noqa: E402

DEVICE = backends.default_device()

TUNED = ("square-triton-flat1024", "square-triton-flat256", "square-triton-flat4096", "square-triton-direct",
         "gelu-triton", "mean-triton-tuned", "softmax-triton-tuned")
THIRTY_TWO_BIT = ("square-triton-row", "mean-triton-lecture", "softmax-triton-row", "softmax-triton-online")


def source(kernel) -> str:
    """A @triton.jit function's source (a JITFunction, or the interpreter's stand-in: both keep it as .fn)."""
    return inspect.getsource(getattr(kernel, "fn", kernel))


# --- the 64-bit offsets, in the sources ---------------------------------------------------------------------

@pytest.mark.parametrize("kernel", [tsquare.square_flat_kernel, tgelu.gelu_kernel,
                                    whole_rows.softmax_rows_tuned_kernel, tiles.softmax_tiles_kernel])
def test_a_programs_start_is_64_bit(kernel):
    assert "tl.program_id(0).to(tl.int64)" in source(kernel)


def test_mean_moves_its_block_pointer_in_64_bits_in_both_forms():
    src = source(tmean.mean_one_pass_kernel)
    contiguous, grid_stride = src.split("if CONTIGUOUS:")[1].split("    else:")[:2]
    for form in (contiguous, grid_stride):
        assert "x_block = x_ptr + pid.to(tl.int64)" in form
        assert "x_block +=" in form and "tl.load(x_block + lanes" in form
    assert "programs.to(tl.int64) * BLOCK" in grid_stride


def test_softmax_rows_and_chunks_start_in_64_bits():
    # persist: rows taken in turn from a 64-bit program id; tiles and persist cut a 64-bit row (row_cut.py)
    assert "tl.range(tl.program_id(0).to(tl.int64)" in source(persistent.softmax_persistent_kernel)
    for kernel in (persistent.softmax_persistent_kernel, tiles.softmax_tiles_kernel):
        assert "_row_cut(" in source(kernel)
    cut = source(row_cut._row_cut)
    assert "x_start = row * x_row_stride" in cut and "x_ptr + x_start" in cut
    # split and pipe: every chunk found through _chunk_at, whose row and chunk are 64-bit
    at = source(split._chunk_at)
    assert "row.to(tl.int64) * row_stride" in at and "chunk.to(tl.int64) * CHUNK" in at
    for helper in (split._chunk_stats, split._chunk_write):
        assert "_chunk_at(" in source(helper) and "row_stride + cols" not in source(helper)
    assert "_chunk_stats(" in source(pipe.softmax_pipe_kernel)
    assert "_chunk_write(" in source(pipe.softmax_pipe_kernel)


@pytest.mark.parametrize("kernel", [tsquare.square_row_kernel, tmean.mean_lecture_kernel,
                                    lecture.softmax_row_kernel, online.softmax_online_kernel])
def test_the_lecture_and_online_kernels_keep_32_bit_offsets(kernel):
    assert "int64" not in source(kernel)


def test_the_catalog_lifts_the_limit_of_the_tuned_triton_variants_only():
    for name in TUNED:
        assert VARIANTS[name].max_numel is None, name
        assert VARIANTS[name].unsupported((2**31 + 2**20,), "float32") is None, name
    for name in THIRTY_TWO_BIT:
        assert VARIANTS[name].max_numel == INT32, name
    triton = {v.name for v in VARIANTS.values() if v.backend == "triton"}
    assert triton == set(TUNED) | set(THIRTY_TWO_BIT)  # a new Triton variant says which it is


# --- unchanged results at the edges of blocks and rows (the interpreter) --------------------------------------

@pytest.mark.parametrize("n", [1, 255, 256, 257, 1024 + 3, 3 * 4096 + 1])
def test_square_and_gelu_cover_every_element_to_the_last_block(n):
    x = torch.randn(n, device=DEVICE)
    for fn in (tsquare.square_flat, tsquare.square_flat256, tsquare.square_flat4096, tsquare.square_flat_direct):
        y = torch.full_like(x, float("nan"))
        torch.testing.assert_close(fn(x, y), x * x, rtol=0, atol=0)
    y = torch.full_like(x, float("nan"))
    torch.testing.assert_close(tgelu.gelu(x, y), torch.nn.functional.gelu(x, approximate="tanh"),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("contiguous", [False, True])
@pytest.mark.parametrize("n", [5, 64, 4 * 64, 4 * 64 + 3, 5 * 64 + 3, 2 * 64 + 1])
def test_mean_reads_whole_blocks_then_the_tail_in_both_forms(n, contiguous):
    # 64-element blocks over the interpreter's two programs: a tail or none, and (contiguous, 2 x 64 + 1) a
    # last span with a block past the end, which must read nothing
    x = torch.rand(n, device=DEVICE) + 0.5
    got = tmean.mean_one_pass(x, block=64, contiguous=contiguous)
    assert abs(got.item() - x.double().mean().item()) <= 1e-6


# --- on the GPU: past 2^31 elements ---------------------------------------------------------------------------

PAST_INT32 = 2**31 + 2**20
CHUNK = 2**28  # references a chunk at a time: no whole-size temporaries


def _free():
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n in TUNED if n.startswith(("square", "gelu"))])
def test_elementwise_variants_past_2_31_elements(name):
    x = torch.randn(PAST_INT32, device="cuda")
    y = torch.full_like(x, float("nan"))
    VARIANTS[name](x, y)
    for start in range(0, PAST_INT32, CHUNK):
        xs, ys = x[start:start + CHUNK], y[start:start + CHUNK]
        if name.startswith("square"):
            assert torch.equal(ys, xs * xs), (name, start)
        else:
            torch.testing.assert_close(ys, torch.nn.functional.gelu(xs, approximate="tanh"), rtol=1e-5, atol=1e-5)
    del x, y, xs, ys
    _free()


@pytest.mark.gpu
@pytest.mark.parametrize("contiguous", [False, True])
def test_mean_past_2_31_elements(contiguous):
    x = torch.rand(PAST_INT32, device="cuda") + 0.5
    x[-2**20:] += 1.0  # the elements past 2^31 count: the mean moves by about 2^-11 with them
    want = sum(x[s:s + CHUNK].double().sum().item() for s in range(0, PAST_INT32, CHUNK)) / PAST_INT32
    got = VARIANTS["mean-triton-tuned"](x) if not contiguous else tmean.mean_one_pass(x, contiguous=True)
    assert abs(got.item() - want) <= 1e-5 * abs(want), (got.item(), want)
    del x
    _free()


# rows x cols past 2^31, each taking another of softmax-triton-tuned's plans on an H100 (plan noted)
SOFTMAX_PAST_INT32 = [
    (16384, 131136),  # persist
    (4194304, 520),  # row
    (4198400, 512),  # narrow, 8 rows a program
    (42800, 50257),  # tiles
    (64, 33570816),  # split
]


def _check_rows(x, y, rows):
    for r in rows:
        torch.testing.assert_close(y[r], torch.softmax(x[r].double(), dim=-1).float(), rtol=1e-4, atol=1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SOFTMAX_PAST_INT32)
def test_softmax_tuned_past_2_31_elements(shape):
    rows, cols = shape
    assert rows * cols > 2**31
    x = torch.randn(shape, device="cuda")
    y = torch.full_like(x, float("nan"))
    VARIANTS["softmax-triton-tuned"](x, y)
    _check_rows(x, y, [0, 1, rows // 2, rows - 2, rows - 1])
    del x, y
    _free()


@pytest.mark.gpu
def test_softmax_pipe_plan_past_2_31_elements():
    from kernelscope.backends.triton.softmax import softmax_plan, softmax_planned

    rows, cols = 64, 33570816
    x = torch.randn(rows, cols, device="cuda")
    y = torch.full_like(x, float("nan"))
    plan = softmax_plan(rows, cols, 4, torch.cuda.get_device_properties(0).multi_processor_count, pipelined=True)
    assert plan.strategy == "pipe"
    softmax_planned(x, y, plan)
    _check_rows(x, y, [0, rows // 2, rows - 1])
    del x, y
    _free()
