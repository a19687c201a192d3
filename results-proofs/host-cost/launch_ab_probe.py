"""Launch paths side by side in one process: what a direct launch saves over its standard path.

A call's host cost moves between processes (one Triton call read 16.5-28.8 us in
three processes of one box at c426785) and drifts within one, so two paths read in
two processes, or one after the other, cannot be told apart by a few us. Here the
paths of one kernel, and a torch op as the yardstick, take turns in one process:
each round times a block of ``--calls`` calls of each (no synchronize between the
calls, one after the block; at 64x64 the GPU's 2 us never holds the host back), in
an order rotated every round. Per path: the median of its blocks; per direct path,
the median of its per-round ratio to its standard path, which drift moves for both.

Usage (GPU box): python3 results-proofs/host-cost/launch_ab_probe.py [--rounds 30] [--calls 500] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from kernelscope.timing import cases

# (standard path, direct path) of one kernel, and the yardstick every path is set against
PAIRS = [("square-numba-flat", "square-numba-direct"), ("square-triton-flat1024", "square-triton-direct")]
YARDSTICK = "square-torch"
SIZE = "64x64"


def block_us(fn, calls: int) -> float:
    """Host microseconds per call of ``calls`` calls, synchronized before and after."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def measure(variants: list[str], rounds: int, calls: int) -> dict[str, list[float]]:
    """Each variant's block times, one per round, the variants in an order rotated every round."""
    calls_of = {v: cases.prepare("square", v, SIZE, "float32").call for v in variants}  # checked, warmed up
    found: dict[str, list[float]] = {v: [] for v in variants}
    for r in range(rounds):
        k = r % len(variants)
        for v in variants[k:] + variants[:k]:
            found[v].append(block_us(calls_of[v], calls))
    return found


def summary(found: dict[str, list[float]]) -> dict:
    """Medians per path, each direct path's median ratio to its standard one, each path's over the yardstick."""
    out = {"per_call_us": {v: statistics.median(t) for v, t in found.items()},
           "spread_us": {v: [min(t), max(t)] for v, t in found.items()}, "direct_over_standard": {},
           "over_yardstick": {}}
    for v, t in found.items():
        out["over_yardstick"][v] = statistics.median(a / b for a, b in zip(t, found[YARDSTICK]))
    for standard, direct in PAIRS:
        if standard in found and direct in found:
            out["direct_over_standard"][direct] = statistics.median(
                a / b for a, b in zip(found[direct], found[standard]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--json", help="write the blocks and the summary here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("launch_ab_probe.py: needs a GPU (it times launches, which the CPU path has none of)")
    variants = [YARDSTICK, *(v for pair in PAIRS for v in pair)]
    found = measure(variants, args.rounds, args.calls)
    result = summary(found)
    print(f"{SIZE}, {args.rounds} rounds of {args.calls} calls per path, in turns (us per call on the host)")
    print(f"{'path':28s} {'median':>8s} {'min':>8s} {'max':>8s} {'/ ' + YARDSTICK:>16s} {'/ standard':>11s}")
    for v in variants:
        lo, hi = result["spread_us"][v]
        ratio = result["direct_over_standard"].get(v)
        print(f"{v:28s} {result['per_call_us'][v]:8.1f} {lo:8.1f} {hi:8.1f} {result['over_yardstick'][v]:16.2f} "
              f"{'' if ratio is None else f'{ratio:.2f}':>11s}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"size": SIZE, "rounds": args.rounds, "calls": args.calls, "blocks_us": found, **result}, f,
                      indent=1)


if __name__ == "__main__":
    main()
