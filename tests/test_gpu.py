"""GPU versions of the CPU-path checks (run on the GPU box: pytest -m gpu).

Their CPU counterparts: test_variants.py (same harness through the
interpreters) and test_cuda_sources.py (the .cu files through nvcc).
"""

import pytest
import torch

from kernelscope.catalog import VARIANTS, get
from kernelscope.check import PASS, check_variant

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", list(VARIANTS))
def test_variant_matches_reference_on_gpu(name):
    res = check_variant(VARIANTS[name], device="cuda")
    assert res.status == PASS, res.reason
    assert {s.dtype for s in res.shapes} == set(VARIANTS[name].dtypes)


@pytest.mark.parametrize("name", ["square-numba-lecture", "square-cuda-vec4", "mean-cuda", "square-triton-flat1024"])
def test_kernels_launch_on_torchs_current_stream(name):
    # Run on a side stream and read the result there without a device-wide
    # sync: a kernel launched on another stream would race and read stale data.
    v = get(name)
    x = v.op_spec.make_input(v.op_spec.check_shapes[-1], "float32", "cuda", 1234)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            out = v(x)
        expected = v.op_spec.reference(x.double())
        err = ((out.double() - expected).abs().max() / expected.abs().max()).item()
    side.synchronize()
    assert err < 1e-5


def test_cuda_build_is_cached_and_timed():
    from kernelscope.backends.cuda import build

    get("square-cuda-vec4")(torch.randn(4, 4, device="cuda"))
    assert build.BUILD_TIMES and all(t > 0 for t in build.BUILD_TIMES.values())
    assert str(build.cache_root()) in build.extension().__file__


def test_lecture_square_refuses_a_grid_it_cannot_cover():
    x = torch.randn(16 * 65536, 1, device="cuda")
    with pytest.raises(RuntimeError, match="more rows than a 2-D grid"):
        get("square-cuda-lecture")(x)
