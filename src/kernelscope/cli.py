"""The kernelscope command line: list the catalog, check every variant, export results."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from kernelscope import modes

DTYPE_CHOICES = ("float32", "float16", "bfloat16")  # kernelscope.ops.DTYPES' names, without importing torch

EPILOG = """\
examples:
  kernelscope list                      the catalog: ops, variants, backends, what each needs
  kernelscope check                     every variant against the float64 reference on this machine
  kernelscope check --op softmax --json one JSON record per variant, for scripts
  kernelscope results --csv             every stored asv result as a tidy table
  kernelscope results --compare-machines nvidia-h100-80gb-hbm3 nvidia-h200
                                        per-benchmark speedups beside the copy-bandwidth ratio
  kernelscope machine                   name this machine for asv, record GPU and versions
  kernelscope asv-run -- --machine NAME HEAD^!
                                        asv run on every GPU of the box, one process per GPU, one results/
  kernelscope compare-runs A/ B/        two runs of one commit, asv's statistics
  kernelscope profile --op square       torch.profiler and compiled code per variant, into profiles/<machine>/
  kernelscope profile --ncu --demos     also Nsight Compute metrics and the lecture's demos (GPU box)
  kernelscope profile --cross-check     ncu's kernel time against the suite's warm time, per variant
  kernelscope crosscheck --gate        the suite's clocks beside Timer, do_bench, do_bench_cudagraph, ncu
  kernelscope plan softmax-cuda 64x262144 --gpu h100
                                        the kernel and launch shape a call of a tuned variant takes

Without a GPU, Triton runs under TRITON_INTERPRET=1 and Numba under
NUMBA_ENABLE_CUDASIM=1 (set automatically); CUDA C++ variants are skipped with
the reason.
"""


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def cmd_list(args) -> int:
    from kernelscope import backends
    from kernelscope.catalog import OPS, select

    variants = select(op=args.op, backend=args.backend)
    if args.json:
        records = [{
            "op": v.op, "variant": v.name, "backend": v.backend, "teaches": v.teaches, "dtypes": list(v.dtypes),
            "lecture": v.lecture, "needs": v.needs, "impl": v.impl, "max_cols": v.max_cols,
            "limits": [{"input": lim.input, "dtypes": list(lim.dtypes), "why": lim.why} for lim in v.limits],
        } for v in variants]
        print(json.dumps({"ops": {name: op.summary for name, op in OPS.items()},
                          "backends": {b.name: b.summary for b in backends.BACKENDS.values()},
                          "variants": records}, indent=2))
        return 0
    rows = [[v.op, v.name, v.backend, ",".join(d.replace("float", "f") for d in v.dtypes),
             "yes" if v.lecture else "", v.teaches] for v in variants]
    print(_table(rows, ["op", "variant", "backend", "dtypes", "lecture", "what it teaches"]))
    limited = [v for v in variants if v.limits]
    if limited:
        print("\nknown limits (stress inputs the check reports instead of failing):")
        for v in limited:
            for lim in v.limits:
                print(f"  {v.name}: {lim}")
    return 0


def _fmt_err(x: float | None) -> str:
    if x is None:
        return ""
    return "nan" if math.isnan(x) else f"{x:.1e}"


def cmd_check(args) -> int:
    from kernelscope import backends
    from kernelscope.catalog import select
    from kernelscope.check import FAIL, PASS, check_variant

    variants = select(op=args.op, variant=args.variant, backend=args.backend)
    device = args.device or backends.default_device()
    dtypes = tuple(args.dtype) if args.dtype else None
    results = []
    start = time.perf_counter()
    for i, v in enumerate(variants, 1):
        t0 = time.perf_counter()
        res = check_variant(v, device=device, dtypes=dtypes, seed=args.seed)
        results.append(res)
        if not args.quiet:
            print(f"[{i}/{len(variants)}] {v.name:<24} {res.status} ({time.perf_counter() - t0:.1f} s)",
                  file=sys.stderr, flush=True)
    n_fail = sum(r.status == FAIL for r in results)
    records = json.dumps([r.as_dict() for r in results], indent=2)
    if args.json_file:
        with open(args.json_file, "w") as f:
            f.write(records + "\n")
    if args.json:
        print(records)
    else:
        rows = [[r.op, r.variant, r.backend, r.status, _fmt_err(r.max_rel_err),
                 "" if r.worst_margin is None else f"{r.worst_margin:.2f}", _detail(r)] for r in results]
        print(_table(rows, ["op", "variant", "backend", "status", "max_rel_err", "err/tol", "detail"]))
        counts = {s: sum(r.status == s for r in results) for s in ("PASS", "FAIL", "SKIP")}
        print(f"\n{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped on {device} "
              f"in {time.perf_counter() - start:.0f} s")
    return 1 if n_fail else 0


def _detail(r) -> str:
    from kernelscope.check import PASS

    if r.status != PASS:
        return r.reason
    stress = sum(s.input != "random" for s in r.shapes)
    parts = [f"{len(r.shapes)} cases" + (f" ({stress} on stress inputs)" if stress else "")]
    if r.known:
        parts.append("known limits: " + ", ".join(r.known))
    if r.not_run:
        parts.append(r.not_run)
    return "; ".join(parts)


def _copy_gbps() -> float | None:
    """This GPU's device-to-device copy bandwidth in GB/s (bytes read + written), or None without a GPU."""
    import torch

    if not torch.cuda.is_available():
        return None
    from kernelscope.timing import copy_bandwidth

    return copy_bandwidth() / 1e9


def cmd_machine(args) -> int:
    from kernelscope.results.machine import ASV_MACHINE_FILE, box_facts, describe, host_id, record_box, write_asv_machine

    info = describe()
    name = args.name or info["machine"]
    facts = {"host": host_id()} if args.no_bandwidth else box_facts(_copy_gbps())
    if not args.dry_run:
        write_asv_machine(info, name)
        if not args.no_bandwidth:
            boxes = record_box(args.results_dir, name, facts)
    if args.json:
        print(json.dumps({**info, "machine": name, "box": facts}, indent=2))
    else:
        for key, value in sorted({**info, "machine": name}.items()):
            print(f"{key:>18}: {value}")
        for key, value in sorted(facts.items()):
            print(f"{'box ' + key:>18}: {value}")
        if not args.dry_run:
            print(f"\nwritten to {ASV_MACHINE_FILE}; run asv with --machine {name}")
            if not args.no_bandwidth:
                print(f"this box ({facts['host']}) recorded in {boxes}")
    return 0


def _num(x, fmt):
    return "" if x is None else format(x, fmt)


def cmd_results(args) -> int:
    from kernelscope.results import export

    table = [r for r in export.rows(args.results_dir)
             if (args.op is None or r["op"] == args.op) and (args.mode is None or r["mode"] == args.mode)
             and (args.commit is None or r["commit"].startswith(args.commit))]
    if args.compare_machines:
        return _compare_machines(args, table)
    if args.json:
        print(json.dumps(table, indent=1))
    elif args.csv:
        sys.stdout.write(export.to_csv(table))
    else:
        rows = [[r["commit"][:8], r["op"], r["variant"], r["mode"], r["size"], r["dtype"],
                 f"{r['time_s'] * 1e6:.1f}" + ("*" if r["launch_bound"] else ""), _num(r["gbps"], ".0f"),
                 _num(r["pct_of_peak"], ".0f"), _num(r["sm_mhz"], ".0f"), _throttled(r)] for r in table]
        print(_table(rows, ["commit", "op", "variant", "mode", "size", "dtype", "time_us", "GB/s", "%peak",
                            "SM MHz", "throttled"]))
        print(f"\n{len(table)} results from {args.results_dir}/")
        if any(r["launch_bound"] for r in table):
            print("* sampled one value per process: launch-bound (under 20 us a call warm, and the same cases cold and host), "
                  "whose per-launch cost moves from process to process, and in host mode (version 3) the host-bound "
                  "cases, whose host cost of a call does")
        mostly = [r for r in table if r["throttled"] and r["samples"] and r["throttled"] > r["samples"] / 2]
        for r in mostly:
            print(f"warning: {r['variant']} {r['mode']} {r['size']} at {r['commit'][:8]}: {_throttled(r)} samples "
                  f"ran below 75% of the max SM clock (throttled): its time is not the GPU's", file=sys.stderr)
    return 0


def _throttled(r: dict) -> str:
    if r["throttled"] is None:
        return ""
    return f"{r['throttled']}/{r['samples']}" if r["samples"] else str(r["throttled"])


def _compare_machines(args, table: list[dict]) -> int:
    from kernelscope.catalog import VARIANTS
    from kernelscope.results import compare, history

    a, b = args.compare_machines
    known = sorted({r["machine"] for r in table})
    for m in (a, b):
        if m not in known:
            raise KeyError(f"no results for machine {m!r} in {args.results_dir}/; machines: {', '.join(known)}")
    order = history.commit_order(table, history.git_positions())
    rows = compare.machine_ratios(history.current(table, order, set(VARIANTS)), a, b)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    if not rows:
        print(f"no benchmark was measured on both {a} and {b}")
        return 0
    ratio = rows[0]["bandwidth_ratio"]
    print(_table([[r["op"], r["variant"], r["mode"], r["size"], f"{r['time_a'] * 1e6:.1f}", f"{r['time_b'] * 1e6:.1f}",
                   f"{r['speedup']:.2f}"] for r in rows],
                 ["op", "variant", "mode", "size", f"{a} us", f"{b} us", "speedup"]))
    print(f"\n{len(rows)} benchmarks on both. Copy bandwidth {b} / {a}: "
          + (f"{ratio:.2f}x" if ratio else "unknown (run `kernelscope machine` on both)")
          + "; a memory-bound kernel that uses the bandwidth well sits near it, a launch-bound one near 1.")
    return 0


def cmd_asv_run(args) -> int:
    from kernelscope.asv import parallel

    asv_args = args.asv_args[1:] if args.asv_args[:1] == ["--"] else args.asv_args
    if not asv_args:
        print("kernelscope asv-run: give asv run's arguments after --, e.g. -- --machine NAME HEAD^!", file=sys.stderr)
        return 2
    gpus = [g.strip() for g in args.gpus.split(",")] if args.gpus else parallel.visible_gpus()
    if not gpus:
        print("kernelscope asv-run: no GPU found (nvidia-smi lists none); run `asv run` itself", file=sys.stderr)
        return 2
    if not args.config.exists():
        print(f"kernelscope asv-run: no asv configuration at {args.config}", file=sys.stderr)
        return 2
    runs = parallel.run(asv_args, gpus, args.config, args.logs, every_s=args.every)
    if args.json:
        print(json.dumps(runs, indent=2))
    else:
        print(_table([[r["gpu"], r["share"], r["returncode"], f"{r['seconds']:.0f}", r["log"]] for r in runs],
                     ["GPU", "share", "asv rc", "seconds", "log"]))
    return max((r["returncode"] for r in runs), default=0)


def cmd_migrate_results(args) -> int:
    from kernelscope.asv import migrate

    if not (args.results_dir / "benchmarks.json").exists():
        print(f"kernelscope migrate-results: {args.results_dir}/ holds no asv results (benchmarks.json missing)",
              file=sys.stderr)
        return 2
    done = migrate.migrate(args.results_dir)
    print("\n".join(done) if done else f"{args.results_dir}/ already holds results as the suite keys them now")
    return 0


def cmd_compare_runs(args) -> int:
    from kernelscope.results.compare import compare_runs, has_gpu, rerun_criteria, summary

    rows = compare_runs(args.a, args.b, factor=args.factor, commit=args.commit, machine=args.machine,
                        commit_b=args.commit_b)
    stats = summary(rows)
    criteria = rerun_criteria(rows, gpu=has_gpu(args.a, args.machine))
    if args.json:
        print(json.dumps({"summary": stats, "rerun_criteria": criteria, "rows": rows}, indent=1))
        return 0
    shown = rows if args.all else [r for r in rows if r["mark"] != " "]
    if shown:
        print(_table([[r["mark"], f"{r['a']:.4g}", f"{r['b']:.4g}", f"{r['ratio']:.3f}", r["benchmark"]] for r in shown],
                     ["", "A", "B", "B/A", "benchmark"]))
    print(f"\n{stats['benchmarks']} benchmarks in both runs: {stats['flagged_worse']} flagged worse (+), "
          f"{stats['flagged_better']} flagged better (-), {stats['fraction_within']:.1%} within 2% of each other")
    for mode, part in stats["by_mode"].items():
        print(f"  {mode:<10} {part['benchmarks']:4d} benchmarks, {part['flagged_worse']} worse, "
              f"{part['flagged_better']} better, {part['fraction_within']:.1%} within 2%")
    c = criteria
    by_mode = ", ".join(f"{n} {m}" for m, n in c.get("flagged_by_mode", {}).items())
    print(f"\nrerun criteria: {c['flagged']} flagged{f' ({by_mode})' if by_mode else ''} (0 wanted); "
          f"{c['long']['passing']} of {c['long']['benchmarks']} of 20 us or more within 2% ({c['long']['share']:.1%}); "
          f"{c['graph']['passing']} of {c['graph']['benchmarks']} graph within 2% ({c['graph']['share']:.1%}); "
          f"{c['per_process']['passing']} of {c['per_process']['benchmarks']} sampled per process (launch-bound, "
          f"first calls) with B's median inside A's 99% interval ({c['per_process']['share']:.1%}); "
          f"95% wanted each: {'PASSED' if c['passed'] else 'NOT MET'}")
    return 0


def cmd_profile(args) -> int:
    from kernelscope.profiling import capture, crosscheck

    if args.cross_check:
        return crosscheck.main(args.profiles_dir, args.results_dir, as_json=args.json)
    if args.shape:
        from kernelscope.ops import parse_shape

        try:
            parse_shape(args.shape)
        except ValueError as exc:
            print(f"kernelscope: {exc}", file=sys.stderr)
            return 2
    opts = capture.Options(op=args.op, variant=args.variant, backend=args.backend, shape=args.shape, dtype=args.dtype,
                           ncu=args.ncu, demos=args.demos, out=args.out, json=args.json,
                           command=" ".join(["kernelscope", *args.argv]))
    return capture.run(opts)


def cmd_crosscheck(args) -> int:
    from kernelscope.evidence.peers import command

    if args.size:
        from kernelscope.ops import parse_shape

        try:
            parse_shape(args.size)
        except ValueError as exc:
            print(f"kernelscope: {exc}", file=sys.stderr)
            return 2
    return command.run(command.Options(op=args.op, variant=args.variant, backend=args.backend, size=args.size,
                                       dtypes=tuple(args.dtype), ncu=False if args.no_ncu else None, out=args.out,
                                       json=args.json, gate=args.gate, command=" ".join(["kernelscope", *args.argv])))


def cmd_plan(args) -> int:
    from kernelscope import plan as plans
    from kernelscope.backends.device import GPU_CHOICES
    from kernelscope.catalog import get
    from kernelscope.ops import parse_shape

    if args.all == bool(args.variant):
        print("kernelscope plan: give VARIANT SHAPE [DTYPE], or --all", file=sys.stderr)
        return 2
    if args.all and (args.shape or args.dtype):
        print("kernelscope plan: --all takes no SHAPE or DTYPE (--dtype picks one dtype)", file=sys.stderr)
        return 2
    gpu = args.gpu or plans.default_gpu()
    if args.gpu is None and gpu != plans.THIS:
        print(f"kernelscope plan: no GPU here: the {gpu} preset (--gpu {' or '.join(GPU_CHOICES[1:])})",
              file=sys.stderr)
    try:
        if args.all:
            found, left_out = plans.all_plans(gpu, (args.all_dtype,) if args.all_dtype else None)
            for name, why in left_out:
                print(f"kernelscope plan: {name} left out: {why}", file=sys.stderr)
            if args.json:
                print(json.dumps([p.as_dict() for p in found], indent=1))
            else:
                print(_table(plans.table_rows(found), plans.TABLE_HEADER))
                print(f"\n{len({p.variant for p in found})} variants at their op's benchmark sizes on "
                      f"{plans.gpu_line(found[0]) if found else gpu}")
            return 0
        variant = get(args.variant)
        if args.shape is None:
            raise ValueError(f"{variant.name}: give a SHAPE, e.g. "
                             f"{'x'.join(map(str, variant.op_spec.bench_shapes[-1]))}")
        try:
            shape = parse_shape(args.shape)
        except ValueError as exc:
            raise ValueError(f"{variant.name}: {exc}") from None
        if variant.plan is None:
            why = plans.no_plan(variant)
            print(json.dumps({"variant": variant.name, "plan": None, "why": why}) if args.json
                  else f"{variant.name}: {why}")
            return 0
        found = plans.plan_of(variant, shape, args.dtype or "float32", gpu)
    except ValueError as exc:
        print(f"kernelscope plan: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(found.as_dict(), indent=1) if args.json else plans.describe(found))
    return 0


PLAN_EPILOG = """\
The plan is the tuned variant's own: the function its launch calls to pick a launch shape, given the GPU's
facts (SMs, L2, the DRAM's peak bandwidth an SM, shared memory a block). --gpu h100 and h200 are presets of
those facts; this (the default where a GPU is present) reads them from this machine's GPU as the variant's
backend reads them at launch. Without a GPU, the default is the h100 preset (said on stderr). Variants
without a plan (torch ops, torch.compile, launches fixed in their launcher) say so in one line.

Grids: blocks (Triton: programs) of a launch; a persistent launch of softmax-cuda takes as many clusters as
fit on the GPU at once (the driver's occupancy query at the first launch), so its grid is given as a rule.

examples:
  kernelscope plan softmax-cuda 64x262144 --gpu h100        wide rows on an H100: kernel, threads, cluster
  kernelscope plan softmax-cuda 64x262144 --gpu h200        ... on an H200, whose DRAM asks more of each SM
  kernelscope plan softmax-triton-tuned 512x50257 bfloat16  a GPT-2 vocabulary row in bfloat16, Triton's plan
  kernelscope plan mean-numba 268435456 --json              one record as JSON
  kernelscope plan softmax-torch 4096x4096                  a variant without a plan says what launches
  kernelscope plan --all --gpu h200                         every planned variant at its op's benchmark sizes
"""


CROSSCHECK_EPILOG = """\
clocks, per case (median seconds per call; the same callable, one process):
  suite warm  ~ torch.utils.benchmark.Timer     back-to-back calls (Timer: a host clock, then a synchronize)
  suite cold  ~ triton.testing.do_bench         one call after an L2 flush, between events
  suite graph ~ triton.testing.do_bench_cudagraph   CUDA-graph replay, no launches
  suite host  ~ torch.utils.benchmark.Timer     two host loops of calls (Timer: the median of 3 readings)
  ncu         Nsight Compute's summed kernel durations per call (second process; caches flushed; not gated)
  host/call   the host's cost of a call: a case is host-bound for Timer when it exceeds the warm GPU time,
              for do_bench when it exceeds the GPU time of do_bench's L2 flush (the GPU then waits for the launch)
Without a GPU, warm, cold and Timer run (host clocks) and the rest is recorded as skipped with the reason.

The gate (--gate): every mode of every case of 50 us or more within 2% of its peer (host mode within 3% of
Timer), except excused pairs, listed with the reason (their graph pair must still agree): host-bound ones,
and host pairs whose host cost drifts (host mode's own samples span more than 3%) while Timer lies inside
that span. Exit status 1 if a case failed or a clock
errored (Nsight Compute's errors aside), or with --gate if the gate failed.

examples:
  kernelscope crosscheck                                  every variant at its op's sizes, into evidence/<machine>/
  kernelscope crosscheck --gate                           the same, exit 1 unless the gate passes (the H100's check)
  kernelscope crosscheck --variant mean-numba --size 268435456 --no-ncu
  kernelscope crosscheck --op square --json --out /tmp/peers.json
"""


PROFILE_EPILOG = """\
what each part writes, under profiles/<machine>/<variant>/ (machine: asv's name, as `kernelscope machine`):
  profile.json        everything below as data (kernelscope.profiling.artifacts), skips and errors with reasons
  torch_profiler.txt  torch.profiler's key_averages table of the active steps (wait 1, warmup 1, active 3)
  trace.json.gz       the chrome trace of those steps: open it in https://ui.perfetto.dev or chrome://tracing
  ncu.txt.gz          --ncu: Nsight Compute's printout of the variant's kernels (--clock-control none)
  <kernel>.ptx/.sass  Triton and Numba (GPU only), CUDA C++ (nvcc -ptx, cuobjdump: no GPU needed)
  <kernel>.ptxas.txt  CUDA C++: ptxas's registers, shared memory and spills per kernel
  inductor.py         torch.compile: the module Inductor generated (Triton on a GPU, C++ on the CPU)
and profiles/<machine>/manifest.json (machine, GPU, commit, versions, this command), demos.json (--demos).

Each variant is checked against the float64 reference on fresh random input first; a wrong one is not
profiled. A missing tool (no GPU, no ncu, no nvcc) skips that part with the reason; a failed part is
recorded and the run goes on; the exit status is 1 if any part failed.

examples:
  kernelscope profile --variant square-cuda-vec4       one variant (on the CPU: its PTX and ptxas report)
  kernelscope profile --op softmax --shape 4096x4096   one op, every variant at one shape
  kernelscope profile --ncu --demos --json             everything, one JSON record per variant on stdout
  kernelscope profile --cross-check --json             ncu time vs the suite's warm median, within 3%?
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kernelscope", description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", help="the catalog of ops and variants")
    p.add_argument("--op", help="only this op")
    p.add_argument("--backend", help="only this backend (torch, torch-compile, triton, cuda, numba)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("check", help="check variants against the float64 reference (exit 1 on any FAIL)",
                       description="Run every selected variant on fresh random inputs at edge shapes "
                                   "(1 element, primes, rows wider than one block), output poisoned "
                                   "with NaN first, and compare with the float64 reference; then on the op's "
                                   "stress inputs (large offsets and magnitudes, large logits, masked rows, "
                                   "saturating inputs, long reductions). A stress failure the variant declares "
                                   "as a known limit (kernelscope list) is reported, any other fails.")
    p.add_argument("--op", help="only this op")
    p.add_argument("--variant", help="only this variant (see `kernelscope list`)")
    p.add_argument("--backend", help="only this backend")
    p.add_argument("--dtype", action="append", choices=DTYPE_CHOICES,
                   help="only these dtypes (repeatable; default: every dtype the variant supports)")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda if torch sees a GPU, else cpu")
    p.add_argument("--seed", type=int, help="fix the input seed (default: fresh random inputs every run)")
    p.add_argument("--json", action="store_true", help="one JSON record per variant on stdout")
    p.add_argument("--json-file", metavar="PATH",
                   help="also write the JSON records to PATH (the table still goes to stdout): one run, both forms")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("machine", help="name this machine for asv and record its GPU, versions and copy bandwidth",
                       description="Write this machine into ~/.asv-machine.json under a stable name (from the GPU, "
                                   "not the hostname), with the GPU, driver, CUDA, torch, triton and numba versions "
                                   "as extra keys: what asv keys its graphs by. Then measure this box's device-to-"
                                   "device copy bandwidth and append it, with the box's id (the host parameter of "
                                   "host mode and first-call benchmarks), to RESULTS_DIR/<machine>/boxes.jsonl.")
    p.add_argument("--name", help="machine name (default: from the GPU, e.g. nvidia-h100-80gb-hbm3)")
    p.add_argument("--no-bandwidth", action="store_true", help="skip the copy-bandwidth measurement (records no box)")
    p.add_argument("--results-dir", default="results", help="asv's results folder (default: results)")
    p.add_argument("--dry-run", action="store_true", help="print, do not write the machine file or the box")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_machine)

    p = sub.add_parser("results", help="every stored asv result as a tidy table",
                       description="One row per benchmark, parameter set and commit: machine, gpu, commit, date, op, "
                                   "variant, backend, mode, size, dtype, time_s (median), ci_low, ci_high, samples, "
                                   "launch_bound (under 20 us a call warm, and the same cases cold: sampled one "
                                   "value per process, its interval spans processes), bytes, "
                                   "gbps, pct_of_peak (of the machine's measured copy bandwidth), sm_mhz (median SM "
                                   "clock of its samples) and throttled (samples below 75% of the max SM clock).")
    p.add_argument("--results-dir", default="results", help="asv's results folder (default: results)")
    p.add_argument("--op", help="only this op")
    p.add_argument("--mode", choices=modes.NAMES, help="only this timing mode")
    p.add_argument("--commit", help="only this commit (a hash prefix)")
    p.add_argument("--compare-machines", nargs=2, metavar=("A", "B"),
                   help="per benchmark (each machine's newest results): time on A / time on B, beside the ratio "
                        "of their measured copy bandwidths")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="a JSON list of rows")
    fmt.add_argument("--csv", action="store_true", help="CSV with a header row")
    p.set_defaults(func=cmd_results)

    p = sub.add_parser("asv-run", help="asv run on every GPU of this box: one asv process per GPU, each a share",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Start `asv run ARGS` once per GPU (CUDA_VISIBLE_DEVICES set to it, an asv "
                                   "environment folder of its own), each running its share of every benchmark's "
                                   "cases; all of them save into the one results folder, merged case by case under a "
                                   "lock. A commit range works as with asv run: each process builds every commit.",
                       epilog="examples:\n"
                              "  kernelscope asv-run -- --record-samples --machine nvidia-h100-80gb-hbm3 HEAD^!\n"
                              "  kernelscope asv-run --gpus 0,1 -- --machine nvidia-h100-80gb-hbm3 -b time_warm A..B")
    p.add_argument("--gpus", help="comma-separated GPU indices (default: every GPU nvidia-smi lists, or "
                                  "CUDA_VISIBLE_DEVICES)")
    p.add_argument("--config", type=Path, default=Path("asv.conf.json"), help="asv's configuration (default: %(default)s)")
    p.add_argument("--logs", type=Path, default=Path(".asv"), help="where each GPU's asv log goes (default: %(default)s)")
    p.add_argument("--every", type=float, default=15.0, help="seconds between progress lines (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="per GPU: return code, seconds, log, as JSON on stdout")
    p.add_argument("asv_args", nargs=argparse.REMAINDER, help="after --: the arguments of asv run")
    p.set_defaults(func=cmd_asv_run)

    from kernelscope.asv.migrate import __doc__ as migrate_doc

    p = sub.add_parser("migrate-results", help="results stored by an older kernelscope, keyed as the suite keys them now",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=migrate_doc.split("\n\n", 1)[1])
    p.add_argument("results_dir", nargs="?", type=Path, default=Path("results"),
                   help="asv's results folder (default: %(default)s)")
    p.set_defaults(func=cmd_migrate_results)

    p = sub.add_parser("compare-runs", help="compare two asv runs of one commit with asv's statistics",
                       description="Like `asv compare`, but for two results folders holding runs of the same commit "
                                   "(a noise check, or a switch flipped between runs). + worse, - better. Ends with "
                                   "the rerun criteria: nothing flagged; 95% of the warm, cold and graph "
                                   "benchmarks of 20 us or more, and of the graph ones, within 2%; 95% of those "
                                   "sampled one value per process (launch-bound, first calls) with B's median inside "
                                   "A's 99% interval.")
    p.add_argument("a", help="results folder of the first run")
    p.add_argument("b", help="results folder of the second run")
    p.add_argument("--factor", type=float, default=1.1, help="ratio a change must pass (default 1.1, as asv)")
    p.add_argument("--commit", help="only this commit (hash prefix)")
    p.add_argument("--commit-b", help="B's commit, where it differs from A's (the same code under two hashes; "
                                      "A and B may then be one folder)")
    p.add_argument("--machine", help="only this machine")
    p.add_argument("--all", action="store_true", help="list every benchmark, not only flagged ones")
    p.add_argument("--json", action="store_true", help="summary, rerun criteria and rows as JSON")
    p.set_defaults(func=cmd_compare_runs)

    p = sub.add_parser("profile", help="profile variants: torch.profiler, Nsight Compute, compiled code, demos",
                       description="Capture what the lecture teaches to look at, for every selected variant, as\n"
                                   "data: torch.profiler's table and trace, the compiled code (PTX, SASS, ptxas\n"
                                   "report, Inductor's output); with --ncu, Nsight Compute's metrics and rule hints;\n"
                                   "with --demos, the lecture's demonstrations measured. Default input: the op's\n"
                                   "largest benchmark shape, float32.",
                       epilog=PROFILE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", help="only this op")
    p.add_argument("--variant", help="only this variant (see `kernelscope list`)")
    p.add_argument("--backend", help="only this backend (torch, torch-compile, triton, cuda, numba)")
    p.add_argument("--shape", help="input shape for every variant, e.g. 4096x4096 (default: the op's largest "
                                   "benchmark shape the variant takes; small ones on the CPU)")
    p.add_argument("--dtype", default="float32", choices=DTYPE_CHOICES,
                   help="input dtype (default float32)")
    p.add_argument("--ncu", action="store_true",
                   help="also run Nsight Compute over all selected variants in one process at the end")
    p.add_argument("--demos", action="store_true", help="also measure the lecture's demos into demos.json")
    p.add_argument("--out", type=Path, metavar="DIR", help="the machine's folder (default: profiles/<machine>)")
    p.add_argument("--json", action="store_true",
                   help="one JSON summary record per variant on stdout (with --cross-check: the table as JSON)")
    p.add_argument("--cross-check", action="store_true",
                   help="do not profile: compare the ncu kernel time in existing profiles with the suite's "
                        "warm-mode median for the same machine, size and dtype (within 3%% at 100 us or more?)")
    p.add_argument("--profiles-dir", default="profiles",
                   help="--cross-check: the profiles folder, or one machine's folder in it (default: profiles)")
    p.add_argument("--results-dir", default="results", help="--cross-check: asv's results folder (default: results)")
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("crosscheck", help="the suite's warm, cold, graph and host medians beside peer timers and ncu",
                       description="For every selected variant at its op's benchmark sizes (float32, or --dtype),\n"
                                   "time the suite's checked case with the suite's four modes and, on the same\n"
                                   "callable in the same process, with torch.utils.benchmark.Timer,\n"
                                   "triton.testing.do_bench and do_bench_cudagraph; then Nsight Compute in one\n"
                                   "second process. Writes evidence/<machine>/peers.json (a narrowed run: a file\n"
                                   "of its own beside it), prints a table, the agreement per mode and the gate.",
                       epilog=CROSSCHECK_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--op", help="only this op")
    p.add_argument("--variant", help="only this variant (see `kernelscope list`)")
    p.add_argument("--backend", help="only this backend (torch, torch-compile, triton, cuda, numba)")
    p.add_argument("--size", help="one shape for every selected variant, e.g. 4096x4096 or 268435456 "
                                  "(default: each op's benchmark sizes)")
    p.add_argument("--dtype", nargs="+", choices=DTYPE_CHOICES, default=["float32"], metavar="DTYPE",
                   help="each case in these dtypes, e.g. --dtype float32 bfloat16 (default: float32; a dtype a "
                        "variant does not take is recorded as skipped, with the reason)")
    p.add_argument("--no-ncu", action="store_true",
                   help="skip the Nsight Compute pass (default: run it when ncu is found and a GPU is there)")
    p.add_argument("--out", type=Path, metavar="PATH",
                   help="where to write the file (default: evidence/<machine>/peers.json, the machine as asv names "
                        "it; a run narrowed by --op, --variant, --backend, --size or --dtype: a file of its own "
                        "beside it, "
                        "e.g. peers-op-softmax.json, leaving the whole run's file, the one the site shows, as it was)")
    p.add_argument("--json", action="store_true", help="stamp, summary, gate and every record as JSON on stdout")
    p.add_argument("--gate", action="store_true", help="exit 1 unless the gate passes, printing what failed")
    p.set_defaults(func=cmd_crosscheck)

    p = sub.add_parser("plan", help="the kernel and launch shape a call of a tuned variant takes, on a GPU or a preset",
                       usage="kernelscope plan VARIANT SHAPE [DTYPE] [--gpu this|h100|h200] [--json]\n"
                             "       kernelscope plan --all [--gpu this|h100|h200] [--dtype DTYPE] [--json]",
                       description="Print which kernel a call of VARIANT at SHAPE takes and how it is launched:\n"
                                   "strategy, kernel (its name in the source), grid, block, cluster and the plan's\n"
                                   "other fields (elements a thread, stages, persistent or not). --all: every\n"
                                   "variant with a plan at each of its op's benchmark sizes, in its benchmarked\n"
                                   "dtypes, as a table.",
                       epilog=PLAN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("variant", nargs="?", metavar="VARIANT", help="a variant (see `kernelscope list`)")
    p.add_argument("shape", nargs="?", metavar="SHAPE", help="input shape, e.g. 4096x4096 or 268435456")
    p.add_argument("dtype", nargs="?", metavar="DTYPE", help="float32 (default), float16 or bfloat16")
    p.add_argument("--gpu", choices=("this", "h100", "h200"),
                   help="this machine's GPU (default where there is one), or a preset's facts")
    p.add_argument("--all", action="store_true", help="every variant with a plan, at its op's benchmark sizes")
    p.add_argument("--dtype", dest="all_dtype", choices=DTYPE_CHOICES, metavar="DTYPE",
                   help="--all: only this dtype (default: each variant's benchmarked dtypes)")
    p.add_argument("--json", action="store_true", help="the plan as JSON (--all: a list)")
    p.set_defaults(func=cmd_plan)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv  # the command line, for the artifacts' manifest
    try:
        return args.func(args)
    except KeyError as exc:  # unknown op / variant / backend: the message lists the known names
        print(f"kernelscope: {exc.args[0]}", file=sys.stderr)
        return 2
    except (FileNotFoundError, ImportError) as exc:
        print(f"kernelscope: {exc}", file=sys.stderr)
        return 2
