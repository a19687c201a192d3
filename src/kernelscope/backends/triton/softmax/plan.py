"""Which launch softmax-triton-tuned takes for a (rows, cols) shape: pure Python, the thresholds are parameters.

PLAN_TABLE lists the plans in the order they are tried; a shape takes the first whose condition holds. The
measurements behind the defaults are in results-proofs/ (tuning-sweeps/ and softmax-wide-rows/: what each
plan read at the suite's shapes against the plans it beat, per GPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import SimpleNamespace


from kernelscope.backends.device import DeviceFacts
from kernelscope.backends.triton import cdiv, next_power_of_2

# row, narrow: rows up to MAX_ROW_BLOCK columns (a power of two) held whole in one program's registers, about
# ELEMS_PER_THREAD values a thread, at most MAX_WARPS warps. Rows up to NARROW_COLS wide are packed several to a
# program, up to NARROW_ELEMS elements: 1024-wide rows read faster one to a program of 4 warps than 4 to a program
# of 16. A lone row up to FEW_WARPS_COLS wide takes at most FEW_WARPS warps: at 4096 columns 8 or 16 warps read
# slower than 4, from 8192 columns 8 to 32 are level (H100: results-proofs/tuning-sweeps/h100-first-pass).
NARROW_COLS = 512
NARROW_ELEMS = 4096
MAX_ROW_BLOCK = 16384  # float32 after loading
ELEMS_PER_THREAD = 8  # num_warps = block / (32 * this), within the caps
MAX_WARPS = 16
FEW_WARPS_COLS = 4096
FEW_WARPS = 4
# split: SPLIT_CHUNK columns a program, the rows in groups of about GROUP_BYTES of input. Groups of 64 MB, above
# the H100's 50 MB of L2, were the fastest or within 0.5% at every wide shape: fewer launches, every SM busy
# longer (results-proofs/tuning-sweeps/h100-first-pass).
SPLIT_CHUNK = 4096
GROUP_BYTES = 64 << 20
# pipe: groups of this much input, so that L2 holds one group's read beside the group before's re-read.
PIPE_GROUP_BYTES = 16 << 20
# persist: programs an SM, at most PERSIST_MAX_PROGRAMS_PER_SM, as many as keep the grid's rows in flight within
# PERSIST_L2_SHARE of L2, so that the re-read hits L2. At 512x50257 float32 on the H100 two programs an SM (53 MB
# of rows in flight) read 59.5% of copy, the re-read missing L2, and one (26.5 MB) 63.9%
# (results-proofs/softmax-wide-rows/h100-8ece016-triton-cut).
PERSIST_MAX_PROGRAMS_PER_SM = 2
PERSIST_L2_SHARE = 0.5
# persist: both passes' pipeline depth (tl.range's num_stages) by programs an SM: 4 stages were faster at one
# program an SM (float32) on the H100 and the H200, 3 at two (bfloat16)
# (results-proofs/softmax-wide-rows/h100-5c8ffd3, h200-5c8ffd3).
PERSIST_STAGES = {1: 4, 2: 3}
# persist: chunks of 16 KiB, 4096 float32 or 8192 bfloat16 columns: at 512x50257 bfloat16 8192 columns beat the
# split plan where 4096 lost, and float32 lost at 8192 (results-proofs/tuning-sweeps/h100-f1f901f).
PERSIST_CHUNK_BYTES = 16 << 10
# tiles: rows wider than MAX_ROW_BLOCK up to TILES_MAX_COLS held whole by one program of TILES_WARPS warps, in
# tiles of at least TILES_MIN_TILE columns (row_tiles). At 512x50257 it beat the persist plan on the H100, float32
# 75.1% of copy against 67.5%, bfloat16 63.3% against 61.3% (results-proofs/tuning-sweeps/h100-21b619a; the H200:
# h200-457f5d4). 51200 is that row's slots: wider rows are untried.
TILES_MAX_COLS = 51200
TILES_MIN_TILE = 2048
TILES_WARPS = 32
INTERPRETER_SMS = 4  # the interpreter: a small stand-in, so that short check shapes pack rows


@dataclass(frozen=True)
class SoftmaxPlan:
    """How ``softmax_tuned`` launches for one shape: see ``softmax_plan``."""

    strategy: str  # "row", "narrow", "split", "pipe", "persist" or "tiles"
    block: int  # columns one program loads: the row's next power of two, the split's (or persist's) chunk, or
    # the tiles' slots
    num_warps: int
    rows_per_program: int = 1  # row / narrow
    chunks: int = 1  # split: programs per row
    group_rows: int = 0  # split: rows per (pass 1, pass 2) pair of launches
    l2_hints: bool = True  # split, persist: L2 eviction hints (keep x for pass 2, stream the re-read and y)
    programs: int = 0  # persist: the grid (programs taking rows in turn)
    stages: int = 0  # persist: pass 1's chunks in flight a program
    group: int = 1  # persist: pass 1's tile rows; a thread folds group x 16 bytes of a chunk into one (max, sum)
    vectorize: bool = True  # persist: cut each row where it is 16-byte aligned (see softmax_persistent_kernel)
    tiles: tuple[int, int, int] = (0, 0, 0)  # tiles: the row's tiles, largest first (1: an unused tile)

    def grid(self, rows: int) -> int:
        """Programs of a launch over ``rows`` rows: a program per rows_per_program rows (row, narrow), a program a
        row (tiles), the persistent grid (persist); split and pipe: a program a chunk of each of the rows (a
        group's, or two groups' in a pipe launch)."""
        if self.strategy in ("split", "pipe"):
            return rows * self.chunks
        if self.strategy == "persist":
            return self.programs
        if self.strategy == "tiles":
            return rows
        return cdiv(rows, self.rows_per_program)

    def launches(self, rows: int) -> int:
        groups = cdiv(rows, self.group_rows) if self.group_rows else 1
        return {"split": 2 * groups, "pipe": groups + 1}.get(self.strategy, 1)

    def predict(self, rows: int, cols: int, itemsize: int) -> dict:
        """Predicted traffic: DRAM bytes if every pass-2 re-read hits L2, the L2 bytes re-read, launches."""
        io = rows * cols * itemsize
        two_pass = self.strategy in ("split", "pipe", "persist")
        return {"dram_bytes": 2 * io, "l2_reread_bytes": io if two_pass else 0, "launches": self.launches(rows),
                "group_bytes": self.group_rows * cols * itemsize if two_pass else 0}

    def eviction_policies(self) -> tuple[str, str]:
        """(KEEP, LAST_USE): the eviction policies of a row's first read and of its re-read and write ("": none)."""
        return ("evict_last", "evict_first") if self.l2_hints else ("", "")


# The plans in the order they are tried: a shape takes the first whose condition holds. Each column names a
# property of _Shape below: the condition, the plan's block and num_warps, and its other SoftmaxPlan fields.
PLAN_TABLE = (
    # strategy   condition        block             num_warps         other fields
    ("narrow",   "packs_rows",    "row_block",      "row_warps",      ("rows_per_program",)),
    ("row",      "row_fits",      "row_block",      "row_warps",      ("rows_per_program",)),
    ("tiles",    "tiles_fit",     "tile_slots",     "tiles_warps",    ("tiles",)),
    ("persist",  "persists",      "persist_chunk",  "persist_warps",  ("group", "stages", "programs", "l2_hints",
                                                                       "vectorize")),
    ("pipe",     "pipelined",     "split_chunk",    "chunk_warps",    ("chunks", "group_rows", "l2_hints")),
    ("split",    "always",        "split_chunk",    "chunk_warps",    ("chunks", "group_rows", "l2_hints")),
)


def softmax_plan(rows: int, cols: int, itemsize: int, sm_count: int, *, narrow_cols: int = NARROW_COLS,
                 narrow_elems: int = NARROW_ELEMS, max_row_block: int = MAX_ROW_BLOCK, chunk: int | None = None,
                 group_bytes: int = GROUP_BYTES, elems_per_thread: int = ELEMS_PER_THREAD,
                 max_warps: int = MAX_WARPS, few_warps_cols: int = FEW_WARPS_COLS, few_warps: int = FEW_WARPS,
                 split_warps: int | None = None, l2_hints: bool = True, pipelined: bool = False,
                 pipe_group_bytes: int = PIPE_GROUP_BYTES, persistent: bool | None = None,
                 persist_programs_per_sm: int | None = None, l2_bytes: int = 0,
                 persist_stages: int | None = None, persist_group: int | None = None,
                 persist_vectorize: bool = True, tiles_max_cols: int = TILES_MAX_COLS) -> SoftmaxPlan:
    """The launch shape for a (rows, cols) softmax: the first plan of PLAN_TABLE whose condition holds.

    Rows up to ``max_row_block`` columns stay whole in one program (packed
    several to a program up to ``narrow_elems`` elements when they are at most
    ``narrow_cols`` wide, while leaving about a program per SM), with
    ``elems_per_thread`` per thread, at most ``few_warps`` warps for a lone
    row up to ``few_warps_cols`` wide and ``max_warps`` otherwise. Rows wider than
    ``max_row_block`` but at most ``tiles_max_cols`` columns: a program a row, the row in row_tiles' tiles.
    Wider rows are split into ``chunk``-column programs, in groups of about ``group_bytes`` of
    input, so that pass 2's re-read of the group hits L2; ``pipelined``: in groups
    of about ``pipe_group_bytes``, pass 2 of one group beside pass 1 of the next;
    ``persistent``: a row a program, ``persist_programs_per_sm`` programs an SM
    taking rows in turn (by default as many, up to 2, as keep their rows within
    PERSIST_L2_SHARE of ``l2_bytes``; 2 where L2's size is not given), both
    passes ``persist_stages`` deep (by default PERSIST_STAGES for its programs an
    SM), pass 1 ``persist_group`` rows in its tile (by default a thread's share
    of a chunk in one (max, sum) pair), 16 bytes an access where the rows allow
    (``persist_vectorize``); by default (None) when the rows give every program one. Asked for persist or pipe,
    a row up to ``tiles_max_cols`` takes it, not tiles.
    """
    shape = _Shape(rows, cols, itemsize, sm_count, SimpleNamespace(**locals()))
    strategy, _, block, warps, fields = next(rule for rule in PLAN_TABLE if getattr(shape, rule[1]))
    return SoftmaxPlan(strategy, getattr(shape, block), getattr(shape, warps),
                       **{name: getattr(shape, name) for name in fields})


class _Shape:
    """A shape and what softmax_plan was asked (``asked``: its arguments), with what the plans read of them, each
    worked out when PLAN_TABLE first reads it."""

    always = True

    def __init__(self, rows: int, cols: int, itemsize: int, sm_count: int, asked: SimpleNamespace):
        self.rows, self.cols, self.itemsize, self.sm_count, self.asked = rows, cols, itemsize, sm_count, asked

    # row, narrow: the row whole in a program
    @cached_property
    def row_block(self) -> int:
        return next_power_of_2(self.cols)

    @cached_property
    def row_fits(self) -> bool:
        return self.row_block <= self.asked.max_row_block

    @cached_property
    def rows_per_program(self) -> int:
        """Short rows packed, but not so many that SMs go idle."""
        if self.row_block > self.asked.narrow_cols:
            return 1
        return _floor_power_of_2(min(self.asked.narrow_elems // self.row_block, max(1, self.rows // self.sm_count)))

    @cached_property
    def packs_rows(self) -> bool:
        return self.row_fits and self.rows_per_program > 1

    @cached_property
    def row_warps(self) -> int:
        # The few-warps cap is for one row a program (narrow packs measured best with 16 warps).
        lone_short = self.rows_per_program == 1 and self.row_block <= self.asked.few_warps_cols
        cap = self.asked.few_warps if lone_short else self.asked.max_warps
        return _warps(self.rows_per_program * self.row_block, self.asked.elems_per_thread, cap)

    # tiles
    @cached_property
    def tiles_fit(self) -> bool:  # asked for persist or pipe: not tiles
        return self.cols <= self.asked.tiles_max_cols and self.asked.persistent is None and not self.pipelined

    @cached_property
    def tiles(self) -> tuple[int, int, int]:
        return row_tiles(self.cols)

    @cached_property
    def tile_slots(self) -> int:
        return sum(t for t in self.tiles if t > 1)

    tiles_warps = TILES_WARPS

    # persist
    @cached_property
    def programs_per_sm(self) -> int:
        asked = self.asked.persist_programs_per_sm
        return persist_programs(self.cols * self.itemsize, self.sm_count, self.asked.l2_bytes) if asked is None \
            else asked

    @cached_property
    def persists(self) -> bool:
        """Asked for, or by default where the rows give every program of its grid one (fewer rows lost)."""
        every_program_a_row = self.rows >= self.sm_count * self.programs_per_sm
        return (not self.pipelined and every_program_a_row) if self.asked.persistent is None else self.asked.persistent

    @cached_property
    def persist_chunk(self) -> int:
        return self.asked.chunk or PERSIST_CHUNK_BYTES // self.itemsize

    @cached_property
    def persist_warps(self) -> int:
        return self.asked.split_warps or _warps(self.persist_chunk, self.asked.elems_per_thread, self.asked.max_warps)

    @cached_property
    def group(self) -> int:
        """A thread's share of a chunk by default: its fold needs no shuffle."""
        chunk, vec = self.persist_chunk, 16 // self.itemsize if self.asked.persist_vectorize else 1
        group = self.asked.persist_group or max(1, chunk // (32 * self.persist_warps * vec))
        if group & (group - 1) or chunk % (group * vec):
            raise ValueError(f"softmax-triton-tuned: persist_group={group} must be a power of two dividing the "
                             f"chunk ({chunk} columns) into tiles of {vec}-element vectors")
        return group

    @cached_property
    def stages(self) -> int:
        return self.asked.persist_stages or PERSIST_STAGES[min(self.programs_per_sm, max(PERSIST_STAGES))]

    @cached_property
    def programs(self) -> int:
        return max(1, min(self.rows, self.sm_count * self.programs_per_sm))

    @cached_property
    def vectorize(self) -> bool:
        return self.asked.persist_vectorize

    @cached_property
    def l2_hints(self) -> bool:
        return self.asked.l2_hints

    # split, pipe
    @cached_property
    def pipelined(self) -> bool:
        return self.asked.pipelined

    @cached_property
    def split_chunk(self) -> int:
        return self.asked.chunk or SPLIT_CHUNK

    @cached_property
    def chunk_warps(self) -> int:
        return self.asked.split_warps or _warps(self.split_chunk, self.asked.elems_per_thread, self.asked.max_warps)

    @cached_property
    def chunks(self) -> int:
        return cdiv(self.cols, self.split_chunk)

    @cached_property
    def group_rows(self) -> int:
        """Rows of about a group's bytes, the groups made even: 64 rows as 22+21+21, not 24+24+16."""
        group_bytes = self.asked.pipe_group_bytes if self.pipelined else self.asked.group_bytes
        group_rows = max(1, min(self.rows, group_bytes // (self.cols * self.itemsize)))
        return cdiv(self.rows, cdiv(self.rows, group_rows))


def _warps(elements: int, elems_per_thread: int, max_warps: int) -> int:
    # A power of two between 1 and max_warps, giving each thread about elems_per_thread values.
    return max(1, min(max_warps, next_power_of_2(max(1, elements // (32 * elems_per_thread)))))


def _floor_power_of_2(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def row_tiles(cols: int, min_tile: int = TILES_MIN_TILE) -> tuple[int, int, int]:
    """Three powers of two, largest first, whose sum covers ``cols`` columns rounded up to ``min_tile``: the
    first two the largest that fit, the third what is left, rounded up to a power of two; 1 where a tile is not
    needed (a tile of one column, masked off). 50257 -> (32768, 16384, 2048); 65536 -> (65536, 1, 1)."""
    left = -(-cols // min_tile) * min_tile
    tiles = []
    for _ in range(2):
        tile = _floor_power_of_2(left) if left else 1
        tiles.append(tile)
        left -= tile if left else 0
    tiles.append(next_power_of_2(left) if left else 1)
    return tuple(tiles)


def persist_programs(row_bytes: int, sm_count: int, l2_bytes: int) -> int:
    """Programs an SM for the persist plan: the most, 1 to PERSIST_MAX_PROGRAMS_PER_SM, whose rows in flight
    fill about PERSIST_L2_SHARE of L2 (rounded: 1.98 grids of rows fit is 2); the most where l2_bytes is 0."""
    if not l2_bytes:
        return PERSIST_MAX_PROGRAMS_PER_SM
    fit = round(l2_bytes * PERSIST_L2_SHARE / (row_bytes * sm_count))
    return max(1, min(PERSIST_MAX_PROGRAMS_PER_SM, fit))


def softmax_launch(rows: int, cols: int, itemsize: int, facts: DeviceFacts | None) -> SoftmaxPlan:
    """softmax_plan on the GPU of ``facts`` (its SMs and L2): what a call launches there, and what `kernelscope
    plan` shows; None: the interpreter's stand-ins (INTERPRETER_SMS, no L2 to fit)."""
    if facts is None:
        return softmax_plan(rows, cols, itemsize, INTERPRETER_SMS, l2_bytes=0)
    return softmax_plan(rows, cols, itemsize, facts.sm_count, l2_bytes=facts.l2_bytes)
