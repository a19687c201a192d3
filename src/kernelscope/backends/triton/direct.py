"""Triton kernels launched through their compiled kernel: the same kernel, a cheaper call.

``kernel[grid](*args)`` runs ``JITFunction.run`` on every call: it binds the
arguments to the signature, works out their specialization (dtypes, 16-byte
alignment of each pointer, integers equal to 1 or divisible by 16), builds
the cache key and finds the compiled kernel, then calls its launcher. On the
H100 that was 17.5 us of host a call at 64x64, against 8.6 for a
torch op, and ``JITFunction.run`` was two thirds of it
(``results-proofs/host-cost/launch_path_probe.py``).

Here the first call with a given specialization goes through ``kernel[grid]``,
which compiles, launches and returns the ``CompiledKernel``; later calls with
the same specialization call that kernel's launcher directly, as
``JITFunction.run`` itself does at its end. The key is a superset of Triton's
specialization (a tensor's dtype, device and 16-byte alignment; an integer's being 1,
its divisibility by 16 and whether it fits 32 bits; the constexprs and launch
options), so a kept kernel is only reused where Triton would pick the same one.
Launch hooks (a profiler such as proton) get the standard path, since they
read the launch metadata this path skips. Under ``TRITON_INTERPRET=1`` (the
CPU path) ``kernel[grid]`` returns no compiled kernel, so every call takes the
standard path.
"""

from __future__ import annotations

import torch
import triton

from kernelscope.backends import streams

_KEPT: dict = {}


def _spec(value) -> tuple:
    if isinstance(value, torch.Tensor):  # its device too: Triton compiles per device, and a CPU tensor must fail
        return ("t", value.dtype, value.data_ptr() & 15 == 0, value.device)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int):
        return ("i", value == 1, value % 16 == 0, -2**31 <= value < 2**31)
    if isinstance(value, float):
        return ("f",)
    return ("v", value)


_RUNTIME = getattr(getattr(triton, "knobs", None), "runtime", None)  # where Triton keeps its launch hooks


def _hooks():
    """The launch hooks JITFunction.run passes its launcher (None, or a chain of hooks in newer Triton)."""
    return (getattr(_RUNTIME, "launch_enter_hook", None), getattr(_RUNTIME, "launch_exit_hook", None))


def _hooked(hook) -> bool:
    """Whether a launch hook would run: set, and not an empty chain."""
    return hook is not None and bool(getattr(hook, "calls", True))


def forget() -> None:
    """Drop every kept kernel: each kernel's next call goes through ``kernel[grid]`` again."""
    _KEPT.clear()


def launch(kernel, grid: tuple, *args, **keywords) -> None:
    """``kernel[grid](*args, **keywords)``, through the compiled kernel's launcher after the first call.

    ``keywords``: the kernel's constexpr parameters by name, and launch options (``num_warps``).
    What the launcher takes after ``args`` (the keywords in the kernel's parameter order) is kept with the
    kernel. The keywords enter the key in the caller's order, unsorted: a call site that names them in
    another order gets a kernel of its own, the same one. The launcher gets no hooks: this path is taken
    only when none would run, and an empty chain of them costs two Python calls a launch.
    """
    enter, leave = _hooks()
    hooked = _hooked(enter) or _hooked(leave)
    key = (id(kernel), *map(_spec, args), *keywords.items())
    kept = None if hooked else _KEPT.get(key)
    if kept is None:
        compiled = kernel[grid](*args, **keywords)
        if not hooked and compiled is not None and hasattr(compiled, "run"):  # None under the interpreter
            _KEPT[key] = (compiled, tuple(keywords[name] for name in kernel.arg_names[len(args):]))
        return
    compiled, rest = kept
    g = (*grid, 1, 1)
    compiled.run(g[0], g[1], g[2], streams.current_stream_handle(), compiled.function,
                 compiled.packed_metadata, None, None, None, *args, *rest)
