"""Correctness: every variant against the float64 reference, before anything is timed.

For each shape and dtype: draw fresh random inputs, poison the output (NaN) so
an element the kernel never writes cannot pass, run the variant, and compare
with the reference computed in float64 from the same (rounded) input:

    rel_err = max |out - ref| / scale,   scale = max(op.error_scale(x, ref), tiny)

The max-norm catches a single wrong element that a 2-norm would average away.
The scale is max |ref| unless the op says otherwise (gelu: see ops/gelu.py).
``tiny``, the dtype's smallest normal number, is there because below it the
dtype has fewer bits: a float16 square of 0.005 is subnormal and can be off by
1% with every bit right. NaN or inf in the output always fails.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import asdict, dataclass, field

import torch

from kernelscope import backends
from kernelscope.catalog import Variant
from kernelscope.ops import Op, Shape, numel, shape_str

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


def fresh_seed() -> int:
    return int.from_bytes(os.urandom(4), "little")


def relative_error(out: torch.Tensor, ref: torch.Tensor, scale: float | None = None) -> float:
    """max |out - ref| / scale, with scale max |ref| by default."""
    # Computed where ref lives: a 2^28-element comparison stays on the GPU.
    ref = ref.detach().to(torch.float64)
    out = out.detach().to(ref.device, torch.float64)
    if out.shape != ref.shape:
        return float("inf")
    if not torch.isfinite(out).all():
        return float("nan")
    if scale is None:
        scale = ref.abs().max().item()
    return (out - ref).abs().max().item() / (scale if scale > 0 else 1.0)


def error_against_reference(op: Op, x: torch.Tensor, out: torch.Tensor) -> float:
    """rel_err of ``out`` = variant(x) against the float64 reference of op on the same x."""
    x64 = x.to(torch.float64)
    ref = op.reference(x64)
    scale = max(op.error_scale(x64, ref), torch.finfo(x.dtype).tiny)
    return relative_error(out, ref, scale)


def poison(t: torch.Tensor) -> torch.Tensor:
    return t.fill_(float("nan"))


def poison_allocator(shape: Shape, dtype: torch.dtype, device: str) -> None:
    """For variants that allocate their own output: hand the allocator back a NaN block.

    The CUDA caching allocator returns a freed block of the same size on the
    next request, so an unwritten element of the fresh output reads NaN. Best
    effort on the CPU, where large blocks come from fresh (zeroed) pages.
    """
    block = torch.empty(shape, dtype=dtype, device=device)
    poison(block)
    del block


@dataclass
class ShapeResult:
    shape: str
    dtype: str
    rel_err: float
    tolerance: float
    seed: int
    ok: bool


@dataclass
class CheckResult:
    op: str
    variant: str
    backend: str
    status: str  # PASS, FAIL or SKIP
    max_rel_err: float | None = None  # over every shape and dtype checked
    worst_margin: float | None = None  # max of rel_err / tolerance: under 1 passes
    reason: str = ""
    device: str = ""
    not_run: str = ""  # shapes left out, and why
    shapes: list[ShapeResult] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def run_once(variant: Variant, x: torch.Tensor) -> torch.Tensor:
    """One call with the output poisoned beforehand."""
    op = variant.op_spec
    out_shape = op.out_shape(tuple(x.shape))
    if variant.takes_out:
        out = poison(torch.empty(out_shape, dtype=x.dtype, device=x.device))
        result = variant(x, out)
        if result.data_ptr() != out.data_ptr():
            raise AssertionError(f"{variant.name}: did not write into the given output buffer")
        return result
    poison_allocator(out_shape, x.dtype, x.device.type)
    return variant(x)


def check_case(variant: Variant, shape: Shape, dtype: str, device: str, seed: int) -> ShapeResult:
    op = variant.op_spec
    x = op.make_input(shape, dtype, device, seed)
    out = run_once(variant, x)
    if device == "cuda":
        torch.cuda.synchronize()
    err = error_against_reference(op, x, out)
    tol = op.tolerance[dtype]
    return ShapeResult(shape_str(shape), dtype, err, tol, seed, bool(err <= tol))  # NaN compares False


def check_variant(variant: Variant, device: str | None = None, dtypes: tuple[str, ...] | None = None,
                  shapes: tuple[Shape, ...] | None = None, seed: int | None = None) -> CheckResult:
    device = device or backends.default_device()
    result = CheckResult(variant.op, variant.name, variant.backend, SKIP, device=device)
    why = variant.unavailable(device)
    if why:
        result.reason = why
        return result
    shapes = shapes or variant.op_spec.check_shapes
    dtypes = tuple(d for d in (dtypes or variant.dtypes) if d in variant.dtypes)
    if not dtypes:
        result.reason = f"supports only {', '.join(variant.dtypes)}"
        return result
    base_seed = fresh_seed() if seed is None else seed
    failures, too_big = [], []
    backend = backends.BACKENDS[variant.backend]
    cap = backend.interpreted_max_numel if backend.interpreted(device) else None
    for i, shape in enumerate(shapes):
        if variant.unsupported(shape, dtypes[0]):
            continue  # e.g. wider than the kernel's block: declared, and refused by validation
        if cap is not None and numel(shape) > cap:
            too_big.append(shape_str(shape))
            continue
        for j, dtype in enumerate(dtypes):
            case_seed = (base_seed + 7919 * i + 104729 * j) % 2**31
            try:
                res = check_case(variant, shape, dtype, device, case_seed)
            except Exception as exc:  # a crash is a failure with its reason, not the end of the run
                failures.append(f"{shape_str(shape)} {dtype}: {type(exc).__name__}: {exc}")
                if os.environ.get("KERNELSCOPE_DEBUG"):
                    traceback.print_exc()
                continue
            result.shapes.append(res)
            if not res.ok:
                failures.append(f"{res.shape} {dtype}: rel_err {res.rel_err:.3g} > {res.tolerance:g} (seed {res.seed})")
    errs = [s.rel_err for s in result.shapes]
    if errs:
        nan = any(e != e for e in errs)
        result.max_rel_err = float("nan") if nan else max(errs)
        result.worst_margin = float("nan") if nan else max(s.rel_err / s.tolerance for s in result.shapes)
    result.status = FAIL if failures else PASS
    if too_big:
        result.not_run = f"not run under the {variant.backend} interpreter (over {cap} elements): {', '.join(too_big)}"
    result.reason = "; ".join(failures)
    return result
