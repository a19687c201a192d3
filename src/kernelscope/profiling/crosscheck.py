"""Nsight Compute's kernel time against the suite's warm-mode time, per profiled variant.

For each variant in ``profiles/<machine>/`` with ncu metrics: the sum of its
kernels' durations in the one profiled call, against the median of the
newest warm-mode result for the same machine, variant, size and dtype in
``results/`` (the rows the results pages show: :func:`history.current`). The
two should agree within :data:`TOLERANCE_PCT` where a call's kernels run at
least :data:`MIN_US` (below that, the suite's time also holds the gaps between
launches, which ncu does not count). Reads artifacts only; profiles nothing.
"""

from __future__ import annotations

from pathlib import Path

from kernelscope.profiling import artifacts

TOLERANCE_PCT = 3.0
MIN_US = 100.0


def suite_times(results_dir: str | Path, repo: str | Path = ".") -> dict[tuple, float]:
    """(machine, variant, size, dtype) -> the newest warm-mode median in seconds."""
    from kernelscope.results import export, history

    results_dir = Path(results_dir)
    if not (results_dir / "benchmarks.json").exists():
        return {}
    return warm_times(export.rows(results_dir), history.commit_order(export.runs(results_dir),
                                                                       history.git_positions(repo)))


def warm_times(rows: list[dict], order: list[str]) -> dict[tuple, float]:
    """:func:`suite_times` of rows already read (:func:`kernelscope.results.export.rows`, measured ones) and their
    commits' order: the site has both at hand and need not read every result file again."""
    from kernelscope.catalog import VARIANTS
    from kernelscope.results import history

    return {(r["machine"], r["variant"], r["size"], r["dtype"]): r["time_s"]
            for r in history.current(rows, order, set(VARIANTS)) if r["mode"] == "warm" and r["status"] == "measured"}


def compare(ncu_us: float | None, suite_us: float | None) -> dict:
    """The suite's time against ncu's, in % of ncu's (positive: the warm call takes longer than its kernels, as
    the site's table reads it), and whether that is within tolerance."""
    if ncu_us is None or suite_us is None or ncu_us <= 0:
        return {"diff_pct": None, "judged": False, "within": None}
    diff = 100.0 * (suite_us - ncu_us) / ncu_us
    judged = ncu_us >= MIN_US
    return {"diff_pct": diff, "judged": judged, "within": abs(diff) <= TOLERANCE_PCT if judged else None}


def machine_dirs(profiles_dir: str | Path) -> list[Path]:
    """Machine folders under profiles_dir, or profiles_dir itself when it is one."""
    root = Path(profiles_dir)
    return [root] if (root / "manifest.json").exists() else artifacts.machines(root)


def rows(profiles_dir: str | Path = artifacts.PROFILES_DIR, results_dir: str | Path = "results",
         repo: str | Path = ".", times: dict[tuple, float] | None = None) -> list[dict]:
    """One row per profiled variant; ``times``: :func:`suite_times` when the caller has them already."""
    times = suite_times(results_dir, repo) if times is None else times
    found = []
    for mdir in machine_dirs(profiles_dir):
        manifest = artifacts.read_manifest(mdir)
        for name in manifest.variants:
            try:
                prof = artifacts.read_variant(mdir, name)
            except FileNotFoundError:
                continue
            ncu_us = sum(k.duration_us for k in prof.ncu) if prof.ncu else None
            suite_s = times.get((manifest.machine, name, prof.shape, prof.dtype))
            suite_us = suite_s * 1e6 if suite_s is not None else None
            found.append({"machine": manifest.machine, "op": prof.op, "variant": name, "size": prof.shape,
                          "dtype": prof.dtype, "kernels": len(prof.ncu) if prof.ncu else 0, "ncu_us": ncu_us,
                          "suite_us": suite_us, **compare(ncu_us, suite_us),
                          "why": _why(prof, ncu_us, suite_us)})
    return found


def _why(prof, ncu_us, suite_us) -> str:
    if ncu_us is None:
        return "no ncu metrics: " + (prof.skipped.get("ncu") or prof.errors.get("ncu") or "not profiled")
    if suite_us is None:
        return f"no warm-mode result for {prof.shape} {prof.dtype} on this machine"
    if ncu_us < MIN_US:
        return f"under {MIN_US:.0f} us: not judged"
    return ""


def verdict(table: list[dict]) -> dict:
    judged = [r for r in table if r["judged"]]
    return {"variants": len(table), "compared": sum(r["diff_pct"] is not None for r in table),
            "judged": len(judged), "within": sum(bool(r["within"]) for r in judged),
            "outside": [r["variant"] for r in judged if not r["within"]]}


def _fmt(x: float | None, spec: str) -> str:
    return "" if x is None else format(x, spec)


def main(profiles_dir: str | Path, results_dir: str | Path, as_json: bool = False) -> int:
    """Print the table (or JSON); exit status 1 if a judged variant is outside the tolerance."""
    import json

    if not machine_dirs(profiles_dir):
        raise FileNotFoundError(f"no profiles in {profiles_dir}/ (no */manifest.json): run `kernelscope profile --ncu`")
    table = rows(profiles_dir, results_dir)
    stats = verdict(table)
    if as_json:
        print(json.dumps({"summary": stats, "rows": table}, indent=1))
        return 1 if stats["outside"] else 0
    header = ["machine", "variant", "size", "dtype", "kernels", "ncu_us", "suite_us", "suite-ncu_%", "ok", "note"]
    body = [[r["machine"], r["variant"], r["size"], r["dtype"], str(r["kernels"]), _fmt(r["ncu_us"], ".1f"),
             _fmt(r["suite_us"], ".1f"), _fmt(r["diff_pct"], "+.1f"),
             {True: "yes", False: "NO", None: ""}[r["within"]], r["why"]] for r in table]
    widths = [max(len(x[i]) for x in [header, *body]) for i in range(len(header))]
    for line in [header, ["-" * w for w in widths], *body]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
    print(f"\n{stats['compared']} of {stats['variants']} variants have both times; {stats['judged']} run "
          f"{MIN_US:.0f} us or more, {stats['within']} of them within {TOLERANCE_PCT:g}%"
          + (f"; outside: {', '.join(stats['outside'])}" if stats["outside"] else ""))
    return 1 if stats["outside"] else 0
