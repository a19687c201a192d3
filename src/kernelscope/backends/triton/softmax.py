"""Triton row softmax: the lecture's one-block-per-row kernel, an online variant, and a tuned one."""

from dataclasses import dataclass
from functools import cache

import torch
import triton
import triton.language as tl

from kernelscope.backends.device import DeviceFacts
from kernelscope.backends.triton import gpu_facts, launch_per_row, next_power_of_2


@triton.jit
def softmax_row_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # The lecture kernel: the whole row sits in registers, so memory is read once
    # and written once. Rows wider than one block do not fit.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    numerator = tl.exp(z)
    denominator = tl.sum(numerator, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, (numerator / denominator).to(y_ptr.dtype.element_ty), mask=mask)


def softmax_rows(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_per_row(softmax_row_kernel, x, out)


ONLINE_BLOCK = 4096


@triton.jit
def softmax_online_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # Pass 1 keeps a running max m and a running sum s of exp(x - m) per lane,
    # rescaling s whenever m grows; pass 2 writes exp(x - M) / S. Two reads and
    # one write of the row, for rows of any width.
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    m = tl.full([BLOCK_SIZE], -float("inf"), dtype=tl.float32)
    s = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # Lanes that have seen only padding keep m = -inf; subtract a finite
        # stand-in there so no -inf - -inf (NaN) is ever formed.
        shift = tl.where(m_new == -float("inf"), 0.0, m_new)
        s = s * tl.exp(m - shift) + tl.exp(x - shift)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (tl.exp(x - row_max) / row_sum).to(y_ptr.dtype.element_ty), mask=mask)


def softmax_online(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_per_row(softmax_online_kernel, x, out, max_block=ONLINE_BLOCK)


# --- the tuned softmax ----------------------------------------------------------
#
# Three launch shapes, chosen per (rows, cols) on the host by ``softmax_plan``:
#
# * "row":    one program per row, the whole row in registers (the lecture's
#             kernel, num_warps scaled to the row). One read, one write.
# * "narrow": the same, several short rows per program, so a program moves
#             enough bytes to be worth its launch and its reductions.
# * "split":  rows too wide for one program's registers (512x50257, 64x262144:
#             few rows, each 100 KB-1 MB) cut into chunks, one program per
#             chunk, so every SM has work, in two passes:
#             pass 1 writes each chunk's (max, sum of exp), pass 2 combines its
#             row's chunk statistics and re-reads its chunk to write it. The
#             rows go through in groups, pass 1 then pass 2 per group, meant
#             to fit in L2 so that the re-read comes from L2 and DRAM sees one
#             read and one write; on the H100 the largest groups (64 MB: one to
#             four pairs of launches) measured fastest all the same.

# * "pipe":   the split's two passes, software-pipelined over row groups that
#             fit L2: launch k runs pass 2 of group k - 1 and pass 1
#             of group k side by side, their programs interleaved, so every
#             launch both reads new rows from DRAM and re-reads from L2 the rows
#             the launch before read, and writes; G groups take G + 1 launches,
#             not 2G, and no launch is all reads or all writes. Offered, not
#             chosen (``pipelined=True``), until the GPU says it beats "split"
#             (57.1% and 63.1% of copy at 512x50257 and 64x262144 on the H100).
#
# * "persist": one program a row, rows taken in turn by a persistent grid of
#             one or two programs an SM: pass 1 reads the row in
#             chunks, a running (max, sum) per thread, its loads software-pipelined
#             (``num_stages``); pass 2 re-reads the row and writes it. A grid's
#             worth of rows in flight is what L2 keeps for the re-read, so DRAM
#             sees one read and one write, with no second launch and no chunk
#             statistics; the grid is as many programs an SM as keep those rows
#             within half of L2 (``l2_bytes``; PERSIST_L2_SHARE). The lecture's
#             online kernel launches a program for every row at once, so its
#             re-read misses L2 (45% of copy at 512x50257). Rows are cut where
#             they are 16-byte aligned (softmax_persistent_kernel). Chosen for
#             rows wider than "tiles" holds that give every program one, in
#             chunks of 16 KiB; 64x262144 (64 rows) stays on "split", which is
#             faster there. At 512x50257 float32 on the H100 two programs an SM
#             read 59.5% of copy (ncu: L2 hit 52%, DRAM 79% of peak: the re-read
#             missed L2), one an SM 63.9% (L2 hit 69.5%); with 4 stages at one
#             program an SM (PERSIST_STAGES) the suite's runs read 68.0% on the
#             H100 and 60.4% on the H200.
#
# * "tiles":  one program of TILES_WARPS warps a row, the row held whole in registers as up to three
#             power-of-two tiles (softmax_tiles_kernel): 50257 columns are 32768 + 16384 + 2048, 51200
#             slots where one power of two would be 65536. One read and one write, no re-read. sm_90 SASS
#             (Triton 3.9, compiled here): 64 registers a thread at 32 warps, and with the 16-byte cut 120
#             bytes of a float32 thread's values on its stack (16 in bfloat16), where the row kernel's single
#             65536 tile keeps 296. One program an SM
#             (its registers fill the SM's), so an SM's next row loads only once its row is written (a
#             persistent form, the next row pipelined into shared memory, read slower). Chosen for rows up to
#             TILES_MAX_COLS columns (512x50257, H100: float32 75.1% of copy, bfloat16 63.3%, against persist's
#             67.5% and 61.3%; floors.py --kernels: with its exps free, 83.5% and 71.2%).
#
# H100 measurements behind the defaults (scripts/gpu/tune_triton.py):
# * 1024-wide rows, one to a program with 4 warps, beat 4 to a program with 16
#   (1024x1024 f32 3.73 vs 3.96 us; 16384x1000 f32 47.24 vs 47.42): pack only rows up to 512.
# * 4096-wide rows: 4 warps 47.33 us, 8 or 16 warps 47.92; at 8192 and 16384
#   columns 8, 16 and 32 warps are within 0.5%: at most 4 warps up to 4096 columns.
# * split groups of 32-64 MB beat 12-24 MB at every wide shape (fewer launches,
#   every SM busy longer); 64 MB is best or within 0.5% at all four.
NARROW_COLS = 512  # rows up to this block are packed several to a program
NARROW_ELEMS = 4096  # ... up to this many elements per program
MAX_ROW_BLOCK = 16384  # widest row held whole in one program's registers (float32 after loading)
SPLIT_CHUNK = 4096  # columns per program in the split path
GROUP_BYTES = 64 << 20  # input bytes per split group (measured best, though above the H100's 50 MB L2)
ELEMS_PER_THREAD = 8  # num_warps = block / (32 * this), within the caps below
MAX_WARPS = 16
FEW_WARPS_COLS = 4096  # rows up to this block get at most FEW_WARPS warps
FEW_WARPS = 4
PIPE_GROUP_BYTES = 16 << 20  # pipe: input bytes a group; L2 holds one group read, one re-read (H100: 50 MB)
PERSIST_MAX_PROGRAMS_PER_SM = 2  # persist: programs an SM at most (2 x 512 threads; bfloat16 at 3 read the same)
PERSIST_L2_SHARE = 0.5  # persist: the grid's rows in flight may fill this share of L2 (H100, 512x50257:
# float32 rows, 201 KB, at 1 program an SM, 26.5 MB, 63.9% of copy; at 2, 53 MB, 59.5%; bfloat16 at 2 61.2%)
# persist: the pipeline depth of both passes (tl.range's num_stages: stages - 1 chunks in flight a program), by
# programs an SM. tune_triton.py --quick, 512x50257 float32 at one program an SM: 4 stages 66.4% of copy
# on the H100 and 60.6% on the H200, against 3 stages' 63.5% and 55.3% (6 stages: 67.1% and 59.8%); bfloat16 at two
# programs an SM: 4 stages 59.5% and 49.6%, against 3 stages' 60.3% and 51.1%.
PERSIST_STAGES = {1: 4, 2: 3}
# persist: a chunk of 16 KiB, 4096 float32 or 8192 bfloat16 columns. bfloat16 at 512x50257:
# 8192 columns 51.5% of copy on the H100 and 38.4% on the H200 against split's 45.4% and 34.6% (4096 columns:
# 41.9% on the H100); float32 at 8192 columns lost (46.0% against 62.8% at 4096).
PERSIST_CHUNK_BYTES = 16 << 10
# tiles: the widest rows held whole in a program's registers as up to three power-of-two tiles (0: never), the
# smallest tile, and the program's warps (1024 threads: 64 registers a thread, 50 floats of a 50257-wide row).
# H100, 512x50257, a program a row: float32 75.1% of copy against persist's 67.5%, bfloat16 63.3% against
# 61.3% (tune_triton.py --quick; floors.py --kernels on the same machine: 75.2% and 63.6% against 68.1% and
# 61.3%).
# 51200: the measured row's slots; a row of more floats a thread than that is untried.
TILES_MAX_COLS = 51200
TILES_MIN_TILE = 2048
TILES_WARPS = 32


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
        return triton.cdiv(rows, self.rows_per_program)

    def launches(self, rows: int) -> int:
        groups = triton.cdiv(rows, self.group_rows) if self.group_rows else 1
        return {"split": 2 * groups, "pipe": groups + 1}.get(self.strategy, 1)

    def predict(self, rows: int, cols: int, itemsize: int) -> dict:
        """Predicted traffic: DRAM bytes if every pass-2 re-read hits L2, the L2 bytes re-read, launches."""
        io = rows * cols * itemsize
        two_pass = self.strategy in ("split", "pipe", "persist")
        return {"dram_bytes": 2 * io, "l2_reread_bytes": io if two_pass else 0, "launches": self.launches(rows),
                "group_bytes": self.group_rows * cols * itemsize if two_pass else 0}


def _warps(elements: int, elems_per_thread: int, max_warps: int) -> int:
    # A power of two between 1 and max_warps, giving each thread about elems_per_thread values.
    return max(1, min(max_warps, next_power_of_2(max(1, elements // (32 * elems_per_thread)))))


def _floor_power_of_2(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def softmax_plan(rows: int, cols: int, itemsize: int, sm_count: int, *, narrow_cols: int = NARROW_COLS,
                 narrow_elems: int = NARROW_ELEMS, max_row_block: int = MAX_ROW_BLOCK, chunk: int | None = None,
                 group_bytes: int = GROUP_BYTES, elems_per_thread: int = ELEMS_PER_THREAD,
                 max_warps: int = MAX_WARPS, few_warps_cols: int = FEW_WARPS_COLS, few_warps: int = FEW_WARPS,
                 split_warps: int | None = None, l2_hints: bool = True, pipelined: bool = False,
                 pipe_group_bytes: int = PIPE_GROUP_BYTES, persistent: bool | None = None,
                 persist_programs_per_sm: int | None = None, l2_bytes: int = 0,
                 persist_stages: int | None = None, persist_group: int | None = None,
                 persist_vectorize: bool = True, tiles_max_cols: int = TILES_MAX_COLS) -> SoftmaxPlan:
    """The launch shape for a (rows, cols) softmax: pure Python, the thresholds are parameters.

    Rows up to ``max_row_block`` columns stay whole in one program (packed
    several to a program up to ``narrow_elems`` elements when they are at most
    ``narrow_cols`` wide, while leaving about a program per SM), with
    ``elems_per_thread`` per thread, at most ``few_warps`` warps for a lone
    row up to ``few_warps_cols`` wide and ``max_warps`` otherwise. Wider rows are
    split into ``chunk``-column programs, in groups of about ``group_bytes`` of
    input, so that pass 2's re-read of the group hits L2; ``pipelined``: in groups
    of about ``pipe_group_bytes``, pass 2 of one group beside pass 1 of the next;
    ``persistent``: a row a program, ``persist_programs_per_sm`` programs an SM
    taking rows in turn (by default as many, up to 2, as keep their rows within
    PERSIST_L2_SHARE of ``l2_bytes``; 2 where L2's size is not given), both
    passes ``persist_stages`` deep (by default PERSIST_STAGES for its programs an
    SM), pass 1 ``persist_group`` rows in its tile (by default a thread's share
    of a chunk in one (max, sum) pair), 16 bytes an access where the rows allow
    (``persist_vectorize``); by default (None) when the rows give every program one. Rows wider than
    ``max_row_block`` but at most ``tiles_max_cols`` columns: a program a row, the row in row_tiles' tiles.
    """
    block = next_power_of_2(cols)
    if block <= max_row_block:
        rows_per_program = 1
        if block <= narrow_cols:
            # Pack short rows, but not so many that SMs go idle.
            rows_per_program = _floor_power_of_2(min(narrow_elems // block, max(1, rows // sm_count)))
        # The few-warps cap is for one row a program (narrow packs measured best with 16 warps).
        cap = few_warps if rows_per_program == 1 and block <= few_warps_cols else max_warps
        return SoftmaxPlan("narrow" if rows_per_program > 1 else "row", block,
                           _warps(rows_per_program * block, elems_per_thread, cap), rows_per_program)
    if cols <= tiles_max_cols and persistent is None and not pipelined:  # asked for persist or pipe: not tiles
        tiles = row_tiles(cols)
        return SoftmaxPlan("tiles", sum(t for t in tiles if t > 1), TILES_WARPS, tiles=tiles)
    if persist_programs_per_sm is None:
        persist_programs_per_sm = persist_programs(cols * itemsize, sm_count, l2_bytes)
    if persistent is None:  # see PERSIST_L2_SHARE and PERSIST_CHUNK_BYTES; rows too few for the grid lost
        persistent = not pipelined and rows >= sm_count * persist_programs_per_sm
    if persistent:
        chunk = chunk or PERSIST_CHUNK_BYTES // itemsize
        warps = split_warps or _warps(chunk, elems_per_thread, max_warps)
        vec = 16 // itemsize if persist_vectorize else 1
        group = persist_group or max(1, chunk // (32 * warps * vec))  # a thread's share: its fold needs no shuffle
        if group & (group - 1) or chunk % (group * vec):
            raise ValueError(f"softmax-triton-tuned: persist_group={group} must be a power of two dividing the "
                             f"chunk ({chunk} columns) into tiles of {vec}-element vectors")
        stages = persist_stages or PERSIST_STAGES[min(persist_programs_per_sm, max(PERSIST_STAGES))]
        return SoftmaxPlan("persist", chunk, warps, l2_hints=l2_hints,
                           programs=max(1, min(rows, sm_count * persist_programs_per_sm)), stages=stages,
                           group=group, vectorize=persist_vectorize)
    chunk = chunk or SPLIT_CHUNK
    chunks = triton.cdiv(cols, chunk)
    group_rows = max(1, min(rows, (pipe_group_bytes if pipelined else group_bytes) // (cols * itemsize)))
    group_rows = triton.cdiv(rows, triton.cdiv(rows, group_rows))  # even groups: 64 rows as 22+21+21, not 24+24+16
    return SoftmaxPlan("pipe" if pipelined else "split", chunk, split_warps or _warps(chunk, elems_per_thread, max_warps),
                       chunks=chunks, group_rows=group_rows, l2_hints=l2_hints)


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


@cache
def l2_bytes(device: torch.device) -> int:
    if device.type != "cuda":
        return 0  # the interpreter: no cache to fit
    return torch.cuda.get_device_properties(device).L2_cache_size


INTERPRETER_SMS = 4  # the interpreter: a small stand-in, so that short check shapes pack rows


@cache
def sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return INTERPRETER_SMS
    return torch.cuda.get_device_properties(device).multi_processor_count


@triton.jit
def _exp(FREE: tl.constexpr, z):
    """exp(z) in softmax-triton-tuned's wide-row kernels; FREE (scripts/gpu/floors.py's measurement only):
    z itself, so a kernel moves its bytes and reduces as it does with no exp math (its output is no softmax)."""
    if FREE:
        return z
    else:
        return tl.exp(z)


@triton.jit
def softmax_rows_tuned_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
                              ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """ROWS whole rows per program, held in registers: reads each element once, writes it once.

    The lecture's kernel with a [ROWS, BLOCK] tile; ROWS = 1 is the row path.
    """
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    # The last program's rows past the end re-read the last row (no NaN from an
    # empty row) and store nothing.
    x_rows = tl.minimum(rows, n_rows - 1)
    x = tl.load(x_ptr + x_rows[:, None] * x_row_stride + cols[None, :], mask=cols[None, :] < n_cols,
                other=-float("inf"))
    x = x.to(tl.float32)
    numerator = tl.exp(x - tl.max(x, axis=1)[:, None])
    # One reciprocal per row, then a multiply per element (a divide costs several instructions).
    y = numerator * (1.0 / tl.sum(numerator, axis=1))[:, None]
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


# row0 (and the group's row count) change from group to group: one compiled
# kernel for all of them, not one per value's divisibility.
@triton.jit(do_not_specialize=["row0"])
def softmax_chunk_stats_kernel(x_ptr, max_ptr, sum_ptr, row0, n_cols, x_row_stride, n_chunks,
                               CHUNK: tl.constexpr, KEEP: tl.constexpr, FREE_EXPS: tl.constexpr):
    """Split pass 1: one program per chunk of a row, writes the chunk's max and sum of exp(x - max).

    Reads its CHUNK elements of x once (from DRAM) and writes two floats.
    KEEP is the L2 eviction policy of the read: "evict_last" asks L2 to keep
    the chunk for pass 2 ("" leaves the default).
    """
    _chunk_stats(x_ptr, max_ptr, sum_ptr, tl.program_id(0), row0, n_cols, x_row_stride, n_chunks, CHUNK, KEEP,
                 FREE_EXPS)


@triton.jit
def _chunk_stats(x_ptr, max_ptr, sum_ptr, index, row0, n_cols, x_row_stride, n_chunks, CHUNK: tl.constexpr,
                 KEEP: tl.constexpr, FREE_EXPS: tl.constexpr):
    """Pass 1 of chunk ``index`` of the group from row0 (the split and pipe plans share it)."""
    row = index // n_chunks
    chunk = index % n_chunks
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    x = tl.load(x_ptr + (row0 + row) * x_row_stride + cols, mask=cols < n_cols, other=-float("inf"),
                eviction_policy=KEEP)
    x = x.to(tl.float32)
    chunk_max = tl.max(x, axis=0)
    # A chunk entirely at -inf (a masked span) has sum 0: subtract a finite
    # stand-in so that no -inf - (-inf) = NaN is formed.
    shift = tl.where(chunk_max == -float("inf"), 0.0, chunk_max)
    tl.store(max_ptr + index, chunk_max)
    tl.store(sum_ptr + index, tl.sum(_exp(FREE_EXPS, x - shift), axis=0))


@triton.jit(do_not_specialize=["row0", "n_group_rows"])
def softmax_chunk_write_kernel(x_ptr, y_ptr, max_ptr, sum_ptr, row0, n_group_rows, n_cols,
                               x_row_stride, y_row_stride, n_chunks, CHUNK: tl.constexpr,
                               CHUNKS_BLOCK: tl.constexpr, LAST_USE: tl.constexpr, FREE_EXPS: tl.constexpr):
    """Split pass 2: combine the row's chunk statistics, re-read the chunk, write exp(x - max) / sum.

    Reads n_chunks pairs of floats and CHUNK elements of x (from L2, pass 1
    just read them), writes CHUNK elements of y. LAST_USE is the L2 eviction
    policy of the re-read and of the write: "evict_first" lets neither push
    out the chunks still to be re-read.
    """
    # Walk the group backwards: the chunks pass 1 read last are the likeliest
    # to be still in L2 if the group turns out larger than the cache.
    _chunk_write(x_ptr, y_ptr, max_ptr, sum_ptr, n_group_rows * n_chunks - 1 - tl.program_id(0), row0, n_cols,
                 x_row_stride, y_row_stride, n_chunks, CHUNK, CHUNKS_BLOCK, LAST_USE, FREE_EXPS)


@triton.jit
def _chunk_write(x_ptr, y_ptr, max_ptr, sum_ptr, index, row0, n_cols, x_row_stride, y_row_stride, n_chunks,
                 CHUNK: tl.constexpr, CHUNKS_BLOCK: tl.constexpr, LAST_USE: tl.constexpr, FREE_EXPS: tl.constexpr):
    """Pass 2 of chunk ``index`` of the group from row0 (the split and pipe plans share it)."""
    row = index // n_chunks
    chunk = index % n_chunks
    c = tl.arange(0, CHUNKS_BLOCK)
    stats = row * n_chunks + c
    chunk_max = tl.load(max_ptr + stats, mask=c < n_chunks, other=-float("inf"))
    chunk_sum = tl.load(sum_ptr + stats, mask=c < n_chunks, other=0.0)
    row_max = tl.max(chunk_max, axis=0)
    # Rescale each chunk's sum from its own max to the row's (0 for an all -inf chunk).
    row_sum = tl.sum(chunk_sum * _exp(FREE_EXPS, chunk_max - row_max), axis=0)
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols
    x = tl.load(x_ptr + (row0 + row) * x_row_stride + cols, mask=mask, other=0.0, eviction_policy=LAST_USE)
    y = _exp(FREE_EXPS, x.to(tl.float32) - row_max) * (1.0 / row_sum)
    tl.store(y_ptr + (row0 + row) * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask,
             eviction_policy=LAST_USE)


@triton.jit(do_not_specialize=["write_row0", "n_write_rows", "stats_row0", "n_stats_rows"])
def softmax_pipe_kernel(x_ptr, y_ptr, write_max_ptr, write_sum_ptr, stats_max_ptr, stats_sum_ptr,
                        write_row0, n_write_rows, stats_row0, n_stats_rows, n_cols, x_row_stride, y_row_stride,
                        n_chunks, CHUNK: tl.constexpr, CHUNKS_BLOCK: tl.constexpr, KEEP: tl.constexpr,
                        LAST_USE: tl.constexpr, FREE_EXPS: tl.constexpr):
    """The pipe plan's launch: pass 2 of one row group (its statistics at write_*) and pass 1 of the next
    (statistics into stats_*), as the split plan's two kernels do them, in one grid. Programs alternate
    between the two while both have chunks left, so every wave reads from DRAM, re-reads from L2 and writes.
    """
    pid = tl.program_id(0)
    n_write = n_write_rows * n_chunks
    n_stats = n_stats_rows * n_chunks
    both = tl.minimum(n_write, n_stats)
    if pid < 2 * both:
        is_write = pid % 2 == 0
        index = pid // 2
    else:
        is_write = n_write > n_stats
        index = pid - both
    if is_write:  # backwards, as the split's pass 2: the chunks pass 1 read last first
        _chunk_write(x_ptr, y_ptr, write_max_ptr, write_sum_ptr, n_write - 1 - index, write_row0, n_cols,
                     x_row_stride, y_row_stride, n_chunks, CHUNK, CHUNKS_BLOCK, LAST_USE, FREE_EXPS)
    else:
        _chunk_stats(x_ptr, stats_max_ptr, stats_sum_ptr, index, stats_row0, n_cols, x_row_stride, n_chunks,
                     CHUNK, KEEP, FREE_EXPS)


def _l2_hints(plan: SoftmaxPlan) -> tuple[str, str]:
    """(KEEP, LAST_USE): the eviction policies of a row's first read and of its re-read and write ("": none)."""
    return ("evict_last", "evict_first") if plan.l2_hints else ("", "")


def _softmax_piped(x: torch.Tensor, y: torch.Tensor, plan: SoftmaxPlan, free_exps: bool) -> torch.Tensor:
    """The pipe plan: groups g = 0..G-1, launch k = pass 2 of group k - 1 beside pass 1 of group k.

    Group g's statistics live in slot g % 2: launch k writes slot k % 2 and reads slot (k - 1) % 2, and the
    stream orders launch k + 1's writes to that slot after launch k's reads.
    """
    rows, cols = x.shape
    groups = triton.cdiv(rows, plan.group_rows)

    def group(g: int) -> tuple[int, int]:  # (first row, rows) of group g; (0, 0) before the first, past the last
        return (g * plan.group_rows, min(plan.group_rows, rows - g * plan.group_rows)) if 0 <= g < groups else (0, 0)

    slots = torch.empty((2, 2, plan.group_rows * plan.chunks), device=x.device, dtype=torch.float32)
    keep, last_use = _l2_hints(plan)
    for k in range(groups + 1):
        (write_row0, n_write), (stats_row0, n_stats) = group(k - 1), group(k)  # pass 2 of k - 1, pass 1 of k
        w, st = slots[(k - 1) % 2], slots[k % 2]
        softmax_pipe_kernel[(plan.grid(n_write + n_stats),)](
            x, y, w[0], w[1], st[0], st[1], write_row0, n_write, stats_row0, n_stats, cols, x.stride(0),
            y.stride(0), plan.chunks, CHUNK=plan.block, CHUNKS_BLOCK=next_power_of_2(plan.chunks), KEEP=keep,
            LAST_USE=last_use, FREE_EXPS=free_exps, num_warps=plan.num_warps)
    return y


@triton.jit
def _row_cut(x_ptr, y_ptr, row, n_cols, x_row_stride, y_row_stride, VEC: tl.constexpr):
    """Row ``row`` cut where it is 16-byte aligned (softmax_persistent_kernel's and softmax_tiles_kernel's): y's
    row, the body's length (a multiple of VEC) and its start in x and y, and the edges: e_col and e_mask of a
    2 x VEC tile (e < VEC the head's elements, e >= VEC the tail's, after the body), their x loaded."""
    x_row = x_ptr + row * x_row_stride  # int32 offsets: the variant takes fewer than 2^31 elements
    y_row = y_ptr + row * y_row_stride
    head = tl.minimum((VEC - (row * x_row_stride) % VEC) % VEC, n_cols)  # elements to the 16-byte boundary
    n_body = tl.multiple_of((n_cols - head) // VEC * VEC, VEC)
    x_body = x_ptr + tl.multiple_of(row * x_row_stride + head, VEC)
    y_body = y_ptr + tl.multiple_of(row * y_row_stride + head, VEC)
    e = tl.arange(0, 2 * VEC)
    e_col = tl.where(e < VEC, e, head + n_body + e - VEC)
    e_mask = tl.where(e < VEC, e < head, e_col < n_cols)
    x_edge = tl.load(x_row + e_col, mask=e_mask, other=-float("inf")).to(tl.float32)
    return y_row, n_body, x_body, y_body, e_col, e_mask, x_edge


@triton.jit
def softmax_persistent_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride, CHUNK: tl.constexpr,
                              GROUP: tl.constexpr, VEC: tl.constexpr, STAGES: tl.constexpr, KEEP: tl.constexpr,
                              LAST_USE: tl.constexpr, FREE_EXPS: tl.constexpr):
    """The persist plan: program p takes rows p, p + grid, ...; each row read twice (the second time from L2).

    VEC > 1: x and y start 16-byte aligned with equal row strides, VEC elements are 16 bytes, and each row is
    cut where it is aligned: under VEC elements at each end (the edges), the body between them read and written
    16 bytes an instruction. A 50257-wide row starts aligned one row in four; without the cut every access is one
    element wide (sm_90 SASS of this kernel for 512x50257 float32: 1,256 instructions and 124 registers at VEC = 1,
    544 and 47 at VEC = 4). VEC = 1: no alignment assumed, the whole row is body.

    Pass 1 sees a chunk of the body as a GROUP x (CHUNK / (GROUP x VEC)) x VEC tile, one running (max, sum) pair
    per middle index: a thread folds the GROUP x VEC elements it holds into its pair, one rescale a chunk, not
    two exps an element. GROUP = VEC = 1: a pair per element.
    """
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        y_row, n_body, x_body, y_body, e_col, e_mask, x_edge = _row_cut(x_ptr, y_ptr, row, n_cols, x_row_stride,
                                                                         y_row_stride, VEC)

        lanes: tl.constexpr = CHUNK // (GROUP * VEC)
        tile = (tl.arange(0, GROUP)[:, None, None] * (lanes * VEC) + tl.arange(0, lanes)[None, :, None] * VEC
                + tl.arange(0, VEC)[None, None, :])
        m = tl.full([lanes], -float("inf"), dtype=tl.float32)
        s = tl.zeros([lanes], dtype=tl.float32)
        for start in tl.range(0, n_body, CHUNK, num_stages=STAGES):
            cols = start + tile
            x = tl.load(x_body + cols, mask=cols < n_body, other=-float("inf"), eviction_policy=KEEP)
            x = x.to(tl.float32)
            m_new = tl.maximum(m, tl.max(tl.max(x, axis=2), axis=0))
            shift = tl.where(m_new == -float("inf"), 0.0, m_new)  # lanes of padding only: no -inf - -inf
            s = (s * _exp(FREE_EXPS, m - shift)
                 + tl.sum(tl.sum(_exp(FREE_EXPS, x - shift[None, :, None]), axis=2), axis=0))
            m = m_new
        row_max = tl.maximum(tl.max(m, axis=0), tl.max(x_edge, axis=0))
        shift = tl.where(row_max == -float("inf"), 0.0, row_max)
        inv = 1.0 / (tl.sum(s * _exp(FREE_EXPS, m - shift), axis=0)
                     + tl.sum(_exp(FREE_EXPS, x_edge - shift), axis=0))
        tl.store(y_row + e_col, (_exp(FREE_EXPS, x_edge - shift) * inv).to(y_ptr.dtype.element_ty), mask=e_mask)
        for start in tl.range(0, n_body, CHUNK, num_stages=STAGES):
            cols = start + tl.arange(0, CHUNK)
            mask = cols < n_body
            x = tl.load(x_body + cols, mask=mask, other=0.0, eviction_policy=LAST_USE).to(tl.float32)
            tl.store(y_body + cols, (_exp(FREE_EXPS, x - shift) * inv).to(y_ptr.dtype.element_ty), mask=mask,
                     eviction_policy=LAST_USE)


@triton.jit
def _tile_load(x_body, start, n_body, TILE: tl.constexpr):
    cols = start + tl.arange(0, TILE)
    return tl.load(x_body + cols, mask=cols < n_body, other=-float("inf")).to(tl.float32)


@triton.jit
def _tile_store(y_body, start, n_body, e, inv, TILE: tl.constexpr):
    cols = start + tl.arange(0, TILE)
    tl.store(y_body + cols, (e * inv).to(y_body.dtype.element_ty), mask=cols < n_body)


@triton.jit
def softmax_tiles_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, A: tl.constexpr, B: tl.constexpr,
                         C: tl.constexpr, VEC: tl.constexpr, FREE_EXPS: tl.constexpr):
    """The tiles plan: program r holds row r whole, its 16-byte body (cut as softmax_persistent_kernel's, VEC
    elements an access) in tiles of A, B and C columns and its edges in one of 2 x VEC: one read, one write.
    One row a program, no loop: the same kernel taking rows in turn (for row in tl.range(...)) read slower on
    the H100, a program a row or not (float32 72.7% of copy against 75.2%, bfloat16 59.4% against
    63.6%), and its persistent form with the next row pipelined into shared memory slower still (67.6%, 56.6%)."""
    y_row, n_body, x_body, y_body, e_col, e_mask, x_edge = _row_cut(x_ptr, y_ptr, tl.program_id(0), n_cols,
                                                                     x_row_stride, y_row_stride, VEC)
    xa = _tile_load(x_body, 0, n_body, A)
    xb = _tile_load(x_body, A, n_body, B)
    xc = _tile_load(x_body, A + B, n_body, C)
    row_max = tl.maximum(tl.maximum(tl.max(xa, axis=0), tl.max(xb, axis=0)),
                         tl.maximum(tl.max(xc, axis=0), tl.max(x_edge, axis=0)))
    shift = tl.where(row_max == -float("inf"), 0.0, row_max)  # a row all -inf: exps of 0, no -inf - -inf
    ea, eb, ec = _exp(FREE_EXPS, xa - shift), _exp(FREE_EXPS, xb - shift), _exp(FREE_EXPS, xc - shift)
    ee = _exp(FREE_EXPS, x_edge - shift)
    inv = 1.0 / (tl.sum(ea, axis=0) + tl.sum(eb, axis=0) + tl.sum(ec, axis=0) + tl.sum(ee, axis=0))
    tl.store(y_row + e_col, (ee * inv).to(y_ptr.dtype.element_ty), mask=e_mask)
    _tile_store(y_body, 0, n_body, ea, inv, A)
    _tile_store(y_body, A, n_body, eb, inv, B)
    _tile_store(y_body, A + B, n_body, ec, inv, C)


def cut_vec(x: torch.Tensor, y: torch.Tensor) -> int:
    """The elements of 16 bytes where x and y start 16-byte aligned with one row stride (every row of both then
    cut at the same column, softmax_persistent_kernel's and softmax_tiles_kernel's VEC), else 1."""
    same_cut = x.stride(0) == y.stride(0) and x.data_ptr() % 16 == 0 and y.data_ptr() % 16 == 0
    return 16 // x.element_size() if same_cut else 1


def persist_vec(plan: SoftmaxPlan, x: torch.Tensor, y: torch.Tensor) -> int:
    """The persist kernel's VEC: cut_vec's, or 1 where the plan asks for the per-element form or its chunk's
    tiles do not divide into vectors."""
    vec = cut_vec(x, y) if plan.vectorize else 1
    return vec if plan.block % (plan.group * vec) == 0 else 1


def softmax_planned(x: torch.Tensor, y: torch.Tensor, plan: SoftmaxPlan, free_exps: bool = False) -> torch.Tensor:
    """Run ``plan`` on a 2-D ``x`` into ``y`` (same shape, contiguous rows). ``free_exps``: the wide-row kernels
    with every exp an identity (scripts/gpu/floors.py's floors: their bytes and reductions, no softmax)."""
    rows, cols = x.shape
    if plan.strategy == "pipe":
        return _softmax_piped(x, y, plan, free_exps)
    if plan.strategy == "persist":
        keep, last_use = _l2_hints(plan)
        softmax_persistent_kernel[(plan.grid(rows),)](x, y, rows, cols, x.stride(0), y.stride(0), CHUNK=plan.block,
                                                      GROUP=plan.group, VEC=persist_vec(plan, x, y),
                                                      STAGES=plan.stages, KEEP=keep, LAST_USE=last_use,
                                                      FREE_EXPS=free_exps, num_warps=plan.num_warps)
        return y
    if plan.strategy == "tiles":
        softmax_tiles_kernel[(plan.grid(rows),)](x, y, cols, x.stride(0), y.stride(0), *plan.tiles,
                                                 VEC=cut_vec(x, y), FREE_EXPS=free_exps, num_warps=plan.num_warps)
        return y
    if plan.strategy != "split":
        grid = (plan.grid(rows),)
        softmax_rows_tuned_kernel[grid](x, y, rows, cols, x.stride(0), y.stride(0), ROWS=plan.rows_per_program,
                                        BLOCK=plan.block, num_warps=plan.num_warps)
        return y
    # One (max, sum) pair per chunk of the group's rows, reused by every group:
    # the stream runs group g's pass 2 before group g + 1's pass 1 overwrites it.
    chunk_max, chunk_sum = torch.empty((2, plan.group_rows * plan.chunks), device=x.device, dtype=torch.float32)
    keep, last_use = _l2_hints(plan)
    for row0 in range(0, rows, plan.group_rows):
        group_rows = min(plan.group_rows, rows - row0)
        grid = (plan.grid(group_rows),)
        softmax_chunk_stats_kernel[grid](x, chunk_max, chunk_sum, row0, cols, x.stride(0), plan.chunks,
                                         CHUNK=plan.block, KEEP=keep, FREE_EXPS=free_exps,
                                         num_warps=plan.num_warps)
        softmax_chunk_write_kernel[grid](x, y, chunk_max, chunk_sum, row0, group_rows, cols, x.stride(0),
                                         y.stride(0), plan.chunks, CHUNK=plan.block,
                                         CHUNKS_BLOCK=next_power_of_2(plan.chunks), LAST_USE=last_use,
                                         FREE_EXPS=free_exps, num_warps=plan.num_warps)
    return y


def softmax_launch(rows: int, cols: int, itemsize: int, facts: DeviceFacts | None) -> SoftmaxPlan:
    """softmax_plan on the GPU of ``facts`` (its SMs and L2): what a call launches there, and what `kernelscope
    plan` shows; None: the interpreter's stand-ins (INTERPRETER_SMS, no L2 to fit)."""
    if facts is None:
        return softmax_plan(rows, cols, itemsize, INTERPRETER_SMS, l2_bytes=0)
    return softmax_plan(rows, cols, itemsize, facts.sm_count, l2_bytes=facts.l2_bytes)


@cache
def default_plan(rows: int, cols: int, itemsize: int, device: torch.device) -> SoftmaxPlan:
    return softmax_launch(rows, cols, itemsize, gpu_facts(device))


def softmax_tuned(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Row softmax with the launch shape ``softmax_plan`` picks for this width."""
    y = torch.empty_like(x) if out is None else out
    rows, cols = x.shape
    return softmax_planned(x, y, default_plan(rows, cols, x.element_size(), x.device))


def softmax_plan_of(shape: tuple[int, int], dtype: str, facts: DeviceFacts):
    """softmax-triton-tuned's launches at ``shape`` on the GPU of ``facts`` (`kernelscope plan`): softmax_launch's
    plan, with the grids softmax_planned launches (SoftmaxPlan.grid)."""
    from kernelscope.ops import itemsize
    from kernelscope.plan import Launch, LaunchPlan

    rows, cols = shape
    plan = softmax_launch(rows, cols, itemsize(dtype), facts)
    src, threads = "src/kernelscope/backends/triton/softmax.py", plan.num_warps * 32
    fields = {"num_warps": plan.num_warps}
    if plan.strategy in ("row", "narrow"):
        launches = (Launch("softmax_rows_tuned_kernel", src, (plan.grid(rows),), threads,
                           note=f"{plan.rows_per_program} row{'s' if plan.rows_per_program > 1 else ''} a program"),)
        fields.update({"BLOCK (columns a row loads)": plan.block, "rows a program": plan.rows_per_program,
                       "elements a thread": plan.rows_per_program * plan.block // threads, "persistent": False})
    elif plan.strategy == "tiles":
        launches = (Launch("softmax_tiles_kernel", src, (plan.grid(rows),), threads, note="a program a row"),)
        fields.update({"tiles": tuple(t for t in plan.tiles if t > 1), "slots a row": plan.block,
                       "persistent": False})
    elif plan.strategy == "persist":
        launches = (Launch("softmax_persistent_kernel", src, (plan.grid(rows),), threads,
                           note=f"{plan.grid(rows) / facts.sm_count:g} programs an SM taking the rows in turn"),)
        fields.update({"CHUNK (columns a step)": plan.block, "stages": plan.stages, "GROUP": plan.group,
                       "16-byte cut": plan.vectorize, "L2 hints": plan.l2_hints, "persistent": True})
    else:  # split, pipe: the rows in groups, a program a chunk of a row
        groups = triton.cdiv(rows, plan.group_rows)
        last = rows - (groups - 1) * plan.group_rows
        rest = f"; the last group's {last} rows x {plan.chunks}" if last != plan.group_rows else ""
        if plan.strategy == "split":
            note = f"a group of {plan.group_rows} rows x {plan.chunks} chunks{rest}"
            launches = tuple(Launch(name, src, (plan.grid(plan.group_rows),), threads, count=groups, note=note)
                             for name in ("softmax_chunk_stats_kernel", "softmax_chunk_write_kernel"))
        else:
            launches = (Launch("softmax_pipe_kernel", src, (plan.grid(2 * plan.group_rows),), threads,
                               count=groups + 1, note=f"at most two groups of {plan.group_rows} rows x "
                                                      f"{plan.chunks} chunks, one group's first and last"),)
        fields.update({"CHUNK (columns a program)": plan.block, "chunks a row": plan.chunks,
                       "rows a group": plan.group_rows, "L2 hints": plan.l2_hints, "persistent": False})
    return LaunchPlan(plan.strategy, launches, fields)
