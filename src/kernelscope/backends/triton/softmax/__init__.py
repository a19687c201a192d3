"""Triton row softmax: the lecture's kernel, an online one, and a tuned one that picks its launch by the shape.

* softmax-triton-row (lecture.py): one program a row, the whole row in registers.
* softmax-triton-online (online.py): one program a row of any width, a running (max, sum), the row read twice.
* softmax-triton-tuned (launch.py) runs the plan plan.py picks for its (rows, cols) on its GPU, one kernel family
  a plan:

  - row, narrow (whole_rows.py): rows whole in a program's registers, one or several a program;
  - tiles (tiles.py): a row too wide for one power-of-two block, whole in registers as up to three;
  - persist (persistent.py): a persistent grid taking rows in turn, each row re-read from L2;
  - split (split.py): rows cut into chunks, a program a chunk, in two passes over groups of rows;
  - pipe (pipe.py): the split's two passes software-pipelined over row groups; offered, never chosen.

  row_cut.py cuts a row where it is 16-byte aligned (tiles, persist); plan_of.py says what a plan launches
  (`kernelscope plan`).
"""

from .launch import default_plan, l2_bytes, softmax_planned, softmax_tuned
from .lecture import softmax_row_kernel, softmax_rows
from .online import ONLINE_BLOCK, softmax_online, softmax_online_kernel
from .persistent import persist_vec, softmax_persistent_kernel
from .pipe import softmax_pipe_kernel
from .plan import (
    ELEMS_PER_THREAD, FEW_WARPS, FEW_WARPS_COLS, GROUP_BYTES, INTERPRETER_SMS, MAX_ROW_BLOCK, MAX_WARPS, NARROW_COLS,
    NARROW_ELEMS, PERSIST_CHUNK_BYTES, PERSIST_L2_SHARE, PERSIST_MAX_PROGRAMS_PER_SM, PERSIST_STAGES, PIPE_GROUP_BYTES,
    PLAN_TABLE, SPLIT_CHUNK, TILES_MAX_COLS, TILES_MIN_TILE, TILES_WARPS, SoftmaxPlan, persist_programs, row_tiles,
    softmax_launch, softmax_plan)
from .plan_of import softmax_plan_of
from .row_cut import cut_vec
from .split import softmax_chunk_stats_kernel, softmax_chunk_write_kernel
from .tiles import softmax_tiles_kernel
from .whole_rows import softmax_rows_tuned_kernel

__all__ = ["ELEMS_PER_THREAD", "FEW_WARPS", "FEW_WARPS_COLS", "GROUP_BYTES", "INTERPRETER_SMS", "MAX_ROW_BLOCK",
           "MAX_WARPS", "NARROW_COLS", "NARROW_ELEMS", "ONLINE_BLOCK", "PERSIST_CHUNK_BYTES", "PERSIST_L2_SHARE",
           "PERSIST_MAX_PROGRAMS_PER_SM", "PERSIST_STAGES", "PIPE_GROUP_BYTES", "PLAN_TABLE", "SPLIT_CHUNK",
           "TILES_MAX_COLS", "TILES_MIN_TILE", "TILES_WARPS", "SoftmaxPlan", "cut_vec", "default_plan", "l2_bytes",
           "persist_programs", "persist_vec", "row_tiles", "softmax_chunk_stats_kernel", "softmax_chunk_write_kernel",
           "softmax_launch", "softmax_online", "softmax_online_kernel", "softmax_persistent_kernel",
           "softmax_pipe_kernel", "softmax_plan", "softmax_plan_of", "softmax_planned", "softmax_row_kernel",
           "softmax_rows", "softmax_rows_tuned_kernel", "softmax_tiles_kernel", "softmax_tuned"]
