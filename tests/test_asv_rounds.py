"""asv's rounds that stop once a case has enough samples (kernelscope.asv.rounds), through real asv runs."""

import json
import os
import subprocess
import sys

import pytest

from test_asv_pipeline import ASV, ROOT, asv_machine, existing_env_config, installed_env, write_config

pytestmark = [pytest.mark.skipif(ASV is None or not (ROOT / ".git").exists(),
                                 reason="needs asv (pip install -e '.[bench]') and a git checkout"),
              pytest.mark.xdist_group("asv-rounds")]  # one test process makes `stored`'s two runs once
SUITE = ROOT / "tests" / "fixtures" / "asv_rounds" / "benchmarks"


# asv run does all rounds of a commit in one call of its runner; asv continuous (and
# --interleave-rounds) calls it once per round, each time with the results reloaded from disk.
@pytest.fixture(scope="module", params=["rounds in one call", "interleaved rounds"])
def stored(tmp_path_factory, request):
    tmp = tmp_path_factory.mktemp("rounds")
    interleaved = request.param == "interleaved rounds"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    if interleaved:  # interleaving needs a real environment: the syssite one, as the GPU runs use
        installed_env(tmp_path_factory, tmp / "env", commits=(head,))
        config = write_config(tmp, "results")
        conf = json.loads(config.read_text())
        conf["benchmark_dir"] = str(SUITE)
        config.write_text(json.dumps(conf))
        how = ["--interleave-rounds", f"{head}^!"]
    else:
        conf = {
            "version": 1, "project": "kernelscope", "repo": str(ROOT), "branches": ["main"], "dvcs": "git",
            "environment_type": "existing", "plugins": [".src.kernelscope.asv.env"],
            "benchmark_dir": str(SUITE), "env_dir": str(tmp / "env"), "results_dir": str(tmp / "results"),
            "html_dir": str(tmp / "html"), "launch_method": "forkserver",
        }
        config = tmp / "asv.json"
        config.write_text(json.dumps(conf))
        (tmp / "src").symlink_to(ROOT / "src")  # asv imports the ".src...." plugin relative to the config's folder
        how = ["-E", f"existing:{sys.executable}", "--set-commit-hash", head]
    env = {**os.environ, "HOME": str(tmp)}
    asv_machine(tmp)
    proc = subprocess.run([ASV, "run", "--config", str(config), "--machine", "ci-cpu", "--record-samples",
                           "--show-stderr", *how], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 2), proc.stdout[-3000:] + proc.stderr[-3000:]  # 2: the broken case failed
    if interleaved:
        assert "(round 3/3)" in proc.stdout, proc.stdout[-2000:]
    (path,) = (tmp / "results" / "ci-cpu").glob(f"{head[:8]}-*.json")
    data = json.loads(path.read_text())
    columns = data["result_columns"]
    return {name: dict(zip(columns, row)) for name, row in data["results"].items()}, proc


def _case(stored, name, i):
    results, _ = stored
    row = results[name]
    return row["result"][i], row["samples"][i]


def test_a_one_sample_case_runs_in_as_many_processes_as_it_needs(stored):
    result, samples = _case(stored, "benchmarks.Track.track_pid", 0)
    assert len(samples) == 3 and len(set(samples)) == 3  # three samples, three processes
    result, samples = _case(stored, "benchmarks.Time.time_nothing", 0)
    assert len(samples) == 3


def test_a_case_with_enough_samples_runs_once(stored):
    result, samples = _case(stored, "benchmarks.Track.track_pid", 1)
    assert len(samples) == 12 and len(set(samples)) == 1  # all from its first process: no second one was started
    result, samples = _case(stored, "benchmarks.Time.time_nothing", 1)
    assert len(samples) == 12


def test_a_failure_and_a_skip_stay_what_they_were_with_their_reason(stored):
    results, proc = stored
    assert _case(stored, "benchmarks.Track.track_pid", 2)[0] is None  # failed
    result = _case(stored, "benchmarks.Track.track_pid", 3)[0]
    assert result is not None and result != result  # NaN: skipped
    assert proc.stdout.count("broken: the gate refused it") >= 1, proc.stdout[-3000:]


def test_benchmarks_without_the_attribute_run_every_round(stored):
    result, samples = _case(stored, "benchmarks.Plain.track_pid", 0)
    assert len(samples) == 4 and len(set(samples)) == 2  # asv's own rounds: two processes, two samples each


# --- one forkserver for a commit's rounds that follow each other (kernelscope.asv.forkservers) -------------------

def test_a_commits_rounds_are_forked_from_one_forkserver(stored):
    # asv run serves all rounds from one; interleaved, each round is a call of its own that keeps it for the next
    _, ppids = _case(stored, "benchmarks.Server.track_ppid", 0)
    assert len(ppids) == 3 and len(set(ppids)) == 1, ppids


class _Server:
    def __init__(self):
        self.interrupted, self.closed, self.alive = False, 0, True
        self.server_proc = self

    def poll(self):
        return None if self.alive else 0

    def preimport(self):
        return True, ""

    def run(self, *args):
        return "ran"

    def close(self):
        self.closed += 1


class _Env:
    name, _path, env_vars = "syssite-py3", "/env", {}

    def __init__(self, commit):
        self.installed_commit_hash = commit


def test_a_kept_forkserver_serves_only_later_rounds_of_what_it_was_started_for(monkeypatch, tmp_path):
    pytest.importorskip("asv")
    from kernelscope.asv import forkservers

    monkeypatch.setattr(forkservers, "_KEPT", [])
    started = []

    def get_spawner(env, benchmark_dir, launch_method):
        started.append(_Server())
        return started[-1]

    def call(commit, more_rounds, launch_method="forkserver", benchmark_dir=tmp_path):
        monkeypatch.setattr(forkservers, "_MORE_ROUNDS", [more_rounds])
        spawner = forkservers.spawner_for(get_spawner, _Env(commit), str(benchmark_dir), launch_method)
        spawner.close()  # as run_benchmarks does at its end
        return spawner.server_proc

    a = call("A", True)
    assert call("A", True) is a and a.closed == 0  # the same commit's next round: kept
    b = call("B", True)
    assert b is not a and a.closed == 0  # another commit: a fresh one, and A's stays for A's next turn
    assert call("A", True) is a and call("B", True) is b and len(started) == 2  # asv continuous's turns
    c = call("B", True, benchmark_dir=tmp_path / "other")
    assert c not in (a, b)  # another suite
    monkeypatch.setenv("KERNELSCOPE_PRELOAD_VARIANTS", "square-mul")
    d = call("B", True)
    assert d not in (a, b, c)  # another environment for the benchmark processes
    assert [s.closed for s in (a, b, c, d)] == [0, 0, 0, 0]
    e = call("C", True)  # a fifth: the least recently used (A's) is stopped
    assert len(forkservers._KEPT) == forkservers.KEPT_MAX and a.closed == 1 and b.closed == 0
    monkeypatch.delenv("KERNELSCOPE_PRELOAD_VARIANTS")
    b.alive = False
    f = call("B", True)
    assert f is not b and b.closed == 1  # a server that died is not used again
    assert call("B", False) is f and f.closed == 1  # the last round's call stops it
    assert call("B", False) is not f and started[-1].closed == 1  # nothing kept after it
    assert call("B", True, launch_method="spawn").closed == 1  # only forkservers are kept
    assert c.closed == d.closed == e.closed == 0
    forkservers.stop_kept()  # what asv's exit does
    assert forkservers._KEPT == [] and all(s.closed == 1 for s in started)

    # A round in which every case already has its samples starts none, and leaves the kept ones for a later round
    g = call("B", True)
    monkeypatch.setattr(forkservers, "_runs_nothing", lambda: True)
    n = len(started)
    idle = forkservers.spawner_for(get_spawner, _Env("A"), str(tmp_path), "forkserver")
    assert idle.preimport() == (True, "") and len(started) == n
    idle.close()
    assert len(started) == n and g.closed == 0 and forkservers._KEPT[-1][1] is g
    idle = forkservers.spawner_for(get_spawner, _Env("A"), str(tmp_path), "forkserver")
    assert idle.run("benchmarks.X.track_x", "{}", "None", "result", 60, "/") == "ran"  # a case asked after all
    assert len(started) == n + 1 and g.closed == 0 and len(forkservers._KEPT) == 2


def test_a_round_runs_nothing_only_when_every_selected_case_has_what_it_wants():
    from kernelscope.asv.rounds import runs_nothing
    from kernelscope.asv.runs import Case, RunState

    class Selection(dict):
        benchmark_selection = {"b.X.time_x": [1]}

    selection = Selection({"b.X.time_x": {"params": [["p", "q"]], "rounds": 3, "enough_samples": 3},
                           "b.X.track_once": {"params": [["p", "q"]], "rounds": 1}})
    run = RunState(benchmarks=selection)
    assert not runs_nothing(run, selection, [2], None)  # case 1 has not run yet
    run.tally[("b.X.time_x", 1)] = Case(2, True, 1, 0, "")
    assert not runs_nothing(run, selection, [2], None)  # two samples of three
    run.tally[("b.X.time_x", 1)] = Case(12, True, 1, 0, "")
    assert runs_nothing(run, selection, [2], None)  # track_once has only round 1; case 0 is not selected
    assert not runs_nothing(run, selection, [2], {"rounds": 3})  # -a rounds=3: every case, every round
    assert not runs_nothing(run, selection, [1], None) and not runs_nothing(run, selection, None, None)
    run.tally[("b.X.time_x", 1)] = Case(0, None, 1, 1, "failed")
    assert runs_nothing(run, selection, [2], None)  # a failure is not run again


# --- one process per case (kernelscope.asv.siblings) ----------------------------------------------------------

def test_siblings_are_measured_in_the_process_of_their_host(stored):
    for i in (0, 1):  # one sample per process (three processes), many in one
        _, host = _case(stored, "benchmarks.Modes.track_a_host", i)
        _, sampled = _case(stored, "benchmarks.Modes.track_b_sampled", i)
        _, once = _case(stored, "benchmarks.Modes.track_c_once", i)
        assert sorted(set(sampled)) == sorted(set(host)), (host, sampled)  # the same processes, no others
        assert len(set(once)) == 1 and once[0] in host  # its one round, taken in a host's process
    assert len(set(_case(stored, "benchmarks.Modes.track_a_host", 0)[1])) == 3


def test_a_sibling_skipped_in_the_hosts_process_runs_in_its_own_and_says_why(stored):
    results, proc = stored
    _, host = _case(stored, "benchmarks.Modes.track_a_host", 2)
    result, _ = _case(stored, "benchmarks.Modes.track_c_once", 2)
    assert result is not None and result != result  # NaN: asv's own skip, from a process of its own
    _, sampled = _case(stored, "benchmarks.Modes.track_b_sampled", 2)
    assert set(sampled) == set(host)  # its other sibling was still served from the host's process


def _existing_env_run(tmp_path, *args, returncodes=(0,)):
    """asv run of the fixture suite in this Python's environment; the stored results by benchmark."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    existing_env_config(tmp_path, SUITE)
    env = {**os.environ, "HOME": str(tmp_path)}
    asv_machine(tmp_path)
    proc = subprocess.run([ASV, "run", "--config", str(tmp_path / "asv.json"), "--machine", "ci-cpu", "--record-samples",
                           *args, "-E", f"existing:{sys.executable}", "--set-commit-hash", head],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode in returncodes, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = (tmp_path / "results" / "ci-cpu").glob(f"{head[:8]}-*.json")
    data = json.loads(path.read_text())
    return {name: dict(zip(data["result_columns"], row)) for name, row in data["results"].items()}


def test_a_sibling_selected_alone_runs_in_a_process_of_its_own(tmp_path):
    results = _existing_env_run(tmp_path, "-b", r"Modes\.track_c_once")
    assert list(results) == ["benchmarks.Modes.track_c_once"]
    assert len(results["benchmarks.Modes.track_c_once"]["samples"][0]) == 2


def test_rounds_asked_for_on_the_command_line_run_every_case_that_often(tmp_path):
    row = _existing_env_run(tmp_path, "-b", r"Track\.track_pid", "-a", "rounds=2",
                            returncodes=(2,))["benchmarks.Track.track_pid"]  # 2: its broken case failed
    many = row["samples"][1]
    assert len(many) == 24 and len(set(many)) == 2  # enough after one process, yet two were asked for
    assert len(set(row["samples"][0])) == 2
