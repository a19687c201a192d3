"""softmax over the last dimension of a 2-D tensor."""

import torch

from kernelscope.ops import PAST_INT32, PAST_INT32_WHAT, Op, Stress, normal, numel, scaled

STRESS_SHAPE = (64, 4099)


def masked(shape, dtype, device, seed):
    # About half the positions at -inf, as an attention mask leaves them; every row keeps a finite one.
    x = normal(shape, dtype, device, seed)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed + 1)
    hidden = torch.rand(shape, generator=gen, device=device) < 0.5
    hidden[:, 0] = False
    return x.masked_fill(hidden, float("-inf"))

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
        (64, 64), (256, 256), (1024, 1024), (4096, 4096), (8192, 8192), (16384, 16384),
        (16384, 1000),   # widths that are not powers of two
        (512, 50257),    # a GPT-2 vocabulary row
        (64, 262144),    # wider than one block of the row kernel
    ),
    stress=(
        Stress("large-logits", "logits of standard deviation 100 (a sharp, un-tempered classifier)", STRESS_SHAPE,
               lambda shape, dtype, device, seed: scaled(shape, dtype, device, seed, scale=100.0)),
        Stress("offset", "every logit shifted by 1000: exp without the max subtracted overflows", STRESS_SHAPE,
               lambda shape, dtype, device, seed: scaled(shape, dtype, device, seed, offset=1000.0)),
        Stress("masked", "about half of each row at -inf, as an attention mask leaves it", STRESS_SHAPE, masked),
        Stress("long-row", "rows of 131,072 near-equal logits (a large vocabulary early in training): "
                           "the row's sum of exponentials passes 65,504", (2, 131072),
               lambda shape, dtype, device, seed: scaled(shape, dtype, device, seed, scale=0.01)),
        Stress(PAST_INT32, f"{PAST_INT32_WHAT}: a batch of 16,384 tokens' logits over a 151,936-word vocabulary",
               (16384, 151936), normal, gpu_only=True, dtypes=("float32",)),
    ),
)
