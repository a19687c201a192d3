"""A case's other modes measured in the process of its first: one process per case, not one per mode.

asv runs each benchmark of each parameter set in a process of its own. A
kernelscope case's process spends most of its life before it measures: on the
H100 (results-proofs/full-runs/h100-c48bed9/asv-full.cost.txt) 0.25 s of CUDA
context, the variant's first call (up to 1.5 s with warm caches), the
correctness gate, the warm plan, against 0.1-0.2 s of samples. ``Square``
float32 measures each case three ways (``time_warm``, ``track_cold``,
``track_graph``), so it paid all of that three times.

A benchmark may declare ``also_runs`` (a function attribute, exported by
asv's discovery like ``rounds``): benchmarks its process runs too, for the
same case, after its own result is written. An entry is a method of its class
(``track_cold``) or ``{class}Host.track_host``, a method of another class whose
parameters are the host's followed by single-valued ones (``host``): the same
case there. Before asv
starts a case of such a host, this module writes a request naming the
siblings that this run will still start a process for
(:meth:`RunState.wants_more`); the benchmark process runs them through
asv_runner's own ``_run`` (:mod:`kernelscope.asv.sibling_process`), each writing
the result file its own process would have written, and when asv's loop
reaches a sibling's case it takes that result instead of starting a process.

asv's order makes this work: in every round benchmarks run sorted by name, so
``Square.time_warm`` comes before ``Square.track_cold`` and
``Square.track_graph`` (a result kept for a later round, like graph mode's
single round, waits in the run's stash). Anything not measured that way (a
sibling selected alone with ``-b``, one that failed or was skipped in the
host's process, ``--profile``, a launch method without asv's forkserver)
starts its own process as asv would, with its own output.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import tempfile

from . import hooks
from .runs import current_run

REQUESTS_ENV = "KERNELSCOPE_SIBLING_REQUESTS"  # read by kernelscope.asv.sibling_process (not imported: torch)
REQUEST_FILE = "request.json"


def _id(benchmark: dict, param_idx: int) -> str:
    """The name asv's spawner gives a case's process: asv_runner finds the benchmark and parameters by it."""
    return f"{benchmark['name']}-{param_idx}" if benchmark["params"] else benchmark["name"]


def sibling_index(benchmark: dict, param_idx: int, sibling: dict) -> int | None:
    """The index of the host's case among the sibling's: the same values, then each trailing parameter's only one."""
    if sibling["params"] == benchmark["params"]:
        return param_idx
    head = len(benchmark["params"])
    if sibling["params"][:head] != benchmark["params"] or any(len(p) != 1 for p in sibling["params"][head:]):
        return None
    values = next(itertools.islice(itertools.product(*benchmark["params"]), param_idx, None))
    for j, combo in enumerate(itertools.product(*sibling["params"])):
        if combo[:head] == values:
            return j
    return None


def wanted_siblings(run, benchmark: dict, param_idx: int) -> list[tuple[dict, int]]:
    """The siblings of a host's case (with the case's index there) that this run will still start a process for,
    and that have no result waiting."""
    module, cls, _ = benchmark["name"].rsplit(".", 2)
    found = []
    for entry in benchmark.get("also_runs") or ():
        entry = entry.replace("{class}", cls)
        name = f"{module}.{entry}" if "." in entry else f"{module}.{cls}.{entry}"
        sibling = run.benchmarks.get(name) if run.benchmarks is not None else None
        j = None if sibling is None else sibling_index(benchmark, param_idx, sibling)
        if j is None:
            continue
        selected = run.benchmarks.benchmark_selection.get(name)
        if selected is not None and j not in selected:
            continue
        if (name, j) in run.stash or not run.wants_more(sibling, j):
            continue
        found.append((sibling, j))
    return found


def _served(data):
    """A sibling's result file as asv's runner reads one, if it holds samples (a skip or failure is run again)."""
    from asv import runner

    if not (isinstance(data, dict) and isinstance(data.get("samples"), list) and "number" in data):
        return None
    return runner.BenchmarkResult(result=[True], samples=[data["samples"]], number=[data["number"]],
                                  errcode=0, stderr="", profile=None)


def run_siblings_in_one_process() -> None:
    """Ask hosts for their siblings' results and serve them (idempotent).

    Install it before :func:`kernelscope.asv.rounds.rounds_until_enough_samples`, which then
    counts a served result's samples like any other.
    """

    def make(run_single):
        folder = tempfile.mkdtemp(prefix="kernelscope-siblings-")  # this asv process's own
        atexit.register(shutil.rmtree, folder, True)
        os.environ[REQUESTS_ENV] = folder  # asv's forkserver and benchmark processes inherit it

        def run_case(benchmark, spawner, param_idx, profile, extra_params, cwd):
            run = current_run(spawner)
            served = run.stash.pop((benchmark["name"], param_idx), None)
            if served is not None:
                return served
            siblings = [] if profile else wanted_siblings(run, benchmark, param_idx)
            if not siblings:
                return run_single(benchmark, spawner, param_idx, profile, extra_params, cwd)
            params = {k: v for k, v in (extra_params or {}).items() if k != "number"}  # asv's number is the host's own
            runs = [{"id": _id(s, j), "params": json.dumps(params), "result": os.path.join(folder, f"{i}.json")}
                    for i, (s, j) in enumerate(siblings)]
            request = os.path.join(folder, REQUEST_FILE)
            with open(request + ".tmp", "w") as f:
                json.dump({"host": _id(benchmark, param_idx), "runs": runs}, f)
            os.replace(request + ".tmp", request)
            try:
                res = run_single(benchmark, spawner, param_idx, profile, extra_params, cwd)
            finally:
                os.remove(request)
            for (sibling, j), r in zip(siblings, runs):
                try:
                    with open(r["result"]) as f:
                        data = json.load(f)
                    os.remove(r["result"])
                except (OSError, ValueError):
                    continue
                result = _served(data)
                if result is not None:
                    run.stash[(sibling["name"], j)] = result
            return res

        return run_case

    hooks.wrap("asv.runner:_run_benchmark_single_param", make)
