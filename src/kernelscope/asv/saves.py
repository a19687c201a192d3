"""Results saved after every case, merged under a lock, and resumed case by case.

asv (asv/commands/run.py) loads a commit's stored results, runs every selected
benchmark, then saves once; a benchmark is one method over all its parameters
(``Square.time_warm``: a hundred processes and more). A run cut off (a
preempted GPU box) kept nothing of the benchmark in flight, or of the modes
measured ahead of their turn in its processes (:mod:`kernelscope.asv.siblings`).

Here the result file is written after every case: the cases asv has added,
the cases of the current benchmark run so far, and the results measured ahead
of their turn. The selected cases of the benchmark in flight that have not run
yet are stored as failed (``null``), so a SIGKILL at any moment loses at most
the case in flight, and ``asv run --skip-existing-successful`` then runs, of a
benchmark it does not skip, only the cases without a value (:func:`missing_cases`):
what the cut left, and what failed.

Every save is merged, under a lock on the machine's results folder, into the
file as it is on disk: this process's cases over whatever else is there. So
several asv processes can share one results folder (one per GPU of a box,
:mod:`kernelscope.asv.parallel`) without a lost write. And every JSON file asv
writes is written aside and renamed over the old one: a reader never sees half
a file.
"""

from __future__ import annotations

import copy
import datetime
import fcntl
import math
import os
import time
from contextlib import contextmanager

from . import hooks
from .intervals import widen
from .runs import SELECTION_FILTERS, current_run, n_cases, selected

# Per result file (absolute path): per benchmark, the case indices this process has written.
MINE: dict[str, dict[str, set[int]]] = {}
# Per result file: (mtime_ns, size) of the file as this process last wrote it, and what it wrote.
_LAST: dict[str, tuple[tuple[int, int], object]] = {}
_ADD: list = []  # asv's own Results.add_result, for the snapshots
_RESUMING = [False]  # the command is `asv run --skip-existing-successful` (or --skip-existing)
_LOCK_WAIT = [0.0]  # seconds this process has waited for the results folder's lock, in all

NOT_RUN_YET = "kernelscope: cut off before these cases ran; `asv run --skip-existing-successful` runs them"
_FIELDS = ("_results", "_samples", "_stats", "_benchmark_params", "_benchmark_version", "_started_at", "_duration",
           "_profiles", "_stderr", "_errcode")


@contextmanager
def locked(folder: str):
    """An exclusive lock on a folder (flock on its descriptor): one writer of its files at a time."""
    os.makedirs(folder, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        t0 = time.perf_counter()
        fcntl.flock(fd, fcntl.LOCK_EX)
        _LOCK_WAIT[0] += time.perf_counter() - t0
        yield
    finally:
        os.close(fd)  # releases the lock


def overlay(disk, ours, mine: dict[str, set[int]]):
    """``disk`` with ``ours``'s values of the cases in ``mine`` put over its own; ``disk``, changed."""
    for name, idx in mine.items():
        if name not in ours._results:
            continue
        params = ours._benchmark_params.get(name) or []
        if name not in disk._results or disk._benchmark_version.get(name) != ours._benchmark_version.get(name):
            for field in _FIELDS:  # another version, or new there: ours whole, as asv's add_result would
                if name in getattr(ours, field):
                    getattr(disk, field)[name] = getattr(ours, field)[name]
            continue
        columns = [(disk.get_result_value, ours.get_result_value, "_results"),
                   (disk.get_result_samples, ours.get_result_samples, "_samples"),
                   (disk.get_result_stats, ours.get_result_stats, "_stats")]
        for theirs_of, ours_of, field in columns:
            merged, own = list(theirs_of(name, params)), ours_of(name, params)
            for j in idx:
                merged[j] = own[j]
            getattr(disk, field)[name] = merged if any(v is not None for v in merged) else None
        disk._benchmark_params[name] = params
        starts = [t for t in (disk._started_at.get(name), ours._started_at.get(name)) if t is not None]
        disk._started_at[name] = min(starts) if starts else None
        if ours._duration.get(name) is not None:
            disk._duration[name] = max(ours._duration[name], disk._duration.get(name) or 0.0)
        if ours._profiles.get(name):
            disk._profiles[name] = ours._profiles[name]
    for key, value in ours._duration.items():  # the run's own durations: '<build>', '<setup_cache ...>'
        if key.startswith("<"):
            disk._duration[key] = value
    disk._params, disk._requirements, disk._env_vars = ours._params, ours._requirements, ours._env_vars
    return disk


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size


def save_merged(save, results, result_dir: str) -> None:
    """Write ``results`` into its file, merged with what is on disk, under the folder's lock; widen intervals first."""
    from asv.results import Results

    path = os.path.abspath(os.path.join(result_dir, results._filename))
    mine = MINE.get(path)
    with locked(os.path.dirname(path)):
        out = results
        stamp = _stamp(path)
        if mine is not None and stamp is not None:
            last = _LAST.get(path)
            disk = copy.copy(last[1]) if last and last[0] == stamp else Results.load(path)
            for field in _FIELDS:
                setattr(disk, field, dict(getattr(disk, field)))
            out = overlay(disk, results, mine)
        widen(out)
        save(out, result_dir)
        _LAST[path] = (_stamp(path), out)


def _snapshot(run) -> None:
    """Save what the run has so far, the cases asv has not added yet included (pending, and measured ahead)."""
    from asv import runner

    results = run.results
    result_dir = getattr(results, "_kernelscope_result_dir", None)
    if result_dir is None or run.benchmarks is None:
        return  # a run asv does not save (--dry-run)
    waiting: dict[str, dict[int, object]] = {name: dict(cases) for name, cases in run.pending.items()}
    for (name, j), res in run.stash.items():
        waiting.setdefault(name, {})[j] = res
    snap = copy.copy(results)
    for field in _FIELDS:
        setattr(snap, field, dict(getattr(results, field)))
    mine = MINE.setdefault(os.path.abspath(os.path.join(result_dir, results._filename)), {})
    for name, cases in waiting.items():
        if name not in run.benchmarks:
            continue
        benchmark = run.benchmarks[name]
        n = n_cases(benchmark["params"])
        first = name not in run.added  # asv has not added it in this run: its unrun cases are pending
        unrun = (set(run.selected(name)) - set(cases)) if first else set()
        values, samples, number = [math.nan] * n, [None] * n, [None] * n
        for j in unrun:
            values[j] = None
        for j, res in cases.items():
            values[j], samples[j], number[j] = res.result[0], res.samples[0], res.number[0]
        chosen = sorted(set(cases) | unrun)
        partial = runner.BenchmarkResult(result=values, samples=samples, number=number, errcode=0,
                                         stderr=NOT_RUN_YET if unrun else "", profile=None)
        _ADD[0](snap, benchmark, partial, selected_idx=chosen, started_at=run.started_at.get(name),
                record_samples=True, append_samples=not first or run.append_samples)
        mine.setdefault(name, set()).update(chosen)
    snap.save(result_dir)


def missing_cases(benchmarks, results) -> dict[str, list[int]]:
    """In a resumed run, per benchmark with stored results: the selected cases without a value."""
    if not _RESUMING[0] or results is None:
        return {}
    keep = {}
    for name, benchmark in benchmarks.items():
        if name not in results._results or results._benchmark_version.get(name) != benchmark.get("version"):
            continue
        values = results.get_result_value(name, benchmark["params"])
        keep[name] = [j for j in selected(benchmarks, name) if values[j] is None]
    return keep


def remove_stale_partials(path: str) -> list[str]:
    """Remove the files a writer killed midway left beside ``path`` (``path.PID.partial``, its process gone); their
    names. Another process's write in progress (one asv process per GPU) is left alone."""
    removed = []
    folder, name = os.path.split(path)
    for entry in os.listdir(folder or "."):
        pid = entry[len(name) + 1:-len(".partial")] if entry.startswith(name + ".") and entry.endswith(".partial") \
            else ""
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # alive (or another user's): its write may be in progress
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            os.remove(os.path.join(folder, entry))
            removed.append(entry)
        except FileNotFoundError:
            pass
    return removed


def save_every_case() -> None:
    """Install the saves (idempotent): after every case, merged under a lock, resumed case by case."""

    def atomic(write_json):
        def write_json_atomically(path, data, api_version=None, compact=False):
            path = os.path.abspath(path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            partial = f"{path}.{os.getpid()}.partial"  # not *.json: no reader takes it for a result file
            write_json(partial, data, api_version=api_version, compact=compact)
            os.replace(partial, path)
            remove_stale_partials(path)

        return write_json_atomically

    def remember(load_data):
        def load_data_and_remember(self, result_dir):
            load_data(self, result_dir)
            self._kernelscope_result_dir = result_dir  # asv loads exactly the results it will save
            MINE.setdefault(os.path.abspath(os.path.join(result_dir, self._filename)), {})

        return load_data_and_remember

    def save_when_added(add_result):
        _ADD[:] = [add_result]

        def add_result_and_save(self, benchmark, result, *args, **kwargs):
            add_result(self, benchmark, result, *args, **kwargs)
            result_dir = getattr(self, "_kernelscope_result_dir", None)
            if result_dir is None:
                return
            name = benchmark["name"]
            chosen = kwargs.get("selected_idx")
            chosen = range(n_cases(benchmark["params"])) if chosen is None else chosen
            MINE.setdefault(os.path.abspath(os.path.join(result_dir, self._filename)), {}) \
                .setdefault(name, set()).update(chosen)
            run = current_run()
            if run.results is self:
                run.added.add(name)
                run.pending.pop(name, None)
            self.save(result_dir)

        return add_result_and_save

    def merged(save):
        def save_merged_under_lock(self, result_dir):
            if self._filename is None:
                return save(self, result_dir)
            return save_merged(save, self, result_dir)

        return save_merged_under_lock

    def after_every_case(run_single):
        def run_case(benchmark, spawner, param_idx, profile, extra_params, cwd):
            run = current_run(spawner)
            name = benchmark["name"]
            run.started_at.setdefault(name, datetime.datetime.now(datetime.timezone.utc))
            before = (run.tally.get((name, param_idx)), len(run.stash))
            start, t0, waited = time.time(), time.perf_counter(), _LOCK_WAIT[0]
            res = run_single(benchmark, spawner, param_idx, profile, extra_params, cwd)
            ran = time.perf_counter() - t0
            if (run.tally.get((name, param_idx)), len(run.stash)) != before:  # something new (not a round's no-op)
                run.pending.setdefault(name, {})[param_idx] = res
                if run.results is not None:
                    _snapshot(run)
                if os.environ.get("KERNELSCOPE_PHASE_LOG"):  # where the run's time goes (torch only then)
                    from kernelscope.timing import phases

                    phases.parent_case(name, param_idx, start, ran, time.perf_counter() - t0 - ran,
                                       _LOCK_WAIT[0] - waited)
            return res

        return run_case

    def note_resuming(run_command):
        def run(cls, conf, *args, **kwargs):
            _RESUMING[0] = bool(kwargs.get("skip_successful"))
            try:
                return run_command(cls, conf, *args, **kwargs)
            finally:
                _RESUMING[0] = False

        return run

    hooks.wrap("asv.util:write_json", atomic)
    hooks.wrap("asv.results:Results.load_data", remember)
    hooks.wrap("asv.results:Results.add_result", save_when_added)
    hooks.wrap("asv.results:Results.save", merged)
    hooks.wrap("asv.runner:_run_benchmark_single_param", after_every_case)
    hooks.wrap("asv.commands.run:Run.run", note_resuming)
    if missing_cases not in SELECTION_FILTERS:
        SELECTION_FILTERS.append(missing_cases)
