"""The SM-clock logs beside asv's result files, as stored: written plain, committed gzipped.

A benchmark process appends records to ``<hash8>-<env>.clocks.jsonl`` while it
runs (:func:`kernelscope.timing.clocks.log_case`). Plain, the logs made up
most of results/ (20 of its 28 MiB on 2026-11-25), so they are stored gzipped
(``.clocks.jsonl.gz``, 8-10x smaller). A run that adds to a
commit's stored results writes new records to the plain file beside the gzipped
one; :func:`compress` appends them to it as another gzip member, and readers take
the gzipped records first, then the plain ones, in the order they were written.

Torch-free, so ``python3 -m kernelscope.results.clock_logs DIR...`` runs anywhere.
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

SUFFIX = ".clocks.jsonl"
GZ_SUFFIX = SUFFIX + ".gz"


def lines(plain: Path) -> list[str]:
    """Every line of a log: its gzipped part (``plain`` + ``.gz``), then the plain file, whichever exist."""
    found: list[str] = []
    packed = plain.with_name(plain.name + ".gz")
    if packed.exists():
        with gzip.open(packed, "rt") as f:
            found += f.read().splitlines()
    if plain.exists():
        found += plain.read_text().splitlines()
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
