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


def test_a_fixed_launch_takes_the_kept_kernel_with_the_calls_tensors_in_their_places(stand_in):
    stand_in.arg_names = ["x_ptr", "partials_ptr", "y_ptr", "n", "BLOCK_SIZE"]
    x, partials, y = torch.randn(64), torch.empty(8), torch.empty(())
    assert direct.fixed(stand_in, (4,), x, partials, y, 64, vary=(0, 2), BLOCK_SIZE=16) is None  # nothing kept yet
    direct.launch(stand_in, (4,), x, partials, y, 64, BLOCK_SIZE=16)
    fixed = direct.fixed(stand_in, (4,), x, partials, y, 64, vary=(0, 2), BLOCK_SIZE=16)
    x2, y2 = torch.randn(64), torch.empty(())
    assert fixed(x2, y2) is True and fixed(x, y) is True
    # the launcher's call as launch() makes it, each call's own tensors in places 0 and 2, partials fixed
    assert stand_in.runs == [(4, 1, 1, 0x5150, "fn", "meta", None, None, None, x2, partials, y2, 64, 16),
                             (4, 1, 1, 0x5150, "fn", "meta", None, None, None, x, partials, y, 64, 16)]
    # no call's tensors are kept alive, the first's included (a kept input past 2^31 elements is 8 GiB); partials is
    assert fixed.args[0] is None and fixed.args[2] is None and fixed.args[1] is partials
    assert len(stand_in.standard) == 1


def test_a_fixed_launch_launches_nothing_while_a_hook_is_set(stand_in, monkeypatch):
    x, y = torch.randn(64), torch.empty(64)
    direct.launch(stand_in, (4,), x, y, 64, BLOCK_SIZE=16)
    fixed = direct.fixed(stand_in, (4,), x, y, 64, BLOCK_SIZE=16)
    monkeypatch.setattr(direct, "_hooks", lambda: (None, lambda *a: None))  # a profiler set a hook since
    assert fixed(x, y) is False and stand_in.runs == []  # the caller takes the standard path, which runs the hook


def test_forget_drops_the_fixed_launches_other_modules_keep(stand_in, monkeypatch):
    kept = {"key": "a fixed launch"}
    monkeypatch.setattr(direct, "_FORGET_ALSO", [kept])
    direct.forget()
    assert kept == {}


class FixedRecorder:
    """direct.fixed's stand-in: records the launch it would fix, and each call it gets."""

    def __init__(self):
        self.made, self.calls = [], []

    def fixed(self, kernel, grid, *args, vary=(0, 1), **keywords):
        self.made.append((kernel.__name__, grid, args, vary, keywords))

        def call(*tensors):
            self.calls.append(tensors)
            return True
        return call


@pytest.fixture
def recorder(monkeypatch):
    from kernelscope.backends.triton import gelu as tgelu
    from kernelscope.backends.triton import mean as tmean
    from kernelscope.backends.triton.softmax import launch as tlaunch

    direct.forget()
    recorder = FixedRecorder()
    monkeypatch.setattr(direct, "fixed", recorder.fixed)
    yield recorder, tlaunch, tmean
    direct.forget()
    assert tlaunch._FIXED == {} and tmean._FIXED == {} and tgelu._FIXED == {}


def test_tuned_softmax_fixes_its_one_launch_and_reuses_it_for_the_same_shape_and_alignment(recorder):
    recorder, tlaunch, _ = recorder
    x = torch.randn(13, 100)
    first = tlaunch.softmax_tuned(x)
    assert torch.allclose(first, torch.softmax(x, dim=1), atol=1e-6)
    plan = tlaunch.default_plan(13, 100, 4, x.device)
    ((kernel, grid, args, keywords, vary),) = tlaunch._launches(x, first, plan, False, None)
    assert recorder.made == [(kernel.__name__, grid, args, vary, keywords)]  # the launch the first call made
    x2 = torch.randn(13, 100)
    y2 = tlaunch.softmax_tuned(x2)
    assert len(recorder.calls) == 1 and recorder.calls[0][0] is x2 and recorder.calls[0][1] is y2
    for other in (torch.randn(13, 101), torch.randn(13, 100, dtype=torch.float64), torch.randn(13, 101)[:, :100],
                  torch.randn(1401)[1:].view(14, 100)[:13]):  # another shape, dtype, row stride, alignment
        assert torch.allclose(tlaunch.softmax_tuned(other), torch.softmax(other, dim=1), atol=1e-6)
    assert len(recorder.calls) == 1 and len(recorder.made) == 5
    out = torch.empty(13, 100, dtype=torch.float64)  # an out of another dtype: the standard path, never fixed
    tlaunch.softmax_tuned(x, out)
    assert len(recorder.calls) == 1 and len(recorder.made) == 5


def test_tuned_softmax_fixes_the_split_plans_launches_with_their_statistics_and_never_the_pipe_plans(recorder,
                                                                                                      monkeypatch):
    from test_triton_kernels import PATHS

    from kernelscope.backends.triton.softmax.plan import softmax_plan

    recorder, tlaunch, _ = recorder
    shape, kwargs, _ = PATHS["split"]  # 3 rows in groups of 2: two groups, two passes each
    monkeypatch.setattr(tlaunch, "default_plan", lambda rows, cols, itemsize, device: softmax_plan(rows, cols,
                                                                                                  itemsize, **kwargs))
    x = torch.randn(shape)
    assert torch.allclose(tlaunch.softmax_tuned(x), torch.softmax(x, dim=1), atol=1e-6)
    names = [(name, vary) for name, _, _, vary, _ in recorder.made]
    assert names == [("softmax_chunk_stats_kernel", (0,)), ("softmax_chunk_write_kernel", (0, 1))] * 2
    # (chunk_max, chunk_sum, first row): the stats pass's arguments 1-3, the write pass's 2-4
    pairs = [args[1:4] if name == "softmax_chunk_stats_kernel" else args[2:5] for name, _, args, _, _ in recorder.made]
    assert len({t.untyped_storage().data_ptr() for m, s, _ in pairs for t in (m, s)}) == 1  # one buffer kept
    assert [row0 for _, _, row0 in pairs] == [0, 0, 2, 2]
    x2 = torch.randn(shape)
    y2 = tlaunch.softmax_tuned(x2)
    assert recorder.calls == [(x2, y2)] * 4
    shape, kwargs, _ = PATHS["pipe"]
    recorder.made.clear()
    x = torch.randn(shape)
    for _ in range(2):
        assert torch.allclose(tlaunch.softmax_tuned(x), torch.softmax(x, dim=1), atol=1e-6)
    assert recorder.made == []


def test_tuned_mean_fixes_its_launch_with_the_devices_partials(recorder):
    recorder, _, tmean = recorder
    x = torch.randn(1000)
    assert torch.allclose(tmean.mean_tuned(x), x.mean(), atol=1e-6)
    programs, steps, keywords = tmean._tuned_launch(1000, x.device)
    ((name, grid, args, vary, made_keywords),) = recorder.made
    assert (name, grid, vary, made_keywords) == ("mean_one_pass_kernel", (programs,), (0, 3), keywords)
    assert args[1] is tmean.partials(programs, x.device) and args[2] is tmean.arrival_counter(x.device)
    assert args[4:] == (1000, steps)
    x2 = torch.randn(1000)
    y2 = tmean.mean_tuned(x2)
    assert recorder.calls == [(x2, y2)]
    for other in (torch.randn(1001), torch.randn(1000, dtype=torch.float64), torch.randn(1001)[1:]):
        assert torch.allclose(tmean.mean_tuned(other), other.mean(), atol=1e-6)
    assert len(recorder.calls) == 1 and len(recorder.made) == 4


def test_gelu_fixes_its_launch_per_size_dtype_and_alignment(recorder):
    from kernelscope.backends.triton.gelu import BLOCK_SIZE, gelu

    recorder = recorder[0]
    x = torch.randn(37, 29)
    reference = torch.nn.functional.gelu(x, approximate="tanh")
    assert torch.allclose(gelu(x), reference, atol=1e-6)
    assert recorder.made == [("gelu_kernel", (2,), (x, recorder.made[0][2][1], 37 * 29), (0, 1),
                              dict(BLOCK_SIZE=BLOCK_SIZE, WIDE=False))]
    x2 = torch.randn(37, 29)
    y2 = gelu(x2)
    assert recorder.calls == [(x2, y2)]
    for other in (torch.randn(29, 37), torch.randn(37 * 29 + 1)[1:]):  # the same n, dtype: fixed; misaligned: not
        gelu(other)
    assert len(recorder.calls) == 2 and len(recorder.made) == 2
    assert torch.allclose(gelu(x, torch.empty(37, 29, dtype=torch.float64)), reference.double(), atol=1e-6)
    assert len(recorder.calls) == 2 and len(recorder.made) == 2  # an out of another dtype: never fixed


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


@pytest.mark.gpu
def test_gpu_tuned_gelu_softmax_and_mean_give_the_same_bits_through_their_fixed_launch():
    """gelu-triton, softmax-triton-tuned and mean-triton-tuned: the first call through ``kernel[grid]`` fixes the
    launch, later ones take it, on new inputs the same bits as the standard path; a fixed launch made during graph
    capture is captured."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kernelscope.backends.triton import gelu as tgelu
    from kernelscope.backends.triton import mean as tmean
    from kernelscope.backends.triton.softmax import launch as tlaunch

    cases = [(tgelu.gelu, (64, 64)), (tgelu.gelu, (4096, 4096)), (tlaunch.softmax_tuned, (64, 64)),
             (tlaunch.softmax_tuned, (64, 262144)),  # the split plan: two launches and their statistics, fixed
             (tlaunch.softmax_tuned, (512, 50257)), (tlaunch.softmax_tuned, (4096, 4096)),
             (tmean.mean_tuned, (4096,)), (tmean.mean_tuned, (1 << 24,))]
    for fn, shape in cases:
        direct.forget()
        x = torch.randn(shape, device="cuda")
        standard = fn(x).clone()
        fn(x)
        assert len(tlaunch._FIXED) + len(tmean._FIXED) + len(tgelu._FIXED) == 1, (fn.__name__, shape)
        x2 = torch.randn(shape, device="cuda")
        through_fixed = fn(x2).clone()
        direct.forget()
        assert torch.equal(fn(x), standard) and torch.equal(through_fixed, fn(x2)), (fn.__name__, shape)
    for fn, shape in cases[0], cases[2], cases[3], cases[6]:
        x = torch.randn(shape, device="cuda")
        out = fn(x).clone()
        fn(x, out)  # the fixed launch is kept for this out's alignment
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn(x, out)
        x.copy_(torch.randn(shape, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        direct.forget()
        assert torch.equal(out, fn(x)), (fn.__name__, shape)
