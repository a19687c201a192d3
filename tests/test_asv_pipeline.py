"""asv end to end on the CPU path: the syssite environment, the generated suite,
the result export, run-to-run comparison, and the slowdown canary."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.results import compare, export
from shared import once

ROOT = Path(__file__).resolve().parents[1]
ASV = shutil.which("asv", path=str(Path(sys.executable).parent)) or shutil.which("asv")
# 1024x1024, not the CPU path's default 64x64: at 4 us a call, fixed overhead made both
# the noise check and the doubled-work canary flaky on a shared 2-core box.
SIDE = 1024
BENCH = f"Square.time_warm.*'square-mul'.*'{SIDE}x{SIDE}'.*float32"
# One intra-op thread: on a 2-core box two threads contend with asv itself, and the
# same code read 55% slower in one of three runs.
CPU_CAP = {"KERNELSCOPE_CPU_MAX_NUMEL": str(256 * 256), "OMP_NUM_THREADS": "1"}
TURNS = 3  # rounds each result set takes, in turns with the others
# The result sets `runs` makes, each an asv environment of its own (asv's matrix): a variable names the set, and the
# slowed one's also injects the slowdown. Variables that do not touch the build (env_nobuild): one build serves all.
SETS = {"results": {}, "results-again": {}, "results-slow": {"KERNELSCOPE_INJECT_SLOWDOWN": "square-mul"}}
SET_ENV = "KERNELSCOPE_TEST_RESULTS"

pytestmark = [pytest.mark.skipif(ASV is None or not (ROOT / ".git").exists(),
                                 reason="needs asv (pip install -e '.[bench]') and a git checkout"),
              pytest.mark.xdist_group("asv-pipeline")]  # one test process makes `runs` once for all its tests


def asv(tmp_path, *args, env=None, extra=None):
    config = write_config(tmp_path, (env or {}).get("RESULTS", "results"), extra=extra)
    full_env = {**os.environ, "HOME": str(tmp_path), **CPU_CAP, **(env or {})}
    proc = subprocess.run([ASV, *args, "--config", str(config)], cwd=ROOT, env=full_env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def write_config(tmp_path, results: str, repo: Path = ROOT, extra: dict | None = None) -> Path:
    from asv.util import load_json  # asv.conf.json has comments

    project = load_json(str(ROOT / "asv.conf.json"), js_comments=True)
    conf = {
        "version": 1, "project": "kernelscope", "repo": str(repo), "branches": ["main"], "dvcs": "git",
        "environment_type": "syssite", "plugins": [".src.kernelscope.asv.env"],
        **{k: project[k] for k in ("build_command", "install_command", "uninstall_command")},  # the project's own
        "benchmark_dir": str(ROOT / "benchmarks"), "env_dir": str(tmp_path / "env"),
        "results_dir": str(tmp_path / results), "html_dir": str(tmp_path / "html"),
        "launch_method": "forkserver", "default_benchmark_timeout": 600, **(extra or {}),
    }
    (tmp_path / "asv.json").write_text(json.dumps(conf))
    if not (tmp_path / "src").exists():  # asv imports the ".src...." plugin relative to the config's folder
        (tmp_path / "src").symlink_to(ROOT / "src")
    return tmp_path / "asv.json"


# Builds and installs the commits into a new environment: asv's environment plugin, as `asv run` loads it.
INSTALL = """
import sys
from asv import environment
from asv.config import Config
from asv.plugin_manager import plugin_manager
from asv.repo import get_repo

conf = Config.load(sys.argv[1])
for plugin in conf.plugins:
    plugin_manager.import_plugin(plugin)
repo = get_repo(conf)
for env in environment.get_environments(conf, None):
    env.create()
    for commit in sys.argv[2:]:
        env.install_project(conf, repo, commit)
"""


def installed_env(tmp_path_factory, env_dir: Path, commits: tuple[str, ...], repo: Path = ROOT) -> Path:
    """Fill ``env_dir`` (write_config's env_dir) with a copy of a syssite environment that has ``commits`` built and
    the last one installed, as asv leaves it; the environment is made once a test run, for every test process.

    Creating one (a venv, a clone, then per commit pip wheel and pip install) costs an asv command seconds of its
    own before its first benchmark, and every test that runs asv on a commit started with it.
    """
    hashes = tuple(subprocess.run(["git", "rev-parse", c], cwd=repo, check=True, capture_output=True, text=True)
                   .stdout.strip() for c in commits)

    def make(folder: Path):
        config = write_config(folder, "results", repo=repo)
        proc = subprocess.run([sys.executable, "-c", INSTALL, str(config), *hashes], cwd=folder, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    name = hashlib.sha256(f"{repo.resolve()}\0{' '.join(hashes)}".encode()).hexdigest()[:16]
    shutil.copytree(once(tmp_path_factory, f"asv-env-{name}", make) / "env", env_dir, symlinks=True)
    return env_dir


_MACHINE_FILE: list[str] = []


def asv_machine(home: Path) -> None:
    """``asv machine --machine ci-cpu --yes`` with ``home`` as HOME: run once a test process, then its file copied
    (all it writes is ~/.asv-machine.json, the same for every home)."""
    if not _MACHINE_FILE:
        subprocess.run([ASV, "machine", "--machine", "ci-cpu", "--yes"], cwd=ROOT,
                       env={**os.environ, "HOME": str(home)}, check=True, capture_output=True)
        _MACHINE_FILE.append((home / ".asv-machine.json").read_text())
    (home / ".asv-machine.json").write_text(_MACHINE_FILE[0])


def existing_env_config(tmp_path, benchmark_dir: Path, name: str = "asv.json") -> Path:
    """An asv configuration that runs ``benchmark_dir``'s suite in this Python's own environment, with the
    kernelscope plugin, results under ``tmp_path / "results"``."""
    conf = {"version": 1, "project": "kernelscope", "repo": str(ROOT), "branches": ["main"], "dvcs": "git",
            "environment_type": "existing", "plugins": [".src.kernelscope.asv.env"],
            "benchmark_dir": str(benchmark_dir), "env_dir": str(tmp_path / "env"),
            "results_dir": str(tmp_path / "results"), "html_dir": str(tmp_path / "html"), "launch_method": "forkserver"}
    (tmp_path / name).write_text(json.dumps(conf))
    if not (tmp_path / "src").exists():  # asv imports the ".src...." plugin relative to the config's folder
        (tmp_path / "src").symlink_to(ROOT / "src")
    return tmp_path / name


def one_set(all_results: Path, results: Path, name: str) -> None:
    """``all_results`` copied to ``results`` with only the result files of the environment of set ``name``."""
    shutil.copytree(all_results, results)
    for path in results.glob("*/*.json"):
        if path.name != "machine.json" and json.loads(path.read_text())["env_vars"].get(SET_ENV) != name:
            path.unlink()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("asv")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    asv_machine(tmp)
    installed_env(tmp_path_factory, tmp / "env", commits=(head,))
    cap = {"KERNELSCOPE_CPU_MAX_NUMEL": str(SIDE * SIDE)}
    # The two runs of the same code take turns, each adding its samples to its own results
    # (--append-samples): a slow spell of the shared 2-core box (one run given half a core
    # read the same code 1.7-2x slower in fresh-clone CI) then falls on one turn of one
    # run, a third of its samples, and not on a whole run.
    # The slowed run takes its turns too: run alone it once fell in a quiet spell while the base's turns were
    # slow, and 2x work read 1.04x.
    # One asv command takes all the turns: each set is an environment of its own (SETS), and asv's interleaved
    # rounds run every set once a round, set after set, a process each, adding to the samples of its earlier
    # rounds: the turns of an asv run per set and turn, without an asv start and a discovery (torch) for each.
    sets = {"exclude": [{"env_nobuild": {SET_ENV: None}}],  # the matrix's own environment, without a set: not run
            "include": [{"python": f"{sys.version_info[0]}.{sys.version_info[1]}",
                         "env_nobuild": {SET_ENV: name, **extra}} for name, extra in SETS.items()]}
    out = asv(tmp, "run", "--record-samples", "--interleave-rounds", "-a", f"rounds={TURNS}", "--machine", "ci-cpu",
              "-b", BENCH, f"{head}^!", env={**cap, "RESULTS": "results-all"}, extra=sets)  # not HEAD, which may move
    assert f"(round {TURNS}/{TURNS})" in out, out[-3000:]
    for name in SETS:
        one_set(tmp / "results-all", tmp / name, name)
    asv(tmp, "run", "--record-samples", "--machine", "ci-cpu", "-b", "FirstCall.*'square-mul'", f"{head}^!",
        env={"RESULTS": "results-first"})
    return tmp, head


def test_first_call_is_one_sample_per_fresh_process_with_statistics(runs):
    tmp, head = runs
    (row,) = export.rows(tmp / "results-first")
    assert (row["variant"], row["mode"], row["commit"]) == ("square-mul", "first_call", head)
    assert row["samples"] == 3 and row["ci_low"] <= row["time_s"] <= row["ci_high"]
    assert row["gbps"] is None  # a compile-and-run time is not a bandwidth


def test_results_are_recorded_with_samples_and_exported(runs):
    tmp, head = runs
    rows = export.rows(tmp / "results")
    assert len(rows) == 1
    row = rows[0]
    assert (row["machine"], row["commit"], row["op"], row["variant"], row["mode"], row["size"], row["dtype"]) == \
        ("ci-cpu", head, "square", "square-mul", "warm", f"{SIDE}x{SIDE}", "float32")
    assert row["samples"] >= 12 and row["ci_low"] <= row["time_s"] <= row["ci_high"]
    assert row["bytes"] == 2 * 4 * SIDE * SIDE and row["gbps"] == pytest.approx(row["bytes"] / row["time_s"] / 1e9)
    assert set(row) == set(export.COLUMNS)
    assert export.to_csv(rows).splitlines()[0] == ",".join(export.COLUMNS)


def test_the_same_code_twice_is_not_flagged(runs):
    tmp, head = runs
    # factor 1.5, as the CPU canary's: a shared 2-core box is noisier than a GPU, whose runs are
    # judged at asv's 1.1 (bench.sh twice)
    rows = compare.compare_runs(tmp / "results", tmp / "results-again", commit=head, factor=1.5)
    assert len(rows) == 1 and rows[0]["mark"] == " ", rows
    assert rows[0]["samples_a"] >= TURNS * 12  # every turn's samples, not the last one's


def test_injected_slowdown_is_flagged(runs):
    tmp, head = runs
    rows = compare.compare_runs(tmp / "results", tmp / "results-slow", commit=head)
    assert rows[0]["mark"] == "+" and rows[0]["ratio"] > 1.1, rows
    stats = compare.summary(rows)
    assert stats["flagged_worse"] == 1 and stats["by_mode"]["warm"]["flagged_worse"] == 1
    assert set(stats["by_mode"]) == {"warm"}


def test_a_run_cut_off_keeps_what_it_finished_and_goes_on_from_there(tmp_path, tmp_path_factory):
    # asv saves a commit's results only after its last benchmark; the syssite plugin saves after each one.
    import json as json_
    import signal
    import time

    from test_asv_saves import _descendants

    bench = "(Square|Mean|Softmax|Gelu)\\.time_warm.*'(square-mul|mean-torch|softmax-torch|gelu-torch)'"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    asv_machine(tmp_path)
    installed_env(tmp_path_factory, tmp_path / "env", commits=(head,))
    args = [ASV, "run", "--machine", "ci-cpu", "--config", str(write_config(tmp_path, "results")), "-b", bench,
            f"{head}^!"]  # not HEAD: the resumed run must run the same commit
    env = {**os.environ, "HOME": str(tmp_path), **CPU_CAP}
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    files = []
    try:
        deadline = time.time() + 600
        while time.time() < deadline and proc.poll() is None:
            files = [p for p in (tmp_path / "results" / "ci-cpu").glob("*.json") if p.name != "machine.json"]
            if files:
                break
            time.sleep(0.05)
        below = _descendants(proc.pid)  # asv's forkserver, in a session of its own, and the case in flight
        os.killpg(proc.pid, signal.SIGTERM)  # cut off after the first save: the next benchmarks are still to run
        for pid in below:  # not left behind, idle, with torch imported, for the rest of the test run
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    finally:
        proc.wait(timeout=120)
    assert len(files) == 1, "no result was saved before the run ended"
    saved = json_.loads(files[0].read_text())  # whole: a save is written aside and renamed over the file
    finished = set(saved["results"])
    assert finished and len(finished) < 4, finished
    started = {k: dict(zip(saved["result_columns"], v))["started_at"] for k, v in saved["results"].items()}

    asv(tmp_path, "run", "--machine", "ci-cpu", "--skip-existing-successful", "-b", bench, f"{head}^!")
    resumed = json_.loads(files[0].read_text())
    assert len(resumed["results"]) == 4
    for name in finished:  # what the cut-off run finished is kept, not measured again
        assert dict(zip(resumed["result_columns"], resumed["results"][name]))["started_at"] == started[name]
    assert not list((tmp_path / "results").rglob("*.partial"))


def test_an_old_commits_left_out_kernel_sources_are_installed_from_its_tree(tmp_path):
    # Some older commits' wheels lack pack16.cuh: a history run of such a commit
    # fails every CUDA variant unless the environment fills it in.
    pytest.importorskip("asv")
    from kernelscope.asv.env import add_left_out_sources

    tree = tmp_path / "build" / "src" / "kernelscope" / "backends" / "cuda"
    tree.mkdir(parents=True)
    for name, text in {"square.cu": "tree", "pack16.cuh": "header", "kernels.py": "x = 1"}.items():
        (tree / name).write_text(text)
    (tmp_path / "build" / "src" / "kernelscope" / "extra").mkdir()
    (tmp_path / "build" / "src" / "kernelscope" / "extra" / "lone.cu").write_text("")
    installed = tmp_path / "site" / "kernelscope" / "backends" / "cuda"
    installed.mkdir(parents=True)
    (installed / "square.cu").write_text("wheel")

    added = add_left_out_sources(str(tmp_path / "build"), str(tmp_path / "site"))

    assert added == ["backends/cuda/pack16.cuh"]
    assert (installed / "pack16.cuh").read_text() == "header"
    assert (installed / "square.cu").read_text() == "wheel"  # the wheel's own files win
    assert not (installed / "kernels.py").exists()  # modules are the wheel's business
    assert not (tmp_path / "site" / "kernelscope" / "extra").exists()
    assert add_left_out_sources(str(tmp_path / "build"), str(tmp_path / "site")) == []


def test_the_environment_imports_the_commit_it_points_at_and_no_older_copy(tmp_path):
    # A commit's install stays in a folder of its own; switching commits rewrites one .pth line, relative to
    # site-packages (a copied environment keeps working), and a copy an older install command put into
    # site-packages itself, which would come first on the path, goes.
    pytest.importorskip("asv")
    from kernelscope.asv.env import COMMIT_PTH, point_at

    site = tmp_path / "env" / "lib" / "site-packages"
    for where, who in ((site, "old"), (tmp_path / "env" / "cache" / "A" / "installed", "A"),
                       (tmp_path / "env" / "cache" / "B" / "installed", "B")):
        (where / "kernelscope").mkdir(parents=True)
        (where / "kernelscope" / "__init__.py").write_text(f"WHO = {who!r}\n")
    (site / "kernelscope-0.1.0.dist-info").mkdir()
    (site / "other-1.0.dist-info").mkdir()

    def imported() -> str:  # without the test's own site: only the environment's
        code = f"import site; site.addsitedir({str(site)!r}); import kernelscope; print(kernelscope.WHO)"
        return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, check=True).stdout.strip()

    point_at(str(site), str(tmp_path / "env" / "cache" / "A" / "installed"))
    assert sorted(p.name for p in site.iterdir()) == [COMMIT_PTH, "other-1.0.dist-info"]
    assert (site / COMMIT_PTH).read_text() == "../../cache/A/installed\n"
    assert imported() == "A"
    point_at(str(site), str(tmp_path / "env" / "cache" / "B" / "installed"))
    assert imported() == "B" and (tmp_path / "env" / "cache" / "A" / "installed" / "kernelscope").is_dir()


def test_an_install_command_that_names_no_folder_of_the_commit_is_refused():
    pytest.importorskip("asv")
    from asv.util import UserError

    from kernelscope.asv.env import SystemSitePackages

    env = type("Env", (), {"_install_command": ["python -m pip install --force-reinstall {wheel_file}"]})()
    with pytest.raises(UserError, match=r"install_command must install into \{install_dir\}"):
        SystemSitePackages._install_project(env, None, "c0ffee", "/build")
