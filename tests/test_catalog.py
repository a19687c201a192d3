"""The catalog is consistent: every variant is reachable, modelled and tested."""

import importlib
import re
from pathlib import Path

import pytest

from kernelscope import backends
from kernelscope.catalog import OPS, VARIANTS, get, select, variants_of
from kernelscope.ops import DTYPES, numel

ROOT = Path(__file__).resolve().parents[1]


def test_every_op_has_variants_on_several_backends():
    for name in OPS:
        found = {v.backend for v in variants_of(name)}
        assert {"torch", "torch-compile", "triton"} <= found, name


def test_every_backend_has_variants():
    assert {v.backend for v in VARIANTS.values()} == set(backends.BACKENDS)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_variant_is_well_formed(name):
    v = VARIANTS[name]
    assert v.name == name and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", name)
    assert name.startswith(v.op + "-"), "variant names start with their op"
    assert v.op in OPS and v.backend in backends.BACKENDS
    assert v.teaches and set(v.dtypes) <= set(DTYPES)
    module, _, attr = v.impl.partition(":")
    assert _defines(module, attr), f"{v.impl}: no such function"


def _defines(module: str, attr: str) -> bool:
    """``module`` (a package: through its relative re-exports) defines ``attr``, read without importing it."""
    spec = importlib.util.find_spec(module)
    assert spec is not None, f"{module}: module not found"
    source = Path(spec.origin).read_text()
    if re.search(rf"^(def {attr}\(|{attr} = )", source, re.M):
        return True
    for sub, names in re.findall(r"^from \.(\w+) import (\([^()]*\)|.*)$", source, re.M):
        if attr in re.findall(r"\w+", names):
            return _defines(f"{module}.{sub}", attr)
    return False


@pytest.mark.parametrize("op", list(OPS.values()), ids=list(OPS))
def test_op_models_are_complete(op):
    # A reference, a bytes model, FLOPs and a tolerance for every dtype any variant uses.
    used = {d for v in variants_of(op.name) for d in v.dtypes}
    assert used <= set(op.tolerance)
    for shape in op.check_shapes + op.bench_shapes:
        assert len(shape) == op.ndim
        assert op.bytes_for(shape, "float32") >= 4 * numel(shape)
        assert op.flops(shape) >= numel(shape)
    # The check shapes cover 1 element and a prime larger than a block.
    assert any(numel(s) == 1 for s in op.check_shapes)
    assert max(s[-1] for s in op.check_shapes) > 4096


def test_bytes_model_counts_each_input_once_and_each_output_once():
    assert OPS["square"].bytes_for((1024, 1024), "float32") == 2 * 4 * 2**20
    assert OPS["mean"].bytes_for((1000,), "bfloat16") == 2 * 1000 + 2
    assert OPS["softmax"].bytes_for((3, 5), "float16") == 2 * 2 * 15


def test_every_cuda_variant_has_a_source_file_that_is_built():
    from kernelscope.backends.cuda import build

    for name in build.CU_SOURCES:
        assert (build.HERE / name).is_file()
    cuda_variants = [v for v in VARIANTS.values() if v.backend == "cuda"]
    exported = set(build.FUNCTIONS)
    for v in cuda_variants:
        attr = v.impl.partition(":")[2]
        assert re.search(rf"extension\(\)\.{attr}\(", (build.HERE / "kernels.py").read_text()), v.name
        assert attr in exported


def test_lookup_errors_name_the_known_entries():
    with pytest.raises(KeyError, match="known: square-torch"):
        get("square-nope")
    with pytest.raises(KeyError, match="unknown op 'cube'"):
        select(op="cube")
    with pytest.raises(KeyError, match="unknown backend"):
        select(backend="opencl")


def test_catalog_imports_no_kernel_framework():
    import subprocess
    import sys

    code = ("import sys, kernelscope.catalog, kernelscope.cli; "
            "print(','.join(m for m in ('triton', 'numba', 'torch.utils.cpp_extension') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_declared_limits_name_a_stress_input_of_their_op():
    for v in VARIANTS.values():
        inputs = {s.name for s in v.op_spec.stress}
        for lim in v.limits:
            assert lim.input in inputs, f"{v.name}: no stress input {lim.input!r} (has {sorted(inputs)})"
            assert set(lim.dtypes) <= set(v.dtypes) and lim.why


def test_every_op_has_stress_inputs_that_are_never_zero():
    import torch

    for op in OPS.values():
        assert op.stress, op.name
        for s in op.stress:
            x = s.make((4, 64) if op.ndim == 2 else (256,), "float32", "cpu", 1)
            assert torch.count_nonzero(x).item() == x.numel(), (op.name, s.name)


def test_every_tuned_variant_takes_inputs_past_2_31_elements_and_lecture_kernels_declare_their_limit():
    # the check's past-2^31 input holds the tuned ones to it on a GPU; a lecture kernel keeps its 32-bit indices
    from kernelscope.catalog import INT32

    for v in VARIANTS.values():
        if v.tuned:
            assert v.max_numel is None, v.name
        if v.lecture and v.backend in ("triton", "cuda", "numba"):
            assert v.max_numel == INT32, v.name
    assert "exceed the kernel's 32-bit indexing limit" in VARIANTS["square-cuda-lecture"].unsupported((65536, 65536),
                                                                                                   "float32")
