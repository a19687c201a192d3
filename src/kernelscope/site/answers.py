"""Which variant to use: per machine, op, timing mode, dtype and size, the fastest variant and what ties it.

The question a reader brings is "which variant should I use for this op at
this size on my GPU, and how sure is that?". The answer here is asv's own:
the fastest variant by median, the variants that ``asv compare``'s rule cannot
tell apart from it (:func:`kernelscope.results.compare.mark_of`: slower by
more than the factor *and* significantly so, Mann-Whitney U on the raw
samples or non-overlapping 99% intervals), named as ties, and the first
variant the rule does tell apart, with its margin. Every mode is answered, host
mode included: for a small tensor called from a Python loop, the host's cost
of a call decides, not the GPU's.

The rows are the ones the results pages show (each machine, op and mode's
newest commit); the samples and intervals the rule reads come from the same
result files.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from kernelscope.ops import numel, parse_shape
from kernelscope.results import compare
from kernelscope.site.data import MODES, SiteData, dtype_order

FACTOR = 1.1  # asv compare's default: a change under 10% is never a difference


@dataclass(frozen=True)
class Answer:
    """One (machine, op, mode, dtype, size): its fastest variant, the ties, and the next one apart."""

    machine: str
    op: str
    mode: str
    dtype: str
    size: str
    best: dict  # the fastest row
    ties: tuple[dict, ...]  # slower by median, but not apart from the best by asv's rule; fastest first
    after: dict | None  # the fastest row the rule tells apart from the best (None: every variant ties)
    variants: int  # how many variants were measured here

    @property
    def margin(self) -> float | None:
        """How much slower the first variant apart from the best is: its time over the best's."""
        return self.after["time_s"] / self.best["time_s"] if self.after else None


def case_key(row: dict) -> str:
    """The name asv gives a row's case when it unrolls a result file: ``benchmarks.X.time_warm('v', 's', 'd')``."""
    params = [row["variant"], row["size"], row["dtype"]] + ([row["host"]] if row.get("host") else [])
    return f"{row['benchmark']}({', '.join(map(repr, params))})"


def apart(best: tuple, other: tuple) -> bool:
    """Whether asv compare's rule tells ``other`` from ``best``: slower by the factor and significantly."""
    return compare.mark_of(best, other, FACTOR) == "+"


def answer(rows: list[dict], cases: dict[str, tuple]) -> Answer | None:
    """The answer for the measured rows of one (machine, op, mode, dtype, size); ``cases``: their unrolled results."""
    timed = sorted((r for r in rows if r["status"] == "measured" and r.get("time_s")), key=lambda r: r["time_s"])
    if not timed:
        return None
    best, ties, after = timed[0], [], None

    def result(row):  # a row the files lack (a test's rows): its median and interval, without samples
        return cases.get(case_key(row)) or (row["time_s"], {"ci_99_a": row.get("ci_low"),
                                                           "ci_99_b": row.get("ci_high")}, None, None)

    for row in timed[1:]:
        if apart(result(best), result(row)):
            after = row
            break
        ties.append(row)
    return Answer(best["machine"], best["op"], best["mode"], best["dtype"], best["size"], best, tuple(ties), after,
                  len(timed))


_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def answers(data: SiteData) -> list[Answer]:
    """Every answer the current results give, worked out once a build: machine, op, mode, dtype, then size."""
    if data in _MEMO:
        return _MEMO[data]
    groups: dict[tuple, list[dict]] = {}
    for r in data.current:
        if r["mode"] in MODES and r.get("size"):
            groups.setdefault((r["machine"], r["op"], r["mode"], r["dtype"], r["size"]), []).append(r)
    found = []
    mode_order = {m: i for i, m in enumerate(MODES)}
    for key in sorted(groups, key=lambda k: (k[0], k[1], mode_order[k[2]], dtype_order(k[3]),
                                             numel(parse_shape(k[4])))):
        rows = groups[key]  # one (machine, op, mode): one commit's rows
        got = answer(rows, data.unrolled(rows[0]["machine"], rows[0]["commit"]))
        if got is not None:
            found.append(got)
    _MEMO[data] = found
    return found


def answers_for(data: SiteData, machine: str, op: str) -> list[Answer]:
    return [a for a in answers(data) if a.machine == machine and a.op == op]
