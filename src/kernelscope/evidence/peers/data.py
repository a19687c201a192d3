"""``evidence/<machine>/peers.json``: what ``kernelscope crosscheck`` measured, as data.

One folder per machine under ``evidence/`` (the method's evidence; the
machine named as asv names it, like ``results/`` and ``profiles/``)::

    evidence/<machine>/peers.json    PeersFile: the stamp, the budgets, one Record per case

The stamp is :class:`~kernelscope.profiling.artifacts.Manifest`, filled by
the helpers ``kernelscope profile`` stamps ``profiles/`` with (machine, GPU,
versions, commit, date, the exact command). Every time is seconds per call, a
median; a clock that did not run is ``null`` and its reason is in
``skipped`` (or ``errors``). The file is regenerated whole by one command,
never edited by hand.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from kernelscope import modes
from kernelscope.profiling import artifacts
from kernelscope.profiling.artifacts import Manifest

EVIDENCE_DIR = Path("evidence")
FILE_NAME = "peers.json"
FORMAT = 1  # bump when a reader could misread an older file

MODES = modes.TIMED  # the suite's modes, in the order the tables show them
PEER_OF = {name: modes.BY_NAME[name].peer for name in MODES}  # each mode's peer clock
CLOCKS = tuple(dict.fromkeys((*MODES, *PEER_OF.values(), "ncu")))  # every key of Record.seconds
CLOCK_TITLES = {"warm": "suite warm", "cold": "suite cold", "graph": "suite graph", "host": "suite host",
                "timer": "torch.utils.benchmark.Timer", "do_bench": "triton.testing.do_bench",
                "do_bench_cudagraph": "triton.testing.do_bench_cudagraph", "ncu": "Nsight Compute"}
SHORT_TITLES = {"warm": "warm", "cold": "cold", "graph": "graph", "host": "host", "timer": "Timer", "do_bench": "do_bench",
                "do_bench_cudagraph": "do_bench_cudagraph", "ncu": "ncu"}

MEASURED, SKIPPED, FAILED = "measured", "skipped", "failed"
DTYPE = "float32"  # a case's dtype unless asked otherwise (crosscheck --dtype); its name leaves it out


def size_label(size: str, dtype: str = DTYPE) -> str:
    """A case's size as tables show it: "512x50257", with " bfloat16" where the dtype is not float32, so that one
    run's cases in two dtypes (crosscheck --dtype) read apart."""
    return size + (f" {dtype}" if dtype != DTYPE else "")


def entry_case(entry: dict) -> tuple[str, str, str]:
    """(variant, size, dtype) of a summary's or gate's entry (agreement's dicts); an entry of a file written before
    they carried their dtype is float32's."""
    return entry["variant"], entry["size"], entry.get("dtype", DTYPE)


def case_name(variant: str, size: str, dtype: str = DTYPE) -> str:
    """How a case is named in messages: "softmax-cuda 512x50257 bfloat16"."""
    return f"{variant} {size_label(size, dtype)}"


@dataclass
class Record:
    """One case (variant x size x dtype) and every clock's reading of its call."""

    op: str
    variant: str
    backend: str
    size: str  # e.g. "4096x4096", as results/ spells it
    dtype: str
    device: str  # "cuda", or "cpu" (host clocks only)
    status: str = MEASURED  # MEASURED; SKIPPED (not run here: reason); FAILED (the check or the case failed: reason)
    reason: str = ""
    seconds: dict[str, float | None] = field(default_factory=dict)  # clock (CLOCKS) -> median seconds per call
    skipped: dict[str, str] = field(default_factory=dict)  # clock -> why it was not measured
    errors: dict[str, str] = field(default_factory=dict)  # clock -> what went wrong (the other clocks went on)
    diff_pct: dict[str, float | None] = field(default_factory=dict)  # mode -> (suite / peer - 1) x 100
    host_per_call_s: float | None = None  # host seconds to enqueue one call (N calls, no sync, / N)
    flush_s: float | None = None  # GPU seconds of do_bench's L2 flush (its cold peer runs behind it)
    details: dict[str, float] = field(default_factory=dict)  # samples, calls per sample/graph/block, ...
    wall_s: float = 0.0  # seconds this case took to measure, all clocks

    @property
    def name(self) -> str:
        return case_name(self.variant, self.size, self.dtype)

    def clock(self, name: str) -> float | None:
        return self.seconds.get(name)


@dataclass
class PeersFile:
    stamp: Manifest  # machine, GPU, commit, date, versions, variants, the command
    device: str
    budgets: dict[str, float] = field(default_factory=dict)  # what each clock was given (samples, ms, s)
    records: list[Record] = field(default_factory=list)
    format: int = FORMAT

    @property
    def measured(self) -> list[Record]:
        return [r for r in self.records if r.status == MEASURED]


def machine_dir(machine: str, root: str | Path = EVIDENCE_DIR) -> Path:
    return Path(root) / machine


def default_path(machine: str, root: str | Path = EVIDENCE_DIR, narrowed_to: str = "") -> Path:
    """``peers.json``, the file the site shows, for a run of every case; a run narrowed to some (``narrowed_to``,
    e.g. "op-softmax") gets a file of its own beside it (``peers-op-softmax.json``), so that it does not take the
    place of the whole run's."""
    name = f"{Path(FILE_NAME).stem}-{narrowed_to}.json" if narrowed_to else FILE_NAME
    return machine_dir(machine, root) / name


def to_dict(peers: PeersFile) -> dict:
    return asdict(peers)


def write(path: str | Path, peers: PeersFile) -> Path:
    """Write the file (written aside, then renamed over the old one: a run cut off leaves the old file whole)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(to_dict(peers), indent=1, allow_nan=False) + "\n")
    tmp.replace(path)
    return path


def _known(cls, data: dict) -> dict:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}  # a newer writer's field: ignored, not fatal


def from_dict(data: dict) -> PeersFile:
    if not isinstance(data, dict) or "stamp" not in data or "records" not in data:
        raise ValueError("not a peers file (no stamp or records)")
    if data.get("format", FORMAT) > FORMAT:
        raise ValueError(f"format {data['format']} is newer than this reader's ({FORMAT}): update kernelscope")
    stamp = artifacts._from_dict(Manifest, data["stamp"])
    records = [Record(**_known(Record, r)) for r in data["records"]]
    return PeersFile(**{**_known(PeersFile, data), "stamp": stamp, "records": records})


def read(path: str | Path) -> PeersFile:
    return from_dict(json.loads(Path(path).read_text()))


def narrowed(root: str | Path = EVIDENCE_DIR) -> list[Path]:
    """The narrowed runs' files under ``root`` (``peers-op-softmax.json`` and the like, beside each machine's
    ``peers.json``), by machine name, then file name."""
    root = Path(root)
    return sorted(root.glob(f"*/{Path(FILE_NAME).stem}-*.json")) if root.is_dir() else []


def machines(root: str | Path = EVIDENCE_DIR) -> list[Path]:
    """The peers files under ``root`` (one per machine folder), by machine name; ``root`` may be one machine's."""
    root = Path(root)
    if (root / FILE_NAME).is_file():
        return [root / FILE_NAME]
    return sorted(root.glob(f"*/{FILE_NAME}")) if root.is_dir() else []
