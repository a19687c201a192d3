"""What Numba compiled mean-numba's kernels to: registers, local memory, loads, for each launch shape.

A Numba kernel's per-thread arrays (``cuda.local.array``) live in registers
only where LLVM unrolls every loop that indexes them; otherwise they go to local
memory, and each add becomes a load and a store there. mean-numba's sweeps
(results-proofs/tuning-sweeps) read 16 loads a lap 33% slower than 8, and 16-byte loads 20% slower
than 4-byte ones: this prints, for each form, ptxas's registers and local bytes a
thread (Numba's dispatcher), and counts the PTX's global and local loads, so a
slow form shows whether its accumulators left the registers. The PTX of each
goes to --out.

    python3 results-proofs/numba-codegen/numba_asm_probe.py --out DIR

Needs a GPU (Numba compiles through the driver); about 20 s.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import torch  # noqa: E402

from kernelscope.backends.numba import mean as nb_mean  # noqa: E402
from kernelscope.catalog import OPS  # noqa: E402

# (threads, blocks per SM, unroll, 16-byte loads, evict-first): the forms tune_numba.py times
FORMS = [(512, 4, 8, False, False), (512, 4, 16, False, False), (512, 4, 4, True, False), (512, 4, 8, True, False),
         (256, 8, 8, False, False), (512, 4, 2, True, False), (512, 3, 4, True, False), (512, 2, 4, True, False),
         (512, 2, 8, True, False), (512, 4, 2, True, True), (512, 3, 4, True, True)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".", help="folder for the PTX files")
    opts = ap.parse_args()
    if not torch.cuda.is_available():
        print("numba_asm_probe.py reads what Numba compiles for a GPU: none here", file=sys.stderr)
        return 2
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    x = OPS["mean"].make_input((2**20,), "float32", "cuda", 0)
    y = torch.empty((), device="cuda")
    print(f"{'form':<56} {'regs':>5} {'local B':>8} {'ld.global':>10} {'ld.local':>9} {'st.local':>9} "
          f"{'ld.global.cs':>13}")
    for threads, blocks_per_sm, unroll, vector, streaming in FORMS:
        nb_mean.launch_mean(x, y, threads, blocks_per_sm, unroll, True, vector, True, streaming)  # compiles it
        torch.cuda.synchronize()
        kernel = nb_mean.mean_one_launch_kernel(threads, blocks_per_sm, unroll, vector, streaming)
        # one overload (one signature was called): each query's dict has one entry
        ptx, regs, local = (next(iter(q().values())) for q in (kernel.inspect_asm, kernel.get_regs_per_thread,
                                                               kernel.get_local_mem_per_thread))
        label = (f"threads={threads} blocks/SM={blocks_per_sm} unroll={unroll}{' 16-byte' if vector else ''}"
                 f"{' evict-first' if streaming else ''}")
        name = re.sub(r"\W+", "_", label).strip("_")
        (out / f"mean_{name}.ptx").write_text(ptx)
        counts = [len(re.findall(p, ptx)) for p in (r"\bld\.global", r"\bld\.local", r"\bst\.local",
                                                     r"\bld\.global\.cs")]
        print(f"{label:<56} {regs:>5} {local:>8} " + " ".join(f"{c:>9}" for c in counts[:3]) + f" {counts[3]:>13}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
