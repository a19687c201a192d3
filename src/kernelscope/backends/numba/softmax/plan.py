"""Which launch softmax-numba takes for a (rows, cols) input: pure Python, the defaults are parameters.

PLAN_TABLE lists the plans in the order they are tried; an input takes the first whose condition holds.
scripts/gpu/tune_numba.py sweeps the defaults; what it measured is in results-proofs/tuning-sweeps/.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import SimpleNamespace

from kernelscope.backends import WIDE_DRAM_GBPS_PER_SM
from kernelscope.backends.device import DeviceFacts
from kernelscope.backends.numba.common import SIM_THREADS

# regs: the default for rows up to REGS_DEFAULT_MAX_COLS that it holds. On the H100 it beat the row plan at
# every width up to 8192 columns, lost at 16384 with the accurate exp
# (results-proofs/tuning-sweeps/h100-971e88e/numba-regs-small.txt) and won there with the fast one
# (results-proofs/tuning-sweeps/h100-a08c0b0).
REGS_DEFAULT_MAX_COLS = 16384
# regs past REGS_DEFAULT_MAX_COLS: blocks of REGS_WIDE_THREADS threads, each holding just what covers the row (up to
# REGS_MAX_EPT: 65536 columns), where enough rows fill the SMs. On the H100 it read 72.9% of copy at 512x50257 (the
# row plan 62.1%), 94.1% at 2048x20000 (53.1%) and 60.4% at 256x65536 (57.6%)
# (results-proofs/tuning-sweeps/h100-34bf9d1).
REGS_WIDE_THREADS = 1024
# regs: the fast exp (exps.py's exp_fast): 97.3% of copy at 16384x16384 on the H100 against 66.8% with the
# accurate exp (results-proofs/tuning-sweeps/h100-a08c0b0).
REGS_FAST_EXP = True
# regs: 16-byte loads and stores where a row is a whole number of vectors and x and y start 16-byte aligned: a
# quarter of the memory instructions and their address arithmetic (H200, 8192x8192: 4-byte accesses read slower,
# results-proofs/tuning-sweeps/h200-d1a0df1).
REGS_VECTOR = True
REGS_EPT = 32  # regs: elements a thread holds (softmax-cuda's SOFTMAX_BLOCK_EPT) ...
# ... with at least this many threads a block: more, smaller blocks an SM (16384x1000 on the H100: 64 threads x 16
# read 90.6% of copy, results-proofs/tuning-sweeps/h100-f1f901f, against 128 x 8's 86.0%, h100-a08c0b0) ...
REGS_MIN_THREADS = 64
REGS_MAX_THREADS = 512  # ... and at most this many (max_threads overrides it) ...
REGS_MAX_EPT = 64  # ... so a thread holds up to this many: 32768 columns at 512 threads
# regs on a GPU whose DRAM asks WIDE_DRAM_GBPS_PER_SM or more of each SM (the H200): half REGS_EPT in twice the
# threads, as softmax-cuda's lone rows there (8192x8192: 512 x 16 read faster than 256 x 32,
# results-proofs/tuning-sweeps/h200-d1a0df1, h200-23db91a).
REGS_EPT_WIDE_DRAM = 16
# row: blocks of at most MAX_THREADS (256 beat 512 at 8192-16384 columns: more blocks an SM overlap their passes),
# about COLS_PER_THREAD columns a thread (at least 32 threads), ROW_UNROLL loads in flight a thread in pass 1 (16
# beat 8 and 4 at 256 threads) (H100: results-proofs/tuning-sweeps/h100-first-pass).
MAX_THREADS = 256
LONE_BLOCK_THREADS = 1024  # row: a row filling an SM's shared memory: a lone block keeps the loads in flight
COLS_PER_THREAD = 16
ROW_UNROLL = 16
RECOMPUTE = False  # row: pass 3 recomputes exp instead of pass 2 storing it to shared memory
# row: pass 1 keeps the running max and sum, so no pass runs from shared memory alone, with the fast exp, and a lone
# block 8 loads in flight a thread: 512x50257 on the H100 read 62.1-62.3% of copy against 55.5% (16 loads: 58.8%,
# 4: 58.4%; the online form with the accurate exp 56.0%, the fast exp alone 56.2%; softmax-wide-rows/h100-numba).
ROW_ONLINE = True
ROW_FAST_EXP = True
LONE_ROW_UNROLL = 8
MAX_CACHED_COLS: int | None = None  # widest row the row plan caches (None: what shared memory holds)
SCRATCH_BYTES = 32 * 4  # the static shared memory of the reductions
# split: CHUNK columns a block, SPLIT_THREADS threads (32 columns a thread), UNROLL loads in flight a thread in the
# DRAM passes, the fast exp, every row in one pair of launches, the second taking the chunks last to first so that it
# starts on what L2 still holds (L2_SHARE: rows in groups of at most that share of L2 instead). On the H100 the one
# pair beat groups that fit L2 at every shape swept, the launches a group costing more than the re-read from DRAM
# saves: 64x262144 55.9-56.1% of copy against 45.0% (groups of 25 rows, 4 loads), 128x262144 58.5% against 43.3%,
# 8x1048576 53.8-54.3% against 40.0%, 4096x70000 60.9% against 45.8% (softmax-wide-rows/h100-numba).
CHUNK = 8192
SPLIT_THREADS = 256
UNROLL = 8
L2_SHARE: float | None = None
SPLIT_FAST_EXP = True
SPLIT_REVERSE = True
# split: L2 eviction policies (cache_hints.py): launch 1's loads ask L2 to keep the chunks, launch 2's re-read and
# writes are last uses, as softmax-triton-tuned's split plan asks (its KEEP and LAST_USE).
SPLIT_L2_HINTS = True
# split: 16-byte loads and stores where rows and chunks are whole vectors and x and y start 16-byte aligned: a
# quarter of the memory instructions (on the H100 ahead of the 4-byte form at 64x262144 and 4096x70000,
# results-proofs/tuning-sweeps/h100-aa6d0b0).
SPLIT_VECTOR = True
# exchange: a row cut into parts of at most EXCHANGE_PART_BYTES, a block a part holding it in shared memory,
# EXCHANGE_THREADS threads, EXCHANGE_UNROLL loads in flight a thread (exchange.py): the row read from DRAM once, in
# one launch. Taken where asked (path="exchange"): on the H100 it read about what the defaults read (512x50257
# 61.0% with 2 parts, 64x262144 57.8% with 8 parts of 1024 threads, 4096x70000 61.2%) and needs all of a row's
# blocks resident at once, which the split plan does not (softmax-wide-rows/h100-numba).
EXCHANGE_PART_BYTES = 64 * 1024
EXCHANGE_THREADS = 512
EXCHANGE_UNROLL = 8
EXCHANGE_FAST_EXP = True
# resident: one launch of the blocks resident at once, a block a contiguous span of the tensor, the end of each span
# kept in shared memory across a grid-wide barrier (resident.py): RESIDENT_KEEP_BYTES of it a block, two blocks an SM
# of RESIDENT_THREADS threads, RESIDENT_UNROLL elements in flight a thread. It takes the split plan's place where the
# rows are whole vectors and the tensor is at most RESIDENT_MAX_L2S times L2: on the H100 it read 61.6% of copy at
# 64x262144 (split 58.7%), 67.6% at 8x1048576 (57.1%), 61.6% at 128x262144 (60.0%), but 60.1% at 4096x70000
# (62.4%); one block of 1024 threads an SM, a block's whole shared memory kept, read 59.8% at 64x262144
# (results-proofs/tuning-sweeps/h100-resident).
RESIDENT_THREADS = 512
RESIDENT_UNROLL = 16
RESIDENT_KEEP_BYTES: int | None = 112 * 1024
RESIDENT_MAX_L2S = 3.0
RESIDENT_FAST_EXP = True
RESIDENT_L2_HINTS = True
RESIDENT_VECTOR = True
# Under the simulator: tiny blocks and chunks, and the split plan from 17 columns on, so the check shapes run
# both plans and their loops really loop.
SIM_MAX_CACHED_COLS = 16
SIM_CHUNK = 12  # 17 columns: a full chunk and a partial one
SIM_UNROLL = 2
SIM_KEEP = 20  # resident: elements kept a block under the simulator (its one block then re-reads the rest)


@dataclass(frozen=True)
class Plan:
    path: str  # "regs", "row", "exchange", "resident" or "split"
    threads: int
    unroll: int  # row, exchange and split: loads in flight a thread; regs: elements a thread holds
    chunk: int = 0  # split: columns a block
    group_rows: int = 0  # split: rows a launch pair
    recompute: bool = False  # row: pass 3 recomputes exp (see shared_row.py)
    online: bool = False  # row: pass 1 keeps the running max and sum (ROW_ONLINE)
    fast_exp: bool = False  # libdevice's fast_expf for the exps (REGS_FAST_EXP, ROW_FAST_EXP, SPLIT_FAST_EXP)
    reverse: bool = False  # split: launch 2 takes the chunks last to first (SPLIT_REVERSE)
    parts: int = 0  # exchange: blocks a row
    keep: int = 0  # resident: the most elements a block keeps in shared memory; regs: the most columns past
    # threads x unroll a block keeps there (softmax_regs_shared_kernel)
    min_blocks: int = 1  # regs: blocks an SM the launch bounds keep registers for
    vector: bool = False  # regs, split, resident: 16-byte loads and stores where the rows allow (REGS_VECTOR, ...)
    hints: bool = False  # split, resident: L2 eviction policies on the loads and stores (SPLIT_L2_HINTS, ...)

    def __str__(self) -> str:
        extra = f" chunk={self.chunk} group={self.group_rows}" if self.path == "split" else ""
        extra += f" parts={self.parts}" if self.path == "exchange" else ""
        extra += f" keep={self.keep}" if self.path == "resident" or self.keep else ""
        extra += " reverse" if self.reverse else ""
        extra += " recompute" if self.recompute else ""
        extra += " online" if self.online else ""
        extra += " fast-exp" if self.fast_exp else ""
        extra += f" min-blocks={self.min_blocks}" if self.min_blocks > 1 else ""
        extra += " 16B" if self.vector else ""
        extra += " l2-hints" if self.hints else ""
        return f"{self.path} threads={self.threads} unroll={self.unroll}{extra}"


# The plans in the order they are tried: an input takes the first whose condition holds. Each column names a
# property of _Input below: the condition, the plan's threads and unroll (regs: elements a thread), and its other
# Plan fields (a field of another name than its property: (field, property)).
PLAN_TABLE = (
    # path       condition         threads             unroll             other fields
    ("regs",     "takes_regs",     "regs_threads",     "regs_ept",        ("fast_exp", "min_blocks", "vector")),
    ("row",      "takes_row",      "row_threads",      "row_unroll",      ("recompute", "online",
                                                                           ("fast_exp", "row_fast_exp"))),
    ("exchange", "takes_exchange", "exchange_threads", "exchange_unroll", ("parts", ("fast_exp", "exchange_fast_exp"))),
    ("resident", "takes_resident", "resident_threads", "resident_unroll", ("keep",
                                                                           ("fast_exp", "resident_fast_exp"),
                                                                           ("hints", "resident_hints"),
                                                                           ("vector", "resident_vector"))),
    ("split",    "always",         "split_threads",    "split_unroll",    ("chunk", "group_rows", "reverse",
                                                                           ("fast_exp", "split_fast_exp"),
                                                                           ("hints", "split_hints"),
                                                                           ("vector", "split_vector"))),
)


def softmax_launch(rows: int, cols: int, facts: DeviceFacts | None, max_threads: int | None = None,
                   cols_per_thread: int | None = None, unroll: int | None = None, chunk: int | None = None,
                   split_threads: int | None = None, max_cached_cols: int | None = None,
                   l2_share: float | None = None, path: str | None = None, recompute: bool | None = None,
                   fast_exp: bool | None = None, min_blocks: int = 1, vector: bool | None = None,
                   online: bool | None = None, reverse: bool | None = None, parts: int | None = None,
                   hints: bool | None = None, keep: int | None = None) -> Plan:
    """The launch plan for a (rows, cols) input on the GPU of ``facts`` (None: the simulator's sizes); None
    arguments: the module defaults; path forces a plan.

    The default: the regs plan for rows up to REGS_DEFAULT_MAX_COLS that it holds (under the simulator, rows
    that its 32 threads hold) and, where the rows fill the SMs, up to REGS_WIDE_THREADS x REGS_MAX_EPT; else the
    row plan while shared memory caches the row, else the resident plan up to RESIDENT_MAX_L2S times L2 and the
    split plan past it; the exchange plan only where asked.
    """
    shape = _Input(rows, cols, facts, SimpleNamespace(**locals()))
    name, _, threads, unroll, fields = next(rule for rule in PLAN_TABLE if getattr(shape, rule[1]))
    fields = [(f, f) if isinstance(f, str) else f for f in fields]
    return Plan(name, getattr(shape, threads), getattr(shape, unroll), **{f: getattr(shape, p) for f, p in fields})


def regs_plan(cols: int, max_threads: int | None = None, fast_exp: bool | None = None, min_blocks: int = 1,
              ept: int | None = None, vector: bool | None = None) -> Plan:
    """The "regs" plan for rows of ``cols``: ``ept`` (REGS_EPT) elements a thread, REGS_MIN_THREADS to
    ``max_threads`` (default REGS_MAX_THREADS) threads, more elements a thread once the threads run out.

    Its own limit, not the row plan's: at 16384 columns the row plan's 256 threads would hold 64 elements each,
    and the H100 read 56.7% of the copy bandwidth there against 88.1% at 8192 columns, 32 a thread
    (results-proofs/tuning-sweeps/h100-971e88e). ``vector`` (default REGS_VECTOR): 16-byte accesses where a
    thread holds whole vectors and the rows allow.
    """
    threads, ept = regs_shape(cols, max_threads, ept)
    return Plan("regs", threads, ept, fast_exp=REGS_FAST_EXP if fast_exp is None else fast_exp, min_blocks=min_blocks,
                vector=regs_vector(vector, ept))


def regs_shape(cols: int, max_threads: int | None, ept: int | None, exact: bool = False) -> tuple[int, int]:
    """(threads, elements a thread) of the regs plan for rows of ``cols`` (see regs_plan). A thread holds the
    power of two of elements that covers the row, or with ``exact`` just what covers it: a row of 50,257 at 1024
    threads in 50 registers a thread, where 64 are all a thread of 1024 has, and spill."""
    wanted = _pow2_at_least(-(-cols // (ept or REGS_EPT)))
    threads = min(max_threads or REGS_MAX_THREADS, max(REGS_MIN_THREADS, wanted))
    needed = -(-cols // threads)
    ept = needed if exact else _pow2_at_least(needed)
    if ept > REGS_MAX_EPT:
        raise ValueError(f"softmax-numba: a row of {cols} columns is wider than the regs plan holds "
                         f"({threads} threads x {REGS_MAX_EPT} elements); take the row or split plan")
    return threads, ept


def regs_vector(vector: bool | None, ept: int) -> bool:
    return (REGS_VECTOR if vector is None else vector) and ept % 4 == 0  # whole vectors a thread


class _Input:
    """An input's shape, its GPU (``facts``; None: the simulator) and what softmax_launch was asked (``asked``: its
    arguments), with what the plans read of them, each worked out when PLAN_TABLE first reads it."""

    always = True

    def __init__(self, rows: int, cols: int, facts: DeviceFacts | None, asked: SimpleNamespace):
        self.rows, self.cols, self.facts, self.asked = rows, cols, facts, asked
        self.simulated = facts is None

    # regs
    @cached_property
    def regs_max_threads(self) -> int | None:
        return self.asked.max_threads or (SIM_THREADS if self.simulated else None)

    @cached_property
    def takes_regs(self) -> bool:
        if self.asked.path is not None:
            return self.asked.path == "regs"
        holds = (self.regs_max_threads or REGS_MAX_THREADS) * REGS_MAX_EPT
        return (self.cols <= REGS_DEFAULT_MAX_COLS and self.cols <= holds) or self.wide_regs

    @cached_property
    def wide_regs(self) -> bool:
        """A row past REGS_DEFAULT_MAX_COLS that REGS_WIDE_THREADS threads hold, with rows enough to fill the SMs
        and no threads or elements a thread asked: REGS_WIDE_THREADS threads, each just what covers the row."""
        return (not self.simulated and self.asked.max_threads is None and self.asked.cols_per_thread is None
                and REGS_DEFAULT_MAX_COLS < self.cols <= REGS_WIDE_THREADS * REGS_MAX_EPT
                and self.rows >= self.facts.sm_count)

    @cached_property
    def regs_shape(self) -> tuple[int, int]:
        if self.wide_regs:
            return regs_shape(self.cols, REGS_WIDE_THREADS, None, exact=True)
        ept = self.asked.cols_per_thread  # the elements a thread holds, as asked
        if ept is None and not self.simulated and self.facts.dram_gbps_per_sm >= WIDE_DRAM_GBPS_PER_SM:
            return regs_shape(self.cols, self.regs_max_threads, REGS_EPT_WIDE_DRAM)
        return regs_shape(self.cols, self.regs_max_threads, ept, exact=ept is not None)

    @cached_property
    def regs_threads(self) -> int:
        return self.regs_shape[0]

    @cached_property
    def regs_ept(self) -> int:
        return self.regs_shape[1]

    def _as_asked(self, name: str, default):
        """softmax_launch's argument ``name`` as asked, else the plan's default."""
        value = getattr(self.asked, name)
        return default if value is None else value

    def _fast_exp(self, default: bool) -> bool:
        return self._as_asked("fast_exp", default)

    @cached_property
    def fast_exp(self) -> bool:
        return self._fast_exp(REGS_FAST_EXP)

    @cached_property
    def min_blocks(self) -> int:
        return self.asked.min_blocks

    @cached_property
    def vector(self) -> bool:
        return regs_vector(self.asked.vector, self.regs_ept)

    # row
    @cached_property
    def shared_bytes(self) -> int:
        """The dynamic shared memory a block may take for the row (the GPU's; not read under the simulator)."""
        return self.facts.shared_bytes_per_block - SCRATCH_BYTES

    @cached_property
    def cached_cols(self) -> int:
        """The widest row the row plan caches in shared memory."""
        if self.simulated:
            return self.asked.max_cached_cols or SIM_MAX_CACHED_COLS
        return min(self.shared_bytes // 4, self.asked.max_cached_cols or MAX_CACHED_COLS or self.shared_bytes // 4)

    @cached_property
    def takes_row(self) -> bool:
        """Asked for, or by default while shared memory caches the row, unless a few wide rows would leave SMs
        idle."""
        if self.asked.path is not None:
            return self.asked.path == "row"
        sms = 1 if self.simulated else self.facts.sm_count
        few_wide = self.rows < sms and self.cols >= 2 * self.asked_chunk
        return not (self.cols > self.cached_cols or few_wide)

    @cached_property
    def row_threads(self) -> int:
        if not self.simulated and self.cols > self.shared_bytes // 4:
            raise ValueError(f"softmax-numba: a row of {self.cols} columns does not fit in shared memory "
                             f"(at most {self.shared_bytes // 4}); take the split plan")
        if self.simulated:
            max_threads = self.asked.max_threads or SIM_THREADS
        else:
            max_threads = self.asked.max_threads or (LONE_BLOCK_THREADS if self.lone else MAX_THREADS)
        per_thread = self.asked.cols_per_thread or COLS_PER_THREAD
        return min(max_threads, max(32, _pow2_at_least(-(-self.cols // per_thread))))

    @cached_property
    def lone(self) -> bool:
        """A row filling half an SM's shared memory or more: a lone block a row (not read under the simulator)."""
        return self.cols * 4 > self.shared_bytes // 2

    @cached_property
    def row_unroll(self) -> int:
        if self.asked.unroll or self.simulated:
            return self.asked.unroll or SIM_UNROLL
        return LONE_ROW_UNROLL if self.lone else ROW_UNROLL

    @cached_property
    def recompute(self) -> bool:
        return self._as_asked("recompute", RECOMPUTE)

    @cached_property
    def online(self) -> bool:
        return self._as_asked("online", ROW_ONLINE)

    @cached_property
    def row_fast_exp(self) -> bool:
        return self._fast_exp(ROW_FAST_EXP)

    # exchange
    @cached_property
    def takes_exchange(self) -> bool:
        return self.asked.path == "exchange"

    @cached_property
    def parts(self) -> int:
        if self.asked.parts:
            return self.asked.parts
        return 1 if self.simulated else max(1, -(-self.cols * 4 // EXCHANGE_PART_BYTES))

    @cached_property
    def exchange_threads(self) -> int:
        most = self.asked.max_threads or (SIM_THREADS if self.simulated else EXCHANGE_THREADS)
        return min(most, max(32, _pow2_at_least(-(-self.cols // self.parts))))

    @cached_property
    def exchange_unroll(self) -> int:
        return self.asked.unroll or (SIM_UNROLL if self.simulated else EXCHANGE_UNROLL)

    @cached_property
    def exchange_fast_exp(self) -> bool:
        return self._fast_exp(EXCHANGE_FAST_EXP)

    # resident
    @cached_property
    def takes_resident(self) -> bool:
        """Asked for, or by default in the split plan's place where the rows are whole vectors and the tensor is at
        most RESIDENT_MAX_L2S times L2, unless the split plan's own knobs are asked."""
        if self.asked.path is not None:
            return self.asked.path == "resident"
        asked_split = any(v is not None for v in (self.asked.chunk, self.asked.split_threads, self.asked.l2_share,
                                                 self.asked.reverse))
        return (not self.simulated and not asked_split and self.cols % 4 == 0
                and self.rows * self.cols * 4 <= RESIDENT_MAX_L2S * self.facts.l2_bytes)

    @cached_property
    def resident_threads(self) -> int:
        return self.asked.max_threads or (SIM_THREADS if self.simulated else RESIDENT_THREADS)

    @cached_property
    def resident_unroll(self) -> int:
        return self.asked.unroll or (SIM_UNROLL if self.simulated else RESIDENT_UNROLL)

    @cached_property
    def keep(self) -> int:
        """Elements a block keeps in shared memory: as asked, else RESIDENT_KEEP_BYTES or what a block takes."""
        if self.asked.keep is not None:
            return self.asked.keep
        if self.simulated:
            return SIM_KEEP
        return min(RESIDENT_KEEP_BYTES or self.shared_bytes, self.shared_bytes) // 16 * 4  # whole vectors

    @cached_property
    def resident_fast_exp(self) -> bool:
        return self._fast_exp(RESIDENT_FAST_EXP)

    @cached_property
    def resident_hints(self) -> bool:
        return self._as_asked("hints", RESIDENT_L2_HINTS)

    @cached_property
    def resident_vector(self) -> bool:
        asked = self._as_asked("vector", RESIDENT_VECTOR)
        return asked and self.cols % 4 == 0

    # split
    @cached_property
    def asked_chunk(self) -> int:
        return self.asked.chunk or (SIM_CHUNK if self.simulated else CHUNK)

    @cached_property
    def chunk(self) -> int:
        return min(self.asked_chunk, self.cols)

    @cached_property
    def split_threads(self) -> int:
        most = self.asked.split_threads or (SIM_THREADS if self.simulated else SPLIT_THREADS)
        return min(most, max(32, _pow2_at_least(self.chunk)))

    @cached_property
    def split_unroll(self) -> int:
        return self.asked.unroll or (SIM_UNROLL if self.simulated else UNROLL)

    @cached_property
    def reverse(self) -> bool:
        return self._as_asked("reverse", SPLIT_REVERSE)

    @cached_property
    def split_fast_exp(self) -> bool:
        return self._fast_exp(SPLIT_FAST_EXP)

    @cached_property
    def split_hints(self) -> bool:
        return self._as_asked("hints", SPLIT_L2_HINTS)

    @cached_property
    def split_vector(self) -> bool:
        """16-byte accesses as asked (else SPLIT_VECTOR), where rows and chunks are whole vectors."""
        asked = self._as_asked("vector", SPLIT_VECTOR)
        return asked and self.cols % 4 == 0 and self.chunk % 4 == 0

    @cached_property
    def group_rows(self) -> int:
        share = self.asked.l2_share or L2_SHARE
        if share is None:
            return self.rows
        l2 = 2**20 if self.simulated else self.facts.l2_bytes
        return max(1, min(self.rows, int(share * l2) // (self.cols * 4)))


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()
