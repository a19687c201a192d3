"""Triton kernels, one module per op.

Every kernel loads its inputs, computes in float32 and stores in the output's
dtype: float16/bfloat16 arithmetic would lose accuracy (and the Triton
interpreter does not multiply bfloat16 at all).
"""

import dataclasses
import functools
from functools import cache

import torch
import triton

from kernelscope.backends import TRITON_INTERPRET, switch_on
from kernelscope.backends.device import DeviceFacts


def _lighter_interpreter() -> None:
    """Under TRITON_INTERPRET=1, costs of the interpreter that change nothing a kernel computes or stores.

    Each integer +, - and * builds an overflow check (the operation again in int64, two compares) that only a
    debug build asserts, and compiled it is dead code; the interpreter has no debug mode, so it computed every
    check in Python and dropped it. Each load, store and cast looked its numpy dtype up in a table built anew.
    Together 55% of the time of a scalar loop (mean-triton-lecture under the interpreter). And a bfloat16 value
    converts bit by bit in a dozen numpy steps; one value at a time (a scalar loop, a load's ``other``), the
    same few thousand bit patterns convert again and again: another 46% of that loop in bfloat16.
    """
    if not switch_on(TRITON_INTERPRET):
        return
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    builder = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if (dataclasses.is_dataclass(options) and not getattr(options, "debug", True)
            and getattr(options, "sanitize_overflow", False)):
        builder.options = dataclasses.replace(options, sanitize_overflow=False)
    np_dtype = getattr(interpreter, "_get_np_dtype", None)
    if callable(np_dtype) and not hasattr(np_dtype, "memo"):
        interpreter._get_np_dtype = _memoized_np_dtype(np_dtype)
    convert = getattr(interpreter, "_convert_float", None)
    if callable(convert) and not hasattr(convert, "memo"):
        interpreter._convert_float = _memoized_scalar_convert(convert)


def _memoized_np_dtype(lookup):
    memo = {}

    @functools.wraps(lookup)
    def np_dtype(tt_dtype):
        try:
            return memo[tt_dtype]
        except KeyError:
            memo[tt_dtype] = found = lookup(tt_dtype)
            return found
        except TypeError:  # pointer and block types are unhashable: looked up each time, as before
            return lookup(tt_dtype)

    np_dtype.memo = memo
    return np_dtype


SCALAR_CONVERSIONS_KEPT = 1 << 16  # a bfloat16 has 65,536 bit patterns


def _memoized_scalar_convert(convert):
    """The interpreter's float conversion (a pure function of the input's bytes and shape, the two dtypes and the
    rounding), remembered for one-element inputs; any larger input converts as before."""
    memo = {}

    @functools.wraps(convert)
    def convert_float(input, input_dtype, output_dtype, rounding_mode):
        if getattr(input, "size", None) != 1:
            return convert(input, input_dtype, output_dtype, rounding_mode)
        key = (input.tobytes(), input.shape, input.dtype.str, input_dtype, output_dtype, rounding_mode)
        try:
            found = memo.get(key)
        except TypeError:  # an unhashable dtype or rounding mode
            return convert(input, input_dtype, output_dtype, rounding_mode)
        if found is None:
            found = convert(input, input_dtype, output_dtype, rounding_mode)
            if len(memo) < SCALAR_CONVERSIONS_KEPT:
                memo[key] = found
        return found.copy()  # the caller's own array, as a fresh conversion is

    convert_float.memo = memo
    return convert_float


_lighter_interpreter()

DEFAULT_WARPS = 4  # Triton's num_warps where a launch gives none: a program of 128 threads


# A tensor of more elements than this takes a tuned kernel's 64-bit form (its WIDE constexpr): program, row and block
# offsets in 64 bits. Under it every offset a launch forms, overshoot included (a block past the end, a grid-stride
# step, a row's last column), stays below 2^31, and the kernels keep their 32-bit arithmetic: the fast form.
WIDE_INDEX_NUMEL = 2**30


def wide_index(numel: int) -> bool:
    """Whether a tuned kernel over ``numel`` elements needs its 64-bit offsets (WIDE)."""
    return numel > WIDE_INDEX_NUMEL


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) of two ints, for the host side of a launch: ``triton.cdiv`` is a constexpr_function in Triton
    3.6, whose call unwraps its arguments (microseconds of host time, paid on every call of a kernel's wrapper)."""
    return -(-a // b)


@cache
def gpu_facts(device: torch.device) -> DeviceFacts | None:
    """What the tuned kernels' launches read of ``device``'s GPU (its SMs and L2); None on the CPU (the interpreter,
    whose stand-ins each launch-shape function keeps)."""
    if device.type != "cuda":
        return None
    props = torch.cuda.get_device_properties(device)
    return DeviceFacts(props.name, props.multi_processor_count, props.L2_cache_size)


def gpu_facts_of(index: int) -> DeviceFacts:
    """gpu_facts of the CUDA device at ``index``."""
    return gpu_facts(torch.device("cuda", index))


def row_num_warps(block_size: int) -> int:
    """The lecture's (and Triton tutorial's) warps-per-row heuristic."""
    if block_size >= 4096:
        return 16
    if block_size >= 2048:
        return 8
    return 4


def next_power_of_2(n: int) -> int:
    return triton.next_power_of_2(n)


def launch_per_row(kernel, x: torch.Tensor, out: torch.Tensor | None, max_block: int | None = None) -> torch.Tensor:
    """The lecture's launch: one program per row, ``BLOCK_SIZE`` the row width's next power of two.

    ``kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE)``;
    ``max_block`` caps the block for kernels that loop over wider rows.
    """
    rows, cols = x.shape
    y = torch.empty_like(x) if out is None else out
    block = next_power_of_2(cols) if max_block is None else min(next_power_of_2(cols), max_block)
    kernel[(rows,)](x, y, x.stride(0), y.stride(0), cols, BLOCK_SIZE=block, num_warps=row_num_warps(block))
    return y
