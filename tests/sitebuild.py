"""Building the site in tests: from the committed results, from none, from two machines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
MKDOCS = Path(sys.executable).parent / "mkdocs"


def build(dest: Path, results_dir: Path | None = None) -> Path:
    """``mkdocs build --strict`` into ``dest``; fails the test with mkdocs' own message."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    if results_dir is not None:
        env["KERNELSCOPE_RESULTS_DIR"] = str(results_dir)
    proc = subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(dest)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"mkdocs build --strict failed:\n{proc.stderr[-4000:]}")
    return dest


def newest_result_file(results_dir: Path, machine: str = "nvidia-h100-80gb-hbm3") -> Path:
    """The result file of ``machine``'s newest commit (the one its results pages show)."""
    from kernelscope.results import export, history

    runs = [r for r in export.runs(results_dir) if r["machine"] == machine]
    newest = history.commit_order(runs, history.git_positions(ROOT))[-1]
    return Path(next(r["file"] for r in runs if r["commit"] == newest))


SYNTHETIC = "test-gpu-b"


def with_second_machine(dest: Path, speedup: float = 1 / 0.7, copy_gbps: int = 4300) -> Path:
    """A copy of results/ plus a synthetic machine: the H100's newest run with every time divided by ``speedup``.

    Test data only (the machine is named test-gpu-b): it exercises the
    machine switch and the machines page, which one real GPU cannot.
    """
    shutil.copytree(RESULTS, dest)
    source = newest_result_file(dest)
    data = json.loads(source.read_text())
    data["params"].update({"machine": SYNTHETIC, "gpu": "Test GPU B (synthetic)", "copy_gbps": str(copy_gbps)})
    columns = data["result_columns"]
    scaled = ("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75")
    for name, values in data["results"].items():
        record = dict(zip(columns, values))
        for col in scaled:
            if record.get(col):
                record[col] = [None if v is None else v / speedup for v in record[col]]
        if record.get("samples"):
            record["samples"] = [None if s is None else [v / speedup for v in s] for s in record["samples"]]
        data["results"][name] = [record.get(c) for c in columns]
    machine_dir = dest / SYNTHETIC
    machine_dir.mkdir()
    (machine_dir / source.name).write_text(json.dumps(data))
    (machine_dir / "machine.json").write_text(json.dumps({**data["params"], "version": 1}))
    return dest
