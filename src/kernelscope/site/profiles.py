"""What the site knows of ``profiles/``: the artifacts ``kernelscope profile`` captured, per machine.

Read once per build through :mod:`kernelscope.profiling.artifacts` (its readers
own the folder layout; nothing here opens a path that module does not name).
``KERNELSCOPE_PROFILES_DIR`` builds the site from another folder (the tests'
fixture). A missing folder, or one with no machine in it, is not an error: the
pages say "No profiles yet" and give the command that captures them.

Also here: the formatting of ncu's numbers and rule hints as the pages show
them. The cross-check against the warm timings is
:mod:`kernelscope.profiling.crosscheck`'s, the table ``kernelscope`` prints.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.catalog import VARIANTS
from kernelscope.profiling import artifacts
from kernelscope.profiling.artifacts import CodeArtifact, Demos, Hint, KernelMetrics, Manifest, VariantProfile

PROFILES_ENV = "KERNELSCOPE_PROFILES_DIR"
PROFILE_COMMAND = "kernelscope profile --ncu --demos"
NO_PROFILES = (f"No profiles yet. On a GPU box, `{PROFILE_COMMAND}` captures them into `profiles/<machine>/` "
               "(torch.profiler tables and traces, Nsight Compute metrics and hints, compiled code, the lecture's "
               "demos); commit `profiles/` and rebuild the site.")

# Compiled code as the pages show it: (tab title, lexer). Pygments' own PTX lexer keeps PTX intact (it marks
# predicate guards `@%p1` as unknown, which Material leaves unstyled); for SASS the GNU assembler lexer is the
# closest that reads cuobjdump's `/*0010*/` offsets and encodings as comments (NASM's reads them as errors).
CODE_KINDS = {"ptx": ("PTX", "ptx"), "sass": ("SASS", "gas"), "ptxas": ("ptxas report", "text"),
              "inductor": ("Inductor's code", None)}
LONG_CODE_LINES = 60  # longer code blocks are collapsed


class ProfilesError(ValueError):
    """A profiles folder the site cannot read: the message names the file."""


@dataclass
class MachineProfiles:
    name: str  # the folder's name: asv's machine name, as results/ spells it
    dir: Path
    manifest: Manifest
    variants: dict[str, VariantProfile] = field(default_factory=dict)
    demos: Demos | None = None

    def variant_dir(self, variant: str) -> Path:
        return artifacts.variant_dir(self.dir, variant)

    def text(self, variant: str, file: str) -> str:
        return artifacts.read_text(self.variant_dir(variant) / file)


def _catalog_order(name: str) -> tuple[int, str]:
    names = list(VARIANTS)
    return (names.index(name) if name in VARIANTS else len(names), name)


class ProfileData:
    def __init__(self, root: str | Path | None):
        self.root = Path(root) if root is not None else None
        self.machines: dict[str, MachineProfiles] = {}
        if self.root is None or not self.root.is_dir():
            return
        for machine_dir in artifacts.machines(self.root):
            self.machines[machine_dir.name] = self._load(machine_dir)

    @staticmethod
    def _load(machine_dir: Path) -> MachineProfiles:
        where = machine_dir / "manifest.json"
        try:
            manifest = artifacts.read_manifest(machine_dir)
            names = sorted({p.parent.name for p in machine_dir.glob("*/profile.json")}, key=_catalog_order)
            variants = {}
            for name in names:
                where = artifacts.variant_dir(machine_dir, name) / "profile.json"
                variants[name] = artifacts.read_variant(machine_dir, name)
            where = machine_dir / "demos.json"
            demos = artifacts.read_demos(machine_dir)
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ProfilesError(f"{where}: {type(exc).__name__}: {exc}") from exc
        return MachineProfiles(machine_dir.name, machine_dir, manifest, variants, demos)

    @property
    def empty(self) -> bool:
        return not self.machines

    def variants(self) -> list[str]:
        """Every variant profiled on any machine, in catalog order."""
        return sorted({v for m in self.machines.values() for v in m.variants}, key=_catalog_order)

    def profile(self, machine: str, variant: str) -> VariantProfile | None:
        m = self.machines.get(machine)
        return m.variants.get(variant) if m else None

    def has_demos(self) -> bool:
        return any(m.demos for m in self.machines.values())

    def files(self) -> list[tuple[Path, str]]:
        """Artifact files the site ships for download: (file on disk, path in the site)."""
        out = []
        for m in self.machines.values():
            for name, vp in m.variants.items():
                for rel in (vp.torch.trace_file if vp.torch else None, vp.ncu_text_file):
                    if rel and (m.variant_dir(name) / rel).is_file():
                        out.append((m.variant_dir(name) / rel, site_path(m.name, name, rel)))
        return out


def site_path(machine: str, variant: str, rel: str) -> str:
    """Where an artifact file lies in the built site (beside the pages, as in the repository)."""
    return f"profiles/{machine}/{variant}/{rel}"


def ncu_per_call_us(vp: VariantProfile) -> float | None:
    """Nsight Compute's kernel time of one call: the sum over the launches it recorded (one call's launches)."""
    if not vp.ncu:
        return None
    return sum(k.duration_us for k in vp.ncu)


# --- formatting ------------------------------------------------------------------------------------------------------

def fmt_us(us: float | None) -> str:
    """A kernel duration as ncu prints it (two decimals), in ms from 10,000 µs."""
    if us is None:
        return "—"
    return f"{us:,.2f} µs" if us < 10_000 else f"{us / 1000:,.3f} ms"


def fmt_ncu_pct(pct: float | None) -> str:
    return "—" if pct is None else f"{pct:.4g}%"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "—"
    return f"{n} B" if n < 1024 else f"{n / 1024:.3g} KiB"


def fmt_dims(dims: tuple[int, ...]) -> str:
    """(16384, 1, 1) as '16,384'; (256, 256, 1) as '256 x 256'."""
    dims = tuple(dims)
    while len(dims) > 1 and dims[-1] == 1:
        dims = dims[:-1]
    return " x ".join(f"{d:,}" for d in dims) if dims else "—"


def fmt_occupancy(k: KernelMetrics) -> str:
    achieved, theoretical = k.achieved_occupancy_pct, k.theoretical_occupancy_pct
    if achieved is None:
        return "—"
    return fmt_ncu_pct(achieved) + (f" of {fmt_ncu_pct(theoretical)}" if theoretical is not None else "")


def short_kernel(name: str) -> str:
    """A demangled kernel name without namespaces, template arguments and parameters: what a table can hold."""
    plain = re.sub(r"^void\s+", "", name.strip())
    depth, cut = 0, len(plain)
    for i, c in enumerate(plain):  # the first '<', '(' or '[' outside brackets ends the qualified name
        if c in "<([" and depth == 0:
            cut = i
            break
    plain = plain[:cut]
    return plain.rsplit("::", 1)[-1] or name


def fmt_speedup(h: Hint) -> str:
    if h.speedup_pct is None:
        return ""
    kind = f"{h.speedup_type.title()} " if h.speedup_type else ""
    return f"Est. {kind}Speedup: {h.speedup_pct:g}%"


def hint_text(h: Hint, width: int = 100) -> str:
    """One rule result laid out as Nsight Compute prints it: the type in a column, the text wrapped beside it."""
    body = textwrap.wrap(" ".join(h.text.split()), width=width - 10) or [""]
    speedup = fmt_speedup(h)
    if speedup:  # OPT   Est. Local Speedup: 19.4%, then the text under it
        first, rest = speedup, body
    else:  # INF   the text, from the first line
        first, rest = body[0], body[1:]
    return "\n".join([f"{h.type:<5} {first}"] + [f"      {line}" for line in rest])


def hints_text(hints: list[Hint]) -> str:
    """Every hint of a kernel under its section's name, as in ncu's details page."""
    blocks = []
    for h in hints:
        blocks.append(f"Section: {h.section}  [rule {h.rule}]\n" + textwrap.indent(hint_text(h), "    "))
    return "\n\n".join(blocks)


HINT_ORDER = ("ERR", "WRN", "OPT", "INF")


def hints_summary(hints: list[Hint]) -> str:
    """'1 OPT, 1 INF' (or 'none'): the rule results by type, the actionable first."""
    if not hints:
        return "none"
    counts: dict[str, int] = {}
    for h in hints:
        counts[h.type] = counts.get(h.type, 0) + 1
    order = lambda t: (HINT_ORDER.index(t) if t in HINT_ORDER else len(HINT_ORDER), t)  # noqa: E731
    return ", ".join(f"{counts[t]} {t}" for t in sorted(counts, key=order))


def versions_text(manifest: Manifest) -> str:
    return ", ".join(f"{k} {v}" for k, v in manifest.versions.items() if v)


def code_title(c: CodeArtifact) -> str:
    facts = [f"{c.registers} registers" if c.registers is not None else "",
             f"{fmt_bytes(c.shared_bytes)} shared" if c.shared_bytes is not None else "",
             f"{c.spills} spills" if c.spills is not None else "", c.source]
    return f"{c.kernel}" + (f" ({', '.join(f for f in facts if f)})" if any(facts) else "")


def code_language(c: CodeArtifact) -> str:
    lexer = CODE_KINDS.get(c.kind, (None, None))[1]
    return lexer or c.language or "text"


def fence(text: str, language: str, title: str | None = None) -> str:
    """A fenced code block that cannot be closed early by backticks in the code."""
    ticks = "`" * max(3, max((len(m) for m in re.findall(r"`{3,}", text)), default=0) + 1)
    opts = f' title="{title}"' if title else ""
    return f"{ticks} {language}{opts}\n{text.rstrip()}\n{ticks}"


def file_size(path: Path) -> str:
    n = path.stat().st_size
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.0f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB"
