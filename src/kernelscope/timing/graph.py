"""Graph mode: calls captured into a CUDA graph, the graph settled, then its replays timed.

See :mod:`kernelscope.timing`.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from kernelscope.timing import clocks
from kernelscope.timing.clocks import ClockWatch, ProbedSpin
from kernelscope.timing.primitives import budget


class GraphUnavailable(RuntimeError):
    pass


def capture_graph(fn: Callable[[], torch.Tensor], calls: int):
    """Capture ``calls`` back-to-back calls of ``fn`` into a CUDA graph.

    Returns the graph and the output of its last call (valid after each replay).
    Each call's output is released before the next call runs, so the graph's
    memory pool hands the same block to every call: one output alive, as in
    warm mode, where the caching allocator does the same. Holding each output
    until the next one was made (two 1 GiB outputs alternating at 2^28
    elements) read 3-16% slow, in samples that jumped between the warm time
    and the slow one.
    """
    if not torch.cuda.is_available():
        raise GraphUnavailable("CUDA graphs need a GPU")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):  # warm up on the capture stream (allocator, lazy inits)
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            out = None
            for _ in range(calls):
                out = None  # freed within the capture: the next call's output takes its block
                out = fn()
    except Exception as exc:  # e.g. a library that synchronizes inside the call
        torch.cuda.synchronize()
        raise GraphUnavailable(f"graph capture failed: {type(exc).__name__}: {exc}") from exc
    return graph, out


GRAPH_SPIN_S = 50e-6  # before each replay: reads the clock, and covers the host's graph launch
# After capture, replays untimed for this long (at least GRAPH_SETTLE_MIN of them) before
# the first sample: the first replays of a freshly captured graph can read slow.
GRAPH_SETTLE_S = 25e-3
GRAPH_SETTLE_MIN = 3


def settle_graph(graph, seconds: float = GRAPH_SETTLE_S, least: int = GRAPH_SETTLE_MIN) -> int:
    """Replay ``graph`` untimed, each replay waited for, for ``seconds`` and ``least`` replays; how many ran.

    The first replay also uploads the graph. At 2^28 elements (a 1 GiB output)
    up to a third of the first 30 replays after a capture read 16% slow (829 us
    a call against 712) on the H100, and none after them
    (results-proofs/graph-mode-large): do_bench_cudagraph replays
    its graph while estimating, before it times, which is why it never saw them.
    """
    deadline, ran = time.perf_counter() + seconds, 0
    while ran < max(1, least) or time.perf_counter() < deadline:
        graph.replay()
        torch.cuda.current_stream().synchronize()
        ran += 1
    return ran


GRAPH_RETAKES = 2  # rounds in which samples whose probe read a low clock are taken again (version 8)
GRAPH_RETAKE_SPIN_S = 1e-3  # a retake's spin: outlasts a host up to 1 ms slow to queue a sample


def time_graph(graph, calls: int, samples: int, max_time: float = 3.0, watch: ClockWatch | None = None,
               settle_s: float = GRAPH_SETTLE_S) -> list[float]:
    """Seconds per call from timed replays of a graph of ``calls`` calls (``watch``: each sample's SM clock).

    The graph first settles (``settle_graph``); then the replays are queued
    back to back, each between events behind a spin that outlasts the host's
    graph launch (version 7). Waiting for each replay before queuing the next
    (version 5) leaves idle gaps in which the SM clock sags: graph samples read
    under 75% of the maximum clock in 115-217 cases of a full H100 run, against
    5 with replays back to back (the stored clock logs of 03708299, e972512d and
    76de865e).

    Version 8 takes again, behind a longer spin, the samples whose probe read
    the clock under ``THROTTLE_FRACTION`` of its maximum (:func:`keep_unthrottled`):
    the GPU waited for the host there (or throttled), and a replay queued late
    behind its start event reads the wait. Two same-commit runs on one H100
    differed by 12-18% on four 1-2 us graph cases, three of them with such
    readings in most samples of the slow run (results-proofs/graph-clock-retakes).
    """
    watch = watch if watch is not None else ClockWatch(None)
    if watch.max_mhz is None:
        watch.max_mhz = clocks.max_sm_mhz()
    settle_graph(graph, settle_s, GRAPH_SETTLE_MIN if settle_s > 0 else 1)  # 0: the upload alone

    def take(n: int | None, spin_s: float) -> list[tuple[float, float | None]]:
        pairs = []
        for _ in (budget(samples, max_time) if n is None else range(n)):
            spin = ProbedSpin(spin_s)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            pairs.append((spin, start, end))
        torch.cuda.synchronize()
        return [(s.elapsed_time(e) / 1e3 / calls, spin.mhz(s)) for spin, s, e in pairs]

    first = take(None, GRAPH_SPIN_S)
    return keep_unthrottled(first, lambda n: take(n, GRAPH_RETAKE_SPIN_S), watch)


def keep_unthrottled(batch: list[tuple[float, float | None]], retake: Callable[[int], list[tuple[float, float | None]]],
                     watch: ClockWatch, rounds: int = GRAPH_RETAKES) -> list[float]:
    """The samples of ``batch`` (seconds, probe MHz), those read at a low clock replaced by ``retake(n)``'s.

    As nvbench drops a throttled sample and measures again. Every reading goes
    into ``watch`` (the clock log keeps them all); a sample still low after
    ``rounds`` retakes is kept, so the result always has as many samples as
    the first batch and a GPU that stays throttled shows in it.
    """
    kept: list[float] = []
    for round_ in range(rounds + 1):
        low = 0
        for seconds, mhz in batch:
            throttled = mhz is not None and watch.add(mhz)
            if throttled and round_ < rounds:
                low += 1
            else:
                kept.append(seconds)
        if not low:
            break
        watch.retaken += low
        batch = retake(low)
    return kept
