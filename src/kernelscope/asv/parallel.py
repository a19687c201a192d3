"""Every GPU of a box: one asv process per GPU, each running its share of every benchmark's cases.

``kernelscope asv-run -- ARGS`` starts ``asv run ARGS`` once per GPU, each with
``CUDA_VISIBLE_DEVICES`` set to its GPU, an environment folder of its own
(``.asv/env-gpuN``: each builds and installs the commit for itself) and
``KERNELSCOPE_GPU_SHARD=i/n``, which the environment plugin reads
(:func:`take_this_gpus_share`): of every benchmark, the process runs the cases
whose share is ``i``. A case's share is the sum of its parameter indices
modulo ``n``, so each GPU gets every size of every op in turn, and a case's
modes (``Square.time_warm``, its ``track_cold``, ``SquareHost.track_host``)
fall in the same share, measured in one process as on one GPU.

All of them write into the one ``results/`` folder: every save is merged into
the file on disk under a lock (:mod:`kernelscope.asv.saves`), so no process
overwrites another's cases. The GPUs share one asv machine, named after their
model: two H100s of one host time the same cases within 0.6% at 50 us or more
(and host mode and first calls name the box, not the GPU).

A commit range (``A..B``) works the same way: every process builds every
commit and runs its share of it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from .runs import SELECTION_FILTERS, selected

SHARD_ENV = "KERNELSCOPE_GPU_SHARD"


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> (i, n), with a clear error for anything else."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match or not 0 <= int(match.group(1)) < int(match.group(2)):
        raise ValueError(f"{SHARD_ENV}={text!r}: write it as i/n with 0 <= i < n, e.g. 0/2")
    return int(match.group(1)), int(match.group(2))


def share_of(params: list, index: int, n: int) -> int:
    """Which of ``n`` shares a case (its index among ``params``' combinations) belongs to."""
    digits, rest = [], index
    for values in reversed(params or []):
        rest, digit = divmod(rest, max(len(values), 1))
        digits.append(digit)
    return sum(digits) % n


def shard_cases(benchmarks, results) -> dict[str, list[int]]:
    """Under ``KERNELSCOPE_GPU_SHARD=i/n``: per benchmark, its selected cases of share ``i``."""
    spec = os.environ.get(SHARD_ENV)
    if not spec:
        return {}
    i, n = parse_shard(spec)
    keep = {}
    for name, benchmark in benchmarks.items():
        keep[name] = [j for j in selected(benchmarks, name) if share_of(benchmark["params"], j, n) == i]
    return keep


def take_this_gpus_share() -> None:
    """Narrow every run of this asv process to its share, when it was started as one of several (idempotent)."""
    if os.environ.get(SHARD_ENV):
        parse_shard(os.environ[SHARD_ENV])  # a bad value stops asv at once, with the reason
        if shard_cases not in SELECTION_FILTERS:
            SELECTION_FILTERS.append(shard_cases)


def visible_gpus() -> list[str]:
    """The GPUs this box has (their indices as CUDA_VISIBLE_DEVICES takes them), honouring CUDA_VISIBLE_DEVICES."""
    if os.environ.get("CUDA_VISIBLE_DEVICES"):
        return [g.strip() for g in os.environ["CUDA_VISIBLE_DEVICES"].split(",") if g.strip()]
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []


def gpu_config(config: Path, slot: int) -> Path:
    """A copy of the asv configuration with an environment folder of the slot's own, beside the original.

    Beside it, because asv imports the ``.src...`` plugin and resolves ``repo`` relative to the configuration's folder.
    """
    from asv import util

    conf = util.load_json(str(config), js_comments=True)
    conf["env_dir"] = f"{conf.get('env_dir', '.asv/env').rstrip('/')}-gpu{slot}"
    path = config.with_name(f"asv.gpu{slot}.json")
    path.write_text(json.dumps(conf, indent=4) + "\n")
    return path


_PROGRESS = re.compile(r"^\[\s*(\d+(?:\.\d+)?)%\]")


def _progress(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return "starting"
    for line in reversed(lines):
        match = _PROGRESS.match(line)
        if match:
            return f"{float(match.group(1)):.0f}%"
    return "building" if lines else "starting"


def run(asv_args: list[str], gpus: list[str], config: Path, logs: Path, every_s: float = 15.0,
        out=sys.stderr) -> list[dict]:
    """``asv run ASV_ARGS`` once per GPU, each its share; progress on ``out``; per GPU: rc, seconds, log."""
    logs.mkdir(parents=True, exist_ok=True)
    started = time.time()
    procs = []
    for slot, gpu in enumerate(gpus):
        log = logs / f"asv-gpu{slot}.log"
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu, SHARD_ENV: f"{slot}/{len(gpus)}"}
        command = [sys.executable, "-m", "asv", "run", "--config", str(gpu_config(config, slot)), *asv_args]
        with open(log, "w") as f:
            f.write(f"$ CUDA_VISIBLE_DEVICES={gpu} {SHARD_ENV}={slot}/{len(gpus)} {' '.join(command)}\n")
            f.flush()
            procs.append(subprocess.Popen(command, env=env, stdout=f, stderr=subprocess.STDOUT,
                                          start_new_session=True))
        print(f"GPU {gpu}: share {slot}/{len(gpus)}, log {log}", file=out, flush=True)
    ended: dict[int, float] = {}
    last_print = started
    try:
        while len(ended) < len(procs):
            time.sleep(1.0)
            for slot, p in enumerate(procs):
                if slot not in ended and p.poll() is not None:
                    ended[slot] = time.time() - started
            if time.time() - last_print >= every_s or len(ended) == len(procs):
                last_print = time.time()
                status = "  ".join(f"GPU {g}: {'done' if s in ended else _progress(logs / f'asv-gpu{s}.log')}"
                                   for s, g in enumerate(gpus))
                print(f"[{last_print - started:6.0f} s] {status}", file=out, flush=True)
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        raise
    return [{"gpu": g, "share": f"{s}/{len(gpus)}", "returncode": procs[s].returncode,
             "seconds": round(ended[s], 1), "log": str(logs / f"asv-gpu{s}.log")} for s, g in enumerate(gpus)]
