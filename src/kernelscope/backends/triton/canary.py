"""Canary kernels: a variant's kernel made to do a fraction more work, for the regression gate.

``KERNELSCOPE_INJECT_SLOWDOWN=square-triton-flat1024:0.1`` (see
``kernelscope.slowdown``) swaps the variant's kernel for its canary here: the
same body on ceil(blocks * 1.1) programs, where program ``p`` does block
``p % blocks``. The extra programs load and store the first blocks again, the
same values to the same places, so the answer is the one the plain kernel gives
and the correctness gate still passes. The slowdown is in the one launch, so at
a launch-bound size it costs about what the extra programs cost, not a second
launch.
"""

from fractions import Fraction

import torch
import triton
import triton.language as tl

from kernelscope.backends.triton.square import FLAT_BLOCK_SIZE


@triton.jit
def square_flat_canary_kernel(x_ptr, y_ptr, n, n_blocks, BLOCK_SIZE: tl.constexpr):
    # square_flat_kernel, but the programs past the last block redo the first ones.
    block = tl.program_id(0) % n_blocks
    offsets = block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    tl.store(y_ptr + offsets, (x * x).to(y_ptr.dtype.element_ty), mask=mask)


def programs(blocks: int, fraction) -> int:
    """ceil(blocks * (1 + fraction)), exactly: 0.1 is a tenth, not the float just above it."""
    extra = Fraction(str(fraction)) * blocks
    return blocks + -(-extra.numerator // extra.denominator)


def square_flat(x: torch.Tensor, out: torch.Tensor | None = None, fraction=Fraction(1, 10),
                block_size: int = FLAT_BLOCK_SIZE) -> torch.Tensor:
    """square.square_flat doing ``fraction`` more of its blocks."""
    y = torch.empty_like(x) if out is None else out
    n = x.numel()
    blocks = triton.cdiv(n, block_size)
    if blocks:
        square_flat_canary_kernel[(programs(blocks, fraction),)](x, y, n, blocks, BLOCK_SIZE=block_size)
    return y
