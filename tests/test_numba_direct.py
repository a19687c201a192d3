"""Numba kernels launched straight through the driver (backends/numba/direct.py).

The direct launch writes each argument in Numba's kernel ABI itself. That ABI
is Numba's, so the reference is Numba's own packing (``_Kernel._prepare_args``
of the numba-cuda installed), run in a process without the simulator, where
numba-cuda's real dispatcher imports without a GPU. Under the simulator every
call goes through Numba's dispatcher: the variant's answer is checked there
like every variant's; on a GPU the marked test checks the direct launch itself.
gelu-numba, mean-numba and softmax-numba launch through direct.py too: the CPU
tests check that every one of their kernel launches goes through it, and the
marked tests that on a GPU the kept launches give Numba's own answer bit for bit.
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

    import numpy as np
    from numba import typeof
    from kernelscope.backends.numba.direct import arg_codes, flat_words

    kernel = _Kernel.__new__(_Kernel)
    kernel.extensions = []
    out = []
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    f32, i32 = types.Array(types.float32, 1, "C"), types.Array(types.int32, 1, "C")
    # mean's and softmax's launches pass tensors flat (direct.launch(..., flat=True)): Numba packs the 1-D views,
    # direct.py the tensors themselves (x 2-D, y 0-d, a row of a 2-D buffer), and the sizes are np.int64
    mean_args = (Fake(x, 0x7f0000004000), Fake(torch.empty(5), 0x7f0000005000),
                 Fake(torch.zeros(1, dtype=torch.int32), 0x7f0000006000), Fake(torch.empty(()), 0x7f0000007000),
                 np.int64(12))
    stats = torch.empty(2, 6)
    split_args = (Fake(x, 0x7f0000008000), Fake(x, 0x7f0000009000), Fake(stats[0], 0x7f000000a000),
                  Fake(stats[1], 0x7f000000a018), np.int64(4), np.int64(12), np.int64(2**40 + 3))
    scalars = [np.int64(12), 12, -5, 2**40]  # as the launches pass them; a Python int is int64 too
    cases = [
        ((f32, f32), (Fake(x.view(-1), 0x7f0000001000), Fake(x.view(-1), 0x7f0000002000)), False),
        ((types.Array(types.float32, 2, "A"), types.int64, types.float32, types.int32),
         (Fake(x.t(), 0x7f0000003000), -5, 0.1, 7), False),
        ((f32, f32, i32, f32, typeof(mean_args[-1])), mean_args, True),  # mean_one_launch
        ((f32, f32, typeof(mean_args[-1])), (mean_args[1], mean_args[3], mean_args[-1]), True),  # finish_mean
        ((f32, f32, typeof(np.int64(4))), split_args[:2] + split_args[4:5], True),  # softmax_regs, softmax_row
        ((f32, f32, f32, f32) + tuple(typeof(a) for a in split_args[4:]), split_args, True),  # chunk_write
    ]
    for tys, args, flat in cases:
        theirs = []
        for ty, a in zip(tys, args):
            t = a.t.reshape(-1) if flat and isinstance(a, Fake) else getattr(a, "t", None)
            value = Hint(Device(t, a.ptr)) if isinstance(a, Fake) else a
            kernel._prepare_args(ty, value, 0, [], theirs)
        as_words = []
        for w in theirs:  # ints as they are; ctypes scalars as the bytes the driver copies
            if isinstance(w, int):
                as_words.append(w & (2**64 - 1))
            else:
                import ctypes
                raw = ctypes.string_at(ctypes.addressof(w), ctypes.sizeof(w))
                as_words.append(int.from_bytes(raw.ljust(8, b"\\0"), "little"))
        ours = (flat_words if flat else arg_words)(tys, args)
        out.append({"numba": as_words, "ours": ours, "count": word_count(tys)})
    out.append({"scalars": [[str(typeof(v)), arg_codes((typeof(v),))[0]] for v in scalars]})
    print(json.dumps(out))
""")


def test_direct_words_are_numbas_own_packing_of_the_same_arguments():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, "-c", NUMBA_PACKING], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    *cases, scalars = json.loads(proc.stdout.strip().splitlines()[-1])
    for case in cases:
        assert case["ours"] == case["numba"] and len(case["ours"]) == case["count"]
    flat, mixed, mean_one, finish, regs, chunk_write = cases
    assert flat["ours"][:7] == [0, 0, 12, 4, 0x7f0000001000, 12, 4]  # meminfo, parent, nitems, itemsize, data, shape, strides
    assert mixed["ours"][4:9] == [0x7f0000003000, 4, 3, 4, 16]  # x.t(): shape (4, 3), strides (4, 16) bytes
    # mean: x 3x4 as 12 elements; the int32 counter's item size 4; y 0-d as one element; n in the last word
    assert mean_one["ours"][:7] == [0, 0, 12, 4, 0x7f0000004000, 12, 4]
    assert mean_one["ours"][14:21] == [0, 0, 1, 4, 0x7f0000006000, 1, 4] and mean_one["ours"][-1] == 12
    assert finish["ours"][7:14] == [0, 0, 1, 4, 0x7f0000007000, 1, 4]
    assert regs["ours"][-1] == 4 and chunk_write["ours"][-3:] == [4, 12, 2**40 + 3]  # int64: 8 whole bytes
    # the scalar types a launch's key pins (its Python type): np.int64 and a Python int are Numba's int64, packed
    # as struct code "q" on every later call
    assert scalars["scalars"] == [["int64", "q"]] * 4


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


def test_a_fixed_launch_rewrites_only_the_data_pointers_it_is_given(monkeypatch):
    """direct.fixed: the words of its first arguments in a buffer of its own, then per call only the data
    pointers of the varied arguments; the driver sees what the general flat path would give for the new tensors,
    whatever another call of the same kept launch wrote meanwhile."""
    import numpy as np
    from numba import types

    one_d = types.Array(types.float32, 1, "C")
    tys = (one_d, one_d, one_d, types.int64)
    seen = _recording_driver(monkeypatch, tys)
    monkeypatch.setattr(direct.streams, "current_stream_handle", lambda: 0x5150)
    general = direct._Launch("k", 0xC0FFEE, tys, direct.word_count(tys))
    x, partials, y = torch.randn(64), torch.empty(8), torch.empty(64)
    kept = direct._Fixed(general, 8, 256, (x, partials, y, np.int64(64)), 96, vary=(0, 2))
    assert kept.kept == [partials]  # the constant tensor lives as long as the launch; x and y are not held
    for _ in range(2):
        x2, y2 = torch.randn(64), torch.empty(64)
        general(3, 32, (torch.randn(5), torch.empty(1), torch.empty(5), np.int64(5)), flat=True)  # other words
        kept(x2.data_ptr(), y2.data_ptr())
        handle, grid, block, shared, stream, words, _ = seen[-1]
        assert (handle, grid, block, shared, stream) == (0xC0FFEE, (8, 1, 1), (256, 1, 1), 96, 0x5150)
        assert words == direct.flat_words(tys, (x2, partials, y2, np.int64(64)))


def test_fixed_keeps_nothing_without_a_kept_launch_and_forget_drops_what_modules_fixed():
    kernel = object()
    assert direct.fixed(kernel, 1, 32, torch.randn(4), torch.empty(4)) is None  # CPU tensors: nothing kept
    from kernelscope.backends.numba import mean as nmean
    from kernelscope.backends.numba.softmax import launch as slaunch

    nmean._FIXED["probe"] = slaunch._FIXED["probe"] = object()
    direct.forget()
    assert nmean._FIXED == {} and slaunch._FIXED == {}


def _as_if_on_a_gpu(monkeypatch):
    """The simulator's tensors taken for a GPU's: Numba's launch of each kernel still runs it (the simulator), each
    launch is then kept, and what would reach the driver is recorded instead: ("keyed", kernel) for a kept
    launch's call, ("fixed", kernel) for a fixed launch's."""
    from numba import typeof

    drove = []

    class Kept(direct._Launch):
        def __call__(self, *args, **keywords):
            drove.append(("keyed", self.name))

    monkeypatch.setattr(direct, "as_array", lambda t: t.numpy())
    monkeypatch.setattr(direct, "stream", lambda: 0)
    monkeypatch.setattr(direct, "_compiled", lambda kernel, wrapped: Kept(
        kernel.py_func.__name__, 1, tuple(typeof(a) for a in wrapped), 64))
    monkeypatch.setattr(direct._Launch, "_launch", lambda self, *dims: drove.append(("fixed", self.name)))
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    direct.forget()
    return drove


def test_softmax_and_mean_take_their_fixed_launch_for_a_shape_they_have_seen(monkeypatch):
    """The first call of a shape launches as before and fixes that launch; the next call of the shape, with new
    tensors, writes their pointers into it; another shape, or data off 16-byte alignment (another kernel), is
    launched the general way first and fixed in turn."""
    from kernelscope.backends.numba import mean as nmean
    from kernelscope.backends.numba.softmax import launch as slaunch

    drove = _as_if_on_a_gpu(monkeypatch)
    x = torch.randn(3, 128)  # 32 threads x 4: the 16-byte kernel
    assert torch.allclose(slaunch.softmax(x), torch.softmax(x.double(), -1).float(), rtol=1e-5, atol=1e-7)
    assert drove == [] and len(slaunch._FIXED) == 1  # Numba ran it; kept and fixed
    y = torch.empty_like(x)
    assert slaunch.softmax(x.clone(), y) is y and drove == [("fixed", "softmax_regs_vector")]
    slaunch.softmax(torch.randn(5, 128))  # the kernel's kept launch, then fixed for this shape
    slaunch.softmax(torch.randn(5, 128))
    assert drove[1:] == [("keyed", "softmax_regs_vector"), ("fixed", "softmax_regs_vector")]
    unaligned = torch.randn(3 * 128 + 1)[1:].view(3, 128)  # 4 bytes past 16-byte alignment: the 4-byte kernel
    slaunch.softmax(unaligned)  # through Numba: a kernel not launched before
    slaunch.softmax(unaligned)
    assert drove[3:] == [("fixed", "softmax_regs")] and len(slaunch._FIXED) == 3
    drove.clear()
    v = torch.randn(700)
    assert torch.allclose(nmean.mean(v), v.double().mean().float())
    nmean.mean(torch.randn(700), torch.empty(()))
    assert drove == [("fixed", "mean_one_launch")] and len(nmean._FIXED) == 1
    nmean.mean(torch.randn(350))  # another n: the kernel's kept launch, then fixed for this n
    assert drove[1:] == [("keyed", "mean_one_launch")] and len(nmean._FIXED) == 2
    direct.forget()


# --- gelu-numba, mean-numba and softmax-numba: every launch through direct.py ----------------------------------

def _routed(monkeypatch):
    """direct.launch and direct.launch_map recorded (and still called), and each simulated kernel launch with
    whether a direct.py entry was under way: [(what, kernel name, inside a direct call)]."""
    from numba.cuda.simulator.kernel import FakeCUDAKernel

    seen, depth = [], [0]

    def recorded(kind, real):
        def call(kernel, *args, **keywords):
            seen.append((kind, kernel.__name__, args, keywords))
            depth[0] += 1
            try:
                return real(kernel, *args, **keywords)
            finally:
                depth[0] -= 1
        return call

    monkeypatch.setattr(direct, "launch", recorded("launch", direct.launch))
    monkeypatch.setattr(direct, "launch_map", recorded("map", direct.launch_map))
    run = FakeCUDAKernel.__call__

    def kernel_call(self, *args):
        if not self._device:  # a launch, not a device function
            seen.append(("kernel", self.fn.__name__, (), {"inside": depth[0] > 0}))
        return run(self, *args)

    monkeypatch.setattr(FakeCUDAKernel, "__call__", kernel_call)
    return seen


def _launched(seen):
    """(kernel, inside a direct call) of each simulated kernel launch."""
    return [(name, keywords["inside"]) for kind, name, _, keywords in seen if kind == "kernel"]


def test_gelu_goes_through_the_direct_map_with_the_default_form_and_launch_shape(monkeypatch):
    from kernelscope.backends.numba.gelu import gelu, launch_gelu

    seen = _routed(monkeypatch)
    x = torch.randn(5, 77)
    out = gelu(x)
    assert [(kind, name) for kind, name, *_ in seen if kind != "kernel"][:1] == [("map", "gelu_fast_tiled")]
    assert _launched(seen) == [("gelu_fast_tiled", True)]
    blocks, threads = seen[0][2][:2]
    assert (blocks, threads) == (-(-x.numel() // (32 * 2)), 32)  # the simulator's tile: 32 threads x 2
    seen.clear()
    assert torch.equal(out, launch_gelu(x))  # Numba's dispatcher, the same kernel
    assert not [kind for kind, *_ in seen if kind != "kernel"]


@pytest.mark.parametrize("one_launch", [True, False])
def test_every_mean_launch_goes_through_direct_launch_flat_with_n_an_int64(monkeypatch, one_launch):
    import numpy as np

    from kernelscope.backends.numba import mean as nmean

    monkeypatch.setattr(nmean, "ONE_LAUNCH", one_launch)
    seen = _routed(monkeypatch)
    x = torch.randn(700)
    nmean.default_launch.cache_clear()
    for _ in range(2):
        out = nmean.mean(x)
    info = nmean.default_launch.cache_info()
    assert (info.misses, info.hits) == (1, 1)  # the launch shape worked out once
    names = ["mean_one_launch"] if one_launch else ["partial_sums", "finish_mean"]
    assert _launched(seen) == [(name, True) for name in names] * 2
    calls = [(name, args, keywords) for kind, name, args, keywords in seen if kind == "launch"]
    assert [name for name, *_ in calls] == names * 2
    for name, args, keywords in calls:
        assert keywords == {"flat": True}
        scalars = [a for a in args[2:] if not isinstance(a, torch.Tensor)]
        assert all(type(a) is np.int64 and a == x.numel() for a in scalars) and len(scalars) == (name != "partial_sums")
    assert torch.allclose(out, x.double().mean().float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape, plan, names", [
    ((3, 40), None, ["softmax_regs"]),  # the default plan under the simulator: 2 elements a thread
    ((2, 20), dict(path="row", threads=32, unroll=2), ["softmax_row"]),
    ((3, 30), dict(path="split", threads=32, unroll=2, chunk=12, group_rows=2), ["chunk_stats", "chunk_write"] * 2),
])
def test_every_softmax_launch_goes_through_direct_launch_flat(monkeypatch, shape, plan, names):
    """Each plan's launches, the split plan's two a row group included: the regs plan is the default at the
    simulator's check shapes; the row and split plans stand in for it (the GPU's default past 16384 columns)."""
    import numpy as np

    from kernelscope.backends.numba.softmax import Plan, launch

    if plan is not None:
        monkeypatch.setattr(launch, "default_plan", lambda rows, cols, device: Plan(**plan))
    seen = _routed(monkeypatch)
    x = torch.randn(shape)
    out = launch.softmax(x)
    assert _launched(seen) == [(name, True) for name in names]
    calls = [(args, keywords) for kind, _, args, keywords in seen if kind == "launch"]
    assert len(calls) == len(names)
    for args, keywords in calls:
        shared = shape[1] * 4 if names == ["softmax_row"] else 0
        assert keywords in ({"flat": True, "shared": shared}, {"flat": True} if shared == 0 else None)
        assert all(type(a) is np.int64 for a in args[2:] if not isinstance(a, torch.Tensor))
    if plan and plan["path"] == "split":  # row0 of each group
        assert [int(args[-1]) for args, _ in calls] == [0, 0, 2, 2]
    assert torch.allclose(out, torch.softmax(x.double(), -1).float(), rtol=1e-5, atol=1e-7)


def test_softmax_keeps_its_default_plan_per_shape_and_device():
    from kernelscope.backends.numba.softmax import default_plan, plan_softmax, softmax

    x = torch.randn(4, 24)
    default_plan.cache_clear()
    softmax(x)
    softmax(x)
    info = default_plan.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    assert default_plan(4, 24, x.device) == plan_softmax(4, 24, x.device)


def test_a_direct_launch_hands_the_driver_its_dynamic_shared_memory(monkeypatch):
    from numba import types

    one_d = types.Array(types.float32, 1, "C")
    tys = (one_d, one_d, types.int64)
    seen = _recording_driver(monkeypatch, tys)
    monkeypatch.setattr(direct.streams, "current_stream_handle", lambda: 0x5150)
    kept = direct._Launch("softmax_row", 0xC0FFEE, tys, direct.word_count(tys))
    x, y = torch.randn(3, 20), torch.empty(3, 20)
    kept(3, 64, (x, y, 20), flat=True, shared=80)
    assert seen[-1][:5] == (0xC0FFEE, (3, 1, 1), (64, 1, 1), 80, 0x5150)
    kept(3, 64, (x, y, 20), flat=True)
    assert seen[-1][3] == 0


def _driver_launches(monkeypatch):
    """The handles of the kernels the driver launches, libcuda's cuLaunchKernel still called."""
    launched = []
    real = direct._cu_launch_kernel()
    monkeypatch.setattr(direct, "_cu_launch_kernel", lambda: lambda handle, *a: launched.append(handle) or
                        real(handle, *a))
    return launched


@pytest.mark.gpu
@pytest.mark.parametrize("variant, shape", [("gelu", (1000, 1000)), ("mean", (2**20 + 3,)), ("mean", (1000,)),
                                            ("softmax", (256, 1000)), ("softmax", (512, 20000)),
                                            ("softmax", (40, 70000))])
def test_gpu_default_path_matches_numbas_own_launches_bit_for_bit(monkeypatch, variant, shape):
    """The first call after forget() goes through Numba's dispatcher; the next, on a fresh input of the same
    types, through the kept launches only (none added, each launch a driver call); both match Numba's own launch
    of the same input bit for bit, in a captured graph too. softmax: the regs plan, the row plan (80 KB of dynamic
    shared memory, opted in) and the split plan."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelscope.backends.numba.gelu import gelu, launch_gelu
    from kernelscope.backends.numba.mean import mean
    from kernelscope.backends.numba.softmax import default_plan, softmax

    fn = {"gelu": gelu, "mean": mean, "softmax": softmax}[variant]
    launches = 1
    if variant == "softmax":
        plan = default_plan(*shape, torch.device("cuda", torch.cuda.current_device()))
        assert plan.path == {1000: "regs", 20000: "row", 70000: "split"}[shape[1]]
        launches = 2 * -(-shape[0] // plan.group_rows) if plan.path == "split" else 1
    x1, x2 = torch.randn(shape, device="cuda"), torch.randn(shape, device="cuda")
    direct.forget()
    fn(x1)
    kept = dict(direct._LAUNCHES)  # one a kernel and set of argument types
    assert kept
    driver = _driver_launches(monkeypatch)
    second = fn(x2)
    torch.cuda.synchronize()
    assert direct._LAUNCHES == kept and len(driver) == launches
    assert set(driver) <= {launch.handle for launch in kept.values()}
    if variant == "gelu":
        assert list(direct._MAPS.values()) == list(kept.values())  # and kept as a map
    direct.forget()
    monkeypatch.undo()
    assert torch.equal(second, fn(x2))  # Numba's own launch of the same kernels
    if variant == "gelu":
        assert torch.equal(second, launch_gelu(x2))
    out = torch.empty_like(second)
    fn(x1, out)  # kept again
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(x2, out)
    x2.copy_(x1)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, fn(x1))
