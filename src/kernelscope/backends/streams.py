"""The current CUDA stream's handle, as cheaply as Triton's launcher reads it.

``torch.cuda.current_stream()`` builds a ``torch.cuda.Stream`` object on every
call (a device-index lookup, a tuple from C++, ``Stream.__new__``). On the
H100 that was about a third of a direct launch's host time under
the profiler (``results-proofs/host-cost/launch_path_probe.py``: 31.9 of 90.3 us for
square-triton-direct at 64x64), more than the launch itself. Triton reads the
handle with ``torch._C._cuda_getCurrentRawStream(device)``, an integer
straight from the C++ side; the launch paths that choose their own stream do
the same here.
"""

from __future__ import annotations

import torch

# absent from a torch built without CUDA (the CPU path), where nothing launches on a stream
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_device = getattr(torch._C, "_cuda_getDevice", None)


def current_stream_handle() -> int:
    """The ``cudaStream_t`` of torch's current stream on the current device, as an int.

    The device is read from torch's C++ side, without ``torch.cuda.current_device()``'s lazy-init check
    (half of this function's time under the profiler on the H100): a launch path has CUDA tensors in
    hand, so CUDA is initialised already.
    """
    if _raw_stream is None or _device is None:
        return torch.cuda.current_stream().cuda_stream
    return _raw_stream(_device())
