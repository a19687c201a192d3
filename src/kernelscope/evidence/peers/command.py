"""``kernelscope crosscheck``: every case's clocks, written to ``evidence/<machine>/peers.json``, then a table,
the agreement per mode and the gate.

Progress goes to stderr (a line as each case starts and one with its numbers
when it ends); stdout gets the table and the summary, or with ``--json`` one
JSON document (stamp, summary, gate, records). Exit status: 1 if a case
failed (its check, or a clock's error other than Nsight Compute's), or with
``--gate`` if the gate did not pass; 0 otherwise.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from kernelscope import backends
from kernelscope.evidence.peers import agreement, data, measure, ncu_pass
from kernelscope.evidence.peers.data import (DTYPE, FAILED, MEASURED, MODES, PEER_OF, SHORT_TITLES, PeersFile, Record, case_name,
                                    entry_case)


@dataclass
class Options:
    op: str | None = None
    variant: str | None = None
    backend: str | None = None
    size: str | None = None  # one shape for every selected variant; default: each op's benchmark sizes
    dtypes: tuple[str, ...] = (DTYPE,)  # each case in each of these
    ncu: bool | None = None  # None: run the Nsight Compute pass when ncu is found
    out: Path | None = None  # default evidence/<machine>/peers.json (a narrowed run: data.default_path)
    json: bool = False
    gate: bool = False
    command: str = "kernelscope crosscheck"
    budgets: measure.Budgets | None = None


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _us(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e6:,.1f}"


def _pct(d: float | None) -> str:
    return "" if d is None else f"{d:+.2f}%"


def _progress(rec: Record) -> str:
    if rec.status != MEASURED:
        return f"{rec.status}: {rec.reason}"
    parts = []
    for mode in MODES:
        suite, peer = rec.clock(mode), rec.clock(PEER_OF[mode])
        if suite is None and peer is None:
            continue
        parts.append(f"{mode} {_us(suite) or '-'} ~ {SHORT_TITLES[PEER_OF[mode]]} {_us(peer) or '-'} us"
                     + (f" ({_pct(rec.diff_pct.get(mode))})" if rec.diff_pct.get(mode) is not None else ""))
    if rec.host_per_call_s is not None:
        parts.append(f"host {_us(rec.host_per_call_s)} us/call")
    if rec.errors:
        parts.append("errors: " + "; ".join(f"{k}: {v}" for k, v in rec.errors.items()))
    return ", ".join(parts) + f" ({rec.wall_s:.1f} s)"


def stamp(opts: Options, variants: list[str], started: str, with_ncu: bool):
    """The file's stamp, from the helpers ``kernelscope profile`` stamps ``profiles/`` with."""
    from kernelscope.profiling import capture
    from kernelscope.profiling.artifacts import Manifest

    gpu, versions = capture.versions(with_ncu)
    return Manifest(machine=capture.machine_name(), gpu=gpu, commit=capture.git_commit(), date=started,
                    versions=versions, variants=variants, command=opts.command)


def narrowed_to(opts: Options) -> str:
    """The selection a narrowed run was asked for, as a file name's part ("op-softmax"); "" for every case."""
    picked = [(k, getattr(opts, k)) for k in ("op", "variant", "backend", "size") if getattr(opts, k)]
    if tuple(opts.dtypes) != (DTYPE,):
        picked.append(("dtype", "-".join(opts.dtypes)))
    return "-".join(f"{k}-{v}" for k, v in picked)


def run(opts: Options) -> int:
    backends.configure_interpreters()
    device = backends.default_device()
    budgets = opts.budgets or measure.Budgets()
    specs = measure.case_specs(op=opts.op, variant=opts.variant, backend=opts.backend, size=opts.size,
                               dtypes=tuple(opts.dtypes))
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with_ncu = opts.ncu is not False
    man = stamp(opts, [], started, with_ncu)
    out = Path(opts.out) if opts.out else data.default_path(man.machine, narrowed_to=narrowed_to(opts))
    _say(f"kernelscope crosscheck: {_n(len(specs), 'case')} on {device} ({man.gpu}), machine {man.machine}, into {out}")

    t0 = time.perf_counter()
    records: list[Record] = []
    for i, spec in enumerate(specs, 1):
        head = f"[{i}/{len(specs)}] {case_name(spec.variant, spec.size, spec.dtype)}"
        _say(f"{head}: measuring")
        rec = measure.measure_case(spec, budgets, device)
        records.append(rec)
        _say(f"{head}: {_progress(rec)}; {time.perf_counter() - t0:.0f} s so far")

    from kernelscope.profiling import ncu

    if opts.ncu is False:
        outcome = ncu_pass.Outcome(skipped="not asked for (kernelscope crosscheck --no-ncu)")
    elif ncu.unavailable():
        outcome = ncu_pass.Outcome(skipped=ncu.unavailable())
        _say(f"ncu: skipped: {outcome.skipped}")
    else:
        measured = sum(r.status == MEASURED for r in records)
        _say(f"ncu: {_n(measured, 'case')} in one Nsight Compute process ...")
        try:
            outcome = ncu_pass.run(records, calls=budgets.ncu_calls, log=lambda line: _say(f"  ncu| {line}"))
        except Exception as exc:
            outcome = ncu_pass.Outcome(errors={"*": f"{type(exc).__name__}: {exc}"})
        done = f"{_n(len(outcome.per_call_s), 'case')} in {outcome.seconds:.0f} s"
        _say(f"ncu: {outcome.skipped or done}")
        if outcome.errors:
            _say("ncu errors: " + "; ".join(f"{k}: {v}" for k, v in list(outcome.errors.items())[:10]))
    ncu_pass.apply(outcome, records)

    man.variants = list(dict.fromkeys(r.variant for r in records if r.status == MEASURED))
    peers = PeersFile(stamp=man, device=device, budgets=budgets.as_dict(), records=records)
    data.write(out, peers)
    _say(f"kernelscope crosscheck: {_n(len(records), 'case')} in {time.perf_counter() - t0:.0f} s, written to {out}")

    summary = agreement.summarize(records)
    verdict = agreement.gate(records)
    if opts.json:
        print(json.dumps({"file": str(out), "stamp": asdict(man), "summary": {m: asdict(s) for m, s in summary.items()},
                          "gate": verdict.as_dict(), "records": [asdict(r) for r in records]}, indent=1))
    else:
        print(table(records))
        print()
        print(summary_text(summary, verdict))
    failed = [r for r in records if r.status == FAILED or any(k != "ncu" for k in r.errors)]
    if failed:
        _say("kernelscope crosscheck: failures in " + ", ".join(r.name for r in failed))
    if opts.gate and not verdict.passed:
        _say(f"kernelscope crosscheck: the gate failed: {verdict.why}")
        for f in verdict.failures:
            _say(f"  {_named(f)} {f['mode']}: {f['why']}")
    return 1 if failed or (opts.gate and not verdict.passed) else 0


# --- what is printed -------------------------------------------------------------------------------------------------

def _named(entry: dict) -> str:
    """A gate's or summary's entry named as the table names its case."""
    return case_name(*entry_case(entry))


def _note(rec: Record) -> str:
    if rec.status != MEASURED:
        return f"{rec.status}: {rec.reason}"
    notes = [f"{'host-bound' if agreement.host_bound(rec, m) else 'host drifts'} ({SHORT_TITLES[PEER_OF[m]]})"
             for m in MODES if agreement.excuse(rec, m)]
    if rec.errors:
        notes.append("errors: " + ", ".join(rec.errors))
    return "; ".join(notes)


def table(records: list[Record]) -> str:
    # a column per mode, its peer and their diff, from MODES (a fixed list missed host mode: zip below cut the rows)
    peer = {**SHORT_TITLES, "do_bench_cudagraph": "cudagraph"}
    header = ["case", *(t for mode in MODES for t in (mode, peer[PEER_OF[mode]], "diff")), "ncu", "host/call", "note"]
    rows = []
    for r in records:
        if r.status != MEASURED:
            rows.append([r.name] + [""] * (len(header) - 2) + [_note(r)])
            continue
        cells = [r.name]
        for mode in MODES:
            cells += [_us(r.clock(mode)), _us(r.clock(PEER_OF[mode])), _pct(r.diff_pct.get(mode))]
        rows.append(cells + [_us(r.clock("ncu")), _us(r.host_per_call_s), _note(r)])
    assert all(len(r) == len(header) for r in rows), "a row's cells and the header differ"
    widths = [max(len(str(x[i])) for x in [header, *rows]) for i in range(len(header))]
    right = set(range(1, len(header) - 1))
    line = lambda r: "  ".join((str(c).rjust(w) if i in right else str(c).ljust(w))  # noqa: E731
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
    return "\n".join(["times in us per call (medians); diff: suite / peer - 1 (host: the median of its pairs' ratios - 1)",
                      line(header), line(["-" * w for w in widths]), *map(line, rows)])


def summary_lines(summary: dict[str, agreement.ModeSummary]) -> list[str]:
    lines = []
    for mode, s in summary.items():
        title = f"{mode} ~ {SHORT_TITLES[s.peer]}"
        if not s.compared:
            lines.append(f"{title:<28} no case with both readings")
            continue
        bands = ", ".join(f"{s.within.get(b, 0)} ({s.share(float(b)):.0%}) within {b}%" for b in ("1", "2"))
        worst = s.worst
        lines.append(f"{title:<28} {_n(s.compared, 'case')}, {bands}; worst {_named(worst)} "
                     f"{worst['diff_pct']:+.2f}%" + (f"; {s.excused} excused" if s.excused else ""))
        if s.judged:
            jb = ", ".join(f"{s.judged_within.get(b, 0)} ({s.share(float(b), judged=True):.0%}) within {b}%"
                           for b in ("1", "2"))
            jw = s.judged_worst
            lines.append(f"{'':<28} of them {s.judged} at {agreement.JUDGED_MIN_S * 1e6:.0f} us or more and not "
                         f"excused: {jb}; worst {_named(jw)} {jw['diff_pct']:+.2f}%")
    return lines


def summary_text(summary: dict[str, agreement.ModeSummary], verdict: agreement.Gate) -> str:
    lines = summary_lines(summary)
    lines.append(f"gate (every mode of every case of {agreement.JUDGED_MIN_S * 1e6:.0f} us or more within "
                 f"{agreement.GATE_PCT:g}% of its peer): {'PASSED' if verdict.passed else 'FAILED'}: {verdict.why}")
    if verdict.exceptions:
        lines.append("excused (the peer reads the host, or the host's cost drifts), listed instead of judged against "
                     "that peer (their graph pair still is):")
        lines += [f"  {_named(e)} {e['mode']} ~ {SHORT_TITLES[e['peer']]} ({_pct(e['diff_pct'])}): "
                  f"{e['reason']}" for e in verdict.exceptions]
    if verdict.failures:
        lines.append("outside the gate:")
        lines += [f"  {_named(f)} {f['mode']}: {f['why']}" for f in verdict.failures]
    return "\n".join(lines)
