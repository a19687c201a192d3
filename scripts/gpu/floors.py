"""The floors of the tuning targets' hardest cases, measured: what moving their bytes costs at their own size.

The targets are shares of the copy bandwidth measured on 1 GiB
(``kernelscope.timing.copy_bandwidth``). Its wide-row softmax cases move far
less (134 MB at 64x262144 in float32, 69 MB in bfloat16), where a kernel's ramp
and tail are a larger share of its time, so a copy itself may read below 100%.
This script times, with the suite's warm clock, the least work each case must do:

* softmax: a copy of the input into the output, in the case's own shape (one
  read and one write of every element, what a softmax kernel moves at best);
* mean: ``torch.sum`` of the input (one read), beside ``torch.mean``.

Each row gives the floor's time and its share of the copy bandwidth: a target
above a floor's share is out of reach at that size, whatever the kernel.

``--kernels`` adds each wide-row design's own floor: the kernel with its exps
made free, beside the kernel itself, in the same process. softmax-cuda's plans
(softmax_plan's and tune_wide_rows.py's grid) run from a second build of the
extension with softmax_free_exps.cu in softmax.cu's place (every exp a subtract);
softmax-triton-tuned's plans (its default, and its persist and split plans)
from a copy of its package whose wide-row kernels take every exp as an
identity (triton_free_exps). The bytes, loads in flight, reductions,
barriers and cluster exchanges stay as they are; what is left of the gap to
the copy is the design's, not its math's. The free rows' outputs are no
softmax and are not checked; the kernels themselves are checked before they
are timed.

With ``--kernels`` (not ``--quick``) every row also goes to
``evidence/<machine>/floors.json`` (kernelscope.evidence.floors), which the
softmax page shows (its Floors section).

Usage (GPU box): python3 scripts/gpu/floors.py [--kernels [--quick]] [--json FILE] [--evidence FILE]
    (the copies: under a minute on an H100; --kernels: one more build of the extension, about a minute, and
    about two minutes of timing, --quick: the default plans alone)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import argparse  # noqa: E402
import json  # noqa: E402

from tune import Table  # noqa: E402  (tune puts src/ on sys.path)

import torch  # noqa: E402

from kernelscope.ops import normal, shape_str  # noqa: E402
from kernelscope.evidence import floors  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# (op, shape, dtypes): the targets' hardest cases
CASES = [
    ("softmax", (512, 50257), ("float32", "bfloat16")),
    ("softmax", (64, 262144), ("float32", "bfloat16")),
    ("softmax", (8192, 8192), ("float32",)),  # 2^26: softmax-numba's target
    ("softmax", (16384, 16384), ("float32",)),  # 2^28
    ("mean", (2**24,), ("float32",)),
]


WIDE = [((512, 50257), "float32"), ((512, 50257), "bfloat16"), ((64, 262144), "float32"), ((64, 262144), "bfloat16")]
# softmax-triton-tuned's designs at the wide rows, softmax_plan overrides: one program a row reading it twice
# (persist, 1 and 2 programs an SM), chunks in two launches (split); the default at 512x50257 holds the row (tiles).
TRITON_PLANS = [{"persistent": True, "persist_programs_per_sm": 1}, {"persistent": True, "persist_programs_per_sm": 2},
                {"persistent": False}]
# The modules of softmax-triton-tuned's wide-row kernels whose exps the free copy makes identities: the split plan's
# (whose passes the pipe plan runs too), the persist plan's and the tiles plan's; the row kernels' stay (no wide row
# takes them).
TRITON_WIDE_ROW_MODULES = ("split", "persistent", "tiles")
FREE_EXP = """

@triton.jit
def _free_exp(z):
    return z
"""


def triton_free_exps():
    """softmax-triton-tuned's package (backends/triton/softmax/) copied to a temporary folder and imported under a
    name of its own, with every ``tl.exp(`` of TRITON_WIDE_ROW_MODULES an identity: its softmax_planned runs a
    plan with kernels that move their bytes and reduce as the suite's do, with no exp math (their output is no
    softmax). Its modules import one another relatively, so the copy's launches take the copy's kernels."""
    import atexit
    import importlib.util
    import shutil
    import tempfile

    from kernelscope.backends.triton import softmax

    name = "kernelscope_triton_softmax_free_exps"
    if name in sys.modules:
        return sys.modules[name]
    folder = Path(tempfile.mkdtemp(prefix="free-exps-")) / name
    atexit.register(shutil.rmtree, folder.parent, ignore_errors=True)
    shutil.copytree(Path(softmax.__file__).parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for module in TRITON_WIDE_ROW_MODULES:
        path = folder / f"{module}.py"
        text = path.read_text()
        assert "tl.exp(" in text, path
        path.write_text(text.replace("tl.exp(", "_free_exp(") + FREE_EXP)
    spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return package


def kernel_floors(table: Table, quick: bool) -> int:
    """Each wide-row plan of softmax-cuda and softmax-triton-tuned, checked and timed, then timed with free exps.
    Returns how many outputs were wrong (tune_cuda.matches prints each)."""
    import tune_cuda as T
    from tune_wide_rows import GRID

    from kernelscope.backends.cuda import build
    from kernelscope.backends.cuda import kernels as K
    from kernelscope.backends.triton import softmax as tsoftmax
    from kernelscope.catalog import OPS

    free = build.extension(Path(__file__).with_name("softmax_free_exps.cu"))
    free_triton = triton_free_exps()
    op = OPS["softmax"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def pair(label, run, run_free, x, out, ref, scale, shape, dtype):
        before = len(table.rows)
        T.sweep_row(table, op, label, run, x, out, ref, scale, shape, dtype)
        if len(table.rows) > before:  # checked and timed: now without its exps
            table.add(label + " free exps", lambda: run_free(x, out), op.bytes_for(shape, dtype),
                      shape_str(shape), dtype)

    for shape, dtype in WIDE:
        x = op.make_input(shape, dtype, "cuda", 1)
        out = torch.empty_like(x)
        ref, scale = T.reference(op, x)
        table.add("copy (read + write)", lambda: out.copy_(x), op.bytes_for(shape, dtype), shape_str(shape), dtype)
        for i, plan in enumerate(T.with_default(shape, dtype, [] if quick else GRID[(shape, dtype)])):
            pair("cuda " + T.plan_label(plan) + (" (default)" if i == 0 else ""),
                 lambda a, b, p=plan: K.softmax(a, b, plan=p),
                 lambda a, b, p=plan: K.softmax(a, b, plan=p, module=free), x, out, ref, scale, shape, dtype)
        itemsize = x.element_size()
        plans = [("(default)", tsoftmax.default_plan(*shape, itemsize, x.device))]
        if not quick:
            plans += [(str(o), tsoftmax.softmax_plan(*shape, itemsize, sms, l2_bytes=tsoftmax.l2_bytes(x.device), **o))
                      for o in TRITON_PLANS]
        for name, plan in plans:
            pair(f"triton {plan.strategy} {name}", lambda a, b, p=plan: tsoftmax.softmax_planned(a, b, p),
                 lambda a, b, p=plan: free_triton.softmax_planned(a, b, p), x, out, ref, scale, shape, dtype)
        del x, out, ref
        torch.cuda.empty_cache()
    return len(T.FAILURES)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows as JSON records to this file")
    parser.add_argument("--evidence", type=Path, help="with --kernels: the evidence file (default "
                        "evidence/<machine>/floors.json, the machine as asv names it; the softmax page "
                        "shows it)")
    parser.add_argument("--kernels", action="store_true",
                        help="also each wide-row kernel beside itself with free exps (its design's floor)")
    parser.add_argument("--quick", action="store_true", help="--kernels: the default plans alone")
    opts = parser.parse_args()
    if not torch.cuda.is_available():
        print("floors.py measures a GPU: none here", file=sys.stderr)
        return 2
    table = Table("floors of the hardest cases")
    for op, shape, dtypes in CASES:
        for dtype in dtypes:
            x = normal(shape, dtype, "cuda", 15)
            size = x.numel() * x.element_size()
            if op == "softmax":
                y = torch.empty_like(x)
                table.add("copy (read + write)", lambda: y.copy_(x), 2 * size, shape_str(shape), dtype)
            else:
                table.add("torch.sum (read)", lambda: torch.sum(x), size, shape_str(shape), dtype)
                table.add("torch.mean", lambda: torch.mean(x), size, shape_str(shape), dtype)
            del x
    wrong = 0
    if opts.kernels:
        kernels = Table("the wide-row kernels, and each with free exps (its design's floor)", table.copy_gbps)
        wrong = kernel_floors(kernels, opts.quick)
        table.rows += kernels.rows
    for row in table.rows:
        row["op"] = floors.op_of(row["shape"])
    table.dump(opts.json)
    if opts.kernels and not opts.quick:
        from kernelscope.profiling.capture import git_commit, machine_name

        machine = machine_name()
        path = opts.evidence or ROOT / "evidence" / machine / floors.FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        data = floors.stamp(machine, torch.cuda.get_device_name(), git_commit(),
                            "python3 scripts/gpu/floors.py " + " ".join(sys.argv[1:]), table.copy_gbps, table.rows)
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"floors: {path}", flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
