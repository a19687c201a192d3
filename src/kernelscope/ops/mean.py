"""mean: the full reduction of a 1-D tensor to a scalar."""

from kernelscope.ops import PAST_INT32, PAST_INT32_WHAT, Op, Stress, normal, numel


def make_input(shape, dtype, device, seed):
    # Centred on 1, not 0: the error is measured relative to the result, and a
    # mean near zero would make any rounding look like a large relative error.
    return normal(shape, dtype, device, seed, mean=1.0)


OP = Op(
    name="mean",
    summary="full reduction to a scalar: every element read once, one value written",
    ndim=1,
    input_desc="normal, mean 1, standard deviation 1",
    make_input=make_input,
    reference=lambda x: x.mean(),
    bytes_moved=lambda shape, item: numel(shape) * item + item,
    flops=lambda shape: numel(shape),
    # float32 sums of millions of terms; low-precision results are rounded once at the end.
    tolerance={"float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2},
    # 509: a prime the Numba simulator still checks (it caps at 1024); 10007: a prime over several blocks
    check_shapes=((1,), (7,), (509,), (1031,), (10007,)),
    bench_shapes=((2**12,), (2**16,), (2**20,), (2**24,), (2**26,), (2**28,)),
    reduces=True,
    stress=(
        Stress("offset", "65,536 values around 1000 (counts, un-normalized activations): their sum passes 65,504",
               (2**16,), lambda shape, dtype, device, seed: normal(shape, dtype, device, seed, mean=1000.0)),
        Stress("long", "a long reduction: 4 million values of mean 1", (2**22,), make_input),
        Stress(PAST_INT32, f"{PAST_INT32_WHAT}: 2^31 + 2^20 values of mean 1", (2**31 + 2**20,), make_input,
               gpu_only=True, dtypes=("float32",)),
    ),
    reference_of_chunks=lambda chunks, n: sum(c.sum() for c in chunks) / n,
)
