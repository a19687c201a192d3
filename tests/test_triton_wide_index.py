"""The tuned Triton kernels past 2^31 elements: a 64-bit form of each (its WIDE constexpr) for inputs past 2^30.

Under 2^30 elements the kernels keep their 32-bit offsets, so their speed at every benchmark size is the one they
had; over it, program, row and block offsets are 64-bit. The interpreter cannot hold 2^31 elements, so on the CPU
path the 64-bit forms run on small inputs (wide_index forced) against the reference, and the GPU tests run each
tuned variant, and each softmax plan, on an input past 2^31 elements.
"""

import inspect

import pytest
import torch

from kernelscope import backends
from kernelscope.catalog import INT32, VARIANTS

backends.configure_interpreters()  # before the kernel modules import triton's decorators

from kernelscope.backends import triton as ktriton  # noqa: E402
from kernelscope.backends.triton import gelu as tgelu  # noqa: E402
from kernelscope.backends.triton import mean as tmean  # noqa: E402
from kernelscope.backends.triton import square as tsquare  # noqa: E402
from kernelscope.backends.triton.softmax import launch as softmax_launch  # noqa: E402
from kernelscope.backends.triton.softmax import lecture, online  # noqa: E402

DEVICE = backends.default_device()

TUNED = ("square-triton-flat1024", "square-triton-flat256", "square-triton-flat4096", "square-triton-direct",
         "gelu-triton", "mean-triton-tuned", "softmax-triton-tuned")
THIRTY_TWO_BIT = ("square-triton-row", "mean-triton-lecture", "softmax-triton-row", "softmax-triton-online")


def source(kernel) -> str:
    """A @triton.jit function's source (a JITFunction, or the interpreter's stand-in: both keep it as .fn)."""
    return inspect.getsource(getattr(kernel, "fn", kernel))


def test_the_64_bit_form_is_taken_past_2_30_elements_only():
    assert not ktriton.wide_index(2**28) and not ktriton.wide_index(2**30)
    assert ktriton.wide_index(2**30 + 1) and ktriton.wide_index(16384 * 151936)


@pytest.fixture
def wide(monkeypatch):
    """Every tuned launch in its 64-bit form, whatever the input's size."""
    for module in (tsquare, tgelu, tmean, softmax_launch):
        monkeypatch.setattr(module, "wide_index", lambda numel: True)


@pytest.mark.parametrize("n", [1, 257, 3 * 4096 + 1])
def test_square_and_gelu_64_bit_forms_cover_every_element(wide, n):
    x = torch.randn(n, device=DEVICE)
    for fn in (tsquare.square_flat, tsquare.square_flat256, tsquare.square_flat4096, tsquare.square_flat_direct):
        y = torch.full_like(x, float("nan"))
        torch.testing.assert_close(fn(x, y), x * x, rtol=0, atol=0)
    y = torch.full_like(x, float("nan"))
    torch.testing.assert_close(tgelu.gelu(x, y), torch.nn.functional.gelu(x, approximate="tanh"),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("contiguous", [False, True])
@pytest.mark.parametrize("n", [5, 4 * 64 + 3, 2 * 64 + 1])
def test_mean_64_bit_form_in_both_loops(wide, n, contiguous):
    x = torch.rand(n, device=DEVICE) + 0.5
    got = tmean.mean_one_pass(x, block=64, contiguous=contiguous)
    assert abs(got.item() - x.double().mean().item()) <= 1e-6


@pytest.mark.parametrize("path", ["narrow", "row", "split", "pipe", "persist", "tiles"])
def test_every_softmax_plans_64_bit_form(wide, path):
    from test_triton_kernels import PATHS

    from kernelscope.backends.triton.softmax.plan import softmax_plan

    shape, kwargs, strategy = PATHS[path]
    plan = softmax_plan(*shape, 4, **kwargs)
    x = torch.randn(shape, device=DEVICE)
    y = torch.full_like(x, float("nan"))
    softmax_launch.softmax_planned(x, y, plan)
    assert plan.strategy == strategy
    torch.testing.assert_close(y, torch.softmax(x.double(), dim=-1).float(), rtol=1e-5, atol=1e-7)


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


# --- on the GPU: past 2^31 elements ---------------------------------------------------------------------------

PAST_INT32 = (16384, 131073)  # 2^31 + 16384 elements
CHUNK = 2**28  # references a chunk at a time: no whole-size temporaries


@pytest.fixture
def free_gpu():
    """The GPU's memory handed back after the test, failed or not (a failure's traceback keeps its tensors)."""
    yield
    import gc

    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n in TUNED if n.startswith(("square", "gelu"))])
def test_elementwise_variants_past_2_31_elements(free_gpu, name):
    x = torch.randn(PAST_INT32, device="cuda")
    y = torch.full_like(x, float("nan"))
    VARIANTS[name](x, y)
    flat_x, flat_y = x.view(-1), y.view(-1)
    for start in range(0, flat_x.numel(), CHUNK):
        xs, ys = flat_x[start:start + CHUNK], flat_y[start:start + CHUNK]
        if name.startswith("square"):
            assert torch.equal(ys, xs * xs), (name, start)
        else:
            torch.testing.assert_close(ys, torch.nn.functional.gelu(xs, approximate="tanh"), rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("contiguous", [False, True])
def test_mean_past_2_31_elements(free_gpu, contiguous):
    n = 2**31 + 2**20
    x = torch.rand(n, device="cuda") + 0.5
    x[-2**20:] += 1.0  # the elements past 2^31 count: the mean moves by about 2^-11 with them
    want = sum(x[s:s + CHUNK].double().sum().item() for s in range(0, n, CHUNK)) / n
    got = VARIANTS["mean-triton-tuned"](x) if not contiguous else tmean.mean_one_pass(x, contiguous=True)
    assert abs(got.item() - want) <= 1e-5 * abs(want), (got.item(), want)


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
def test_softmax_tuned_past_2_31_elements(free_gpu, shape):
    rows, cols = shape
    assert rows * cols > 2**31
    x = torch.randn(shape, device="cuda")
    y = torch.full_like(x, float("nan"))
    VARIANTS["softmax-triton-tuned"](x, y)
    _check_rows(x, y, [0, 1, rows // 2, rows - 2, rows - 1])


@pytest.mark.gpu
def test_softmax_pipe_plan_past_2_31_elements(free_gpu):
    from kernelscope.backends.triton.softmax import softmax_plan, softmax_planned

    rows, cols = 64, 33570816
    x = torch.randn(rows, cols, device="cuda")
    y = torch.full_like(x, float("nan"))
    plan = softmax_plan(rows, cols, 4, torch.cuda.get_device_properties(0).multi_processor_count, pipelined=True)
    assert plan.strategy == "pipe"
    softmax_planned(x, y, plan)
    _check_rows(x, y, [0, rows // 2, rows - 1])
