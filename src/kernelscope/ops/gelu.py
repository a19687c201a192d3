"""gelu with the tanh approximation, elementwise over a 2-D tensor."""

import math

import torch

from kernelscope.ops import PAST_INT32, PAST_INT32_WHAT, Op, Stress, normal, numel, scaled
from kernelscope.ops.square import ELEMENTWISE_BENCH_SHAPES, ELEMENTWISE_CHECK_SHAPES, PAST_INT32_SHAPE, STRESS_SHAPE

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def reference(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x**3)))


def error_scale(x: torch.Tensor, ref: torch.Tensor) -> float:
    """The input's scale, not only the output's.

    gelu(x) = x * phi(x) with phi in [0, 1]. Computed in the input's precision,
    as the formula in torch ops is, 1 + tanh(...) cancels for negative x and
    leaves an error proportional to |x|: at x = -3, bfloat16 returns 0 for
    -0.004. Against max |gelu(x)| alone, a one-element tensor would then fail
    while the same error in a wide tensor passes.
    """
    return max(ref.abs().max().item(), x.abs().max().item())


OP = Op(
    name="gelu",
    summary="GELU, tanh approximation, elementwise: more arithmetic per byte than square, still memory-bound",
    ndim=2,
    input_desc="standard normal",
    make_input=normal,
    reference=reference,
    bytes_moved=lambda shape, item: 2 * numel(shape) * item,
    # x^3 (2), *0.044715, +x, *sqrt(2/pi), tanh (counted as 1), +1, *x, *0.5
    flops=lambda shape: 9 * numel(shape),
    tolerance={"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2},
    error_scale=error_scale,
    check_shapes=ELEMENTWISE_CHECK_SHAPES,
    bench_shapes=ELEMENTWISE_BENCH_SHAPES,
    stress=(
        Stress("saturating", "standard deviation 30: tails past +-100, where tanh saturates and x^3 is huge",
               STRESS_SHAPE, lambda shape, dtype, device, seed: scaled(shape, dtype, device, seed, scale=30.0)),
        Stress(PAST_INT32, f"{PAST_INT32_WHAT}: 16,384 x 131,073 values", PAST_INT32_SHAPE, normal, gpu_only=True,
               dtypes=("float32",)),
    ),
)
