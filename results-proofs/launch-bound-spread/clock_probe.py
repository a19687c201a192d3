"""Where the spread of small-size warm timings between runs comes from: the SM clock after a fresh start.

Each case runs in REPS fresh processes, as asv runs it (a new process per
benchmark, the GPU idle in between), once timing straight away and once after
``settle_clock()``. Every sample records its time per call, the SM clock its
spin read, and when it was taken. The summary shows, per case and setting,
the spread of the per-process medians, and the clock of the first samples
against the later ones.

Usage (on the GPU box):  python3 results-proofs/launch-bound-spread/clock_probe.py [--json OUT.json] [--reps N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CASES = [("softmax", "softmax-torch", "64x64"), ("softmax", "softmax-manual", "256x256"),
         ("square", "square-torch", "64x64"), ("square", "square-triton-row", "1024x1024"),
         ("square", "square-torch", "16384x16384")]
SAMPLES = 30
PAUSE_S = 0.5  # idle GPU between processes, as between asv's benchmark processes


def settle_clock(max_s: float = 0.3, chunk_s: float = 2e-3, near: float = 0.97) -> list[float]:
    """Spin until the SM clock reads within ``near`` of its max, or two readings agree within 0.5% (at most max_s).

    The candidate fix this probe tested: the clock was already at its max in
    every fresh process, so the suite does not settle (the readings stay in
    every sample's clock log instead).
    """
    import torch

    from kernelscope.timing import clocks, primitives

    top, readings = clocks.max_sm_mhz(), []
    deadline = time.perf_counter() + max_s
    while time.perf_counter() < deadline:
        spin = clocks.ProbedSpin(chunk_s)
        start = torch.cuda.Event(enable_timing=True)
        start.record()
        start.synchronize()
        readings.append(spin.mhz(start))
        if (top and readings[-1] >= near * top) or (len(readings) >= 3 and abs(readings[-1] / readings[-2] - 1) < 0.005):
            break
    if readings:  # holds are sized in cycles: convert at the settled clock
        primitives._SPIN_CYCLES_PER_S = readings[-1] * 1e6
    return readings


def in_fresh_process(script: str, *args: str) -> dict | None:
    """``script --child ARGS`` in a new process, as asv runs each benchmark: its JSON, or None (stderr shown)."""
    out = subprocess.run([sys.executable, script, "--child", *args], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        print(out.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def child_or_options(doc: str, child, nargs: int):
    """The probes' command line: run ``child`` and return None under ``--child``, else the parsed options."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=nargs, help=argparse.SUPPRESS)
    ap.add_argument("--procs", type=int, default=5, help="fresh processes per case (placement, process probes)")
    ap.add_argument("--reps", type=int, default=4, help="fresh processes per case and setting (clock probe)")
    ap.add_argument("--json", help="write every record here")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return None
    return args


def child(op: str, variant: str, size: str, settle: bool) -> dict:
    t0 = time.perf_counter()
    import torch

    from kernelscope import timing
    from kernelscope.timing import clocks
    from kernelscope.timing.cases import prepare

    case = prepare(op, variant, size, "float32")
    settled = settle_clock() if settle else []
    plan = timing.plan_warm(case.call, "cuda")
    clock = timing.HeldClock(plan.hold_s)
    samples = []
    for _ in range(SAMPLES):
        per_call = clock.sample(case.call, plan.number) / plan.number
        samples.append([round(time.perf_counter() - t0, 4), per_call, clock.watch.readings[-1]])
    torch.cuda.synchronize()
    return {"case": f"{variant} {size}", "settle": settle, "number": plan.number, "hold_us": plan.hold_s * 1e6,
            "settle_mhz": settled, "starved": clock.starved, "max_mhz": clocks.max_sm_mhz(),
            "spin_rate_mhz": timing.spin_cycles_per_second() / 1e6, "samples": samples}


def summarize(runs: list[dict]) -> list[str]:
    lines = []
    for case in dict.fromkeys(r["case"] for r in runs):
        for settle in (False, True):
            mine = [r for r in runs if r["case"] == case and r["settle"] == settle]
            medians = [statistics.median(s[1] for s in r["samples"][5:]) for r in mine]
            first = [statistics.median(s[2] for s in r["samples"][:5]) for r in mine]
            later = [statistics.median(s[2] for s in r["samples"][5:]) for r in mine]
            spread = max(medians) / min(medians) - 1
            lines.append(
                f"{case:<32} settle={'yes' if settle else 'no ':<3} medians "
                + " ".join(f"{m * 1e6:8.3f}" for m in medians)
                + f" us  spread {spread:6.2%}  clock first5 {statistics.mean(first):6.0f}"
                f" later {statistics.mean(later):6.0f} MHz  number {mine[0]['number']}"
                f"  starved {sum(r['starved'] for r in mine)}")
    return lines


def main() -> int:
    args = child_or_options(__doc__, lambda op, variant, size, settle: child(op, variant, size, settle == "1"), 4)
    if args is None:
        return 0
    runs = []
    for op, variant, size in CASES:
        for settle in ("0", "1"):
            for _ in range(args.reps):
                time.sleep(PAUSE_S)
                run = in_fresh_process(__file__, op, variant, size, settle)
                if run is None:
                    continue
                runs.append(run)
                print(f"{variant} {size} settle={settle}: {runs[-1]['samples'][-1][1] * 1e6:.3f} us, "
                      f"clock {runs[-1]['samples'][0][2]:.0f} -> {runs[-1]['samples'][-1][2]:.0f} MHz", flush=True)
    for line in summarize(runs):
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
