"""What the site knows: every stored result, the machines and commits behind them, and the profiles.

Loaded once per build from ``results/`` through :mod:`kernelscope.results.export`
(the same rows ``kernelscope results`` prints), with the commit order and
subjects from git when the repository is there; the profiling artifacts from
``profiles/`` through :mod:`kernelscope.site.profiles`. Pages and charts ask
this module; none of them opens a result file.
"""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path

from kernelscope import modes
from kernelscope.catalog import OPS, VARIANTS
from kernelscope.ops import numel, parse_shape
from kernelscope.results import export, history
from kernelscope.site.evidence import EvidenceData
from kernelscope.site.profiles import ProfileData

BACKEND_TITLES = {"torch": "PyTorch eager", "torch-compile": "torch.compile", "triton": "Triton",
                  "cuda": "CUDA C++", "numba": "Numba CUDA"}
MODES = modes.TIMED  # the timed modes, in the order pages show them
MODE_WORDS = {m.name: m.words for m in modes.MODES}


def day(ms: int | None) -> str:
    """A result's timestamp (ms since the epoch) as a UTC date."""
    if not ms:
        return "unknown date"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class Run:
    """One machine at one commit: where a set of numbers came from."""

    machine: str
    commit: str
    date: int | None  # the commit's, ms
    run_at: int | None  # when the run started, ms
    params: dict = field(default_factory=dict, compare=False, hash=False)
    copy_gbps: float | None = field(default=None, compare=False)  # the machine's (the median of its boxes')

    @property
    def short(self) -> str:
        return self.commit[:8]

    @property
    def gpu(self) -> str:
        return self.params.get("gpu") or self.machine

    def software(self) -> str:
        p = self.params
        parts = [f"driver {p['driver']}" if p.get("driver") else "", f"CUDA {p['cuda']}" if p.get("cuda") else "",
                 f"torch {p['torch']}" if p.get("torch") else "", f"triton {p['triton']}" if p.get("triton") else "",
                 f"numba-cuda {p['numba_cuda']}" if p.get("numba_cuda") else ""]
        return ", ".join(x for x in parts if x)

    def stamp(self) -> str:
        """One line a reader can trust a number by: GPU, software, commit, date."""
        return f"{self.gpu} ({self.software()}), commit <code>{self.short}</code>, measured {day(self.run_at)}"


@dataclass
class Snapshot:
    """The rows of one commit on one machine (the newest with any for what was asked)."""

    run: Run | None
    rows: list[dict]

    def __bool__(self) -> bool:
        return bool(self.rows)


class SiteData:
    def __init__(self, results_dir: str | Path = "results", repo: str | Path = ".",
                 profiles_dir: str | Path | None = None, evidence_dir: str | Path | None = None):
        self.results_dir = Path(results_dir)
        self.repo = Path(repo)
        self.profiles = ProfileData(profiles_dir)  # no folder: no profiles, and the pages say so
        self.evidence = EvidenceData(evidence_dir)  # evidence/<machine>/peers.json; none: the pages say so
        found = (self.results_dir / "benchmarks.json").exists()
        self.rows, self._runs = export.rows_and_runs(self.results_dir, include_failed=True) if found else ([], [])
        self.order: list[str] = history.commit_order(self._runs, history.git_positions(self.repo))
        self._snapshots: dict[tuple, Snapshot] = {}
        self._unrolled: dict[tuple[str, str], dict[str, tuple]] = {}
        self._one_copy_bandwidth()

    def _one_copy_bandwidth(self) -> None:
        """A profiled machine's demos quote its copy bandwidth as the results do: the machine's one value (the
        median of its boxes'), not the copy the demo's own process timed, so one machine reads one number."""
        copy = {r["machine"]: r["copy_gbps"] for r in self._runs if r.get("copy_gbps")}
        for name, m in self.profiles.machines.items():
            if name in copy and m.demos:
                for row in m.demos.fixed_block:
                    row.copy_gbps = copy[name]

    @property
    def empty(self) -> bool:
        return not self.rows

    @cached_property
    def machines(self) -> list[str]:
        """Machines with results, the one with most results first (the reference for concept pages)."""
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r["machine"]] = counts.get(r["machine"], 0) + 1
        return sorted(counts, key=lambda m: (-counts[m], m))

    @property
    def reference_machine(self) -> str | None:
        return self.machines[0] if self.machines else None

    def run(self, machine: str, commit: str) -> Run:
        for r in self._runs:
            if r["machine"] == machine and r["commit"] == commit:
                return Run(machine, commit, r["date"], r["run_at"], r["params"], r["copy_gbps"])
        raise KeyError(f"no stored run of commit {commit[:8]} on {machine}")

    def runs(self, machine: str | None = None) -> list[Run]:
        """Stored runs, oldest commit first."""
        pos = {c: i for i, c in enumerate(self.order)}
        found = [Run(r["machine"], r["commit"], r["date"], r["run_at"], r["params"], r["copy_gbps"]) for r in self._runs
                 if machine is None or r["machine"] == machine]
        return sorted(found, key=lambda r: (pos.get(r.commit, -1), r.machine))

    def latest_run(self, machine: str) -> Run | None:
        runs = self.runs(machine)
        return runs[-1] if runs else None

    @cached_property
    def _rows_on(self) -> dict[str, list[dict]]:
        """Machine -> its rows, in the order of ``rows``."""
        found: dict[str, list[dict]] = {}
        for r in self.rows:
            found.setdefault(r["machine"], []).append(r)
        return found

    @cached_property
    def _rows_at(self) -> dict[tuple[str, str], list[dict]]:
        """(machine, commit) -> its rows, in the order of ``rows``."""
        found: dict[tuple[str, str], list[dict]] = {}
        for r in self.rows:
            found.setdefault((r["machine"], r["commit"]), []).append(r)
        return found

    @cached_property
    def current(self) -> list[dict]:
        """Each (machine, op, mode)'s rows from its newest whole commit (:func:`history.current`), worked out once."""
        return history.current(self.rows, self.order, set(VARIANTS))

    def rows_on(self, machine: str) -> list[dict]:
        """``machine``'s rows, in the order of ``rows``: a page asks per machine, hundreds of times a build."""
        return self._rows_on.get(machine, [])

    def rows_at(self, machine: str, commit: str) -> list[dict]:
        """The rows of one run (``machine`` at ``commit``), in the order of ``rows``."""
        return self._rows_at.get((machine, commit), [])

    def snapshot(self, machine: str, **match) -> Snapshot:
        """The newest commit on ``machine`` with rows matching ``match`` (op=, mode=, ...).

        Worked out once per question: a build asks the same ones hundreds of times (every table row, chart and stamp),
        and each answer is a pass over every stored row.
        """
        key = (machine, tuple(sorted(match.items())))
        if key not in self._snapshots:
            commit, rows = history.snapshot(self.rows_on(machine), self.order, set(VARIANTS), machine=machine,
                                            **match)
            self._snapshots[key] = Snapshot(self.run(machine, commit) if commit else None, rows)
        return self._snapshots[key]

    def modes(self, machine: str, op: str | None = None) -> list[str]:
        present = {r["mode"] for r in self.rows_on(machine) if op is None or r["op"] == op}
        return [m for m in MODES if m in present]

    def dtypes(self, op: str | None = None, machine: str | None = None) -> list[str]:
        """The dtypes timed (of one op, on one machine), float32 first."""
        rows = self.rows if machine is None else self.rows_on(machine)
        return sorted({r["dtype"] for r in rows if r["mode"] in MODES and (op is None or r["op"] == op)},
                      key=dtype_order)

    @cached_property
    def raw_subjects(self) -> dict[str, str]:
        """Commit hash -> first line of its message as git has it (empty without git)."""
        try:
            out = subprocess.run(["git", "-C", str(self.repo), "log", "--format=%H%x09%s", "--all"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        return dict(line.split("\t", 1) for line in out.stdout.splitlines() if "\t" in line)

    @cached_property
    def subjects(self) -> dict[str, str]:
        """Commit hash -> the first line of its message as the site shows it (:func:`clean_subject`): a line that
        is about how the work was run rather than about kernelscope reads as what the commit holds in results."""
        return {c: clean_subject(s, lambda c=c: self.results_summary(c)) for c, s in self.raw_subjects.items()}

    def results_summary(self, commit: str) -> str:
        """'results for 1,232 cases of square, mean, softmax and gelu' (every machine's), from the rows alone."""
        rows = [r for m in self.machines for r in self.rows_at(m, commit)]
        if not rows:
            return "Changes outside the measured results"
        ops = [op for op in OPS if any(r["op"] == op for r in rows)]
        return f"Results for {len(rows):,} cases of " + (" and ".join([", ".join(ops[:-1]), ops[-1]]) if len(ops) > 1
                                                         else ops[0])

    def unrolled(self, machine: str, commit: str) -> dict[str, tuple]:
        """asv's unrolled results of one run (:func:`kernelscope.results.compare.unrolled`), read once a build."""
        key = (machine, commit)
        if key not in self._unrolled:
            from kernelscope.results import compare

            self._unrolled[key] = compare.unrolled(compare.Run(self.results_dir, commit, machine))
        return self._unrolled[key]

    def moved(self, machine: str, before: str, after: str, factor: float = 1.1) -> dict[str, int]:
        """How the cases measured at both commits on ``machine`` moved, by `asv compare`'s rule (its marks: ``+``
        slower, ``-`` faster, ``!`` newly failing, ``*`` fixed, ``x`` version changed), and how many were compared
        (measured at both under one benchmark version).

        Only a pair whose ratio passes ``factor`` either way, a failure or a version change goes to the statistics
        (:func:`kernelscope.results.compare.mark_of`): the others are unmarked by the rule's first test, and the
        statistics are most of a comparison's cost."""
        from kernelscope.results import compare

        a, b = self.unrolled(machine, before), self.unrolled(machine, after)
        counts = {"compared": 0, "+": 0, "-": 0, "!": 0, "*": 0, "x": 0}
        for name in a.keys() & b.keys():
            va, vb = a[name][0], b[name][0]
            version_a, version_b = a[name][3], b[name][3]
            measured = all(isinstance(v, float) and not math.isnan(v) for v in (va, vb))
            changed = version_a is not None and version_b is not None and version_a != version_b
            counts["compared"] += measured and not changed
            if measured and not changed and not (vb < va / factor or va < vb / factor):
                continue
            mark = compare.mark_of(a[name], b[name], factor)
            if mark in counts:
                counts[mark] += 1
        return counts


# How the work was organized, not what kernelscope is: a subject that names any of it reads as its results instead.
PROCESS_WORDS = re.compile(r"\bsessions?\b|\bleas(?:e|es|ed)\b|\bdevice tool\b|\b(?:the|a|its) carry\b|\bcarry-repo\b|"
                           r"\bresults-proofs\b|\bproofs README\b", re.I)
# A reference to an issue: "(#N)", "(#N item M)", "#N: ", "issue #N's", "#N item M"
ISSUE_IN_PARENS = re.compile(r"\s*\((?:issue\s+)?#\d+(?:\s+item\s+\d+)?(?:'s)?\)")
ISSUE = re.compile(r"(?:\bissue\s+)?#\d+(?:'s)?(?:\s+item\s+\d+)?(?::)?\s*")


def clean_subject(subject: str, summary=None) -> str:
    """A commit subject as the site prints it: its first line, issue references taken out, and, where it speaks
    of how the work was run (``PROCESS_WORDS``), ``summary()`` in its place (what the commit holds, from data)."""
    line = (subject or "").strip().splitlines()[0] if (subject or "").strip() else ""
    if PROCESS_WORDS.search(line):
        return summary() if summary else "changes to kernelscope"
    cleaned = ISSUE.sub("", ISSUE_IN_PARENS.sub("", line))
    if cleaned == line:
        return line
    cleaned = re.sub(r"\(\s+", "(", re.sub(r"\s+([,;:.)])", r"\1", re.sub(r"\s{2,}", " ", cleaned))).strip(" ,;:")
    cleaned = re.sub(r"\(\s*[,;]?\s*\)", "", cleaned).strip()
    if not cleaned:
        return summary() if summary else "changes to kernelscope"
    return cleaned[:1].upper() + cleaned[1:] if line[:1] == "#" else cleaned


def short_subject(subject: str, limit: int = 110) -> str:
    """``subject`` cut at a word before ``limit`` characters, with an ellipsis where it was cut."""
    if len(subject) <= limit:
        return subject
    return subject[:limit].rsplit(" ", 1)[0].rstrip(" ,;:(") + "…"


def dtype_order(dtype: str) -> tuple[bool, str]:
    """float32 first (every variant is timed in it), then the others by name."""
    return (dtype != "float32", dtype)


KINDS = ("lecture", "tuned", "other")
KIND_WORDS = {"lecture": "the lecture's code, kept as it teaches", "tuned": "written for speed",
              "other": "a study beside them"}


def variant_kind(name: str) -> str:
    """'lecture' (faithful to the lecture), 'tuned' (written for speed) or 'other', from the catalog's flags."""
    v = VARIANTS.get(name)
    if v is None:
        return "other"
    if v.lecture:
        return "lecture"
    return "tuned" if getattr(v, "tuned", False) else "other"


def largest_shape(op: str) -> str:
    """The op's largest benchmark size, as result rows spell it."""
    shapes = OPS[op].bench_shapes
    return "x".join(map(str, max(shapes, key=numel)))


def in_sweep(size: str) -> bool:
    """Square 2-D shapes and 1-D sizes form an op's size sweep; other shapes are row-shape studies."""
    shape = parse_shape(size)
    return len(shape) == 1 or shape[0] == shape[1]


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            value = seconds / scale
            break
    else:
        unit, value = "ns", seconds / 1e-9
    return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"


def fmt_gbps(gbps: float | None) -> str:
    if gbps is None:
        return "—"
    return f"{gbps:.1f} GB/s" if gbps < 10 else f"{gbps:,.0f} GB/s"


def fmt_pct(pct: float | None) -> str:
    return "—" if pct is None else f"{pct:.0f}%"


def fmt_ci(row: dict) -> str:
    """'[712 µs, 714 µs]'; 'under 714 µs' where asv's lower bound is zero or below (no time is); '' without one."""
    if row.get("ci_low") is None or row.get("ci_high") is None:
        return ""
    low = ci_low_of(row)
    return f"[{fmt_time(low)}, {fmt_time(row['ci_high'])}]" if low else f"under {fmt_time(row['ci_high'])}"


def ci_low_of(row: dict) -> float | None:
    """asv's lower bound of the interval, or None where it has none or it falls below zero: with three
    process values, one far off (a launch-bound case where one process read 5x), asv's bound can, and no
    time is that short."""
    low = row.get("ci_low")
    return low if low and low > 0 else None
