"""A benchmark case: one variant at one size and dtype, checked and ready to time.

The asv suite and the scripts build cases here. Preparing a case validates the
input once, runs the variant on fresh random data with a poisoned output,
compares with the float64 reference, and only then hands out the call to time.
Anything that cannot run raises ``NotImplementedError`` with the reason, which
asv records as a skip (n/a); a wrong answer raises ``RuntimeError``, which asv
records as a failure.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import torch

from kernelscope import backends
from kernelscope.catalog import VARIANTS, Variant
from kernelscope.check import error_against_reference, fresh_seed, run_once
from kernelscope.ops import Shape, numel, parse_shape, shape_str
from kernelscope.timing.phases import phase

# Without a GPU the suite is a smoke test of the machinery: small sizes only.
CPU_MAX_NUMEL = int(os.environ.get("KERNELSCOPE_CPU_MAX_NUMEL", 2**12))


@dataclass
class Case:
    variant: Variant
    shape: Shape
    dtype: str
    device: str
    x: torch.Tensor
    call: Callable[[], torch.Tensor]  # the raw kernel on x: no validation inside the timed region
    seed: int
    rel_err: float

    @property
    def bytes(self) -> int:
        return self.variant.op_spec.bytes_for(self.shape, self.dtype)

    def check(self, out: torch.Tensor) -> float:
        """Gate: raise if ``out`` (a result of ``call``) does not match the reference."""
        err = error_against_reference(self.variant.op_spec, self.x, out)
        tol = self.variant.op_spec.tolerance[self.dtype]
        if not err <= tol:
            raise RuntimeError(f"{self.variant.name}: output does not match the float64 reference at "
                               f"{shape_str(self.shape)} {self.dtype} (seed {self.seed}): rel_err {err:.3g} > {tol:g}")
        return err


def skip_reason(variant_name: str, op: str, size: str, dtype: str, device: str) -> str | None:
    """Why this combination is not timed here (asv records it as n/a), or None."""
    variant = VARIANTS.get(variant_name)
    if variant is None:
        return f"{variant_name}: not in this commit's catalog"
    if variant.op != op:
        return f"{variant_name}: a variant of {variant.op}, not {op}"
    shape = parse_shape(size)
    why = variant.unsupported(shape, dtype) or variant.unavailable(device)
    if why:
        return why if why.startswith(variant_name) else f"{variant_name}: {why}"
    if device == "cpu":
        backend = backends.BACKENDS[variant.backend]
        cap = min(CPU_MAX_NUMEL, backend.interpreted_max_numel or CPU_MAX_NUMEL)
        if numel(shape) > cap:
            return f"{variant_name}: the CPU path times sizes up to {cap} elements (KERNELSCOPE_CPU_MAX_NUMEL)"
    return None


_CASES: dict[tuple, Case] = {}


def prepare(op: str, variant_name: str, size: str, dtype: str) -> Case:
    """The checked case for these parameters (cached: asv re-runs setup between samples)."""
    key = (op, variant_name, size, dtype)
    if key in _CASES:
        return _CASES[key]
    backends.configure_interpreters()
    device = backends.default_device()
    why = skip_reason(variant_name, op, size, dtype, device)
    if why:
        raise NotImplementedError(why)
    variant = VARIANTS[variant_name]
    shape = parse_shape(size)
    seed = fresh_seed()
    if device == "cuda":
        with phase("cuda"):  # the process's CUDA context
            torch.empty(1, device=device)
    with phase("input"):
        x = variant.op_spec.make_input(shape, dtype, device, seed)
    with phase("first_call"):
        variant(x)  # validates once; the first call also compiles (JIT, torch.compile, load_inline)
        if device == "cuda":
            torch.cuda.synchronize()
    raw = variant.function()
    call = (lambda: raw(x, None)) if variant.takes_out else (lambda: raw(x))
    case = Case(variant, shape, dtype, device, x, call, seed, float("nan"))
    with phase("gate"):
        out = run_once(variant, x)  # poisoned output, as in `kernelscope check`
        case.check(out)
        case.rel_err = case.check(call())  # and the exact call that is timed
        del out
    _CASES[key] = case
    return case
