"""Every private name of asv and asv_runner that kernelscope relies on, in one list, checked before use.

asv's public face is its commands, its configuration, environment plugins and
the benchmark attributes its runner exports. kernelscope needs a little more
(results saved after every case, a case's other modes measured in its process,
further rounds only where a case needs them), and each of those reaches into a
name asv does not promise to keep. They are all listed in :data:`HOOKS`, with
what uses them and why; :func:`wrap` is the only way the integration replaces
one, and :func:`require` fails with one clear message, naming every missing
name and the versions they were checked on, when an installed asv or
asv_runner lacks any of them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from importlib import metadata

CHECKED_ON = {"asv": "0.6.6", "asv_runner": "0.3.2"}  # what pyproject.toml's [bench] extra pins


@dataclass(frozen=True)
class Hook:
    target: str  # "module:Attr.path"; "module:Class().attr" names an attribute of an instance
    used_by: str  # the kernelscope module that needs it
    why: str

    @property
    def package(self) -> str:
        return self.target.split(".", 1)[0].split(":", 1)[0]


HOOKS: tuple[Hook, ...] = (
    Hook("asv.runner:_run_benchmark_single_param", "rounds, siblings, saves",
         "runs one case in one process: where a case is skipped, served from a sibling's process, or saved"),
    Hook("asv.runner:run_benchmarks", "rounds, saves, forkservers",
         "runs one commit's benchmarks in one environment: which commit a case belongs to, its Results, rounds to come"),
    Hook("asv.commands.run:run_benchmarks", "rounds, saves, forkservers", "the same function, imported there by name"),
    Hook("asv.runner:BenchmarkResult", "rounds, siblings, saves", "what a case's run returns to asv"),
    Hook("asv.runner:get_spawner", "forkservers",
         "starts a call's forkserver: one kept from the call before, where the same commit's rounds follow each other"),
    Hook("asv.commands.run:Run.run", "saves", "whether the command resumes (--skip-existing-successful)"),
    Hook("asv.environment:Environment._install_project", "env",
         "installs a built commit: here into a folder of the commit's own, which the environment then points at"),
    Hook("asv.environment:Environment._get_install_checksum", "env",
         "what an install depends on (the commands among it): a commit's folder is installed again when it changes"),
    Hook("asv.results:Results.load_data", "saves", "which results folder a run loaded, and will save to"),
    Hook("asv.results:Results.add_result", "saves", "a benchmark's results added: its cases no longer pending"),
    Hook("asv.results:Results.save", "saves, intervals", "saving: after every case, merged under a lock, intervals widened"),
    Hook("asv.results:Results()._filename", "saves", "the result file's path inside the results folder"),
    Hook("asv.results:Results()._results", "saves", "per benchmark, the value of each case"),
    Hook("asv.results:Results()._samples", "saves, intervals", "per benchmark, the samples of each case"),
    Hook("asv.results:Results()._stats", "saves, intervals", "per benchmark, the statistics of each case"),
    Hook("asv.results:Results()._benchmark_version", "saves", "per benchmark, the version its values were taken at"),
    Hook("asv.results:Results()._benchmark_params", "saves", "per benchmark, the parameters its values are of"),
    Hook("asv.results:Results()._started_at", "saves", "per benchmark, when it started"),
    Hook("asv.results:Results()._duration", "saves", "per benchmark, and the run's build, how long it took"),
    Hook("asv.results:Results()._profiles", "saves", "per benchmark, its profile (asv run --profile)"),
    Hook("asv.benchmarks:Benchmarks()._benchmark_selection", "saves",
         "per benchmark, the case indices a run selects: narrowed to one GPU's share, or to what a resume lacks"),
    Hook("asv.util:write_json", "saves", "every JSON file asv writes, written aside and renamed over the old one"),
    Hook("asv_runner.server:_run", "sibling_process", "runs one case in a forked benchmark process"),
    Hook("asv_runner.benchmarks.time:TimeBenchmark._setup_isolates_timed_calls", "suite",
         "asv_runner re-runs setup between timed calls when a class has setup; the suite's setup is idempotent"),
    Hook("asv_runner.benchmarks._base:Benchmark._collect_dynamic_attrs", "rounds, siblings",
         "exports a benchmark's own attributes (rounds, enough_samples, also_runs) to asv's discovery"),
)


class MissingHook(RuntimeError):
    """An installed asv or asv_runner lacks a name the integration needs."""


def _resolve(target: str):
    """(owner, attribute name) of a target; AttributeError/ImportError if it is not there."""
    module_name, _, path = target.partition(":")
    owner = importlib.import_module(module_name)
    parts = path.split(".")
    for part in parts[:-1]:
        if part.endswith("()"):
            owner = _instantiate(getattr(owner, part[:-2]))
        else:
            owner = getattr(owner, part)
    if not hasattr(owner, parts[-1]):
        raise AttributeError(f"{target}: no such name")
    return owner, parts[-1]


def _instantiate(cls):
    if cls.__name__ == "Results":
        return cls.unnamed()
    if cls.__name__ == "Benchmarks":
        return cls(_Conf(), [])
    return cls()


class _Conf:  # what asv.benchmarks.Benchmarks reads of a configuration to make an empty one
    benchmark_dir = "."


def _installed(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def missing(package: str | None = None) -> list[Hook]:
    """The hooks (of ``package``, or all) that the installed asv and asv_runner lack."""
    lacking = []
    for hook in HOOKS:
        if package is not None and hook.package != package:
            continue
        try:
            _resolve(hook.target)
        except (AttributeError, ImportError, TypeError):
            lacking.append(hook)
    return lacking


def require(package: str | None = None) -> None:
    """Raise :class:`MissingHook`, naming every missing name, if the installed asv (or asv_runner) lacks any."""
    lacking = missing(package)
    if not lacking:
        return
    packages = sorted({h.package for h in lacking})
    versions = ", ".join(f"{p} {_installed(p)} installed (checked on {CHECKED_ON[p]})" for p in packages)
    names = "\n".join(f"  {h.target}: {h.why} ({h.used_by})" for h in lacking)
    raise MissingHook(f"kernelscope's asv integration needs names this asv does not have: {versions}.\n{names}\n"
                      f"Install the checked versions: pip install -e '.[bench]'")


def wrap(target: str, make) -> None:
    """Replace a listed hook by ``make(original)``, once: a second call with the same ``make`` does nothing.

    A function target listed twice (``run_benchmarks``, imported by name elsewhere) is replaced everywhere it is listed.
    """
    if not any(h.target == target for h in HOOKS):
        raise KeyError(f"{target} is not in kernelscope.asv.hooks.HOOKS: list it there first")
    owner, name = _resolve(target)
    current = getattr(owner, name)
    original = current.__func__ if isinstance(owner.__dict__.get(name), classmethod) else current
    marks = getattr(original, "_kernelscope_wrapped_by", ())
    if make.__qualname__ in marks:
        return
    new = make(original)
    new._kernelscope_wrapped_by = (*marks, make.__qualname__)
    setattr(owner, name, classmethod(new) if isinstance(owner.__dict__.get(name), classmethod) else new)
    for hook in HOOKS:  # the same function imported by name into another module
        other_module, _, other_path = hook.target.partition(":")
        if hook.target != target and "." not in other_path and other_path == name:
            module = importlib.import_module(other_module)
            if getattr(module, other_path) is current:
                setattr(module, other_path, new)
