"""The answer on the pages: a table per op page, and a chooser on the Overview (:mod:`kernelscope.site.answers`)."""

from __future__ import annotations

from kernelscope.ops import numel, parse_shape
from kernelscope.site.answers import FACTOR, Answer, answers, answers_for
from kernelscope.site.data import MODE_WORDS, MODES, SiteData, dtype_order, fmt_time
from kernelscope.site.markdown import table, tabs

RULE_WORDS = (
    f"A variant ties with the fastest where `asv compare`'s rule cannot tell them apart: it counts a difference "
    f"only when the slower median is more than {FACTOR - 1:.0%} over the faster **and** the two differ "
    "significantly (their samples, or else their 99% intervals). *Next* is the fastest variant the rule does tell "
    "apart, with how much slower it is.")

MODE_QUESTIONS = {  # what each mode's answer is for, in the reader's terms
    "warm": "the GPU's time for a call among many, launches queued ahead",
    "cold": "one call on its own, its input not in L2",
    "graph": "calls replayed from a CUDA graph, no launch cost",
    "host": "a Python loop of calls, the host's cost included: the answer for small tensors called from Python",
}


def slower(row: dict, best: dict) -> str:
    """How much slower ``row``'s median is than the best's: '+3.1%', '+24%', or '7.7x' from twice on."""
    ratio = row["time_s"] / best["time_s"]
    if ratio >= 2:
        return f"{ratio:.1f}x"
    pct = 100 * (ratio - 1)
    return f"+{pct:.1f}%" if pct < 10 else f"+{pct:.0f}%"


def short_name(variant: str, op: str) -> str:
    """A variant's name without its op (``softmax-triton-tuned`` -> ``triton-tuned``) inside its op's page."""
    return variant.removeprefix(op + "-")


def _rows(found: list[Answer], op: str) -> list[list[str]]:
    out = []
    for a in found:
        ties = ", ".join(f"`{short_name(r['variant'], op)}` {slower(r, a.best)}" for r in a.ties) or "none"
        after = (f"`{short_name(a.after['variant'], op)}` {slower(a.after, a.best)}" if a.after
                 else f"none: all {a.variants} tie")
        out.append([a.size, f"**`{short_name(a.best['variant'], op)}`**", fmt_time(a.best["time_s"]), after, ties])
    return out


def op_section(data: SiteData, op: str, machine: str) -> str:
    """'Which variant at which size' for one op on one machine: a tab per mode, a table per dtype."""
    found = answers_for(data, machine, op)
    if not found:
        return ""
    items = []
    for mode in MODES:
        here = [a for a in found if a.mode == mode]
        if not here:
            continue
        dtypes = sorted({a.dtype for a in here}, key=dtype_order)
        per_dtype = [(dtype, table(["size", "fastest", "median", "next (slower by)", "ties (slower by)"],
                                   _rows([a for a in here if a.dtype == dtype], op), ["l", "l", "r", "l", "l"]))
                     for dtype in dtypes]  # a tab a dtype where there are several (linked across the site)
        items.append((mode, f"*{MODE_QUESTIONS.get(mode, MODE_WORDS[mode])}.*\n\n" + tabs(per_dtype)))
    return "\n\n".join(["## Which variant at which size\n",
                        f"The fastest variant at each size, per timing mode. {RULE_WORDS} Names drop the op's "
                        f"prefix (`torch` is `{op}-torch`).\n", tabs(items)])


def records(data: SiteData) -> list[dict]:
    """data/answers.json: every answer, for the Overview's chooser."""
    out = []
    for a in answers(data):
        out.append({
            "machine": a.machine, "gpu": a.best.get("gpu") or a.machine, "op": a.op, "mode": a.mode,
            "dtype": a.dtype, "size": a.size, "numel": numel(parse_shape(a.size)), "commit": a.best["commit"][:8],
            "best": _entry(a.best), "ties": [_entry(r, a.best) for r in a.ties],
            "next": _entry(a.after, a.best) if a.after else None, "variants": a.variants,
        })
    return out


def _entry(row: dict, best: dict | None = None) -> dict:
    entry = {"variant": row["variant"], "time": fmt_time(row["time_s"]),
             "pct": None if row.get("pct_of_peak") is None else round(row["pct_of_peak"], 1)}
    if best is not None:
        entry["slower"] = slower(row, best)
    return entry


CHOOSER = (
    "## Which variant should I use?\n\n"
    "Pick an op, a size, a dtype, a GPU and how you call it; the answer is the fastest variant measured there, the "
    "variants that tie with it and the next one apart. " + RULE_WORDS + " Each op page has the whole table.\n\n"
    '<div class="ks-chooser" data-src="../data/answers.json" data-modes="{modes}">'
    "<noscript>The chooser needs JavaScript; each op page has the same answers as a table.</noscript></div>\n")


def chooser(data: SiteData) -> str:
    """The Overview's chooser (drawn by assets/chooser.js from data/answers.json); nothing without answers."""
    if not answers(data):
        return ""
    modes = ";".join(f"{m}={MODE_QUESTIONS.get(m, MODE_WORDS[m])}" for m in MODES)
    return CHOOSER.format(modes=modes.replace('"', "&quot;"))
