"""Work the test processes of one run share: made once, by whichever asks first, the others wait for it.

`make test` runs the tests in several processes (pytest-xdist). A session fixture is made once per process, so a
site build or an nvcc compile that several tests read would be made in each; :func:`once` makes it once for the
whole run, in a folder every process of the run can see, under a lock.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path


def run_folder(tmp_path_factory) -> Path:
    """The temporary folder of this test run: pytest's, or under pytest-xdist the one above its processes' own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once(tmp_path_factory, name: str, make: Callable[[Path], object]) -> Path:
    """The folder ``make(folder)`` filled, run once in this test run under ``name``.

    A process that asks while another makes it waits for it; a ``make`` that raised is tried again by the next.
    """
    root = run_folder(tmp_path_factory) / "shared"
    root.mkdir(exist_ok=True)
    folder, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if make raises
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder
