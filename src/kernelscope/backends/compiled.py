"""torch.compile variants: the same Python as the eager variants, fused by Inductor.

Compilation happens on the first call for each shape and dtype (``dynamic=False``:
each benchmark size gets its own specialised kernel, as a user who compiles
for a fixed shape would see). The first-call cost is measured separately by the
asv suite (``FirstCall.time_first_call``), never inside a timing.
"""

import torch

from kernelscope.backends import torch_ops

# Each (shape, dtype) is a recompile. Past dynamo's limit (8 by default) it would
# silently fall back to eager and we would time the wrong thing: raise the limit.
_dynamo = torch._dynamo.config
if hasattr(_dynamo, "recompile_limit"):
    _dynamo.recompile_limit = 1024
else:
    _dynamo.cache_size_limit = 1024
if hasattr(_dynamo, "accumulated_recompile_limit"):
    _dynamo.accumulated_recompile_limit = 4096

square = torch.compile(torch_ops.square, dynamic=False)
mean = torch.compile(torch_ops.mean, dynamic=False)
softmax = torch.compile(torch_ops.softmax_manual, dynamic=False)
gelu = torch.compile(torch_ops.gelu_formula, dynamic=False)

# mode="reduce-overhead": Inductor's own remedy for the host cost of its calls. After a warm-up call it records the
# compiled kernels of each shape into a CUDA graph (cudagraph trees) and replays that graph on later calls. A
# call's output lives in the graph's memory pool and is overwritten by the next replay, as Inductor documents;
# the suite reads each output before the next call. On the CPU there is no graph: the same C++ kernels as above.
square_cudagraphs = torch.compile(torch_ops.square, dynamic=False, mode="reduce-overhead")
mean_cudagraphs = torch.compile(torch_ops.mean, dynamic=False, mode="reduce-overhead")
softmax_cudagraphs = torch.compile(torch_ops.softmax_manual, dynamic=False, mode="reduce-overhead")
gelu_cudagraphs = torch.compile(torch_ops.gelu_formula, dynamic=False, mode="reduce-overhead")
