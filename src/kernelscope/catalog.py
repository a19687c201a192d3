"""The catalog: every op and every variant, declared as data.

This module is the single source of truth. The CLI, the asv suite, the tests
and the docs site all iterate over ``OPS`` and ``VARIANTS``; nothing else keeps
a list of its own. Adding a variant is one ``Variant(...)`` entry here plus the
kernel it points to; adding an op is one module in ``kernelscope.ops`` plus its
entries here.

Variants point at their implementation by a ``"module:function"`` string, so
importing the catalog imports no kernel framework: Triton, Numba and the CUDA
extension load only when a variant is first called.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Callable

from kernelscope import backends, slowdown
from kernelscope.ops import Op, gelu, mean, softmax, square
from kernelscope.validation import validate_call

FLOATS = ("float32", "float16", "bfloat16")
F32 = ("float32",)
F32_BF16 = ("float32", "bfloat16")


@dataclass(frozen=True)
class Limit:
    """A known limitation: the variant fails this stress input of its op in these dtypes, and why."""

    input: str  # the name of one of the op's stress inputs (ops.Stress.name)
    dtypes: tuple[str, ...]
    why: str  # one line, shown by `kernelscope list` and the check

    def covers(self, stress: str, dtype: str) -> bool:
        return stress == self.input and dtype in self.dtypes

    def __str__(self) -> str:
        return f"{self.input} in {'/'.join(self.dtypes)}: {self.why}"


@dataclass(frozen=True)
class Variant:
    """One way of computing an op on one backend."""

    name: str  # globally unique, stable: it names asv benchmarks and result rows
    op: str
    backend: str  # a key of kernelscope.backends.BACKENDS
    teaches: str  # one line: what this variant shows
    impl: str  # "module:function"; the function takes (x) or (x, out)
    dtypes: tuple[str, ...] = FLOATS
    lecture: bool = False  # faithful to the GPU MODE lecture code
    takes_out: bool = False  # writes into a caller-given output buffer
    max_cols: int | None = None  # widest row the kernel handles (row ops)
    max_numel: int | None = None  # 32-bit index arithmetic
    min_cc: tuple[int, int] | None = None  # minimum CUDA compute capability
    limits: tuple[Limit, ...] = ()  # stress inputs it is known to fail: the check reports, does not fail, them
    bench_dtypes: tuple[str, ...] = F32  # dtypes the asv suite times (float32 for all; bfloat16 for some)
    tuned: bool = False  # written for speed: the site sets it beside the lecture variants
    # "module:function" taking (x, out, fraction): the same kernel doing that fraction more work, for
    # KERNELSCOPE_INJECT_SLOWDOWN=name:fraction (kernelscope.slowdown); the regression gate's canary
    canary: str | None = None
    # "module:function" taking (shape, dtype, facts): the launch a call takes on the GPU of facts
    # (backends.device.DeviceFacts), from the function the launch itself picks it with (`kernelscope plan`)
    plan: str | None = None
    notes: str = ""

    def limit_for(self, stress: str, dtype: str) -> Limit | None:
        return next((lim for lim in self.limits if lim.covers(stress, dtype)), None)

    @property
    def op_spec(self) -> Op:
        return OPS[self.op]

    @property
    def needs(self) -> list[str]:
        """What the variant needs to run, as words (for `kernelscope list`)."""
        needs = list(backends.BACKENDS[self.backend].needs)
        if self.min_cc:
            needs.append(f"compute capability >= {self.min_cc[0]}.{self.min_cc[1]}")
        return needs

    def function(self) -> Callable:
        """The raw implementation (imports its framework on first use), slowed down if
        ``kernelscope.slowdown`` says so: run twice, or its canary kernel doing a fraction more work."""
        injected = slowdown.injected(VARIANTS)  # a bad setting raises here, naming the variant and the problem
        if self.name not in injected:
            return _resolve(self.impl)
        fraction = injected[self.name]
        if fraction is None:
            return _run_twice(_resolve(self.impl))
        return functools.partial(_resolve(self.canary), fraction=fraction)

    def unavailable(self, device: str) -> str | None:
        """Why this variant cannot run on ``device`` here, or None."""
        return backends.BACKENDS[self.backend].unavailable(device, self.min_cc)

    def unsupported(self, shape: tuple[int, ...], dtype: str) -> str | None:
        """Why this variant does not take inputs of this shape and dtype, or None."""
        if dtype not in self.dtypes:
            return f"{self.name}: dtype {dtype} not supported (supports {', '.join(self.dtypes)})"
        numel = 1
        for s in shape:
            numel *= s
        if self.max_numel is not None and numel > self.max_numel:
            return f"{self.name}: {numel} elements exceed the kernel's 32-bit indexing limit ({self.max_numel})"
        if self.max_cols is not None and len(shape) >= 1 and shape[-1] > self.max_cols:
            return (f"{self.name}: rows of {shape[-1]} elements do not fit one block "
                    f"(at most {self.max_cols})")
        return None

    def __call__(self, x, out=None):
        """Validated entry point: check ``x`` (and ``out``), then run the kernel."""
        validate_call(self, x, out)
        fn = self.function()
        if self.takes_out:
            return fn(x, out)
        result = fn(x)
        if out is not None:
            out.copy_(result)
            return out
        return result


# A canary for the regression gate (kernelscope.slowdown says how it is set):
# KERNELSCOPE_INJECT_SLOWDOWN=name1,name2 makes those variants compute their
# result twice per call (redundant work, same answer); name:0.1 makes a
# variant's kernel do 10% more work through its `canary` kernel. `asv compare`,
# `asv continuous` and `kernelscope compare-runs` must flag them.
INJECT_SLOWDOWN = slowdown.ENV


def _run_twice(fn: Callable) -> Callable:
    def twice(*args):
        fn(*args)
        return fn(*args)

    return twice


_IMPL_CACHE: dict[str, Callable] = {}


def _resolve(path: str) -> Callable:
    fn = _IMPL_CACHE.get(path)
    if fn is None:
        backends.configure_interpreters()
        module, _, attr = path.partition(":")
        fn = getattr(importlib.import_module(module), attr)
        _IMPL_CACHE[path] = fn
    return fn


OPS: dict[str, Op] = {op.name: op for op in (square.OP, mean.OP, softmax.OP, gelu.OP)}

_B = "kernelscope.backends"
INT32 = 2**31 - 1

VARIANTS: dict[str, Variant] = {v.name: v for v in [
    # --- square -----------------------------------------------------------------
    Variant("square-torch", "square", "torch", "torch.square: one vectorized elementwise kernel from ATen",
            f"{_B}.torch_ops:square", lecture=True, bench_dtypes=F32_BF16),
    Variant("square-mul", "square", "torch", "a * a: same kernel as torch.square, reached through mul",
            f"{_B}.torch_ops:square_mul", lecture=True),
    Variant("square-pow", "square", "torch", "a ** 2: pow special-cases the exponent 2 to a multiply",
            f"{_B}.torch_ops:square_pow", lecture=True),
    Variant("square-compile", "square", "torch-compile", "torch.compile(torch.square): an Inductor-generated Triton kernel",
            f"{_B}.compiled:square", lecture=True),
    Variant("square-compile-cudagraphs", "square", "torch-compile",
            'torch.compile(..., mode="reduce-overhead"): the same Inductor kernels, recorded into a CUDA graph per shape and replayed: one launch a call',
            f"{_B}.compiled:square_cudagraphs"),
    Variant("square-triton-row", "square", "triton",
            "lecture Triton kernel: one program per row, BLOCK_SIZE = next power of two of the row",
            f"{_B}.triton.square:square_rows", lecture=True, takes_out=True, max_cols=2**16, max_numel=INT32),
    Variant("square-triton-flat1024", "square", "triton",
            "flat Triton kernel with a fixed BLOCK_SIZE of 1024: correct at every width, unlike a per-row fixed block",
            f"{_B}.triton.square:square_flat", takes_out=True, tuned=True, bench_dtypes=F32_BF16,
            canary=f"{_B}.triton.canary:square_flat",
            plan=f"{_B}.triton.square:square_flat_plan_of"),
    Variant("square-triton-flat256", "square", "triton",
            "the flat kernel with BLOCK_SIZE 256: four times the programs, a quarter of the work each",
            f"{_B}.triton.square:square_flat256", takes_out=True,
            plan=f"{_B}.triton.square:square_flat256_plan_of"),
    Variant("square-triton-flat4096", "square", "triton",
            "the flat kernel with BLOCK_SIZE 4096: a quarter of the programs, 32 elements a thread at 4 warps",
            f"{_B}.triton.square:square_flat4096", takes_out=True,
            plan=f"{_B}.triton.square:square_flat4096_plan_of"),
    Variant("square-triton-direct", "square", "triton",
            "square-triton-flat1024's kernel, launched through its compiled kernel after the first call: a cheaper call",
            f"{_B}.triton.square:square_flat_direct", takes_out=True, tuned=True,
            plan=f"{_B}.triton.square:square_flat_direct_plan_of"),
    Variant("square-cuda-lecture", "square", "cuda", "lecture CUDA C++ kernel: 2-D grid of 16x16 blocks, one element a thread",
            f"{_B}.cuda.kernels:square_lecture", dtypes=F32, lecture=True, takes_out=True, max_numel=INT32),
    Variant("square-cuda-vec4", "square", "cuda", "tuned CUDA C++: 16-byte vector loads, one contiguous tile a block, one lap over the array",
            f"{_B}.cuda.kernels:square_vec4", dtypes=F32_BF16, takes_out=True, tuned=True,
            bench_dtypes=F32_BF16,
            plan=f"{_B}.cuda.kernels:square_vec4_plan_of"),
    Variant("square-numba-lecture", "square", "numba",
            "lecture Numba kernel: row, col = cuda.grid(2) puts threadIdx.x on rows, so a warp strides through memory",
            f"{_B}.numba.square:square_lecture", dtypes=F32, lecture=True, takes_out=True, max_numel=INT32),
    Variant("square-numba-coalesced", "square", "numba",
            "Numba kernel with threadIdx.x on columns: a warp reads consecutive addresses",
            f"{_B}.numba.square:square_coalesced", dtypes=F32, takes_out=True, max_numel=INT32),
    Variant("square-numba-flat", "square", "numba",
            "tuned Numba: one contiguous tile of threads x unroll elements a block, one lap over the flat array",
            f"{_B}.numba.square:square_flat", dtypes=F32, takes_out=True, tuned=True,
            plan=f"{_B}.numba.square:square_flat_plan_of"),
    Variant("square-numba-direct", "square", "numba",
            "square-numba-flat's kernel, launched straight through the driver after its first call: a cheaper call",
            f"{_B}.numba.square:square_flat_direct", dtypes=F32, takes_out=True, tuned=True,
            plan=f"{_B}.numba.square:square_flat_direct_plan_of"),
    # --- mean -------------------------------------------------------------------
    Variant("mean-torch", "mean", "torch", "torch.mean(x): ATen's reduction kernel",
            f"{_B}.torch_ops:mean", lecture=True),
    Variant("mean-method", "mean", "torch", "x.mean(): the method form, same kernel",
            f"{_B}.torch_ops:mean_method", lecture=True),
    Variant("mean-sum-div", "mean", "torch", "x.sum() / x.numel(): a reduction plus a second tiny kernel",
            f"{_B}.torch_ops:mean_sum_div", lecture=True,
            limits=(Limit("offset", ("float16",), "x.sum() is rounded to float16 and overflows past 65,504 "
                                                  "before the divide"),
                    Limit("long", ("float16",), "x.sum() is rounded to float16 and overflows past 65,504 "
                                                "before the divide"))),
    Variant("mean-compile", "mean", "torch-compile", "torch.compile(torch.mean): Inductor's split reduction",
            f"{_B}.compiled:mean"),
    Variant("mean-compile-cudagraphs", "mean", "torch-compile",
            'torch.compile(..., mode="reduce-overhead"): the same Inductor kernels, recorded into a CUDA graph per shape and replayed: one launch a call',
            f"{_B}.compiled:mean_cudagraphs"),
    Variant("mean-triton-lecture", "mean", "triton",
            "lecture Triton kernel: each program loops element by element, torch sums the partials",
            f"{_B}.triton.mean:mean_lecture", lecture=True, takes_out=True, max_numel=INT32),
    Variant("mean-triton-tuned", "mean", "triton",
            "tuned Triton reduction in one launch: vector loads into per-program partial sums; the last program to arrive adds them up",
            f"{_B}.triton.mean:mean_tuned", takes_out=True, tuned=True,
            plan=f"{_B}.triton.mean:mean_plan_of"),
    Variant("mean-cuda", "mean", "cuda", "CUDA C++ reduction in one launch: 16-byte loads, warp shuffles; the last block to finish adds the partials",
            f"{_B}.cuda.kernels:mean", dtypes=F32, takes_out=True, tuned=True,
            plan=f"{_B}.cuda.kernels:mean_plan_of"),
    Variant("mean-numba", "mean", "numba",
            "Numba reduction in one launch: grid-stride partial sums; the last block to take an atomic ticket "
            "(after a threadfence) sums the partials",
            f"{_B}.numba.mean:mean", dtypes=F32, takes_out=True, tuned=True,
            plan=f"{_B}.numba.mean:mean_plan_of"),
    # --- softmax ----------------------------------------------------------------
    Variant("softmax-manual", "softmax", "torch", "the lecture's softmax in five torch ops: max, sub, exp, sum, div",
            f"{_B}.torch_ops:softmax_manual", lecture=True,
            limits=(Limit("long-row", ("float16",), "the row sum of exponentials is rounded to float16 and "
                                                    "overflows past 65,504 for wide rows of near-equal logits"),)),
    Variant("softmax-torch", "softmax", "torch", "torch.softmax(x, dim=-1): one fused ATen kernel",
            f"{_B}.torch_ops:softmax", lecture=True, bench_dtypes=F32_BF16),
    Variant("softmax-compile", "softmax", "torch-compile", "torch.compile of the manual softmax: Inductor fuses the five passes",
            f"{_B}.compiled:softmax", lecture=True,
            limits=(Limit("long-row", ("float16",), "on the CPU, Inductor's generated row sum accumulates in "
                                                    "float16 and ends far outside the tolerance on wide rows"),)),
    Variant("softmax-compile-cudagraphs", "softmax", "torch-compile",
            'torch.compile(..., mode="reduce-overhead"): the same Inductor kernels, recorded into a CUDA graph per shape and replayed: one launch a call',
            f"{_B}.compiled:softmax_cudagraphs",
            limits=(Limit("long-row", ("float16",), "on the CPU, Inductor's generated row sum accumulates in "
                                                    "float16 and ends far outside the tolerance on wide rows"),)),
    Variant("softmax-triton-row", "softmax", "triton",
            "lecture Triton kernel: one program per row, the whole row in one block",
            f"{_B}.triton.softmax:softmax_rows", lecture=True, takes_out=True, max_cols=2**16, max_numel=INT32),
    Variant("softmax-triton-online", "softmax", "triton",
            "online softmax: running max and sum over blocks, so rows of any width work",
            f"{_B}.triton.softmax:softmax_online", takes_out=True, max_numel=INT32),
    Variant("softmax-triton-tuned", "softmax", "triton",
            "tuned Triton softmax: rows held in registers with launch shapes per width; "
            "few wide rows split across programs and combined",
            f"{_B}.triton.softmax:softmax_tuned", takes_out=True, tuned=True,
            bench_dtypes=F32_BF16,
            plan=f"{_B}.triton.softmax:softmax_plan_of"),
    Variant("softmax-cuda", "softmax", "cuda",
            "CUDA C++ softmax: a row per block (or warp) in registers; few wide rows split across "
            "a thread-block cluster, combined through distributed shared memory",
            f"{_B}.cuda.kernels:softmax", dtypes=F32_BF16, takes_out=True, min_cc=(9, 0),
            tuned=True, bench_dtypes=F32_BF16,
            plan=f"{_B}.cuda.kernels:softmax_plan_of"),
    Variant("softmax-numba", "softmax", "numba",
            "Numba softmax: a block a row, held in registers up to 16384 columns, else in shared memory; wider rows cut into chunks over two launches",
            f"{_B}.numba.softmax:softmax", dtypes=F32, takes_out=True, tuned=True,
            plan=f"{_B}.numba.softmax:softmax_plan_of"),
    # --- gelu -------------------------------------------------------------------
    Variant("gelu-cuda-lecture", "gelu", "cuda", "lecture CUDA C++ kernel: 1-D grid, 1024 threads a block",
            f"{_B}.cuda.kernels:gelu_lecture", dtypes=F32, lecture=True, takes_out=True, max_numel=INT32),
    Variant("gelu-torch", "gelu", "torch", 'F.gelu(x, approximate="tanh"): one fused ATen kernel',
            f"{_B}.torch_ops:gelu", lecture=True, bench_dtypes=F32_BF16),
    Variant("gelu-formula", "gelu", "torch", "the tanh formula in torch ops: one kernel, one pass over memory, per op",
            f"{_B}.torch_ops:gelu_formula", lecture=True),
    Variant("gelu-compile", "gelu", "torch-compile", "torch.compile of the formula: Inductor fuses it into one kernel",
            f"{_B}.compiled:gelu", lecture=True),
    Variant("gelu-compile-cudagraphs", "gelu", "torch-compile",
            'torch.compile(..., mode="reduce-overhead"): the same Inductor kernels, recorded into a CUDA graph per shape and replayed: one launch a call',
            f"{_B}.compiled:gelu_cudagraphs"),
    Variant("gelu-triton", "gelu", "triton", "Triton kernel: the formula fused, computed in float32",
            f"{_B}.triton.gelu:gelu", takes_out=True, tuned=True, bench_dtypes=F32_BF16,
            plan=f"{_B}.triton.gelu:gelu_plan_of"),
    Variant("gelu-cuda-vec4", "gelu", "cuda", "tuned CUDA C++: 16-byte vector loads, one contiguous tile a block, one lap over the array",
            f"{_B}.cuda.kernels:gelu_vec4", dtypes=F32_BF16, takes_out=True, tuned=True,
            bench_dtypes=F32_BF16,
            plan=f"{_B}.cuda.kernels:gelu_vec4_plan_of"),
    Variant("gelu-numba", "gelu", "numba", "Numba gelu as x / (1 + exp(-2u)) through libdevice's fast exp and divide: one contiguous tile of threads x unroll elements a block, one lap over the flat array",
            f"{_B}.numba.gelu:gelu", dtypes=F32, takes_out=True, tuned=True,
            plan=f"{_B}.numba.gelu:gelu_plan_of"),
]}


def variants_of(op: str) -> list[Variant]:
    return [v for v in VARIANTS.values() if v.op == op]


def get(name: str) -> Variant:
    """The variant called ``name``; a KeyError that lists the known names otherwise."""
    try:
        return VARIANTS[name]
    except KeyError:
        raise KeyError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}") from None


def select(op: str | None = None, variant: str | None = None, backend: str | None = None) -> list[Variant]:
    """Variants filtered by op, name and backend; a clear error for an unknown filter."""
    if op is not None and op not in OPS:
        raise KeyError(f"unknown op {op!r}; known: {', '.join(OPS)}")
    if backend is not None and backend not in backends.BACKENDS:
        raise KeyError(f"unknown backend {backend!r}; known: {', '.join(backends.BACKENDS)}")
    if variant is not None:
        get(variant)
    return [v for v in VARIANTS.values()
            if (op is None or v.op == op) and (variant is None or v.name == variant)
            and (backend is None or v.backend == backend)]
