"""asv's multi-commit commands file every value under the case that produced it (kernelscope.asv.identity).

A small git history is built in a temporary folder from this working tree: its
second commit inserts, removes and reorders square's variants and sizes. Each
variant sleeps a time that names its case (its own base, plus one for the size),
so a stored value says which case ran: a value filed under another case's name
is off by 10 ms or more.
"""

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from test_asv_pipeline import ASV, ROOT, asv_machine, installed_env, write_config

pytestmark = [pytest.mark.skipif(ASV is None or shutil.which("git") is None, reason="needs asv and git"),
              pytest.mark.xdist_group("asv-history")]  # one test process makes `history` once; its runs one at a time

BASE_MS = {"a": 20, "b": 50, "c": 80, "d": 110}
EXTRA_MS = {"16x16": 0, "32x32": 10, "64x64": 20}
# A sleep overruns, never underruns; the nearest other case is 10 ms away. A loaded machine (the other test
# process building a site) can wake a sleeper late for several ms, so the bound is checked on the fastest of a
# case's samples (all of them late is what it takes to fail) and the median only from below.
SLACK_MS = 9.5

SLEEPERS = '''"""Test-only variants whose time names their case."""
import time

import torch

EXTRA_MS = {256: 0, 1024: 10, 4096: 20}


def _sleeper(base_ms):
    def run(x):
        time.sleep((base_ms + EXTRA_MS[x.numel()]) / 1000)
        return torch.square(x)
    return run


''' + "\n".join(f"{k} = _sleeper({v})" for k, v in BASE_MS.items()) + "\n"


def _catalog_tail(variants: list[str], sizes: list[str]) -> str:
    shapes = ", ".join(f"({s.replace('x', ', ')})" for s in sizes)
    return f'''

# --- a test history: square's variants and sizes replaced by sleepers ---
import dataclasses as _dataclasses

VARIANTS = {{k: v for k, v in VARIANTS.items() if v.op != "square"}}
for _name in {variants!r}:
    VARIANTS[f"square-sleep-{{_name}}"] = Variant(f"square-sleep-{{_name}}", "square", "torch", "sleeps",
                                                f"kernelscope.backends.sleepers:{{_name}}")
OPS["square"] = _dataclasses.replace(OPS["square"], bench_shapes=({shapes},))
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A repository of three commits: the tree as it is; sleepers a, b, c at 16x16 and 32x32; then d inserted
    first, b removed, the rest reordered (c, d, a), 64x64 inserted and the sizes reordered (32x32, 64x64, 16x16)."""
    repo = tmp_path_factory.mktemp("history") / "repo"
    repo.mkdir()
    for name in ("src", "benchmarks"):
        shutil.copytree(ROOT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, repo / name)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "test@kernelscope")
    _git(repo, "config", "user.name", "test")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    catalog = repo / "src" / "kernelscope" / "catalog.py"
    original = catalog.read_text()
    (repo / "src" / "kernelscope" / "backends" / "sleepers.py").write_text(SLEEPERS)
    catalog.write_text(original + _catalog_tail(["a", "b", "c"], ["16x16", "32x32"]))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "sleepers a, b, c at two sizes")
    catalog.write_text(original + _catalog_tail(["c", "d", "a"], ["32x32", "64x64", "16x16"]))
    _git(repo, "commit", "-q", "-am", "d inserted, b removed, the rest reordered; a size inserted, sizes reordered")
    commits = _git(repo, "rev-list", "--reverse", "HEAD").split()
    return repo, commits


def _asv(repo: Path, home: Path, *args: str, returncodes=(0,)):
    config = write_config(home, "results", repo=repo)
    conf = json.loads(config.read_text())
    conf["benchmark_dir"] = str(repo / "benchmarks")  # the working tree's: the history's last commit
    config = repo / "asv.test.json"  # beside src/: asv imports the plugin relative to the configuration
    config.write_text(json.dumps(conf))
    env = {**os.environ, "HOME": str(home)}
    asv_machine(home)
    proc = subprocess.run([ASV, *args, "--config", str(config)], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode in returncodes, proc.stdout[-4000:] + proc.stderr[-3000:]
    return proc


# repeat=3, with the samples kept: a case's three sleeps are checked against its own name
TIMING = ["-a", "repeat=3", "-a", "number=1", "-a", "warmup_time=0", "--record-samples"]


def _stored(home: Path, commit: str) -> dict[tuple[str, str], tuple[float | None, list | None]]:
    """(median, samples) by (variant, size), as stored."""
    (path,) = (home / "results" / "ci-cpu").glob(f"{commit[:8]}-*.json")
    data = json.loads(path.read_text())
    row = dict(zip(data["result_columns"], data["results"]["benchmarks.Square.time_warm"]))
    variants, sizes, _ = row["params"]
    labels = [(json.loads(v.replace("'", '"')), json.loads(s.replace("'", '"'))) for v in variants for s in sizes]
    return dict(zip(labels, zip(row["result"], row.get("samples") or [None] * len(labels))))


def _check_labels(stored: dict, runnable: set[tuple[str, str]]):
    for (variant, size), (value, samples) in stored.items():
        if (variant, size) not in runnable:
            assert value is not None and math.isnan(value), (variant, size, value)  # n/a: never another case's value
            assert not samples, (variant, size, samples)
            continue
        expected = BASE_MS[variant.rsplit("-", 1)[1]] + EXTRA_MS[size]
        assert value is not None and samples, (variant, size)  # measured, not failed
        assert expected <= value * 1e3, (variant, size, value * 1e3, expected)
        assert expected <= min(samples) * 1e3 < expected + SLACK_MS, (variant, size, samples, expected)


def test_a_range_run_files_every_value_under_its_case_and_skips_what_a_commit_lacks(history, tmp_path,
                                                                                     tmp_path_factory):
    repo, (base, first, second) = history
    installed_env(tmp_path_factory, tmp_path / "env", repo=repo, commits=(first, second))  # made once for both tests
    _asv(repo, tmp_path, "run", "--machine", "ci-cpu", "-b", r"Square\.time_warm", *TIMING, f"{base}..{second}")
    at_first, at_second = _stored(tmp_path, first), _stored(tmp_path, second)
    cases = {(f"square-sleep-{v}", s) for v in "cda" for s in ("32x32", "64x64", "16x16")}
    assert set(at_first) == set(at_second) == cases  # the working tree's cases, at both commits
    _check_labels(at_second, cases)
    _check_labels(at_first, {(f"square-sleep-{v}", s) for v in "ca" for s in ("32x32", "16x16")})


def test_asv_continuous_across_the_change_compares_each_case_with_itself(history, tmp_path, tmp_path_factory):
    repo, (_, first, second) = history
    installed_env(tmp_path_factory, tmp_path / "env", repo=repo, commits=(first, second))
    proc = _asv(repo, tmp_path, "continuous", "-v", "--machine", "ci-cpu", "-b", r"Square\.time_warm", *TIMING,
                first, second, returncodes=(0, 1))
    # Each commit's values are its own, though asv's turns alternate between the commits (A B, B A, A B) and each
    # came back to its commit's forkserver, kept from its earlier turn
    _check_labels(_stored(tmp_path, second), {(f"square-sleep-{v}", s) for v in "cda" for s in ("32x32", "64x64", "16x16")})
    _check_labels(_stored(tmp_path, first), {(f"square-sleep-{v}", s) for v in "ca" for s in ("32x32", "16x16")})
    servers = set(re.findall(r"run_server \S+ (\S+/socket)", proc.stdout))  # what -v prints of asv's forkservers
    assert "(round 3/3)" in proc.stdout and len(servers) == 2, proc.stdout[-4000:]
    # both commits were installed when the environment was made: a turn only points it at the other's folder
    assert "Installing" not in proc.stdout, proc.stdout[-4000:]
    assert "Invalid benchmark parameter" not in proc.stdout
    assert "SOME BENCHMARKS HAVE CHANGED SIGNIFICANTLY" not in proc.stdout, proc.stdout[-3000:]
