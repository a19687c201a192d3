"""One asv process per GPU (kernelscope.asv.parallel): each runs its share of the cases, all save into one
results folder, and nothing is lost or run twice. Through real asv runs of a fixture suite on the CPU."""

import json
import os
import subprocess
import sys

import pytest

from kernelscope.asv import parallel
from test_asv_pipeline import ASV, ROOT, asv_machine, existing_env_config
from test_asv_saves import CASES, EVERY, SUITE, _measured, _stored

pytestmark = pytest.mark.skipif(ASV is None or not (ROOT / ".git").exists(),
                                reason="needs asv (pip install -e '.[bench]') and a git checkout")


def test_a_case_and_its_modes_fall_in_one_share_and_every_share_gets_every_size():
    params = [["a", "b", "c"], ["64x64", "256x256", "1024x1024", "4096x4096"], ["float32"]]
    host_params = [*params, ["box-1"]]
    n = 12
    for shares in (2, 3):
        got = [parallel.share_of(params, j, shares) for j in range(n)]
        assert got == [parallel.share_of(host_params, j, shares) for j in range(n)]  # SquareHost's case j is Square's
        for size in range(4):  # each size is spread over the shares, not all on one
            assert len({got[v * 4 + size] for v in range(3)}) == min(3, shares)
    with pytest.raises(ValueError, match="KERNELSCOPE_GPU_SHARD='2/2'"):
        parallel.parse_shard("2/2")


def test_two_asv_processes_share_one_results_folder_without_a_lost_or_doubled_case(tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    config = existing_env_config(tmp_path, SUITE, "asv.conf.json")
    log = tmp_path / "cases.log"
    env = {**os.environ, "HOME": str(tmp_path), "KERNELSCOPE_TEST_CASE_LOG": str(log)}
    asv_machine(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "kernelscope", "asv-run", "--gpus", "0,1", "--every", "5", "--json",
                           "--config", str(config), "--logs", str(tmp_path / "logs"), "--",
                           "--machine", "ci-cpu", "--record-samples", "-E", f"existing:{sys.executable}",
                           "--set-commit-hash", head], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    runs = json.loads(proc.stdout)
    assert [r["share"] for r in runs] == ["0/2", "1/2"] and all(r["returncode"] == 0 for r in runs)
    ran = [line.split() for line in log.read_text().splitlines()]
    by_case = {}
    for _, share, benchmark, case in ran:
        by_case.setdefault((benchmark, case), []).append(share)
    assert set(by_case) == EVERY and all(len(s) == 1 for s in by_case.values())  # each case once
    for case in CASES:  # a host and its sibling in one process, so in one share
        assert by_case[("Host.track_a", case)] == by_case[("Host.track_b", case)]
    assert {s for (s,) in by_case.values()} == {"0/2", "1/2"}  # both shares worked
    assert _measured(_stored(tmp_path)) == EVERY  # both shares' cases in the one file: no save overwrote another's
