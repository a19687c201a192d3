"""Backends: the ways of getting a kernel into PyTorch.

Each backend says what it needs, whether it can run here, and which tensors it
accepts. Kernel code lives beside this file, one module (or .cu file) per op.

Without a GPU, Triton kernels run under the Triton interpreter
(``TRITON_INTERPRET=1``) and Numba kernels under the CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``). Both switches are read when the frameworks import
and decorate kernels, so :func:`configure_interpreters` sets them before any
kernel module is imported.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from functools import cache
from typing import Callable

import torch


# Ask NVML, not the CUDA runtime: a runtime query in a process that later forks
# (asv's forkserver) would leave the children unable to use CUDA.
os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")


# A GPU whose DRAM asks each SM for this many GB/s or more (its peak from the device's memory clock and bus width,
# over its SMs: the H200 36.5, the H100 about 25) needs more bytes in flight an SM than the H100's launch shapes
# keep: the tuned softmax kernels of CUDA C++ and Numba take more threads there (kernels.SOFTMAX_LONE_EPT_WIDE_DRAM,
# softmax.REGS_EPT_WIDE_DRAM), one line for both backends.
WIDE_DRAM_GBPS_PER_SM = 30.0


@cache
def cuda_available() -> bool:
    return torch.cuda.is_available()


def default_device() -> str:
    return "cuda" if cuda_available() else "cpu"


TRITON_INTERPRET = "TRITON_INTERPRET"
NUMBA_CUDASIM = "NUMBA_ENABLE_CUDASIM"


def configure_interpreters() -> None:
    """On a machine without a GPU, route every backend that has one to its CPU interpreter."""
    if cuda_available():
        return
    for backend in BACKENDS.values():
        if backend.interpreter:
            os.environ.setdefault(backend.interpreter, "1")


def switch_on(name: str) -> bool:
    return os.environ.get(name, "0") not in ("", "0")


def numba_simulated() -> bool:
    return switch_on(NUMBA_CUDASIM)


def _compute_capability() -> tuple[int, int] | None:
    return torch.cuda.get_device_capability() if cuda_available() else None


def _missing(module: str) -> bool:
    return importlib.util.find_spec(module) is None


def _torch_unavailable(device: str) -> str | None:
    return None


def _compile_unavailable(device: str) -> str | None:
    if device == "cpu" and shutil.which(os.environ.get("CXX", "g++")) is None:
        return "torch.compile on the CPU needs a C++ compiler (g++)"
    return None


def _triton_unavailable(device: str) -> str | None:
    if _missing("triton"):
        return "triton is not installed"
    if device == "cpu":
        configure_interpreters()
        if not switch_on(TRITON_INTERPRET):
            return f"Triton on the CPU needs {TRITON_INTERPRET}=1"
    return None


def _cuda_unavailable(device: str) -> str | None:
    if device != "cuda":
        return "CUDA C++ through load_inline needs a CUDA GPU (the CPU path compile-checks the .cu files with nvcc instead)"
    if torch.version.cuda is None:
        return "this torch build has no CUDA support"
    from torch.utils.cpp_extension import CUDA_HOME

    if CUDA_HOME is None:
        return "CUDA toolkit (nvcc) not found: set CUDA_HOME"
    return None


def _numba_unavailable(device: str) -> str | None:
    if _missing("numba"):
        return "numba is not installed"
    if device == "cpu":
        configure_interpreters()
        if not numba_simulated():
            return f"Numba on the CPU needs {NUMBA_CUDASIM}=1"
    elif _missing("numba_cuda"):
        return "numba-cuda is not installed (pip install numba-cuda)"
    return None


# --- each framework's one-time start in a process, done once in a parent that forks (asv's forkserver) ---
# What the H100's first calls spent (results-proofs/first-call):
# Numba 1.3 s of 1.5 importing its typing and lowering registries, Triton 0.45 s hashing its own
# library for the cache key and 0.2 s importing gluon, Inductor imports and Triton's same hash.
# Host-only work: nothing here may initialize CUDA, or the forked children could not use it.

def _import_all(*modules: str) -> None:
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception:  # a module this framework version lacks: its first call imports what it has
            pass


def _nothing() -> None:
    return None


def _triton_preload() -> None:
    if _missing("triton"):
        return
    _import_all("triton", "triton.language", "triton.experimental.gluon")
    try:
        from triton.runtime.cache import triton_key  # lru-cached: hashed once per process, by the first compile
    except ImportError:
        return
    triton_key()


def _compile_preload() -> None:
    _import_all("torch._dynamo", "torch._inductor.compile_fx", "torch._dynamo.backends.inductor",
                "torch._dynamo.repro.after_dynamo", "torch._functorch._aot_autograd.subclass_codegen",
                "torch._higher_order_ops.passes.inline_invoke_subgraph", "torch._inductor.codegen.memory_planning",
                "torch._inductor.codegen.cpp_wrapper_gpu", "torch._inductor.codegen.wrapper_fxir",
                "torch._inductor.compiler_bisector", "torch._inductor.hooks", "torch._subclasses.schema_check_mode",
                "torch.export._trace", "torch.fx.experimental.validator")
    _triton_preload()  # Inductor's cache key includes Triton's


def _compile_release() -> None:
    """Inductor's CUDA graph trees (mode="reduce-overhead") keep each recorded graph's memory pool, its static
    inputs and outputs, for the process's life: a 2^31-element input's graph holds about 17 GiB. Shut them down
    (a later call records its graph anew) and hand the pools' memory back."""
    if "torch._inductor.cudagraph_trees" not in sys.modules:
        return  # nothing was recorded in this process
    sys.modules["torch._inductor.cudagraph_trees"].reset_cudagraph_trees()
    if torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _cuda_preload() -> None:
    _import_all("torch.utils.cpp_extension")


class CudaStartedInParent(RuntimeError):
    """A preload created a CUDA context or initialized the driver: processes forked afterwards cannot use CUDA."""


def _numba_preload() -> None:
    if _missing("numba") or numba_simulated() or not cuda_available():
        return
    importlib.import_module("kernelscope.backends.numba")  # its numpy shim first (np.row_stack, numpy >= 2.5)
    from numba.cuda.cudadrv.driver import driver
    from numba.cuda.descriptor import cuda_target

    cuda_target.target_context.refresh()  # what the first kernel's load or compile would do in each process
    if driver.is_initialized and driver.initialization_error is None:
        raise CudaStartedInParent("numba: preloading initialized the CUDA driver")


def preload(only: set[str] | None = None) -> None:
    """Every available backend's one-time start (imports, caches of the host side), for a parent that forks;
    ``only``: of these backends alone (those of the variants its children will run).

    A backend whose start fails here is left to start in each process, as
    without a preload (said on stderr); one that started CUDA is an error.
    """
    for backend in BACKENDS.values():
        if backend.why_unavailable(default_device()) is not None or (only is not None and backend.name not in only):
            continue
        try:
            backend.preload()
        except CudaStartedInParent:
            raise
        except Exception as exc:  # noqa: BLE001 - only a cost: each benchmark process starts it then
            print(f"kernelscope: {backend.name}: could not start it ahead of the benchmark processes "
                  f"({type(exc).__name__}: {exc}); each process starts it", file=sys.stderr)


def _any_device(device: torch.device) -> str | None:
    return None


def _gpu_or_interpreter(flag: str) -> Callable[[torch.device], str | None]:
    def rule(device: torch.device) -> str | None:
        if switch_on(flag):
            if device.type != "cpu":
                return f"under {flag}=1 the kernel runs on the CPU: pass a CPU tensor, got one on {device}"
            return None
        if device.type != "cuda":
            return f"needs a CUDA tensor, got one on {device} (without a GPU, set {flag}=1)"
        return None

    return rule


def _cuda_only(device: torch.device) -> str | None:
    return None if device.type == "cuda" else f"needs a CUDA tensor, got one on {device}"


@dataclass(frozen=True)
class Backend:
    """A backend and its rules; adding one is one entry in ``BACKENDS``."""

    name: str
    summary: str
    needs: tuple[str, ...]
    why_unavailable: Callable[[str], str | None]  # device name -> reason it cannot run here, or None
    why_not_device: Callable[[torch.device], str | None]  # a tensor's device -> reason it is refused, or None
    interpreter: str | None = None  # the switch of its CPU interpreter, if it has one
    # Largest input its CPU interpreter checks in reasonable time (None: no cap).
    # Numba's simulator runs every CUDA thread as a Python thread, about 1 ms each.
    interpreted_max_numel: int | None = None
    # Its framework's one-time start in a process, host side only (imports, hashes): done once in
    # a parent that then forks benchmark processes, so that each of them skips it.
    preload: Callable[[], None] = _nothing
    # Memory its framework keeps between calls (graph pools, static buffers), handed back: after a variant's check,
    # whose largest inputs need most of a GPU for the variants checked after it.
    release: Callable[[], None] = _nothing

    def interpreted(self, device: str) -> bool:
        return device == "cpu" and self.interpreter is not None

    def unavailable(self, device: str, min_cc: tuple[int, int] | None = None) -> str | None:
        """Why this backend cannot run on ``device`` on this machine, or None."""
        if device == "cuda" and not cuda_available():
            return "no CUDA GPU visible to torch"
        if device == "cuda" and min_cc and _compute_capability() < min_cc:
            return f"needs compute capability {min_cc[0]}.{min_cc[1]}, GPU has {_compute_capability()}"
        return self.why_unavailable(device)

    def device_error(self, device: torch.device) -> str | None:
        """Why this backend cannot take a tensor on ``device``, or None."""
        return self.why_not_device(device)


BACKENDS: dict[str, Backend] = {b.name: b for b in [
    Backend("torch", "PyTorch eager: ATen's own kernels", ("torch",), _torch_unavailable, _any_device),
    Backend("torch-compile", "torch.compile: Inductor generates Triton (GPU) or C++ (CPU) kernels",
            ("torch>=2.0", "a C++ compiler on the CPU"), _compile_unavailable, _any_device, preload=_compile_preload,
            release=_compile_release),
    Backend("triton", "Triton kernels written in Python, JIT-compiled", ("triton", f"a CUDA GPU or {TRITON_INTERPRET}=1"),
            _triton_unavailable, _gpu_or_interpreter(TRITON_INTERPRET), interpreter=TRITON_INTERPRET,
            preload=_triton_preload),
    Backend("cuda", "CUDA C++ from .cu files, built by torch.utils.cpp_extension.load_inline",
            ("a CUDA GPU", "nvcc", "a CUDA build of torch"), _cuda_unavailable, _cuda_only, preload=_cuda_preload),
    Backend("numba", "Numba CUDA kernels (@cuda.jit)", ("numba-cuda", f"a CUDA GPU or {NUMBA_CUDASIM}=1"),
            _numba_unavailable, _gpu_or_interpreter(NUMBA_CUDASIM), interpreter=NUMBA_CUDASIM,
            interpreted_max_numel=1024, preload=_numba_preload),
]}
