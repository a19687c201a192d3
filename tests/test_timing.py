"""The warm clock's logic, on a simulated GPU stream (its GPU counterpart: test_gpu.py).

The simulation keeps two clocks: the host's (what ``time.perf_counter`` reads)
and the stream's tail (when the work enqueued so far will have finished). A
launch costs the host ``host_s``; its kernel starts when both the launch and
the work before it are done. That is enough to reproduce what the held clock
is for: a kernel shorter than its launch reads as the launch without a hold,
and as itself with one.
"""

import json
import time

import pytest
import torch

import kernelscope.timing as timing
from kernelscope.timing import primitives


class SimulatedStream:
    def __init__(self, queue_depth=1024, clock_hz=1.98e9):
        self.host = 100.0  # seconds, what perf_counter returns
        self.tail = 0.0  # when the enqueued work will be done
        self.queue_depth = queue_depth
        self.clock_hz = clock_hz
        self.starts: list[float] = []  # start times of kernels, for the queue's depth
        self.enqueue_s = 0.0  # host time of each spin's launch and event record: a slow host

    def kernel(self, seconds):
        pending = [s for s in self.starts if s > self.host]
        if len(pending) >= self.queue_depth:  # the launch blocks until a slot frees up
            self.host = sorted(pending)[len(pending) - self.queue_depth]
        start = max(self.host, self.tail)
        self.starts.append(start)
        self.tail = start + seconds

    def launch(self, host_s, gpu_s):
        self.host += host_s
        self.kernel(gpu_s)


@pytest.fixture
def stream(monkeypatch):
    sim = SimulatedStream()

    class Event:
        def __init__(self, enable_timing=False):
            self.at = None

        def record(self):
            sim.host += sim.enqueue_s
            self.at = max(sim.host, sim.tail)
            sim.tail = self.at

        def synchronize(self):
            sim.host = max(sim.host, self.at)

        def elapsed_time(self, end):
            return (end.at - self.at) * 1e3

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "_sleep", lambda cycles: sim.launch(sim.enqueue_s, cycles / sim.clock_hz))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: setattr(sim, "host", max(sim.host, sim.tail)))
    monkeypatch.setattr(time, "perf_counter", lambda: sim.host)
    monkeypatch.setattr(primitives, "_SPIN_CYCLES_PER_S", None)  # where spin_cycles_per_second keeps it
    return sim


def launch_bound(sim, host_s=20e-6, gpu_s=3e-6):
    return lambda: sim.launch(host_s, gpu_s)


def test_the_spin_rate_is_measured_not_assumed(stream):
    assert timing.spin_cycles_per_second() == pytest.approx(1.98e9)


def test_without_a_hold_a_short_kernel_reads_as_its_launch(stream):
    clock = timing.HeldClock(hold_s=0.0)
    per_call = clock.sample(launch_bound(stream), 100) / 100
    assert per_call == pytest.approx(20e-6, rel=0.05)
    assert clock.starved == 1


def test_with_the_hold_it_reads_as_the_kernel(stream):
    clock = timing.HeldClock(hold_s=100 * 20e-6 * 1.5)
    per_call = clock.sample(launch_bound(stream), 100) / 100
    assert per_call == pytest.approx(3e-6, rel=1e-6)
    assert clock.starved == 0


def test_a_starved_sample_is_counted_and_the_next_one_held_longer(stream):
    clock = timing.HeldClock(hold_s=1e-4)
    first = clock.sample(launch_bound(stream), 100) / 100
    assert clock.starved == 1 and clock.hold_s > 100 * 20e-6
    second = clock.sample(launch_bound(stream), 100) / 100
    assert clock.starved == 1 and second == pytest.approx(3e-6, rel=1e-6) and first > 2 * second


def test_a_gpu_bound_kernel_reads_the_same_held_or_not(stream):
    fn = lambda: stream.launch(20e-6, 700e-6)  # noqa: E731
    held = timing.HeldClock(hold_s=1e-3).sample(fn, 5) / 5
    plain = timing.HeldClock(hold_s=0.0).sample(fn, 5) / 5
    assert held == pytest.approx(700e-6) and plain == pytest.approx(700e-6, rel=0.01)


def test_plan_keeps_the_queue_full(stream):
    plan = timing.plan_warm(launch_bound(stream), "cuda")
    assert plan.number == timing.MAX_QUEUED_CALLS  # 2 ms of 3 us kernels is more than the queue takes
    assert plan.per_call_s == pytest.approx(3e-6, rel=1e-6)
    assert plan.hold_s >= plan.number * 20e-6


def test_plan_halves_the_calls_when_the_launch_queue_fills(stream):
    stream.queue_depth = 50
    plan = timing.plan_warm(launch_bound(stream), "cuda")
    assert plan.number < 50 and plan.per_call_s == pytest.approx(3e-6, rel=1e-6)


def test_plan_says_so_when_a_call_synchronizes(stream, capsys):
    def synchronizing():
        stream.launch(20e-6, 3e-6)
        stream.host = max(stream.host, stream.tail)  # like .item() or a blocking copy

    plan = timing.plan_warm(synchronizing, "cuda")
    assert plan.number == 1
    assert "could not keep the launch queue full" in capsys.readouterr().err


def test_next_plan_grows_the_hold_or_cuts_the_calls():
    plan = timing.WarmPlan(number=100, hold_s=3e-3, per_call_s=3e-6, host_per_call_s=20e-6)
    assert timing.next_plan(plan, host_s=2.5e-3, longest_call_s=30e-6) is None
    slower = timing.next_plan(plan, host_s=4e-3, longest_call_s=60e-6)
    assert slower.number == 100 and slower.hold_s > 4e-3
    blocked = timing.next_plan(plan, host_s=4e-3, longest_call_s=2.9e-3)
    assert blocked.number == 50


def test_on_the_cpu_path_the_clock_is_the_host_clock():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    clock = timing.HeldClock(hold_s=1.0)  # no GPU: nothing to hold, no spin
    t0 = clock()
    assert clock() >= t0
    plan = timing.plan_warm(lambda: sum(range(100)), "cpu")
    assert plan.number >= 1 and plan.hold_s == 0.0


def test_a_grown_hold_survives_setup_for_the_same_case(stream):
    clock = timing.HeldClock()
    clock.hold_for("case-a", 1e-4)
    clock.sample(launch_bound(stream), 100)  # starves: the hold grows
    grown = clock.hold_s
    assert grown > 1e-4
    clock.hold_for("case-a", 1e-4)  # asv re-runs setup before the next sample
    assert clock.hold_s == grown
    clock.hold_for("case-b", 2e-4)
    assert clock.hold_s == 2e-4


# --- the SM clock of each sample (throttle detection); GPU counterpart in test_gpu.py ---

@pytest.fixture
def max_clock(monkeypatch):
    from kernelscope.timing import clocks

    monkeypatch.setattr(clocks, "max_sm_mhz", lambda: 1980.0)
    monkeypatch.setattr(clocks, "throttle_reasons", lambda: ["SwPowerCap"])
    return 1980.0


def test_each_sample_reads_the_sm_clock_its_spin_ran_at(stream, max_clock):
    clock = timing.HeldClock(hold_s=100 * 20e-6 * 1.5)
    for _ in range(3):
        clock.sample(launch_bound(stream), 100)
    assert clock.watch.readings == pytest.approx([1980.0] * 3)
    assert clock.watch.summary()["throttled"] == 0


def test_samples_below_three_quarters_of_the_max_clock_are_flagged(stream, max_clock):
    timing.spin_cycles_per_second()  # measured at full clock, as on a GPU at rest
    clock = timing.HeldClock(hold_s=100 * 20e-6 * 1.5)
    clock.sample(launch_bound(stream), 100)
    stream.clock_hz = 0.6 * 1.98e9  # the GPU throttles
    clock.sample(launch_bound(stream), 100)
    clock.sample(launch_bound(stream), 100)
    stream.clock_hz = 0.8 * 1.98e9  # slower, but above the threshold
    clock.sample(launch_bound(stream), 100)
    assert clock.watch.readings == pytest.approx([1980, 1188, 1188, 1584])
    summary = clock.watch.summary()
    assert summary["throttled"] == 2 and not summary["mostly_throttled"]
    assert clock.watch.summary(last=3)["mostly_throttled"]


def test_cold_samples_read_the_clock_too(stream, max_clock):
    from kernelscope.timing.clocks import ClockWatch

    watch = ClockWatch(None)
    stream.clock_hz = 0.5 * 1.98e9
    times = timing.time_cold(launch_bound(stream), "cuda", 6, flusher=lambda: None, hold_s=1e-4, watch=watch)
    assert len(times) == len(watch.readings) == 6 and watch.max_mhz == 1980.0
    assert watch.summary()["mostly_throttled"]


def test_a_throttled_case_is_logged_beside_the_result_and_said_on_stderr(tmp_path, monkeypatch, capsys, max_clock):
    from kernelscope.results import clock_logs, machine
    from kernelscope.timing.clocks import ClockWatch

    monkeypatch.setenv(clock_logs.RESULTS_DIR_ENV, str(tmp_path))
    monkeypatch.setenv("ASV_COMMIT", "0123456789abcdef")
    monkeypatch.setenv("ASV_ENV_NAME", "syssite-py3.12")
    monkeypatch.setenv(machine.MACHINE_ENV, "gpu-a")
    monkeypatch.setattr(clock_logs, "_LOGGED", {})
    monkeypatch.setattr(clock_logs, "_WARNED", set())
    watch = ClockWatch(1980.0)
    case = ("benchmarks.Square.time_warm", ["square-torch", "64x64", "float32"])
    for mhz in (1000.0, 1000.0, 1900.0, 1000.0, 1000.0, 1900.0, 1000.0):  # asv's teardown after every sample
        watch.add(mhz)
        clock_logs.log_case(*case, watch)
    err = capsys.readouterr().err
    assert err.count("ran below 75% of the max SM clock") == 1 and "4 of 6 samples" in err and "SwPowerCap" in err
    log = tmp_path / "gpu-a" / f"01234567-syssite-py3.12{clock_logs.SUFFIX}"
    assert len(log.read_text().splitlines()) == 7  # one reading a line: the log grows with the samples, no more
    (record,) = clock_logs.read_log(log.with_name("01234567-syssite-py3.12.json")).values()
    assert record["mhz"] == [1000.0, 1000.0, 1900.0, 1000.0, 1000.0, 1900.0, 1000.0] and record["max_mhz"] == 1980.0
    watch.add(1900.0)
    clock_logs.log_case(*case, watch, starved=2)  # warm mode's count of starved samples: the latest one stands
    (record,) = clock_logs.read_log(log.with_name("01234567-syssite-py3.12.json")).values()
    assert record["starved"] == 2 and len(record["mhz"]) == 8
    monkeypatch.setattr(clock_logs, "_RUN", "a-later-process")  # the same case run again: its readings replace these
    monkeypatch.setattr(clock_logs, "_LOGGED", {})
    clock_logs.log_case(*case, ClockWatch(1980.0, readings=[1950.0]))
    (record,) = clock_logs.read_log(log.with_name("01234567-syssite-py3.12.json")).values()
    assert record["mhz"] == [1950.0]


def test_logs_written_whole_each_time_are_read_by_their_last_record(tmp_path):
    from kernelscope.results import clock_logs

    result = tmp_path / "0123abcd-env.json"
    lines = [{"benchmark": "b", "params": ["v", "s", "d"], "mhz": [1.0] * n, "max_mhz": 2.0, "fraction": 0.75}
             for n in (1, 2, 3)]
    result.with_name(result.stem + clock_logs.SUFFIX).write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    (record,) = clock_logs.read_log(result).values()
    assert record["mhz"] == [1.0] * 3


def test_a_committed_gzipped_log_and_a_runs_new_records_read_as_one_log(tmp_path, capsys):
    # Committed, a log is gzipped; a later run that adds to the commit's results writes a plain file beside it.
    # compress() appends the plain records as a second gzip member, and readers see the same log throughout.
    from kernelscope.results import clock_logs

    result = tmp_path / "m" / "0123abcd-env.json"
    result.parent.mkdir()
    plain = result.with_name(result.stem + clock_logs.SUFFIX)

    def record(benchmark, run, mhz):
        return json.dumps({"benchmark": benchmark, "params": ["v", "s", "d"], "run": run, "mhz": mhz,
                           "max_mhz": 1980.0, "fraction": 0.75}) + "\n"

    plain.write_text(record("a", "r1", [1900.0]) + record("a", "r1", [1800.0]))
    assert clock_logs.compress(plain) == plain.with_name(plain.name + ".gz") and not plain.exists()
    plain.write_text(record("a", "r1", [1700.0]) + record("b", "r2", [1950.0]))  # the later run's records
    before = clock_logs.read_log(result)
    assert before[("a", ("v", "s", "d"))]["mhz"] == [1900.0, 1800.0, 1700.0]  # gzipped first, then plain
    assert clock_logs.main([str(tmp_path)]) == 0 and "clock log -> " in capsys.readouterr().out
    assert not plain.exists() and clock_logs.read_log(result) == before  # one file of two members, nothing lost
    assert clock_logs.compress_all([tmp_path]) == []  # nothing plain left
    assert clock_logs.main([]) == 2


def test_benchmark_processes_are_told_where_asv_keeps_results():
    pytest.importorskip("asv")
    from kernelscope.asv import env as asv_env
    from kernelscope.results import clock_logs

    assert asv_env.CLOCK_LOG_RESULTS_DIR == clock_logs.RESULTS_DIR_ENV  # one name, written twice: asv's plugin imports
    # nothing outside kernelscope.asv


def test_graph_capture_keeps_one_output_alive(monkeypatch):
    # The GPU counterpart (test_gpu.py) checks the pool really hands every call the same block.
    import contextlib
    import weakref

    class Fake:
        def __init__(self, *a, **k):
            pass

        def wait_stream(self, other):
            pass

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "Stream", Fake)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", Fake)
    monkeypatch.setattr(torch.cuda, "current_stream", Fake)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "graph", lambda g: contextlib.nullcontext())
    alive_at_call, made = [], []

    def call():
        alive_at_call.append(sum(r() is not None for r in made))
        out = torch.empty(4)
        made.append(weakref.ref(out))
        return out

    graph, out = timing.capture_graph(call, 5)
    assert out is made[-1]()
    # 3 warm-up calls, then 5 captured: each captured call runs with no earlier output alive
    assert alive_at_call[3:] == [0] * 5


def test_cold_hold_grows_when_the_host_outlasts_it_and_drops_the_samples_it_did_not_cover():
    hold = timing.ColdHold(100e-6)
    assert not hold.after(80e-6) and hold.hold_s == 100e-6  # covered: the hold stays
    assert hold.after(250e-6)  # a Numba-sized launch outlasted it: maybe starved...
    assert hold.hold_s == timing.grown_hold(250e-6) > 250e-6  # ...and the next hold covers one like it
    assert not hold.after(250e-6)
    times = [1.0] * timing.MIN_SAMPLES + [9.0]
    assert timing.ColdHold.kept(times, [False] * timing.MIN_SAMPLES + [True]) == [1.0] * timing.MIN_SAMPLES
    few = [1.0, 9.0]  # too few covered samples for asv's statistics: keep them all rather than none
    assert timing.ColdHold.kept(few, [False, True]) == few


def test_host_mode_times_a_loop_of_calls_between_synchronized_readings(monkeypatch):
    from types import SimpleNamespace

    from kernelscope.timing import host

    # host mode's clock moved by the calls alone, 0.1 ms each: a busy 2-core machine's sleeps of 0.1 ms last
    # 0.1-0.3 ms, which made a reading of real sleeps fail here
    now = [0.0]
    monkeypatch.setattr(host, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    calls = []

    def fn():
        calls.append(1)
        now[0] += 1e-4

    number = host.plan_host(fn, "cpu")
    assert number == pytest.approx(host.HOST_TARGET_S / 1e-4, abs=1)  # 20 ms of calls a sample
    calls.clear()
    samples = host.time_host(fn, "cpu", samples=8, number=number)
    assert len(samples) == 8 and len(calls) == 8 * number
    assert samples == pytest.approx([1e-4] * 8)  # per call, not per sample
    monkeypatch.undo()
    # the fastest calls: capped (the best of three plans: one 3-call probe can catch the host's hiccup)
    assert max(host.plan_host(lambda: None, "cpu") for _ in range(3)) == host.HOST_MAX_CALLS


def test_host_mode_keeps_the_garbage_collector_off_during_a_sample_as_timeit_does():
    import gc

    from kernelscope.timing import host

    seen = []
    assert gc.isenabled()
    host.block_s(lambda: seen.append(gc.isenabled()), "cpu", 5)
    assert seen == [False] * 5 and gc.isenabled()  # off inside, back on after

    def fails():
        raise RuntimeError("a call that fails")

    with pytest.raises(RuntimeError):
        host.block_s(fails, "cpu", 1)
    assert gc.isenabled()
    gc.disable()  # a caller that had it off keeps it off
    try:
        host.block_s(lambda: None, "cpu", 1)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_cold_mode_drops_samples_a_slow_launch_starved_and_grows_its_hold(stream):
    # A Numba-sized launch (300 us of host) after a hold planned for 100 us: the GPU would wait
    # between the events for the launch, and the sample read 230 us for a 60 us kernel.
    times = timing.time_cold(launch_bound(stream, host_s=300e-6, gpu_s=60e-6), "cuda", 10, flusher=lambda: None,
                             hold_s=100e-6)
    assert len(times) == 9  # the first sample was not covered: dropped
    assert all(t == pytest.approx(60e-6, rel=1e-6) for t in times)


def test_a_captured_graph_settles_for_its_time_and_its_least_replays_before_it_is_timed(monkeypatch):
    # The GPU counterpart: graph_state_probe.py's `sequence` (slow replays first after a capture).
    class Graph:
        replays = 0

        def replay(self):
            self.replays += 1

    class Stream:
        def synchronize(self):
            clock[0] += 1e-3  # each replay takes 1 ms

    clock = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(torch.cuda, "current_stream", Stream)
    graph = Graph()
    assert timing.settle_graph(graph, 25e-3, least=3) == graph.replays == 25  # 25 ms of 1 ms replays
    graph = Graph()
    assert timing.settle_graph(graph, 0.0, least=3) == 3  # a replay longer than the settle still runs 3
    assert timing.settle_graph(Graph(), 0.0, least=0) == 1  # the upload at least


class SimulatedGraph:
    """A captured graph of ``calls`` calls of ``per_call_s`` each, replayed on a SimulatedStream."""

    def __init__(self, sim, calls=100, per_call_s=1e-6):
        self.sim, self.calls, self.per_call_s = sim, calls, per_call_s

    def replay(self):
        self.sim.launch(self.sim.enqueue_s, self.calls * self.per_call_s)


@pytest.fixture
def graph_stream(stream, monkeypatch):
    class Current:
        def synchronize(self):
            stream.host = max(stream.host, stream.tail)

    monkeypatch.setattr(torch.cuda, "current_stream", Current)
    timing.spin_cycles_per_second()  # measured by a quick host, at full clock
    return stream


def test_graph_samples_the_gpu_waited_for_are_taken_again_behind_a_longer_spin(graph_stream, max_clock):
    # A host 100 us slow to queue each spin, event and replay: the GPU waits before every start
    # event (the probe reads about 800 MHz), and a replay queued after its start event reads the
    # wait. On the H100 such samples made four 1-2 us graph cases 12-18% slow in one of two runs.
    from kernelscope.timing.clocks import ClockWatch

    graph_stream.enqueue_s = 100e-6
    watch = ClockWatch(None)
    times = timing.time_graph(SimulatedGraph(graph_stream), 100, 10, watch=watch, settle_s=0.0)
    assert len(times) == 10 and times == pytest.approx([1e-6] * 10, rel=1e-6)  # the kernels' own time
    assert watch.retaken == 10 and len(watch.readings) == 20 and watch.summary(last=10)["throttled"] == 0
    assert watch.summary()["throttled"] == 10  # the first readings stay in the log

    graph_stream.enqueue_s = 0.0  # a quick host: nothing to take again
    watch = ClockWatch(None)
    assert timing.time_graph(SimulatedGraph(graph_stream), 100, 10, watch=watch) == pytest.approx([1e-6] * 10)
    assert watch.retaken == 0 and len(watch.readings) == 10


def test_a_gpu_that_stays_throttled_keeps_its_samples_after_the_retakes(graph_stream, max_clock):
    from kernelscope.timing.clocks import ClockWatch

    graph_stream.clock_hz = 0.5 * 1.98e9  # every probe reads 990 MHz, whatever the spin's length
    watch = ClockWatch(None)
    times = timing.time_graph(SimulatedGraph(graph_stream), 100, 8, watch=watch, settle_s=0.0)
    assert len(times) == 8 and watch.retaken == 2 * 8 and len(watch.readings) == 3 * 8
    assert watch.summary()["mostly_throttled"]


def test_keep_unthrottled_replaces_only_the_low_readings():
    from kernelscope.timing.clocks import ClockWatch
    from kernelscope.timing.graph import keep_unthrottled

    asked = []

    def retake(n):
        asked.append(n)
        return [(1.0, 1900.0)] * n

    watch = ClockWatch(1980.0)
    kept = keep_unthrottled([(1.2, 900.0), (1.0, 1950.0), (1.0, None), (1.3, 1000.0)], retake, watch)
    assert sorted(kept) == [1.0, 1.0, 1.0, 1.0] and asked == [2] and watch.retaken == 2
    assert keep_unthrottled([(1.0, 1900.0)], retake, ClockWatch(None)) == [1.0]  # no max clock: nothing judged
