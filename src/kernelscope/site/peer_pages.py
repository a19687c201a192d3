"""The "Peer timers" page and the method page's macro, from ``evidence/<machine>/peers.json``.

``results/peers.md``, per machine: the stamp, the agreement of each suite
mode with its peer (within 1% and 2%, the worst case), the gate's verdict,
the host-bound pairs with their reasons, and every case's clocks with the
host-bound rows marked. Numbers come only from the file, through
:mod:`kernelscope.evidence.peers.agreement`; without a file the page says how to make one.
"""

from __future__ import annotations

import html
import re

from kernelscope.evidence.peers import agreement
from kernelscope.evidence.peers.data import FAILED, MEASURED, MODES, PEER_OF, SHORT_TITLES, Record, entry_case, size_label
from kernelscope.site.data import fmt_time
from kernelscope.site.evidence import NO_PEERS, PEERS_COMMAND, EvidenceData, MachinePeers
from kernelscope.site.markdown import WIDE, indent, note, table, tabs, variant_cell
from kernelscope.site.profiles import versions_text

PATH = "results/peers.md"
TITLE = "Peer timers"
PEER_CODE = {"timer": "`torch.utils.benchmark.Timer`", "do_bench": "`triton.testing.do_bench`",
             "do_bench_cudagraph": "`triton.testing.do_bench_cudagraph`"}
HOST_BOUND_MARK = '<span class="ks-kind ks-host-bound" title="{title}">host-bound</span>'
DRIFT_MARK = '<span class="ks-kind ks-host-bound" title="{title}">host drifts</span>'


def nav() -> list[dict]:
    return [{TITLE: PATH}]


def stamp(m: MachinePeers) -> str:
    man = m.peers.stamp
    return (f'<p class="ks-stamp">Measured on {html.escape(man.gpu)} ({html.escape(versions_text(man))}), commit '
            f"<code>{html.escape(man.commit[:8])}</code>, {html.escape(man.date[:10])}, by "
            f"<code>{html.escape(man.command)}</code>.</p>")


def micro(text: str) -> str:
    """The evidence's reasons as the site writes times: "365.0 us" -> "365.0 µs"."""
    return re.sub(r"(\d) us\b", "\\1 µs", text)


def fmt_diff(d: float | None) -> str:
    return "—" if d is None else f"{d:+.2f}%"


def _share(count: int, n: int) -> str:
    return f"{count} of {n} ({count / n:.0%})" if n else "—"


def _size(entry: dict) -> str:
    """A gate's or summary's entry's size, as the cases table shows it."""
    _, size, dtype = entry_case(entry)
    return size_label(size, dtype)


def _record(m: MachinePeers, entry: dict) -> Record:
    """The record a gate's entry is of."""
    return next(r for r in m.peers.records if (r.variant, r.size, r.dtype) == entry_case(entry))


def _worst(w: dict | None) -> str:
    return f"`{w['variant']}` {_size(w)}: {fmt_diff(w['diff_pct'])}" if w else "—"


def agreement_table(m: MachinePeers) -> str:
    """Per mode: cases with both readings, within 1% and 2%, the worst; then the same over the gated cases."""
    rows = []
    for mode, s in m.summary.items():
        if not s.compared:  # a mode this machine's evidence predates (host mode, in older evidence)
            continue
        rows.append([f"{mode} ~ {PEER_CODE[s.peer]}", "all", str(s.compared), _share(s.within.get("1", 0), s.compared),
                     _share(s.within.get("2", 0), s.compared), _worst(s.worst)])
        rows.append(["", f"{agreement.JUDGED_MIN_S * 1e6:.0f} µs or more, not excused", str(s.judged),
                     _share(s.judged_within.get("1", 0), s.judged), _share(s.judged_within.get("2", 0), s.judged),
                     _worst(s.judged_worst)])
    return table(["suite mode ~ peer", "cases", "compared", "within 1%", "within 2%", "worst"], rows,
                 ["l", "l", "r", "r", "r", "l"])


def gate_note(m: MachinePeers) -> str:
    g = m.gate
    rule = (f"every mode of every case of {agreement.JUDGED_MIN_S * 1e6:.0f} µs or more within "
            f"{agreement.GATE_PCT:g}% of its peer (host mode's within {agreement.HOST_GATE_PCT:g}% of Timer), excused pairs "
            "listed instead (their graph pair still judged)")
    if g.passed:
        return note("success", "The gate passed", f"{g.why}: {rule}.")
    body = f"{g.why}. The rule: {rule}."
    if g.failures:
        body += "\n\n" + "\n".join(f"- `{f['variant']}` {_size(f)}, {f['mode']}: {html.escape(micro(f['why']))}"
                                   for f in g.failures)
    return note("failure", "The gate did not pass", body)


def exceptions_table(m: MachinePeers) -> str:
    ex = m.gate.exceptions
    if not ex:
        return "No pair of a gated case was excused."
    rows = []
    for e in ex:
        r = _record(m, e)
        rows.append([variant_cell(e["variant"]), _size(e), f"{e['mode']} ~ {SHORT_TITLES[e['peer']]}",
                     fmt_time(r.clock(e["mode"])), fmt_time(r.clock(e["peer"])), fmt_diff(e["diff_pct"]),
                     fmt_time(r.host_per_call_s), fmt_diff(r.diff_pct.get("graph")), micro(e["reason"])])
    return table(["variant", "size", "pair", "suite", "peer", "diff", "host per call", "graph diff", "why"], rows,
                 ["l", "l", "l", "r", "r", "r", "r", "r", "l"])


def _marks(r: Record) -> str:
    marks = []
    for mark, test in ((HOST_BOUND_MARK, agreement.host_bound), (DRIFT_MARK, agreement.host_drift)):
        found = [(PEER_OF[mode], why) for mode in MODES if (why := test(r, mode))]
        if found:
            title = html.escape(micro(" / ".join(why for _, why in found)), quote=True)
            marks.append(mark.format(title=title) + " " + ", ".join(SHORT_TITLES[p] for p, _ in found))
    return "; ".join(marks)


def cases_table(m: MachinePeers) -> str:
    rows = []
    for r in m.peers.measured:
        cells = [variant_cell(r.variant), size_label(r.size, r.dtype)]
        for mode in MODES:
            cells += [fmt_time(r.clock(mode)), fmt_time(r.clock(PEER_OF[mode])), fmt_diff(r.diff_pct.get(mode))]
        gated = any((r.clock(mode) or 0) >= agreement.JUDGED_MIN_S for mode in MODES)
        rows.append(cells + [fmt_time(r.clock("ncu")), fmt_time(r.host_per_call_s), "yes" if gated else "",
                             _marks(r)])
    header = ["variant", "size", *(t for mode in MODES for t in (SHORT_TITLES[mode], SHORT_TITLES[PEER_OF[mode]], "diff")),
              "ncu", "host per call", "gated", "excused"]
    return table(header, rows, ["l", "l"] + ["r"] * (3 * len(MODES) + 2) + ["c", "l"])


def not_measured(m: MachinePeers) -> str:
    rest = [r for r in m.peers.records if r.status != MEASURED]
    missing = [(r, clock, why) for r in m.peers.measured for clock, why in {**r.skipped, **r.errors}.items()]
    parts = []
    if rest:
        rows = [[variant_cell(r.variant), size_label(r.size, r.dtype), "failed" if r.status == FAILED else "skipped",
                 micro(r.reason)] for r in rest]
        parts.append(f'??? note "Cases not measured here ({len(rest)})"\n\n'
                     + indent(table(["variant", "size", "", "why"], rows, ["l", "l", "l", "l"])))
    if missing:
        rows = [[variant_cell(r.variant), size_label(r.size, r.dtype), SHORT_TITLES.get(clock, clock), micro(why)]
                for r, clock, why in missing]
        parts.append(f'??? note "Clocks without a reading ({len(missing)})"\n\n'
                     + indent(table(["variant", "size", "clock", "why"], rows, ["l", "l", "l", "l"])))
    return "\n\n".join(parts)


def machine_body(m: MachinePeers) -> str:
    b = m.peers.budgets
    if b.get("timer_min_run_time_s") is not None:  # crosscheck before Timer's readings were paired with host mode's
        timer = (f"Timer `blocked_autorange(min_run_time={b.get('timer_min_run_time_s')})`"
                 + (f", the median of {b['timer_readings']} readings" if b.get("timer_readings") else "") + "; "
                 f"host mode {b.get('host_samples')} samples")
    else:
        if b.get("host_max_pairs"):  # crosscheck since the pairs go on while their ratio is unsure
            samples = (f"samples, {b['host_samples']} at a time (up to {b['host_max_pairs']}, while the median "
                       f"ratio's 95% interval is wider than ±{b.get('host_ratio_ci_pct', 1.0):g}%)")
        else:
            samples = f"{b.get('host_samples')} samples"
        timer = (f"host mode {samples}, each followed by a Timer `timeit` of as many "
                 "calls (Timer's reading is the median of those"
                 + ("; the pair's diff is the median of the pairs' ratios)" if b.get("cold_rounds") else ")"))
    if b.get("cold_rounds"):  # crosscheck since cold mode and do_bench take rounds in turns
        cold = (f"cold {b.get('cold_samples')} samples and do_bench (warmup {b.get('do_bench_warmup_ms'):g} ms, "
                f"rep {b.get('do_bench_rep_ms'):g} ms) in turns, {b['cold_rounds']} rounds of each")
    else:
        cold = (f"cold {b.get('cold_samples')} samples; do_bench warmup {b.get('do_bench_warmup_ms'):g} ms, "
                f"rep {b.get('do_bench_rep_ms'):g} ms")
    budgets = (f"Budgets per case: suite warm {b.get('warm_samples')} samples, graph "
               f"{b.get('graph_samples')}; {timer}; {cold}; "
               f"do_bench_cudagraph rep {b.get('cudagraph_rep_ms'):g} ms; Nsight Compute over "
               f"{b.get('ncu_calls')} calls.") if b else ""
    ratios = any(r.details.get("host_pair_ratio") is not None for r in m.peers.records)
    n_ex, n_cases = len(m.gate.exceptions), len(m.peers.measured)
    parts = [stamp(m), takeaway(m),
             "**Agreement.** The suite's median against its peer's, per case, as suite / peer − 1"
             + ("; host mode's, read in pairs with Timer's, as the median of the pairs' ratios − 1." if ratios else "."),
             agreement_table(m), gate_note(m),
             fold(f"Excused pairs of gated cases ({n_ex})",
                  "Listed instead of judged against that peer: the peer's clock reads the host, or the host's own "
                  "cost of a call drifts more than the tolerance while Timer stays inside host mode's span.\n\n"
                  + exceptions_table(m)),
             fold(f"Every case ({n_cases}): each clock's median time per call",
                  "Median time per call by each clock. *gated*: a mode ran "
                  f"{agreement.JUDGED_MIN_S * 1e6:.0f} µs or more; *excused*: *host-bound*, the host's cost of a call "
                  "exceeds the GPU time the peer's clock runs behind; *host drifts*, host mode's own samples span "
                  f"more than {agreement.HOST_GATE_PCT:g}% (hover a mark for the numbers).\n\n" + cases_table(m)),
             budgets, not_measured(m)]
    return "\n\n".join(p for p in parts if p)


def fold(title: str, body: str) -> str:
    """A collapsed block: evidence a reader opens when they want every row."""
    return f'??? abstract "{html.escape(title, quote=True)}"\n\n' + indent(body)


def takeaway(m: MachinePeers) -> str:
    """What the run says, in a few lines counted from it: the verdict, each mode's agreement over every case, and
    where the pairs that stray lie (under the gate's threshold, where the peers' host clocks read the launch)."""
    g, n = m.gate, len(m.peers.measured)
    floor_us = f"{agreement.JUDGED_MIN_S * 1e6:.0f} µs"
    verdict = "passed" if g.passed else "did not pass"
    by_pair: dict[str, int] = {}
    for e in g.exceptions:
        key = f"{e['mode']} ~ {SHORT_TITLES[e['peer']]}"
        by_pair[key] = by_pair.get(key, 0) + 1
    excused = (f"; {len(g.exceptions)} pairs excused and listed instead ("
               + ", ".join(f"{k}: {v}" for k, v in sorted(by_pair.items(), key=lambda kv: -kv[1])) + ")"
               if g.exceptions else "")
    shares = [f"{mode} ~ {SHORT_TITLES[s.peer]} {_share(s.within.get('2', 0), s.compared)}"
              for mode, s in m.summary.items() if s.compared]
    off = [(r, mode) for r in m.peers.measured for mode in MODES
           if (d := r.diff_pct.get(mode)) is not None and abs(d) > 2]
    short = sum(1 for r, mode in off if (r.clock(mode) or 0) < agreement.JUDGED_MIN_S)
    lines = [f"- The gate **{verdict}**: {g.judged} pairs of cases of {floor_us} or more judged{excused}.",
             f"- Within 2% of its peer, over all {n} cases: {'; '.join(shares)}."]
    if off:
        long = len(off) - short
        rest = sum(1 for r, mode in off if (r.clock(mode) or 0) >= agreement.JUDGED_MIN_S and agreement.excuse(r, mode))
        lines.append(f"- Of the {len(off)} pairs more than 2% apart, {short} time under {floor_us}, where the launch "
                     "path weighs most beside the kernel and the gate does not judge"
                     + ((f"; the other {long} are all excused pairs" if rest == long else
                         f"; of the other {long}, {rest} are excused pairs") if long else "")
                     + ". Every row is in *Every case* below.")
    return "**In short.**\n\n" + "\n".join(lines)


def page(evidence: EvidenceData) -> str:
    intro = (
        WIDE + f"# {TITLE}\n\n"
        "The suite's clocks are its own code. Here each one stands beside the timer such numbers are usually "
        "checked with, run in the same process on the same callable (the suite's checked case): warm beside "
        f"{PEER_CODE['timer']}, cold beside {PEER_CODE['do_bench']} (it flushes L2 before every call), graph beside "
        f"{PEER_CODE['do_bench_cudagraph']}, host mode (a loop of calls on the host clock) beside the same Timer "
        "reading, within 3%; and, from a second process, Nsight Compute's summed kernel durations "
        "(kernel only, caches flushed before each kernel: shown, not judged). A peer that is a host clock reads the "
        "host where launching a call costs more than running it: those rows are marked, and "
        "[the method](../concepts/method.md#checked-against-peer-timers) says why. "
        f"`{PEERS_COMMAND}` measures it into `evidence/<machine>/peers.json`; a run narrowed to some cases "
        "(`--op`, `--variant`, `--dtype`) into a file of its own beside it, shown under the whole run.\n")
    if evidence.empty:
        return intro + "\n" + note("warning", "No peer-timer evidence yet", NO_PEERS)
    return intro + "\n" + tabs([(name, machine_tab(evidence, name)) for name in evidence.machine_names])


def machine_tab(evidence: EvidenceData, name: str) -> str:
    whole = evidence.machines.get(name)
    parts = [machine_body(whole) if whole else
             note("info", "No whole run here", f"Only narrowed runs so far; `{PEERS_COMMAND}` times every case.")]
    runs = sorted(evidence.narrowed.get(name, []), key=lambda m: m.peers.stamp.date, reverse=True)  # newest first
    if runs:
        parts.append(f"**Narrowed runs ({len(runs)}).** `kernelscope crosscheck` of some cases (`--op`, `--variant`, "
                     "`--dtype`), each in a file of its own beside `peers.json`, each judged by the same gate:")
        parts += [narrowed_run(m) for m in runs]
    return "\n\n".join(parts)


def narrowed_run(m: MachinePeers) -> str:
    """One narrowed run, folded: its stamp, agreement, verdict and every case."""
    man = m.peers.stamp
    verdict = "passed" if m.gate.passed else "did not pass"
    n = len(m.peers.measured)
    title = f"{m.path.name}: {n} case{'' if n == 1 else 's'} at {man.commit[:8]}, {man.date[:10]}; the gate {verdict}"
    body = "\n\n".join([stamp(m), agreement_table(m), gate_note(m), cases_table(m)])
    return f'??? note "{html.escape(title, quote=True)}"\n\n' + indent(body)


# --- the method page's macro -----------------------------------------------------------------------------------------

def agreement_summary(m: MachinePeers | None, link: str = "../results/peers.md") -> str:
    """For the method page: where the evidence comes from, the agreement table, the verdict, the host-bound pairs."""
    if m is None:
        return f"*(no peer-timer evidence yet: `{PEERS_COMMAND}` on a GPU box writes `evidence/<machine>/peers.json`)*"
    g = m.gate
    measured = len(m.peers.measured)
    verdict = "passed" if g.passed else "did not pass"
    text = [f"On {html.escape(m.peers.stamp.gpu)}, {measured} cases (every variant at its op's sizes that ran there), "
            f"the gate (every mode of every case of {agreement.JUDGED_MIN_S * 1e6:.0f} µs or more within "
            f"{agreement.GATE_PCT:g}% of its peer) **{verdict}**: {g.why}.",
            fold("Agreement per mode: within 1% and 2% of its peer, and the worst case", agreement_table(m))]
    if g.exceptions:
        worst = max(g.exceptions, key=lambda e: abs(e["diff_pct"] or 0))
        graph = _record(m, worst).diff_pct.get("graph")
        text.append(f"{len(g.exceptions)} pairs of gated cases were excused and listed instead; the farthest, "
                    f"`{worst['variant']}` at {_size(worst)}, read {fmt_diff(worst['diff_pct'])} against "
                    f"{SHORT_TITLES[worst['peer']]} because {micro(worst['reason'])}; its graph pair read {fmt_diff(graph)}.")
    text.append(f"Every case, with the stamp of the run: [Peer timers]({link}).")
    return "\n\n".join(text)
