"""Tune the CUDA C++ kernels on the GPU box: softmax-cuda, gelu-cuda-vec4, square-cuda-vec4, mean-cuda.

For each op, shape and dtype: the suite's own cases (kernelscope.timing.cases,
checked against the float64 reference) for the torch variant and for the CUDA
variant at its defaults: the rows the asv suite will store. Then, at the target
shapes, the candidate launch shapes (square/gelu: tiled one lap, tiled with a
capped grid, and the old grid-stride wave; softmax: the plans the previous
sweep found best beside the defaults), each checked once against the same
reference (softmax with few rows also on masked, offset and large-logit rows)
before it is timed. Ends with the targets, met or missed, and the best
candidate where it beats the default.

    python3 scripts/gpu/tune_cuda.py --json $OUT/tune_cuda.json [--quick]

The extension build comes first (a minute or two with a cold cache) and is not
counted; the rest takes under 90 s on an H100. Exits 1 if any output was wrong.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tune import Table, args, warm_seconds  # noqa: E402  (tune puts src/ on sys.path)

import torch  # noqa: E402

from kernelscope.backends.cuda import build  # noqa: E402
from kernelscope.backends.cuda import kernels as K  # noqa: E402
from kernelscope.catalog import OPS  # noqa: E402
from kernelscope.check import relative_error  # noqa: E402
from kernelscope.ops import shape_str  # noqa: E402
from kernelscope.timing import cases  # noqa: E402

DTYPES = ("float32", "bfloat16")
ITEMSIZE = {"float32": 4, "bfloat16": 2}

SOFTMAX_SHAPES = [(64, 64), (256, 256), (1024, 1024), (4096, 4096), (8192, 8192), (16384, 16384),
                  (16384, 1000), (512, 50257), (64, 262144)]
SOFTMAX_SWEEP = [(4096, 4096), (8192, 8192), (16384, 16384), (16384, 1000), (1024, 1024), (512, 50257),
                 (64, 262144)]
SOFTMAX_SWEEP_QUICK = [(8192, 8192), (16384, 16384), (512, 50257), (64, 262144)]
SOFTMAX_QUICK_CANDIDATES = 8  # --quick: the first few of a shape's candidates (the newest come first)
# Candidates beside the default (softmax_plan's choice, always timed first), from the previous H100 sweep's winners.
SOFTMAX_CANDIDATES = {
    (4096, 4096): [("block", 128, 1), ("block", 256, 1), ("block", 512, 1)],
    # the H200's plan here is blocks of 512 threads (its HBM3e asks each SM for 1.4x the bytes in flight); the
    # lone-row ring and the other block sizes beside it
    (8192, 8192): [("block", 256, 1), ("block", 512, 1), ("ring", 256, 1), ("ring", 512, 1), ("ring3", 256, 1),
                   ("ring", 1024, 1), ("block", 1024, 1)],
    # block sizes, and the ring kernel (a block keeps 2 or 3 rows in flight), which led on the H200 before its
    # blocks of 1024 x 16; in bfloat16 (a 32 KiB row) the block plan leads
    (16384, 16384): [("block", 512, 1), ("block", 1024, 1), ("block", 256, 1), ("ring", 1024, 1), ("ring", 512, 1),
                     ("ring3", 1024, 1), ("ring", 256, 1), ("ring3", 512, 1), ("ring3", 256, 1)],
    (16384, 1000): [("warp", 128, 1), ("block", 128, 1)],
    (1024, 1024): [("warp", 128, 1), ("block", 128, 1)],
    # the wide rows' candidates, first so that --quick runs them: the ring kernel (persistent clusters, a block's
    # slices of its next 2 or 3 rows in shared memory, no row in registers); the pipe kernel (the next row in
    # shared memory behind a register-held one: behind in float32, ahead in bfloat16); the loop kernel (its loads
    # batched, its slice re-read from L2); the cluster kernel. Measured: results-proofs/tuning-sweeps/ and
    # results-proofs/softmax-wide-rows/.
    (512, 50257): [("ring", 256, 8), ("ring", 128, 8), ("ring", 256, 4), ("ring3", 256, 8), ("ring", 512, 8),
                   ("ring", 256, 16), ("pipe", 256, 4), ("pipe", 128, 8), ("pipe", 512, 4), ("pipe", 256, 8),
                   ("loop", 512, 4), ("loop", 256, 8), ("loop", 256, 4), ("loop", 512, 8), ("loop", 1024, 2),
                   ("cluster", 256, 4), ("cluster", 512, 4), ("cluster", 256, 8), ("cluster", 512, 2),
                   ("cluster", 512, 8)],
    (64, 262144): [("ring", 512, 16), ("ring", 256, 16), ("ring3", 512, 16), ("ring", 512, 8), ("ring", 1024, 16),
                   ("ring", 1024, 8), ("pipe", 512, 16), ("pipe", 256, 16), ("loop", 1024, 16), ("loop", 512, 16),
                   ("loop", 256, 16), ("loop", 512, 8), ("loop", 1024, 8),
                   ("cluster", 512, 16), ("cluster", 512, 8), ("cluster", 256, 16), ("cluster", 1024, 8)],
}

ELEMENTWISE_SHAPES = [(64, 64), (256, 256), (1024, 1024), (4096, 4096), (8192, 8192), (16384, 16384)]
ELEMENTWISE_SWEEP = [(8192, 8192), (16384, 16384)]  # 2^26 and 2^28 elements
# (threads, blocks_per_sm, unroll). blocks_per_sm 0: tiled, one lap (a block a tile of threads x unroll
# vectors); -k: the same tiles, k blocks an SM striding over them; k > 0: the grid-stride wave (old default 256, 8, 4).
ELEMENTWISE_CONFIGS = [(256, 0, 4), (128, 0, 4), (512, 0, 4), (256, 0, 2), (128, 0, 8), (256, 0, 8), (1024, 0, 2),
                       (256, -8, 4), (256, -16, 4), (256, 8, 4), (256, 16, 4), (1024, 2, 4)]
ELEMENTWISE_CONFIGS_QUICK = [(256, 0, 4), (128, 0, 4), (256, 8, 4)]

# mean-cuda (streaming, blocks per SM, loads a lap), beside the default: mean at 2^24 (mean-cuda 26.68 us
# with streaming loads against mean-compile's 26.10 on the H100); more loads in flight a thread, or fewer, larger laps
MEAN_CONFIGS = [(True, 4, 4), (True, 3, 8), (True, 2, 4), (False, 3, 4), (True, 4, 8), (True, 2, 8)]  # 4 blocks of 512: an SM full

FAILURES: list[str] = []
SUITE: dict[tuple, dict] = {}  # (op, variant, shape, dtype) -> the suite case's row
SWEEPS: dict[tuple, list[dict]] = {}  # (op, shape, dtype) -> swept rows


def reference(op, x):
    """float64 reference and the error scale, as kernelscope.check computes them."""
    x64 = x.to(torch.float64)
    ref = op.reference(x64)
    return ref, max(op.error_scale(x64, ref), torch.finfo(x.dtype).tiny)


def matches(what: str, op, out, ref, scale, dtype) -> bool:
    err = relative_error(out, ref, scale)
    if err <= op.tolerance[dtype]:
        return True
    FAILURES.append(f"{what}: rel_err {err:.3g} > {op.tolerance[dtype]:g}")
    print(f"  WRONG {what}: rel_err {err:.3g} > {op.tolerance[dtype]:g}", flush=True)
    return False


def suite_row(table: Table, op: str, variant: str, shape, dtype: str, label: str) -> None:
    """The suite's own case (checked by prepare), timed as asv times it: out allocated by each call."""
    size = shape_str(shape)
    try:
        case = cases.prepare(op, variant, size, dtype)
    except NotImplementedError as e:
        print(f"{size:>14} {dtype:>8} {label:<40} skipped: {e}", flush=True)
        return
    except RuntimeError as e:  # a wrong answer
        FAILURES.append(str(e))
        print(f"  WRONG {e}", flush=True)
        return
    SUITE[(op, variant, size, dtype)] = table.add(label, case.call, case.bytes, size, dtype)


def sweep_row(table: Table, op, label: str, run, x, out, ref, scale, shape, dtype: str, stress=()) -> None:
    """run(x, out) at one launch configuration: checked (also on the stress inputs), then timed."""
    size = shape_str(shape)
    try:
        run(x, out)
        torch.cuda.synchronize()
    except RuntimeError as e:  # a configuration the GPU refuses (cluster too large for the resources, ...)
        print(f"{size:>14} {dtype:>8} {label:<40} refused: {str(e).splitlines()[0]}", flush=True)
        return
    ok = matches(f"{op.name} {label} {size} {dtype}", op, out, ref, scale, dtype)
    for name, sx, sout, sref, sscale in stress:
        run(sx, sout)
        ok &= matches(f"{op.name} {label} {size} {dtype} ({name} input)", op, sout, sref, sscale, dtype)
    if ok and (op.name, size, dtype) not in SWEEPS:
        # A sweep's first row reads about 15% slow, whichever configuration it is (results-proofs/tuning-sweeps/,
        # "A sweep's first row"): timed once, unrecorded.
        warm_seconds(lambda: run(x, out), samples=5)
    if ok:
        row = table.add(label, lambda: run(x, out), op.bytes_for(shape, dtype), size, dtype)
        SWEEPS.setdefault((op.name, size, dtype), []).append(row)


def plan_label(plan) -> str:
    return f"{plan[0]} threads={plan[1]} cluster={plan[2]}"


def launchable(p: K.SoftmaxPlan, cols: int, dtype: str) -> bool:
    """Whether launch_softmax takes plan ``p`` for rows of ``cols`` (registers, shared memory)."""
    item = ITEMSIZE[dtype]
    if p.strategy == "warp":
        return K.floats_per_thread(cols, item, 32) <= 32
    if p.strategy in ("loop", "loopp"):
        return True
    if p.strategy == "pipe":
        return K.floats_per_thread(cols, item, p.threads, p.cluster) <= K.pipe_capacity(p.threads)
    if p.strategy in K.SOFTMAX_RING_STAGES:
        stages = K.SOFTMAX_RING_STAGES[p.strategy]
        return K.ring_bytes(cols, item, p.threads, p.cluster, stages) <= K.SOFTMAX_RING_MAX_BYTES
    return K.floats_per_thread(cols, item, p.threads, p.cluster) <= K.register_capacity(p.threads)


def launchable_plans(shape, dtype: str, candidates) -> list[K.SoftmaxPlan]:
    """The candidates, as plans, that launch_softmax takes for this shape, in their order."""
    return [p for p in map(K.SoftmaxPlan._make, candidates) if launchable(p, shape[1], dtype)]


def with_default(shape, dtype: str, candidates) -> list[K.SoftmaxPlan]:
    """softmax_plan's choice on this GPU first, then the launchable candidates that differ from it."""
    default = K.device_softmax_plan(*shape, ITEMSIZE[dtype])
    return [default] + [p for p in launchable_plans(shape, dtype, candidates) if p != default]


def softmax_candidates(shape, dtype: str, quick: bool) -> list[K.SoftmaxPlan]:
    plans = launchable_plans(shape, dtype, SOFTMAX_CANDIDATES[shape])
    return with_default(shape, dtype, plans[:SOFTMAX_QUICK_CANDIDATES] if quick else plans)


def softmax_stress(op, shape, dtype: str) -> list[tuple]:
    """The masked, offset and large-logit inputs for rows under 2048 (the cluster and loop kernels' shapes), each
    as (name, x, out, reference, scale); none for many rows (their memory)."""
    stress = []
    if shape[0] < 2048:
        for s in op.stress:
            if s.name in ("masked", "offset", "large-logits"):
                sx = s.make(shape, dtype, "cuda", 2)
                stress.append((s.name, sx, torch.empty_like(sx), *reference(op, sx)))
    return stress


def tune_softmax(table: Table, quick: bool) -> None:
    op = OPS["softmax"]
    for shape in SOFTMAX_SHAPES:
        for dtype in DTYPES:
            plan = K.device_softmax_plan(*shape, ITEMSIZE[dtype])
            suite_row(table, "softmax", "softmax-torch", shape, dtype, "softmax-torch (suite)")
            suite_row(table, "softmax", "softmax-cuda", shape, dtype, f"softmax-cuda (suite) {plan_label(plan)}")
        cases._CASES.clear()  # the suite's cases keep their inputs: free them shape by shape
    for shape in SOFTMAX_SWEEP_QUICK if quick else SOFTMAX_SWEEP:
        for dtype in DTYPES:
            x = op.make_input(shape, dtype, "cuda", 1)
            out = torch.empty_like(x)
            ref, scale = reference(op, x)
            stress = softmax_stress(op, shape, dtype)
            for i, plan in enumerate(softmax_candidates(shape, dtype, quick)):
                label = plan_label(plan) + (" (default)" if i == 0 else "")
                sweep_row(table, op, label, lambda a, b, p=plan: K.softmax(a, b, plan=p), x, out, ref, scale,
                          shape, dtype, stress)
            del x, out, ref, stress
            torch.cuda.empty_cache()


def elementwise_label(threads: int, bps: int, unroll: int) -> str:
    mode = "tiled 1-lap" if bps == 0 else ("tiled stride" if bps < 0 else "grid-stride")
    return f"{mode} t={threads} bps={abs(bps)} u={unroll}"


def tune_elementwise(table: Table, op_name: str, fn, quick: bool) -> None:
    op = OPS[op_name]
    default = (K.ELEMENTWISE_THREADS, K.ELEMENTWISE_BLOCKS_PER_SM, K.ELEMENTWISE_UNROLL)
    for shape in ELEMENTWISE_SHAPES:
        for dtype in DTYPES:
            suite_row(table, op_name, f"{op_name}-torch", shape, dtype, f"{op_name}-torch (suite)")
            suite_row(table, op_name, f"{op_name}-cuda-vec4", shape, dtype,
                      f"{op_name}-cuda-vec4 (suite) {elementwise_label(*default)}")
        cases._CASES.clear()
    configs = ELEMENTWISE_CONFIGS_QUICK if quick else ELEMENTWISE_CONFIGS
    configs = [default] + [c for c in configs if c != default]
    for shape in ELEMENTWISE_SWEEP:
        for dtype in DTYPES:
            x = op.make_input(shape, dtype, "cuda", 1)
            out = torch.empty_like(x)
            ref, scale = reference(op, x)
            for i, (threads, bps, unroll) in enumerate(configs):
                label = elementwise_label(threads, bps, unroll) + (" (default)" if i == 0 else "")
                sweep_row(table, op, label, lambda a, b, t=threads, s=bps, u=unroll: fn(a, b, t, s, u),
                          x, out, ref, scale, shape, dtype)
            del x, out, ref
            torch.cuda.empty_cache()


def summary() -> list[dict]:
    """The targets, met or missed, from the suite's rows; the best swept configuration where it beats the default."""
    records = []

    def record(target: str, ok: bool | None, value: str) -> None:
        status = "n/a " if ok is None else ("MET " if ok else "MISS")
        print(f"  {status} {target:<62} {value}", flush=True)
        records.append({"title": "summary", "target": target, "met": ok, "value": value})

    def suite(op, variant, shape, dtype):
        return SUITE.get((op, variant, shape_str(shape), dtype))

    print("\n== targets (suite rows: the call asv times)", flush=True)
    for op in ("square", "gelu"):
        for shape in ELEMENTWISE_SWEEP:
            for dtype in DTYPES:
                row = suite(op, f"{op}-cuda-vec4", shape, dtype)
                record(f"{op}-cuda-vec4 {shape_str(shape)} {dtype} >= 95% of copy", row and row["pct_copy"] >= 95,
                       f"{row['pct_copy']:.1f}%" if row else "no row")
    for shape in SOFTMAX_SHAPES:
        for dtype in DTYPES:
            mine, torch_row = suite("softmax", "softmax-cuda", shape, dtype), suite("softmax", "softmax-torch", shape,
                                                                                    dtype)
            if not (mine and torch_row):
                record(f"softmax-cuda {shape_str(shape)} {dtype} as fast as torch", None, "no row")
                continue
            speedup = torch_row["time_us"] / mine["time_us"]
            need = 1.10 if (shape == (16384, 16384) and dtype == "float32") else 1.0
            record(f"softmax-cuda {shape_str(shape)} {dtype} >= {need:.2f}x torch", speedup >= need,
                   f"{speedup:.3f}x ({mine['time_us']:.1f} vs {torch_row['time_us']:.1f} us, "
                   f"{mine['pct_copy']:.1f}% vs {torch_row['pct_copy']:.1f}% of copy)")
            if shape in ((512, 50257), (64, 262144)):
                record(f"softmax-cuda {shape_str(shape)} {dtype} >= 85% of copy", mine["pct_copy"] >= 85,
                       f"{mine['pct_copy']:.1f}%")
    for shape in MEAN_SHAPES[:1]:  # the target: mean-cuda at 2^24 at least as fast as mean-compile
        mine, compiled = suite("mean", "mean-cuda", shape, "float32"), suite("mean", "mean-compile", shape, "float32")
        record(f"mean-cuda {shape_str(shape)} float32 as fast as mean-compile",
               (mine["time_us"] <= compiled["time_us"]) if (mine and compiled) else None,
               f"{mine['time_us']:.2f} vs {compiled['time_us']:.2f} us" if (mine and compiled) else "no row")
    print("\n== square/gelu: best tiled vs best grid-stride candidate (out given)", flush=True)
    for (op, size, dtype), rows in SWEEPS.items():
        if op not in ("square", "gelu"):
            continue
        tiled = [r for r in rows if r["config"].startswith("tiled")]
        stride = [r for r in rows if r["config"].startswith("grid-stride")]
        if tiled and stride:
            bt, bs = max(tiled, key=lambda r: r["pct_copy"]), max(stride, key=lambda r: r["pct_copy"])
            line = (f"{op} {size} {dtype}: {bt['config']} {bt['pct_copy']:.1f}% vs "
                    f"{bs['config']} {bs['pct_copy']:.1f}%")
            print("  " + line, flush=True)
            records.append({"title": "tiled-vs-grid-stride", "op": op, "shape": size, "dtype": dtype,
                            "tiled": bt["config"], "tiled_pct_copy": bt["pct_copy"],
                            "grid_stride": bs["config"], "grid_stride_pct_copy": bs["pct_copy"]})
    print("\n== best candidate (out given) where it beats the default by 1% or more", flush=True)
    for (op, size, dtype), rows in SWEEPS.items():
        default = next((r for r in rows if r["config"].endswith("(default)")), None)
        best = max(rows, key=lambda r: r["pct_copy"])
        if default and best["pct_copy"] > default["pct_copy"] * 1.01:
            line = (f"{op} {size} {dtype}: {best['config']} {best['pct_copy']:.1f}% vs default "
                    f"{default['pct_copy']:.1f}%")
            print("  " + line, flush=True)
            records.append({"title": "best", "op": op, "shape": size, "dtype": dtype, "config": best["config"],
                            "pct_copy": best["pct_copy"], "default_pct_copy": default["pct_copy"]})
    return records


MEAN_SHAPES = [(2**24,), (2**26,), (2**28,)]  # the target's 2^24 first; the suite's largest sizes


def tune_mean(table: Table, quick: bool) -> None:
    """mean-cuda as the suite runs it beside torch.mean and mean-compile, then both load paths."""
    op = OPS["mean"]
    for shape in MEAN_SHAPES[:1] if quick else MEAN_SHAPES:
        for variant in ("mean-torch", "mean-compile", "mean-cuda"):
            suite_row(table, "mean", variant, shape, "float32", f"{variant} (suite)")
        cases._CASES.clear()
        x = op.make_input(shape, "float32", "cuda", 1)
        out = torch.empty((), device="cuda")
        ref, scale = reference(op, x)
        default = (K.MEAN_STREAMING, K.MEAN_BLOCKS_PER_SM, K.MEAN_UNROLL)
        for config in [default] + [c for c in MEAN_CONFIGS if c != default]:
            streaming, bps, unroll = config
            label = (f"{'streaming (__ldcs)' if streaming else 'read-only (__ldg)'} blocks/SM={bps} unroll={unroll}"
                     + (" (default)" if config == default else ""))
            sweep_row(table, op, label, lambda a, b, c=config: K.mean(a, b, *c), x, out, ref, scale, shape,
                      "float32")
        del x, out, ref
        torch.cuda.empty_cache()


def main() -> int:
    opts = args("sweep the launch shapes of the CUDA C++ softmax, gelu and square kernels")
    start = time.perf_counter()
    build.extension()
    print(f"extension ready in {time.perf_counter() - start:.1f} s ({torch.cuda.get_device_name()}, "
          f"torch {torch.__version__}, CUDA {torch.version.cuda})", flush=True)
    print(f"DRAM peak {K.dram_gbps_per_sm(0) * torch.cuda.get_device_properties(0).multi_processor_count:.0f} GB/s "
          f"from the device's attributes, {K.dram_gbps_per_sm(0):.1f} GB/s an SM (softmax_plan's float32 rows of a "
          f"block each get {K.SOFTMAX_LONE_EPT_WIDE_DRAM} elements a thread from {K.SOFTMAX_WIDE_DRAM_GBPS_PER_SM:g})",
          flush=True)
    start = time.perf_counter()

    softmax = Table("softmax-cuda")
    tune_softmax(softmax, opts.quick)
    gelu = Table("gelu-cuda-vec4", copy_gbps=softmax.copy_gbps)
    tune_elementwise(gelu, "gelu", lambda x, out, t, s, u: K.gelu_vec4(x, out, t, s, u), opts.quick)
    square = Table("square-cuda-vec4", copy_gbps=softmax.copy_gbps)
    tune_elementwise(square, "square", lambda x, out, t, s, u: K.square_vec4(x, out, t, s, u), opts.quick)
    mean = Table("mean-cuda", copy_gbps=softmax.copy_gbps)
    tune_mean(mean, opts.quick)

    records = summary()
    for table in (softmax, gelu, square, mean):
        table.dump(opts.json)
    if opts.json:
        path = Path(opts.json)
        path.write_text(json.dumps(json.loads(path.read_text()) + records, indent=1))
    print(f"\n{len(FAILURES)} wrong outputs; {time.perf_counter() - start:.0f} s after the build", flush=True)
    for failure in FAILURES:
        print("  " + failure)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
