"""Where a call's host time goes, per backend.

For one launch-bound case per launch path, on the suite's own checked callable
(``kernelscope.timing.cases.prepare``): the host time per call of a loop of calls
(no synchronize between them, the median of 5 blocks), then the same loop under
cProfile, its functions ranked by their own time. cProfile adds its cost to every
Python call, so its shares are a map of the path, not a clock: the loop's time is the clock.

Usage (GPU box): python3 results-proofs/host-cost/launch_path_probe.py [--calls 2000] [--out DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import time
from pathlib import Path

import torch

from kernelscope.timing import cases

CASES = [
    ("square", "square-torch", "64x64"),
    ("square", "square-compile", "64x64"),
    ("square", "square-triton-flat1024", "64x64"),
    ("square", "square-triton-direct", "64x64"),
    ("square", "square-cuda-vec4", "64x64"),
    ("square", "square-numba-lecture", "64x64"),
    ("square", "square-numba-flat", "64x64"),
    ("square", "square-numba-direct", "64x64"),
    ("mean", "mean-numba", "4096"),
    ("softmax", "softmax-numba", "64x64"),
    ("softmax", "softmax-triton-tuned", "1024x1024"),
]


def per_call_us(fn, calls: int) -> list[float]:
    blocks = []
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        blocks.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return blocks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--top", type=int, default=18)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    out = Path(args.out)
    summary = []
    for op, variant, size in CASES:
        case = cases.prepare(op, variant, size, "float32")
        fn = case.call
        for _ in range(50):
            fn()
        calls = args.calls if "numba" not in variant else args.calls // 4
        blocks = per_call_us(fn, calls)
        prof = cProfile.Profile()
        torch.cuda.synchronize()
        prof.enable()
        for _ in range(calls):
            fn()
        prof.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        stats = pstats.Stats(prof, stream=text)
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)
        (out / f"{variant}-{size}.prof.txt").write_text(text.getvalue())
        rows = sorted(((v[2], v[3], v[1], f"{Path(k[0]).name}:{k[1]}({k[2]})") for k, v in stats.stats.items()),
                      reverse=True)  # (own s, cumulative s, calls, function)
        total = sum(r[0] for r in rows)
        top = [{"function": f, "calls_per_call": n / calls, "own_us_per_call": own / calls * 1e6,
                "cum_us_per_call": cum / calls * 1e6, "own_share": own / total} for own, cum, n, f in rows[:args.top]]
        summary.append({"variant": variant, "size": size, "calls": calls, "per_call_us": blocks,
                        "profiled_us_per_call": total / calls * 1e6, "top": top})
        print(f"== {variant} {size}: {statistics.median(blocks):.1f} us a call (blocks "
              f"{min(blocks):.1f}-{max(blocks):.1f}); under cProfile {total / calls * 1e6:.1f} us, "
              f"{sum(r[2] for r in rows) / calls:.0f} Python calls a call", flush=True)
        for t in top[:10]:
            print(f"   {t['own_share']:6.1%} own {t['own_us_per_call']:7.2f} us  cum {t['cum_us_per_call']:7.2f} us  "
                  f"x{t['calls_per_call']:.1f}  {t['function']}")
        del case, fn
        cases._CASES.clear()
    (out / "launch-path.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
