"""The row plan's kernel: a block a row, the row cached in dynamic shared memory.

Pass 1 reads the row from DRAM into shared memory, keeping each thread's max; a block max; pass 2 replaces each
element by exp(x - max) in shared memory and sums; a block sum; pass 3 writes e / sum. DRAM sees the row read
once and written once. Each thread touches only its own columns (j = t, t + threads, ...), so the passes need no
barrier between them beyond those inside the reductions. With ``recompute`` pass 2 only sums exp(x - max),
leaving the row in shared memory, and pass 3 computes exp(x - max) / sum again: one exp more an element, one
shared-memory store pass less. With ``online`` pass 1 also keeps each thread's running max and sum of exp(x - max)
(split.py's online_step), so the exps are computed while the loads are in flight, and the only pass left after
the reductions writes exp(x - max) / sum from shared memory: no pass of the block's runs only from shared memory,
as the others' pass 2 does while the SM's DRAM traffic waits on it.
"""

import warnings
from functools import cache

import numpy as np
from numba import cuda, float32

from kernelscope.backends.numba.common import NEG_INF, ZERO, block_max, block_sum, jit_bounded

from .exps import exp_of
from .gpu import device_limits
from .split import online_step

ONE = np.float32(1.0)


@cache
def softmax_row_kernel(threads: int, unroll: int, recompute: bool, online: bool = False, fast_exp: bool = False):
    """The "row" plan's kernel for one block size (each compiles once); ``fast_exp``: exps.py's fast exp."""
    exp = exp_of(fast_exp)
    online_update = online_step(fast_exp)

    @jit_bounded(threads)
    def softmax_row(x, y, cols):
        row = cuda.shared.array(0, float32)  # dynamic: cols floats
        scratch = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        base = cuda.blockIdx.x * cols
        v = cuda.local.array(unroll, float32)  # registers: unroll is a compile-time constant
        # Pass 1: DRAM -> shared memory, `unroll` loads in flight a thread.
        m = NEG_INF
        s = ZERO  # online: the sum of exp(x - m) so far
        j = t
        while j + (unroll - 1) * threads < cols:
            for u in range(unroll):
                v[u] = x[base + j + u * threads]
            for u in range(unroll):
                row[j + u * threads] = v[u]
                if online:  # compile-time constant
                    m, s = online_update(m, s, v[u])
                else:
                    m = max(m, v[u])
            j += unroll * threads
        while j < cols:
            e = x[base + j]
            row[j] = e
            if online:
                m, s = online_update(m, s, e)
            else:
                m = max(m, e)
            j += threads
        row_max = block_max(m, scratch)
        if online:
            # Each thread's sum rescaled to the row's max (a thread that saw only -inf adds 0), then the one pass
            # left: the exponentials again, scaled, shared memory -> DRAM.
            s = s * exp(m - row_max) if m > NEG_INF else ZERO
            inv = ONE / block_sum(s, scratch)
            for j in range(t, cols, threads):
                y[base + j] = exp(row[j] - row_max) * inv
        elif recompute:  # compile-time constant: one branch is compiled
            # Pass 2: the sum of the exponentials; the row stays as it is.
            for j in range(t, cols, threads):
                s += exp(row[j] - row_max)
            inv = ONE / block_sum(s, scratch)
            # Pass 3: the exponentials again, scaled, shared memory -> DRAM.
            for j in range(t, cols, threads):
                y[base + j] = exp(row[j] - row_max) * inv
        else:
            # Pass 2: exponentials in place, and their sum.
            for j in range(t, cols, threads):
                e = exp(row[j] - row_max)
                row[j] = e
                s += e
            inv = ONE / block_sum(s, scratch)
            # Pass 3: shared memory -> DRAM.
            for j in range(t, cols, threads):
                y[base + j] = row[j] * inv

    return softmax_row


_OPTED_IN: dict[int, bool] = {}


def allow_large_shared(kernel, args, nbytes: int) -> bool:
    """Let ``kernel`` (compiled for ``args``) take ``nbytes`` of dynamic shared memory; False if it cannot.

    Over 48 KiB a kernel must opt in (cuFuncSetAttribute), which Numba's launch
    does not do (nor direct.py's). Done once a kernel, to the device's maximum, through Numba's
    driver wrapper; if this Numba lacks it, the caller falls back to the split plan. ``args``: the
    arguments as Numba takes them, or a function that gives them, called only for the opt-in (a
    later call then wraps no tensor for Numba).
    """
    if nbytes <= 48 * 1024:
        return True
    key = id(kernel)
    if key not in _OPTED_IN:
        try:
            from numba import typeof
            from numba.cuda.cudadrv.driver import binding, driver

            args = args() if callable(args) else args
            cufunc = kernel.compile(tuple(typeof(a) for a in args))._codelibrary.get_cufunc()
            attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            limit = device_limits(cufunc.device.id)[0]
            driver.cuKernelSetAttribute(attr, limit, cufunc.handle, cufunc.device.id)
            try:  # the L1/shared split: this kernel wants all of it as shared memory
                cufunc.set_shared_memory_carveout(100)
            except Exception:  # a hint only
                pass
            _OPTED_IN[key] = True
        except Exception as exc:
            _OPTED_IN[key] = False
            warnings.warn(f"softmax-numba: no opt-in to more than 48 KiB of shared memory ({exc!r}); "
                          "rows over 12,288 columns take the split plan", RuntimeWarning, stacklevel=3)
    return _OPTED_IN[key]
