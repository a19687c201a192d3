"""Numba CUDA gelu, tanh approximation: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).

elementwise.py's map of ``gelu_f32``, as ``square_flat`` maps its square: tiled
(the default; one contiguous tile of threads * unroll elements a block, one
lap) or grid-stride. ``gelu`` (gelu-numba) launches its kernel through the
driver after its first call (direct.py, as square-numba-direct does): the same
kernel and grid, a call of a few microseconds of Python where Numba's
dispatcher costs the host a hundred or more; ``launch_gelu`` (the tuning
script's) goes through Numba's dispatcher unless asked. It moves 8 bytes an element: x read once, y written once;
the arithmetic has to stay under what the SMs issue while DRAM delivers an
element, which on the H200 libdevice's tanhf (a few dozen instructions) did
not: the default form is x / (1 + exp(-2u)) through libdevice's fast exp and
divide (``gelu_fast_f32``, gelu-cuda-vec4's form); ``fast=False`` keeps tanhf.

All arithmetic is float32: the constants are np.float32, so Numba does not
promote the expression to float64, and math.tanh of a float32 calls
libdevice's tanhf. No fastmath: its tanh.approx.f32 is off by up to about
5e-4 relative, far over the float32 tolerance of 1e-5; the fast exp (ex2.approx)
errs by about 2 ulp, and the form passes the check with the stress inputs.
"""

import math

import numpy as np
import torch
from numba import cuda

from kernelscope.backends.numba import elementwise
from kernelscope.backends.numba.common import SIMULATED

SQRT_2_OVER_PI = np.float32(0.7978845608028654)
CUBIC = np.float32(0.044715)
HALF = np.float32(0.5)
ONE = np.float32(1.0)
MINUS_TWO = np.float32(-2.0)
EXP_CAP = np.float32(88.0)

# Launch defaults, as for square_flat; scripts/gpu/tune_numba.py sweeps them.
THREADS = 256
BLOCKS_PER_SM = 8
UNROLL = 4
TILED = True
# gelu as x / (1 + exp(-2u)) with libdevice's fast exp and divide (gelu_fast_f32, softmax-cuda's and gelu-cuda-vec4's
# form) in place of tanhf. The H200 (tune_numba --quick, 16384x16384 float32, % of its copy): 98.6% against
# tanhf's 93.3% (square-numba-flat 99.9%); on the H100 tanhf already reads 100.4% in the suite.
FAST = True


@cuda.jit(device=True)
def gelu_f32(x):
    inner = SQRT_2_OVER_PI * (x + CUBIC * x * x * x)
    return HALF * x * (ONE + math.tanh(inner))


if SIMULATED:  # the simulator has no libdevice (its fast_expf returns NaN): the same formula through math, whose
    # exp raises past float32's range where the GPU's gives inf: capped at exp(88), x / 1.7e38 is 0 to float32's eye
    @cuda.jit(device=True)
    def gelu_fast_f32(x):
        inner = SQRT_2_OVER_PI * (x + CUBIC * x * x * x)
        return x / (ONE + math.exp(min(MINUS_TWO * inner, EXP_CAP)))
else:
    from numba.cuda import libdevice

    @cuda.jit(device=True)
    def gelu_fast_f32(x):
        # 0.5 x (1 + tanh(u)) = x sigmoid(2u) = x / (1 + exp(-2u)); far out, exp(-2u) is 0 or inf and the
        # quotient x or 0, as it should be
        inner = SQRT_2_OVER_PI * (x + CUBIC * x * x * x)
        return libdevice.fast_fdividef(x, ONE + libdevice.fast_expf(MINUS_TWO * inner))


def launch_gelu(x: torch.Tensor, out: torch.Tensor | None = None, threads: int | None = None,
                blocks_per_sm: int | None = None, unroll: int | None = None,
                tiled: bool | None = None, fast: bool | None = None, direct: bool = False) -> torch.Tensor:
    """gelu with an explicit launch shape, mode and form (None: the module defaults); ``direct``: launched
    through the driver after the first call, as ``gelu`` is."""
    f, name = _form(fast)
    return elementwise.launch(f, name, _defaults(), x, out, threads, blocks_per_sm, unroll, tiled, direct)


def _defaults() -> elementwise.Defaults:
    return elementwise.Defaults(THREADS, BLOCKS_PER_SM, UNROLL, TILED)


def _form(fast: bool | None):
    """(the elementwise function, the kernels' name) of the fast form or of tanhf's (None: FAST)."""
    return (gelu_fast_f32, "gelu_fast") if (FAST if fast is None else fast) else (gelu_f32, "gelu")


# The default form and launch shape, worked out on the first call and kept (elementwise.direct_map).
_gelu_direct = elementwise.direct_map(*_form(None), _defaults())


def gelu(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """launch_gelu's default kernel and grid, launched through the driver after its first call: a cheaper call."""
    return _gelu_direct(x, out)


def gelu_plan_of(shape: tuple[int, ...], dtype: str, facts):
    """gelu-numba's launch at ``shape`` on the GPU of ``facts`` (`kernelscope plan`): the default form's map,
    through the driver after the first call."""
    return elementwise.map_plan_of(_form(None)[1], _defaults(), shape, facts)
