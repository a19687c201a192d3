"""Numba kernels launched straight through the driver (backends/numba/direct.py).

The direct launch writes each argument in Numba's kernel ABI itself. That ABI
is Numba's, so the reference is Numba's own packing (``_Kernel._prepare_args``
of the numba-cuda installed), run in a process without the simulator, where
numba-cuda's real dispatcher imports without a GPU. Under the simulator every
call goes through Numba's dispatcher: the variant's answer is checked there
like every variant's; on a GPU the marked test checks the direct launch itself.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from direct_launch import check_direct_square

from kernelscope import backends

backends.configure_interpreters()

from kernelscope.backends.numba import direct  # noqa: E402

NUMBA_PACKING = textwrap.dedent("""
    import json, sys
    import torch
    from numba.cuda import types
    from numba.cuda.args import ArgHint
    from numba.cuda.dispatcher import _Kernel
    from kernelscope.backends.numba.direct import arg_words, word_count

    class Layout:  # what _prepare_args reads of a device array's layout
        def __init__(self, t):
            self.strides_in_bytes = tuple(s * t.element_size() for s in t.stride())
            self.is_contiguous_c, self.is_contiguous_f = t.is_contiguous(), False

    class Device:  # a device array as _prepare_args sees it: size, dtype, pointer, shape, layout
        def __init__(self, t, ptr):
            self.size, self.dtype, self.ptr, self.shape = t.numel(), t.numpy().dtype, ptr, tuple(t.shape)
            self._layout = Layout(t)

    class Hint(ArgHint):
        def __init__(self, device):
            self.device = device
        def to_device(self, retr, stream=0):
            return self.device

    class Fake:  # stands in for a torch tensor whose data_ptr is a device address
        def __init__(self, t, ptr):
            self.t, self.ptr = t, ptr
            self.shape = t.shape
        def element_size(self): return self.t.element_size()
        def numel(self): return self.t.numel()
        def data_ptr(self): return self.ptr
        def stride(self): return self.t.stride()

    kernel = _Kernel.__new__(_Kernel)
    kernel.extensions = []
    out = []
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    cases = [
        ((types.Array(types.float32, 1, "C"), types.Array(types.float32, 1, "C")),
         (Fake(x.view(-1), 0x7f0000001000), Fake(x.view(-1), 0x7f0000002000))),
        ((types.Array(types.float32, 2, "A"), types.int64, types.float32, types.int32),
         (Fake(x.t(), 0x7f0000003000), -5, 0.1, 7)),
    ]
    for tys, args in cases:
        theirs = []
        for ty, a in zip(tys, args):
            value = Hint(Device(a.t, a.ptr)) if isinstance(a, Fake) else a
            kernel._prepare_args(ty, value, 0, [], theirs)
        as_words = []
        for w in theirs:  # ints as they are; ctypes scalars as the bytes the driver copies
            if isinstance(w, int):
                as_words.append(w & (2**64 - 1))
            else:
                import ctypes
                raw = ctypes.string_at(ctypes.addressof(w), ctypes.sizeof(w))
                as_words.append(int.from_bytes(raw.ljust(8, b"\\0"), "little"))
        ours = arg_words(tys, args)
        out.append({"numba": as_words, "ours": ours, "count": word_count(tys)})
    print(json.dumps(out))
""")


def test_direct_words_are_numbas_own_packing_of_the_same_arguments():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, "-c", NUMBA_PACKING], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    cases = json.loads(proc.stdout.strip().splitlines()[-1])
    for case in cases:
        assert case["ours"] == case["numba"] and len(case["ours"]) == case["count"]
    flat, mixed = cases
    assert flat["ours"][:7] == [0, 0, 12, 4, 0x7f0000001000, 12, 4]  # meminfo, parent, nitems, itemsize, data, shape, strides
    assert mixed["ours"][4:9] == [0x7f0000003000, 4, 3, 4, 16]  # x.t(): shape (4, 3), strides (4, 16) bytes


def test_a_scalar_sits_in_the_low_bytes_of_its_word_and_other_types_are_refused():
    assert direct._word("i", -1) == 0xFFFFFFFF and direct._word("q", -1) == 2**64 - 1
    assert direct._word("f", 1.0) == 0x3F800000
    with pytest.raises(NotImplementedError, match="arrays and numbers, not complex64"):
        direct.arg_words(("complex64",), (1j,))


def _recording_driver(monkeypatch, tys):
    """libcuda stood in for: each launch's (handle, grid, block, shared, stream, parameter words, extra)."""
    import ctypes

    seen = []

    def fake_launch(handle, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        pointers = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        words = [ctypes.c_uint64.from_address(pointers[i]).value for i in range(direct.word_count(tys))]
        seen.append((handle, (gx, gy, gz), (bx, by, bz), shared, stream, words, extra))
        return 0

    monkeypatch.setattr(direct, "_cu_launch_kernel", lambda: fake_launch)
    return seen


def test_a_direct_launch_hands_the_driver_pointers_to_the_words_of_this_calls_arguments(monkeypatch):
    """The driver call itself, with libcuda and torch's stream stood in for: handle, grid, block, stream, and
    kernelParams pointing at each parameter's word, rewritten for each call's tensors."""
    from types import SimpleNamespace

    from numba import types

    monkeypatch.setattr(torch.cuda, "current_stream", lambda: SimpleNamespace(cuda_stream=0x5150))
    tys = (types.Array(types.float32, 1, "C"), types.Array(types.float32, 1, "C"), types.int32)
    seen = _recording_driver(monkeypatch, tys)
    launch = direct._Launch("square_tiled", 0xC0FFEE, tys, direct.word_count(tys))
    for n in (64, 100):
        x, y = torch.randn(n), torch.empty(n)
        launch(7, 256, (x, y, n))
        handle, grid, block, shared, stream, words, extra = seen[-1]
        assert (handle, grid, block, shared, stream, extra) == (0xC0FFEE, (7, 1, 1), (256, 1, 1), 0, 0x5150, None)
        assert words == [0, 0, n, 4, x.data_ptr(), n, 4, 0, 0, n, 4, y.data_ptr(), n, 4, n]
    failing = direct._Launch("square_tiled", 1, tys, direct.word_count(tys))
    monkeypatch.setattr(direct, "_cu_launch_kernel", lambda: lambda *a: 700)  # CUDA_ERROR_ILLEGAL_ADDRESS
    with pytest.raises(RuntimeError, match="square_tiled: cuLaunchKernel returned CUDA error 700"):
        failing((1, 1), (32, 1, 1), (x, y, 100))


def test_on_the_cpu_path_every_call_goes_through_numbas_dispatcher(monkeypatch):
    """No tensor on a GPU: nothing is kept for a direct launch, and the answer is the kernel's."""
    from kernelscope.backends.numba.square import square_flat, square_flat_direct

    direct.forget()
    x = torch.randn(16, 16)
    assert torch.equal(square_flat_direct(x), square_flat(x))
    assert direct._LAUNCHES == {}


@pytest.mark.gpu
def test_gpu_direct_launch_matches_numbas_own_launch_and_is_captured_in_a_graph():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelscope.backends.numba.square import square_flat, square_flat_direct

    direct.forget()
    check_direct_square(square_flat, square_flat_direct, [(64, 64), (1000, 1000), (4096, 4096)])
    assert len(direct._LAUNCHES) == 1  # one kernel, one set of argument types: one direct launch kept
    assert list(direct._MAPS.values()) == list(direct._LAUNCHES.values())  # and kept as a map


def test_the_stream_handle_comes_from_torchs_raw_getter_for_the_current_device(monkeypatch):
    # A CPU build of torch has no raw getter; the GPU test checks the real one against torch.cuda.current_stream().
    from kernelscope.backends import streams

    asked = []
    monkeypatch.setattr(streams, "_raw_stream", lambda device: asked.append(device) or 0x5150)
    monkeypatch.setattr(streams, "_device", lambda: 3)  # torch._C's, without current_device()'s lazy-init check
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: pytest.fail("the Stream object is what this avoids"))
    assert streams.current_stream_handle() == 0x5150 and asked == [3]


def test_flat_words_describe_a_contiguous_tensor_as_its_view(monkeypatch):
    from numba import types

    one_d = types.Array(types.float32, 1, "C")
    for shape in ((64, 64), (3, 5, 7), (10,)):
        x, y = torch.randn(shape), torch.empty(shape)
        assert direct.flat_words((one_d, one_d, types.int64), (x, y, 9)) == \
            direct.arg_words((one_d, one_d, types.int64), (x.view(-1), y.view(-1), 9))


def test_a_flat_launch_keeps_the_direct_path_only_for_contiguous_tensors(monkeypatch):
    """On a GPU Numba's first launch is kept; a column (view(-1) works, but it is not contiguous) is not."""
    launched = []

    class Kernel:
        def __getitem__(self, config):
            return lambda *wrapped: launched.append(wrapped)

    monkeypatch.setattr(direct, "stream", lambda: 0)
    monkeypatch.setattr(direct, "as_array", lambda t: ("array", tuple(t.shape), t.stride()))
    monkeypatch.setattr(direct, "_compiled", lambda kernel, wrapped: ("kept", wrapped))
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    direct.forget()
    kernel = Kernel()
    x = torch.randn(4, 4)
    direct.launch(kernel, 1, 32, x, torch.empty_like(x), flat=True)
    assert launched[-1][0] == ("array", (16,), (1,))  # Numba saw the views
    assert list(direct._LAUNCHES.values()) == [("kept", list(launched[-1]))]
    direct.forget()
    column = torch.randn(4, 2)[:, :1]
    direct.launch(kernel, 1, 32, column, torch.empty(4, 1), flat=True)
    assert launched[-1][0] == ("array", (4,), (2,)) and direct._LAUNCHES == {}
    direct.forget()


def test_a_kept_launch_is_never_used_for_tensors_on_another_device(monkeypatch):
    """A launch kept for GPU tensors is looked up by the tensors' device too: CPU tensors of the same dtype and
    shape go through Numba (which refuses or simulates them), never to the driver with host pointers."""
    calls = []

    class Kernel:
        def __getitem__(self, config):
            return lambda *wrapped: calls.append("numba")

    monkeypatch.setattr(direct, "stream", lambda: 0)
    monkeypatch.setattr(direct, "as_array", lambda t: t)
    monkeypatch.setattr(direct, "_compiled", lambda kernel, wrapped: lambda *a: calls.append("driver"))
    direct.forget()
    kernel, x = Kernel(), torch.randn(8)
    with monkeypatch.context() as on_gpu:  # the first launch as if on cuda:0: kept
        on_gpu.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
        on_gpu.setattr(torch.Tensor, "device", property(lambda self: torch.device("cuda", 0)))
        direct.launch(kernel, 1, 32, x, x, flat=True)
        direct.launch(kernel, 1, 32, x, x, flat=True)
    assert calls == ["numba", "driver"] and len(direct._LAUNCHES) == 1
    direct.launch(kernel, 1, 32, x, x, flat=True)  # the same tensors, on the CPU
    assert calls == ["numba", "driver", "numba"]
    direct.forget()


def test_a_map_launch_writes_what_the_general_flat_launch_writes(monkeypatch):
    """The lean path of an elementwise kernel(x, y) rewrites only the counts and pointers: the driver must see the
    words the general path (flat_words) gives, call after call, whatever the general path wrote before."""
    from numba import types

    one_d = types.Array(types.float32, 1, "C")
    seen = _recording_driver(monkeypatch, (one_d, one_d))
    monkeypatch.setattr(direct.streams, "current_stream_handle", lambda: 0x5150)
    general = direct._Launch("square_tiled", 0xC0FFEE, (one_d, one_d), direct.word_count((one_d, one_d)))
    lean = direct._Launch("square_tiled", 0xC0FFEE, (one_d, one_d), direct.word_count((one_d, one_d)))
    assert lean.as_map() is lean
    for shape in ((64, 64), (3, 7), (100_000,)):
        x, y = torch.randn(shape), torch.empty(shape)
        general(9, 256, (x, y), flat=True)
        lean.map(9, 256, x.numel(), x.data_ptr(), y.data_ptr())
        handle, grid, block, _, stream, words, _ = seen[-1]
        assert seen[-1] == seen[-2] and (handle, grid, block, stream) == (0xC0FFEE, (9, 1, 1), (256, 1, 1), 0x5150)
        assert words == direct.flat_words((one_d, one_d), (x, y))
    half = types.Array(types.float16, 1, "C")
    x, y = torch.randn(5).half(), torch.empty(5).half()
    kept = direct._Launch("h", 1, (half, half), 14).as_map()
    kept.map(1, 32, 5, x.data_ptr(), y.data_ptr())
    assert seen[-1][5] == direct.flat_words((half, half), (x, y))  # item size 2 and stride 2 bytes
    monkeypatch.setattr(direct, "_cu_launch_kernel", lambda: lambda *a: 700)
    with pytest.raises(RuntimeError, match="square_tiled: cuLaunchKernel returned CUDA error 700"):
        lean.map(1, 32, 5, 0, 0)


def test_only_a_kernel_of_two_1d_arrays_of_one_dtype_is_kept_as_a_map():
    from numba import types

    f32, f16 = types.Array(types.float32, 1, "C"), types.Array(types.float16, 1, "C")
    two_d = types.Array(types.float32, 2, "C")
    for tys in ((f32, f32, types.int32), (f32, f16), (f32, two_d), (f32,)):
        assert direct._Launch("k", 1, tys, direct.word_count(tys)).as_map() is None, tys


def test_launch_map_keeps_the_lean_path_only_for_what_it_checks_each_call(monkeypatch):
    """First call through Numba (launch), kept as a map; then the lean path for contiguous tensors of the kept
    dtype and device; a column, another dtype, another device or mixed dtypes go through launch again."""
    from numba import types

    one_d = types.Array(types.float32, 1, "C")
    calls = []

    class Kernel:
        def __getitem__(self, config):
            return lambda *wrapped: calls.append("numba")

    class Kept(direct._Launch):
        def map(self, *args):
            calls.append("map")

        def __call__(self, *args):
            calls.append("keyed")

    monkeypatch.setattr(direct, "stream", lambda: 0)
    monkeypatch.setattr(direct, "as_array", lambda t: t)
    monkeypatch.setattr(direct, "_compiled", lambda kernel, wrapped: Kept("k", 1, (one_d, one_d), 14))
    direct.forget()
    kernel, x = Kernel(), torch.randn(8, 8)
    with monkeypatch.context() as on_gpu:
        on_gpu.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
        direct.launch_map(kernel, 1, 32, x, torch.empty_like(x))
        direct.launch_map(kernel, 1, 32, x, torch.empty_like(x))
        assert calls == ["numba", "map"] and len(direct._MAPS) == 1
        column = torch.empty(4, 2)[:, :1]  # not contiguous, yet view(-1) works
        direct.launch_map(kernel, 1, 32, torch.randn(4, 1), column)  # Numba, not kept
        direct.launch_map(kernel, 1, 32, x.double(), torch.empty(8, 8, dtype=torch.float64))  # another dtype
        assert calls[2:] == ["numba", "numba"]
        direct.launch_map(kernel, 1, 32, x, torch.empty(8, 8, dtype=torch.float64))  # mixed: the keyed path
        assert calls[4] == "numba" and calls.count("map") == 1
    with monkeypatch.context() as on_gpu1:  # the same dtype on another device: never the kept map
        on_gpu1.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
        on_gpu1.setattr(torch.Tensor, "device", property(lambda self: torch.device("cuda", 1)))
        n = len(calls)
        direct.launch_map(kernel, 1, 32, x, torch.empty_like(x))
        assert calls[n] == "numba"
    direct.forget()
    assert direct._MAPS == {} and direct._LAUNCHES == {}
