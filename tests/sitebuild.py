"""Building the site in tests: from the committed results, from none, from two machines, with profiles."""

from __future__ import annotations

import functools
import io
import itertools
import json
import logging
import math
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"


def run_build(dest: Path, results_dir: Path | None = None, profiles_dir: Path | None = None,
              search_index: bool = False) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` into ``dest`` (None: the repository's results/ and profiles/), as its command runs it:
    the exit status, and what it logged (a warning fails a strict build) as stderr.

    In this process, not a new one: a fresh process would import torch, Triton and Numba (the plans the pages show)
    and read results/ again, seconds a build that this test process has already spent (export's cache of parsed
    result files). Without the search index unless asked: indexing the pages is half a build's time, and one test
    builds it.
    """
    from mkdocs.commands import build as mkdocs_build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort, ConfigurationError

    env = {"KERNELSCOPE_SEARCH_INDEX": "true" if search_index else "false"}
    if results_dir is not None:
        env["KERNELSCOPE_RESULTS_DIR"] = str(results_dir)
    if profiles_dir is not None:
        env["KERNELSCOPE_PROFILES_DIR"] = str(profiles_dir)
    saved = {k: os.environ.get(k) for k in env}
    logger = logging.getLogger("mkdocs")
    logged = io.StringIO()
    handler = logging.StreamHandler(logged)
    handler.setFormatter(logging.Formatter("%(levelname)s - %(message)s"))
    handler.setLevel(logging.WARNING)
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)  # the command's level: a strict build counts what this logger passes
    logger.propagate = False
    code = 0
    try:
        os.environ.update(env)  # what the plugin and mkdocs.yml read, this build's alone
        config = load_config(config_file=str(ROOT / "mkdocs.yml"), strict=True, site_dir=str(dest))
        config.plugins.on_startup(command="build", dirty=False)
        try:
            mkdocs_build.build(config, dirty=False)
        finally:
            config.plugins.on_shutdown()
    except (Abort, ConfigurationError) as exc:  # what the command turns into exit status 1
        logged.write(f"Error: {exc}\n")
        code = 1
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
    return subprocess.CompletedProcess(["mkdocs", "build", "--strict", "-d", str(dest)], code, "", logged.getvalue())


def build(dest: Path, results_dir: Path | None = None, profiles_dir: Path | None = None,
          search_index: bool = False) -> Path:
    """``mkdocs build --strict`` into ``dest``; fails the test with mkdocs' own message."""
    proc = run_build(dest, results_dir, profiles_dir, search_index)
    if proc.returncode != 0:
        raise AssertionError(f"mkdocs build --strict failed:\n{proc.stderr[-4000:]}")
    return dest


def profiled_site(tmp_path_factory) -> tuple[Path, Path]:
    """(site, profiles folder): the committed results with the test fixture's profiles, built once per test run.

    Shared by the build tests and the browser tests (one build for both, whichever test process they run in).
    """
    from profile_fixture import write
    from shared import once

    def make(work: Path):
        build(work / "site", RESULTS, write(work / "profiles"))

    work = once(tmp_path_factory, "profiled-site", make)
    return work / "site", work / "profiles"


def newest_result_file(results_dir: Path, machine: str = "nvidia-h100-80gb-hbm3") -> Path:
    """The result file of the newest of ``machine``'s commits that its results pages show (a run of some of an op's
    variants is left out of them: :func:`history.current`), in ``results_dir``: results/ or a copy of it."""
    return Path(results_dir) / _newest_shown(machine)


@functools.cache
def _newest_shown(machine: str) -> Path:
    """:func:`newest_result_file`'s file, relative to results/: worked out once a test process from the committed
    results (reading every row of a copy is seconds a call)."""
    from kernelscope.catalog import VARIANTS
    from kernelscope.results import export, history

    table, runs = export.rows_and_runs(RESULTS)
    runs = [r for r in runs if r["machine"] == machine]
    order = history.commit_order(runs, history.git_positions(ROOT))
    shown = {r["commit"] for r in history.current([r for r in table if r["machine"] == machine], order, set(VARIANTS))}
    newest = [c for c in order if c in shown][-1]
    return Path(next(r["file"] for r in runs if r["commit"] == newest)).resolve().relative_to(RESULTS.resolve())


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


BF16_VARIANTS = ("square-torch", "square-cuda-vec4", "softmax-torch", "gelu-torch")


def float32_only(results: Path, machine: str) -> Path:
    """``results`` (a copy) with ``machine``'s bfloat16 benchmarks (the *Bfloat16 classes) taken out of its runs:
    a machine that was timed in float32 alone."""
    for path in (results / machine).glob("*.json"):
        if path.name == "machine.json":
            continue
        data = json.loads(path.read_text())
        data["results"] = {name: value for name, value in data["results"].items()
                           if "Bfloat16" not in name.split(".")[1]}  # SquareBfloat16, SquareBfloat16Host
        path.write_text(json.dumps(data))
    return results


def with_bfloat16(dest: Path, speedup: float = 1.9) -> Path:
    """A copy of results/ whose H100 newest run also timed some variants in bfloat16 (each time / ``speedup``).

    Test data only: the dtype axis of every square, softmax and gelu benchmark gains bfloat16, timed for
    BF16_VARIANTS and skipped (NaN, as asv records a variant that does not run there) for the others. Mean gets
    none, so its page must not offer a dtype it has no result in.
    """
    shutil.copytree(RESULTS, dest)
    source = newest_result_file(dest)
    data = json.loads(source.read_text())
    columns = data["result_columns"]
    per_combo = ("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "samples")
    for name, values in data["results"].items():
        record = dict(zip(columns, values))
        params = record.get("params") or []
        if not name.split(".")[1] in ("Square", "Softmax", "Gelu") or len(params) != 3 or params[2] != ["'float32'"]:
            continue
        combos = list(itertools.product(*params))
        record["params"] = [params[0], params[1], ["'float32'", "'bfloat16'"]]
        for col in per_combo:
            old = record.get(col)
            if not old:
                continue
            new = []
            for i, (variant, _size, _dtype) in enumerate(combos):
                value = old[i] if i < len(old) else None
                timed = variant.strip("'") in BF16_VARIANTS and value is not None
                if col == "samples":
                    scaled = [v / speedup for v in value] if (timed and value) else None
                elif col == "result":
                    scaled = value / speedup if (timed and not math.isnan(value)) else math.nan
                else:
                    scaled = value / speedup if (timed and value is not None) else None
                new += [value, scaled]
            record[col] = new
        data["results"][name] = [record.get(c) for c in columns]
    source.write_text(json.dumps(data))
    return dest


def bfloat16_site(tmp_path_factory) -> Path:
    """A site of :func:`with_bfloat16`'s results with the H200 timed in float32 alone (:func:`float32_only`), no
    profiles; built once per test run, for the build test of a second dtype and the browser test of its switch."""
    from shared import once

    def make(work: Path):
        build(work / "site", float32_only(with_bfloat16(work / "results"), "nvidia-h200"), work / "no-profiles")

    return once(tmp_path_factory, "bfloat16-site", make) / "site"
