"""The GPU check both direct launch paths share (backends/numba/direct.py, backends/triton/direct.py).

A direct variant's first call with given argument types goes through its framework, later ones
straight to the launch: both must give the standard variant's answer, and a launch made during
CUDA graph capture must be captured (the suite's graph mode replays it).
"""

import torch


def check_direct_square(standard, direct_variant, shapes) -> None:
    """``direct_variant`` against ``standard`` on fresh inputs of each shape, then inside a captured graph."""
    for shape in shapes:
        x = torch.randn(shape, device="cuda")
        first, second = direct_variant(x), direct_variant(x)  # through the framework, then direct
        assert torch.equal(first, standard(x)) and torch.equal(second, x * x)
    x, out = torch.randn(256, 256, device="cuda"), torch.empty(256, 256, device="cuda")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        direct_variant(x, out)
    x.copy_(torch.randn(256, 256, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, x * x)
