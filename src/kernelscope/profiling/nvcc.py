"""A .cu file compiled by nvcc to be read, not run: its PTX, ptxas's resource report and its object's SASS.

One nvcc call gives all three (``-c -Xptxas -v``, with the PTX it compiled from
kept by ``-keep``), and the result stays on disk under the kernelscope cache
(``$KERNELSCOPE_CACHE``, as the extension's builds), in a folder named by what
it was made from: the file and the headers it includes, nvcc's version, the
arch and the flags. The profiler's code capture, ``scripts/sass_counts.py`` and
the tests read one compile of a file and compile it again only once it
changed: softmax.cu alone is about ten seconds of nvcc. No GPU is needed.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kernelscope.profiling.tools import find_tool, version_output

ARCH = "sm_90"  # the H100's and the H200's: what the extension is built for there
FLAGS = ("-O3",)  # as build.py compiles the extension


@dataclass(frozen=True)
class Compiled:
    """What nvcc made of one file, in ``folder``."""

    source: Path
    folder: Path

    @property
    def object(self) -> Path:
        return self.folder / "k.o"

    @property
    def ptx(self) -> str:
        return (self.folder / f"{self.source.stem}.ptx").read_text()

    @property
    def ptxas(self) -> str:
        """ptxas's ``-v`` report: each kernel's registers, shared memory and spills."""
        return (self.folder / "ptxas.txt").read_text()

    def sass(self) -> str:
        """``cuobjdump -sass`` of the object (kept beside it once read); RuntimeError where there is no cuobjdump."""
        kept = self.folder / "sass.txt"
        if kept.exists():
            return kept.read_text()
        cuobjdump = find_tool("cuobjdump")
        if cuobjdump is None:
            raise RuntimeError("cuobjdump not found (CUDA toolkit or Triton's bundled copy)")
        dump = subprocess.run([cuobjdump, "-sass", str(self.object)], capture_output=True, text=True, timeout=600)
        if dump.returncode:
            raise RuntimeError(f"cuobjdump -sass failed: {dump.stderr.strip()[-500:]}")
        _write_aside(kept, dump.stdout)
        return dump.stdout


@functools.cache
def _nvcc_version(nvcc: str) -> str:
    return version_output(nvcc) or nvcc


def _write_aside(path: Path, text: str) -> None:
    aside = path.with_name(f"{path.name}.{os.getpid()}")
    aside.write_text(text)
    os.replace(aside, path)


def compile_for_reading(source: Path, arch: str = ARCH, flags: tuple[str, ...] = FLAGS) -> Compiled:
    """``source`` compiled for ``arch``: from the cache, or by one nvcc call (RuntimeError with nvcc's message if
    it fails; a failure is not kept). Processes compiling the same file at once wait for one another."""
    from kernelscope.backends.cuda.build import cache_root, included

    source = Path(source).resolve()
    nvcc = find_tool("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc not found (install the CUDA toolkit, or set CUDA_HOME)")
    digest = hashlib.sha256("\0".join([_nvcc_version(nvcc), arch, *flags]).encode())
    for path in (source, *included(source)):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    folder = cache_root() / "nvcc" / f"{source.stem}-{arch}-{digest.hexdigest()[:16]}"
    done = Compiled(source, folder)
    if done.object.exists():
        return done
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.object.exists():  # compiled while this process waited
            return done
        work = folder.parent / f"{folder.name}.{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        try:
            proc = subprocess.run([nvcc, f"-arch={arch}", *flags, "-I", str(source.parent), "-c", "-Xptxas", "-v",
                                   "-keep", "-keep-dir", str(work), str(source), "-o", str(work / "k.o")],
                                  capture_output=True, text=True, timeout=900)
            if proc.returncode:
                raise RuntimeError(f"nvcc -c {source.name} failed: {proc.stderr.strip()[-1500:]}")
            for kept in work.iterdir():  # -keep's other intermediates (cudafe, fatbin, module ids): not read
                if kept.name not in ("k.o", f"{source.stem}.ptx"):
                    kept.unlink()
            (work / "ptxas.txt").write_text(proc.stderr + proc.stdout)
            os.rename(work, folder)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return done
