"""CUDA C++ sources compile with plain nvcc (the CPU path's check of the CUDA backend)."""

import re
import shutil
import subprocess

import pytest

from kernelscope.backends.cuda import build

NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if shutil.os.path.exists("/usr/local/cuda/bin/nvcc") else None)
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found (install the CUDA toolkit to compile-check .cu files)")


@needs_nvcc
@pytest.mark.parametrize("source", build.CU_SOURCES)
def test_cu_file_compiles_to_object_and_ptx(source, tmp_path):
    path = build.HERE / source
    for flag, suffix in (("-c", ".o"), ("-ptx", ".ptx")):
        out = tmp_path / (path.stem + suffix)
        proc = subprocess.run([NVCC, "-arch=sm_90", "-O3", flag, str(path), "-o", str(out)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert out.stat().st_size > 0
    ptx = (tmp_path / (path.stem + ".ptx")).read_text()
    assert ".visible .entry" in ptx


@needs_nvcc
def test_vectorized_square_uses_16_byte_loads(tmp_path):
    out = tmp_path / "square.ptx"
    subprocess.run([NVCC, "-arch=sm_90", "-O3", "-ptx", str(build.HERE / "square.cu"), "-o", str(out)], check=True)
    assert "ld.global.nc.v4.f32" in out.read_text() or "ld.global.v4.f32" in out.read_text()


def test_bindings_declare_exactly_the_launchers_the_cu_files_define():
    cpp, cuda = build.sources()
    declared = set(re.findall(r"^(?:cudaError_t|int) (\w+)\(", cpp, re.M))
    defined = set(re.findall(r"^(?:cudaError_t|int) (\w+)\(", cuda, re.M))
    assert declared and declared == defined
    for fn in build.FUNCTIONS:
        assert re.search(rf"^torch::Tensor {fn}\(", cpp, re.M), fn
