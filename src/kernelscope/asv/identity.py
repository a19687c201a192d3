"""Benchmarks that keep their names across commits: parameters and versions from the working tree, code from the commit.

asv discovers a suite once per command and starts each case as
``Class.method-INDEX``; the benchmark process turns the index back into
parameters with its own classes (asv_runner's ``set_param_idx``). kernelscope
generates its classes from the catalog of the installed package, that is, of
the commit being measured. So when ``asv run A..B``, ``asv continuous`` or
``asv find`` crosses a commit that inserts, removes or reorders a variant, a
size or a dtype, an index named one case at discovery and runs another in the
process: the value is stored under the wrong name, or the case fails with
"Invalid benchmark parameter permutation index".

As in numpy's and scipy's suites, the working tree says what the benchmarks
are. ``benchmarks/benchmarks.py`` builds its classes here, with the parameters
and versions of the working tree's suite and the code of the installed commit:

* a case the commit has runs with the commit's code, under the name the working
  tree gives it;
* a case the commit lacks (a variant added later, a size dropped) is skipped in
  its setup, and asv stores n/a;
* a benchmark the commit lacks, or measures differently (another version), is
  skipped before its setup: n/a too, never a value of another measurement;
* parameters that say where a case ran rather than what it is (``host``) are
  the working tree's, and a commit whose suite predates them runs on this host
  all the same.

This file is loaded by path from the working tree, not imported as
``kernelscope.asv.identity``: the kernelscope a benchmark process imports is
the commit under test, which may predate it. So it uses the standard library
alone. It learns the working tree's suite by running the tree's own
``kernelscope.asv.suite.describe`` (in-process when the installed package is
the working tree, else in a subprocess with the tree's ``src/`` first on the
path, cached per content of the tree).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import itertools
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

# Where a commit's suite module lives, newest layout first.
SUITE_MODULES = ("kernelscope.asv.suite", "kernelscope.timing.asv_suite")
BOX_PARAMS = ("host",)  # parameters that say where a case ran, not what it is
BENCHMARK_PREFIXES = ("time_", "track_", "peakmem_", "mem_", "timeraw_")

try:
    from asv_runner.benchmarks.mark import SkipNotImplemented
except ImportError:  # described outside asv (the tests)
    SkipNotImplemented = NotImplementedError


def package_fingerprint(package_dir: Path) -> str:
    """A hash of a kernelscope package's Python files: equal for the same code, wherever it is installed."""
    digest = hashlib.sha256()
    for path in sorted(Path(package_dir).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(path.relative_to(package_dir).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def installed_suite():
    """The suite module of the installed kernelscope (the commit under test), whatever its layout."""
    for name in SUITE_MODULES:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name not in (name, name.rsplit(".", 1)[0]):
                raise  # the module is there but needs something missing: say so
    raise ModuleNotFoundError(f"no kernelscope suite installed (looked for {', '.join(SUITE_MODULES)})")


def _describe_in_subprocess(src: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="kernelscope-describe-") as tmp:
        out = Path(tmp) / "suite.json"
        code = ("import json, sys; from kernelscope.asv import suite; "
                "open(sys.argv[1], 'w').write(json.dumps(suite.describe()))")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(src), os.environ.get("PYTHONPATH")) if p)}
        proc = subprocess.run([sys.executable, "-c", code, str(out)], env=env, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"kernelscope: describing the working tree's suite ({src}) failed:\n{proc.stderr[-3000:]}")
        return json.loads(out.read_text())


def describe_tree(root: Path, suite=None, installed: dict | None = None) -> dict:
    """The working tree's suite (``kernelscope.asv.suite.describe``), for the tree at ``root``."""
    src = Path(root) / "src"
    tree = package_fingerprint(src / "kernelscope")
    key = hashlib.sha256(f"{tree}\0{socket.gethostname()}".encode()).hexdigest()[:24]
    cache = Path(tempfile.gettempdir()) / f"kernelscope-suites-{os.getuid()}" / f"{key}.json"
    if suite is not None and hasattr(suite, "describe") and suite.__file__:
        here = Path(suite.__file__).resolve().parents[1]  # kernelscope/ of the installed package
        if package_fingerprint(here) == tree:
            description = suite.describe(installed)
            if not cache.exists():  # for a later process of another commit (asv continuous's base, a range's rest)
                _store(cache, description)
            return description
    if cache.exists():
        return json.loads(cache.read_text())
    description = _describe_in_subprocess(src)
    _store(cache, description)
    return description


def _store(cache: Path, description: dict) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(f".{os.getpid()}.partial")
    partial.write_text(json.dumps(description))
    os.replace(partial, cache)


def _absent(method: str, info: dict, params: list, why: str):
    """A stand-in for a benchmark the commit cannot run as the working tree defines it: asv records n/a."""

    def absent(self, *values):
        raise SkipNotImplemented(why)

    absent.__name__ = absent.__qualname__ = method
    absent.version = info["version"]
    if info.get("unit"):
        absent.unit = info["unit"]
    # Skipped before the class's setup, so no case is prepared for nothing (asv_runner's skip_params).
    absent.skip_params = [tuple(c) for c in itertools.product(*params)]
    return absent


def _translated(impl, pick: list[int]):
    """A commit's benchmark method called with the working tree's parameters, picked and reordered to its own."""

    @functools.wraps(impl)
    def run(self, *values):
        return impl(self, *(values[i] for i in pick))

    return run


def stable_class(name: str, description: dict, base: type | None) -> type:
    """The class asv sees for ``name``: ``description``'s parameters and versions, ``base``'s code (None: absent)."""
    names, params = description["param_names"], description["params"]
    namespace = {"params": params, "param_names": names, "__module__": "benchmarks.benchmarks",
                 "__doc__": getattr(base, "__doc__", None)}
    why = None
    if base is None:
        why = f"{name}: not in the suite of the commit measured"
    else:
        own = list(getattr(base, "param_names", []))
        if any(n not in names for n in own) or any(n not in own and n not in BOX_PARAMS for n in names):
            why = f"{name}: its parameters at the commit measured are ({', '.join(own)}), not ({', '.join(names)})"
    if why:
        for method, info in description["methods"].items():
            namespace[method] = _absent(method, info, params, why)
        return type(name, (), namespace)

    pick = [names.index(n) for n in own]
    what = [names.index(n) for n in own if n not in BOX_PARAMS]  # the values that say which case it is
    own_params = list(getattr(base, "params", []))
    if own_params and not isinstance(own_params[0], (list, tuple)):
        own_params = [own_params]  # asv's shorthand for one parameter
    kept = [i for i, n in enumerate(own) if n not in BOX_PARAMS]
    cases = {tuple(c[i] for i in kept) for c in itertools.product(*own_params)}
    base_setup, base_teardown = getattr(base, "setup", None), getattr(base, "teardown", None)

    def setup(self, *values):
        if tuple(values[i] for i in what) not in cases:
            raise NotImplementedError(f"{name}({', '.join(map(repr, values))}): not a case of the commit measured")
        self._kernelscope_set_up = True
        if base_setup is not None:
            base_setup(self, *(values[i] for i in pick))

    def teardown(self, *values):
        if getattr(self, "_kernelscope_set_up", False) and base_teardown is not None:
            base_teardown(self, *(values[i] for i in pick))

    namespace.update(setup=setup, teardown=teardown)
    for method, info in description["methods"].items():
        impl = getattr(base, method, None)
        if impl is None:
            namespace[method] = _absent(method, info, params, f"{name}.{method}: not in the suite of the commit measured")
        elif str(getattr(impl, "version", "")) != info["version"]:
            namespace[method] = _absent(method, info, params,
                                        f"{name}.{method}: version {getattr(impl, 'version', None)} at the commit "
                                        f"measured, {info['version']} in the working tree: another measurement")
        elif pick != list(range(len(names))):
            namespace[method] = _translated(impl, pick)
    for method in dir(base):  # what the commit has and the working tree dropped: not a benchmark here
        if method.startswith(BENCHMARK_PREFIXES) and method not in description["methods"]:
            namespace[method] = None
    return type(name, (base,), namespace)


def stable_classes(description: dict, installed: dict[str, type]) -> dict[str, type]:
    return {name: stable_class(name, desc, installed.get(name)) for name, desc in description.items()}


def benchmarks(benchmark_dir: str | Path) -> dict[str, type]:
    """What ``benchmarks/benchmarks.py`` puts in its namespace: the stable classes for the tree above it."""
    suite = installed_suite()
    getattr(suite, "preload", lambda: None)()  # older commits lack it
    installed = suite.build()
    description = describe_tree(Path(benchmark_dir).resolve().parent, suite, installed)
    return stable_classes(description, installed)
