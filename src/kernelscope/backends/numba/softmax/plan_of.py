"""What `kernelscope plan` says softmax-numba launches: each plan's kernels, the files that hold them, grids."""

from kernelscope.backends.device import DeviceFacts
from kernelscope.backends.launches import Launch, LaunchPlan

from .plan import softmax_launch
from .registers import full_laps

SOURCE = "src/kernelscope/backends/numba/softmax"  # the package's files, from the repository's root


def softmax_plan_of(shape: tuple[int, int], dtype: str, facts: DeviceFacts):
    """softmax-numba's launches at ``shape`` on the GPU of ``facts`` (`kernelscope plan`): softmax_launch's default
    plan, as launch.py's _launch runs it (x and y 16-byte aligned, as torch allocates them), each kernel through
    the driver after its first call."""
    rows, cols = shape
    plan = softmax_launch(rows, cols, facts)
    if plan.path == "regs":
        vector = plan.vector and cols % 4 == 0
        launches = (Launch("softmax_regs_vector" if vector else "softmax_regs", f"{SOURCE}/registers.py", (rows,),
                           plan.threads, note="a block a row, the row in registers"),)
        fields = {"elements a thread": plan.unroll, "16-byte loads": vector, "fast exp": plan.fast_exp,
                  "exact rows (no column checks)": plan.threads * plan.unroll == cols,
                  "laps without column checks": full_laps(cols, plan.threads, plan.unroll, vector),
                  "launch bound (blocks an SM)": plan.min_blocks}
    elif plan.path == "row":
        launches = (Launch("softmax_row", f"{SOURCE}/shared_row.py", (rows,), plan.threads,
                           note=f"a block a row, the row in {cols * 4} B of dynamic shared memory"),)
        fields = {"loads in flight a thread": plan.unroll, "recompute exps": plan.recompute,
                  "exps in the loading pass": plan.online, "fast exp": plan.fast_exp}
    elif plan.path == "resident":
        blocks_per_sm = max(1, min(2048 // plan.threads, facts.shared_bytes_per_block // max(1, plan.keep * 4)))
        launches = (Launch("softmax_resident", f"{SOURCE}/resident.py", None, plan.threads,
                           most=facts.sm_count * blocks_per_sm,
                           note=f"the blocks resident at once, a block a span of the tensor, up to {plan.keep * 4} B "
                                "of it kept in shared memory across a grid-wide barrier"),)
        fields = {"loads in flight a thread": plan.unroll, "fast exp": plan.fast_exp, "L2 eviction hints": plan.hints,
                  "16-byte loads": plan.vector}
        return LaunchPlan(plan.path, launches, {**fields, "persistent": True})
    else:
        groups = -(-rows // plan.group_rows)
        chunks = -(-cols // plan.chunk)
        last = rows - (groups - 1) * plan.group_rows
        note = f"a group of {plan.group_rows} rows x {chunks} chunks" + (
            f"; the last group's {last} rows" if last != plan.group_rows else "")
        launches = tuple(Launch(name, f"{SOURCE}/split.py", (plan.group_rows, chunks), plan.threads, count=groups,
                                note=note) for name in ("chunk_stats", "chunk_write"))
        fields = {"chunk (columns a block)": plan.chunk, "rows a group": plan.group_rows,
                  "loads in flight a thread": plan.unroll, "fast exp": plan.fast_exp,
                  "chunks written last to first": plan.reverse, "L2 eviction hints": plan.hints,
                  "16-byte loads": plan.vector}
    return LaunchPlan(plan.path, launches, {**fields, "persistent": False})
