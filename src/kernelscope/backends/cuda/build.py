"""Build the CUDA C++ kernels into one torch extension with load_inline.

All .cu files go into one extension, so a fresh machine pays nvcc once. The
build directory is a persistent cache (``$KERNELSCOPE_CACHE`` or
``~/.cache/kernelscope``), keyed by a hash of the sources and the torch/CUDA
versions: editing a kernel rebuilds, re-running does not. The first build's
time is printed and kept in ``BUILD_TIMES``.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import sys
import time
from contextlib import contextmanager
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent
CU_SOURCES = ("square.cu", "mean.cu", "gelu.cu", "softmax.cu")
# Included by the .cu files and by each other (found in the build folder: headers_in)
HEADERS = ("pack16.cuh", "softmax_strategies.def", "softmax_common.cuh", "softmax_cluster.cuh", "softmax_warp.cuh",
           "softmax_block.cuh", "softmax_loop.cuh", "softmax_cp_async.cuh", "softmax_pipe.cuh", "softmax_ring.cuh",
           "softmax_launch.cuh")
BINDINGS = "bindings.cpp"
FUNCTIONS = ("square_lecture", "square_vec4", "gelu_lecture", "gelu_vec4", "mean", "softmax", "dram_peak_gbps",
             "softmax_loop_resident_clusters_on")

BUILD_TIMES: dict[str, float] = {}  # extension name -> seconds the build (or cache load) took


def cache_root() -> Path:
    return Path(os.environ.get("KERNELSCOPE_CACHE", Path.home() / ".cache" / "kernelscope"))


def included(path: Path) -> list[Path]:
    """The headers of ``path``'s folder that it includes, directly or through one another, each after the headers
    it includes itself: the order their definitions are read in."""
    found: list[Path] = []
    seen = {path}

    def visit(file: Path) -> None:
        for name in re.findall(r'^#include "([\w.]+)"', file.read_text(), re.M):
            header = file.parent / name
            if header not in seen and header.exists():
                seen.add(header)
                visit(header)
                found.append(header)

    visit(path)
    return found


def sources(softmax: Path | None = None) -> tuple[str, str]:
    """bindings.cpp, and the .cu files as the one CUDA source load_inline builds; ``softmax``: a file in softmax.cu's
    place (a measurement build's, which defines softmax.cu's entry points its own way)."""
    files = [softmax if softmax is not None and name == "softmax.cu" else HERE / name for name in CU_SOURCES]
    cuda = "\n".join(f"// ---- {path.name}\n" + path.read_text() for path in files)
    return (HERE / BINDINGS).read_text(), cuda


@contextmanager
def building(build_dir: Path):
    """One process at a time builds or loads the extension in ``build_dir``, and a killed build does not block.

    torch's own lock is a file that the builder removes when done (FileBaton):
    a build killed midway (a benchmark run cut off) leaves it behind, and every
    later load waits on it forever. The lock taken here is released by the
    kernel when its holder dies, so under it torch's lock file, if present, is
    such a leftover and goes.
    """
    fd = os.open(build_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        stale = build_dir / "lock"
        if stale.exists():
            print(f"kernelscope: removing {stale}, left by a build that did not finish", file=sys.stderr, flush=True)
            stale.unlink(missing_ok=True)
        yield
    finally:
        os.close(fd)


def headers_in(build_dir: Path) -> Path:
    """The headers, copied into the build folder: the folder the build includes them from.

    The build command must not name where kernelscope is installed. ninja rebuilds
    when the command changes, so two installs sharing this cache (one asv
    environment per GPU, or asv's beside an editable install) would otherwise
    rebuild each other's extension, a minute of nvcc each time.
    """
    include = build_dir / "include"
    include.mkdir(parents=True, exist_ok=True)
    for name in HEADERS:
        text, target = (HERE / name).read_text(), include / name
        if not target.exists() or target.read_text() != text:
            partial = target.with_name(f"{name}.{os.getpid()}.partial")  # another process may be reading it
            partial.write_text(text)
            os.replace(partial, target)
    return include


@cache
def extension(softmax: Path | None = None):
    """The extension, built once per source hash. ``softmax``: a measurement build beside it, this file in
    softmax.cu's place (a probe's own launch_softmax over the same kernels and launcher, through a policy of its
    own: scripts/gpu/softmax_free_exps.cu), under its own name and cache folder."""
    import torch
    from torch.utils.cpp_extension import load_inline

    cpp, cuda = sources(softmax)
    headers = [(HERE / name).read_text() for name in HEADERS]
    key = hashlib.sha256("\0".join([cpp, cuda, *headers, torch.__version__, str(torch.version.cuda)]
                                    ).encode()).hexdigest()[:12]
    name = f"kernelscope_cuda_{key}"
    build_dir = cache_root() / "torch_extensions" / name
    build_dir.mkdir(parents=True, exist_ok=True)
    fresh = not any(build_dir.glob("*.so"))
    if fresh:
        print(f"kernelscope: building CUDA kernels with nvcc into {build_dir} (first time only, about a minute)",
              file=sys.stderr, flush=True)
    start = time.perf_counter()
    with building(build_dir):
        module = load_inline(name=name, cpp_sources=cpp, cuda_sources=cuda, functions=list(FUNCTIONS),
                             extra_cuda_cflags=["-O3"],
                             extra_include_paths=[str(headers_in(build_dir))], build_directory=str(build_dir),
                             verbose=False)
    BUILD_TIMES[name] = time.perf_counter() - start
    if fresh:
        print(f"kernelscope: built {name} in {BUILD_TIMES[name]:.1f} s", file=sys.stderr, flush=True)
    return module
