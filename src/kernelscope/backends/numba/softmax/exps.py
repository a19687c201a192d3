"""The two exps softmax-numba's kernels take: math.exp's accurate expf, or libdevice's fast one.

The fast exp: libdevice's __nv_fast_expf (ex2.approx, as softmax-cuda's __expf; about 2 ulp, far inside the
float32 tolerance) in place of math.exp's accurate expf, a few dozen instructions an element. The simulator has
no libdevice (its fast_expf returns NaN): math.exp there.
"""

import math

from numba import cuda
from numba.cuda import libdevice

from kernelscope.backends.numba.common import SIMULATED


@cuda.jit(device=True)
def exp_accurate(x):
    return math.exp(x)


if SIMULATED:
    exp_fast = exp_accurate
else:
    @cuda.jit(device=True)
    def exp_fast(x):
        return libdevice.fast_expf(x)


def exp_of(fast: bool):
    """The device function a kernel built with ``fast_exp=fast`` closes over."""
    return exp_fast if fast else exp_accurate
