"""The benchmark-process side of :mod:`kernelscope.asv.siblings`: a case's other modes, in its process.

asv's forkserver forks one process per case and calls asv_runner's ``_run``
in it, which sets the benchmark up, measures it, tears it down and writes its
result file. :func:`install` (called in the forkserver, before any fork) wraps
that call: when asv left a request naming this process's case as a host, the
process then runs each requested sibling benchmark through the same ``_run``,
into the result file asv named. The case the siblings set up is the one the
host set up (:func:`kernelscope.timing.cases.prepare` keeps it, checked), so
they pay no second CUDA context, first call or gate.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from pathlib import Path

REQUESTS_ENV = "KERNELSCOPE_SIBLING_REQUESTS"  # kernelscope.asv.siblings writes requests there
REQUEST_FILE = "request.json"


def requested(benchmark_id: str) -> list[dict]:
    """The sibling runs asv asked of the process running ``benchmark_id``: ``[{"id", "params", "result"}]``."""
    folder = os.environ.get(REQUESTS_ENV)
    if not folder:
        return []
    try:
        request = json.loads((Path(folder) / REQUEST_FILE).read_text())
    except (OSError, ValueError):
        return []
    return request.get("runs", []) if request.get("host") == benchmark_id else []


def _as_sibling(benchmark_id: str):
    """The phase log's sibling context where this process imported it (the kernelscope suite does), else none.

    Not imported here: kernelscope.timing imports torch, seconds of every discovery and forkserver of a suite
    that never uses it (the tests' fixture suites), and such a suite keeps no phase record to tell apart.
    """
    phases = sys.modules.get("kernelscope.timing.phases")
    return phases.sibling(benchmark_id) if phases is not None else contextlib.nullcontext()


def install() -> None:
    """Make asv_runner's forkserver children run their requested siblings after themselves (idempotent)."""
    try:
        import asv_runner  # noqa: F401
    except ImportError:  # imported without asv (the tests, the CLI): nothing to wrap
        return
    from kernelscope.asv import hooks

    hooks.require("asv_runner")

    def make(run_one):
        def run_with_siblings(args):
            benchmark_dir, benchmark_id = args[0], args[1]
            run_one(args)
            for sibling in requested(benchmark_id):
                with _as_sibling(sibling["id"]):
                    try:
                        run_one((benchmark_dir, sibling["id"], sibling["params"], "None", sibling["result"]))
                    except Exception:  # noqa: BLE001 - asv then runs it in a process of its own
                        traceback.print_exc()

        return run_with_siblings

    hooks.wrap("asv_runner.server:_run", make)
