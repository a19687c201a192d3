"""Triton kernels launched through their compiled kernel (backends/triton/direct.py).

Under the interpreter ``kernel[grid]`` returns no compiled kernel, so every call
takes the standard path, and the variant's answer is checked like every
variant's. The choice between the paths, and the call into the compiled
kernel's launcher, are tested here with a stand-in kernel; on a GPU the marked
test checks the real launch.
"""

from types import SimpleNamespace

import pytest
import torch
from direct_launch import check_direct_square

from kernelscope import backends

backends.configure_interpreters()

from kernelscope.backends.triton import direct  # noqa: E402


class StandIn:
    """A JITFunction as direct.launch uses it: ``kernel[grid](...)`` returns a compiled kernel whose ``run``
    records its arguments."""

    arg_names = ["x_ptr", "y_ptr", "n", "BLOCK_SIZE"]

    def __init__(self):
        self.standard, self.runs = [], []

    def __getitem__(self, grid):
        def call(*args, **keywords):
            self.standard.append((grid, args, keywords))
            return SimpleNamespace(function="fn", packed_metadata="meta",
                                   run=lambda *a: self.runs.append(a))
        return call


@pytest.fixture
def stand_in(monkeypatch):
    direct.forget()
    monkeypatch.setattr(direct, "_hooks", lambda: (None, None))  # Triton before its hook chains
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: SimpleNamespace(cuda_stream=0x5150))
    yield StandIn()
    direct.forget()


def test_the_second_call_with_the_same_specialization_calls_the_compiled_kernels_launcher(stand_in):
    x, y = torch.randn(64), torch.empty(64)
    direct.launch(stand_in, (4,), x, y, 64, BLOCK_SIZE=16)
    assert len(stand_in.standard) == 1 and stand_in.runs == []
    direct.launch(stand_in, (4,), x, y, 64, BLOCK_SIZE=16)
    assert len(stand_in.standard) == 1
    # as JITFunction.run ends: grid x, y, z, stream, function, packed metadata, launch metadata, hooks, every argument
    assert stand_in.runs == [(4, 1, 1, 0x5150, "fn", "meta", None, None, None, x, y, 64, 16)]


@pytest.mark.parametrize("change", [
    lambda x, y, n: ((x, y, n + 1), {"BLOCK_SIZE": 16}),  # n no longer divisible by 16: Triton specializes on it
    lambda x, y, n: ((x, y, 1), {"BLOCK_SIZE": 16}),  # n == 1
    lambda x, y, n: ((x[1:], y, n), {"BLOCK_SIZE": 16}),  # a pointer off 16-byte alignment
    lambda x, y, n: ((x.double(), y, n), {"BLOCK_SIZE": 16}),  # another dtype
    lambda x, y, n: ((x, y, n), {"BLOCK_SIZE": 32}),  # another constexpr
    lambda x, y, n: ((x, y, n), {"BLOCK_SIZE": 16, "num_warps": 8}),  # another launch option
    lambda x, y, n: ((x.to("meta"), y, n), {"BLOCK_SIZE": 16}),  # another device
])
def test_another_specialization_goes_through_triton_again(stand_in, change):
    x, y = torch.randn(64), torch.empty(64)
    direct.launch(stand_in, (4,), x, y, 64, BLOCK_SIZE=16)
    args, keywords = change(x, y, 64)
    direct.launch(stand_in, (4,), *args, **keywords)
    assert len(stand_in.standard) == 2 and stand_in.runs == []


def test_a_launch_hook_keeps_the_standard_path(stand_in, monkeypatch):
    x, y = torch.randn(64), torch.empty(64)
    for hook in (lambda *a: None, SimpleNamespace(calls=[print])):  # a profiler's hook, alone or in a chain
        direct.forget()
        monkeypatch.setattr(direct, "_hooks", lambda: (hook, None))
        for _ in range(3):
            direct.launch(stand_in, (4,), x, y, 64, BLOCK_SIZE=16)
        assert direct._KEPT == {} and stand_in.runs == []
    assert len(stand_in.standard) == 6


def test_empty_hook_chains_keep_the_direct_path_and_are_not_called(stand_in, monkeypatch):
    enter, leave = SimpleNamespace(calls=[]), SimpleNamespace(calls=[])  # newer Triton: empty chains by default
    monkeypatch.setattr(direct, "_hooks", lambda: (enter, leave))
    x, y = torch.randn(64), torch.empty(64)
    direct.launch(stand_in, (4,), x, y, 64, BLOCK_SIZE=16)
    direct.launch(stand_in, (4,), x, y, 64, BLOCK_SIZE=16)
    # the launcher would call each chain (two Python calls a launch) to run nothing: it gets None instead
    assert len(stand_in.standard) == 1 and stand_in.runs[0][7:9] == (None, None)


def test_the_hooks_are_read_from_tritons_runtime_knobs_on_every_call(monkeypatch):
    runtime = SimpleNamespace(launch_enter_hook=None, launch_exit_hook=None)
    monkeypatch.setattr(direct, "_RUNTIME", runtime)
    assert direct._hooks() == (None, None)
    runtime.launch_enter_hook = print  # set after import, as a profiler sets it
    assert direct._hooks() == (print, None)


def test_on_the_cpu_path_every_call_goes_through_the_interpreter():
    from kernelscope.backends.triton.square import square_flat, square_flat_direct

    direct.forget()
    x = torch.randn(32, 32)
    assert torch.equal(square_flat_direct(x), square_flat(x)) and direct._KEPT == {}


@pytest.mark.gpu
def test_gpu_direct_launch_matches_tritons_own_and_is_captured_in_a_graph():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelscope.backends.triton.square import square_flat, square_flat_direct

    direct.forget()
    check_direct_square(square_flat, square_flat_direct, [(64, 64), (1000, 1000), (4096, 4096), (33, 7)])
    assert len(direct._KEPT) == 2  # numel divisible by 16 or not: two specializations


# --- the tuned variants: every launch of a call through direct.launch ---------------------------------------------

def _launches_through_direct(monkeypatch, call) -> tuple[list[str], list[str]]:
    """(kernels ``call`` launched through direct.launch, kernels it launched as ``kernel[grid]`` outside it)."""
    from kernelscope.backends.triton.gelu import gelu_kernel

    inside, through, stray = [False], [], []
    cls = type(gelu_kernel)  # JITFunction, or the interpreter's stand-in for it
    getitem, launch = cls.__getitem__, direct.launch

    def watched_getitem(self, grid):
        if not inside[0]:
            stray.append(self.__name__)
        return getitem(self, grid)

    def watched_launch(kernel, grid, *args, **keywords):
        inside[0] = True
        try:
            through.append(kernel.__name__)
            return launch(kernel, grid, *args, **keywords)
        finally:
            inside[0] = False

    monkeypatch.setattr(cls, "__getitem__", watched_getitem)
    monkeypatch.setattr(direct, "launch", watched_launch)
    call()
    return through, stray


def test_tuned_gelu_and_mean_launch_through_direct_launch(monkeypatch):
    from kernelscope.backends.triton.gelu import gelu
    from kernelscope.backends.triton.mean import mean_tuned

    x = torch.randn(37, 29)
    assert _launches_through_direct(monkeypatch, lambda: gelu(x)) == (["gelu_kernel"], [])
    assert _launches_through_direct(monkeypatch, lambda: mean_tuned(x)) == (["mean_one_pass_kernel"], [])


SOFTMAX_KERNELS = {"narrow": {"softmax_rows_tuned_kernel"}, "row": {"softmax_rows_tuned_kernel"},
                   "split": {"softmax_chunk_stats_kernel", "softmax_chunk_write_kernel"},
                   "pipe": {"softmax_pipe_kernel"}, "persist": {"softmax_persistent_kernel"},
                   "tiles": {"softmax_tiles_kernel"}}


@pytest.mark.parametrize("path", ["narrow", "row", "split", "pipe", "persist", "tiles"])
def test_every_softmax_plan_launches_through_direct_launch(monkeypatch, path):
    from test_triton_kernels import PATHS

    from kernelscope.backends.triton import softmax as tsoftmax
    from kernelscope.backends.triton.softmax.plan import softmax_plan

    shape, kwargs, strategy = PATHS[path]
    plan = softmax_plan(*shape, 4, **kwargs)
    x = torch.randn(shape)
    through, stray = _launches_through_direct(monkeypatch, lambda: tsoftmax.softmax_planned(x, torch.empty_like(x),
                                                                                           plan))
    assert (plan.strategy, set(through), stray) == (strategy, SOFTMAX_KERNELS[strategy], [])


@pytest.mark.gpu
def test_gpu_tuned_kernels_give_the_same_bits_through_the_kept_kernel():
    """Each tuned gelu, mean and softmax plan: its first call through ``kernel[grid]``, its second through the kept
    compiled kernel, the same bits; then a launch during graph capture is captured."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from test_triton_kernels import PATHS

    from kernelscope.backends.triton import softmax as tsoftmax
    from kernelscope.backends.triton.gelu import gelu
    from kernelscope.backends.triton.mean import mean_tuned
    from kernelscope.backends.triton.softmax.plan import softmax_plan

    direct.forget()
    calls = [(gelu, torch.randn(4096, 4096, device="cuda")), (mean_tuned, torch.randn(1 << 24, device="cuda")),
             (mean_tuned, torch.randn(1000, device="cuda"))]
    for path, (shape, kwargs, _) in PATHS.items():
        plan = softmax_plan(*shape, 4, **kwargs)
        calls.append((lambda x, out=None, plan=plan: tsoftmax.softmax_planned(x, torch.empty_like(x) if out is None
                                                                              else out, plan),
                      torch.randn(shape, device="cuda")))
    for fn, x in calls:
        direct.forget()
        first = fn(x).clone()
        assert direct._KEPT  # the first call kept its kernels
        assert torch.equal(fn(x), first)
    fn, x = calls[0]
    out = torch.empty_like(x)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(x, out)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, gelu(x))
