"""What `kernelscope plan` says softmax-triton-tuned launches: each plan's kernels, the files that hold them, grids."""

import triton

from kernelscope.backends.device import DeviceFacts
from kernelscope.backends.launches import Launch, LaunchPlan

from .plan import softmax_launch

SOURCE = "src/kernelscope/backends/triton/softmax"  # the package's files, from the repository's root


def softmax_plan_of(shape: tuple[int, int], dtype: str, facts: DeviceFacts):
    """softmax-triton-tuned's launches at ``shape`` on the GPU of ``facts`` (`kernelscope plan`): softmax_launch's
    plan, with the grids softmax_planned launches (SoftmaxPlan.grid)."""
    from kernelscope.ops import itemsize

    rows, cols = shape
    plan = softmax_launch(rows, cols, itemsize(dtype), facts)
    threads = plan.num_warps * 32
    fields = {"num_warps": plan.num_warps}
    if plan.strategy in ("row", "narrow"):
        launches = (Launch("softmax_rows_tuned_kernel", f"{SOURCE}/whole_rows.py", (plan.grid(rows),), threads,
                           note=f"{plan.rows_per_program} row{'s' if plan.rows_per_program > 1 else ''} a program"),)
        fields.update({"BLOCK (columns a row loads)": plan.block, "rows a program": plan.rows_per_program,
                       "elements a thread": plan.rows_per_program * plan.block // threads, "persistent": False})
    elif plan.strategy == "tiles":
        launches = (Launch("softmax_tiles_kernel", f"{SOURCE}/tiles.py", (plan.grid(rows),), threads,
                           note="a program a row"),)
        fields.update({"tiles": tuple(t for t in plan.tiles if t > 1), "slots a row": plan.block,
                       "persistent": False})
    elif plan.strategy == "persist":
        launches = (Launch("softmax_persistent_kernel", f"{SOURCE}/persistent.py", (plan.grid(rows),), threads,
                           note=f"{plan.grid(rows) / facts.sm_count:g} programs an SM taking the rows in turn"),)
        fields.update({"CHUNK (columns a step)": plan.block, "stages": plan.stages, "GROUP": plan.group,
                       "16-byte cut": plan.vectorize, "L2 hints": plan.l2_hints, "persistent": True})
    else:  # split, pipe: the rows in groups, a program a chunk of a row
        groups = triton.cdiv(rows, plan.group_rows)
        last = rows - (groups - 1) * plan.group_rows
        rest = f"; the last group's {last} rows x {plan.chunks}" if last != plan.group_rows else ""
        if plan.strategy == "split":
            note = f"a group of {plan.group_rows} rows x {plan.chunks} chunks{rest}"
            launches = tuple(Launch(name, f"{SOURCE}/split.py", (plan.grid(plan.group_rows),), threads, count=groups,
                                    note=note)
                             for name in ("softmax_chunk_stats_kernel", "softmax_chunk_write_kernel"))
        else:
            launches = (Launch("softmax_pipe_kernel", f"{SOURCE}/pipe.py", (plan.grid(2 * plan.group_rows),), threads,
                               count=groups + 1, note=f"at most two groups of {plan.group_rows} rows x "
                                                      f"{plan.chunks} chunks, one group's first and last"),)
        fields.update({"CHUNK (columns a program)": plan.block, "chunks a row": plan.chunks,
                       "rows a group": plan.group_rows, "L2 hints": plan.l2_hints, "persistent": False})
    return LaunchPlan(plan.strategy, launches, fields)
