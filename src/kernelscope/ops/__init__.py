"""Ops: what is computed, independent of how.

Each op module defines ``OP``: how to make inputs, the float64 reference, the
minimum bytes any implementation must move, the FLOPs, the tolerance per dtype,
the shapes used to check and to benchmark it, and its stress inputs: the kinds
of input real workloads produce on which a fragile kernel breaks while passing
on well-scaled random numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Callable

import torch

Shape = tuple[int, ...]

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def dtype_of(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(DTYPES)}") from None


def numel(shape: Shape) -> int:
    return math.prod(shape)


def shape_str(shape: Shape) -> str:
    """'4096x4096': the form shapes take in benchmark parameters and result rows."""
    return "x".join(str(s) for s in shape)


def parse_shape(text: str) -> Shape:
    try:
        shape = tuple(int(p) for p in str(text).lower().split("x"))
    except ValueError:
        raise ValueError(f"bad shape {text!r}: write it as ROWSxCOLS, e.g. 4096x4096") from None
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"bad shape {text!r}: every dimension must be at least 1")
    return shape


@cache  # asked for every result row a site build reads
def itemsize(dtype: str) -> int:
    return torch.empty((), dtype=dtype_of(dtype)).element_size()


def normal(shape: Shape, dtype: str, device: str, seed: int, mean: float = 0.0) -> torch.Tensor:
    """Standard normal samples (plus ``mean``), drawn in float32 and rounded to ``dtype``.

    Never zeros: zeros hide unwritten outputs and wrong indexing.
    """
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    x = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
    if mean:
        x += mean
    return x.to(dtype_of(dtype))


def scaled(shape: Shape, dtype: str, device: str, seed: int, scale: float = 1.0, offset: float = 0.0) -> torch.Tensor:
    """``offset + scale * N(0, 1)``, drawn in float32 and rounded to ``dtype``."""
    x = normal(shape, "float32", device, seed)
    return (x * scale + offset).to(dtype_of(dtype))


@dataclass(frozen=True)
class Stress:
    """An input of a kind real workloads produce, checked beside the random ones.

    ``name`` is stable: the check's report and a variant's declared limits
    (``catalog.Limit``) refer to it.
    """

    name: str
    what: str  # one line: what it is and where workloads produce it
    shape: Shape
    make: Callable[[Shape, str, str, int], torch.Tensor]  # (shape, dtype, device, seed)
    gpu_only: bool = False  # too large for the CPU path (its memory and its interpreters): checked on a GPU alone
    dtypes: tuple[str, ...] | None = None  # checked in these of the variant's dtypes only (None: every one)


# Past 2^31 elements an index of 32 bits no longer reaches every element: each op's stress input of this size
# is how the check holds a kernel to 64-bit offsets (rows x columns, or a block's start) on the GPU.
PAST_INT32 = "past-2^31"
PAST_INT32_WHAT = "more elements than a 32-bit index reaches"


@dataclass(frozen=True)
class Op:
    name: str
    summary: str
    ndim: int  # the number of dimensions inputs must have
    input_desc: str  # how inputs are drawn, in words
    make_input: Callable[[Shape, str, str, int], torch.Tensor]  # (shape, dtype, device, seed)
    reference: Callable[[torch.Tensor], torch.Tensor]  # float64 in, float64 out
    bytes_moved: Callable[[Shape, int], int]  # (shape, itemsize): each input read once, each output written once
    flops: Callable[[Shape], int]
    tolerance: dict[str, float]  # max |out - ref| / error_scale, per dtype
    check_shapes: tuple[Shape, ...]  # edge shapes for correctness: 1 element, primes, wider than one block
    bench_shapes: tuple[Shape, ...]  # the benchmark sweep, launch-bound to bandwidth-bound
    reduces: bool = False  # the output is a scalar
    # What errors are measured against: (x, ref) in float64 -> a positive number. A maximum over elements (or
    # rows), so the check can take it chunk by chunk on an input too large to hold in float64 at once.
    error_scale: Callable[[torch.Tensor, torch.Tensor], float] = lambda x, ref: ref.abs().max().item()
    stress: tuple[Stress, ...] = ()
    # A reduction's reference from its input's chunks (float64) and its element count, for inputs too large to
    # convert at once; an op that does not reduce is checked chunk of rows by chunk of rows instead.
    reference_of_chunks: Callable[[list[torch.Tensor], int], torch.Tensor] | None = None

    def out_shape(self, shape: Shape) -> Shape:
        return () if self.reduces else shape

    def bytes_for(self, shape: Shape, dtype: str) -> int:
        return self.bytes_moved(shape, itemsize(dtype))
