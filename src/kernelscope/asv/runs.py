"""What one asv run of one commit in one environment shares, and which of its cases it runs.

asv's ``run_benchmarks`` runs one commit's selected benchmarks in one
environment. The integration's pieces each need to know, while a case runs,
which run it belongs to: its Results, the selection, the results measured
ahead of their turn, the cases measured but not yet handed to asv. This
module keeps that per (commit, environment) and replaces ``run_benchmarks``
once, so that:

* :func:`current_run` answers for the run in progress;
* the selection can be narrowed before asv starts (:data:`SELECTION_FILTERS`):
  to one GPU's share of the cases (:mod:`kernelscope.asv.parallel`), or to the
  cases a resumed run still lacks (:mod:`kernelscope.asv.saves`);
* the benchmark processes learn the variants selected (:data:`PRELOAD_ENV`), and
  the forkserver starts their frameworks alone.

`asv run` runs all rounds of a commit in one call of run_benchmarks, but `asv
continuous` (and `asv run --interleave-rounds`) calls it once per round and
commit, each call with a new Results loaded from disk, so the state is keyed
by what those calls share.
"""

from __future__ import annotations

import ast
import itertools
import os
from dataclasses import dataclass, field
from typing import Callable

from . import hooks


@dataclass
class Case:
    """What a run has of one case so far."""

    samples: int  # samples this run has taken for the case so far
    result: object  # what asv should keep: True (samples), None (failed) or NaN (skipped)
    number: object
    errcode: int
    stderr: str

    def done(self, wanted: int) -> bool:
        return self.result is not True or self.samples >= wanted


@dataclass
class RunState:
    """One (commit, environment) run: its Results, its selection, and per case what it has so far.

    ``tally`` has every case run this far (rounds read it); ``stash`` holds
    results measured ahead of their turn in another case's process (siblings);
    ``pending`` holds, per benchmark, the cases run in the current round that
    asv has not yet added to the Results (saves writes them after every case).
    """

    benchmarks: object = None  # asv's Benchmarks of the call now running: the selection
    results: object = None  # asv's Results the run adds to
    record_samples: bool = False
    append_samples: bool = False
    tally: dict[tuple[str, int], Case] = field(default_factory=dict)
    stash: dict[tuple[str, int], object] = field(default_factory=dict)
    pending: dict[str, dict[int, object]] = field(default_factory=dict)
    added: set[str] = field(default_factory=set)  # benchmarks asv has added to the Results in this run
    started_at: dict[str, object] = field(default_factory=dict)  # when each benchmark's first case started

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

    def selected(self, name: str) -> list[int]:
        """The case indices this run selected of a benchmark (every case where asv selects them all)."""
        return selected(self.benchmarks, name)


def n_cases(params: list) -> int:
    """How many cases (parameter combinations) a benchmark with these parameters has."""
    return len(list(itertools.product(*params))) if params else 1


def selected(benchmarks, name: str) -> list[int]:
    """The case indices ``benchmarks`` (asv's selection) runs of a benchmark: every case where asv selects them all."""
    chosen = benchmarks.benchmark_selection.get(name)
    return list(range(n_cases(benchmarks[name]["params"]))) if chosen is None else list(chosen)


# The variants of the cases a run selected, for its benchmark processes (kernelscope.asv.suite.preload starts
# their frameworks alone); unset where a selected benchmark has no variant parameter.
PRELOAD_ENV = "KERNELSCOPE_PRELOAD_VARIANTS"


def selected_variants(benchmarks) -> list[str] | None:
    """The variants of the cases ``benchmarks`` (asv's selection) runs; None if a benchmark has no variant parameter."""
    found = set()
    for name in benchmarks:
        benchmark = benchmarks[name]
        if (benchmark.get("param_names") or [None])[0] != "variant":
            return None
        combos = list(itertools.product(*benchmark["params"]))
        for j in selected(benchmarks, name):
            try:
                found.add(str(ast.literal_eval(combos[j][0])))  # asv keeps a parameter as its repr
            except (ValueError, SyntaxError):
                return None
    return sorted(found)


_RUNS: dict[tuple, RunState] = {}
_current: list[tuple] = []  # the (commit, environment) run_benchmarks is running now

# Each takes (benchmarks, results) and returns the case indices to keep per benchmark name (a benchmark absent from
# the answer keeps its selection): applied in order before asv starts a commit's benchmarks.
SELECTION_FILTERS: list[Callable] = []


def current_run(spawner=None) -> RunState:
    """The state of the run now in progress (outside run_benchmarks, as in a test: one per spawner)."""
    return _RUNS.setdefault(_current[-1] if _current else (id(spawner),), RunState())


def narrowed(benchmarks, keep: dict[str, list[int]]):
    """``benchmarks`` with each named benchmark's selection cut to ``keep[name]``; one left with none is dropped."""
    emptied = [name for name, idx in keep.items() if name in benchmarks and not idx]
    out = benchmarks.filter_out(set(emptied))
    selection = out._benchmark_selection
    for name, idx in keep.items():
        if name in out and name not in emptied:
            selection[name] = sorted(idx)
    return out


def track_runs() -> None:
    """Replace asv's run_benchmarks: keep each run's state, narrow its selection (idempotent)."""

    def make(run_all):
        def run_benchmarks(benchmarks, env, results=None, *args, **kwargs):
            for choose in SELECTION_FILTERS:
                keep = choose(benchmarks, results)
                if keep:
                    benchmarks = narrowed(benchmarks, keep)
            key = (getattr(results, "commit_hash", None), env.name)
            _current.append(key)
            run = current_run()
            run.benchmarks, run.results = benchmarks, results
            run.record_samples = bool(kwargs.get("record_samples"))
            run.append_samples = bool(kwargs.get("append_samples"))
            run.added, run.pending = set(), {}  # a new call: asv adds this call's benchmarks anew
            variants, before = selected_variants(benchmarks), os.environ.pop(PRELOAD_ENV, None)
            if variants:  # the forkserver asv starts now inherits it
                os.environ[PRELOAD_ENV] = ",".join(variants)
            try:
                return run_all(benchmarks, env, results, *args, **kwargs)
            finally:
                _current.pop()
                os.environ.pop(PRELOAD_ENV, None)
                if before is not None:
                    os.environ[PRELOAD_ENV] = before

        return run_benchmarks

    hooks.wrap("asv.runner:run_benchmarks", make)
