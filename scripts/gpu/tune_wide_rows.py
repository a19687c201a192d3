"""softmax-cuda's launch shapes at the wide softmax rows (512x50257, 64x262144): where the time goes, plan by plan.

Two parts, each optional:

* ``--sweep``: at 512x50257 and 64x262144, float32 and bfloat16, the copy of
  the input (the floor at that size: floors.py), softmax_plan's default and
  a grid of launch shapes, each checked against the float64 reference (also on
  masked, offset and large-logit rows) before the suite's warm clock times it.
  The grid spans what shared memory and clusters allow: the ring kernel with one
  stage (a block's whole slice in shared memory, so a 50257-wide float32 row
  fits one block and needs no cluster), two and three stages, over clusters of
  1 to 16 blocks, beside the register-held cluster and loop plans.
* ``--ncu``: Nsight Compute's full set on a few of those launches (and, for
  reference, the block plan at 4096x4096, which moves 64x262144's bytes at 91%
  of copy, and softmax-triton-tuned at 512x50257), one ncu process a case.
  Printed: time, DRAM throughput, SM-active share, achieved occupancy, L2 hit
  rate, the cluster metrics and the top warp stall reasons; each case's whole
  details page goes into --out.

    python3 scripts/gpu/tune_wide_rows.py --sweep --ncu --out DIR [--json FILE]

About 60 s for the sweep on an H100 (its extension built), 15 s a case for ncu.
Exits 1 if any output was wrong.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tune_cuda as T  # noqa: E402  (tune puts src/ on sys.path)
from tune import Table  # noqa: E402

import torch  # noqa: E402

from kernelscope.backends.cuda import build  # noqa: E402
from kernelscope.backends.cuda import kernels as K  # noqa: E402
from kernelscope.catalog import OPS  # noqa: E402
from kernelscope.ops import shape_str  # noqa: E402

# (shape, dtype) -> plans beside the default: (strategy, threads, cluster). What the grid has shown (the sweeps'
# output, GPU by GPU, is in results-proofs/softmax-wide-rows): the ring kernel of one stage (ring1) won float32
# 512x50257 (83.3% of copy at 512 x 4 on the H100 against the cluster plan's 78.4%) and its bfloat16 (77.1% at
# 512 x 1 against 64.8%); nothing beat the loop kernel at 64x262144. Not kept: a kernel refilling each slot with
# the next row's vector as soon as it was written (79.4-81.9% at 512x50257 float32), and a cooperative grid of
# resident blocks exchanging each row's (max, sum) through global memory (47-72%, every block of a row held to the
# slowest one's pace: results-proofs/softmax-grid-kernel). The loop kernel exchanges its pairs by st.async and
# mbarriers (71.5% against the cluster barrier's 69.2% at 64x262144 float32 on the H100) and, in float32, issues 8
# loads a lap (H100 75.6% against 4 loads' 71.8%, H200 in clusters of 8 63.5% against 57.7%). Its persistent form
# ("loopp") won bfloat16's 64x262144; float32 64x262144 in clusters of 10-15, whose resident counts divide 64 rows
# more evenly, all read behind 512 x 16.
GRID = {
    ((512, 50257), "float32"): [
        ("ring1", 512, 4), ("ring1e", 512, 2),  # two exps an element against one (ring1e, the default)
        ("cluster", 256, 4), ("ring1", 1024, 1), ("ring1", 512, 2), ("loopp", 512, 4), ("loop", 512, 4),
        ("loopp", 1024, 2), ("loopp", 512, 8)],
    ((64, 262144), "float32"): [
        ("loop", 512, 12), ("loopp", 512, 12), ("loop", 512, 13), ("loop", 512, 11), ("loop", 512, 14),
        ("loop", 512, 15), ("loop", 512, 10), ("loop", 1024, 6), ("loop", 1024, 7), ("loop", 256, 12),
        ("loop", 256, 16), ("loop", 1024, 8), ("loopp", 512, 16),
        # the row held between its read and its write, not re-read: in shared memory (ring1, ring),
        # in registers (cluster, pipe), in clusters of 16 (floors.py --kernels times each with free exps)
        ("ring1", 512, 16), ("ring1", 1024, 16), ("ring", 512, 16), ("cluster", 1024, 16), ("pipe", 512, 16),
        ("ring1e", 512, 16)],  # ring1 512 x 16 led the H200's floors here (results-proofs/softmax-floors/)
    ((512, 50257), "bfloat16"): [
        ("ring1", 512, 2), ("ring1e", 512, 1),  # two exps an element against one (ring1e, the default)
        ("ring1", 512, 1), ("ring1", 1024, 2), ("ring1", 512, 4), ("ring", 256, 4), ("loopp", 512, 2),
        ("loopp", 256, 4), ("loopp", 512, 4)],
    ((64, 262144), "bfloat16"): [
        ("loop", 512, 12), ("loop", 512, 13), ("loopp", 512, 8), ("loop", 512, 8), ("loop", 1024, 6),
        ("ring", 512, 8), ("ring1", 512, 16), ("cluster", 1024, 16), ("pipe", 512, 16), ("ring1e", 512, 16)],
}

# --sweep-set lone: the rows one block holds, at 2^26 and 2^28 elements (where softmax-cuda read furthest below
# its copy on the H200), the block plan beside the lone-row ring.
GRID_LONE = {
    ((16384, 16384), "float32"): [("block", 512, 1), ("ring", 1024, 1), ("block", 256, 1), ("ring", 512, 1),
                                  ("block", 1024, 1)],
    ((16384, 16384), "bfloat16"): [("block", 512, 1), ("block", 256, 1), ("ring", 256, 1), ("block", 1024, 1)],
    ((8192, 8192), "float32"): [("block", 512, 1), ("block", 256, 1), ("ring", 1024, 1)],
    ((8192, 8192), "bfloat16"): [("block", 256, 1), ("block", 512, 1)],
}

# ncu cases: (label, variant, shape, dtype, plan or None for the variant's own call). --ncu-cases lone: the H200's
# gap at 2^28, softmax-cuda beside softmax-triton-tuned in the same launch shape (a block of 512 threads a row),
# which read closer to its copy there.
LONE_CASES = [
    ("cuda-default 16384x16384 bf16", "softmax-cuda", (16384, 16384), "bfloat16", None),
    ("triton-tuned 16384x16384 bf16", "softmax-triton-tuned", (16384, 16384), "bfloat16", None),
    ("cuda-default 16384x16384", "softmax-cuda", (16384, 16384), "float32", None),
    ("triton-tuned 16384x16384", "softmax-triton-tuned", (16384, 16384), "float32", None),
]
NCU_CASES = [
    ("cuda-default 512x50257", "softmax-cuda", (512, 50257), "float32", None),
    ("cuda-default 64x262144", "softmax-cuda", (64, 262144), "float32", None),
    ("cuda-default 64x262144 bf16", "softmax-cuda", (64, 262144), "bfloat16", None),
    ("cuda-block-256 4096x4096", "softmax-cuda", (4096, 4096), "float32", ("block", 256, 1)),
    ("triton-tuned 512x50257", "softmax-triton-tuned", (512, 50257), "float32", None),
]
CASE_SETS = {"wide": NCU_CASES, "lone": LONE_CASES}  # --ncu-cases
SWEEP_SETS = {"wide": GRID, "lone": GRID_LONE}  # --sweep-set
SUMMARY_METRICS = {
    "gpu__time_duration.sum": "time",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM %",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "DRAM % (gpu)",
    "sm__cycles_active.avg": "SM active cycles",
    "gpc__cycles_elapsed.max": "elapsed cycles",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy %",
    "lts__t_sector_hit_rate.pct": "L2 hit %",
    "dram__bytes_read.sum": "DRAM read",
    "dram__bytes_write.sum": "DRAM write",
    "launch__grid_size": "grid",
    "launch__block_size": "block",
    "launch__registers_per_thread": "regs",
    "launch__occupancy_limit_shared_mem": "blocks/SM (smem)",
}


def sweep(table: Table, grids: dict) -> None:
    op = OPS["softmax"]
    for (shape, dtype), grid in grids.items():
        x = op.make_input(shape, dtype, "cuda", 1)
        out = torch.empty_like(x)
        size = x.numel() * x.element_size()
        table.add("copy (read + write)", lambda: out.copy_(x), 2 * size, shape_str(shape), dtype)
        ref, scale = T.reference(op, x)
        stress = T.softmax_stress(op, shape, dtype)
        for i, plan in enumerate(T.with_default(shape, dtype, grid)):
            label = T.plan_label(plan) + (" (default)" if i == 0 else "")
            T.sweep_row(table, op, label, lambda a, b, p=plan: K.softmax(a, b, plan=p), x, out, ref, scale, shape,
                        dtype, stress)
        del x, out, ref, stress
        torch.cuda.empty_cache()


def resident_clusters() -> dict:
    """The loop kernel's clusters resident at once, by dtype, threads and cluster size: the rows a round takes.
    A cluster sits in one GPC, so on a GPU whose GPCs differ in SMs this is not SMs x blocks an SM / cluster."""
    found: dict = {}
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"== the loop kernel's resident clusters ({sms} SMs): rows a round", flush=True)
    for dtype, itemsize in (("float32", 4), ("bfloat16", 2)):
        for threads in (256, 512, 1024):
            counts = {c: K.loop_resident_clusters(0, itemsize, threads, c) for c in range(2, 17)}
            found[f"{dtype} {threads}"] = counts
            print(f"  {dtype:<8} {threads:>4} threads: " + "  ".join(f"x{c}: {n}" for c, n in counts.items()),
                  flush=True)
    return found


def child(case_set: str, index: int) -> None:
    """One case of a set: warmed up outside the profiler's window, then one call inside it."""
    label, variant, shape, dtype, plan = CASE_SETS[case_set][index]
    op = OPS["softmax"]
    x = op.make_input(shape, dtype, "cuda", 1)
    out = torch.empty_like(x)
    if plan is None:
        from kernelscope.catalog import VARIANTS

        v = VARIANTS[variant]
        fn = v.function()
        call = (lambda: fn(x, out)) if v.takes_out else (lambda: fn(x))  # noqa: E731
    else:
        call = lambda: K.softmax(x, out, plan=K.SoftmaxPlan(*plan))  # noqa: E731
    for _ in range(3):
        result = call()
    ref, scale = T.reference(op, x)
    if not T.matches(label, op, result, ref, scale, dtype):
        sys.exit(1)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    call()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def ncu_case(case_set: str, index: int, out_dir: Path) -> dict:
    label = CASE_SETS[case_set][index][0]
    stem = out_dir / label.replace(" ", "_")
    report = stem.with_suffix(".ncu-rep")
    profile = ["ncu", "--profile-from-start", "off", "--clock-control", "none", "--set", "full",
               "--import-source", "no", "--force-overwrite", "--export", str(report),
               sys.executable, __file__, "--child", str(index), "--ncu-cases", case_set]
    proc = subprocess.run(profile, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        print(f"  {label}: ncu rc={proc.returncode}: {(proc.stderr or proc.stdout)[-800:]}", flush=True)
        return {"label": label, "error": proc.returncode}
    details = subprocess.run(["ncu", "--import", str(report), "--page", "details", "--print-details", "all"],
                             capture_output=True, text=True, timeout=300).stdout
    stem.with_suffix(".details.txt").write_text(details)
    raw = subprocess.run(["ncu", "--import", str(report), "--page", "raw", "--csv", "--print-units", "base"],
                         capture_output=True, text=True, timeout=300).stdout
    lines = raw.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    table = list(csv.reader(io.StringIO("\n".join(lines[start:])))) if start is not None else []
    record: dict = {"label": label, "kernels": []}
    if len(table) >= 3:
        header, rows = table[0], table[2:]  # the second row holds the units
        for row in rows:
            values = dict(zip(header, row))
            kernel = {"name": values.get("Kernel Name", "")[:80]}
            for name, short in SUMMARY_METRICS.items():
                kernel[short] = _number(values.get(name, "")) if name in values else None
            kernel["cluster"] = {k: values[k] for k in header if "cluster" in k and values.get(k)}
            # WarpStateStats: cycles a warp spends stalled for each reason, per instruction it issues
            stalls = {}
            for k in header:
                found = re.fullmatch(r"smsp__average_warps?_issue_stalled_(\w+?)_per_issue_active\.ratio", k)
                if found and _number(values[k]) is not None:
                    stalls[found.group(1)] = _number(values[k])
            kernel["all_stalls"] = stalls
            kernel["stalls"] = dict(sorted(stalls.items(), key=lambda kv: -kv[1])[:6])
            record["kernels"].append(kernel)
    for k in record["kernels"]:
        active = (k["SM active cycles"] or 0) / (k["elapsed cycles"] or 1) * 100
        print(f"  {label:<30} {k['name'][:40]:<40} {(k['time'] or 0) / 1e3:8.2f} us  DRAM {k['DRAM % (gpu)'] or k['DRAM %'] or 0:5.1f}%  "
              f"SM active {active:5.1f}%  occupancy {k['occupancy %'] or 0:5.1f}%  L2 hit {k['L2 hit %'] or 0:5.1f}%  "
              f"grid {k['grid']} x {k['block']}  regs {k['regs']}", flush=True)
        print(f"  {'':<30} stalls (cycles a warp): " + ", ".join(f"{n} {v:.1f}" for n, v in k["stalls"].items()),
              flush=True)
        if k["cluster"]:
            print(f"  {'':<30} cluster: " + ", ".join(f"{n}={v}" for n, v in k["cluster"].items()), flush=True)
    return record


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", action="store_true", help="time the grid of launch shapes")
    ap.add_argument("--sweep-set", default="wide",
                    help="comma-separated: wide (512x50257 and 64x262144, the default), lone (8192x8192 and "
                         "16384x16384); "
                         "both = wide,lone")
    ap.add_argument("--ncu", action="store_true", help="Nsight Compute's full set on the --ncu-cases set")
    ap.add_argument("--ncu-cases", choices=tuple(CASE_SETS), default="wide",
                    help="wide: 512x50257 and 64x262144 (default); lone: 16384x16384, softmax-cuda beside "
                         "softmax-triton-tuned")
    ap.add_argument("--out", default=".", help="folder for the ncu reports and details pages")
    ap.add_argument("--json", help="write the rows as JSON records to this file")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    opts = ap.parse_args()
    names = ["wide", "lone"] if opts.sweep_set == "both" else opts.sweep_set.split(",")
    unknown = [n for n in names if n not in SWEEP_SETS]
    if unknown:
        ap.error(f"--sweep-set: unknown set(s) {', '.join(unknown)}; choose from {', '.join(SWEEP_SETS)} or both")
    if not torch.cuda.is_available():
        print("tune_wide_rows.py measures a GPU: none here", file=sys.stderr)
        return 2
    if opts.child is not None:
        child(opts.ncu_cases, opts.child)
        return 0
    build.extension()
    records: list[dict] = [{"label": "resident clusters", "loop": resident_clusters()}]
    if opts.sweep:
        table = Table("softmax-cuda, the wide rows")
        grids: dict = {}
        for name in names:  # a shape in two sets: its candidates from both, in order, once each
            for key, plans in SWEEP_SETS[name].items():
                grids[key] = list(dict.fromkeys([*grids.get(key, []), *plans]))
        sweep(table, grids)
        records += table.rows
    if opts.ncu:
        out_dir = Path(opts.out)
        out_dir.mkdir(parents=True, exist_ok=True)
        print("== Nsight Compute, full set, one call a case", flush=True)
        for i in range(len(CASE_SETS[opts.ncu_cases])):
            records.append(ncu_case(opts.ncu_cases, i, out_dir))
    if opts.json:
        Path(opts.json).write_text(json.dumps(records, indent=1))
    return 1 if T.FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
