"""square: y = x * x, elementwise over a 2-D tensor."""

import torch

from kernelscope.ops import PAST_INT32, PAST_INT32_WHAT, Op, Stress, normal, numel, scaled

ELEMENTWISE_BENCH_SHAPES = ((64, 64), (256, 256), (1024, 1024), (4096, 4096), (8192, 8192), (16384, 16384))
ELEMENTWISE_CHECK_SHAPES = ((1, 1), (1, 7), (13, 17), (31, 1031), (3, 4099))
STRESS_SHAPE = (64, 4099)
# Just past 2^31 elements (by 16,384), with an odd row: the last block of the flat array is a partial one.
PAST_INT32_SHAPE = (16384, 131073)


def near_the_top(shape, dtype, device, seed):
    # Squares up to a sixteenth of the dtype's largest value: large, still representable.
    top = torch.finfo(getattr(torch, dtype)).max
    return scaled(shape, dtype, device, seed, scale=top ** 0.5 / 16)

OP = Op(
    name="square",
    summary="elementwise x * x over a 2-D tensor: the lecture's first kernel, purely memory-bound",
    ndim=2,
    input_desc="standard normal",
    make_input=normal,
    reference=lambda x: x * x,
    bytes_moved=lambda shape, item: 2 * numel(shape) * item,  # read x, write y
    flops=lambda shape: numel(shape),
    tolerance={"float32": 1e-6, "float16": 2e-3, "bfloat16": 1e-2},
    check_shapes=ELEMENTWISE_CHECK_SHAPES,
    bench_shapes=ELEMENTWISE_BENCH_SHAPES,
    stress=(
        Stress("offset", "values around 100, not 0 (an un-normalized layer)", STRESS_SHAPE,
               lambda shape, dtype, device, seed: scaled(shape, dtype, device, seed, offset=100.0)),
        Stress("large", "magnitudes whose squares reach the top of the dtype's range", STRESS_SHAPE, near_the_top),
        Stress(PAST_INT32, f"{PAST_INT32_WHAT}: 16,384 x 131,073 values", PAST_INT32_SHAPE, normal, gpu_only=True,
               dtypes=("float32",)),
    ),
)
