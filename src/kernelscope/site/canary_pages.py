"""The method page's "An injected slowdown is caught" section, from ``evidence/<machine>/canary.json``.

Per machine: what each canary level injected, whether ``asv continuous``
exited 1 and what it flagged, then, per slowed benchmark, each size's ratio,
asv's mark and the base's 99% half-width beside it. A slowdown smaller than
that half-width cannot be told from noise by any rule, and asv flags only a
ratio past its factor; one past both should be flagged. Every number is canary.json's (:mod:`kernelscope.evidence.canary`).
"""

from __future__ import annotations

from kernelscope.evidence import canary
from kernelscope.site.markdown import tabs

CANARY_COMMAND = "bash scripts/gpu/canary.sh"
NO_CANARY = (f"*(no canary run yet: `{CANARY_COMMAND}` on a GPU box makes commits that slow one variant's kernel "
             "by 10% and 20%, runs `asv continuous` against each, and writes `evidence/<machine>/canary.json`)*")


def _n(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _cell(r: dict | None, factor: float) -> str:
    if r is None or r["ratio"] is None:
        return "n/a"
    hw = "" if r["base_halfwidth_pct"] is None else f" (±{r['base_halfwidth_pct']:.1f}%)"
    verdict = canary.verdict(r, factor)
    return f"{r['ratio']:.3f}{hw}: " + (f"**{verdict}**" if verdict in ("caught", "missed") else verdict)


def machine_section(data: dict) -> str:
    heads = canary.level_heads(data)
    bases = [lv.get("base", data["commit"]) for lv in data["levels"]]
    apart = len(set(bases)) > 1  # levels run apart and merged into one file, each against its own base
    at = "" if apart else f"At `{data['commit'][:8]}`, "
    out = [f"{at}`{data['command'] or CANARY_COMMAND}`, {data['date'][:10]}; "
           f"`asv continuous` with factor {data['factor']:g}.", ""]
    for h, lv, base in zip(heads, data["levels"], bases):
        alarms = lv["false_alarms"]
        against = f" against `{base[:8]}`" if apart else ""
        out.append(f"- **{h}** (`{lv['inject']}`){against}: `asv continuous` exit {lv['exit_code']}; "
                   f"{_n(len(lv['flagged']), 'benchmark', 'benchmarks')} flagged slower, "
                   f"{_n(len(lv['missed']), 'slowed one', 'slowed ones')} missed (past the factor and the interval, "
                   "not flagged), "
                   f"{_n(len(alarms), 'other', 'others')} flagged" + (": " + ", ".join(f"`{a}`" for a in alarms) if alarms else ""))
    for (variant, cls, method, dtype), by_size in canary.detection(data):
        out += ["", f"`{variant}`, `{cls}.{method}`" + (f", {dtype}" if dtype else "") + ": the canary's time over "
                "the base's, (± the base's 99% half-width), and asv's verdict", "",
                "| size | " + " | ".join(heads) + " |", "|---|" + "---:|" * len(heads)]
        for size, levels in by_size.items():
            out.append(f"| {size or '-'} | " + " | ".join(_cell(levels.get(i), data["factor"]) for i in range(len(heads))) + " |")
    return "\n".join(out)


def detection_section(canaries: dict[str, dict]) -> str:
    """Every machine's canary evidence (tabs when there are several), or how to make it."""
    if not canaries:
        return NO_CANARY
    if len(canaries) == 1:
        (name, data), = canaries.items()
        return f"On {name}:\n\n" + machine_section(data)
    return tabs([(name, machine_section(data)) for name, data in canaries.items()])
