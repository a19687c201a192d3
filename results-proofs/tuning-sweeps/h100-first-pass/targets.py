"""The first tuning pass's targets, judged from the committed results (the H100, newest commit per op and mode).

    .venv/bin/python results-proofs/tuning-sweeps/h100-first-pass/targets.py [--results-dir results]

Every figure is read from results/ through kernelscope's export (the same rows
the site shows); nothing here is typed in.
"""
import argparse
import statistics

from kernelscope.catalog import VARIANTS
from kernelscope.results import export, history

MACHINE = "nvidia-h100-80gb-hbm3"
p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--results-dir", default="results")
args = p.parse_args()

rows = export.rows(args.results_dir)
rows = history.current(rows, history.commit_order(rows, history.git_positions()))
rows = [r for r in rows if r["machine"] == MACHINE]
at = {(r["variant"], r["mode"], r["size"], r["dtype"]): r for r in rows}
commits = sorted({r["commit"][:8] for r in rows if r["op"]})
print(f"machine {MACHINE}, commits {', '.join(commits)}\n")


def pct(v, size, dtype="float32", mode="warm"):
    r = at.get((v, mode, size, dtype))
    return None if r is None else r["pct_of_peak"]


def us(v, size, dtype="float32", mode="warm"):
    r = at.get((v, mode, size, dtype))
    return None if r is None else r["time_s"] * 1e6


def line(ok, text):
    print(f"  {'MET ' if ok else 'MISS'} {text}")


def fmt(x, unit=""):
    return "n/a" if x is None else f"{x:.1f}{unit}"


print("1. >= 95% of copy bandwidth at 2^26 and 2^28 (Numba: 90%), best variant per backend")
BIG = {"square": ["8192x8192", "16384x16384"], "gelu": ["8192x8192", "16384x16384"],
       "softmax": ["8192x8192", "16384x16384"], "mean": ["67108864", "268435456"]}
for op, sizes in BIG.items():
    for backend, need in (("triton", 95), ("cuda", 95), ("numba", 90)):
        names = [v.name for v in VARIANTS.values() if v.op == op and v.backend == backend]
        for size in sizes:
            best = max(names, key=lambda n: pct(n, size) or 0)
            line((pct(best, size) or 0) >= need, f"{op:8} {backend:7} {size:>12}: {best} {fmt(pct(best, size), '%')} (>= {need}%)")

print("\n2. softmax at 512x50257 and 64x262144: >= 85% of copy bandwidth (Triton, CUDA C++)")
for v in ("softmax-triton-tuned", "softmax-cuda"):
    for size in ("512x50257", "64x262144"):
        line((pct(v, size) or 0) >= 85, f"{v:22} {size:>12}: {fmt(pct(v, size), '%')} (torch {fmt(pct('softmax-torch', size), '%')})")

print("\n3. softmax: 16384x16384 >= 1.10x torch.softmax, and as fast as it at every width of the sweep")
sizes = ["64x64", "256x256", "1024x1024", "4096x4096", "8192x8192", "16384x16384", "16384x1000", "512x50257", "64x262144"]
for v in ("softmax-triton-tuned", "softmax-cuda"):
    for size in sizes:
        a, b = us(v, size), us("softmax-torch", size)
        need = 1.10 if size == "16384x16384" else 1.0
        ratio = None if (a is None or b is None) else b / a
        line(ratio is not None and ratio >= need, f"{v:22} {size:>12}: {fmt(a, ' us')} vs torch {fmt(b, ' us')} = {fmt(ratio, 'x')} (>= {need}x)")

print("\n4. mean at 2^24: tuned variants at least as fast as torch.mean and torch.compile")
for v in ("mean-triton-tuned", "mean-cuda", "mean-numba"):
    a, t, c = us(v, "16777216"), us("mean-torch", "16777216"), us("mean-compile", "16777216")
    line(a is not None and a <= min(t, c), f"{v:18}: {fmt(a, ' us')} (torch.mean {fmt(t, ' us')}, compile {fmt(c, ' us')})")

print("\n5. graph mode at 64x64: every tuned variant within 1.3x of an empty kernel's graph node")
empty = at.get(("empty-kernel", "graph", None, "float32"))
floor = empty["time_s"] * 1e6 if empty else None
print(f"  empty kernel (Launch.track_graph): {fmt(floor, ' us')}")
for v in VARIANTS.values():
    if not v.tuned:
        continue
    size = "4096" if v.op == "mean" else "64x64"
    g = us(v.name, size, mode="graph")
    line(g is not None and floor is not None and g <= 1.3 * floor, f"{v.name:22} {size:>6}: {fmt(g, ' us')} = {fmt(None if g is None or not floor else g / floor, 'x')} the empty kernel")

print("\n6. bfloat16: tuned square, softmax and gelu at the same percentages (their own bytes)")
for v in VARIANTS.values():
    if "bfloat16" not in v.bench_dtypes or not v.tuned:
        continue
    for size in ("8192x8192", "16384x16384") + (("512x50257", "64x262144") if v.op == "softmax" else ()):
        need = 85 if size in ("512x50257", "64x262144") else 95
        line((pct(v.name, size, "bfloat16") or 0) >= need,
             f"{v.name:22} {size:>12} bf16: {fmt(pct(v.name, size, 'bfloat16'), '%')} (float32 {fmt(pct(v.name, size), '%')}, >= {need}%)")
