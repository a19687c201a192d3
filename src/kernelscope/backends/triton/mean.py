"""Triton mean kernels: the lecture's element-by-element loop, and a tuned one-launch reduction."""

from functools import cache

import torch
import triton
import triton.language as tl

from kernelscope.backends.device import DeviceFacts
from kernelscope.backends.triton import cdiv, direct, gpu_facts, wide_index

LECTURE_CHUNK = 256  # elements summed by one program, one at a time


@triton.jit
def mean_lecture_kernel(x_ptr, partial_ptr, n, CHUNK: tl.constexpr):
    # One scalar load per loop iteration: correct, but no vector loads and no
    # parallelism inside a program. Kept as the lecture wrote it.
    start = tl.program_id(0) * CHUNK
    acc = 0.0
    for i in range(0, CHUNK):
        idx = start + i
        acc += tl.load(x_ptr + idx, mask=idx < n, other=0.0).to(tl.float32)
    tl.store(partial_ptr + tl.program_id(0), acc)


def mean_lecture(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    n = x.numel()
    grid = triton.cdiv(n, LECTURE_CHUNK)
    partials = torch.empty(grid, device=x.device, dtype=torch.float32)
    mean_lecture_kernel[(grid,)](x, partials, n, CHUNK=LECTURE_CHUNK)
    result = partials.sum() / n  # the lecture lets torch finish the reduction
    if out is None:
        return result.to(x.dtype)
    return out.copy_(result)


TUNED_BLOCK = 4096  # elements per program per loop step: 8 per thread with 16 warps
TUNED_WARPS = 16  # H100, 2^24: 26.70 us at 16 warps, 27.14 at 8 (same BLOCK and grid)
PROGRAMS_PER_SM = 4  # the grid: at most this many programs per SM, each looping over its share
TUNED_STAGES = None  # None: Triton's default num_stages
EVICT = "evict_first"  # x is read once: keep it out of L2's way (H100, 2^24: 25.8 us against 26.7 without)
CONTIGUOUS = False  # True: each program reads one contiguous span (inductor's split reduction), not grid-stride
FINISH_BLOCK = 1024  # partials the last program adds per step (a loop: any grid, one compiled kernel)


@triton.jit
def mean_one_pass_kernel(x_ptr, partial_ptr, arrived_ptr, out_ptr, n, steps, BLOCK: tl.constexpr,
                         FINISH_BLOCK: tl.constexpr, EVICT: tl.constexpr, CONTIGUOUS: tl.constexpr,
                         ONE_PROGRAM: tl.constexpr = False, WIDE: tl.constexpr = False):
    """The whole mean in one launch: partial sums, and the last program to finish adds them up.

    Reads every element of x once (grid-stride, BLOCK-wide vector loads into
    float32 running sums); each program writes one partial and bumps the
    ``arrived`` counter. The program that finds every other one already
    counted reads the partials back (a few KB from L2), writes the mean and
    resets the counter for the next call. CONTIGUOUS: program p reads the
    ``steps`` blocks from p * steps * BLOCK on (one span, as inductor's split
    reduction), instead of every programs-th block. No program ever waits for another,
    so it cannot deadlock, under the interpreter (programs one after another)
    or on a GPU too full to run them all at once. ONE_PROGRAM (a grid of one, a small input): its sum is
    the total, written at once, without the partial, the counter and the read-back. WIDE: offsets in 64 bits,
    for inputs past 2^31 elements (wide_index).
    """
    pid = tl.program_id(0)
    if WIDE:
        pid = pid.to(tl.int64)
    programs = tl.num_programs(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    if CONTIGUOUS:
        base = pid * steps * BLOCK
        for i in range(0, steps):
            offsets = base + i * BLOCK + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0, eviction_policy=EVICT).to(tl.float32)
    else:
        for start in range(pid * BLOCK, n, programs * BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0, eviction_policy=EVICT).to(tl.float32)
    if ONE_PROGRAM:
        tl.store(out_ptr, (tl.sum(acc, axis=0) / n).to(out_ptr.dtype.element_ty))
        return
    tl.store(partial_ptr + pid, tl.sum(acc, axis=0))
    # The barrier orders every thread's part of the work before the counter;
    # acq_rel makes the partial visible to whoever reads the count after us,
    # and (acquire) shows the last program every partial counted before it.
    tl.debug_barrier()
    arrived = tl.atomic_add(arrived_ptr, 1, sem="acq_rel")
    if arrived == programs - 1:
        total = tl.zeros([FINISH_BLOCK], dtype=tl.float32)
        for first in range(0, programs, FINISH_BLOCK):  # not `start`: the 64-bit form's loop above has that int64
            offsets = first + tl.arange(0, FINISH_BLOCK)
            # .cg: read from L2, where the other SMs' partials are, never a stale L1 line.
            total += tl.load(partial_ptr + offsets, mask=offsets < programs, other=0.0, cache_modifier=".cg")
        tl.store(out_ptr, (tl.sum(total, axis=0) / n).to(out_ptr.dtype.element_ty))
        tl.atomic_xchg(arrived_ptr, 0)  # ready for the next call (the next launch starts after this one ends)


@cache
def arrival_counter(device: torch.device) -> torch.Tensor:
    """One int32 per device, zero between calls: allocated once, so calls (and graph replays) allocate nothing.

    Shared by every call on the device: two calls on two streams at once would
    mix their counts (the suite, like a training step, runs one stream).
    """
    return torch.zeros(1, device=device, dtype=torch.int32)


INTERPRETER_PROGRAMS = 2  # the interpreter: few programs, so the grid-stride loop really loops


def mean_programs(n: int, block: int, max_programs: int) -> int:
    """Programs for n elements: at most max_programs, each making the same number of loop steps.

    2^24 elements in 4096-wide steps on 528 programs would leave some with 8
    steps and some with 7; 512 programs of exactly 8 steps finish together.
    """
    steps = cdiv(n, block * max_programs)
    return cdiv(n, block * steps)


def mean_launch(n: int, facts: DeviceFacts | None, block: int = TUNED_BLOCK,
                programs_per_sm: int = PROGRAMS_PER_SM) -> tuple[int, int]:
    """(programs, loop steps a program) of mean_one_pass for n elements on the GPU of ``facts`` (its SMs): at most
    programs_per_sm programs an SM (None: the interpreter's INTERPRETER_PROGRAMS), each making the same number of
    steps, programs x steps x block covering n."""
    max_programs = INTERPRETER_PROGRAMS if facts is None else programs_per_sm * facts.sm_count
    programs = mean_programs(n, block, max_programs)
    return programs, cdiv(n, block * programs)


def mean_one_pass(x: torch.Tensor, out: torch.Tensor | None = None, block: int = TUNED_BLOCK,
                  programs_per_sm: int = PROGRAMS_PER_SM, num_warps: int = TUNED_WARPS,
                  num_stages: int | None = TUNED_STAGES, evict: str = EVICT,
                  contiguous: bool = CONTIGUOUS) -> torch.Tensor:
    """mean(x) in one launch, with the launch shape as parameters (the tuning script sweeps them)."""
    n = x.numel()
    programs, steps = mean_launch(n, gpu_facts(x.device), block, programs_per_sm)
    return _launch(x, out, programs, steps, _keywords(n, programs, block, num_warps, num_stages, evict, contiguous))


def _keywords(n: int, programs: int, block: int, num_warps: int, num_stages: int | None, evict: str,
              contiguous: bool) -> dict:
    """mean_one_pass_kernel's constexprs and launch options for n elements over ``programs`` programs."""
    stages = {} if num_stages is None else {"num_stages": num_stages}
    return dict(BLOCK=block, FINISH_BLOCK=FINISH_BLOCK, EVICT=evict, CONTIGUOUS=contiguous, ONE_PROGRAM=programs == 1,
                WIDE=wide_index(n), num_warps=num_warps, **stages)


def _launch(x: torch.Tensor, out: torch.Tensor | None, programs: int, steps: int, keywords: dict) -> torch.Tensor:
    """The one launch, through the compiled kernel after the first call (direct.py): the same kernel, a cheaper
    call."""
    y = torch.empty((), device=x.device, dtype=x.dtype) if out is None else out
    direct.launch(mean_one_pass_kernel, (programs,), *_arguments(x, y, programs, steps), **keywords)
    return y


def _arguments(x: torch.Tensor, y: torch.Tensor, programs: int, steps: int) -> tuple:
    """mean_one_pass_kernel's arguments: the partials and arrival counter are the device's own, allocated once (so
    calls and graph replays allocate nothing)."""
    return (x, partials(programs, x.device), arrival_counter(x.device), y, x.numel(), steps)


@cache
def partials(programs: int, device: torch.device) -> torch.Tensor:
    """A float32 partial sum a program, one buffer per grid size and device, shared like the arrival counter; a
    grid of one program writes none, and gets one element."""
    return torch.empty(programs, device=device, dtype=torch.float32)


@cache
def _tuned_launch(n: int, device: torch.device) -> tuple[int, int, dict]:
    """mean_tuned's programs, loop steps and launch keywords for n elements on ``device``: mean_one_pass's
    defaults, worked out once (a call then spends its host time on the launch alone)."""
    programs, steps = mean_launch(n, gpu_facts(device))
    return programs, steps, _keywords(n, programs, TUNED_BLOCK, TUNED_WARPS, TUNED_STAGES, EVICT, CONTIGUOUS)


_FIXED = direct.fixed_table()  # direct.flat_key -> mean_tuned's launch, fixed


def mean_tuned(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """mean_one_pass with its defaults, the launch worked out once per size and device, and kept fixed per size,
    dtype, device and alignment (direct.fixed): a later call of those passes x and y straight to the launcher."""
    y = torch.empty((), device=x.device, dtype=x.dtype) if out is None else out
    key = direct.flat_key(x, y)
    kept = _FIXED.get(key)
    fits = out is None or (out.dtype == x.dtype and out.device == x.device)
    if kept is not None and fits and kept(x, y):
        return y
    programs, steps, keywords = _tuned_launch(x.numel(), x.device)
    arguments = _arguments(x, y, programs, steps)
    direct.launch(mean_one_pass_kernel, (programs,), *arguments, **keywords)
    fixed = direct.fixed(mean_one_pass_kernel, (programs,), *arguments, vary=(0, 3), **keywords) if fits else None
    if fixed is not None:
        _FIXED[key] = fixed
    return y


def mean_plan_of(shape: tuple[int, ...], dtype: str, facts: DeviceFacts):
    """mean-triton-tuned's launch at ``shape`` on the GPU of ``facts`` (`kernelscope plan`): mean_launch's grid,
    mean_one_pass's defaults."""
    from kernelscope.backends.launches import Launch, LaunchPlan

    n = 1
    for s in shape:
        n *= s
    programs, steps = mean_launch(n, facts)
    note = ("one program: its sum is the mean" if programs == 1 else
            f"at most {PROGRAMS_PER_SM} programs an SM; the last program to arrive adds the partials")
    launch = Launch("mean_one_pass_kernel", "src/kernelscope/backends/triton/mean.py", (programs,), TUNED_WARPS * 32,
                    note=note)
    return LaunchPlan(None, (launch,), {"num_warps": TUNED_WARPS, "BLOCK (elements a step)": TUNED_BLOCK,
                                        "steps a program": steps, "EVICT": EVICT, "CONTIGUOUS": CONTIGUOUS,
                                        "grid-stride loop": not CONTIGUOUS})
