"""softmax over the last dimension of a 2-D tensor."""

import torch

from kernelscope.ops import Op, normal, numel

OP = Op(
    name="softmax",
    summary="row-wise softmax of a 2-D tensor: a reduction and an elementwise pass per row",
    ndim=2,
    input_desc="standard normal",
    make_input=normal,
    reference=lambda x: torch.softmax(x, dim=-1),
    bytes_moved=lambda shape, item: 2 * numel(shape) * item,
    # max, subtract, exp, sum, divide
    flops=lambda shape: 5 * numel(shape),
    tolerance={"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2},
    # (2, 9001): a prime width wider than the online kernel's block.
    check_shapes=((1, 1), (1, 7), (13, 17), (31, 1031), (2, 9001)),
    bench_shapes=(
        (64, 64), (256, 256), (1024, 1024), (4096, 4096), (16384, 16384),
        (16384, 1000),   # widths that are not powers of two
        (512, 50257),    # a GPT-2 vocabulary row
        (64, 262144),    # wider than one block of the row kernel
    ),
)
