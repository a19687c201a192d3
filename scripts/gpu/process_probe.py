"""What a benchmark process brings to a 2 us kernel's time: its stream, its copy of the kernel's code, or graphs.

placement_probe.py showed the spread between processes is not where the
tensors sit. Here each process times one case on its default stream and on
STREAMS new streams, as a CUDA graph, and (for a Triton kernel) through
COPIES separately loaded copies of the same kernel code. What varies inside
a process, when the process-to-process spread stays, is what the method can
average over.

Usage (on the GPU box):  python3 scripts/gpu/process_probe.py [--procs N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import textwrap

CASES = [("square", "square-torch", "64x64"), ("square", "square-triton-flat1024", "64x64"),
         ("softmax", "softmax-torch", "64x64")]
STREAMS = 4
COPIES = 4
SAMPLES = 9
KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl

    @triton.jit
    def copy_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
        tl.store(y_ptr + offsets, (x * x).to(y_ptr.dtype.element_ty), mask=mask)
''')


def child(op: str, variant: str, size: str) -> dict:
    import importlib.util
    import os
    import tempfile

    import torch
    import triton

    from kernelscope import timing
    from kernelscope.timing.cases import prepare

    from clock_probe import settle_clock  # beside this script

    case = prepare(op, variant, size, "float32")
    settle_clock()
    plan = timing.plan_warm(case.call, "cuda")

    def median_of(fn):
        clock = timing.HeldClock(plan.hold_s)
        fn()
        return statistics.median(clock.sample(fn, plan.number) / plan.number for _ in range(SAMPLES))

    found = {"case": f"{variant} {size}", "default": median_of(case.call), "streams": []}
    for _ in range(STREAMS):
        with torch.cuda.stream(torch.cuda.Stream()):
            found["streams"].append(median_of(case.call))
    graph, _ = timing.capture_graph(case.call, 100)
    found["graph"] = statistics.median(timing.time_graph(graph, 100, SAMPLES))
    if variant == "square-triton-flat1024":
        found["copies"] = []
        y = torch.empty_like(case.x)
        n = case.x.numel()
        folder = tempfile.mkdtemp()
        for i in range(COPIES):  # the same source in separate modules: separately loaded code
            path = os.path.join(folder, f"copy{i}.py")
            with open(path, "w") as f:
                f.write(KERNEL)
            spec = importlib.util.spec_from_file_location(f"copy{i}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            kernel = module.copy_kernel
            grid = (triton.cdiv(n, 1024),)
            found["copies"].append(median_of(lambda k=kernel: k[grid](case.x, y, n, BLOCK_SIZE=1024)))
    torch.cuda.synchronize()
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--procs", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    found = []
    us = lambda v: f"{v * 1e6:6.3f}"  # noqa: E731
    for case in CASES:
        for _ in range(args.procs):
            out = subprocess.run([sys.executable, __file__, "--child", *case], capture_output=True, text=True,
                                 timeout=300)
            if out.returncode != 0:
                print(out.stderr[-1500:], file=sys.stderr)
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            found.append(r)
            print(f"{r['case']:<28} default {us(r['default'])}  streams {' '.join(us(s) for s in r['streams'])}"
                  f"  graph {us(r['graph'])}" + (f"  copies {' '.join(us(c) for c in r['copies'])}"
                                                  if 'copies' in r else ""), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
