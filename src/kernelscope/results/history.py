"""Which results are current, and in what order commits came.

asv orders a branch's commits by the repository's history; result files carry
only the commit's date, and commits made in the same second (a rebase) tie.
:func:`commit_order` asks git for the topological order when the repository
is there and falls back to the dates otherwise. :func:`snapshot` picks, per
machine, the newest commit that measured something: the numbers a results page
shows, all from one commit, so each can be stamped with it. A run of some of
the variants (``asv run -b`` of one) is part of a page's history, not its page:
where an older run measured more of the variants, the page stays on the newest
such run (:func:`newest_whole`).
"""

from __future__ import annotations

import operator
import subprocess
from collections.abc import Iterable
from pathlib import Path


def git_positions(repo: str | Path = ".") -> dict[str, int]:
    """Full commit hash -> position in ``git rev-list --topo-order HEAD``, oldest first ({} without git)."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-list", "--topo-order", "--reverse", "HEAD"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if out.returncode != 0:
        return {}
    return {sha: i for i, sha in enumerate(out.stdout.split())}


def commit_order(records: Iterable[dict], positions: dict[str, int] | None = None) -> list[str]:
    """The commits of ``records`` (dicts with ``commit`` and ``date``), oldest first.

    By commit date, ties broken by git's order; commits git does not know
    (results of a branch since rewritten) sort by date alone.
    """
    positions = positions or {}
    dates: dict[str, int] = {}
    for r in records:
        dates[r["commit"]] = max(dates.get(r["commit"], 0), r.get("date") or 0)
    return sorted(dates, key=lambda c: (dates[c], positions.get(c, -1), c))


def matching(rows: list[dict], **match) -> list[dict]:
    """The rows whose every key in ``match`` has the value given (a missing key reads None), in their order."""
    keys, values = tuple(match), tuple(match.values())
    return [r for r in rows if all(map(operator.eq, map(r.get, keys), values))]  # no Python frame a row


def newest_whole(rows: list[dict], order: list[str], variants: set[str] | None = None) -> str | None:
    """The newest commit among ``rows`` whose variants are not a strict part of an older commit's: a run of some
    variants leaves the rows to the newest run before it that measured more. ``variants``: those that count (the
    catalog's: a variant since removed is in no new run); None: every variant the rows name."""
    measured: dict[str, set] = {}
    for r in rows:
        measured.setdefault(r["commit"], set()).add(r.get("variant"))
    if variants is not None:
        measured = {c: v & variants for c, v in measured.items()}
    ordered = [c for c in order if c in measured]
    for i in range(len(ordered) - 1, -1, -1):
        if not any(measured[ordered[i]] < measured[older] for older in ordered[:i]):
            return ordered[i]
    return None


def snapshot(rows: list[dict], order: list[str], variants: set[str] | None = None,
             **match) -> tuple[str | None, list[dict]]:
    """The newest whole commit (:func:`newest_whole`) with rows matching ``match`` (e.g. machine=..., op=...,
    mode=...), and those rows."""
    selected = matching(rows, **match)
    commit = newest_whole(selected, order, variants)
    return commit, [r for r in selected if r["commit"] == commit]


def last_two(rows: list[dict], order: list[str], **match) -> tuple[str, str] | None:
    """The newest commit with rows matching ``match`` and the newest one before it that measured any of the same
    cases (a run of one op's classes leaves the others' cases to older commits), older first; None if none did."""
    cases: dict[str, set] = {}
    for r in matching(rows, **match):
        key = (r.get("benchmark"), r.get("variant"), r.get("size"), r.get("dtype"), r.get("host"))
        cases.setdefault(r["commit"], set()).add(key)
    ordered = [c for c in order if c in cases]
    if not ordered:
        return None
    newest = ordered[-1]
    before = next((c for c in reversed(ordered[:-1]) if cases[c] & cases[newest]), None)
    return (before, newest) if before else None


def current(rows: list[dict], order: list[str], variants: set[str] | None = None) -> list[dict]:
    """Each (machine, op, mode)'s rows from its newest whole commit (:func:`newest_whole`): what results pages and
    machine comparisons show."""
    by_key: dict[tuple, list[dict]] = {}
    for r in rows:
        by_key.setdefault((r["machine"], r["op"], r["mode"]), []).append(r)
    chosen = {key: newest_whole(group, order, variants) for key, group in by_key.items()}
    return [r for r in rows if chosen[(r["machine"], r["op"], r["mode"])] == r["commit"]]


STEP = 0.02  # a same-commit rerun puts 98% of the benchmarks of 20 us or more within 2% (the rerun criteria)


def steps(rows: list[dict], order: list[str], step: float = STEP, **match) -> list[dict]:
    """Where the rows matching ``match`` (one benchmark: machine, variant, mode, size, dtype) changed over history.

    Only the rows at the newest commit's benchmark version count: an older version measured something
    else. Returns the commits in order with a result, each with its time, and ``ratio`` (its time over
    the previous commit's) where the move exceeds ``step``: a change a rerun does not make.
    """
    selected = [r for r in matching(rows, **match) if r.get("time_s")]
    newest = newest_commit = None
    position = {c: i for i, c in enumerate(order)}
    for r in selected:
        if newest_commit is None or position.get(r["commit"], -1) > position.get(newest_commit, -1):
            newest, newest_commit = r, r["commit"]
    if newest is None:
        return []
    by_commit = {r["commit"]: r for r in selected if r.get("version") == newest.get("version")}
    out, previous = [], None
    for commit in (c for c in order if c in by_commit):
        t = by_commit[commit]["time_s"]
        ratio = t / previous if previous else None
        out.append({"commit": commit, "time_s": t, "ratio": ratio if ratio and abs(ratio - 1) > step else None})
        previous = t
    return out
