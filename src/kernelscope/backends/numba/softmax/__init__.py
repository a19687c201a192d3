"""Numba CUDA row softmax over the last dimension of a 2-D tensor (softmax-numba).

launch.py runs the plan plan.py picks for its (rows, cols) on its GPU, one kernel family a plan, each launch
through the driver after its first call (direct.py):

* regs (registers.py): a block a row, the row held in registers; the default for rows up to 16384 columns.
  Where asked (a Plan with ``keep``), the columns past its registers held in shared memory: two rows of 50257
  columns an SM at 512 threads x 44 registers, where registers alone hold one.
* row (shared_row.py): a block a row, the row cached in dynamic shared memory, while shared memory holds it.
* resident (resident.py): rows too wide for that, or too few to fill the GPU, in tensors up to three times L2: one
  launch of the blocks resident at once, a block a span of the tensor whose end it keeps in shared memory across a
  grid-wide barrier, so that only the rest is read twice.
* split (split.py): the same rows in larger tensors, cut into chunks, a block a chunk, in two launches, the second
  taking the chunks last to first.
* exchange (exchange.py), where asked: a row cut into parts held in shared memory by blocks resident at once, which
  exchange their (max, sum) through global memory, in one launch.

gpu.py reads the GPU's facts the plan takes; plan_of.py says what a plan launches (`kernelscope plan`).

Every maximum is subtracted before exp, so logits around +1000 do not
overflow; elements at -inf (masked) give exp(-inf) = 0, and a running
maximum still at -inf is never subtracted from itself (no -inf - -inf = NaN).
A row needs one finite element, as torch.softmax does.
"""

from .exps import exp_accurate, exp_fast, exp_of
from .exchange import softmax_exchange_kernel
from .gpu import device_limits, gpu_facts
from .launch import default_plan, launch_softmax, plan_softmax, softmax
from .plan import (
    CHUNK, COLS_PER_THREAD, L2_SHARE, LONE_BLOCK_THREADS, LONE_ROW_UNROLL, MAX_CACHED_COLS, MAX_THREADS, PLAN_TABLE,
    RECOMPUTE, REGS_DEFAULT_MAX_COLS, REGS_EPT, REGS_EPT_WIDE_DRAM, REGS_FAST_EXP, REGS_MAX_EPT, REGS_MAX_THREADS,
    REGS_MIN_THREADS, REGS_VECTOR, REGS_WIDE_THREADS, ROW_FAST_EXP, ROW_ONLINE, ROW_UNROLL, SCRATCH_BYTES, SIM_CHUNK,
    SIM_MAX_CACHED_COLS, SIM_UNROLL, SPLIT_FAST_EXP, SPLIT_L2_HINTS, SPLIT_REVERSE, SPLIT_THREADS, SPLIT_VECTOR,
    UNROLL, Plan, regs_plan, softmax_launch)
from .plan_of import softmax_plan_of
from .registers import softmax_regs_kernel, softmax_regs_shared_kernel
from .resident import softmax_resident_kernel
from .shared_row import allow_large_shared, softmax_row_kernel
from .split import chunk_stats_kernel, chunk_write_kernel, online_step

__all__ = ["CHUNK", "COLS_PER_THREAD", "L2_SHARE", "LONE_BLOCK_THREADS", "LONE_ROW_UNROLL", "MAX_CACHED_COLS",
           "MAX_THREADS", "PLAN_TABLE", "RECOMPUTE", "REGS_DEFAULT_MAX_COLS", "REGS_EPT", "REGS_EPT_WIDE_DRAM",
           "REGS_FAST_EXP", "REGS_MAX_EPT", "REGS_MAX_THREADS", "REGS_MIN_THREADS", "REGS_VECTOR", "REGS_WIDE_THREADS",
           "ROW_FAST_EXP", "ROW_ONLINE", "ROW_UNROLL", "SCRATCH_BYTES", "SIM_CHUNK", "SIM_MAX_CACHED_COLS",
           "SIM_UNROLL", "SPLIT_FAST_EXP", "SPLIT_L2_HINTS", "SPLIT_REVERSE", "SPLIT_THREADS", "SPLIT_VECTOR", "UNROLL",
           "allow_large_shared", "chunk_stats_kernel", "chunk_write_kernel", "default_plan", "device_limits",
           "exp_accurate", "exp_fast", "exp_of", "gpu_facts", "launch_softmax", "online_step", "Plan", "plan_softmax",
           "regs_plan", "softmax", "softmax_exchange_kernel", "softmax_launch", "softmax_plan_of",
           "softmax_regs_kernel", "softmax_regs_shared_kernel", "softmax_resident_kernel", "softmax_row_kernel"]
