"""Does an elementwise kernel's time at 2^28 elements depend on where its output sits relative to its input?

`kernelscope crosscheck` on the H100 (dc8a635, one process for every case) put graph mode at
16384x16384 up to 15% above do_bench_cudagraph on the same callable (square-torch 790 us
against 712), where asv's own track_graph, one process per case, agreed with warm within
0.15%. Graph capture allocates the output in a fresh segment of the graph's private pool;
warm mode reuses a block of the default pool. This probe writes ``x * x`` for a 1 GiB ``x``
into views of one large buffer at offsets from 0 to 64 MiB (eager, events around 5 calls,
median of 9 samples), then captures graphs after freeing or holding blocks of several sizes,
so the output lands elsewhere each time, and times their replays (min, median, max of 20):
a bimodal or offset-dependent time says the cost is placement, not the clock.

Usage (GPU box): python3 results-proofs/graph-mode-large/placement_offset_probe.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

N = 1 << 28
MIB = 1 << 20


def events_time(fn, calls: int = 5, samples: int = 9) -> list[float]:
    out = []
    for _ in range(samples):
        torch.cuda._sleep(1_000_000)  # keep the queue ahead of the GPU
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1e3 / calls)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json")
    args = ap.parse_args()
    x = torch.randn(N, device="cuda")
    big = torch.empty(N + 64 * MIB // 4, device="cuda")
    rows = {"eager_offset_mib": {}, "graph_after_padding_mib": {}}
    print("eager x*x into a view at an offset (us per call: median [min, max])")
    for off_mib in [0, 0.0625, 0.5, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]:
        off = int(off_mib * MIB) // 4
        y = big[off:off + N]
        t = events_time(lambda: torch.mul(x, x, out=y))
        rows["eager_offset_mib"][off_mib] = t
        print(f"  offset {off_mib:7.4f} MiB  {statistics.median(t):8.1f}  [{min(t):.1f}, {max(t):.1f}]"
              f"  y-x = {(y.data_ptr() - x.data_ptr()) / MIB:.2f} MiB")
    del big
    torch.cuda.empty_cache()
    print("graph of 3 calls of x*x, output in the graph's pool, after holding a pad (us per call over 20 replays)")
    for pad_mib in [0, 2, 4, 8, 16, 32, 64, 128, 512]:
        pad = torch.empty(max(1, pad_mib * MIB // 4), device="cuda")
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                x * x
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            out = None
            for _ in range(3):
                out = None
                out = x * x
        g.replay()
        t = []
        for _ in range(20):
            torch.cuda._sleep(100_000)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            t.append(a.elapsed_time(b) * 1e3 / 3)
        rows["graph_after_padding_mib"][pad_mib] = t
        print(f"  pad {pad_mib:4d} MiB  {statistics.median(t):8.1f}  [{min(t):.1f}, {max(t):.1f}]"
              f"  out-x = {(out.data_ptr() - x.data_ptr()) / MIB:.2f} MiB")
        del g, out, pad
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
