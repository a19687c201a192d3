"""A run killed at any moment loses at most the case in flight; a resumed run runs only what is missing
(kernelscope.asv.saves), through real asv runs of a fixture suite whose cases say when they finish."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_asv_pipeline import ASV, ROOT, asv_machine, existing_env_config

pytestmark = pytest.mark.skipif(ASV is None or not (ROOT / ".git").exists(),
                                reason="needs asv (pip install -e '.[bench]') and a git checkout")
SUITE = ROOT / "tests" / "fixtures" / "asv_cut" / "benchmarks"
CASES = [f"c{i}" for i in range(6)]
EVERY = {(b, c) for b in ("Host.track_a", "Host.track_b", "Plain.track_c") for c in CASES}


def _asv_run(tmp: Path, log: Path, *args: str) -> subprocess.Popen:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    config = existing_env_config(tmp, SUITE)
    env = {**os.environ, "HOME": str(tmp), "KERNELSCOPE_TEST_CASE_LOG": str(log)}
    asv_machine(tmp)
    return subprocess.Popen([ASV, "run", "--config", str(config), "--machine", "ci-cpu", *args,
                             "-E", f"existing:{sys.executable}", "--set-commit-hash", head],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def _finished(log: Path) -> list[tuple[str, str, str]]:
    """(pid, benchmark, case) of every case that finished, in order."""
    return [(pid, b, c) for pid, _, b, c in (line.split() for line in log.read_text().splitlines())] if log.exists() else []


def _stored(tmp: Path) -> dict[tuple[str, str], object]:
    files = list((tmp / "results" / "ci-cpu").glob("*.json"))
    files = [f for f in files if f.name != "machine.json"]
    if not files:
        return {}
    (path,) = files
    data = json.loads(path.read_text())  # whole: every save is written aside and renamed over the file
    stored = {}
    for name, row in data["results"].items():
        record = dict(zip(data["result_columns"], row))
        for case, value in zip(CASES, record["result"] or [None] * len(CASES)):
            stored[(name.split(".", 1)[1], case)] = value
    return stored


def _measured(stored: dict) -> set[tuple[str, str]]:
    return {k for k, v in stored.items() if isinstance(v, float) and not math.isnan(v)}


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc): asv puts its forkserver in a process group of its own."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _cut(proc: subprocess.Popen) -> None:
    """SIGKILL asv and everything it started, at once, as when a machine is taken back."""
    pids = [proc.pid, *_descendants(proc.pid)]
    groups = set()
    for pid in pids:
        try:
            groups.add(os.getpgid(pid))
        except ProcessLookupError:
            pass
    groups.discard(os.getpgrp())
    for group in groups:  # a process group each: asv's, its forkserver's (and what that forks next)
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=60)


@pytest.mark.parametrize("after", [1, 6, 15])  # cases finished when asv is killed
def test_a_run_killed_at_any_moment_loses_at_most_the_case_in_flight_and_resumes_with_what_is_missing(tmp_path, after):
    log = tmp_path / "cases.log"
    proc = _asv_run(tmp_path, log, "--record-samples")
    deadline = time.time() + 300
    while len(_finished(log)) < after and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    _cut(proc)  # asv, its forkserver and the benchmark process in flight
    finished = _finished(log)
    assert len(finished) >= after, "the run ended before it could be cut"
    kept = _measured(_stored(tmp_path))
    lost = {(b, c) for _, b, c in finished} - kept
    lost_processes = {pid for pid, b, c in finished if (b, c) in lost}
    assert len(lost_processes) <= 1, (after, sorted(lost), sorted(kept))  # the case in flight, with its siblings

    resumed_log = tmp_path / "resumed.log"
    resumed = _asv_run(tmp_path, resumed_log, "--record-samples", "--skip-existing-successful")
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out[-3000:]
    ran = {(b, c) for _, b, c in _finished(resumed_log)}
    assert ran == EVERY - kept, (sorted(ran), sorted(kept))  # what was missing, and nothing else
    assert _measured(_stored(tmp_path)) == EVERY
    assert not list((tmp_path / "results").rglob("*.partial"))


def test_a_cut_benchmark_shows_its_unrun_cases_as_not_run_and_an_uncut_run_saves_them_all(tmp_path):
    log = tmp_path / "cases.log"
    proc = _asv_run(tmp_path, log, "--record-samples")
    while len(_finished(log)) < 4 and proc.poll() is None:
        time.sleep(0.02)
    _cut(proc)
    stored = _stored(tmp_path)
    pending = [k for k, v in stored.items() if v is None]
    assert pending and all(k[0].startswith("Host.") for k in pending)  # the benchmark in flight and its sibling's
    assert not any(k[0] == "Plain.track_c" for k in stored)  # never started: not in the file at all


def test_a_save_removes_what_a_writer_killed_midway_left_and_not_a_live_writers_file(tmp_path):
    # a SIGKILL while asv writes the result file aside leaves PATH.PID.partial; the resumed run's next save takes it
    from kernelscope.asv.saves import remove_stale_partials

    path = tmp_path / "abcd1234-env.json"
    path.write_text("{}")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    killed = tmp_path / f"{path.name}.{gone.pid}.partial"
    live = tmp_path / f"{path.name}.{os.getppid()}.partial"  # another asv process's save in progress
    other = tmp_path / f"other.json.{gone.pid}.partial"
    for p in (killed, live, other):
        p.write_text("{")
    assert remove_stale_partials(str(path)) == [killed.name]
    assert not killed.exists() and live.exists() and other.exists()
