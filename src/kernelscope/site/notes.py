"""Short explanations and lines the results pages share: a commit as one line, a reading over the copy ceiling."""

from __future__ import annotations

from kernelscope.site.data import SiteData, day, short_subject

OVER_COPY_MARK = "⁺"


def commit_line(data: SiteData, machine: str, commit: str, limit: int = 110) -> str:
    """A commit as every page prints it: short hash, commit date and the first line of its subject (cleaned,
    :attr:`SiteData.subjects`): "`c6c28373` (2026-11-26): softmax-cuda: rows too wide for …"."""
    try:
        when = day(data.run(machine, commit).date)
    except KeyError:
        when = "unknown date"
    subject = short_subject(data.subjects.get(commit, "not in this repository's history"), limit)
    return f"`{commit[:8]}` ({when}): {subject}"


def over_copy(row: dict) -> bool:
    """Whether a row's percent of copy reads over 100% as the tables print it (whole percents)."""
    return round(row.get("pct_of_peak") or 0) > 100


def over_copy_note(rows: list[dict], link: str = "../concepts/method.md#percent-of-the-measured-copy-bandwidth") -> str:
    """Why a reading passes 100% of the copy bandwidth, when any of ``rows`` reads so (:func:`over_copy`); else ''.

    For a table that shows percent of copy: put the text under it, and :data:`OVER_COPY_MARK` after each such
    cell's percent. ``link``: the method page's section, relative to the page the table is on."""
    over = [r for r in rows if over_copy(r)]
    if not over:
        return ""
    top = max(r["pct_of_peak"] for r in over)
    return (f"{OVER_COPY_MARK} Over 100% (up to {top:.0f}% here): the copy bandwidth is itself a measured kernel, "
            "a device-to-device copy of 1 GiB (the median of 20 copies, taken once on each box), and the machine's "
            "figure is the median of its boxes'. A kernel whose reads partly hit L2 (warm calls back to back leave "
            "an input that fits there), or that ran on a box whose copy was faster than that median, can pass it; "
            f"no kernel is credited with more bytes than its op needs. [Percent of copy]({link}), "
            f"[bytes and GB/s]({link.partition('#')[0]}#bytes-and-gbs).")
