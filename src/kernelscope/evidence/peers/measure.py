"""The in-process clocks of ``kernelscope crosscheck``: one case, every clock, the same callable.

A case is the suite's own (:func:`kernelscope.timing.cases.prepare`: the
input made, the variant checked against the float64 reference, ``case.call``
checked too), and every clock times ``case.call``:

* **warm**, as the asv suite (``kernelscope.asv.suite``) times it: :func:`~kernelscope.timing.plan_warm`,
  then a :class:`~kernelscope.timing.HeldClock` of the plan's hold around
  ``plan.number`` calls per sample; beside it ``Timer`` (the median of its
  readings, taken in turns with host mode's samples: :func:`host_and_timer`);
* **cold**, as the suite: :func:`~kernelscope.timing.time_cold` behind a hold
  that outlasts one call's launch; beside it ``triton.testing.do_bench``
  (which flushes L2 before each call), the two in rounds, in turns
  (:func:`cold_and_do_bench`);
* **graph**, as the suite: ``asv_suite.graph_calls`` calls captured, replays
  timed by :func:`~kernelscope.timing.time_graph`; beside it
  ``triton.testing.do_bench_cudagraph``;
* **host**, as the suite: :func:`~kernelscope.timing.host.block_s` samples, a
  plain loop of calls between synchronized host-clock readings, whose peer is
  the same ``Timer`` reading (within 3% at every size): after each
  host sample, ``Timer.timeit`` of as many calls (:func:`host_and_timer`);
* the **host's cost of one call**: N calls enqueued behind a spin kernel (so
  the GPU never pushes back), host clock, / N; and the GPU time of
  do_bench's L2 flush. :mod:`~kernelscope.evidence.peers.agreement` tells from them
  where a peer's clock reads the host.

Pairs run next to each other (warm, then host mode and Timer in turns; cold and do_bench in turns;
graph then do_bench_cudagraph). Without a GPU the host clocks still run (the suite's CPU
path and Timer); graph, do_bench, do_bench_cudagraph are recorded as skipped
with the reason. A clock that fails is the case's error and the others go on.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable

import torch

from kernelscope import timing
from kernelscope.catalog import VARIANTS, select
from kernelscope.ops import numel, parse_shape, shape_str
from kernelscope.evidence.peers.agreement import diffs
from kernelscope.evidence.peers.data import CLOCKS, DTYPE, FAILED, MEASURED, SKIPPED, Record
from kernelscope.timing.host import block_s, plan_host
from kernelscope.asv import suite as asv_suite
from kernelscope.timing import cases


@dataclass
class Budgets:
    """What each clock gets per case: small, so every variant at every size takes minutes, not an hour."""

    warm_samples: int = 15
    cold_samples: int = 25  # per round: the suite's cold mode and do_bench take cold_rounds rounds in turns
    cold_rounds: int = 4
    graph_samples: int = 20
    do_bench_warmup_ms: float = 5.0
    do_bench_rep_ms: float = 25.0  # per round
    cudagraph_rep_ms: float = 20.0
    host_samples: int = 20  # host mode's, as the suite takes them; Timer takes as many readings, in turns
    host_max_pairs: int = 200  # more pairs, host_samples at a time, while the pair ratio's 95% interval is wide
    host_ratio_ci_pct: float = 1.0  # ... wider than this either side of its median
    host_calls: int = 20  # calls per reading of the host's cost of a call (three readings, the median)
    ncu_calls: int = 3  # calls inside the NVTX range the ncu pass profiles

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CaseSpec:
    op: str
    variant: str
    size: str
    dtype: str = DTYPE


def case_specs(op: str | None = None, variant: str | None = None, backend: str | None = None,
               size: str | None = None, dtypes: tuple[str, ...] = (DTYPE,)) -> list[CaseSpec]:
    """Every selected variant at each of its op's benchmark sizes (or at ``size``), smallest first, in each of
    ``dtypes`` (a dtype the variant does not take is kept, and skip_reason says so)."""
    specs = []
    for v in select(op=op, variant=variant, backend=backend):
        shapes = [parse_shape(size)] if size else sorted(v.op_spec.bench_shapes, key=numel)
        specs += [CaseSpec(v.op, v.name, shape_str(s), dtype) for s in shapes for dtype in dtypes]
    return specs


def skip_reason(spec: CaseSpec, device: str) -> str | None:
    """Why this case is not timed here: what the suite refuses (``cases.skip_reason``), or a shape of the wrong rank."""
    op = VARIANTS[spec.variant].op_spec
    if len(parse_shape(spec.size)) != op.ndim:
        return f"{spec.variant}: {spec.op} takes {op.ndim}-D inputs, not {spec.size}"
    return cases.skip_reason(spec.variant, spec.op, spec.size, spec.dtype, device)


def _median(values: list[float]) -> float:
    value = statistics.median(values)
    if not math.isfinite(value) or value <= 0:
        raise RuntimeError(f"a non-positive or non-finite reading ({value!r})")
    return value


CPU_PATH = " (the CPU path times with host clocks only)"
GPU_ONLY = {"graph": "CUDA graphs need a GPU", "do_bench": "triton.testing.do_bench needs a GPU",
            "do_bench_cudagraph": "triton.testing.do_bench_cudagraph needs a GPU"}


_FLUSHERS: dict[str, timing.L2Flusher] = {}


def _flusher(device: str) -> timing.L2Flusher:
    if device not in _FLUSHERS:
        _FLUSHERS[device] = timing.L2Flusher(device)
    return _FLUSHERS[device]


# --- the clocks ------------------------------------------------------------------------------------------------------

def suite_warm(case, plan: timing.WarmPlan, samples: int) -> tuple[float, dict]:
    """asv's warm benchmark: ``plan.number`` calls per sample between readings of a HeldClock of the plan's hold."""
    clock = timing.HeldClock(plan.hold_s)
    per_call = [clock.sample(case.call, plan.number) / plan.number for _ in range(samples)]
    return _median(per_call), {"warm_number": plan.number, "warm_samples": samples, "warm_starved": clock.starved,
                               "warm_hold_s": clock.hold_s}


def suite_cold(case, plan: timing.WarmPlan, samples: int) -> tuple[float, dict]:
    """asv's cold benchmark: the L2 flushed, then one call between events behind a hold that outlasts its launch."""
    hold = timing.grown_hold(plan.host_per_call_s)
    times = timing.time_cold(case.call, case.device, samples, _flusher(case.device), hold_s=hold)
    case.check(case.call())
    return _median(times), {"cold_samples": len(times), "cold_hold_s": hold}


def suite_graph(case, plan: timing.WarmPlan, samples: int) -> tuple[float, dict]:
    """asv's graph benchmark: ``graph_calls`` calls captured, each replay timed, the replayed output checked."""
    calls = asv_suite.graph_calls(plan.per_call_s)
    graph, out = timing.capture_graph(case.call, calls)
    try:
        times = timing.time_graph(graph, calls, samples)
        case.check(out)
    finally:
        del graph, out
    return _median(times), {"graph_calls": calls, "graph_samples": len(times)}


def _timer(case):
    """``torch.utils.benchmark.Timer(stmt="fn()")`` on the case's call."""
    from torch.utils.benchmark import Timer

    # num_threads: the process's own (Timer's default is 1), so on the CPU path both clocks run the same code
    return Timer(stmt="fn()", globals={"fn": case.call}, num_threads=torch.get_num_threads())


def _timer_reading(found: list) -> tuple[float, dict]:
    """The median per call of Timer's measurements, with their spread."""
    medians = [m.median for m in found]
    return _median(medians), {"timer_number": found[-1].number_per_run,
                              "timer_blocks": sum(len(m.raw_times) for m in found),
                              "timer_min_s": min(medians), "timer_max_s": max(medians)}


def timer_peer(case, min_run_time_s: float, readings: int = 1) -> tuple[float, dict]:
    """``Timer.blocked_autorange``: a host clock around blocks of calls, each block ended by a synchronize;
    the median per call of ``readings`` such measurements (the probes' peer)."""
    timer = _timer(case)
    return _timer_reading([timer.blocked_autorange(min_run_time=min_run_time_s) for _ in range(max(1, readings))])


def host_and_timer(case, samples: int, max_pairs: int | None = None, ratio_ci_pct: float = 1.0
                   ) -> dict[str, tuple[float, dict] | Exception]:
    """Host mode's samples (asv's host benchmark: ``plan_host`` calls back to back between synchronized
    host-clock readings) and as many ``Timer.timeit`` readings of as many calls, in turns: after each host
    sample, one Timer reading. ``{"host": ..., "timer": ...}``, each a median and its details, or the error
    that clock met.

    Both are host clocks around blocks of calls. Where a call's host cost drifts within the process (a Numba
    call read 116-656 us across one process's host samples on the H100), two clocks read one after
    the other read two different hosts: 16 of crosscheck's 17 failing pairs there were host ~ Timer. Three
    ``blocked_autorange`` readings spread over ten host samples still differed where the host moved between
    them (the H100: 114 host pairs whose samples spanned more than 3%, gelu-formula 256x256 +6.9%):
    two medians of unequal counts, taken at different moments, see different shares of the slow spells.
    Equal blocks in pairs, side by side, see them in the same shares. The span of the host samples is kept:
    it still tells a host whose cost drifts.

    Medians of ten pairs still move with a few slow spells (the H100: square-numba-flat 1024x1024's
    host samples spanned 112-430 us and Timer's 111-274 us, medians 7% apart, and 0.05% apart when rerun alone),
    so the pair's agreement is the median of each pair's ratio (``host_pair_ratio``): a spell that lands in one
    clock's block moves one ratio, not the median.

    Twenty ratios are still too few where the host's cost of a call wanders by a third within a process
    (the H100: mean-compile 1048576's blocks read 68-93 us a call; the median of 20 ratios said
    -3.15% where the medians were 0.46% apart; square-compile 64x64 read 31.6-52.1 us and +5.90%). So more
    pairs are taken, ``samples`` at a time up to ``max_pairs``, until the median ratio's 95% interval lies
    within ``ratio_ci_pct`` of it; a quiet case stops at the first ``samples``.
    """
    number = plan_host(case.call, case.device)
    timer, host, found, timer_error = _timer(case), [], [], None
    ratios: list[float] = []
    interval = (0.0, 0.0)  # the median ratio's 95% interval, as of the last batch
    max_pairs = max(samples, max_pairs or samples)
    while len(host) < max_pairs:
        for _ in range(samples):
            host.append(block_s(case.call, case.device, number))
            if timer_error is None:
                try:
                    found.append(timer.timeit(number))
                except Exception as exc:  # Timer's error; host mode's samples go on
                    timer_error = exc
        if timer_error is not None:
            break
        ratios = [h / t.median for h, t in zip(host, found)]
        interval, middle = median_interval(ratios), _median(ratios)
        if max(middle - interval[0], interval[1] - middle) <= middle * ratio_ci_pct / 100:
            break
    case.check(case.call())
    timer_reading, host_details = timer_error, {"host_number": number, "host_samples": len(host),
                                                "host_min_s": min(host), "host_max_s": max(host)}
    if timer_error is None:
        median, details = _timer_reading(found)
        timer_reading = (median, {**details, "timer_paired": True})  # agreement: no drift excuse for a pair
        host_details.update(host_pair_ratio=middle, host_pair_ratio_ci=list(interval))
    return {"host": (_median(host), host_details), "timer": timer_reading}


def median_interval(values: list[float], z: float = 1.96) -> tuple[float, float]:
    """A distribution-free 95% interval of the median: the order statistics of ranks n/2 - z*sqrt(n)/2 and
    1 + n/2 + z*sqrt(n)/2 (the binomial's normal approximation)."""
    ordered = sorted(values)
    n = len(ordered)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half) - 1)  # ranks are 1-based
    hi = min(n - 1, math.ceil(1 + n / 2 + half) - 1)
    return ordered[lo], ordered[hi]


def do_bench_peer(case, warmup_ms: float, rep_ms: float) -> tuple[float, dict]:
    """``triton.testing.do_bench(fn, return_mode="median")``: each call between events after an L2 flush."""
    times = do_bench_times(case, warmup_ms, rep_ms)
    return _median(times), {"do_bench_calls": len(times)}


def do_bench_times(case, warmup_ms: float, rep_ms: float) -> list[float]:
    """Every call's seconds from one ``triton.testing.do_bench(fn, return_mode="all")``."""
    import triton.testing

    return [ms / 1e3 for ms in triton.testing.do_bench(case.call, warmup=warmup_ms, rep=rep_ms, return_mode="all")]


def cold_and_do_bench(case, plan: timing.WarmPlan, budgets: Budgets, cpu_path: bool
                      ) -> dict[str, tuple[float, dict] | Exception]:
    """The suite's cold mode and ``do_bench`` in ``cold_rounds`` rounds, in turns; each the median of its pooled
    calls. ``{"cold": ..., "do_bench": ...}``, each a median and its details, or the error that clock met.

    Both flush L2 before each call, so what they read also depends on where the process's memory happens to
    sit and on the DRAM's state at the moment: one block of 30 cold samples read square-triton-flat1024
    4096x4096 at 51.0 us in a crosscheck on the H100 against do_bench's 49.8 (+2.4%), and 49.2-49.4
    against 50.1 rerun alone. Rounds in turns put a slow spell into both clocks alike, as host mode's pairs do.
    On the CPU path do_bench has no reading, and cold mode takes its samples in the same rounds.
    """
    hold = timing.grown_hold(plan.host_per_call_s)
    cold, bench = [], []
    bench_error: Exception | None = None
    taken = 0  # cold mode drops a sample its hold may not have covered (timing.ColdHold): kept <= taken
    for _ in range(max(1, budgets.cold_rounds)):
        taken += budgets.cold_samples
        cold += timing.time_cold(case.call, case.device, budgets.cold_samples, _flusher(case.device), hold_s=hold)
        if cpu_path or bench_error is not None:
            continue
        try:
            bench += do_bench_times(case, budgets.do_bench_warmup_ms, budgets.do_bench_rep_ms)
        except Exception as exc:  # do_bench's error; cold mode's rounds go on
            bench_error = exc
    case.check(case.call())
    found: dict[str, tuple[float, dict] | Exception] = {
        "cold": (_median(cold), {"cold_samples": len(cold), "cold_taken": taken, "cold_hold_s": hold,
                                 "cold_rounds": budgets.cold_rounds})}
    if not cpu_path:
        found["do_bench"] = bench_error or (_median(bench), {"do_bench_calls": len(bench)})
    return found


def cudagraph_peer(case, rep_ms: float) -> tuple[float, dict]:
    """``triton.testing.do_bench_cudagraph(fn, return_mode="median")``: a graph of rep_ms of calls, replayed."""
    import triton.testing

    ms = triton.testing.do_bench_cudagraph(case.call, rep=rep_ms, return_mode="median")
    return _median([ms / 1e3]), {}


def host_per_call(case, calls: int, readings: int = 3) -> float:
    """Host seconds a call costs: ``calls`` calls with no synchronize in between, host clock, / calls.

    On a GPU the calls are only enqueued (a few dozen launches never fill
    CUDA's queue, so the GPU does not push back): what is left is the host's
    own path, Python, the framework's dispatch and the driver's launch, plus
    any wait a call makes on the GPU itself. On the CPU the calls are
    synchronous: this is their whole time. The median of ``readings``.
    """
    found = []
    for _ in range(readings):
        if case.device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            case.call()
        found.append((time.perf_counter() - t0) / calls)
    if case.device == "cuda":
        torch.cuda.synchronize()
    return _median(found)


_FLUSH_S: list[float] = []


def do_bench_flush_s(samples: int = 10) -> float:
    """GPU seconds of one of do_bench's L2 flushes (its cache buffer zeroed, between events), measured once."""
    if not _FLUSH_S:
        from triton import runtime

        driver = runtime.driver.active
        cache = driver.get_empty_cache_for_benchmark()
        clear = getattr(driver, "clear_cache", None) or (lambda buffer: buffer.zero_())  # older triton: zero_()
        clear(cache)
        times = []
        for _ in range(samples):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            clear(cache)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        del cache
        _FLUSH_S.append(_median(times))
    return _FLUSH_S[0]


# --- one case --------------------------------------------------------------------------------------------------------

def _reading(found: tuple[float, dict] | Exception) -> tuple[float, dict]:
    if isinstance(found, Exception):
        raise found
    return found


def _run(rec: Record, clock: str, fn: Callable[[], tuple[float, dict]]) -> None:
    """One clock into the record: its median, or why it is missing; the other clocks go on."""
    try:
        value, details = fn()
    except timing.GraphUnavailable as exc:
        rec.skipped[clock] = str(exc)
        return
    except Exception as exc:  # this clock's error; the case's other clocks still run
        rec.errors[clock] = f"{type(exc).__name__}: {exc}"
        if rec.device == "cuda":
            try:
                torch.cuda.synchronize()
            except Exception:
                pass
        return
    rec.seconds[clock] = value
    rec.details.update(details)


def _free(device: str) -> None:
    """Drop every prepared case (a 16384x16384 float32 input is 1 GiB) and give the memory back."""
    cases._CASES.clear()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def measure_case(spec: CaseSpec, budgets: Budgets, device: str, log: Callable[[str], None] = lambda _: None
                 ) -> Record:
    """Every clock on one case; the record says what was measured, skipped (why) or failed (what)."""
    v = VARIANTS[spec.variant]
    rec = Record(op=spec.op, variant=spec.variant, backend=v.backend, size=spec.size, dtype=spec.dtype, device=device,
                 seconds={c: None for c in CLOCKS})
    t0 = time.perf_counter()
    why = skip_reason(spec, device)
    if why:
        rec.status, rec.reason = SKIPPED, why
        return rec
    try:
        log("checking against the float64 reference")
        case = cases.prepare(spec.op, spec.variant, spec.size, spec.dtype)
    except NotImplementedError as exc:
        rec.status, rec.reason = SKIPPED, str(exc)
        return rec
    except Exception as exc:  # a wrong answer (RuntimeError), or out of memory: the case fails, the run goes on
        rec.status, rec.reason = FAILED, f"{type(exc).__name__}: {exc}"
        _free(device)
        return rec
    try:
        log("planning warm mode")
        plan = timing.plan_warm(case.call, case.device)
    except Exception as exc:
        rec.status, rec.reason = FAILED, f"planning warm mode: {type(exc).__name__}: {exc}"
        del case
        _free(device)
        return rec
    rec.details["rel_err"] = case.rel_err
    try:
        cpu_path = device != "cuda"

        log("warm, then host mode and Timer in turns")
        _run(rec, "warm", lambda: suite_warm(case, plan, budgets.warm_samples))
        try:
            paired = host_and_timer(case, budgets.host_samples, budgets.host_max_pairs, budgets.host_ratio_ci_pct)
        except Exception as exc:  # host mode's own error: neither clock has a reading
            paired = {"host": exc, "timer": exc}
        _run(rec, "timer", lambda: _reading(paired["timer"]))
        _run(rec, "host", lambda: _reading(paired["host"]))

        log("cold mode and do_bench in turns")
        try:
            cold = cold_and_do_bench(case, plan, budgets, cpu_path)
        except Exception as exc:  # cold mode's own error: neither clock has a reading
            cold = {"cold": exc, "do_bench": exc}
        _run(rec, "cold", lambda: _reading(cold["cold"]))
        if cpu_path:
            rec.skipped["do_bench"] = GPU_ONLY["do_bench"] + CPU_PATH
        else:
            _run(rec, "do_bench", lambda: _reading(cold["do_bench"]))

        log("graph, then do_bench_cudagraph")
        if cpu_path:
            rec.skipped["graph"] = GPU_ONLY["graph"] + CPU_PATH
            rec.skipped["do_bench_cudagraph"] = GPU_ONLY["do_bench_cudagraph"] + CPU_PATH
        else:
            _run(rec, "graph", lambda: suite_graph(case, plan, budgets.graph_samples))
            _run(rec, "do_bench_cudagraph", lambda: cudagraph_peer(case, budgets.cudagraph_rep_ms))

        log("the host's cost of a call")
        try:
            rec.host_per_call_s = host_per_call(case, budgets.host_calls)
        except Exception as exc:
            rec.errors["host"] = f"{type(exc).__name__}: {exc}"
        if not cpu_path:
            try:
                rec.flush_s = do_bench_flush_s()
            except Exception as exc:
                rec.errors["flush"] = f"{type(exc).__name__}: {exc}"
    finally:
        del case
        _free(device)
    rec.diff_pct = diffs(rec)
    rec.wall_s = time.perf_counter() - t0
    rec.status = MEASURED
    return rec
