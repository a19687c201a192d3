"""Two probes of the timing method: graph mode at 2^28 elements, and the process-to-process spread of launch-bound cases.

graph   At 16384x16384 (1 GiB in, 1 GiB out) each variant is timed warm (the
        suite's held clock), in graph mode as suite version 3 captured it (each
        call's output held until the next was made: two 1 GiB outputs
        alternating), as the fixed capture does (one output alive), and with
        triton.testing.do_bench_cudagraph (which drops each output). Every
        sample is kept with the SM clock its spin read, so a bimodal mode shows
        as two clusters, and a clock drop would show beside it.
spread  Each launch-bound case in PROCS processes forked from one parent that
        has imported torch and the suite but not touched CUDA (as asv's
        forkserver does), under each KNOB: the per-process warm median, the
        cost of each phase of the process (CUDA context, first call, gate,
        plan, samples). A knob that shrinks the spread between processes is a
        method; the phase costs say what a process costs.

Usage (on the GPU box): python3 results-proofs/launch-bound-spread/method_probe.py graph|spread [--json OUT] [--procs N]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

GRAPH_CASES = [("square", "square-torch"), ("square", "square-numba-flat"), ("square", "square-compile"),
               ("softmax", "softmax-cuda"), ("softmax", "softmax-torch"), ("gelu", "gelu-numba")]
GRAPH_SIZE = "16384x16384"
SAMPLES = 30

SPREAD_CASES = [("square", "square-torch", "64x64"), ("softmax", "softmax-cuda", "64x64")]
# A knob that changes the spread between processes is a lead on its cause. Suite v3 at 6c7faa1:
# max_connections_1 and high_priority_stream left it as it was (10-12% over 10 processes).
# cpuN pins the process to one CPU before its CUDA context exists (where the host memory the
# GPU fetches launches from was allocated may follow the CPU).
KNOBS = ["default", "cpu0", "cpu15"]


def summary(times: list[float]) -> dict:
    lo = min(times)
    return {"median_us": statistics.median(times) * 1e6, "min_us": lo * 1e6, "max_us": max(times) * 1e6,
            "slow_share": sum(t > 1.03 * lo for t in times) / len(times)}


def graph_probe() -> list[dict]:
    import torch
    import triton.testing

    from kernelscope import timing
    from kernelscope.timing import clocks
    from kernelscope.timing.cases import prepare

    found = []
    for op, variant in GRAPH_CASES:
        case = prepare(op, variant, GRAPH_SIZE, "float32")
        plan = timing.plan_warm(case.call, "cuda")
        clock = timing.HeldClock(plan.hold_s)
        warm = [clock.sample(case.call, plan.number) / plan.number for _ in range(SAMPLES)]
        rec = {"variant": variant, "size": GRAPH_SIZE, "warm": warm, "warm_mhz": clock.watch.readings[-SAMPLES:]}
        calls = max(1, min(100, math.ceil(2e-3 / plan.per_call_s)))

        # Suite version 3: each output held until the next call made its own, capped at 2 GiB of outputs.
        old_calls = max(1, min(100, calls, 2**31 // max(case.bytes // 2, 1)))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                case.call()
        torch.cuda.current_stream().wait_stream(side)
        g_old = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g_old):
            ptrs_old = []
            for _ in range(old_calls):
                out = case.call()
                ptrs_old.append(out.data_ptr())
        watch = clocks.ClockWatch(None)
        rec["graph_v3"] = timing.time_graph(g_old, old_calls, SAMPLES, watch=watch)
        rec["graph_v3_mhz"], rec["graph_v3_calls"] = watch.readings, old_calls
        rec["graph_v3_distinct_outputs"] = len(set(ptrs_old))
        del g_old, out
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

        # The fix: one output alive.
        ptrs_new = []

        def call_and_note():
            out = case.call()
            ptrs_new.append(out.data_ptr())
            return out

        g_new, out = timing.capture_graph(call_and_note, calls)
        watch = clocks.ClockWatch(None)
        rec["graph_v4"] = timing.time_graph(g_new, calls, SAMPLES, watch=watch)
        rec["graph_v4_mhz"], rec["graph_v4_calls"] = watch.readings, calls
        rec["graph_v4_distinct_outputs"] = len(set(ptrs_new[-calls:]))
        rec["graph_v4_rel_err"] = case.check(out)
        del g_new, out
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

        rec["do_bench_cudagraph"] = [t / 1e3 for t in triton.testing.do_bench_cudagraph(case.call, return_mode="all")]
        found.append(rec)
        line = f"{variant:<20} warm {summary(warm)['median_us']:8.1f}"
        for key in ("graph_v3", "graph_v4", "do_bench_cudagraph"):
            s = summary(rec[key])
            line += f" | {key} {s['median_us']:8.1f} [{s['min_us']:.1f}..{s['max_us']:.1f}] slow {s['slow_share']:.0%}"
        line += (f" | outputs v3 {rec['graph_v3_distinct_outputs']}/{old_calls} v4 {rec['graph_v4_distinct_outputs']}/"
                 f"{calls} | MHz v3 {min(rec['graph_v3_mhz']):.0f}-{max(rec['graph_v3_mhz']):.0f}")
        print(line, flush=True)
        from kernelscope.timing import cases as cases_module

        cases_module._CASES.clear()
        del case
        torch.cuda.empty_cache()
    return found


def spread_child(op: str, variant: str, size: str, knob: str) -> dict:
    t0 = time.perf_counter()
    if knob == "max_connections_1":
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    if knob.startswith("cpu"):
        os.sched_setaffinity(0, {int(knob[3:]) % os.cpu_count()})
    cpu = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[36])  # field 39: the CPU it last ran on
    import torch

    from kernelscope import timing
    from kernelscope.timing import phases
    from kernelscope.timing.cases import prepare

    os.environ[phases.LOG_ENV] = "/dev/null"  # turn the phase timers on; the record goes to this child's return
    phases.begin("probe", [variant, size])
    case = prepare(op, variant, size, "float32")
    t_prepared = time.perf_counter()
    stream = torch.cuda.Stream(priority=-1) if knob == "high_priority_stream" else torch.cuda.current_stream()
    with torch.cuda.stream(stream):
        plan = timing.plan_warm(case.call, "cuda")
        t_planned = time.perf_counter()
        clock = timing.HeldClock(plan.hold_s)
        warm = [clock.sample(case.call, plan.number) / plan.number for _ in range(15)]
        t_warm = time.perf_counter()
        cold = timing.time_cold(case.call, "cuda", 20, hold_s=timing.grown_hold(plan.host_per_call_s))
        torch.cuda.synchronize()
    return {"case": f"{variant} {size}", "knob": knob, "cpu": cpu, "warm": statistics.median(warm),
            "cold": statistics.median(cold),
            "number": plan.number, "starved": clock.starved, "phases": phases._case["phases"],
            "prepare_s": t_prepared - t0, "plan_s": t_planned - t_prepared, "warm_s": t_warm - t_planned,
            "cold_s": time.perf_counter() - t_warm}


def forked(fn, *args) -> dict | None:
    """Run fn(*args) in a child forked from this process (CUDA untouched here), its JSON back through a pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            payload = json.dumps(fn(*args)).encode()
        except BaseException as exc:  # noqa: BLE001 - reported by the parent
            payload, code = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode(), 1
        with os.fdopen(w, "wb") as f:
            f.write(payload)
        os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data) if data else None


def spread_probe(procs: int) -> list[dict]:
    from kernelscope.asv import suite as asv_suite

    asv_suite.preload()  # as asv's forkserver does: frameworks imported, CUDA untouched
    found = []
    for op, variant, size in SPREAD_CASES:
        for knob in KNOBS:
            runs = []
            for _ in range(procs):
                rec = forked(spread_child, op, variant, size, knob)
                if rec is None or "error" in rec:
                    print(f"{variant} {size} {knob}: {rec}", file=sys.stderr)
                    continue
                runs.append(rec)
            found.extend(runs)
            warm = [r["warm"] * 1e6 for r in runs]
            cold = [r["cold"] * 1e6 for r in runs]
            ph = {k: statistics.median(r["phases"].get(k, 0) for r in runs) for k in ("cuda", "input", "first_call", "gate")}
            print("  per process (cpu: warm us): " + " ".join(f"{r['cpu']}:{r['warm'] * 1e6:.3f}" for r in runs))
            print(f"{variant} {size:<10} {knob:<22} warm {statistics.median(warm):6.3f} us spread "
                  f"{max(warm) / min(warm) - 1:6.1%} sd {statistics.pstdev(warm) / statistics.mean(warm):5.1%} | cold "
                  f"{statistics.median(cold):6.3f} spread {max(cold) / min(cold) - 1:6.1%} | per process: "
                  + " ".join(f"{k} {v * 1e3:.0f}" for k, v in ph.items())
                  + f" plan {statistics.median(r['plan_s'] for r in runs) * 1e3:.0f}"
                  f" warm {statistics.median(r['warm_s'] for r in runs) * 1e3:.0f}"
                  f" cold {statistics.median(r['cold_s'] for r in runs) * 1e3:.0f} ms", flush=True)
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("probe", choices=["graph", "spread"])
    ap.add_argument("--procs", type=int, default=10, help="spread: processes per case and knob")
    ap.add_argument("--json", help="write every record here")
    args = ap.parse_args()
    found = graph_probe() if args.probe == "graph" else spread_probe(args.procs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
