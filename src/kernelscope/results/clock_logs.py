"""The SM-clock logs beside asv's result files: where a benchmark process writes one, and how it is read and stored.

Every timed sample reads the SM clock it ran at (:mod:`kernelscope.timing.clocks`).
A benchmark process appends, per case, the readings of its samples to
``results/<machine>/<hash8>-<env>.clocks.jsonl`` (:func:`log_case`), beside
asv's result file, which asv does not read; ``kernelscope results`` joins each
case's latest run (:func:`read_log`) to the stored result.

Plain, the logs made up most of results/ (20 of its 28 MiB on 2026-11-25), so
they are stored gzipped (``.clocks.jsonl.gz``, 8-10x smaller). A run that adds
to a commit's stored results writes new records to the plain file beside the
gzipped one; :func:`compress` appends them to it as another gzip member, and
readers take the gzipped records first, then the plain ones, in the order they
were written.

Torch-free, so ``python3 -m kernelscope.results.clock_logs DIR...`` runs anywhere.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kernelscope.results.machine import machine_name

if TYPE_CHECKING:
    from kernelscope.timing.clocks import ClockWatch

SUFFIX = ".clocks.jsonl"  # written plain by a benchmark process
GZ_SUFFIX = SUFFIX + ".gz"  # committed


def lines(plain: Path) -> list[str]:
    """Every line of a log: its gzipped part (``plain`` + ``.gz``), then the plain file, whichever exist."""
    return lines_of(*stored(plain))


def stored(plain: Path) -> tuple[bytes | None, bytes | None]:
    """A log as stored: the bytes of its gzipped part and of its plain file (None where there is none)."""
    packed = plain.with_name(plain.name + ".gz")
    return (packed.read_bytes() if packed.exists() else None), (plain.read_bytes() if plain.exists() else None)


def lines_of(packed: bytes | None, plain: bytes | None) -> list[str]:
    """:func:`lines` of a log's stored bytes (:func:`stored`)."""
    found: list[str] = []
    for part in (gzip.decompress(packed) if packed is not None else None, plain):
        if part is not None:
            found += io.TextIOWrapper(io.BytesIO(part)).read().splitlines()
    return found


def compress(plain: Path) -> Path:
    """Move a plain log into its gzipped file (appended as a new member when one exists); the plain file goes."""
    packed = plain.with_name(plain.name + ".gz")
    with plain.open("rb") as src, gzip.GzipFile(packed, "ab", compresslevel=9, mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    plain.unlink()
    return packed


def compress_all(folders: list[Path]) -> list[Path]:
    """Every plain log under ``folders``, compressed; the gzipped files written."""
    return [compress(p) for folder in folders for p in sorted(Path(folder).rglob("*" + SUFFIX))]


# --- written by a benchmark process ------------------------------------------------------------------------------

RESULTS_DIR_ENV = "ASV_KERNELSCOPE_RESULTS_DIR"  # set by the syssite environment plugin for benchmark processes


def log_path() -> Path | None:
    """``results/<machine>/<hash8>-<env>.clocks.jsonl`` for this benchmark process, or None outside asv."""
    results, commit, env = (os.environ.get(k) for k in (RESULTS_DIR_ENV, "ASV_COMMIT", "ASV_ENV_NAME"))
    machine = machine_name()  # kernelscope.results.machine
    if not (results and commit and env and machine):
        return None
    return Path(results) / machine / f"{commit[:8]}-{env}{SUFFIX}"


_LOGGED: dict[tuple, int] = {}  # case -> readings already written by this process
_WARNED: set[tuple] = set()
WARN_AFTER = 6  # samples before a case is called mostly throttled on stderr
_RUN = f"{os.getpid()}-{int(time.time() * 1000)}"  # this benchmark process, as the log's readers tell runs apart


def log_case(benchmark: str, params: list[str], watch: ClockWatch, starved: int | None = None) -> None:
    """Append the readings of one case taken since the last call; warn on stderr when most were throttled.

    ``starved``: warm mode's count so far of samples (asv's warm-up included)
    whose host outlasted the hold, so that the GPU may have waited on it: a
    launch-bound case's one sample a process is then suspect.

    asv calls teardown after every sample, so this runs many times per case:
    each record carries only the new readings and this process's run id; a
    reader joins the records of a case's latest run.
    """
    summary = watch.summary()
    key = (benchmark, tuple(params))
    written = _LOGGED.get(key, 0)
    if summary["mostly_throttled"] and summary["samples"] >= WARN_AFTER and key not in _WARNED:
        _WARNED.add(key)
        from kernelscope.timing import clocks  # imported here: `python3 -m kernelscope.results.clock_logs` runs without torch

        print(f"kernelscope: {benchmark}{tuple(params)}: {summary['throttled']} of {summary['samples']} samples "
              f"ran below {clocks.THROTTLE_FRACTION:.0%} of the max SM clock ({summary['min_mhz']:.0f} MHz; "
              f"max {watch.max_mhz:.0f} MHz); NVML reasons: {', '.join(clocks.throttle_reasons()) or 'none given'}",
              file=sys.stderr)
    path = log_path()
    new = watch.readings[written:]
    if path is None or not new:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"benchmark": benchmark, "params": list(params), "run": _RUN, "mhz": [round(m, 1) for m in new],
              "max_mhz": watch.max_mhz, "fraction": watch.fraction}
    if starved is not None:
        record["starved"] = starved
    if watch.retaken:
        record["retaken"] = watch.retaken  # so far, as starved
    with path.open("a") as f:
        f.write(json.dumps(record) + "\n")
    _LOGGED[key] = len(watch.readings)


# --- read back ---------------------------------------------------------------------------------------------------


_decode = json.JSONDecoder().raw_decode


def _record(line: str):
    """json.loads(line), without its checks around a line that is one JSON value and nothing else (a log's
    hundreds of thousands of lines); any other line goes to json.loads, which reads it or says why not."""
    try:
        record, end = _decode(line)
        if end == len(line):
            return record
    except ValueError:
        pass
    return json.loads(line)


def read_log(result_file: Path) -> dict[tuple[str, tuple], dict]:
    """The clock log beside an asv result file: (benchmark, params) -> its latest run's record, readings joined.

    Records without a run id (written before logs were incremental) each hold
    every reading so far: the last one stands for the case.
    """
    return latest(lines(result_file.with_name(result_file.stem + SUFFIX)))


def latest(log_lines: list[str]) -> dict[tuple[str, tuple], dict]:
    """:func:`read_log` of a log's lines (:func:`lines`)."""
    found: dict[tuple[str, tuple], dict] = {}
    for line in log_lines:
        if not line.strip():
            continue
        record = _record(line)
        key = (record["benchmark"], tuple(record["params"]))
        same_run = key in found and record.get("run") is not None and found[key].get("run") == record["run"]
        if same_run:  # readings joined; the other fields (a count so far, such as starved) the latest
            found[key] = {**record, "mhz": found[key]["mhz"] + record["mhz"]}
        else:
            found[key] = record
    return found


def main(argv: list[str] | None = None) -> int:
    folders = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    if not folders:
        print("usage: python3 -m kernelscope.results.clock_logs DIR... (gzips every *.clocks.jsonl under them)",
              file=sys.stderr)
        return 2
    for path in compress_all(folders):
        print(f"clock log -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
