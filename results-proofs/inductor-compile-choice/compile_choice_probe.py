"""What Inductor chose, compile by compile: a torch.compile variant at one size in fresh caches.

softmax-compile at 64x64 read 1.3-1.45 us a graph node in most committed runs
and 2.2-2.3 us in a few (H100 0370829, e972512, c6c2837; H200 da0ab9d), with no
change on its path. Inductor generates one persistent-reduction kernel for it
and, for a small reduction, several launch configurations (XBLOCK, warps) that
it benchmarks once, at compile time, keeping the fastest in its cache
(``*.best_config``); every later process reuses that choice. At 1-2 us a call
the benchmark that decides is itself noisy, so two compiles may choose
differently, and a whole suite run inherits whichever choice its first compile
made.

Each round here is a process of its own with empty Inductor and Triton caches:
it builds the suite's checked case (``timing.cases.prepare``: the compile and
its autotuning), then reports the kernels one call launches (torch.profiler),
the configurations Inductor kept, and the graph-mode and warm time a call,
timed as the suite does. If the rounds' choices differ and their times split
with them, the choice is the cause.

Usage (GPU box): python3 results-proofs/inductor-compile-choice/compile_choice_probe.py [--variant softmax-compile] [--size 64x64]
                 [--rounds 6] [--json FILE]      (about 15 s a round)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))


def child(variant: str, size: str, cache: Path) -> dict:
    import torch

    from kernelscope.catalog import VARIANTS
    from kernelscope.timing import capture_graph, plan_warm, time_graph
    from kernelscope.asv.suite import GRAPH_SAMPLES, graph_calls
    from kernelscope.timing.cases import prepare

    case = prepare(VARIANTS[variant].op, variant, size, "float32")  # compiles, autotunes, checks
    plan = plan_warm(case.call, case.device)
    calls = graph_calls(plan.per_call_s)
    graph, _ = capture_graph(case.call, calls)
    graph_us = statistics.median(time_graph(graph, calls, GRAPH_SAMPLES)) * 1e6
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            case.call()
        torch.cuda.synchronize()
    kernels = {e.key: e.count // 10 for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA}
    configs = {}
    for f in sorted(cache.rglob("*.best_config")):
        data = json.loads(f.read_text())
        configs[f.parent.name + "/" + f.name] = {k: v for k, v in data.items() if k != "configs_hash"}
    return {"graph_us": graph_us, "warm_us": plan.per_call_s * 1e6, "kernels": kernels, "best_configs": configs,
            "rel_err": case.rel_err}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="softmax-compile")
    parser.add_argument("--size", default="64x64")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--json", help="write the rounds as JSON to this file")
    parser.add_argument("--child", metavar="CACHE", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(child(opts.variant, opts.size, Path(opts.child))))
        return 0
    import torch
    if not torch.cuda.is_available():
        print("compile_choice_probe.py measures a GPU: none here", file=sys.stderr)
        return 2
    print(f"== {opts.variant} at {opts.size}, float32, {opts.rounds} compiles in fresh caches "
          f"({torch.cuda.get_device_name()})")
    rounds = []
    for i in range(opts.rounds):
        with tempfile.TemporaryDirectory(prefix="inductor-") as cache:
            env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "TRITON_CACHE_DIR": str(Path(cache) / "triton")}
            proc = subprocess.run([sys.executable, __file__, "--variant", opts.variant, "--size", opts.size,
                                   "--child", cache], env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"round {i}: failed (rc {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}")
                rounds.append({"round": i, "error": proc.stderr[-2000:]})
                continue
            r = {"round": i, **json.loads(proc.stdout.strip().splitlines()[-1])}
            rounds.append(r)
            chosen = "; ".join(f"{Path(k).name.split('.')[0][:12]}: " + ", ".join(
                f"{a}={b}" for a, b in v.items() if a in ("XBLOCK", "R0_BLOCK", "RBLOCK", "num_warps", "num_stages"))
                for k, v in r["best_configs"].items()) or "no autotuned kernel"
            print(f"round {i}: graph {r['graph_us']:6.3f} us  warm {r['warm_us']:6.3f} us  "
                  f"kernels/call {sum(r['kernels'].values())}  chose {chosen}")
    if opts.json:
        Path(opts.json).write_text(json.dumps(rounds, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
