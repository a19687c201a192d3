"""asv rounds that stop once a case has enough samples: several processes only where one process is one sample.

asv runs every parameter set of a benchmark once per round, each round in a
fresh process, and pools the rounds' samples (asv/runner.py). ``rounds`` is a
benchmark-wide attribute, but what needs several processes is a few of its
cases: a launch-bound kernel, whose time the process itself moves
(:mod:`kernelscope.timing.processes`), gives one value per process and wants
three processes; a bandwidth-bound one gives 12-30 samples in its first process
and nothing more to learn from a second. Running every case in every round
would triple a full run.

A benchmark that declares ``enough_samples = N`` (a function attribute, which
asv's discovery exports like ``rounds``) has a case run in a further round only
while the case has fewer than N samples from this run. A case that has enough,
or failed, or was skipped, is not started again: asv is handed an empty result
for it, which appends no sample and keeps the stored one as it was (asv merges
a round's samples into the earlier ones and recomputes the statistics from the
union), with its earlier output, so a failure keeps its reason.

Benchmarks without the attribute run as asv runs them, and so does every
benchmark when ``rounds`` is given on the command line (``-a rounds=N``). Loaded with the
environment plugin (:mod:`kernelscope.results.asv_env`), so every asv command
of this repository uses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from asv import runner
from asv.commands import run as run_command


@dataclass
class _Case:
    samples: int  # samples this run has taken for the case so far
    result: object  # what asv should keep: True (samples), None (failed) or NaN (skipped)
    number: object
    errcode: int
    stderr: str

    def done(self, wanted: int) -> bool:
        return self.result is not True or self.samples >= wanted

    def nothing_more(self):
        """A round's result that adds no sample and changes nothing asv stored."""
        return runner.BenchmarkResult(result=[self.result], samples=[[] if self.result is True else None],
                                      number=[self.number], errcode=self.errcode, stderr=self.stderr, profile=None)


@dataclass
class RunState:
    """What the calls of run_benchmarks for one (commit, environment) share: per case, what it has so far.

    ``tally`` has every case run this far (the rule below reads only those of
    benchmarks with ``enough_samples``); ``stash`` holds results measured ahead
    of their turn (:mod:`kernelscope.results.asv_siblings`).
    """

    benchmarks: object = None  # asv's Benchmarks of the call now running: the selection
    tally: dict[tuple[str, int], _Case] = field(default_factory=dict)
    stash: dict[tuple[str, int], object] = field(default_factory=dict)

    def wants_more(self, benchmark: dict, param_idx: int) -> bool:
        """Whether this run still wants a result for the case: none yet, or fewer samples than ``enough_samples``.

        (A benchmark with several rounds and no ``enough_samples`` wants one result
        here: a sibling asked for once, then run by asv in its own further rounds.)
        """
        case = self.tally.get((benchmark["name"], param_idx))
        if case is None:
            return True
        wanted = benchmark.get("enough_samples")
        return bool(wanted) and not case.done(int(wanted))


# Per commit and environment: `asv run` runs all rounds in one call of run_benchmarks, but
# `asv continuous` (and `asv run --interleave-rounds`) calls it once per round and commit,
# each call with a new spawner and the results reloaded from disk, so the state is keyed by
# what those calls share. One asv process runs each (commit, environment) once.
_RUNS: dict[tuple, RunState] = {}
_current: list[tuple] = []  # the (commit, environment) run_benchmarks is running now


def current_run(spawner=None) -> RunState:
    """The state of the run now in progress (outside run_benchmarks, as in a test: one per spawner)."""
    return _RUNS.setdefault(_current[-1] if _current else (id(spawner),), RunState())


def rounds_until_enough_samples() -> None:
    """Patch asv's per-case runner, and run_benchmarks to know whose cases it runs (idempotent)."""
    if getattr(runner, "_kernelscope_rounds_until_enough", False):
        return
    run_single, run_all = runner._run_benchmark_single_param, runner.run_benchmarks

    def run_benchmarks(benchmarks, env, results=None, *args, **kwargs):
        key = (getattr(results, "commit_hash", None), env.name)
        _current.append(key)
        current_run().benchmarks = benchmarks
        try:
            return run_all(benchmarks, env, results, *args, **kwargs)
        finally:
            _current.pop()

    def run_case(benchmark, spawner, param_idx, profile, extra_params, cwd):
        run = current_run(spawner)
        key = (benchmark["name"], param_idx)
        case = run.tally.get(key)
        # `-a rounds=N` on the command line asks for N processes a case: every case gets them (the
        # CPU tests interleave three rounds per commit so that a slow spell of a shared box hits both)
        wanted = None if "rounds" in (extra_params or {}) else benchmark.get("enough_samples")
        if wanted and case is not None and case.done(int(wanted)):
            return case.nothing_more()
        res = run_single(benchmark, spawner, param_idx, profile, extra_params, cwd)
        (result,), (samples,), (number,) = res.result, res.samples, res.number
        taken = (case.samples if case else 0) + len(samples or [])
        measured = result is True and samples is not None
        run.tally[key] = _Case(taken, True if measured else result, number, res.errcode, res.stderr)
        return res

    runner._run_benchmark_single_param = run_case
    runner.run_benchmarks = run_benchmarks
    run_command.run_benchmarks = run_benchmarks  # imported there by name
    runner._kernelscope_rounds_until_enough = True
