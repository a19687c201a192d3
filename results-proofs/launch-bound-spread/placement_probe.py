"""Is the run-to-run spread of a 2 us kernel a property of the process, or of where its tensors sit?

clock_probe.py showed it is not the SM clock: every process runs at the max
clock, its samples agree within 0.3%, yet process medians differ by up to 10%.
Here each process times one case at PLACEMENTS different allocations of its
input and output (each in its own block, at a random offset), then with every
sample's calls cycling over all of them. If the spread is placement, it shows
inside one process, and the cycling median agrees across processes.

Usage (on the GPU box):  python3 results-proofs/launch-bound-spread/placement_probe.py [--procs N] [--json OUT]
"""

from __future__ import annotations

import json
import random
import statistics

CASES = [("square", "square-torch", "64x64"), ("square", "square-triton-flat1024", "64x64"),
         ("softmax", "softmax-torch", "64x64"), ("softmax", "softmax-manual", "256x256")]
PLACEMENTS = 8
SAMPLES = 9


def child(op: str, variant: str, size: str) -> dict:
    import torch

    from kernelscope import timing
    from kernelscope.timing.cases import prepare

    from clock_probe import settle_clock  # beside this script

    case = prepare(op, variant, size, "float32")
    settle_clock()
    raw, takes_out = case.variant.function(), case.variant.takes_out
    keep, placed = [], []
    for _ in range(PLACEMENTS):
        block = torch.empty(4 * 2**20 // 4 + case.x.numel() * 2, device="cuda")  # its own block
        keep.append(block)
        at = random.randrange(0, 2**20 // 4, 64)  # a random 256-byte-aligned offset inside it
        x = block[at:at + case.x.numel()].view_as(case.x).copy_(case.x)
        out = block[at + case.x.numel():at + 2 * case.x.numel()].view_as(case.x) if takes_out else None
        placed.append((x, out))
    ring: list = [None] * PLACEMENTS

    def at(i):
        x, out = placed[i]
        return (lambda: raw(x, out)) if takes_out else (lambda: ring.__setitem__(i, raw(x)))

    calls = [at(i) for i in range(PLACEMENTS)]
    state = {"i": 0}

    def cycling():
        calls[state["i"] % PLACEMENTS]()
        state["i"] += 1

    plan = timing.plan_warm(case.call, "cuda")

    def median_of(fn):
        clock = timing.HeldClock(plan.hold_s)
        fn()
        return statistics.median(clock.sample(fn, plan.number) / plan.number for _ in range(SAMPLES))

    original = median_of(case.call)
    per_placement = [median_of(c) for c in calls]
    torch.cuda.synchronize()
    return {"case": f"{variant} {size}", "original": original, "placements": per_placement,
            "cycling": median_of(cycling), "number": plan.number}


def main() -> int:
    from clock_probe import child_or_options, in_fresh_process  # beside this script

    args = child_or_options(__doc__, child, 3)
    if args is None:
        return 0
    found = []
    for op, variant, size in CASES:
        runs = []
        for _ in range(args.procs):
            run = in_fresh_process(__file__, op, variant, size)
            if run is not None:
                runs.append(run)
        found += runs
        for r in runs:
            p = r["placements"]
            print(f"{r['case']:<28} as prepared {r['original'] * 1e6:6.3f}  placements "
                  f"{min(p) * 1e6:6.3f}..{max(p) * 1e6:6.3f} ({max(p) / min(p) - 1:5.1%})  cycling "
                  f"{r['cycling'] * 1e6:6.3f} us", flush=True)
        if runs:
            def spread(key):
                values = [r[key] for r in runs]
                return max(values) / min(values) - 1
            print(f"{runs[0]['case']:<28} across processes: as prepared {spread('original'):5.1%}, "
                  f"cycling {spread('cycling'):5.1%}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
