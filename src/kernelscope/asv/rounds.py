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
environment plugin (:mod:`kernelscope.asv.env`), so every asv command
of this repository uses it.
"""

from __future__ import annotations

from . import hooks
from .runs import Case, current_run


def _nothing_more(case):
    """A round's result that adds no sample and changes nothing asv stored."""
    from asv import runner

    return runner.BenchmarkResult(result=[case.result], samples=[[] if case.result is True else None],
                                  number=[case.number], errcode=case.errcode, stderr=case.stderr, profile=None)


def _wanted(benchmark: dict, extra_params) -> int | None:
    """The samples a case of ``benchmark`` wants before its further rounds are skipped (None: never skipped)."""
    # `-a rounds=N` on the command line asks for N processes a case: every case gets them (the
    # CPU tests interleave three rounds per commit so that a slow spell of a shared box hits both)
    wanted = None if "rounds" in (extra_params or {}) else benchmark.get("enough_samples")
    return int(wanted) if wanted else None


def runs_nothing(run, benchmarks, run_rounds, extra_params) -> bool:
    """Whether one interleaved round (asv continuous's call of run_benchmarks for round ``run_rounds``) starts no
    benchmark process: every selected case is past its benchmark's rounds or already has the samples it wants."""
    if not run_rounds or len(run_rounds) != 1 or benchmarks is None:
        return False
    for name in benchmarks:
        benchmark = benchmarks[name]
        if run_rounds[0] > int((extra_params or {}).get("rounds", benchmark.get("rounds", 1))):
            continue  # asv leaves it out of this round
        wanted = _wanted(benchmark, extra_params)
        for j in run.selected(name):
            case = run.tally.get((name, j))
            if wanted is None or case is None or not case.done(wanted):
                return False
    return True


def rounds_until_enough_samples() -> None:
    """Run a case in a further round only while it has fewer samples than its ``enough_samples`` (idempotent)."""

    def make(run_single):
        def run_case(benchmark, spawner, param_idx, profile, extra_params, cwd):
            run = current_run(spawner)
            key = (benchmark["name"], param_idx)
            case = run.tally.get(key)
            wanted = _wanted(benchmark, extra_params)
            if wanted and case is not None and case.done(wanted):
                return _nothing_more(case)
            res = run_single(benchmark, spawner, param_idx, profile, extra_params, cwd)
            (result,), (samples,), (number,) = res.result, res.samples, res.number
            taken = (case.samples if case else 0) + len(samples or [])
            measured = result is True and samples is not None
            run.tally[key] = Case(taken, True if measured else result, number, res.errcode, res.stderr)
            return res

        return run_case

    hooks.wrap("asv.runner:_run_benchmark_single_param", make)
