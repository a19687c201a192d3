"""Every variant against the float64 reference at the edge shapes.

On a machine without a GPU this is the CPU path: Triton under its interpreter,
Numba under the CUDA simulator, torch and torch.compile on the CPU, CUDA C++
skipped (compile-checked by test_cuda_sources.py instead). The GPU versions of
the same checks are in test_gpu.py.
"""

import json

import pytest

from kernelscope import backends
from kernelscope.catalog import VARIANTS
from kernelscope.check import PASS, SKIP, CheckResult, ShapeResult, check_variant
from shared import once

cpu_path = pytest.mark.skipif(backends.cuda_available(),
                              reason="the interpreter path runs where torch sees no GPU; see test_gpu.py")


def _case(name: str, dtype: str):
    # On the CPU a torch.compile variant and its reduce-overhead twin build the same C++ (no CUDA graphs here):
    # one test process checks both, one after the other, so the second loads the first's builds from Inductor's
    # cache, where two processes at once would each run g++ for them.
    group = VARIANTS[name].backend == "torch-compile" and f"inductor-{VARIANTS[name].op}-{dtype}"
    return pytest.param(name, dtype, id=f"{name}-{dtype}", marks=[pytest.mark.xdist_group(group)] if group else [])


# A case per variant and dtype, every dtype the catalog promises: test processes share a variant's dtypes out
# (mean-triton-lecture's interpreted loop and each torch.compile variant's C++ builds are minutes in all).
CASES = [_case(name, dtype) for name, v in VARIANTS.items() for dtype in v.dtypes]


def checked(tmp_path_factory, name: str, dtype: str) -> CheckResult:
    """check_variant on the CPU path for one variant and dtype, run once in the test run: the widest-shapes test
    reads the float32 checks of its variants that the per-case test ran (seconds of interpreted kernels each)."""

    def make(folder):
        (folder / "result.json").write_text(json.dumps(check_variant(VARIANTS[name], device="cpu",
                                                                     dtypes=(dtype,)).as_dict()))

    data = json.loads((once(tmp_path_factory, f"check-{name}-{dtype}", make) / "result.json").read_text())
    return CheckResult(**{**data, "shapes": [ShapeResult(**s) for s in data["shapes"]]})


@cpu_path
@pytest.mark.parametrize("name, dtype", CASES)
def test_variant_matches_reference_on_cpu_path(name, dtype, tmp_path_factory):
    v = VARIANTS[name]
    res = checked(tmp_path_factory, name, dtype)
    if v.backend == "cuda":
        assert res.status == SKIP and "needs a CUDA GPU" in res.reason
        return
    assert res.status == PASS, res.reason
    # the dtype was checked, on at least three shapes
    assert {s.dtype for s in res.shapes} == {dtype}
    assert len({s.shape for s in res.shapes}) >= 3
    # within tolerance everywhere, but where a declared limit says why not
    assert all(s.rel_err <= s.tolerance for s in res.shapes if not s.known)
    assert all(v.limit_for(s.input, s.dtype) for s in res.shapes if s.known)


@cpu_path
def test_widest_check_shapes_run_on_the_block_looping_kernels(tmp_path_factory):
    # The online softmax and the flat square must really cross block boundaries.
    for name in ("softmax-triton-online", "square-triton-flat1024", "mean-triton-tuned"):
        res = checked(tmp_path_factory, name, "float32")
        widest = max(int(s.shape.split("x")[-1]) for s in res.shapes)
        assert res.status == PASS and widest > 4096, (name, res.reason)
