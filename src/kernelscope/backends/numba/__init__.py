"""Numba CUDA kernels.

On a GPU, kernels take torch CUDA tensors through ``__cuda_array_interface__``
(no copy) and launch on torch's current stream, so CUDA events and graph
capture see them. Under the CUDA simulator they take ``tensor.numpy()`` views,
since CPU tensors have no ``__cuda_array_interface__``.
"""

import os

import numpy as np

# numba-cuda 0.30.4 registers an overload for np.row_stack at import, which
# numpy 2.5 removed (it was an alias of np.vstack): restore the alias first.
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack

# Don't synchronize on the exporting stream each time a torch tensor is wrapped:
# we launch on that same stream, and a sync would break CUDA graph capture.
os.environ.setdefault("NUMBA_CUDA_ARRAY_INTERFACE_SYNC", "0")
# The check shapes are deliberately tiny; a grid of 1 block is not a mistake there.
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

from numba import cuda  # noqa: E402


def as_array(t):
    """A Numba view of a torch tensor, without a copy."""
    if t.is_cuda:
        return cuda.as_cuda_array(t, sync=False)
    return t.numpy()


def stream():
    """Torch's current stream, as a Numba stream (0: the simulator's default)."""
    import torch

    from kernelscope.backends import numba_simulated, streams

    if numba_simulated() or not torch.cuda.is_available():
        return 0
    handle = streams.current_stream_handle()
    wrapped = _STREAMS.get(handle)
    if wrapped is None:
        wrapped = _STREAMS[handle] = cuda.external_stream(handle)
    return wrapped


_STREAMS: dict = {}
