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
A variant whose calls of one shape differ only in their tensors' data keeps a :class:`Fixed` launch
(:func:`fixed`): the grid, the compiled kernel and every other argument worked out once, so such a call skips
the variant's launch planning and the key as well. Launch hooks (a profiler such as proton) get the standard
path, since they read the launch metadata this path skips. Under ``TRITON_INTERPRET=1`` (the
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


_FORGET_ALSO: list = []  # the fixed launches other modules keep (their dicts), dropped with the kept kernels


def forget() -> None:
    """Drop every kept kernel and fixed launch: each kernel's next call goes through ``kernel[grid]`` again."""
    _KEPT.clear()
    for kept in _FORGET_ALSO:
        kept.clear()


def fixed_table() -> dict:
    """A dict for a module's fixed launches, emptied by forget() with the kept kernels."""
    table: dict = {}
    _FORGET_ALSO.append(table)
    return table


def flat_key(x: torch.Tensor, y: torch.Tensor) -> tuple:
    """What a flat launch over x into y is fixed by: x's size, dtype and device, and each pointer's 16-byte
    alignment (Triton specializes on it)."""
    return (x.numel(), x.dtype, x.device, x.data_ptr() & 15 == 0, y.data_ptr() & 15 == 0)


def _key(kernel, args: tuple, keywords: dict) -> tuple:
    return (id(kernel), *map(_spec, args), *keywords.items())


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
    key = _key(kernel, args, keywords)
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


class Fixed:
    """A kept kernel's launch with its grid and every argument but some tensors fixed, for a variant's calls that
    differ only in where those tensors' data lie: a call passes the tensors for positions ``vary`` and goes
    straight to the launcher. That a call's tensors match the first ones in all Triton specializes on (dtype,
    device, 16-byte alignment) and in all the fixed arguments were worked out from (shape, strides) is the
    caller's to check; the arguments it does not vary are kept alive with it, those it varies are not."""

    __slots__ = ("run", "grid", "function", "metadata", "args", "vary")

    def __init__(self, compiled, grid: tuple, args: list, vary: tuple[int, ...]):
        self.run, self.function, self.metadata = compiled.run, compiled.function, compiled.packed_metadata
        self.grid = (*grid, 1, 1)[:3]
        self.args = args
        self.vary = vary

    def __call__(self, *tensors: torch.Tensor) -> bool:
        """Launch with ``tensors`` in the varied places; False (nothing launched) where a launch hook is set, and
        the caller takes the standard path, which runs it."""
        enter, leave = _hooks()
        if _hooked(enter) or _hooked(leave):
            return False
        args = self.args.copy()  # the call's tensors are not kept past it
        for i, tensor in zip(self.vary, tensors):
            args[i] = tensor
        gx, gy, gz = self.grid
        self.run(gx, gy, gz, streams.current_stream_handle(), self.function, self.metadata, None, None, None, *args)
        return True


def fixed(kernel, grid: tuple, *args, vary: tuple[int, ...] = (0, 1), **keywords) -> Fixed | None:
    """The launch ``launch(kernel, grid, *args, **keywords)`` made and kept, fixed for calls that pass only the
    tensors at positions ``vary`` (None where none was kept: the interpreter, a launch hook, a first call not made
    yet)."""
    kept = _KEPT.get(_key(kernel, args, keywords))
    if kept is None:
        return None
    compiled, rest = kept
    # the first call's own tensors are not kept: a kept 8 GiB input would stay allocated for the process's life
    return Fixed(compiled, grid, [None if i in vary else a for i, a in enumerate(args)] + [*rest], vary)
