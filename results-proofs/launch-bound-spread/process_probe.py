"""What a benchmark process brings to a 2 us kernel's time: its stream, its copy of the kernel's code, or graphs.

placement_probe.py showed the spread between processes is not where the
tensors sit. Here each process times one case on its default stream and on
STREAMS new streams, as a CUDA graph, and (for a Triton kernel) through
COPIES separately loaded copies of the same kernel code. What varies inside
a process, when the process-to-process spread stays, is what the method can
average over.

Usage (on the GPU box):  python3 results-proofs/launch-bound-spread/process_probe.py [--procs N] [--json OUT]
"""

from __future__ import annotations

import json
import inspect
import statistics

CASES = [("square", "square-torch", "64x64"), ("square", "square-triton-flat1024", "64x64"),
         ("softmax", "softmax-torch", "64x64")]
STREAMS = 4
COPIES = 4
SAMPLES = 9
HEADER = "import triton\nimport triton.language as tl\n\n"  # the project's flat square kernel, loaded anew per copy



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
        from kernelscope.backends.triton.square import square_flat_kernel

        source = HEADER + inspect.getsource(square_flat_kernel.fn)
        for i in range(COPIES):  # the same source in separate modules: separately loaded code
            path = os.path.join(folder, f"copy{i}.py")
            with open(path, "w") as f:
                f.write(source)
            spec = importlib.util.spec_from_file_location(f"copy{i}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            kernel = module.square_flat_kernel
            grid = (triton.cdiv(n, 1024),)
            found["copies"].append(median_of(lambda k=kernel: k[grid](case.x, y, n, BLOCK_SIZE=1024)))
    torch.cuda.synchronize()
    return found


def main() -> int:
    from clock_probe import child_or_options, in_fresh_process  # beside this script

    args = child_or_options(__doc__, child, 3)
    if args is None:
        return 0
    found = []
    us = lambda v: f"{v * 1e6:6.3f}"  # noqa: E731
    for case in CASES:
        for _ in range(args.procs):
            r = in_fresh_process(__file__, *case)
            if r is None:
                continue
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
