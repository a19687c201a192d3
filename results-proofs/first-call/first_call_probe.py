"""Where a benchmark process's first call goes, per backend: the biggest fixed cost of a full run.

The H100's full run at c48bed92 (results-proofs/full-runs/h100-c48bed9/asv-full.cost.txt)
spent 42% of its 1,581 s of benchmark processes in first calls, with warm caches:
Numba 1.6 s, torch.compile 1.3 s, Triton 0.6 s per process (CUDA C++ and torch
0.03 s). Every benchmark process is a fresh fork of asv's forkserver, which has
imported the suite (and, through asv_suite.preload, triton and Inductor, not
numba), so each pays its framework's per-process start again.

Here a parent does what the forkserver does, then forks one child per variant
and knob. The child creates its CUDA context, then runs the variant's first call
under cProfile, then a second variant of the same backend (what is left once the
framework has started), and reports the top functions by cumulative time. The
knobs preload more in the parent before forking: numba.cuda, or Triton's driver
(only imports and host-side set-up: a child that cannot use CUDA after it says so),
or Inductor's compile_threads set to 1 (no worker pool per process), or all three.

Usage (on the GPU box, caches warm, e.g. after `kernelscope check`):
    python3 results-proofs/first-call/first_call_probe.py [--json OUT] [--top 20]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time

# (first variant, second variant of the same backend, size)
PAIRS = [("square-numba-flat", "gelu-numba", "1024x1024"),
         ("square-triton-flat1024", "gelu-triton", "1024x1024"),
         ("square-compile", "gelu-compile", "1024x1024"),
         ("square-cuda-vec4", "gelu-cuda-vec4", "1024x1024"),
         ("square-torch", "gelu-torch", "1024x1024")]
KNOBS = {
    "as the forkserver": lambda: None,
    "numba.cuda in parent": lambda: __import__("numba.cuda"),
    "triton driver in parent": lambda: __import__("triton.backends.nvidia.driver", fromlist=["CudaUtils"]).CudaUtils(),
    # Inductor compiles (and, with warm caches, loads) through a pool of worker processes it starts per process
    "inductor 1 compile thread": lambda: setattr(__import__("torch._inductor.config", fromlist=["config"]),
                                                 "compile_threads", 1),
    "all three": lambda: [f() for k, f in list(KNOBS.items())[1:4]],
}


def child(first: str, second: str, size: str, top: int) -> dict:
    import torch

    from kernelscope.catalog import VARIANTS
    from kernelscope.ops import parse_shape

    out = {"first": first, "second": second}
    t0 = time.perf_counter()
    torch.empty(1, device="cuda")
    out["cuda_context_s"] = time.perf_counter() - t0
    for key, name in (("first_call", first), ("second_variant", second)):
        variant = VARIANTS[name]
        x = variant.op_spec.make_input(parse_shape(size), "float32", "cuda", 0x5EED)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        variant(x)
        torch.cuda.synchronize()
        prof.disable()
        out[f"{key}_s"] = time.perf_counter() - t0
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top)
        out[f"{key}_profile"] = buf.getvalue()
    return out


def forked(fn, *args) -> dict:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            result = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            result = {"error": f"{type(exc).__name__}: {exc}"}
        with os.fdopen(write, "w") as f:
            json.dump(result, f)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data) if data else {"error": "the child wrote nothing"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write every record (profiles included) here")
    ap.add_argument("--top", type=int, default=20, help="functions per profile")
    args = ap.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    from kernelscope.asv import suite as asv_suite

    asv_suite.preload()  # what asv's forkserver parent has done before it forks a benchmark
    records = []
    for knob, prepare in KNOBS.items():
        # Each knob's preload happens in a fork of its own, which then forks the children.
        def under_knob(prepare=prepare, knob=knob):
            t0 = time.perf_counter()
            prepare()
            parent_s = time.perf_counter() - t0
            rows = []
            for first, second, size in PAIRS:
                rec = forked(child, first, second, size, args.top)
                rec.update(knob=knob, parent_preload_s=parent_s, size=size, first=first, second=second)
                rows.append(rec)
            return {"rows": rows}
        records += forked(under_knob).get("rows", [])
    print(f"{'knob':24} {'variant':24} {'context':>8} {'first call':>10} {'2nd variant':>11}")
    for r in records:
        if "error" in r:
            print(f"{r.get('knob', '?'):24} {r.get('first', '?'):24} ERROR {r['error']}")
            continue
        print(f"{r['knob']:24} {r['first']:24} {r['cuda_context_s']:8.3f} {r['first_call_s']:10.3f} "
              f"{r['second_variant_s']:11.3f}")
    for r in records:
        if r.get("knob") == "as the forkserver" and "first_call_profile" in r:
            print(f"\n--- {r['first']}: first call, top {args.top} by cumulative time\n{r['first_call_profile']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
