"""Launch shapes of the tuned Numba kernels, on the GPU box.

    python3 scripts/gpu/tune_numba.py --json $OUT/tune_numba.json [--quick]

For square-numba-flat, gelu-numba, mean-numba and softmax-numba: at the sizes
of the targets (2^26 and 2^28 elements; mean also 2^24, softmax also a few of
the suite's odd widths, catalog and torch only), one row for the catalog
variant as the suite calls it (warm, and replayed in a CUDA graph: Numba's
launches must be capturable), one for the torch op beside it, then the
candidates through the package's own launchers: square/gelu tiled one-lap vs
grid-stride and unroll 1/2/4/8, mean one launch vs two, softmax's row-plan
unroll, threads and recompute. Every configuration's output is checked
against the float64 reference once, with the suite's error measure and
tolerance, before it is timed. Each new launch shape JIT-compiles (a second
or two); the whole run takes under a minute, --quick about a third of that.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tune import Table, args  # noqa: E402  (tune puts src/ on the path)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from kernelscope.catalog import OPS, get  # noqa: E402
from kernelscope.check import error_against_reference  # noqa: E402
from kernelscope.ops import shape_str  # noqa: E402

from kernelscope.backends.numba import gelu as nb_gelu  # noqa: E402
from kernelscope.backends.numba import mean as nb_mean  # noqa: E402
from kernelscope.backends.numba import softmax as nb_softmax  # noqa: E402
from kernelscope.backends.numba import square as nb_square  # noqa: E402

DTYPE = "float32"
DEVICE = "cuda"
# (threads, blocks per SM, unroll, tiled), the default first; --quick runs the first three.
# tiled: one contiguous tile of threads * unroll elements a block, one lap (blocks/SM: the launch bound only);
# not tiled: the grid-stride loop over sm_count * blocks/SM resident blocks (the H100's 87-91% of copy).
ELEMENTWISE_CONFIGS = [(256, 8, 4, True), (256, 8, 2, True), (256, 8, 4, False), (256, 8, 1, True),
                       (256, 8, 8, True), (512, 4, 4, True), (128, 16, 4, True), (256, 8, 2, False)]
ELEMENTWISE_SHAPES = [(8192, 8192), (16384, 16384)]  # --quick: the last
# (threads, blocks per SM, unroll, one launch, 16-byte loads, grid balanced to whole laps): one launch = the last
# block to finish sums the partials. The candidates for mean at 2^24: the full grid (the default until the
# balanced one), 16-byte loads (vector.load_f32x4). blocks/SM is also the kernel's launch bound: at 4 blocks of
# 512 ptxas has 32 registers a thread, and 16-byte loads 4 or 8 a lap spilled there, and read slower
# (results-proofs/numba-codegen, results-proofs/tuning-sweeps), so they are timed at 3
# and 2 blocks an SM too; then the 16-byte loads evict-first (ld.global.cs, mean-cuda's __ldcs; a seventh item,
# True) at the default shape and at mean-cuda's 3 blocks of 4 loads; --quick runs the first seven.
MEAN_CONFIGS = [(512, 4, 8, True, False, True), (512, 4, 2, True, True, True), (512, 3, 4, True, True, True),
                (512, 2, 4, True, True, True), (512, 2, 8, True, True, True), (512, 4, 2, True, True, True, True),
                (512, 3, 4, True, True, True, True), (512, 4, 8, True, False, False),
                (512, 4, 4, True, True, True), (512, 4, 16, True, False, True), (256, 8, 8, True, False, True),
                (512, 4, 8, True, True, True), (512, 3, 8, True, False, True), (512, 4, 8, False, False, True),
                (1024, 2, 8, True, False, True), (512, 4, 4, True, False, True)]
MEAN_SHAPES = [(2**24,), (2**26,), (2**28,)]  # --quick: the first and the last


def checked(op_name: str, x: torch.Tensor, fn, label: str):
    """fn after one call whose output is within the op's float32 tolerance of the float64 reference."""
    out = fn()
    if x.is_cuda:
        torch.cuda.synchronize()
    op = OPS[op_name]
    err = error_against_reference(op, x, out)
    tol = op.tolerance[DTYPE]
    assert err <= tol, f"{op_name} {shape_str(tuple(x.shape))} {label}: rel_err {err:.3g} > {tol:g}"
    return fn


def references(table: Table, op_name: str, variant: str, torch_label: str, torch_fn, x: torch.Tensor,
               out: torch.Tensor) -> None:
    """The catalog variant as the suite calls it, and the torch op beside it.

    Up to 2^26 elements the variant is also replayed in a CUDA graph: its
    launches (and its torch.empty buffers) must be capturable.
    """
    nbytes, shape = OPS[op_name].bytes_for(tuple(x.shape), DTYPE), shape_str(tuple(x.shape))
    v = get(variant)
    table.add(f"{variant} (catalog default)", checked(op_name, x, lambda: v(x, out), "catalog"), nbytes, shape,
              graph=x.numel() <= 2**26)
    table.add(f"torch ({torch_label})", checked(op_name, x, lambda: torch_fn(x), "torch"), nbytes, shape)


def sweep_elementwise(copy_gbps: float, quick: bool, op_name: str, variant: str, launcher, torch_label: str,
                      torch_fn, forms: dict | None = None) -> Table:
    """``forms``: other forms of the op (a label and the launcher's extra keywords), timed first at the default
    launch shape (--quick too)."""
    table = Table(f"{variant}: threads / blocks per SM / unroll / tiled or grid-stride", copy_gbps)
    configs = ELEMENTWISE_CONFIGS[:3] if quick else ELEMENTWISE_CONFIGS
    for shape in ELEMENTWISE_SHAPES[-1:] if quick else ELEMENTWISE_SHAPES:
        x = OPS[op_name].make_input(shape, DTYPE, DEVICE, 0)
        y = torch.empty_like(x)
        references(table, op_name, variant, torch_label, torch_fn, x, y)
        nbytes = OPS[op_name].bytes_for(shape, DTYPE)
        for form, keywords in (forms or {}).items():
            fn = checked(op_name, x, lambda k=keywords: launcher(x, y, **k), form)
            table.add(f"{form} (default launch shape)", fn, nbytes, shape_str(shape))
        for threads, blocks_per_sm, unroll, tiled in configs:
            label = f"{'tiled' if tiled else 'grid-stride'} threads={threads} blocks/SM={blocks_per_sm} unroll={unroll}"
            fn = checked(op_name, x, lambda t=threads, b=blocks_per_sm, u=unroll, m=tiled: launcher(x, y, t, b, u, m),
                         label)
            table.add(label, fn, nbytes, shape_str(shape))
        del x, y
    return table


def sweep_mean(copy_gbps: float, quick: bool) -> Table:
    table = Table("mean-numba: threads / blocks per SM / unroll, one launch or two", copy_gbps)
    configs = MEAN_CONFIGS[:7] if quick else MEAN_CONFIGS
    for shape in [MEAN_SHAPES[0], MEAN_SHAPES[-1]] if quick else MEAN_SHAPES:
        x = OPS["mean"].make_input(shape, DTYPE, DEVICE, 0)
        y = torch.empty((), device=DEVICE)
        references(table, "mean", "mean-numba", "torch.mean", torch.mean, x, y)
        nbytes = OPS["mean"].bytes_for(shape, DTYPE)
        for threads, blocks_per_sm, unroll, one, vector, balanced, *rest in configs:
            streaming = bool(rest and rest[0])
            label = (f"{'1 launch' if one else '2 launches'} threads={threads} blocks/SM={blocks_per_sm} "
                     f"unroll={unroll}{' 16-byte loads' if vector else ''}{' evict-first' if streaming else ''}"
                     f"{' balanced' if balanced else ' full grid'}")
            fn = checked("mean", x, lambda t=threads, b=blocks_per_sm, u=unroll, o=one, v=vector, g=balanced,
                         st=streaming: nb_mean.launch_mean(x, y, t, b, u, o, v, g, st), label)
            table.add(label, fn, nbytes, shape_str(shape))
        del x
    return table


# Overrides of plan_softmax per shape, after the catalog row (which is the default plan): the candidates.
# Up to 16384 columns the default is the regs plan with the fast exp (REGS_DEFAULT_MAX_COLS, REGS_FAST_EXP), and up
# to 65536 its wide form at 1024 threads where the rows fill the SMs (REGS_WIDE_THREADS), so the row plan's knobs
# there name the path. Beside each default: its 4-byte accesses (REGS_VECTOR), half the elements a thread in twice
# the threads (the H200's choice for softmax-cuda's block at 8192x8192, REGS_EPT_WIDE_DRAM), two blocks an SM, and
# the plans it replaced. What each sweep measured: results-proofs/tuning-sweeps/ (its README names the folder).
SOFTMAX_SWEEP = {  # the first few run under --quick: candidates beside the default, then the plans it replaced
    (16384, 16384): [{"path": "regs", "vector": False}, {"path": "regs", "cols_per_thread": 16, "max_threads": 1024},
                     {"path": "regs", "min_blocks": 2},
                     {"path": "row"}, {"path": "regs", "fast_exp": False},
                     {"unroll": 4, "cols_per_thread": 8, "path": "row"}, {"unroll": 16, "path": "row"},
                     {"recompute": True, "path": "row"}, {"max_threads": 1024, "unroll": 16, "path": "row"}],
    (8192, 8192): [{"path": "regs", "vector": False}, {"path": "regs", "cols_per_thread": 32},
                   {"path": "regs", "min_blocks": 2},
                   {"path": "regs", "fast_exp": False}, {"path": "row"},
                   {"path": "regs", "max_threads": 128},
                   {"path": "row", "unroll": 4, "cols_per_thread": 8}, {"path": "row", "max_threads": 256},
                   {"path": "row", "unroll": 16}, {"path": "row", "recompute": True}],
    (4096, 4096): [{"path": "regs", "vector": False}, {"path": "regs", "cols_per_thread": 32}, {"path": "row"},
                   {"path": "regs", "fast_exp": False},
                   {"path": "row", "unroll": 4, "cols_per_thread": 8}, {"path": "row", "unroll": 16},
                   {"path": "row", "recompute": True}, {"path": "row", "cols_per_thread": 32}],
    (16384, 1000): [{"path": "regs", "vector": False}, {"path": "regs", "max_threads": 32}, {"path": "row"},
                    {"path": "row", "unroll": 4, "cols_per_thread": 8}],
    # Wide rows: the default (the regs plan at 1024 threads, 50 registers a thread) beside two rows an SM (512
    # threads with 44 to 48 registers a thread, the rest of the row in shared memory: plans asked as such), the
    # accurate exp, the row plan it replaced (its exps in its loading pass, the fast exp, loads in flight, threads)
    # and the split plan.
    (512, 50257): [*({"plan": nb_softmax.Plan("regs", 512, ept, keep=50257 - 512 * ept, min_blocks=2, fast_exp=True)}
                     for ept in (44, 46, 48)),
                   {"path": "row"}, {"path": "resident"}, {"fast_exp": False},
                   {"path": "row", "unroll": 32}, {"path": "row", "max_threads": 512},
                   {"path": "split"}, {"path": "split", "hints": False}, {"path": "split", "l2_share": 0.75},
                   {"path": "row", "unroll": 4}, {"path": "row", "unroll": 16}],
    # The resident plan (the default up to three times L2: one launch, the end of each block's span kept in shared
    # memory) beside the split plan it replaced, one 1024-thread block an SM keeping all its shared memory, no hints,
    # fewer loads in flight, nothing kept; then the split plan's own forms: loads in flight, chunk sizes, 4-byte
    # accesses, no hints, groups of rows.
    (64, 262144): [{"path": "split"}, {"max_threads": 1024, "keep": 58080}, {"hints": False}, {"unroll": 8},
                   {"keep": 0},
                   {"path": "split", "unroll": 16},
                   {"path": "split", "unroll": 16, "chunk": 4096, "split_threads": 128},
                   {"path": "split", "chunk": 4096, "split_threads": 128}, {"path": "split", "vector": False},
                   {"path": "split", "hints": False}, {"path": "split", "chunk": 16384, "split_threads": 512},
                   {"path": "split", "unroll": 4}, {"l2_share": 0.75}, {"l2_share": 1.0}, {"l2_share": 0.25},
                   {"path": "split", "fast_exp": False}, {"l2_share": 100.0, "reverse": False}],
    (4096, 70000): [{"path": "resident"}, {"unroll": 16}, {"vector": False}, {"hints": False},
                    {"chunk": 4096, "split_threads": 128}],
    # From the regs plan's first reach to 1024 threads x 64: its wide form (the default) against the row plan.
    (2048, 20000): [{"path": "row"}],
    (256, 65536): [{"path": "split"}, {"path": "resident"}],  # too wide for the row plan's shared memory
}
# --quick: how many of each shape's sweep
SOFTMAX_QUICK = {(16384, 16384): 3, (8192, 8192): 3, (4096, 4096): 2, (16384, 1000): 1, (512, 50257): 10,
                 (64, 262144): 6, (4096, 70000): 5,
                 (2048, 20000): 1, (256, 65536): 2}
SOFTMAX_SMALL = [(1024, 1024)]  # the rest of the suite's sweep: catalog and torch only


def sweep_softmax(copy_gbps: float, quick: bool) -> Table:
    table = Table("softmax-numba: launch plans (overrides of plan_softmax)", copy_gbps)
    shapes = [s for s in SOFTMAX_SWEEP if not quick or s in SOFTMAX_QUICK]
    for shape in ([] if quick else SOFTMAX_SMALL) + shapes:
        x = OPS["softmax"].make_input(shape, DTYPE, DEVICE, 0)
        y = torch.empty_like(x)
        references(table, "softmax", "softmax-numba", "torch.softmax", lambda t: torch.softmax(t, dim=-1), x, y)
        nbytes = OPS["softmax"].bytes_for(shape, DTYPE)
        sweep = SOFTMAX_SWEEP.get(shape, [])
        for overrides in sweep[:SOFTMAX_QUICK.get(shape, 0)] if quick else sweep:
            asked = overrides.get("plan")  # a Plan itself, where no override of the default's arguments gives it
            plan = asked or nb_softmax.plan_softmax(*shape, x.device, **overrides)
            label = f"{plan} {'(asked)' if asked else overrides or '(default)'}"
            fn = checked("softmax", x, lambda o=overrides: nb_softmax.launch_softmax(x, y, **o), label)
            table.add(label, fn, nbytes, shape_str(shape))
        del x, y
    return table


def main() -> None:
    opts = args(__doc__.splitlines()[0])
    start = time.perf_counter()
    copy_gbps = None
    tables = []
    for sweep in (
        lambda c: sweep_elementwise(c, opts.quick, "square", "square-numba-flat", nb_square.launch_square_flat,
                                    "torch.square", torch.square),
        lambda c: sweep_elementwise(c, opts.quick, "gelu", "gelu-numba", nb_gelu.launch_gelu,
                                    "F.gelu tanh", lambda x: F.gelu(x, approximate="tanh"),
                                    {"0.5 x (1 + tanhf(u)), the form before eaec9dd": {"fast": False}}),
        lambda c: sweep_mean(c, opts.quick),
        lambda c: sweep_softmax(c, opts.quick),
    ):
        table = sweep(copy_gbps)
        copy_gbps = table.copy_gbps  # measured once, by the first table
        table.dump(opts.json)
        tables.append(table)
        torch.cuda.empty_cache()
        print(f"-- {time.perf_counter() - start:.0f} s so far", flush=True)
    summarize([row for table in tables for row in table.rows])
    print("defaults: square threads={} blocks/SM={} unroll={} tiled={}; gelu {} {} {} tiled={}; "
          "mean {} {} {} one_launch={} vector_loads={} balanced_grid={}; softmax max_threads={} lone={} cols/thread={} row_unroll={} "
          "recompute={} unroll={} chunk={} split_threads={}".format(
              nb_square.FLAT_THREADS, nb_square.FLAT_BLOCKS_PER_SM, nb_square.FLAT_UNROLL, nb_square.FLAT_TILED,
              nb_gelu.THREADS, nb_gelu.BLOCKS_PER_SM, nb_gelu.UNROLL, nb_gelu.TILED,
              nb_mean.THREADS, nb_mean.BLOCKS_PER_SM, nb_mean.UNROLL, nb_mean.ONE_LAUNCH, nb_mean.VECTOR_LOADS,
              nb_mean.BALANCED_GRID,
              nb_softmax.MAX_THREADS,
              nb_softmax.LONE_BLOCK_THREADS, nb_softmax.COLS_PER_THREAD, nb_softmax.ROW_UNROLL,
              nb_softmax.RECOMPUTE, nb_softmax.UNROLL, nb_softmax.CHUNK, nb_softmax.SPLIT_THREADS))


# The targets: >= 90% of copy bandwidth at 2^26 elements and above; mean at 2^24 as fast as torch.mean.
BANDWIDTH_TARGETS = {
    "square-numba-flat": ["8192x8192", "16384x16384"],
    "gelu-numba": ["8192x8192", "16384x16384"],
    "mean-numba": [shape_str((2**26,)), shape_str((2**28,))],
    "softmax-numba": ["8192x8192", "16384x16384"],
}


def summarize(rows: list[dict]) -> None:
    """The catalog defaults against the targets, from the rows just timed."""
    def find(config: str, shape: str) -> dict | None:
        return next((r for r in rows if r["config"] == config and r["shape"] == shape), None)

    print("== targets (catalog defaults)")
    for variant, shapes in BANDWIDTH_TARGETS.items():
        for shape in shapes:
            row = find(f"{variant} (catalog default)", shape)
            if row:
                verdict = "met" if row["pct_copy"] >= 90 else "MISSED"
                print(f"{variant:<18} {shape:>12} {row['pct_copy']:6.1f}% of copy (>= 90%: {verdict})")
    mine, theirs = find("mean-numba (catalog default)", shape_str((2**24,))), find("torch (torch.mean)",
                                                                                   shape_str((2**24,)))
    if mine and theirs:
        verdict = "met" if mine["time_us"] <= theirs["time_us"] * 1.02 else "MISSED"
        print(f"mean-numba at 2^24: {mine['time_us']:.1f} us, torch.mean {theirs['time_us']:.1f} us "
              f"(as fast, within 2%: {verdict})")

if __name__ == "__main__":
    main()
