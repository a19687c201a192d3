"""Numba kernels launched straight through the driver: the same compiled kernel, a cheaper call.

A call through Numba's dispatcher cost the H100's host 120-230 us,
where a torch op cost 9 (``results-proofs/host-cost/launch_path_probe.py``: about 410 Python
calls a call, in wrapping each tensor through ``__cuda_array_interface__``,
typing the arguments, finding the overload, three to five context lookups and
packing the arguments). Here the first call with given argument types goes
through Numba, which compiles, checks and launches as usual; its compiled
kernel's driver handle and argument types are kept. Later calls with the same
types write the arguments in Numba's kernel ABI into a buffer made once and
call ``cuLaunchKernel`` (libcuda, through ctypes) on torch's current stream, so
CUDA events and graph capture see the launch as they see Numba's.

Numba's ABI for an array argument (``_Kernel._prepare_args`` in numba-cuda
0.30): seven-plus words, ``meminfo`` and ``parent`` (both 0 for a device
array), the element count, the item size, the data pointer, then the shape and
the strides in bytes; a scalar is its C type. :func:`arg_words` writes the
same words, and a CPU test compares them with Numba's own packing.

Under the simulator (the CPU path) there is no driver: every call goes through
Numba's dispatcher, which is what the CPU path checks.
"""

from __future__ import annotations

import ctypes
import struct

import torch

from kernelscope.backends import streams
from kernelscope.backends.numba import as_array, stream

# the C type of each scalar argument type Numba passes by value (its name, as numba.types names it)
_SCALARS = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H", "uint32": "I",
            "uint64": "Q", "float32": "f", "float64": "d"}


def _word(code: str, value) -> int:
    """A scalar's bytes in the low end of a 64-bit little-endian word (what the driver copies from it)."""
    raw = struct.pack("<" + code, value)
    return int.from_bytes(raw.ljust(8, b"\0"), "little")


def arg_codes(types: tuple) -> tuple:
    """Per argument type: None for an array, else the struct code of its C type."""
    codes = []
    for ty in types:
        if hasattr(ty, "ndim"):  # numba.types.Array
            codes.append(None)
        elif str(ty) in _SCALARS:
            codes.append(_SCALARS[str(ty)])
        else:
            raise NotImplementedError(f"a direct Numba launch takes arrays and numbers, not {ty}")
    return tuple(codes)


def arg_words(types: tuple, args: tuple, codes: tuple | None = None) -> list[int]:
    """Each argument in Numba's kernel ABI, as 64-bit words (tensors for arrays, Python numbers for scalars).

    ``types``: the compiled kernel's argument types (``numba.types.Array`` or a
    scalar type; ``codes``: their :func:`arg_codes`, if already known). Every
    word is 8 bytes, so a parameter's address is its word's; a 4-byte scalar
    sits in its word's low bytes.
    """
    words: list[int] = []
    for code, value in zip(codes or arg_codes(types), args):
        if code is None:
            item = value.element_size()
            words += [0, 0, value.numel(), item, value.data_ptr(), *value.shape, *(s * item for s in value.stride())]
        else:
            words.append(_word(code, value))
    return words


FLAT_ARRAY_WORDS = 7  # a 1-D array's words: meminfo, parent, count, item size, data pointer, shape, stride
DATA_WORD = 4  # where in them the data pointer sits


def flat_words(types: tuple, args: tuple, codes: tuple | None = None) -> list[int]:
    """:func:`arg_words` with each array argument a contiguous tensor described as 1-D (as ``view(-1)`` would
    present it), without making the views."""
    words: list[int] = []
    for code, value in zip(codes or arg_codes(types), args):
        if code is None:
            n, item = value.numel(), value.element_size()
            words += [0, 0, n, item, value.data_ptr(), n, item]
        else:
            words.append(_word(code, value))
    return words


def flat_data_words(codes: tuple) -> list[int]:
    """Per argument, where :func:`flat_words` writes its data pointer (an array's; a scalar's own word)."""
    slots, at = [], 0
    for code in codes:
        slots.append(at + DATA_WORD if code is None else at)
        at += FLAT_ARRAY_WORDS if code is None else 1
    return slots


def numba_args(args: tuple, flat: bool = False) -> list:
    """The arguments as Numba's launch takes them: each tensor as a Numba array (of its ``view(-1)`` if ``flat``)."""
    return [as_array(a.view(-1) if flat else a) if isinstance(a, torch.Tensor) else a for a in args]


def _dims(d) -> tuple[int, int, int]:
    if type(d) is int:
        return d, 1, 1
    d = tuple(d)
    return (*d, *(1,) * (3 - len(d)))


_LIBCUDA = None


def _cu_launch_kernel():
    global _LIBCUDA
    if _LIBCUDA is None:
        lib = ctypes.CDLL("libcuda.so.1")
        fn = lib.cuLaunchKernel
        u = ctypes.c_uint
        fn.argtypes = [ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        fn.restype = ctypes.c_int
        _LIBCUDA = fn
    return _LIBCUDA


class _Launch:
    """One compiled kernel with one set of argument types: its handle and its parameter buffer, made once.

    The buffer is rewritten by each call, and cuLaunchKernel copies the parameters before it returns: two
    threads launching the same kernel at once would need a buffer each (the suite launches from one).
    """

    def __init__(self, name: str, handle: int, types: tuple, words: int):
        self.name, self.handle, self.types, self.codes = name, handle, types, arg_codes(types)
        self.words = (ctypes.c_uint64 * words)()
        base = ctypes.addressof(self.words)
        self.params = (ctypes.c_void_p * words)(*(base + 8 * i for i in range(words)))

    def __call__(self, grid, block, args, flat: bool = False, shared: int = 0) -> None:
        words = self.words
        for i, w in enumerate((flat_words if flat else arg_words)(self.types, args, self.codes)):
            words[i] = w
        self._launch(*_dims(grid), *_dims(block), shared)

    def _launch(self, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, shared: int = 0) -> None:
        """The driver call, with the parameters as the buffer holds them and ``shared`` bytes of dynamic shared
        memory, on torch's current stream."""
        rc = _cu_launch_kernel()(self.handle, gx, gy, gz, bx, by, bz, shared, streams.current_stream_handle(),
                                 self.params, None)
        if rc:
            raise RuntimeError(f"{self.name}: cuLaunchKernel returned CUDA error {rc}")

    def as_map(self) -> "_Launch | None":
        """This launch ready for :meth:`map`, if its kernel takes two 1-D arrays of one dtype (x, y), else None.

        Writes the words no call changes: ``meminfo`` and ``parent`` (0) and each array's item size and stride.
        """
        if len(self.types) != 2:
            return None
        x, y = self.types
        if not (getattr(x, "ndim", 0) == 1 == getattr(y, "ndim", 0) and x.dtype == y.dtype):
            return None
        item = x.dtype.bitwidth // 8
        for i, w in enumerate([0, 0, 0, item, 0, 0, item] * 2):
            self.words[i] = w
        return self

    def map(self, blocks: int, threads: int, n: int, x_ptr: int, y_ptr: int) -> None:
        """Launch kernel(x, y) over two contiguous arrays of ``n`` elements: only the counts and the pointers are
        written (the rest by :meth:`as_map`), in the layout of :func:`flat_words`."""
        w = self.words
        w[2] = w[5] = w[9] = w[12] = n
        w[DATA_WORD], w[FLAT_ARRAY_WORDS + DATA_WORD] = x_ptr, y_ptr
        self._launch(blocks, 1, 1, threads, 1, 1)


class _Fixed:
    """A kept launch with every parameter word written once, for calls that differ only in where some tensors' data
    lie: a call writes the data pointers of the arguments at positions ``vary`` and launches. Its own buffer, so
    other calls of the same kernel leave its words alone; the arguments it does not vary are kept alive with it.
    That a call's tensors match the first ones in all but their data pointers (shape, dtype, device, contiguity)
    is the caller's to check."""

    def __init__(self, launch: _Launch, grid, block, args: tuple, shared: int, vary: tuple[int, ...]):
        self.launch = _Launch(launch.name, launch.handle, launch.types, word_count(launch.types))
        for i, w in enumerate(flat_words(launch.types, args, launch.codes)):
            self.launch.words[i] = w
        slots = flat_data_words(launch.codes)
        self.slots = tuple(slots[i] for i in vary)
        self.dims = (*_dims(grid), *_dims(block))
        self.shared = shared
        self.kept = [a for i, a in enumerate(args) if i not in vary and isinstance(a, torch.Tensor)]

    def __call__(self, *data_ptrs: int) -> None:
        words = self.launch.words
        for slot, ptr in zip(self.slots, data_ptrs):
            words[slot] = ptr
        self.launch._launch(*self.dims, self.shared)


def fixed(kernel, grid, block, *args, shared: int = 0, vary: tuple[int, ...] = (0, 1)) -> _Fixed | None:
    """The launch ``launch(kernel, grid, block, *args, flat=True, shared=shared)`` made and kept (None where it
    kept none: the simulator, CPU tensors), fixed for calls that pass only new data pointers for the arguments at
    positions ``vary``: for a variant's calls of one shape, a few pointer writes and the driver call."""
    found = _LAUNCHES.get(_key(kernel, args, True))
    return _Fixed(found, grid, block, args, shared, vary) if isinstance(found, _Launch) else None


_LAUNCHES: dict = {}
_MAPS: dict = {}  # (id(kernel), dtype, device) -> the kept launch of an elementwise kernel(x, y), ready to map


_FORGET_ALSO: list = []  # the fixed launches other modules keep (their dicts), dropped with the kept launches


def forget() -> None:
    """Drop every kept launch: each kernel's next call goes through Numba again (what a profiler that hooks
    Numba's launch needs to see)."""
    _LAUNCHES.clear()
    _MAPS.clear()
    for kept in _FORGET_ALSO:
        kept.clear()


def _key(kernel, args, flat: bool) -> tuple:
    # the device too: a CPU tensor must never reach a kept launch, nor a tensor on another GPU (another context)
    return (id(kernel), flat, *((a.dtype, a.dim(), a.is_contiguous(), a.device) if isinstance(a, torch.Tensor)
                                else type(a) for a in args))


def launch(kernel, grid, block, *args, flat: bool = False, shared: int = 0) -> None:
    """``kernel[grid, block, stream(), shared](*args)`` for tensors and numbers: through Numba the first time for
    these argument types (and always under the simulator), then straight through the driver.

    ``flat``: each tensor is passed as its ``view(-1)`` (a contiguous tensor as a 1-D array), the views made
    only on the first call. ``shared``: bytes of dynamic shared memory a block (a launch setting, not part of
    the key). A number's Numba type is fixed by its Python type, which is in the key: pass a size as
    ``np.int64`` (always int64), not as an int (int64, or uint64 past 2^63).
    """
    key = _key(kernel, args, flat)
    found = _LAUNCHES.get(key)  # only launches on a GPU are kept
    if found is not None:
        found(grid, block, args, flat, shared)
        return
    wrapped = numba_args(args, flat)
    kernel[grid, block, stream(), shared](*wrapped)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    # flat_words describes a tensor as contiguous: a view(-1) of another (a column, say) keeps Numba's path
    if any(a.is_cuda for a in tensors) and not (flat and not all(a.is_contiguous() for a in tensors)):
        _LAUNCHES[key] = _compiled(kernel, wrapped)


def launch_map(kernel, blocks: int, threads: int, x: torch.Tensor, y: torch.Tensor) -> None:
    """``launch(kernel, blocks, threads, x, y, flat=True)`` for an elementwise kernel(x, y), with the least Python
    a call can have: once kept, a call checks that x and y are contiguous and of the kept dtype and device, then
    writes the element count and the two pointers (:meth:`_Launch.map`). On the H100 the general keyed path cost
    about 23 us a call at 64x64 against a torch op's 10 (launch-ab); on a CPU with the driver stood
    in for, its Python took 12.5 us and this path's 5.4. Anything else, the first call included, goes through
    :func:`launch`.
    """
    kept = (_MAPS.get((id(kernel), x.dtype, x.device))
            if x.is_contiguous() and y.is_contiguous() and y.dtype == x.dtype and y.device == x.device else None)
    if kept is not None:
        kept.map(blocks, threads, x.numel(), x.data_ptr(), y.data_ptr())
        return
    launch(kernel, blocks, threads, x, y, flat=True)
    found = _LAUNCHES.get(_key(kernel, (x, y), True))
    if isinstance(found, _Launch) and found.as_map() is not None:
        _MAPS[(id(kernel), x.dtype, x.device)] = found


def word_count(types: tuple) -> int:
    """How many 64-bit words :func:`arg_words` writes for these argument types."""
    return sum(5 + 2 * ty.ndim if hasattr(ty, "ndim") else 1 for ty in types)


def _compiled(kernel, wrapped) -> _Launch:
    """The overload Numba just launched for these arguments, as a direct launch."""
    overload = kernel.overloads[tuple(kernel.typeof_pyval(a) for a in wrapped)]
    types = tuple(overload.argument_types)
    return _Launch(kernel.py_func.__name__, int(overload._codelibrary.get_cufunc().handle), types, word_count(types))
