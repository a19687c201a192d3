"""Compare two asv runs of the same commit, with asv's own statistics.

``asv compare A B`` compares two commits; two runs of one commit (a noise
check, or the same code with a switch flipped) land in two results folders
instead. This loads both folders and applies asv's decision rule to every
benchmark and parameter set: a change counts when the ratio passes ``factor``
and the samples differ significantly (Mann-Whitney U on raw samples, else
non-overlapping 99% confidence intervals).
"""

from __future__ import annotations

import math
from pathlib import Path


def _unrolled(results_dir: Path, commit: str | None, machine: str | None):
    from asv.commands.compare import unroll_result
    from asv.results import iter_results

    found = {}
    for result in iter_results(str(results_dir)):
        if commit and not result.commit_hash.startswith(commit):
            continue
        if machine and result.params.get("machine") != machine:
            continue
        for key in result.get_all_result_keys():
            params = result.get_result_params(key)
            unrolled = unroll_result(key, params, result.get_result_value(key, params),
                                     result.get_result_stats(key, params), result.get_result_samples(key, params))
            for name, value, stats, samples in unrolled:
                found[name] = (value, stats, samples)
    return found


def compare_runs(dir_a, dir_b, factor: float = 1.1, commit: str | None = None, machine: str | None = None,
                 use_stats: bool = True) -> list[dict]:
    """One row per benchmark present and measured in both runs."""
    from asv.commands.compare import _is_result_better

    a = _unrolled(Path(dir_a), commit, machine)
    b = _unrolled(Path(dir_b), commit, machine)
    if not a:
        raise FileNotFoundError(f"no results in {dir_a}" + (f" for commit {commit}" if commit else ""))
    if not b:
        raise FileNotFoundError(f"no results in {dir_b}" + (f" for commit {commit}" if commit else ""))
    rows = []
    for name in sorted(a.keys() & b.keys()):
        va, sa, xa = a[name]
        vb, sb, xb = b[name]
        if va is None or vb is None or (isinstance(va, float) and math.isnan(va)) or \
                (isinstance(vb, float) and math.isnan(vb)):
            continue
        worse = _is_result_better(va, vb, (sa, xa), (sb, xb), factor, use_stats=use_stats)
        better = _is_result_better(vb, va, (sb, xb), (sa, xa), factor, use_stats=use_stats)
        rows.append({"benchmark": name, "a": va, "b": vb, "ratio": vb / va if va else float("inf"),
                     "mark": "+" if worse else "-" if better else " "})
    return rows


def summary(rows: list[dict], within: float = 0.02) -> dict:
    """Counts over all rows, and the same per timing mode (``by_mode``)."""
    from kernelscope.results.export import MODES

    def counts(part):
        n = len(part)
        close = sum(abs(r["ratio"] - 1) < within for r in part)
        return {"benchmarks": n, "flagged_worse": sum(r["mark"] == "+" for r in part),
                "flagged_better": sum(r["mark"] == "-" for r in part),
                f"within_{within:.0%}": close, "fraction_within": close / n if n else float("nan")}

    def mode(row):  # "benchmarks.Square.time_warm('square-torch', ...)" -> "warm"
        method = row["benchmark"].split("(")[0].rsplit(".", 1)[-1]
        return MODES.get(method, method)

    by_mode: dict[str, list[dict]] = {}
    for r in rows:
        by_mode.setdefault(mode(r), []).append(r)
    return {**counts(rows), "by_mode": {m: counts(part) for m, part in sorted(by_mode.items())}}
