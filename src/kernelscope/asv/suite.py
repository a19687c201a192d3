"""The asv suite, generated from the catalog.

``benchmarks/benchmarks.py`` calls :func:`build` and puts the classes in its
module namespace. One class per op, parameterised by variant x size x dtype,
with the GPU's timed modes, and one per op for the modes that time the host
as much as the GPU, with the host among their parameters::

    Square.time_warm       back-to-back calls queued behind a spin kernel; asv's timer is the held GPU clock
    Square.track_cold      L2 flushed before each call, each call its own events
    Square.track_graph     CUDA-graph replay: the kernels without launch overhead
    SquareHost.track_host  a plain Python loop of calls, synchronized per sample: what a call costs the caller
    SquareBfloat16.*       warm and graph in bfloat16 (SquareBfloat16Host: host), for the variants the
                           catalog times in it
    Launch.track_graph     an empty kernel replayed the same way: graph mode's floor
    FirstCall.time_first_call    JIT / compile / extension load of a fresh process, per host

A GPU mode's result is the GPU's: boxes with the same GPU model agree within
1-2% at 50 us or more, so they share one asv machine and one history. Host
mode and the first call measure the box's CPU and its launch path as well
(one H100 box's Numba call read 35-55% above another's), so their classes
carry the ``host`` parameter (:func:`kernelscope.results.machine.host_id`): asv
compares and graphs them only between runs on the same box.

``track_*`` return ``{"samples": [...], "number": N}``, which asv stores and
compares like a timing (median, 99% CI, Mann-Whitney on raw samples). A case's
``time_warm`` process also runs its ``track_graph``, ``track_cold`` and
``track_host`` (``also_runs``; :mod:`kernelscope.asv.siblings`): one
process per case.

asv does not load these classes directly: :mod:`kernelscope.asv.identity`
gives them the working tree's parameters and versions (:func:`describe`), so a
history run over commits whose catalogs differ files every value under the
case that produced it.

Versions are pinned (:mod:`kernelscope.modes`): refactoring this module does
not orphan history. Bump a mode's version only when what it measures changes.
"""

from __future__ import annotations

import math
import os
import statistics

from kernelscope import backends, modes
from kernelscope.asv import hooks, sibling_process
from kernelscope.asv.runs import PRELOAD_ENV
from kernelscope.catalog import OPS, VARIANTS, variants_of
from kernelscope.ops import shape_str
from kernelscope.results import clock_logs
from kernelscope.results.machine import host_id
from kernelscope.timing import GraphUnavailable, HeldClock, L2Flusher, WarmPlan, capture_graph, clocks, grown_hold, phases, plan_warm, time_cold, time_graph
from kernelscope.timing.cases import prepare
from kernelscope.timing.host import plan_host, time_host
from kernelscope.timing.processes import LAUNCH_BOUND_PROCESSES, host_bound, launch_bound

try:  # inside a benchmark body asv wants this to record a skip (setup may raise NotImplementedError)
    from asv_runner.benchmarks.mark import SkipNotImplemented
    from asv_runner.benchmarks.time import TimeBenchmark
except ImportError:  # the suite's module is importable without asv, e.g. by the tests
    SkipNotImplemented = NotImplementedError
    TimeBenchmark = None

if TimeBenchmark is not None:
    hooks.require("asv_runner")  # one clear error, naming what is missing, for an asv_runner older than checked
    # asv_runner >= 0.3 times each call on its own when a class has `setup`
    # and number > 1, re-running setup in between (asv#966). For a kernel that
    # puts a host launch gap inside every sample: a 5 us kernel reads 35 us.
    # Our setup is idempotent (a cached, checked case; the timed call mutates
    # nothing), so restore plain timeit batching: `number` back-to-back calls
    # between two event-clock readings.
    TimeBenchmark._setup_isolates_timed_calls = False

# Each mode's benchmark version, and why it is what it is, is in kernelscope.modes. The launch
# floor's graph benchmark (Launch.track_graph) kept the suite's version when graph mode moved on.
LAUNCH_VERSION = "3"
# Every variant is timed in float32. Each parameter set is a forked process
# (about a second on an H100), so other dtypes get classes of their own, over
# the variants whose catalog entry lists them in ``bench_dtypes``: adding one
# there leaves the float32 classes' parameters, and their history, as they are.
MAIN_DTYPE = "float32"
COLD_SAMPLES = 40
GRAPH_SAMPLES = 30
GRAPH_TARGET_S = 2e-3  # calls per graph: enough to make one replay last about this long
GRAPH_MAX_CALLS = 100
HOST_SAMPLES = 10


def graph_calls(per_call_s: float) -> int:
    """Calls captured per graph for a call of ``per_call_s`` (warm): a replay lasts about GRAPH_TARGET_S.

    Also what ``kernelscope crosscheck`` captures, so its graph mode is the suite's.
    """
    return max(1, min(GRAPH_MAX_CALLS, math.ceil(GRAPH_TARGET_S / max(per_call_s, 1e-9))))


def _versioned(fn, version: str, unit: str | None = None):
    fn.version = version
    if unit:
        fn.unit = unit
    return fn


class _OpBenchmarks:
    """Base of the generated per-op classes; ``op`` and ``params`` are set per op.

    It has warm and graph mode; float32 classes add cold mode (:class:`_ColdMode`).
    """

    op: str
    param_names = ["variant", "size", "dtype"]
    timeout = 600  # seconds per process: torch import, CUDA context, JIT from warm caches
    # (min samples, max samples, max seconds): a sample is about 2 ms of GPU work, so 30 take
    # under 0.2 s, except where the host cannot keep up (a Numba launch, 0.25 ms a call): there
    # 1 s of samples, at least 12 of them, not 5.
    repeat = (12, 30, 1.0)
    warmup_time = 0.02  # setup has already warmed the kernel up
    number = 1  # replaced per case in setup: calls per sample (timing.plan_warm)
    timer = HeldClock()  # GPU time with the launch queue held full; perf_counter on the CPU path

    def setup(self, variant, size, dtype):
        phases.begin(type(self).__name__, [variant, size, dtype])
        self.case = prepare(self.op, variant, size, dtype)
        with phases.phase("plan"):
            plan = _plan(self.case)
        self.number = plan.number
        self.timer.hold_for(id(self.case), plan.hold_s)
        # A launch-bound case is one value per process, in several processes (timing.processes);
        # the others take all their samples here, and asv runs them in one process.
        self.one_per_process = launch_bound(plan.per_call_s, self.case.device)
        if self.one_per_process:
            self.repeat = 1
        phases.setup_done()

    def teardown(self, variant, size, dtype):
        phases.sample_done()
        # After time_warm's samples (the other benchmarks never read the timer): log their SM clocks.
        if self.timer.watch.readings:
            clock_logs.log_case(self._name("time_warm"), [variant, size, dtype], self.timer.watch,
                                starved=self.timer.starved)

    def _this_process(self, samples: list[float]) -> list[float]:
        """A launch-bound case's samples as this process's one value (their median): its calls agree far
        more closely than processes do (timing.processes); anything else's samples as they are."""
        return [statistics.median(samples)] if self.one_per_process else samples

    @classmethod
    def _name(cls, method: str) -> str:
        return f"benchmarks.{cls.__name__}.{method}"  # as asv names it in the results

    def time_warm(self, variant, size, dtype):
        self.case.call()

    def track_graph(self, variant, size, dtype):
        phases.method("track_graph")
        case = self.case
        if case.device != "cuda":
            raise SkipNotImplemented(f"{variant}: CUDA graphs need a GPU")
        calls = graph_calls(_plan(case).per_call_s)
        try:
            graph, out = capture_graph(case.call, calls)
        except GraphUnavailable as exc:
            raise SkipNotImplemented(f"{variant}: {exc}") from None
        watch = clocks.ClockWatch(None)
        samples = time_graph(graph, calls, GRAPH_SAMPLES, watch=watch)
        case.check(out)  # the replayed graph computed the right thing
        clock_logs.log_case(self._name("track_graph"), [variant, size, dtype], watch)
        return {"samples": samples, "number": calls}


class _ColdMode:
    """Cold mode, for the main dtype's classes: the L2 flushed before every call."""

    def track_cold(self, variant, size, dtype):
        phases.method("track_cold")
        case = self.case
        hold = grown_hold(_plan(case).host_per_call_s)  # outlasts one call's launch path
        watch = clocks.ClockWatch(None)
        samples = time_cold(case.call, case.device, COLD_SAMPLES, _flusher(case.device), hold_s=hold, watch=watch)
        case.check(case.call())
        clock_logs.log_case(self._name("track_cold"), [variant, size, dtype], watch)
        return {"samples": self._this_process(samples), "number": 1}


class _HostModes:
    """Host mode, in a class of its own: its ``host`` parameter keeps one box's results apart from another's.

    ``time_warm``'s process runs it for the same case (``also_runs``), so it pays no CUDA context,
    first call or gate of its own.
    """

    op: str
    param_names = ["variant", "size", "dtype", "host"]
    timeout = _OpBenchmarks.timeout

    def setup(self, variant, size, dtype, host):
        phases.begin(type(self).__name__, [variant, size, dtype, host])
        self.case = prepare(self.op, variant, size, dtype)
        phases.setup_done()

    def teardown(self, variant, size, dtype, host):
        phases.sample_done()

    def track_host(self, variant, size, dtype, host):
        phases.method("track_host")
        case = self.case
        number = _host_calls(case)
        samples = time_host(case.call, case.device, HOST_SAMPLES, number)
        case.check(case.call())
        plan = _plan(case)
        if host_bound(plan.host_per_call_s, plan.per_call_s, case.device):  # the process moves the host's cost
            samples = [statistics.median(samples)]
        return {"samples": samples, "number": number}


class Launch:
    """Graph mode's floor: an empty kernel (``torch.cuda._sleep(0)``: one thread
    that returns at once) replayed as graph nodes, timed like ``track_graph``.
    A launch-bound kernel is judged against this, not against zero."""

    params = [["empty-kernel"]]
    param_names = ["variant"]
    timeout = 120

    def setup(self, variant):
        if backends.default_device() != "cuda":
            raise NotImplementedError("empty-kernel: graph replay needs a GPU")
        phases.begin("Launch", [variant], method="track_graph")
        phases.setup_done()

    def teardown(self, variant):
        phases.sample_done()

    def track_graph(self, variant):
        import torch

        graph, _ = capture_graph(lambda: torch.cuda._sleep(0), 100)
        watch = clocks.ClockWatch(None)
        samples = time_graph(graph, 100, GRAPH_SAMPLES, watch=watch)
        clock_logs.log_case("benchmarks.Launch.track_graph", [variant], watch)
        return {"samples": samples, "number": 100}


def _once_per_case(store: dict, case, make):
    """``make(case)``, made once per case: asv re-runs setup between samples, and siblings share the case."""
    key = id(case)
    if key not in store:
        store[key] = make(case)
    return store[key]


_PLANS: dict[int, WarmPlan] = {}
_HOST_CALLS: dict[int, int] = {}


def _plan(case) -> WarmPlan:
    return _once_per_case(_PLANS, case, lambda c: plan_warm(c.call, c.device))


def _host_calls(case) -> int:
    """Host mode's calls per sample."""
    return _once_per_case(_HOST_CALLS, case, lambda c: plan_host(c.call, c.device))


_FLUSHERS: dict[str, L2Flusher] = {}


def _flusher(device: str) -> L2Flusher:
    if device not in _FLUSHERS:
        _FLUSHERS[device] = L2Flusher(device)
    return _FLUSHERS[device]


class FirstCall:
    """The first call of each variant in a fresh process: JIT compilation, the
    torch.compile trace and code generation, the CUDA extension build or load.

    Measured with the on-disk caches as they are (warm after the first run);
    timings in the other benchmarks never include it. A fresh process gives
    one sample, so each round (a process) adds one: three rounds give asv a
    median and an interval to compare, where a single number would be flagged
    by any 10% jitter of Python's import and tracing work. It is a ``time_``
    benchmark because asv honours ``rounds`` only there; the body synchronizes,
    so asv's host clock times finished work. The ``host`` parameter keeps one
    box's first calls apart from another's; :func:`build` sets it.
    """

    param_names = ["variant", "host"]
    timeout = 900  # a cold CUDA build takes about a minute, torch.compile tens of seconds
    rounds = 3
    number = 1
    repeat = 1  # one sample per process
    min_run_count = 1
    warmup_time = 0.0  # a warm-up call would be the first call

    def setup(self, variant, host):
        phases.begin("FirstCall", [variant, host], method="time_first_call")
        v = VARIANTS.get(variant)
        if v is None:
            raise NotImplementedError(f"{variant}: not in this commit's catalog")
        op = v.op_spec
        self.size = shape_str(op.bench_shapes[0])
        self.device = backends.default_device()
        why = v.unavailable(self.device)
        if why:
            raise NotImplementedError(f"{variant}: {why}")
        backends.configure_interpreters()
        self.variant = v
        with phases.phase("input"):
            self.x = op.make_input(op.bench_shapes[0], "float32", self.device, 0x5EED)
        v.function()  # import the framework outside the measurement
        phases.setup_done()

    def teardown(self, variant, host):
        phases.sample_done()

    def time_first_call(self, variant, host):
        self.variant(self.x)
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()


def _hosts_siblings(fn):
    """A case's process measures its other modes too (kernelscope.asv.siblings).

    ``time_warm`` sorts before ``track_cold`` and ``track_graph``, and ``Square``
    before ``SquareHost``, so asv reaches it first in every round; a class
    without one of them (bfloat16: no cold mode) simply has no such sibling.
    ``{class}`` stands for the host's class name. Graph first: in crosscheck's process, graph
    replays at 2^28 elements measured after cold mode and the peers read 3-16%
    slow (results-proofs/graph-mode-large/graph_state_probe.py), where asv's own process, warm plan
    then graph, read the warm time.
    """
    fn.also_runs = ["track_graph", "track_cold", "{class}Host.track_host"]
    return fn


def _sampled_per_process(fn):
    """Up to LAUNCH_BOUND_PROCESSES processes a case, for as long as it has fewer samples than that.

    ``rounds`` is asv's own (a process per case per round; as a function attribute
    it reaches track benchmarks too); ``enough_samples`` is read by
    :mod:`kernelscope.asv.rounds`, which skips the further rounds of a case
    that already has that many: everything but the launch-bound cases.
    """
    fn.rounds = LAUNCH_BOUND_PROCESSES
    fn.enough_samples = LAUNCH_BOUND_PROCESSES
    return fn


_versioned(_hosts_siblings(_sampled_per_process(_OpBenchmarks.time_warm)), modes.WARM.version)
_versioned(_sampled_per_process(_ColdMode.track_cold), modes.COLD.version, unit="seconds")
_versioned(Launch.track_graph, LAUNCH_VERSION, unit="seconds")
_versioned(_OpBenchmarks.track_graph, modes.GRAPH.version, unit="seconds")
_versioned(_sampled_per_process(_HostModes.track_host), modes.HOST.version, unit="seconds")
_versioned(FirstCall.time_first_call, modes.FIRST_CALL.version)


def preload() -> None:
    """Start the kernel frameworks once, in asv's forkserver parent, and have its children run siblings.

    Every benchmark runs in a process forked from it; without this each one
    pays each framework's imports and one-time start again (seconds apiece:
    :func:`kernelscope.backends.preload`). Nothing here creates a CUDA
    context, so the forked children still can. asv's discovery imports the
    suite too, in a process of its own that only lists the benchmarks: there
    it would be about 10 s of every run for nothing.
    """
    import sys

    if sys.argv[1:2] in (["discover"], ["check"]):  # asv_runner's command: asv/benchmark.py COMMAND ...
        return
    backends.configure_interpreters()
    # The run's own variants, when asv's process named them (kernelscope.asv.runs): a run of Square's torch variants
    # does not wait for Inductor's imports (seconds) in each of its forkservers.
    # A name this commit's catalog lacks is a working tree's case that an older commit cannot run (skipped as n/a):
    # it needs no framework. Launch's kernel is no variant of any catalog; a run of it starts them all.
    named = [n for n in os.environ.get(PRELOAD_ENV, "").split(",") if n]
    launch = set(Launch.params[0])
    chosen = ([VARIANTS[n] for n in named if n in VARIANTS] if named and not launch.intersection(named)
              else list(VARIANTS.values()))
    backends.preload(only={v.backend for v in chosen})
    for variant in chosen:
        if variant.backend in ("triton", "torch-compile", "numba"):
            try:
                variant.function()  # the kernel modules: their imports, and Triton's and Numba's decorators
            except Exception:  # a missing framework is reported per variant, as a skip
                pass
    sibling_process.install()
    phases.suite_imported()


def class_name(op: str, dtype: str) -> str:
    """``Square`` for the main dtype, ``SquareBfloat16`` for another."""
    return op.capitalize() + ("" if dtype == MAIN_DTYPE else dtype.capitalize())


def build() -> dict[str, type]:
    """Per op ``Square`` (float32: every variant, GPU modes) and ``SquareHost`` (host mode), a pair per other
    dtype the catalog asks for (warm and graph; host), plus ``Launch`` and ``FirstCall``."""
    host = host_id()
    classes: dict[str, type] = {
        "FirstCall": type("FirstCall", (FirstCall,), {"params": [list(VARIANTS), [host]],
                                                      "__module__": "benchmarks.benchmarks"}),
        "Launch": Launch,
    }
    for name, op in OPS.items():
        dtypes = [MAIN_DTYPE] + sorted({d for v in variants_of(name) for d in v.bench_dtypes} - {MAIN_DTYPE})
        for dtype in dtypes:
            variants = [v.name for v in variants_of(name) if dtype in v.bench_dtypes or dtype == MAIN_DTYPE]
            cls_name = class_name(name, dtype)
            params = [variants, [shape_str(s) for s in op.bench_shapes], [dtype]]
            doc = f"{op.summary}, in {dtype}. Variants x sizes from the kernelscope catalog."
            bases = (_OpBenchmarks, _ColdMode) if dtype == MAIN_DTYPE else (_OpBenchmarks,)
            classes[cls_name] = type(cls_name, bases, {"op": name, "params": params, "__doc__": doc,
                                                       "__module__": "benchmarks.benchmarks"})
            classes[cls_name + "Host"] = type(cls_name + "Host", (_HostModes,), {
                "op": name, "params": [*params, [host]], "__doc__": doc + " Host mode, on this host.",
                "__module__": "benchmarks.benchmarks"})
    return classes


def describe(classes: dict[str, type] | None = None) -> dict[str, dict]:
    """What asv should see of the suite: per class its parameters, their names, and each benchmark's version.

    JSON-able, so that :mod:`kernelscope.asv.identity` can ask a working tree's suite for it.
    """
    classes = build() if classes is None else classes
    return {
        name: {
            "params": [list(p) for p in getattr(cls, "params", [])],
            "param_names": list(getattr(cls, "param_names", [])),
            "methods": {m: {"version": str(getattr(getattr(cls, m), "version", "")),
                            "unit": getattr(getattr(cls, m), "unit", None)}
                        for m in dir(cls) if m.startswith(("time_", "track_")) and callable(getattr(cls, m))},
        }
        for name, cls in classes.items()
    }
