"""Markdown building blocks the generated pages share: tables, tabs, notes, charts."""

from __future__ import annotations

import json

from kernelscope.site.data import KIND_WORDS, variant_kind

WIDE = "---\nhide:\n  - toc\n---\n\n"  # front matter: results tables need the table-of-contents column


def indent(text: str, spaces: int = 4) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else line for line in text.splitlines())


def tabs(items: list[tuple[str, str]]) -> str:
    """Material content tabs (linked by label across the site); one item is shown without a tab."""
    if len(items) == 1:
        return items[0][1]
    return "\n\n".join(f'=== "{label}"\n\n{indent(body)}' for label, body in items)


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    align = align or ["l"] + ["r"] * (len(header) - 1)
    rule = ["---:" if a == "r" else ":---:" if a == "c" else "---" for a in align]
    esc = lambda c: str(c).replace("|", "\\|")  # noqa: E731
    return "\n".join("| " + " | ".join(map(esc, r)) + " |" for r in [header, rule, *rows])


def chart(spec: dict) -> str:
    return "```vegalite\n" + json.dumps(spec, indent=1) + "\n```"


def note(kind: str, title: str, body: str) -> str:
    return f'!!! {kind} "{title}"\n\n{indent(body)}'


def kind_badge(name: str) -> str:
    """A small label after a variant's name: 'lecture' or 'tuned' (the catalog's flags); nothing for the others."""
    kind = variant_kind(name)
    return "" if kind == "other" else f'<span class="ks-kind ks-kind-{kind}" title="{KIND_WORDS[kind]}">{kind}</span>'


def variant_cell(name: str, link: str | None = None) -> str:
    """A variant's name for a table cell, as code (linked when ``link``), with its kind badge."""
    code = f"[`{name}`]({link})" if link else f"`{name}`"
    badge = kind_badge(name)
    return f"{code} {badge}" if badge else code
