"""Finding the CUDA toolkit's command-line tools (nvcc, cuobjdump, ncu) and asking their versions."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

DEFAULT_CUDA_HOME = "/usr/local/cuda"


def find_tool(name: str, cuda_home: str = DEFAULT_CUDA_HOME) -> str | None:
    """``name`` on PATH, in the CUDA toolkit ($CUDA_HOME, $CUDA_PATH, ``cuda_home``), or
    (cuobjdump, nvdisasm) in Triton's bundled copy."""
    found = shutil.which(name)
    if found:
        return found
    dirs = [Path(h) / "bin" for h in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), cuda_home) if h]
    try:
        spec = importlib.util.find_spec("triton")
        if spec and spec.origin:
            dirs.append(Path(spec.origin).parent / "backends" / "nvidia" / "bin")
    except (ImportError, ValueError):
        pass
    for d in dirs:
        if os.access(d / name, os.X_OK):
            return str(d / name)
    return None


def version_output(path: str) -> str | None:
    """What ``path --version`` prints, or None if it would not run."""
    try:
        return subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
