"""SASS instruction counts of kernelscope's CUDA C++ kernels, and of a Triton kernel beside them, without a GPU.

Where a memory-bound kernel's SM issues more instructions than DRAM leaves time
for, it falls behind a peer that moves the same bytes (results-proofs/softmax-cuda-h200: softmax-cuda
at 16384x16384 bfloat16 on the H200, 86.7% of copy against Triton's 95.4% in the
same launch shape, 41% more instructions issued in ncu). The machine code shows
why before any device time is spent: nvcc compiles a .cu file for sm_90, as the
extension is built on an H100 or H200 (kernelscope.profiling.nvcc, kept per version
of the file; for these kernels sm_90a's SASS is the same), Triton compiles its
kernel for its own target there, sm_90a, on the CPU, and cuobjdump (Triton's
wheel ships one) prints both as SASS. For each kernel this
prints its static instruction count, its loads and stores from global memory,
its MUFU (exp) and division calls, and its opcode mix. A kernel that is one
straight path (the exact rows, Triton's row kernel) runs about its static count
a warp; a kernel with branches runs less than its count, so read its SASS
(--sass) for the path that matters.

Usage: python3 scripts/sass_counts.py [--source softmax.cu] [--kernel REGEX]
           [--triton-softmax DTYPE,BLOCK,WARPS] [--sass DIR]
  e.g. python3 scripts/sass_counts.py --kernel 'softmax_(block|exact)_kernel.*bfloat16.*Li32' \\
           --triton-softmax bfloat16,16384,16
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Compiling needs Triton's JIT, not its interpreter (the CPU path's tests set TRITON_INTERPRET=1).
os.environ.pop("TRITON_INTERPRET", None)
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton's default, said out loud (3.9 warns otherwise)

ROOT = Path(__file__).resolve().parents[1]
CUDA_DIR = ROOT / "src" / "kernelscope" / "backends" / "cuda"
sys.path.insert(0, str(ROOT / "src"))

SASS_LINE = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def cuobjdump() -> str:
    found = shutil.which("cuobjdump")
    if found:
        return found
    import triton  # its NVIDIA backend ships the CUDA binary utilities
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not tool.exists():
        raise SystemExit("sass_counts.py: no cuobjdump on PATH or in Triton's wheel")
    return str(tool)


def sass_of(binary: Path) -> str:
    return subprocess.run([cuobjdump(), "-sass", str(binary)], capture_output=True, text=True, check=True).stdout


def functions(text: str) -> dict[str, list[str]]:
    """``cuobjdump -sass`` output -> kernel name -> its SASS instructions (predicate and operands kept), in order."""
    parts = re.split(r"\n\s*Function : (\S+)\n", text)
    out = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        out[name] = [m.group(2) for line in body.splitlines() if (m := SASS_LINE.match(line))]
    return out


def opcode(instruction: str) -> str:
    words = instruction.split()
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


def demangle(names: list[str]) -> dict[str, str]:
    if not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out))


def summary(instructions: list[str]) -> dict:
    ops = collections.Counter(opcode(i) for i in instructions)
    return {"count": len(instructions),
            "global loads": sum(1 for i in instructions if re.search(r"\bLDG\b", i)),
            "global stores": sum(1 for i in instructions if re.search(r"\bSTG\b", i)),
            "MUFU": ops["MUFU"], "calls": ops["CALL"], "branches": ops["BRA"], "mix": ops.most_common(8)}


def compile_triton_softmax(dtype: str, block: int, warps: int, out_dir: Path) -> Path:
    """softmax-triton-tuned's row kernel (one row a program) as the suite launches it, for sm_90a."""
    from triton import compile as triton_compile
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from kernelscope.backends.triton.softmax import softmax_rows_tuned_kernel

    ptr = {"float32": "*fp32", "bfloat16": "*bf16"}[dtype]
    signature = {"x_ptr": ptr, "y_ptr": ptr, "n_rows": "i32", "n_cols": "i32", "x_row_stride": "i32",
                 "y_row_stride": "i32", "ROWS": "constexpr", "BLOCK": "constexpr", "WIDE": "constexpr"}
    aligned = [["tt.divisibility", 16]]  # pointers, columns and strides divisible by 16, as at 16384 columns
    attrs = {(i,): aligned for i in (0, 1, 3, 4, 5)}
    src = ASTSource(fn=softmax_rows_tuned_kernel, signature=signature, constexprs={"ROWS": 1, "BLOCK": block, "WIDE": False},
                    attrs=attrs)
    compiled = triton_compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    cubin = out_dir / f"softmax_rows_tuned_{dtype}_{block}_{warps}.cubin"
    cubin.write_bytes(compiled.asm["cubin"])
    return cubin


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--source", default="softmax.cu", help="a .cu file of src/kernelscope/backends/cuda")
    ap.add_argument("--kernel", default=".", help="only kernels whose mangled name matches this regex")
    ap.add_argument("--triton-softmax", metavar="DTYPE,BLOCK,WARPS",
                    help="also softmax-triton-tuned's row kernel for this launch (e.g. bfloat16,16384,16)")
    ap.add_argument("--sass", metavar="DIR", help="write each listed kernel's SASS into DIR")
    opts = ap.parse_args()
    if not shutil.which("nvcc"):
        print("sass_counts.py: nvcc not found (the CUDA toolkit compiles the .cu files)", file=sys.stderr)
        return 2
    from kernelscope.profiling.nvcc import ARCH, compile_for_reading

    with tempfile.TemporaryDirectory() as tmp:
        kernels = {n: body for n, body in functions(compile_for_reading(CUDA_DIR / opts.source).sass()).items()
                   if re.search(opts.kernel, n)}
        if opts.triton_softmax:
            dtype, block, warps = opts.triton_softmax.split(",")
            kernels.update(functions(sass_of(compile_triton_softmax(dtype, int(block), int(warps), Path(tmp)))))
    if not kernels:
        print(f"no kernel of {opts.source} matches {opts.kernel!r}", file=sys.stderr)
        return 1
    names = demangle(list(kernels))
    nvcc = next((line.split(",")[1].strip() for line in subprocess.run(
        ["nvcc", "--version"], capture_output=True, text=True).stdout.splitlines() if "release" in line), "nvcc")
    triton_version = ""
    if opts.triton_softmax:
        import triton
        triton_version = f"; Triton {triton.__version__} for sm_90a"
    print(f"SASS, static counts ({opts.source}: nvcc -O3 for {ARCH}, {nvcc}{triton_version})")
    for name, body in kernels.items():
        s = summary(body)
        print(f"{names[name]}\n  {s['count']} instructions, {s['global loads']} global loads, "
              f"{s['global stores']} global stores, {s['MUFU']} MUFU, {s['calls']} calls, {s['branches']} branches"
              f"\n  {' '.join(f'{op}:{n}' for op, n in s['mix'])}")
        if opts.sass:
            Path(opts.sass).mkdir(parents=True, exist_ok=True)
            (Path(opts.sass) / f"{name}.sass").write_text("\n".join(body) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
