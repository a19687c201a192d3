"""Triton mean kernels: the lecture's element-by-element loop, and a tuned reduction."""

from functools import cache

import torch
import triton
import triton.language as tl

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


TUNED_BLOCK = 4096  # elements per program per iteration: 16 per thread with 8 warps


@triton.jit
def partial_sums_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    # Grid-stride loop: a fixed number of programs walks the whole array with
    # wide vector loads, each keeping BLOCK running float32 sums.
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(pid * BLOCK, n, step):
        offsets = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offsets, mask=offsets < n, other=0.0).to(tl.float32)
    tl.store(partial_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def finish_mean_kernel(partial_ptr, out_ptr, n_partials, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    partials = tl.load(partial_ptr + offsets, mask=offsets < n_partials, other=0.0)
    tl.store(out_ptr, (tl.sum(partials, axis=0) / n).to(out_ptr.dtype.element_ty))


@cache
def _max_programs(device: torch.device) -> int:
    if device.type != "cuda":
        return 2  # the interpreter: few programs, so the grid-stride loop really loops
    return 4 * torch.cuda.get_device_properties(device).multi_processor_count


def mean_tuned(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    n = x.numel()
    programs = min(triton.cdiv(n, TUNED_BLOCK), _max_programs(x.device))
    partials = torch.empty(programs, device=x.device, dtype=torch.float32)
    y = torch.empty((), device=x.device, dtype=x.dtype) if out is None else out
    partial_sums_kernel[(programs,)](x, partials, n, BLOCK=TUNED_BLOCK, num_warps=8)
    finish_mean_kernel[(1,)](partials, y, programs, n, BLOCK=triton.next_power_of_2(programs))
    return y
