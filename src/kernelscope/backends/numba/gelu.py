"""Numba CUDA gelu, tanh approximation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).

elementwise.py's map of ``gelu_f32``, as ``square_flat`` maps its square: tiled
(the default; one contiguous tile of threads * unroll elements a block, one
lap) or grid-stride. It moves 8 bytes an element: x read once, y written once;
the arithmetic (libdevice's tanhf is a few dozen instructions) stays under
what the SMs issue while DRAM delivers an element.

All arithmetic is float32: the constants are np.float32, so Numba does not
promote the expression to float64, and math.tanh of a float32 calls
libdevice's tanhf. No fastmath: its tanh.approx.f32 is off by up to about
5e-4 relative, far over the float32 tolerance of 1e-5.
"""

import math

import numpy as np
import torch
from numba import cuda

from kernelscope.backends.numba import elementwise

SQRT_2_OVER_PI = np.float32(0.7978845608028654)
CUBIC = np.float32(0.044715)
HALF = np.float32(0.5)
ONE = np.float32(1.0)

# Launch defaults, as for square_flat; scripts/gpu/tune_numba.py sweeps them.
THREADS = 256
BLOCKS_PER_SM = 8
UNROLL = 4
TILED = True


@cuda.jit(device=True)
def gelu_f32(x):
    inner = SQRT_2_OVER_PI * (x + CUBIC * x * x * x)
    return HALF * x * (ONE + math.tanh(inner))


def launch_gelu(x: torch.Tensor, out: torch.Tensor | None = None, threads: int | None = None,
                blocks_per_sm: int | None = None, unroll: int | None = None,
                tiled: bool | None = None) -> torch.Tensor:
    """gelu with an explicit launch shape and mode (None: the module defaults)."""
    defaults = elementwise.Defaults(THREADS, BLOCKS_PER_SM, UNROLL, TILED)
    return elementwise.launch(gelu_f32, "gelu", defaults, x, out, threads, blocks_per_sm, unroll, tiled)


def gelu(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    return launch_gelu(x, out)
