"""Input validation for every variant's public entry point.

One place checks what every kernel assumes, so no variant gives a silent wrong
answer or a CUDA crash on bad input. Errors name the variant and the problem:
TypeError for a wrong kind of thing, ValueError for a wrong value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from kernelscope.ops import DTYPES

if TYPE_CHECKING:
    from kernelscope.catalog import Variant

_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


def validate_call(variant: "Variant", x, out=None) -> None:
    from kernelscope.backends import BACKENDS

    name = variant.name
    op = variant.op_spec
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    dtype = _DTYPE_NAMES.get(x.dtype)
    if dtype is None or dtype not in variant.dtypes:
        raise TypeError(f"{name}: dtype {x.dtype} not supported (supports {', '.join(variant.dtypes)})")
    if x.dim() != op.ndim:
        raise ValueError(f"{name}: expected a {op.ndim}-D tensor, got {x.dim()}-D with shape {tuple(x.shape)}")
    if x.numel() == 0:
        raise ValueError(f"{name}: empty tensor (shape {tuple(x.shape)})")
    why = BACKENDS[variant.backend].device_error(x.device)
    if why:
        raise ValueError(f"{name}: {why}")
    if variant.backend not in ("torch", "torch-compile") and not x.is_contiguous():
        # Raw kernels index memory as a dense array; copying silently would hide a cost.
        raise ValueError(f"{name}: the kernel needs a contiguous tensor; pass x.contiguous()")
    why = variant.unsupported(tuple(x.shape), dtype)
    if why:
        raise ValueError(why)
    if out is not None:
        if not isinstance(out, torch.Tensor):
            raise TypeError(f"{name}: out must be a torch.Tensor, got {type(out).__name__}")
        expected = op.out_shape(tuple(x.shape))
        if tuple(out.shape) != expected or out.dtype != x.dtype or out.device != x.device:
            raise ValueError(
                f"{name}: out must have shape {expected}, dtype {x.dtype} and device {x.device}; "
                f"got shape {tuple(out.shape)}, dtype {out.dtype}, device {out.device}")
        if not out.is_contiguous():
            raise ValueError(f"{name}: out must be contiguous")
