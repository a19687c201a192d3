"""Triton GELU (tanh approximation), the formula fused into one pass."""

import torch
import triton
import triton.language as tl

from kernelscope.backends.triton import cdiv, direct, wide_index

BLOCK_SIZE = 1024


@triton.jit
def _tanh(z):
    # tanh(z) = 1 - 2 / (exp(2z) + 1): stable at both ends (exp overflows to inf -> 1).
    return 1.0 - 2.0 / (tl.exp(2.0 * z) + 1.0)


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr, WIDE: tl.constexpr = False):
    pid = tl.program_id(0)
    if WIDE:  # past 2^31 elements a block's start overflows 32 bits (a kernel of its own: wide_index)
        pid = pid.to(tl.int64)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    y = 0.5 * x * (1.0 + _tanh(inner))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


_FIXED = direct.fixed_table()  # direct.flat_key -> gelu's launch, fixed


def gelu(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Through the compiled kernel after the first call (direct.py), the launch kept fixed per size, dtype,
    device and alignment: a later call of those passes x and y straight to the launcher."""
    y = torch.empty_like(x) if out is None else out
    n = x.numel()
    key = direct.flat_key(x, y)
    kept = _FIXED.get(key)
    fits = out is None or (out.dtype == x.dtype and out.device == x.device and out.numel() == n)
    if kept is not None and fits and kept(x, y):
        return y
    grid, keywords = (cdiv(n, BLOCK_SIZE),), dict(BLOCK_SIZE=BLOCK_SIZE, WIDE=wide_index(n))
    direct.launch(gelu_kernel, grid, x, y, n, **keywords)
    fixed = direct.fixed(gelu_kernel, grid, x, y, n, **keywords) if fits and n else None
    if fixed is not None:
        _FIXED[key] = fixed
    return y


def gelu_plan_of(shape: tuple[int, ...], dtype: str, facts):
    """gelu-triton's launch (`kernelscope plan`): a program a BLOCK_SIZE of the flat array, Triton's default warps."""
    from kernelscope.backends.triton import DEFAULT_WARPS
    from kernelscope.backends.launches import Launch, LaunchPlan

    n = 1
    for s in shape:
        n *= s
    launch = Launch("gelu_kernel", "src/kernelscope/backends/triton/gelu.py", (triton.cdiv(n, BLOCK_SIZE),),
                    DEFAULT_WARPS * 32, note=f"a program a block of {BLOCK_SIZE}")
    return LaunchPlan(None, (launch,), {"BLOCK_SIZE": BLOCK_SIZE, "num_warps": DEFAULT_WARPS,
                                        "elements a thread": BLOCK_SIZE // (DEFAULT_WARPS * 32)})
