"""Correctness: every variant against the float64 reference, before anything is timed.

For each shape and dtype: draw fresh random inputs, poison the output (NaN) so
an element the kernel never writes cannot pass, run the variant, and compare
with the reference computed in float64 from the same (rounded) input:

    rel_err = max |out - ref| / scale,   scale = max(op.error_scale(x, ref), tiny)

Then the op's stress inputs (``ops.Stress``: large offsets and magnitudes,
large logits, masked rows, saturating inputs, long reductions), where a
fragile kernel breaks while passing on well-scaled numbers. A stress failure
the variant declares in the catalog (``catalog.Limit``) is reported, not
failed; any other fails the check, naming the input.

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
from kernelscope.ops import Op, Shape, Stress, numel, shape_str

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


# Up to this many elements the reference and the comparison run on the CPU. On the H100 the suite's gate
# took about 120 ms a process whatever the size, 64x64 included (the phase logs of two full runs):
# the cost of first launches (CUDA loads a kernel's module when it is first launched, and every float64
# kernel of the check is new to the process), not of the work. A small input and output cost less to copy.
HOST_REFERENCE_NUMEL = 2**20


# Past this many elements the reference is taken in chunks (of about this many): a float64 copy of a 2^31-element
# input, its reference and their difference would not fit beside the input and the output on one GPU.
CHUNKED_REFERENCE_NUMEL = 2**27


def error_against_reference(op: Op, x: torch.Tensor, out: torch.Tensor) -> float:
    """rel_err of ``out`` = variant(x) against the float64 reference of op on the same x (on the CPU for
    small inputs: ``HOST_REFERENCE_NUMEL``; ``out`` follows the reference in :func:`relative_error`)."""
    if x.numel() > CHUNKED_REFERENCE_NUMEL:
        return _chunked_error(op, x, out)
    if x.is_cuda and x.numel() <= HOST_REFERENCE_NUMEL:
        x = x.cpu()
    x64 = x.to(torch.float64)
    ref = op.reference(x64)
    scale = max(op.error_scale(x64, ref), torch.finfo(x.dtype).tiny)
    return relative_error(out, ref, scale)


def _chunked_error(op: Op, x: torch.Tensor, out: torch.Tensor) -> float:
    """:func:`error_against_reference` a chunk at a time: the same value, as the error and the scale are maxima.

    A reduction's reference comes from its chunks (``Op.reference_of_chunks``); any other op's rows are
    independent (elementwise, or a row at a time), so chunks of whole rows are compared one after another.
    """
    if out.shape != op.out_shape(tuple(x.shape)):
        return float("inf")
    rows = x.shape[0] if x.dim() > 1 else x.numel()
    step = max(1, CHUNKED_REFERENCE_NUMEL // max(1, x.numel() // rows))
    if op.reduces:
        if op.reference_of_chunks is None:
            raise ValueError(f"{op.name}: an input of {x.numel()} elements needs the op's reference_of_chunks")
        ref = op.reference_of_chunks([c.to(torch.float64) for c in x.split(step)], x.numel())
        scale = max(op.error_scale(x[:1].to(torch.float64), ref), torch.finfo(x.dtype).tiny)
        return relative_error(out, ref, scale)
    err, scale = 0.0, torch.finfo(x.dtype).tiny
    for xc, oc in zip(x.split(step), out.split(step)):
        x64 = xc.to(torch.float64)
        ref = op.reference(x64)
        chunk_err = relative_error(oc, ref, 1.0)  # max |out - ref| of the chunk; NaN where out is not finite
        if chunk_err != chunk_err:
            return chunk_err
        err = max(err, chunk_err)
        scale = max(scale, op.error_scale(x64, ref))
    return err / scale


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
    input: str = "random"  # or the name of the op's stress input
    known: str = ""  # why, when a declared limit covers this failure


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
    known: list[str] = field(default_factory=list)  # declared limits the stress inputs showed ("input dtype")
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


def check_case(variant: Variant, shape: Shape, dtype: str, device: str, seed: int, stress: Stress | None = None
               ) -> ShapeResult:
    op = variant.op_spec
    x = (stress.make if stress else op.make_input)(shape, dtype, device, seed)
    out = run_once(variant, x)
    if device == "cuda":
        torch.cuda.synchronize()
    err = error_against_reference(op, x, out)
    tol = op.tolerance[dtype]
    return ShapeResult(shape_str(shape), dtype, err, tol, seed, bool(err <= tol),  # NaN compares False
                       input=stress.name if stress else "random")


# Under an interpreter, stress inputs larger than this are left to the GPU (a 4M-element
# reduction is minutes of interpreted Python); they are listed as not run.
STRESS_INTERPRETED_MAX_NUMEL = 2**19


def check_variant(variant: Variant, device: str | None = None, dtypes: tuple[str, ...] | None = None,
                  shapes: tuple[Shape, ...] | None = None, seed: int | None = None, stress: bool = True
                  ) -> CheckResult:
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
    interpreted = backend.interpreted(device)
    cap = backend.interpreted_max_numel if interpreted else None
    cases = [(shape, None) for shape in shapes]
    if stress:
        cases += [(s.shape, s) for s in variant.op_spec.stress]
    gpu_only = []
    try:
        for i, (shape, st) in enumerate(cases):
            if variant.unsupported(shape, dtypes[0]):
                continue  # e.g. wider than the kernel's block: declared, and refused by validation
            if st and st.gpu_only and device != "cuda":
                gpu_only.append(f"{st.name} {shape_str(shape)}")
                continue
            limit = cap
            if st and interpreted:
                limit = min(cap or STRESS_INTERPRETED_MAX_NUMEL, STRESS_INTERPRETED_MAX_NUMEL)
            if limit is not None and numel(shape) > limit:
                too_big.append(f"{st.name} {shape_str(shape)}" if st else shape_str(shape))
                continue
            for j, dtype in enumerate(dtypes):
                if st and st.dtypes is not None and dtype not in st.dtypes:
                    continue
                case_seed = (base_seed + 7919 * i + 104729 * j) % 2**31
                what = f"stress input {st.name} ({st.what}) " if st else ""
                try:
                    res = check_case(variant, shape, dtype, device, case_seed, stress=st)
                except Exception as exc:  # a crash is a failure with its reason, not the end of the run
                    res = ShapeResult(shape_str(shape), dtype, float("nan"), variant.op_spec.tolerance[dtype],
                                      case_seed, False, input=st.name if st else "random")
                    res.known = _known(variant, res)
                    if not res.known:
                        failures.append(f"{what}{shape_str(shape)} {dtype}: {type(exc).__name__}: {exc}")
                    if os.environ.get("KERNELSCOPE_DEBUG"):
                        traceback.print_exc()
                    result.shapes.append(res)
                    continue
                result.shapes.append(res)
                if not res.ok:
                    res.known = _known(variant, res)
                    if not res.known:
                        failures.append(f"{what}{res.shape} {dtype}: rel_err {res.rel_err:.3g} > {res.tolerance:g} "
                                        f"(seed {res.seed})")
    finally:
        backend.release()  # what its framework kept for these inputs, before the next variant's largest need it
    result.known = [f"{s.input} {s.dtype}" for s in result.shapes if s.known]
    counted = [s for s in result.shapes if not s.known]  # a declared limit is reported, not folded into the error
    errs = [s.rel_err for s in counted]
    if errs:
        nan = any(e != e for e in errs)
        result.max_rel_err = float("nan") if nan else max(errs)
        result.worst_margin = float("nan") if nan else max(s.rel_err / s.tolerance for s in counted)
    result.status = FAIL if failures else PASS
    not_run = []
    if too_big:
        not_run.append(f"not run under the {variant.backend} interpreter (over {cap or STRESS_INTERPRETED_MAX_NUMEL} "
                       f"elements): {', '.join(too_big)}")
    if gpu_only:
        not_run.append(f"checked on a GPU only: {', '.join(gpu_only)}")
    result.not_run = "; ".join(not_run)
    result.reason = "; ".join(failures)
    return result


def _known(variant: Variant, res: ShapeResult) -> str:
    limit = variant.limit_for(res.input, res.dtype) if res.input != "random" else None
    return limit.why if limit else ""
