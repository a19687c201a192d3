"""Cross-check warm-mode asv timings against Nsight Compute's kernel durations.

For each case (kernels of 100 us or more, where launch overhead is negligible)
this runs a child process under ``ncu --profile-from-start off``; the child
warms the variant up, then opens the profiler around CALLS calls. The sum of
``gpu__time_duration`` over the profiled kernels, divided by CALLS, is the
kernel time per call, compared with the warm median stored by asv.

Usage (on the GPU box, after an asv run):
    python3 scripts/gpu/ncu_compare.py [--results-dir results] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys

CASES = [  # (variant, size); float32
    ("square-torch", "16384x16384"), ("square-triton-flat1024", "16384x16384"),
    ("square-cuda-vec4", "16384x16384"), ("square-numba-coalesced", "16384x16384"),
    ("gelu-torch", "16384x16384"), ("gelu-triton", "16384x16384"), ("gelu-cuda-lecture", "16384x16384"),
    ("softmax-torch", "16384x16384"), ("softmax-triton-row", "16384x16384"),
    ("softmax-triton-online", "512x50257"), ("mean-torch", "268435456"), ("mean-triton-tuned", "268435456"),
    ("mean-cuda", "268435456"), ("square-compile", "16384x16384"),
]
CALLS = 5


def child(variant: str, size: str) -> None:
    import torch

    from kernelscope.catalog import get
    from kernelscope.timing.cases import prepare

    case = prepare(get(variant).op, variant, size, "float32")
    for _ in range(3):
        case.call()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for _ in range(CALLS):
        case.call()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def ncu_time(variant: str, size: str) -> tuple[float, int]:
    cmd = ["ncu", "--profile-from-start", "off", "--clock-control", "none", "--cache-control", "none",
           "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base",
           sys.executable, __file__, "--child", variant, size]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = proc.stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if proc.returncode != 0 or start is None:
        raise RuntimeError(f"ncu failed for {variant} {size}: {proc.stderr[-2000:]}{proc.stdout[-2000:]}")
    rows = [r for r in csv.DictReader(io.StringIO("\n".join(lines[start:])))
            if r["Metric Name"] == "gpu__time_duration.sum"]
    total_ns = sum(float(r["Metric Value"].replace(",", "")) for r in rows)
    return total_ns / CALLS / 1e9, len(rows) // CALLS


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=2, metavar=("VARIANT", "SIZE"), help=argparse.SUPPRESS)
    ap.add_argument("--results-dir", default="results")
    ap.add_argument("--commit", help="compare with this commit's results (default: the newest per case)")
    ap.add_argument("--json", help="write the table as JSON here")
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return 0
    from kernelscope.results.export import rows

    # Without --commit, each case's newest result (by commit date) is compared.
    warm = {(r["variant"], r["size"]): r["time_s"]
            for r in sorted(rows(args.results_dir), key=lambda r: r["date"])
            if r["mode"] == "warm" and r["dtype"] == "float32" and (not args.commit or r["commit"].startswith(args.commit))}
    table = []
    for variant, size in CASES:
        ncu_s, kernels = ncu_time(variant, size)
        asv_s = warm.get((variant, size))
        diff = None if asv_s is None else 100 * (asv_s - ncu_s) / ncu_s
        table.append({"variant": variant, "size": size, "kernels_per_call": kernels, "ncu_us": ncu_s * 1e6,
                      "asv_warm_us": None if asv_s is None else asv_s * 1e6, "diff_pct": diff})
        print(f"{variant:<24} {size:>12} kernels/call {kernels}  ncu {ncu_s * 1e6:9.1f} us  "
              f"asv warm {'n/a' if asv_s is None else f'{asv_s * 1e6:9.1f} us'}  "
              f"diff {'n/a' if diff is None else f'{diff:+.2f}%'}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)
    worst = max((abs(t["diff_pct"]) for t in table if t["diff_pct"] is not None), default=float("nan"))
    print(f"worst |asv warm - ncu| / ncu over kernels >= 100 us: {worst:.2f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
