"""The asv suite is generated from the catalog, and its cases are gated on correctness."""

import dataclasses
import sys

import pytest
import torch

from kernelscope import catalog, modes, timing
from kernelscope.catalog import OPS, VARIANTS, Variant
from kernelscope.ops import shape_str
from kernelscope.asv import suite as asv_suite
from kernelscope.results.machine import host_id
from kernelscope.timing import cases, processes


def test_one_class_per_op_with_every_variant_size_and_dtype():
    classes = asv_suite.build()
    assert {"FirstCall", "Launch"} | {name.capitalize() for name in OPS} <= set(classes)
    for name, op in OPS.items():
        cls = classes[name.capitalize()]
        variants, sizes, dtypes = cls.params
        assert variants == [v.name for v in catalog.variants_of(name)]
        assert sizes == [shape_str(s) for s in op.bench_shapes]
        assert dtypes == ["float32"]
        assert cls.param_names == ["variant", "size", "dtype"]
        # Pinned: refactors keep history. Graph mode moved on alone (one output alive).
        assert cls.time_warm.version == cls.track_cold.version == modes.WARM.version == modes.COLD.version == "3"
        assert cls.track_graph.version == modes.GRAPH.version == "8"
    assert classes["FirstCall"].params == [list(VARIANTS), [host_id()]]
    assert classes["FirstCall"].param_names == ["variant", "host"]
    # The first call alone moved on: each framework's one-time start happens in the forkserver.
    assert classes["FirstCall"].time_first_call.version == modes.FIRST_CALL.version == "4"


def test_other_dtypes_get_classes_of_their_own_over_the_variants_that_ask():
    classes = asv_suite.build()
    for name in OPS:
        asked = [v.name for v in catalog.variants_of(name) if "bfloat16" in v.bench_dtypes]
        cls = classes.get(name.capitalize() + "Bfloat16")
        if not asked:
            assert cls is None
            continue
        assert cls.params[0] == asked and cls.params[2] == ["bfloat16"]
        assert hasattr(cls, "time_warm") and hasattr(cls, "track_graph")
        assert not hasattr(cls, "track_cold")  # warm and graph only: each parameter set costs a process
    assert classes["SoftmaxBfloat16"].params[0]  # the catalog times some softmax in bfloat16


def test_adding_a_bench_dtype_to_a_variant_leaves_the_float32_class_as_it_was(monkeypatch):
    before = asv_suite.build()["Mean"].params
    v = catalog.VARIANTS["mean-torch"]
    monkeypatch.setitem(catalog.VARIANTS, v.name, dataclasses.replace(v, bench_dtypes=("float32", "float16")))
    classes = asv_suite.build()
    assert classes["Mean"].params == before
    assert classes["MeanFloat16"].params[0] == ["mean-torch"]


def test_sizes_sweep_launch_bound_to_bandwidth_bound():
    for op in OPS.values():
        numels = [torch.Size(s).numel() for s in op.bench_shapes]
        assert min(numels) <= 2**12 and max(numels) >= 2**28
    widths = [s[-1] for s in OPS["softmax"].bench_shapes]
    assert any(w & (w - 1) for w in widths), "softmax sweeps widths that are not powers of two"
    assert max(widths) > VARIANTS["softmax-triton-row"].max_cols


@pytest.mark.parametrize("args,reason", [
    (("square", "square-nope", "64x64", "float32"), "not in this commit's catalog"),
    (("mean", "square-torch", "64x64", "float32"), "a variant of square, not mean"),
    (("square", "square-cuda-vec4", "64x64", "float16"), "dtype float16 not supported"),
    (("softmax", "softmax-triton-row", "64x262144", "float32"), "do not fit one block"),
])
def test_cases_that_cannot_run_are_skips_with_a_reason(args, reason):
    with pytest.raises(NotImplementedError, match=reason):
        cases.prepare(*args)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU path's limits")
def test_cpu_path_times_small_sizes_only():
    with pytest.raises(NotImplementedError, match="the CPU path times sizes up to"):
        cases.prepare("square", "square-torch", "1024x1024", "float32")
    with pytest.raises(NotImplementedError, match="needs a CUDA GPU"):
        cases.prepare("square", "square-cuda-vec4", "64x64", "float32")


def test_a_prepared_case_is_checked_and_timeable():
    case = cases.prepare("softmax", "softmax-triton-online", "64x64", "float32")
    assert case.rel_err <= OPS["softmax"].tolerance["float32"]
    assert case.bytes == 2 * 4 * 64 * 64
    plan = timing.plan_warm(case.call, case.device)
    assert plan.number >= 1 and plan.per_call_s > 0
    samples = timing.time_cold(case.call, case.device, samples=8, max_time=1.0)
    assert len(samples) >= timing.MIN_SAMPLES and all(s > 0 for s in samples)


def test_the_gate_refuses_to_time_a_wrong_kernel(monkeypatch):
    broken = Variant("square-broken", "square", "torch", "wrong on purpose",
                     "kernelscope.backends.torch_ops:square_pow")
    monkeypatch.setitem(catalog.VARIANTS, broken.name, broken)
    monkeypatch.setitem(cases.VARIANTS, broken.name, broken)
    monkeypatch.setattr("kernelscope.backends.torch_ops.square_pow", lambda x: x * x + 1e-2)
    catalog._IMPL_CACHE.pop(broken.impl, None)
    with pytest.raises(RuntimeError, match="square-broken: output does not match the float64 reference"):
        cases.prepare("square", "square-broken", "64x64", "float32")
    catalog._IMPL_CACHE.pop(broken.impl, None)


def test_setup_sets_the_number_of_back_to_back_calls_per_sample():
    bench = asv_suite.build()["Gelu"]()
    bench.setup("gelu-torch", "64x64", "float32")
    assert bench.number > 1  # a sample spans many calls, not one launch gap
    bench.time_warm("gelu-torch", "64x64", "float32")
    result = bench.track_cold("gelu-torch", "64x64", "float32")
    assert result["number"] == 1 and len(result["samples"]) >= timing.MIN_SAMPLES


def test_slowdown_canary_keeps_the_answer(monkeypatch):
    monkeypatch.setenv(catalog.INJECT_SLOWDOWN, "square-mul")
    calls = []
    monkeypatch.setitem(catalog._IMPL_CACHE, VARIANTS["square-mul"].impl, lambda x: calls.append(1) or x * x)
    x = torch.randn(3, 3)
    assert torch.equal(VARIANTS["square-mul"](x), x * x) and len(calls) == 2


def test_a_launch_bound_case_is_one_value_per_process(monkeypatch):
    # The rule itself: a GPU call under 20 us; never on the CPU path, whose calls have no launch queue.
    assert processes.launch_bound(5e-6, "cuda") and not processes.launch_bound(50e-6, "cuda")
    assert not processes.launch_bound(5e-6, "cpu")
    bench = asv_suite.build()["Square"]()
    bench.setup("square-mul", "64x64", "float32")
    assert not bench.one_per_process and bench.repeat == asv_suite._OpBenchmarks.repeat
    assert len(bench.track_cold("square-mul", "64x64", "float32")["samples"]) >= timing.MIN_SAMPLES
    # The same case where the rule says launch-bound, as it does on a GPU: one warm sample, and
    # cold's calls collapse to this process's median.
    seen = []
    monkeypatch.setattr(asv_suite, "launch_bound", lambda per_call_s, device: seen.append(per_call_s) or True)
    monkeypatch.setattr(asv_suite, "time_cold", lambda *a, **k: [3.0, 1.0, 2.0, 9.0, 2.5])
    bench = asv_suite.build()["Square"]()
    bench.setup("square-mul", "64x64", "float32")
    assert bench.one_per_process and bench.repeat == 1
    assert seen == [asv_suite._plan(bench.case).per_call_s]  # decided on the warm plan's time per call
    assert bench.track_cold("square-mul", "64x64", "float32") == {"samples": [2.5], "number": 1}
    # host mode too: a host's cost of a call is a property of the process
    monkeypatch.setattr(asv_suite, "time_host", lambda *a, **k: [4.0, 1.0, 2.0])
    monkeypatch.setattr(asv_suite, "host_bound", lambda host_s, gpu_s, device: True)
    host = asv_suite.build()["SquareHost"]()
    host.setup("square-mul", "64x64", "float32", host_id())
    assert host.track_host("square-mul", "64x64", "float32", host_id())["samples"] == [2.0]


def test_host_mode_samples_a_host_bound_case_one_value_per_process(monkeypatch):
    # The rule: launch-bound, or the host's cost of a call at least half the GPU's; never on the CPU path.
    share = processes.HOST_BOUND_SHARE
    assert processes.host_bound(1e-6, 5e-6, "cuda")  # launch-bound, whatever the host costs
    assert processes.host_bound(share * 100e-6, 100e-6, "cuda")  # a Numba call beside 100 us of GPU work
    assert not processes.host_bound(0.9 * share * 100e-6, 100e-6, "cuda")  # the queue hides it
    assert not processes.host_bound(500e-6, 100e-6, "cpu")
    # The suite asks it with the warm plan's two times, and collapses host mode's samples only when it says so;
    # warm and cold keep all their samples (their GPU time does not move with the host).
    seen = []
    monkeypatch.setattr(asv_suite, "time_host", lambda *a, **k: [4.0, 1.0, 2.0])
    bench = asv_suite.build()["Square"]()
    bench.setup("square-mul", "64x64", "float32")
    host = asv_suite.build()["SquareHost"]()
    host.setup("square-mul", "64x64", "float32", host_id())
    assert host.case is bench.case  # the case its warm process prepared: no second first call or gate
    plan = asv_suite._plan(bench.case)
    monkeypatch.setattr(asv_suite, "host_bound", lambda host_s, gpu_s, device: seen.append((host_s, gpu_s)) or True)
    assert host.track_host("square-mul", "64x64", "float32", host_id())["samples"] == [2.0]
    assert seen == [(plan.host_per_call_s, plan.per_call_s)] and not bench.one_per_process
    monkeypatch.setattr(asv_suite, "host_bound", lambda host_s, gpu_s, device: False)
    assert host.track_host("square-mul", "64x64", "float32", host_id())["samples"] == [4.0, 1.0, 2.0]


def test_warm_cold_and_host_run_up_to_three_processes_until_they_have_three_samples():
    for method in (asv_suite._OpBenchmarks.time_warm, asv_suite._ColdMode.track_cold, asv_suite._HostModes.track_host):
        assert method.rounds == method.enough_samples == processes.LAUNCH_BOUND_PROCESSES == 3
    assert not hasattr(asv_suite._OpBenchmarks.track_graph, "enough_samples")  # graph replays agree across processes


def test_a_cases_warm_process_measures_its_cold_and_graph_modes_too():
    # kernelscope.asv.siblings serves track_cold and track_graph from time_warm's process; asv runs them in that order
    assert asv_suite._OpBenchmarks.time_warm.also_runs == ["track_graph", "track_cold", "{class}Host.track_host"]
    assert sorted(["time_warm", "track_cold", "track_graph"])[0] == "time_warm"
    assert sorted(["Square.time_warm", "SquareHost.track_host", "SquareBfloat16.time_warm"])[0] == "Square.time_warm"


def test_the_forkserver_preload_starts_the_frameworks_and_has_children_run_their_siblings(monkeypatch):
    from asv_runner import server

    from kernelscope import backends

    started = []
    for name, backend in backends.BACKENDS.items():
        monkeypatch.setitem(backends.BACKENDS, name, dataclasses.replace(backend, preload=lambda n=name: started.append(n)))
    monkeypatch.setattr(sys, "argv", ["benchmark.py", "run_server"])
    monkeypatch.setattr(server, "_run", server._run)  # restored after the test
    asv_suite.preload()
    device = backends.default_device()
    assert started == [n for n, b in backends.BACKENDS.items() if b.why_unavailable(device) is None]
    assert server._run.__name__ == "run_with_siblings"


def test_a_run_names_its_variants_and_the_forkserver_starts_their_frameworks_alone(monkeypatch):
    # asv's process names the variants of the cases it selected (kernelscope.asv.runs); the forkserver it starts
    # then preloads their backends alone, and every backend where a name is not one of the catalog's
    from asv_runner import server

    from kernelscope import backends
    from kernelscope.asv import runs

    class Selection(dict):  # what asv's Benchmarks offers: the benchmarks, and the cases selected of each
        benchmark_selection = {"benchmarks.Square.time_warm": [2, 3]}  # square-triton-flat1024 at both sizes

    square = {"param_names": ["variant", "size", "dtype"],
              "params": [["'square-mul'", "'square-triton-flat1024'"], ["'64x64'", "'256x256'"], ["'float32'"]]}
    first = {"param_names": ["variant", "host"], "params": [["'gelu-compile'"], ["'box-1'"]]}
    selection = Selection({"benchmarks.Square.time_warm": square, "benchmarks.FirstCall.time_first_call": first})
    assert runs.selected_variants(selection) == ["gelu-compile", "square-triton-flat1024"]
    assert runs.selected_variants(Selection({"benchmarks.Other.track": {"param_names": [], "params": []}})) is None

    started = []
    for name, backend in backends.BACKENDS.items():
        monkeypatch.setitem(backends.BACKENDS, name, dataclasses.replace(backend, preload=lambda n=name: started.append(n)))
    monkeypatch.setattr(sys, "argv", ["benchmark.py", "run_server"])
    monkeypatch.setattr(server, "_run", server._run)  # restored after the test
    device = backends.default_device()
    available = [n for n, b in backends.BACKENDS.items() if b.why_unavailable(device) is None]
    monkeypatch.setenv(runs.PRELOAD_ENV, "square-mul,square-triton-flat1024")
    asv_suite.preload()
    assert started == [n for n in available if n in ("torch", "triton")]
    started.clear()
    monkeypatch.setenv(runs.PRELOAD_ENV, "square-mul,empty-kernel")  # Launch's case: not a variant of the catalog
    asv_suite.preload()
    assert started == available
    started.clear()
    # a history run's older commit lacks a variant the working tree names: that case is skipped, and needs nothing
    monkeypatch.setenv(runs.PRELOAD_ENV, "square-mul,square-sleep-gone")
    asv_suite.preload()
    assert started == [n for n in available if n == "torch"]


def test_host_mode_is_a_class_of_its_own_per_op_and_dtype_with_the_host_among_its_parameters():
    classes = asv_suite.build()
    for name, cls in classes.items():
        if name.endswith("Host"):
            continue
        assert not hasattr(cls, "track_host")
        if name in ("FirstCall", "Launch"):
            continue
        host = classes[name + "Host"]
        assert host.params == [*cls.params, [host_id()]] and host.param_names == [*cls.param_names, "host"]
        assert host.track_host.version == modes.HOST.version == "4"  # the other modes' versions stay as they were
    bench = classes["SquareHost"]()
    bench.setup("square-mul", "64x64", "float32", host_id())
    out = bench.track_host("square-mul", "64x64", "float32", host_id())
    assert out["number"] >= 1 and len(out["samples"]) >= timing.MIN_SAMPLES
    assert all(s > 0 for s in out["samples"])


def test_every_mode_of_the_registry_is_a_benchmark_of_the_suite_at_its_version():
    classes = asv_suite.build()
    for mode in modes.MODES:
        owners = [cls for cls in classes.values() if hasattr(cls, mode.method)]
        assert owners, f"no class of the suite has {mode.method}"
        assert {getattr(cls, mode.method).version for cls in owners if cls.__name__ != "Launch"} == {mode.version}
