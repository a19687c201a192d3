"""Profiling artifacts as data: what `kernelscope profile` writes and the site reads.

One folder per machine, beside ``results/`` (the machine name is asv's)::

    profiles/<machine>/manifest.json                 Manifest: machine, GPU, commit, date, versions, tools
    profiles/<machine>/<variant>/profile.json        VariantProfile: everything below, as data
    profiles/<machine>/<variant>/torch_profiler.txt  key_averages table of the active steps
    profiles/<machine>/<variant>/trace.json.gz       chrome trace (Perfetto, chrome://tracing)
    profiles/<machine>/<variant>/ncu.txt.gz          Nsight Compute's own printout (details page)
    profiles/<machine>/<variant>/<kernel>.<kind>     compiled code: ptx, sass, ptxas.txt; inductor.py (one
                                                     generated module, every kernel of it; CodeArtifact.kernel
                                                     lists their names)
    profiles/<machine>/demos.json                    Demos: the lecture's demonstrations, measured

Paths inside the JSON are relative to the variant's folder (demos: to the
machine's). Everything is text or gzipped text, small enough to commit; the
folder is regenerated whole by one command, never edited by hand.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

PROFILES_DIR = Path("profiles")
FORMAT = 1  # bump when a reader could misread an older folder


@dataclass
class Hint:
    """One of Nsight Compute's rule results, as it prints them under a section."""

    section: str  # e.g. "Occupancy", "LaunchStats", "SpeedOfLight", "WorkloadDistribution"
    rule: str  # e.g. "AchievedOccupancy", "TailEffect"
    type: str  # "OPT" (an optimization opportunity), "INF" (information), "WRN", "ERR"
    text: str  # the rule's description, one paragraph
    speedup_type: str = ""  # "local" or "global", when the rule estimates one
    speedup_pct: float | None = None  # the estimated speedup, in percent


@dataclass
class KernelMetrics:
    """One kernel launch as Nsight Compute measured it (``--clock-control none``)."""

    name: str  # demangled, as ncu prints it
    duration_us: float  # gpu__time_duration.sum
    dram_pct: float | None = None  # DRAM throughput, % of peak
    memory_pct: float | None = None  # Memory Throughput (the busiest memory unit), % of peak
    compute_pct: float | None = None  # Compute (SM) Throughput, % of peak
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    registers_per_thread: int | None = None
    shared_bytes_per_block: int | None = None  # static + dynamic
    block: tuple[int, ...] = ()
    grid: tuple[int, ...] = ()
    cluster: int | None = None  # blocks per cluster (0: none)
    waves_per_sm: float | None = None
    sm_mhz: float | None = None
    hints: list[Hint] = field(default_factory=list)


@dataclass
class CodeArtifact:
    """Compiled code of one kernel, kept as a file beside profile.json."""

    kind: str  # "ptx", "sass", "ptxas" (nvcc's resource report), "inductor" (generated Triton or C++)
    kernel: str  # the kernel's name (or the generated module's, for inductor)
    file: str  # relative to the variant's folder
    language: str  # for syntax highlighting: "ptx", "nasm" (SASS), "text", "python", "cpp"
    registers: int | None = None
    shared_bytes: int | None = None
    spills: int | None = None  # as its tool counts them: ptxas spill-store bytes, Triton's n_spills, Numba's local bytes
    source: str = ""  # how it was obtained, e.g. "triton CompiledKernel.asm", "nvcc -ptx", "numba inspect_asm"


@dataclass
class TorchProfile:
    table_file: str  # torch_profiler.txt
    trace_file: str | None  # trace.json.gz
    ops: dict[str, int]  # aten op / range name -> calls in the active steps
    kernels: dict[str, int]  # GPU kernel name -> launches in the active steps
    active_steps: int
    self_cuda_us: float | None = None  # the kernels' total self CUDA time per step
    self_cpu_us: float | None = None  # the ops' total self CPU time per step


@dataclass
class VariantProfile:
    variant: str
    op: str
    backend: str
    shape: str  # e.g. "4096x4096"
    dtype: str
    device: str  # "cuda" or "cpu"
    torch: TorchProfile | None = None
    ncu: list[KernelMetrics] | None = None  # None: not run (see skipped)
    ncu_text_file: str | None = None
    code: list[CodeArtifact] = field(default_factory=list)
    # Parts, as keys of skipped and errors: "variant" (not run at all: dtype, shape), "check", "input", "torch"
    # (torch.profiler), "code", "sass", "code:<kernel>", "ptxas:<kernel>", "ncu", "capture" (anything else).
    skipped: dict[str, str] = field(default_factory=dict)  # part ("ncu", "sass", ...) -> why it was not captured
    errors: dict[str, str] = field(default_factory=dict)  # part -> what went wrong (the rest continued)
    # Added after format 1's first readers (all optional): the commit the variant was captured at (a folder
    # refreshed for one variant mixes commits), the input's seed, the check's rel_err on it before profiling,
    # and seconds per part ("check", "torch", "code", "ncu": its share of the one ncu process).
    commit: str = ""
    seed: int | None = None
    rel_err: float | None = None
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class Manifest:
    machine: str
    gpu: str
    commit: str
    date: str  # ISO 8601, when the capture started
    versions: dict[str, str]  # torch, triton, numba-cuda, cuda, driver, ncu, nvcc
    variants: list[str]
    command: str  # the command line that produced the folder
    format: int = FORMAT


@dataclass
class HostClockDemo:
    """Timing asynchronous work with a host clock, without and with synchronizing, against CUDA events."""

    variant: str
    shape: str
    calls: int
    # All three per call (the reading over ``calls``):
    host_no_sync_us: float  # time.perf_counter around the calls, no synchronize: the wrong number
    host_sync_us: float  # the same, with torch.cuda.synchronize() before the second reading
    events_us: float  # CUDA events around the same calls


@dataclass
class SquareDemo:
    """One of the lecture's three squares under the profiler: the aten ops it goes through and its kernels."""

    variant: str  # square-torch, square-mul, square-pow
    expression: str  # "torch.square(a)", "a * a", "a ** 2"
    aten_ops: list[str]  # in call order, from our own trace
    kernels: list[str]  # GPU kernel names, from our own trace


@dataclass
class FixedBlockRow:
    cols: int
    passed: bool  # matched the reference
    rel_err: float
    time_us: float
    reported_gbps: float  # what the lecture's plot would show: all bytes of the tensor over the time
    copy_gbps: float  # the machine's measured copy bandwidth, the real ceiling
    rows: int = 0  # the tensor's rows (the same for every width)


@dataclass
class Demos:
    machine: str
    commit: str
    host_clock: HostClockDemo | None = None
    squares: list[SquareDemo] = field(default_factory=list)
    fixed_block: list[FixedBlockRow] = field(default_factory=list)  # the lecture's BLOCK_SIZE=1024 row kernel
    legacy_autograd_table: str | None = None  # torch.autograd.profiler.profile(use_device="cuda"), key_averages
    skipped: dict[str, str] = field(default_factory=dict)  # demo ("host_clock", "fixed_block", ...) -> why not run
    errors: dict[str, str] = field(default_factory=dict)  # demo -> what went wrong (added after format 1)


# --- reading and writing -------------------------------------------------------


def _to_json(obj: Any) -> Any:
    return asdict(obj)


def _from_dict(cls, data: dict):
    """A dataclass from its asdict() form, nested dataclasses included (by field annotation)."""
    kwargs = {}
    hints = {f.name: f.type for f in fields(cls)}
    for name, value in data.items():
        if name not in hints:
            continue  # a newer writer's field: ignore rather than fail the site build
        kind = hints[name]
        if value is not None:
            for sub in (Hint, KernelMetrics, CodeArtifact, TorchProfile, HostClockDemo, SquareDemo, FixedBlockRow):
                if kind in (sub.__name__, f"{sub.__name__} | None"):
                    value = _from_dict(sub, value)
                elif kind in (f"list[{sub.__name__}]", f"list[{sub.__name__}] | None"):
                    value = [_from_dict(sub, v) for v in value]
            if kind.startswith("tuple"):
                value = tuple(value)
        kwargs[name] = value
    return cls(**kwargs)


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_to_json(obj), indent=1) + "\n")


def write_text(path: Path, text: str, compress: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if compress:
        # mtime=0: the same text gives the same bytes, so a regenerated folder diffs clean
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(text.encode())
    else:
        path.write_text(text)


def read_text(path: Path) -> str:
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes()).decode()
    return path.read_text()


def variant_dir(machine_dir: Path, variant: str) -> Path:
    return machine_dir / variant


def read_variant(machine_dir: Path, variant: str) -> VariantProfile:
    return _from_dict(VariantProfile, json.loads((variant_dir(machine_dir, variant) / "profile.json").read_text()))


def read_manifest(machine_dir: Path) -> Manifest:
    return _from_dict(Manifest, json.loads((machine_dir / "manifest.json").read_text()))


def read_demos(machine_dir: Path) -> Demos | None:
    path = machine_dir / "demos.json"
    return _from_dict(Demos, json.loads(path.read_text())) if path.exists() else None


def machines(root: Path = PROFILES_DIR) -> list[Path]:
    """Machine folders that hold a manifest, by name."""
    return sorted(p.parent for p in Path(root).glob("*/manifest.json"))
