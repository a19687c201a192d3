"""Which earlier step of a process puts graph mode at 2^28 elements 10-16% over do_bench_cudagraph?

`kernelscope crosscheck --variant gelu-triton --size 16384x16384` in a fresh process (H100, 2859984)
read graph 826 us against do_bench_cudagraph 713 and warm 712, where the same capture in a
bare process (placement_offset_probe.py) and asv's own track_graph at c48bed92 read 713.
crosscheck's case runs warm, Timer, cold (the suite's L2 flusher), do_bench, then graph.
Here one process prepares the case, then measures the suite's graph mode (and
do_bench_cudagraph) after each of those steps in turn; then two other ways of replaying:
on a side stream (as do_bench_cudagraph does), and without the clock-probing spin.

At 987509e (H100) the slow replays appeared only in the first measurement after a capture,
whatever its spin or stream; later replays of the same graph were never slow. `sequence` shows each sample in order,
with and without timing.settle_graph (graph mode version 6).

Usage (GPU box): python3 results-proofs/graph-mode-large/graph_state_probe.py [VARIANT ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

from kernelscope import timing
from kernelscope.evidence.peers import measure
from kernelscope.asv import suite as asv_suite
from kernelscope.timing import cases

SIZE = "16384x16384"


def summary(times: list[float]) -> dict:
    lo = min(times)
    return {"median_us": statistics.median(times) * 1e6, "min_us": lo * 1e6, "max_us": max(times) * 1e6,
            "slow_share": sum(t > 1.03 * lo for t in times) / len(times)}


def replays(graph, calls: int, samples: int, spin_s: float = 0.0, probed: bool = False, side: bool = False
            ) -> list[float]:
    """Replays one at a time (each synchronized), each behind a spin of ``spin_s`` (none at 0): the suite's
    ProbedSpin (lead spin, marker event, spin) or one bare torch.cuda._sleep; on a side stream or the current one."""
    stream = torch.cuda.Stream() if side else torch.cuda.current_stream()
    out = []
    with torch.cuda.stream(stream):
        graph.replay()
        for _ in range(samples):
            if spin_s and probed:
                timing.ProbedSpin(spin_s)
            elif spin_s:
                timing.hold_stream(spin_s)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            graph.replay()
            b.record()
            b.synchronize()
            out.append(a.elapsed_time(b) / 1e3 / calls)
    return out


def prepared(variant: str):
    """The suite's checked case at SIZE, its warm plan, and the calls its graph mode captures."""
    case = cases.prepare(variant.split("-")[0], variant, SIZE, "float32")
    plan = timing.plan_warm(case.call, case.device)
    return case, plan, asv_suite.graph_calls(plan.per_call_s)


def spin_sweep(variant: str) -> list[dict]:
    """The slow share of replays against the spin before each: bare and probed, 0 to 1 ms."""
    case, _, calls = prepared(variant)
    graph, out = timing.capture_graph(case.call, calls)
    rows = []
    for probed in (False, True):
        for spin_us in (0, 25, 50, 80, 150, 300, 1000):
            t = summary(replays(graph, calls, 40, spin_us * 1e-6, probed))
            rows.append({"variant": variant, "probed": probed, "spin_us": spin_us, **t})
            print(f"{variant:18} {'probed' if probed else 'bare':6} spin {spin_us:5d} us: median {t['median_us']:7.1f}"
                  f"  max {t['max_us']:7.1f}  slow {t['slow_share']:4.0%}", flush=True)
    del graph, out
    return rows


def sequence(variant: str) -> list[dict]:
    """Each sample of the suite's graph mode in order, on a fresh capture, with and without the settle;
    fresh, and after the suite's cold mode ran (where the slow replays were most common)."""
    case, plan, calls = prepared(variant)
    rows = []
    for after in ("prepare", "cold"):
        if after == "cold":
            measure.suite_cold(case, plan, 30)
        for settle_s in (0.0, timing.GRAPH_SETTLE_S):
            graph, out = timing.capture_graph(case.call, calls)
            times = timing.time_graph(graph, calls, 60, settle_s=settle_s)
            del graph, out
            slow = [i for i, t in enumerate(times) if t > 1.03 * min(times)]  # summary's slow_share, by index
            t = summary(times)
            rows.append({"variant": variant, "sequence_after": after, "settle_s": settle_s, "calls": calls,
                         "times_us": [x * 1e6 for x in times], "slow_indices": slow, **t})
            print(f"{variant:18} after {after:8} settle {settle_s * 1e3:4.0f} ms: median {t['median_us']:7.1f}"
                  f"  slow {len(slow):2d}/{len(times)} at samples {slow}", flush=True)
    return rows


def probe(variant: str) -> list[dict]:
    case, plan, calls = prepared(variant)
    rows = []

    def graph_now(label: str) -> None:
        graph, out = timing.capture_graph(case.call, calls)
        suite = timing.time_graph(graph, calls, 30)
        side = replays(graph, calls, 30, side=True)
        plain = replays(graph, calls, 30)
        del graph, out
        peer = measure.cudagraph_peer(case, 100)[0]
        row = {"variant": variant, "after": label, "suite": summary(suite), "side_stream": summary(side),
               "no_spin": summary(plain), "do_bench_cudagraph_us": peer * 1e6}
        rows.append(row)
        print(f"{variant:18} after {label:10} suite {row['suite']['median_us']:7.1f} us "
              f"(slow {row['suite']['slow_share']:4.0%})  side stream {row['side_stream']['median_us']:7.1f}  "
              f"no spin {row['no_spin']['median_us']:7.1f}  do_bench_cudagraph {peer * 1e6:7.1f}", flush=True)

    graph_now("prepare")
    measure.suite_warm(case, plan, 15)
    graph_now("warm")
    measure.timer_peer(case, 0.2)
    graph_now("Timer")
    measure.suite_cold(case, plan, 30)
    graph_now("cold")
    measure.do_bench_peer(case, 25, 100)
    graph_now("do_bench")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variants", nargs="*", default=["gelu-triton", "square-torch"])
    ap.add_argument("--json")
    ap.add_argument("--sequence-only", action="store_true", help="only each sample in order, with and without the settle")
    args = ap.parse_args()
    rows = []
    for v in args.variants:
        rows += sequence(v)
        if not args.sequence_only:
            rows += spin_sweep(v)
            rows += probe(v)
        cases._CASES.clear()
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
