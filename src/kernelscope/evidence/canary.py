"""The canary: commits that slow one variant down, and the evidence of whether ``asv continuous`` caught them.

The question it answers: does the regression gate flag a slowdown of a known
size, and only that one?

``scripts/gpu/canary.sh`` makes, on top of HEAD, a commit per level that sets
``kernelscope.slowdown.INJECT`` (``square-triton-flat1024:0.10``, ``:0.20``),
runs ``asv continuous HEAD CANARY`` for each (its own results folder, so each
comparison is exactly the one asv judged), and ends with ``write``, which reads
those results through :mod:`kernelscope.results.compare` (asv's rule: the
ratio past ``factor`` and Mann-Whitney U on the raw samples) and writes
``evidence/<machine>/canary.json``::

    python -m kernelscope.evidence.canary commit SPEC [--base HEAD] [--branch NAME] [--repo DIR]
        # prints the hash of a commit on top of BASE whose only change is INJECT = SPEC
    python -m kernelscope.evidence.canary write OUT.json --machine M --base HASH [--factor 1.1] [--command CMD]
        --level SPEC COMMIT RESULTS_DIR EXIT_CODE ASV_COMMAND [--level ...]
        # the evidence, then the detection table
    python -m kernelscope.evidence.canary merge OUT.json IN.json [IN.json ...]
        # one evidence file from levels run apart (each level a run of its own)
    python -m kernelscope.evidence.canary table canary.json   # the detection table again

The canary commit is made with git's plumbing (a temporary index), so the
checkout, its index and HEAD are never touched; its author, committer and dates
are fixed (the dates are BASE's), so the same BASE and SPEC give the same hash.

canary.json, ``"schema": 1``::

    {
      "schema": 1,
      "machine": "nvidia-h100-80gb-hbm3",     # asv's machine name: the results' folder
      "commit": "<40 hex>",                    # the base: HEAD when the script ran (merged: the last level's)
      "date": "2025-01-01T00:00:00+00:00",     # when the evidence was written (UTC)
      "command": "bash scripts/gpu/canary.sh", # what produced it
      "factor": 1.1,                           # asv continuous's factor (its default)
      "levels": [                              # one per asv continuous run, in the order they ran
        {"inject": "square-triton-flat1024:0.10",     # the canary commit's INJECT
         "injected": {"square-triton-flat1024": 10.0},  # % more work per slowed variant (100.0: run twice)
         "commit": "<40 hex>",                 # the canary commit
         "base": "<40 hex>",                   # the commit it was compared with (asv continuous's first)
         "command": "asv continuous ... HEAD <commit>",
         "exit_code": 1,                       # asv continuous's: 1 when anything got worse (+)
         "flagged": ["benchmarks.Square.time_warm('square-triton-flat1024', '16384x16384', 'float32')"],
         "missed": [...],                      # canary rows asv should have flagged and did not: slower than
                                               # the factor and than the base's interval, yet no + (verdict)
         "false_alarms": [...]}                # rows with a + that are not a canary
      ],
      "rows": [                                # one per benchmark (with its parameters) and level
        {"level": 0,                           # index into levels
         "benchmark": "benchmarks.Square.time_warm('square-triton-flat1024', '64x64', 'float32')",
         "class": "Square", "method": "time_warm", "mode": "warm",
         "variant": "square-triton-flat1024", "size": "64x64", "dtype": "float32",  # size/dtype: null if the benchmark has none
         "canary": true,                       # a variant the level slows down
         "injected_pct": 10.0,                 # % more work injected into this row's variant (0.0 if none)
         "base_s": 2.1e-06, "canary_s": 2.3e-06,  # asv's medians, seconds (null: not measured; failed or skipped)
         "ratio": 1.095,                       # canary_s / base_s (null unless both were measured)
         "base_halfwidth_pct": 0.8,            # half the base's 99% interval, as % of its median (null: no stats)
         "mark": "+"}                          # asv's: "+" slower, "-" faster, "" neither; "x", "!", "*" as in compare.py
      ]
    }
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from kernelscope.results import compare

SCHEMA = 1
FILE = "canary.json"  # evidence/<machine>/canary.json
MODULE = "src/kernelscope/slowdown.py"  # the tracked default a canary commit edits
_INJECT_LINE = re.compile(r"^INJECT = .*$", re.MULTILINE)


def _git(repo, *args, env=None, input=None) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, env=env, input=input, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def make_commit(spec: str, repo=".", base: str = "HEAD", branch: str | None = None) -> str:
    """A commit on top of ``base`` whose only change is ``INJECT = spec`` in kernelscope/slowdown.py; its hash.

    ``spec`` is checked first (kernelscope.slowdown.parse), so a commit that would
    fail every benchmark is never made. With ``branch``, that branch is set to it.
    """
    from kernelscope import slowdown
    from kernelscope.catalog import VARIANTS

    slowdown.parse(spec, VARIANTS)
    base_hash = _git(repo, "rev-parse", "--verify", f"{base}^{{commit}}")
    source = _git(repo, "show", f"{base_hash}:{MODULE}") + "\n"
    if len(_INJECT_LINE.findall(source)) != 1:
        raise RuntimeError(f"{MODULE} at {base_hash[:8]} has no single 'INJECT = ...' line to set")
    changed = _INJECT_LINE.sub(lambda _: f"INJECT = {json.dumps(spec)}", source)
    date = _git(repo, "show", "-s", "--format=%cI", base_hash)
    who = {"GIT_AUTHOR_NAME": "kernelscope canary", "GIT_AUTHOR_EMAIL": "canary@kernelscope",
           "GIT_COMMITTER_NAME": "kernelscope canary", "GIT_COMMITTER_EMAIL": "canary@kernelscope",
           "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, **who, "GIT_INDEX_FILE": os.path.join(tmp, "index")}
        _git(repo, "read-tree", base_hash, env=env)
        blob = _git(repo, "hash-object", "-w", "--stdin", input=changed)
        _git(repo, "update-index", "--cacheinfo", f"100644,{blob},{MODULE}", env=env)
        tree = _git(repo, "write-tree", env=env)
        message = (f"canary: INJECT = {spec}\n\nA throwaway commit for the regression gate's canary "
                   f"(python -m kernelscope.evidence.canary commit); never to be merged.\n")
        commit = _git(repo, "commit-tree", tree, "-p", base_hash, "-m", message, env=env)
    if branch:
        _git(repo, "branch", "-f", branch, commit)
    return commit


def injected_pct(spec: str) -> dict[str, float]:
    """``"a:0.1,b"`` -> ``{"a": 10.0, "b": 100.0}``: % more work per slowed variant (a bare name runs twice)."""
    from kernelscope import slowdown
    from kernelscope.catalog import VARIANTS

    return {name: 100.0 if f is None else float(f) * 100 for name, f in slowdown.parse(spec, VARIANTS).items()}


def _blank(mark: str) -> str:
    return "" if mark == " " else mark


def _halfwidth_pct(value, stats) -> float | None:
    if not stats or compare._missing(value) or not value:
        return None
    low, high = stats.get("ci_99_a"), stats.get("ci_99_b")
    if low is None or high is None:
        return None
    return (high - low) / 2 / value * 100


def level_rows(results_dir, base: str, commit: str, machine: str | None, spec: str, factor: float = 1.1,
               level: int = 0) -> list[dict]:
    """Every benchmark the two commits have in ``results_dir``, compared by asv's rule (compare.compare)."""
    pct = injected_pct(spec)
    base_run = compare.Run(Path(results_dir), base, machine)
    found_base = compare.unrolled(base_run)  # for the base's interval; compare() reads the same files
    rows = []
    for r in compare.compare(base_run, compare.Run(Path(results_dir), commit, machine), factor,
                             measured_only=False):
        parts = compare.parse_benchmark(r["benchmark"])
        params = list(parts["params"]) + [None, None, None]
        variant, size, dtype = params[:3]
        value, stats = found_base.get(r["benchmark"], (None, None))[:2]
        measured = lambda v: None if compare._missing(v) else v  # noqa: E731
        rows.append({"level": level, "benchmark": r["benchmark"], "class": parts["class"],
                     "method": parts["method"], "mode": parts["mode"],
                     "variant": variant, "size": size, "dtype": dtype,
                     "canary": variant in pct, "injected_pct": pct.get(variant, 0.0),
                     "base_s": measured(r["a"]), "canary_s": measured(r["b"]), "ratio": r["ratio"],
                     "base_halfwidth_pct": _halfwidth_pct(value, stats), "mark": _blank(r["mark"])})
    return rows


def verdict(row: dict, factor: float) -> str:
    """What asv's gate made of one slowed row: "caught" (flagged +); "inside the interval" (the change is
    within the base's 99% half-width: no rule can tell it from noise); "under the factor" (asv flags only
    ratios past ``factor``: the kernel's extra work cost less time than that, as where its re-read blocks
    still sit in L2); else "missed"."""
    if row["mark"] == "+":
        return "caught"
    ratio, hw = row["ratio"], row["base_halfwidth_pct"]
    if ratio is None:
        return "n/a"
    if hw is not None and abs(ratio - 1) * 100 <= hw:
        return "inside the interval"
    if ratio < factor:
        return "under the factor"
    return "missed"


def evidence(levels: list[dict], base: str, machine: str, factor: float = 1.1, command: str = "") -> dict:
    """canary.json's content. ``levels``: dicts of inject, commit, results_dir, exit_code, command."""
    out = {"schema": SCHEMA, "machine": machine, "commit": base,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": command, "factor": factor, "levels": [], "rows": []}
    for i, lv in enumerate(levels):
        rows = level_rows(lv["results_dir"], base, lv["commit"], machine, lv["inject"], factor, level=i)
        out["rows"] += rows
        out["levels"].append({
            "inject": lv["inject"], "injected": injected_pct(lv["inject"]), "commit": lv["commit"], "base": base,
            "command": lv.get("command", ""), "exit_code": lv.get("exit_code"),
            "flagged": [r["benchmark"] for r in rows if r["mark"] == "+"],
            "missed": [r["benchmark"] for r in rows if r["canary"] and verdict(r, factor) == "missed"],
            "false_alarms": [r["benchmark"] for r in rows if not r["canary"] and r["mark"] == "+"]})
    return out


def merge(files: list[dict], command: str = "") -> dict:
    """One evidence from several, their levels in the order given (each keeps the base it was compared with).

    A level is one ``asv continuous`` run, complete in itself, so levels made
    apart (in separate runs, on separate starts of the machine) can stand side by
    side; they must share the machine and the factor, which the verdicts use.
    """
    if not files:
        raise ValueError("nothing to merge")
    first = files[0]
    for f in files[1:]:
        for key in ("schema", "machine", "factor"):
            if f[key] != first[key]:
                raise ValueError(f"cannot merge canary evidence with {key} {f[key]!r} into one with {first[key]!r}")
    out = {"schema": SCHEMA, "machine": first["machine"], "commit": files[-1]["commit"],
           "date": max(f["date"] for f in files),
           "command": command or "; ".join(dict.fromkeys(f["command"] for f in files)),
           "factor": first["factor"], "levels": [], "rows": []}
    for f in files:
        offset = len(out["levels"])
        out["levels"] += [{**lv, "base": lv.get("base", f["commit"])} for lv in f["levels"]]
        out["rows"] += [{**r, "level": r["level"] + offset} for r in f["rows"]]
    return out


def _numel(size: str | None) -> int:
    n = 1
    for part in (size or "0").split("x"):
        n *= int(part) if part.isdigit() else 0
    return n


def detection(data: dict) -> list[tuple[tuple, dict]]:
    """canary.json's slowed rows grouped: [((variant, class, method, dtype), {size: {level: row}})], sizes in order."""
    groups: dict[tuple, dict] = {}
    for r in data["rows"]:
        if r["canary"]:
            groups.setdefault((r["variant"], r["class"], r["method"], r["dtype"]), {}) \
                  .setdefault(r["size"], {})[r["level"]] = r
    return [(key, dict(sorted(by_size.items(), key=lambda kv: _numel(kv[0])))) for key, by_size in groups.items()]


def level_heads(data: dict) -> list[str]:
    """A column head per level: ``+10%`` (the injected slowdowns), else its INJECT spec."""
    return [", ".join(f"+{p:g}%" for p in lv["injected"].values()) or lv["inject"] for lv in data["levels"]]


def table(data: dict) -> str:
    """The detection table: per slowed benchmark, size x level: ratio, + if flagged, (the base's ±99% half-width)."""
    levels = data["levels"]
    heads = level_heads(data)
    lines = []
    for (variant, cls, method, dtype), by_size in detection(data):
        lines.append(f"{variant}  {cls}.{method} {dtype or ''}  (asv continuous, factor {data['factor']:g}; "
                     f"+ = flagged slower; ±: the base's 99% interval)")
        lines.append(f"{'size':<14}" + "".join(f"{h:>22}" for h in heads))
        for size in by_size:
            cells = []
            for i in range(len(levels)):
                r = by_size[size].get(i)
                if r is None:
                    cells.append(f"{'-':>22}")
                    continue
                ratio = "n/a" if r["ratio"] is None else f"{r['ratio']:.3f}"
                hw = "" if r["base_halfwidth_pct"] is None else f"(±{r['base_halfwidth_pct']:.1f}%)"
                cells.append(f"{ratio:>7} {r['mark'] or ' ':<1} {hw:<12}".rjust(22))
            lines.append(f"{size or '-':<14}" + "".join(cells))
    for h, lv in zip(heads, levels):
        alarms = lv["false_alarms"]
        lines.append(f"{h}: asv continuous exit {lv['exit_code']}; flagged {len(lv['flagged'])}, "
                     f"canary missed {len(lv['missed'])}, others flagged {len(alarms)}"
                     + (": " + "; ".join(alarms) if alarms else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelscope.evidence.canary", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("commit", help="make a canary commit on top of BASE; print its hash")
    c.add_argument("spec", help="the INJECT setting, e.g. square-triton-flat1024:0.10")
    c.add_argument("--base", default="HEAD")
    c.add_argument("--branch", help="set this (throwaway) branch to the commit")
    c.add_argument("--repo", default=".")
    w = sub.add_parser("write", help="write canary.json from asv continuous's results; print the detection table")
    w.add_argument("out")
    w.add_argument("--machine", required=True)
    w.add_argument("--base", required=True, help="the base commit (asv continuous's first argument)")
    w.add_argument("--factor", type=float, default=1.1)
    w.add_argument("--command", default="")
    w.add_argument("--level", nargs=5, action="append", required=True,
                   metavar=("SPEC", "COMMIT", "RESULTS_DIR", "EXIT_CODE", "ASV_COMMAND"))
    m = sub.add_parser("merge", help="one canary.json from levels run apart; print the detection table")
    m.add_argument("out")
    m.add_argument("inputs", nargs="+", metavar="IN")
    m.add_argument("--command", default="", help="what produced it (default: the inputs' commands)")
    t = sub.add_parser("table", help="print the detection table of a canary.json")
    t.add_argument("path")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "commit":
            print(make_commit(args.spec, args.repo, args.base, args.branch))
        elif args.cmd == "write":
            levels = [{"inject": s, "commit": c, "results_dir": d, "exit_code": int(rc), "command": cmd}
                      for s, c, d, rc, cmd in args.level]
            data = evidence(levels, args.base, args.machine, args.factor, args.command)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
            print(table(data))
        elif args.cmd == "merge":
            data = merge([json.loads(Path(p).read_text()) for p in args.inputs], args.command)
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
            print(table(data))
        else:
            print(table(json.loads(Path(args.path).read_text())))
    except (ValueError, RuntimeError, FileNotFoundError) as exc:
        print(f"kernelscope.evidence.canary: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
