"""Launch shapes of the tuned Triton softmax and mean, on the GPU box.

    python3 scripts/gpu/tune_triton.py --json $OUT/tune_triton.json [--quick]

softmax-triton-tuned, in float32 and bfloat16, at the suite's widths plus
8192x8192: one row for the catalog variant as the suite calls it (warm, and
up to 2^26 elements replayed in a CUDA graph), one for torch.softmax, then
overrides of ``softmax_plan`` (group bytes, L2 hints, chunk, num_warps, rows
per program) run through ``softmax_planned`` (each measured alternative to the
defaults). Each row prints the plan and its
prediction: DRAM bytes if pass 2's re-read hits L2, the bytes re-read from
L2, launches. mean-triton-tuned at 2^24 (and 2^26, 2^28): torch.mean, the
torch.compile'd mean, then mean_one_pass overrides (BLOCK, num_warps,
programs per SM, num_stages, evict_first loads, contiguous spans).

Every configuration's output is checked once against the float64 reference
with the suite's error measure and tolerance before it is timed. The last
lines compare the defaults with the targets (90-95% of copy, mean as fast as mean-compile). Each new configuration
compiles (about a second); the run takes under a minute.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tune import Table, args  # noqa: E402  (tune puts src/ on the path)

import torch  # noqa: E402

from kernelscope.catalog import OPS, VARIANTS  # noqa: E402
from kernelscope.check import error_against_reference  # noqa: E402
from kernelscope.ops import shape_str  # noqa: E402

from kernelscope.backends.triton import mean as tmean  # noqa: E402
from kernelscope.backends.triton import softmax as tsoftmax  # noqa: E402

DEVICE = "cuda"
MB = 1 << 20

SOFTMAX_SHAPES = [(64, 64), (256, 256), (1024, 1024), (4096, 4096), (8192, 8192), (16384, 16384),
                  (16384, 1000), (512, 50257), (64, 262144)]
SOFTMAX_DTYPES = ["float32", "bfloat16"]
WIDE = [(512, 50257), (64, 262144)]
# The split path's tunables, at both wide shapes in both dtypes, beside the default (64 MB groups: one group at
# 64x262144, 2 or 4 at 512x50257). Float32 rows that give every program of the persist plan a row take it; the
# split plan is the {"persistent": False} row, the other shapes' default. The persist kernel keeps PERSIST_STAGES
# chunks of cp.async in flight a program, while 100% of copy asks an SM for about 21 GB/s on the H100 (32 on the
# H200): at 1-1.5 us of loaded DRAM latency, little margin. So first (--quick) the candidates with more bytes in
# flight an SM: the stages before the default, deeper pipelines, larger chunks over 1024 threads (one program an
# SM: two of 1024 threads do not fit its registers); then each knob alone, the split plan, the grid's rule. What
# each sweep measured: results-proofs/tuning-sweeps/ (its README names the folder).
SPLIT_SWEEP = [{"persistent": True, "persist_stages": 3},
               {"persistent": True, "persist_stages": 6, "persist_programs_per_sm": 1},
               {"persistent": True, "split_warps": 32, "chunk": 8192, "persist_programs_per_sm": 1},
               {"persistent": True, "split_warps": 32, "chunk": 16384, "persist_programs_per_sm": 1},
               {"persistent": True, "split_warps": 32, "chunk": 8192, "persist_stages": 4,
                "persist_programs_per_sm": 1},
               {"persistent": False}, {"persistent": True, "persist_programs_per_sm": 1},
               {"persistent": True, "persist_programs_per_sm": 2}, {"persistent": True, "split_warps": 8},
               {"persistent": True, "persist_group": 1, "persist_vectorize": False},
               {"persistent": True, "persist_vectorize": False}, {"persistent": True, "persist_group": 1},
               {"persistent": True, "chunk": 8192}, {"persistent": True, "chunk": 4096},
               {"persistent": True, "persist_programs_per_sm": 3},
               {"pipelined": True}, {"persistent": True, "l2_hints": False},
               {"pipelined": True, "pipe_group_bytes": 8 * MB},
               {"pipelined": True, "pipe_group_bytes": 24 * MB}, {"pipelined": True, "chunk": 8192},
               {"group_bytes": 32 * MB, "persistent": False}, {"chunk": 8192, "persistent": False},
               {"split_warps": 8, "persistent": False}, {"chunk": 8192, "split_warps": 8, "persistent": False}]
# The row and narrow paths' alternatives to the defaults, in both dtypes: the
# old defaults (narrow 4 rows / 16 warps at 1024 columns, 16 warps at 4096), 8 warps.
ROW_SWEEP = {
    (1024, 1024): [{"narrow_cols": 1024}],
    (4096, 4096): [{"few_warps_cols": 2048}, {"few_warps": 8}],
    (16384, 1000): [{"narrow_cols": 1024}],
    # the persist plan (the tiles plan off); one program a row holding a 65536 tile (the lecture's launch, which
    # spills)
    (512, 50257): [{"tiles_max_cols": 0}, {"max_row_block": 65536}],
}
QUICK_SHAPES = [(4096, 4096), (512, 50257), (64, 262144)]
QUICK_SPLIT = 9  # the first of SPLIT_SWEEP under --quick

MEAN_SHAPES = [(2**24,), (2**26,), (2**28,)]  # the sweep at the first; the suite's largest sizes
# mean_one_pass keyword overrides, tried at 2^24 after the default. The default:
# BLOCK 4096, 16 warps, 4 programs per SM, grid-stride. "contiguous": each program
# one span of x, as inductor's split reduction (512 programs x 32768 elements here).
MEAN_SWEEP = [
    {"num_warps": 8},  # the previous default
    {"num_warps": 8, "programs_per_sm": 8},
    {"programs_per_sm": 2}, {"programs_per_sm": 8},
    {"block": 8192, "programs_per_sm": 2}, {"block": 8192}, {"block": 8192, "programs_per_sm": 8},
    {"block": 2048, "num_warps": 4, "programs_per_sm": 8}, {"block": 2048, "num_warps": 4, "programs_per_sm": 16},
    {"num_stages": 1}, {"num_stages": 2}, {"num_stages": 4},
    {"evict": "evict_first"}, {"evict": "evict_first", "programs_per_sm": 8},
    {"contiguous": True}, {"contiguous": True, "block": 2048, "num_warps": 8},
    {"contiguous": True, "evict": "evict_first"},
]
QUICK_MEAN = 3


def mean_label(block=tmean.TUNED_BLOCK, num_warps=tmean.TUNED_WARPS, programs_per_sm=tmean.PROGRAMS_PER_SM,
               num_stages=tmean.TUNED_STAGES, evict=tmean.EVICT, contiguous=tmean.CONTIGUOUS) -> str:
    extra = (f" stages={num_stages}" if num_stages is not None else "") + (f" {evict}" if evict else "")
    return f"BLOCK={block} w={num_warps} programs/SM={programs_per_sm}{extra}{' contiguous' if contiguous else ''}"


def checked(op_name: str, x: torch.Tensor, dtype: str, fn, label: str):
    """fn after one call whose output is within the op's tolerance of the float64 reference."""
    out = fn()
    torch.cuda.synchronize()
    op = OPS[op_name]
    err = error_against_reference(op, x, out)
    tol = op.tolerance[dtype]
    assert err <= tol, f"{op_name} {shape_str(tuple(x.shape))} {dtype} {label}: rel_err {err:.3g} > {tol:g}"
    return fn


def catalog_call(name: str, fallback):
    """The variant as the suite calls it (validated), or the bare function if the catalog lacks it."""
    return VARIANTS[name] if name in VARIANTS else fallback


def size(nbytes: int) -> str:
    return f"{nbytes / MB:.1f}MB" if nbytes >= MB else f"{nbytes / 1024:.0f}KB"


def plan_text(plan: tsoftmax.SoftmaxPlan, shape, itemsize: int) -> str:
    """The plan, and its prediction: [DRAM bytes, L2 bytes re-read, launches]."""
    p = plan.predict(*shape, itemsize)
    if plan.strategy == "persist":
        what = (f"persist chunk={plan.block} w={plan.num_warps} programs={plan.programs} stages={plan.stages}"
                f" group={plan.group}{' 16B' if plan.vectorize else ''}{' hints' if plan.l2_hints else ''}")
    elif plan.strategy in ("split", "pipe"):
        what = (f"{plan.strategy} chunk={plan.block} w={plan.num_warps} group={plan.group_rows}r/"
                f"{size(p['group_bytes'])}{' hints' if plan.l2_hints else ''}")
    elif plan.strategy == "tiles":
        what = f"tiles {'+'.join(str(t) for t in plan.tiles if t > 1)} w={plan.num_warps}"
    else:
        what = f"{plan.strategy} block={plan.block} rows/prog={plan.rows_per_program} w={plan.num_warps}"
    return f"{what} [DRAM {size(p['dram_bytes'])} L2 {size(p['l2_reread_bytes'])} x{p['launches']}]"


def sweep_softmax(copy_gbps: float | None, quick: bool) -> Table:
    table = Table("softmax-triton-tuned: softmax_plan overrides", copy_gbps)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    variant = catalog_call("softmax-triton-tuned", tsoftmax.softmax_tuned)
    for shape in QUICK_SHAPES if quick else SOFTMAX_SHAPES:
        for dtype in SOFTMAX_DTYPES:
            x = OPS["softmax"].make_input(shape, dtype, DEVICE, 0)
            y = torch.empty_like(x)
            nbytes, s = OPS["softmax"].bytes_for(shape, dtype), shape_str(shape)
            itemsize = x.element_size()

            def add(label, fn, role, plan=None, overrides=None, graph=False):
                row = table.add(label, checked("softmax", x, dtype, fn, label), nbytes, s, dtype, graph=graph)
                row.update(role=role, overrides=overrides or {})
                if plan is not None:
                    row.update(plan=asdict(plan), predicted=plan.predict(*shape, itemsize))

            default = tsoftmax.default_plan(*shape, itemsize, x.device)
            add(f"catalog {plan_text(default, shape, itemsize)}", lambda: variant(x, y), "catalog", default,
                graph=x.numel() <= 2**26)
            add("torch.softmax", lambda: torch.softmax(x, dim=-1), "torch")
            sweep = list(ROW_SWEEP.get(shape, []))
            if shape in WIDE:
                sweep += SPLIT_SWEEP[:QUICK_SPLIT] if quick else SPLIT_SWEEP
            for overrides in sweep:
                plan = tsoftmax.softmax_plan(*shape, itemsize, sms, l2_bytes=tsoftmax.l2_bytes(x.device), **overrides)
                add(f"{plan_text(plan, shape, itemsize)} {overrides}",
                    lambda p=plan: tsoftmax.softmax_planned(x, y, p), "sweep", plan, overrides)
            del x, y
            torch.cuda.empty_cache()
    return table


def sweep_mean(copy_gbps: float | None, quick: bool) -> Table:
    table = Table("mean-triton-tuned: one launch, BLOCK / num_warps / programs per SM", copy_gbps)
    variant = catalog_call("mean-triton-tuned", tmean.mean_tuned)
    from kernelscope.backends import compiled  # torch.compile'd torch.mean, as the suite's mean-compile

    dtype = "float32"
    for shape in MEAN_SHAPES:
        x = OPS["mean"].make_input(shape, dtype, DEVICE, 0)
        y = torch.empty((), device=DEVICE, dtype=x.dtype)
        nbytes, s = OPS["mean"].bytes_for(shape, dtype), shape_str(shape)

        def add(label, fn, role, graph=False, **config):
            row = table.add(label, checked("mean", x, dtype, fn, label), nbytes, s, dtype, graph=graph)
            row.update(role=role, mean_config=config)

        add(f"catalog {mean_label()}", lambda: variant(x, y), "catalog", graph=True)
        add("torch.mean", lambda: torch.mean(x), "torch")
        add("torch.compile(torch.mean)", lambda: compiled.mean(x), "compile")
        if shape == MEAN_SHAPES[0]:
            for overrides in MEAN_SWEEP[:QUICK_MEAN] if quick else MEAN_SWEEP:
                add(mean_label(**overrides), lambda o=overrides: tmean.mean_one_pass(x, y, **o), "sweep",
                    **overrides)
        torch.cuda.synchronize()
        assert tmean.arrival_counter(x.device).item() == 0, "the arrival counter must be back at 0 after every call"
        del x
        torch.cuda.empty_cache()
    return table


def targets(softmax: Table, mean: Table) -> None:
    """The targets, from the rows just measured."""
    def find(table, shape, dtype, role):
        return next((r for r in table.rows if r["shape"] == shape and r["dtype"] == dtype and r["role"] == role), None)

    print("== targets (catalog defaults)")
    for shape in SOFTMAX_SHAPES:
        for dtype in SOFTMAX_DTYPES:
            s = shape_str(shape)
            ours, ref = find(softmax, s, dtype, "catalog"), find(softmax, s, dtype, "torch")
            if not ours or not ref:
                continue
            speedup = ref["time_us"] / ours["time_us"]
            need = [("vs torch", speedup >= 1.0 if shape != (16384, 16384) else speedup >= 1.10)]
            if shape in WIDE:
                need.append((">= 85% copy", ours["pct_copy"] >= 85.0))
            verdict = " ".join(f"{what} {'ok' if ok else 'MISSED'}" for what, ok in need)
            print(f"softmax {s:>12} {dtype:>8}: {ours['time_us']:9.2f} us {ours['pct_copy']:5.1f}% "
                  f"torch {ref['time_us']:9.2f} us  x{speedup:.2f}  {verdict}")
    for shape in MEAN_SHAPES:
        s = shape_str(shape)
        ours, ref, comp = (find(mean, s, "float32", role) for role in ("catalog", "torch", "compile"))
        if ours and ref and comp:
            ok = ours["time_us"] <= min(ref["time_us"], comp["time_us"]) * 1.01
            print(f"mean {s:>12}: {ours['time_us']:8.2f} us  torch {ref['time_us']:8.2f}  compile "
                  f"{comp['time_us']:8.2f}  {'ok' if ok else 'MISSED'}")


def main() -> None:
    opts = args(__doc__.splitlines()[0])
    start = time.perf_counter()
    softmax = sweep_softmax(None, opts.quick)
    softmax.dump(opts.json)
    print(f"-- {time.perf_counter() - start:.0f} s so far", flush=True)
    mean = sweep_mean(softmax.copy_gbps, opts.quick)  # the copy bandwidth measured once, by the first table
    mean.dump(opts.json)
    targets(softmax, mean)
    print(f"defaults: softmax narrow_cols={tsoftmax.NARROW_COLS} narrow_elems={tsoftmax.NARROW_ELEMS} "
          f"max_row_block={tsoftmax.MAX_ROW_BLOCK} chunk={tsoftmax.SPLIT_CHUNK} "
          f"group={tsoftmax.GROUP_BYTES / MB:.0f}MB elems/thread={tsoftmax.ELEMS_PER_THREAD} "
          f"max_warps={tsoftmax.MAX_WARPS} (<= {tsoftmax.FEW_WARPS} up to {tsoftmax.FEW_WARPS_COLS} columns); "
          f"mean {mean_label()}; {time.perf_counter() - start:.0f} s in all")


if __name__ == "__main__":
    main()
