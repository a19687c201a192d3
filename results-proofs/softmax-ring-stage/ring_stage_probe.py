"""softmax.cu's ring stage sized to a block's slice (082d39a) against the stage rounded to whole vectors a thread
(the layout before it), in one process, turn about, with the suite's warm clock.

Why: at 512x50257 the exact stage lets four blocks of 512 share an SM where three did. floors.py --kernels
read float32 ring1e 512 x 4 at 84.6% of copy after it and 87.2% before (two H100 boxes), while the
suite's own runs read 86.4% and 86.1%; bfloat16 512 x 2 read 80.9% and 80.7% in the probe, 80.9% and 79.8% in
the suite. This probe times both layouts on one box, through K.softmax with a given output (the probes' call) and
with an allocated one (the suite's), beside softmax-cuda's own callable, so the layout and the call are told apart.
The rounded build is the extension with ring_stage_probe.cu in softmax.cu's place (at 56572a0, the build switch
KERNELSCOPE_RING_STAGE_ROUNDED); every launch is checked before it is timed.

What it read (56572a0) is in this folder's README.md: the rounded stage led in float32
at 512 x 4 by about 1%, the exact one in bfloat16 by a few tenths, and the suite's callable read as the exact one.

Usage (GPU box): python3 results-proofs/softmax-ring-stage/ring_stage_probe.py [--rounds 3] [--json FILE]   (two builds, ~1.5 minutes)
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "gpu"))  # tune.py
import argparse  # noqa: E402

from tune import Table  # noqa: E402  (tune puts src/ on sys.path)
import torch  # noqa: E402

from kernelscope.ops import shape_str  # noqa: E402

# (shape, dtype, plan): softmax_plan's ring launches at the wide rows, and the bfloat16 ring of 2 stages whose
# blocks also went from three an SM to four
CASES = [((512, 50257), "float32", ("ring1e", 512, 4)), ((512, 50257), "float32", ("ring1e", 512, 2)),
         ((512, 50257), "bfloat16", ("ring1e", 512, 2)), ((512, 50257), "bfloat16", ("ring", 256, 4))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="turns of every row (default 3)")
    parser.add_argument("--json", help="write the rows as JSON records to this file")
    args = parser.parse_args()

    import tune_cuda as T

    from kernelscope.backends.cuda import build
    from kernelscope.backends.cuda import kernels as K
    from kernelscope.catalog import OPS, VARIANTS

    rounded = build.extension(Path(__file__).with_name("ring_stage_probe.cu"))
    op, variant = OPS["softmax"], VARIANTS["softmax-cuda"]
    table = Table("ring stage: the block's slice (exact) against whole vectors a thread (rounded)")
    for shape, dtype, plan in CASES:
        x = op.make_input(shape, dtype, "cuda", 1)
        out = torch.empty_like(x)
        ref, scale = T.reference(op, x)
        p = K.SoftmaxPlan(*plan)
        builds = {"exact": None, "rounded": rounded}
        for name, module in builds.items():
            if not T.matches(f"{T.plan_label(plan)} {name}", op, K.softmax(x, out, plan=p, module=module), ref,
                             scale, dtype):
                return 1
        default = K.device_softmax_plan(*shape, x.element_size()) == p
        call = variant.function()
        nbytes = op.bytes_for(shape, dtype)
        for _ in range(args.rounds):
            for name, module in builds.items():
                label = f"{T.plan_label(plan)} {name}"
                table.add(f"{label}, out given", lambda m=module: K.softmax(x, out, plan=p, module=m),
                          nbytes, shape_str(shape), dtype)
                table.add(f"{label}, out allocated", lambda m=module: K.softmax(x, plan=p, module=m),
                          nbytes, shape_str(shape), dtype)
            if default:  # the suite's callable (softmax_plan's launch, the exact build)
                table.add("softmax-cuda (the suite's callable)", lambda: call(x), nbytes, shape_str(shape), dtype)
        del x, out, ref
        torch.cuda.empty_cache()
    table.dump(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
