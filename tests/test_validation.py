"""Bad input gets a clear error that names the variant and the problem."""

import pytest
import torch

from kernelscope.catalog import VARIANTS, get

TORCH, TRITON, CUDA = "square-torch", "square-triton-row", "square-cuda-lecture"


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_variant_refuses_bad_input(name):
    v = VARIANTS[name]
    op = v.op_spec
    good_shape = (3,) * op.ndim
    with pytest.raises(TypeError, match=f"{name}: expected a torch.Tensor"):
        v([1.0, 2.0])
    with pytest.raises(TypeError, match=f"{name}: dtype torch.int32 not supported"):
        v(torch.ones(good_shape, dtype=torch.int32))
    with pytest.raises(TypeError, match=f"{name}: dtype torch.float64 not supported"):
        v(torch.ones(good_shape, dtype=torch.float64))
    with pytest.raises(ValueError, match=f"{name}: expected a {op.ndim}-D tensor"):
        v(torch.ones((2,) * (op.ndim + 1)))
    with pytest.raises(ValueError, match=f"{name}: empty tensor"):
        v(torch.ones((0,) * op.ndim))


@pytest.mark.parametrize("name", [n for n, v in VARIANTS.items() if v.backend not in ("torch", "torch-compile")])
def test_raw_kernels_refuse_non_contiguous_or_wrong_device(name):
    v = VARIANTS[name]
    if v.op_spec.ndim == 2:
        x = torch.randn(8, 6).t()
        if v.backend != "cuda" and not torch.cuda.is_available():
            with pytest.raises(ValueError, match=f"{name}: the kernel needs a contiguous tensor"):
                v(x)
    if v.backend == "cuda" and not torch.cuda.is_available():
        with pytest.raises(ValueError, match=f"{name}: needs a CUDA tensor, got one on cpu"):
            v(torch.randn((4,) * v.op_spec.ndim))


def test_torch_variants_handle_non_contiguous_input():
    x = torch.randn(8, 6).t()
    assert torch.equal(get(TORCH)(x), x * x)


def test_out_buffer_is_checked():
    x = torch.randn(4, 5)
    with pytest.raises(ValueError, match=f"{TRITON}: out must have shape \\(4, 5\\)"):
        get(TRITON)(x, torch.empty(5, 4))
    with pytest.raises(ValueError, match="dtype torch.float32"):
        get(TRITON)(x, torch.empty(4, 5, dtype=torch.float16))
    with pytest.raises(TypeError, match="out must be a torch.Tensor"):
        get(TRITON)(x, [0.0])


def test_rows_wider_than_one_block_are_refused_by_the_row_kernel():
    with pytest.raises(ValueError, match="softmax-triton-row: rows of 70000 elements do not fit one block"):
        get("softmax-triton-row")(torch.randn(1, 70000))
    assert get("softmax-triton-online").unsupported((1, 70000), "float32") is None


def test_gpu_dtype_limits_are_declared():
    assert get(CUDA).unsupported((4, 4), "bfloat16") == \
        "square-cuda-lecture: dtype bfloat16 not supported (supports float32)"
