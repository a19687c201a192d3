"""Why does host mode disagree with ``torch.utils.benchmark.Timer`` on the same callable?

`kernelscope crosscheck` on the H100 at 97e0347 put host mode (10 samples of about 20 ms,
their median) beside one ``Timer.blocked_autorange(min_run_time=0.02)`` on the same
``case.call``, right after each other in one process: 91 of 135 pairs of 50 us or more within
2%, and the rest both ways (softmax-manual 512x50257: host 338 us, warm 335, Timer 484;
mean-numba 4096: host 293, Timer 891; square-compile 64x64: host 54, Timer 44).

Here each of those cases is measured several times over, each way in turn, with what each
way does differently switched on or off: Timer's one block against its median of several;
Python's garbage collector (``timeit`` turns it off, host mode leaves it on); and each call's
own host time in a long loop, to see whether a few slow calls (a collection, an allocator
flush, a clock change) carry the difference. The SM clock is read before and after each.

Usage (GPU box): python3 results-proofs/host-mode-vs-timer/timer_probe.py [--reps 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

import torch

from kernelscope.timing import cases
from kernelscope.timing.host import plan_host, time_host

CASES = [
    ("softmax", "softmax-manual", "512x50257"),
    ("mean", "mean-triton-lecture", "1048576"),
    ("mean", "mean-numba", "4096"),
    ("gelu", "gelu-numba", "256x256"),
    ("square", "square-numba-lecture", "256x256"),
    ("square", "square-torch", "4096x4096"),
]


def sm_mhz() -> float | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return float(pynvml.nvmlDeviceGetClockInfo(pynvml.nvmlDeviceGetHandleByIndex(0), pynvml.NVML_CLOCK_SM))
    except Exception:
        return None


def timer(fn, min_run_time: float):
    from torch.utils.benchmark import Timer

    m = Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()).blocked_autorange(
        min_run_time=min_run_time)
    return {"median_us": m.median * 1e6, "number": m.number_per_run, "blocks": len(m.raw_times),
            "blocks_us": [t / m.number_per_run * 1e6 for t in m.raw_times]}


def host(fn, gc_off: bool):
    was = gc.isenabled()
    if gc_off:
        gc.disable()
    try:
        number = plan_host(fn, "cuda")
        times = time_host(fn, "cuda", 10, number)
    finally:
        if was:
            gc.enable()
    return {"median_us": statistics.median(times) * 1e6, "number": number,
            "samples_us": [t * 1e6 for t in times]}


def per_call(fn, calls: int = 400):
    """Each call's host time in a loop of ``calls`` (no synchronize between): which calls are slow."""
    torch.cuda.synchronize()
    stamps = [time.perf_counter()]
    for _ in range(calls):
        fn()
        stamps.append(time.perf_counter())
    torch.cuda.synchronize()
    end = time.perf_counter()
    each = sorted((b - a) * 1e6 for a, b in zip(stamps, stamps[1:]))
    return {"mean_us": (end - stamps[0]) / calls * 1e6, "median_us": each[calls // 2],
            "p90_us": each[int(calls * 0.9)], "max_us": each[-1], "top5_us": each[-5:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    out = []
    for op, variant, size in CASES:
        case = cases.prepare(op, variant, size, "float32")
        fn = case.call
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        rows = []
        for rep in range(args.reps):
            row = {"rep": rep, "mhz_before": sm_mhz()}
            row["timer_0.02"] = timer(fn, 0.02)
            row["host"] = host(fn, gc_off=False)
            row["host_gc_off"] = host(fn, gc_off=True)
            row["timer_0.2"] = timer(fn, 0.2)
            row["per_call"] = per_call(fn)
            row["mhz_after"] = sm_mhz()
            rows.append(row)
            print(f"{variant} {size} rep {rep}: Timer(0.02) {row['timer_0.02']['median_us']:.1f} "
                  f"(x{row['timer_0.02']['number']}, {row['timer_0.02']['blocks']} blocks)  "
                  f"host {row['host']['median_us']:.1f} [{min(row['host']['samples_us']):.1f}-"
                  f"{max(row['host']['samples_us']):.1f}] x{row['host']['number']}  "
                  f"host gc off {row['host_gc_off']['median_us']:.1f}  "
                  f"Timer(0.2) {row['timer_0.2']['median_us']:.1f} (x{row['timer_0.2']['number']}, "
                  f"{row['timer_0.2']['blocks']} blocks: {min(row['timer_0.2']['blocks_us']):.1f}-"
                  f"{max(row['timer_0.2']['blocks_us']):.1f})  "
                  f"loop: mean {row['per_call']['mean_us']:.1f} median {row['per_call']['median_us']:.1f} "
                  f"p90 {row['per_call']['p90_us']:.1f} max {row['per_call']['max_us']:.0f}  "
                  f"SM {row['mhz_before']}->{row['mhz_after']} MHz", flush=True)
        out.append({"op": op, "variant": variant, "size": size, "rows": rows})
        del case, fn
        cases._CASES.clear()
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
