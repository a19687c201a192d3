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

Benchmarks without the attribute run as asv runs them. Loaded with the
environment plugin (:mod:`kernelscope.results.asv_env`), so every asv command
of this repository uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

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


# Per commit and environment: `asv run` runs all rounds in one call of run_benchmarks, but
# `asv continuous` (and `asv run --interleave-rounds`) calls it once per round and commit,
# each call with a new spawner and the results reloaded from disk, so the tally is keyed by
# what those calls share. One asv process runs each (commit, environment) once.
_TALLIES: dict[tuple, dict[tuple[str, int], _Case]] = {}
_current: list[tuple] = []  # the (commit, environment) run_benchmarks is running now


def rounds_until_enough_samples() -> None:
    """Patch asv's per-case runner, and run_benchmarks to know whose cases it runs (idempotent)."""
    if getattr(runner, "_kernelscope_rounds_until_enough", False):
        return
    run_single, run_all = runner._run_benchmark_single_param, runner.run_benchmarks

    def run_benchmarks(benchmarks, env, results=None, *args, **kwargs):
        _current.append((getattr(results, "commit_hash", None), env.name))
        try:
            return run_all(benchmarks, env, results, *args, **kwargs)
        finally:
            _current.pop()

    def run_case(benchmark, spawner, param_idx, profile, extra_params, cwd):
        wanted = benchmark.get("enough_samples")
        if not wanted:
            return run_single(benchmark, spawner, param_idx, profile, extra_params, cwd)
        tally = _TALLIES.setdefault(_current[-1] if _current else (id(spawner),), {})
        key = (benchmark["name"], param_idx)
        case = tally.get(key)
        if case is not None and case.done(int(wanted)):
            return case.nothing_more()
        res = run_single(benchmark, spawner, param_idx, profile, extra_params, cwd)
        (result,), (samples,), (number,) = res.result, res.samples, res.number
        taken = (case.samples if case else 0) + len(samples or [])
        measured = result is True and samples is not None
        tally[key] = _Case(taken, True if measured else result, number, res.errcode, res.stderr)
        return res

    runner._run_benchmark_single_param = run_case
    runner.run_benchmarks = run_benchmarks
    run_command.run_benchmarks = run_benchmarks  # imported there by name
    runner._kernelscope_rounds_until_enough = True
