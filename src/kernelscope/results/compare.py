"""Compare asv results with asv's own decision rule: two runs, two commits, two machines.

``asv compare A B`` compares two commits of one results folder. Two runs of
one commit (a noise check, or the same code with a switch flipped) land in two
results folders instead, and the site's regressions page compares the last two
commits of each machine. All three go through :func:`compare`, which applies
asv's rule to every benchmark and parameter set: a change counts when the
ratio passes ``factor`` and the samples differ significantly (Mann-Whitney U on
raw samples, else non-overlapping 99% confidence intervals). As in ``asv
compare``, a benchmark whose version changed is marked ``x`` and not judged, a
new failure ``!`` and a fixed one ``*``.

Across machines there is no significance to test, only ratios:
:func:`machine_ratios` sets each benchmark's speedup beside the ratio of the
two machines' measured copy bandwidths.
"""

from __future__ import annotations

import ast
import math
import os
from dataclasses import dataclass
from pathlib import Path

from kernelscope import modes


@dataclass(frozen=True)
class Run:
    """The results of one commit (``None``: every commit) on one machine (``None``: any) in a folder."""

    results_dir: Path
    commit: str | None = None
    machine: str | None = None
    env: str | None = None  # one asv environment's results (asv compare -E); None: every env, measured ones first


def _results_of(run: Run):
    """asv's results of ``run``'s folder, less the files of other commits (asv names each ``HASH8-ENV.json``, and
    finds a commit's files by that name too): a site build's comparisons read two files, not every one."""
    from asv import util
    from asv.console import log
    from asv.results import Results, iter_results_paths

    prefix = run.commit[:8] if run.commit else ""
    for root, filename, machine_name in iter_results_paths(str(run.results_dir)):
        if not filename.startswith(prefix):
            continue
        try:  # the rest as asv.results.iter_results
            yield Results.load(os.path.join(root, filename), machine_name=machine_name)
        except util.UserError as exc:
            log.warning(str(exc))


def unrolled(run: Run) -> dict[str, tuple]:
    """``{benchmark(params): (value, stats, samples, version)}`` as asv unrolls them: what :func:`mark_of` judges."""
    from asv.commands.compare import unroll_result

    found = {}
    for result in _results_of(run):
        if run.commit and not result.commit_hash.startswith(run.commit):
            continue
        if run.machine and result.params.get("machine") != run.machine:
            continue
        if run.env and result.env_name != run.env:
            continue
        for key in result.get_all_result_keys():
            params = result.get_result_params(key)
            version = result.benchmark_version.get(key)
            unrolled = unroll_result(key, params, result.get_result_value(key, params),
                                     result.get_result_stats(key, params), result.get_result_samples(key, params))
            for name, value, stats, samples in unrolled:
                # Two environments at one commit (a rerun of what failed in one): a measured value
                # wins over a failure, and either over a skip, whichever file comes first.
                if name not in found or _rank(value) > _rank(found[name][0]):
                    found[name] = (value, stats, samples, version)
    return found


def _rank(value) -> int:
    return 0 if _missing(value) and not _failed(value) else 1 if _failed(value) else 2


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _failed(value) -> bool:
    return value is None


def mark_of(a: tuple, b: tuple, factor: float, use_stats: bool = True) -> str:
    """asv compare's mark for B against A: + worse, - better, x version changed, ! newly failing, * fixed."""
    from asv.commands.compare import _is_result_better

    va, sa, xa, version_a = a
    vb, sb, xb, version_b = b
    if version_a is not None and version_b is not None and version_a != version_b:
        return "x"
    if not _failed(va) and _failed(vb):
        return "!"
    if _failed(va) and not _failed(vb):
        return "*"
    if _missing(va) or _missing(vb):
        return " "
    if _is_result_better(vb, va, (sb, xb), (sa, xa), factor, use_stats=use_stats):
        return "-"
    if _is_result_better(va, vb, (sa, xa), (sb, xb), factor, use_stats=use_stats):
        return "+"
    return " "


def compare(a: Run, b: Run, factor: float = 1.1, use_stats: bool = True, measured_only: bool = True) -> list[dict]:
    """One row per benchmark (present in both, or, without ``measured_only``, in either): A's and B's value,
    B/A and asv's mark.

    ``measured_only`` keeps the rows where both sides have a time (the noise
    check's view); without it, new failures and version changes are listed too.
    """
    found_a, found_b = unrolled(a), unrolled(b)
    for run, found in ((a, found_a), (b, found_b)):
        if not found:
            raise FileNotFoundError(f"no results in {run.results_dir}" + (f" for commit {run.commit}" if run.commit else "")
                                    + (f" on machine {run.machine}" if run.machine else ""))
    rows = []
    absent = (float("nan"), None, None, None)  # a benchmark one side does not have: not run, as asv reads it
    names = found_a.keys() & found_b.keys() if measured_only else found_a.keys() | found_b.keys()
    for name in sorted(names):
        found_a.setdefault(name, absent)
        found_b.setdefault(name, absent)
        va, vb = found_a[name][0], found_b[name][0]
        both = not _missing(va) and not _missing(vb)
        if measured_only and not both:
            continue
        if _missing(va) and _missing(vb) and not (_failed(va) or _failed(vb)):
            continue  # skipped on both sides
        stats_a = found_a[name][1] or {}
        rows.append({"benchmark": name, "a": va, "b": vb,
                     "ratio": (vb / va if va else float("inf")) if both else None,
                     "mark": mark_of(found_a[name], found_b[name], factor, use_stats),
                     "version_a": found_a[name][3], "version_b": found_b[name][3],
                     # A's 99% interval of the median and sample count: what the rerun criteria read
                     "interval_a": (stats_a.get("ci_99_a"), stats_a.get("ci_99_b")),
                     "samples_a": len(found_a[name][2] or [])})
    return rows


def compare_runs(dir_a, dir_b, factor: float = 1.1, commit: str | None = None, machine: str | None = None,
                 use_stats: bool = True, commit_b: str | None = None) -> list[dict]:
    """Two results folders holding runs of the same commit (or B of ``commit_b``: the same code under two hashes)."""
    return compare(Run(Path(dir_a), commit, machine), Run(Path(dir_b), commit_b or commit, machine), factor, use_stats)


def parse_benchmark(name: str) -> dict:
    """``benchmarks.Square.time_warm('square-torch', '64x64', 'float32')`` -> its parts."""
    head, _, args = name.partition("(")
    method = head.rsplit(".", 1)[-1]
    params = ast.literal_eval(f"({args.rstrip(')')},)") if args else ()
    from kernelscope.results.export import MODES

    return {"class": head.split(".")[-2] if head.count(".") >= 1 else "", "method": method,
            "mode": MODES.get(method, method), "params": params}


def machine_ratios(rows: list[dict], machine_a: str, machine_b: str) -> list[dict]:
    """Per benchmark measured on both machines: time on A / time on B, beside copy-bandwidth B / A.

    ``rows`` are export rows already reduced to one per benchmark and machine
    (the newest commit's, see ``history.current``). A ratio above 1 means B is
    faster; a memory-bound kernel that scales with bandwidth sits near the
    bandwidth ratio.
    """
    def key(r):
        return (r["op"], r["variant"], r["mode"], r["size"], r["dtype"])

    on_a = {key(r): r for r in rows if r["machine"] == machine_a and r.get("time_s")}
    on_b = {key(r): r for r in rows if r["machine"] == machine_b and r.get("time_s")}
    out = []
    for k in sorted(on_a.keys() & on_b.keys()):
        ra, rb = on_a[k], on_b[k]
        bw_a, bw_b = ra.get("copy_gbps"), rb.get("copy_gbps")
        out.append({"op": k[0], "variant": k[1], "mode": k[2], "size": k[3], "dtype": k[4],
                    "backend": ra["backend"], "numel": ra["numel"],
                    "time_a": ra["time_s"], "time_b": rb["time_s"], "speedup": ra["time_s"] / rb["time_s"],
                    "bandwidth_ratio": (bw_b / bw_a) if (bw_a and bw_b) else None,
                    "commit_a": ra["commit"], "commit_b": rb["commit"]})
    return out


RERUN_MIN_S = 20e-6  # the rerun criterion: benchmarks of 20 us or more within 2% ...
RERUN_SHARE = 0.95  # ... in 95% of them, as for graph benchmarks and launch-bound medians inside A's interval


def rerun_criteria(rows: list[dict], gpu: bool = True, within: float = 0.02) -> dict:
    """The rerun criteria: the test of two full runs of the same code, over ``compare`` rows.

    ``flagged``: benchmarks asv's rule marks (0 wanted), also per mode. ``long``: warm, cold,
    graph and host benchmarks of RERUN_MIN_S or more sampled in one process, within ``within``
    of each other (host mode's: those the GPU's time sets, since its version 3 samples the
    host-bound ones per process); ``graph``: every graph benchmark, the same. ``per_process``: the
    benchmarks sampled one value per process (launch-bound warm and cold,
    and the first call, a fresh process's host work), whose spread is the
    processes': B's median inside A's 99% interval (host mode's launch-bound
    cases too, from its version 2). Each share should reach
    RERUN_SHARE.
    """
    from kernelscope.timing.processes import launch_bound_result

    def share(part, test):
        hits = sum(bool(test(r)) for r in part)
        return {"benchmarks": len(part), "passing": hits, "share": hits / len(part) if part else float("nan")}

    def close(r):
        return abs(r["ratio"] - 1) < within

    def inside(r):
        lo, hi = r.get("interval_a") or (None, None)
        return lo is not None and hi is not None and lo <= r["b"] <= hi

    moded = [(r, parse_benchmark(r["benchmark"])["mode"]) for r in rows]
    timed = [(r, mode) for r, mode in moded if r["ratio"] is not None]
    sampled = {id(r) for r, mode in timed if mode == "first_call"
               or launch_bound_result(mode, r["a"], "gpu" if gpu else None, r.get("samples_a"))}
    per_process = [r for r, _ in timed if id(r) in sampled]
    long = [r for r, mode in timed if mode in modes.TIMED and r["a"] >= RERUN_MIN_S
            and id(r) not in sampled]
    graph = [r for r, mode in timed if mode == "graph"]
    flagged = [mode for r, mode in moded if r["mark"] in ("+", "-")]
    out = {"flagged": len(flagged), "flagged_by_mode": {m: flagged.count(m) for m in sorted(set(flagged))},
           "long": share(long, close), "graph": share(graph, close), "per_process": share(per_process, inside)}
    out["passed"] = out["flagged"] == 0 and all(
        out[k]["share"] >= RERUN_SHARE for k in ("long", "graph", "per_process") if out[k]["benchmarks"])
    return out


def has_gpu(results_dir, machine: str | None = None) -> bool:
    """Whether the machine (any in the folder, without ``machine``) has a GPU, by its asv machine.json."""
    import json

    paths = [Path(results_dir) / machine / "machine.json"] if machine else sorted(Path(results_dir).glob("*/machine.json"))
    for path in paths:
        try:
            if json.loads(path.read_text()).get("gpu"):
                return True
        except (OSError, ValueError):
            continue
    return False


def summary(rows: list[dict], within: float = 0.02) -> dict:
    """Counts over all rows, and the same per timing mode (``by_mode``)."""
    def counts(part):
        n = len(part)
        close = sum(abs(r["ratio"] - 1) < within for r in part)
        return {"benchmarks": n, "flagged_worse": sum(r["mark"] == "+" for r in part),
                "flagged_better": sum(r["mark"] == "-" for r in part),
                f"within_{within:.0%}": close, "fraction_within": close / n if n else float("nan")}

    by_mode: dict[str, list[dict]] = {}
    for r in rows:
        by_mode.setdefault(parse_benchmark(r["benchmark"])["mode"], []).append(r)
    return {**counts(rows), "by_mode": {m: counts(part) for m, part in sorted(by_mode.items())}}
