"""The profiling pages, generated from ``profiles/`` (:mod:`kernelscope.site.profiles`) on every build.

* ``results/profiles/index.md``: every profiled kernel in one table, and the
  cross-check of Nsight Compute's kernel time against the warm median;
* ``results/profiles/<variant>.md``: one variant's profile per machine: the
  torch.profiler table and its trace, Nsight Compute's metrics and rule hints,
  the compiled code (PTX, SASS, the ptxas report, Inductor's code);
* ``results/demos.md``: the lecture's demonstrations, measured;
* a "Profiles" section on each op's page (:func:`op_section`).

Without profiles each of them says "No profiles yet" and gives the command.
Numbers come only from the artifacts and the results, formatted here.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable

from kernelscope.catalog import OPS, VARIANTS, variants_of
from kernelscope.profiling import crosscheck
from kernelscope.site import charts
from kernelscope.site.data import BACKEND_TITLES, SiteData, fmt_gbps, fmt_pct, fmt_time
from kernelscope.site.markdown import WIDE, chart, indent, note, table, tabs, variant_cell
from kernelscope.site.profiles import (CODE_KINDS, LONG_CODE_LINES, NO_PROFILES, PROFILE_COMMAND, MachineProfiles,
                                       ProfileData, ProfilesError, code_language, code_title, fence, file_size,
                                       fmt_bytes, fmt_dims, fmt_ncu_pct, fmt_occupancy, fmt_us, hints_summary,
                                       hints_text, ncu_per_call_us, short_kernel, site_path, versions_text)

INDEX = "results/profiles/index.md"
DEMOS = "results/demos.md"
DEMOS_DATA = "data/demos.json"


def variant_path(variant: str) -> str:
    return f"results/profiles/{variant}.md"


def pages(data: SiteData) -> dict[str, str]:
    """Path under docs -> Markdown, for every profiling page this build has."""
    out = {INDEX: overview(data), DEMOS: demos(data)}
    for name in data.profiles.variants():
        out[variant_path(name)] = variant_page(data.profiles, name)
    return out


def nav(profiles: ProfileData) -> list[dict]:
    """The Results section's entries for these pages: Profiles (overview, then variants by op) and Demos."""
    by_op: dict[str, list[dict]] = {}
    for name in profiles.variants():
        op = next(m.variants[name].op for m in profiles.machines.values() if name in m.variants)
        by_op.setdefault(op, []).append({name: variant_path(name)})
    ordered = sorted(by_op, key=lambda op: (list(OPS).index(op) if op in OPS else len(OPS), op))
    return [{"Profiles": [{"Overview": INDEX}, *[{op: by_op[op]} for op in ordered]]}, {"Demos": DEMOS}]


def data_files(data: SiteData) -> dict[str, object]:
    return {DEMOS_DATA: fixed_block_points(data.profiles)}


# --- shared pieces -------------------------------------------------------------------------------------------------

def per_machine(profiles: ProfileData, render: Callable[[MachineProfiles], str]) -> str:
    """The body once per profiled machine, in tabs (linked with the results pages' machine tabs by name)."""
    if profiles.empty:
        return note("warning", "No profiles yet", NO_PROFILES)
    return tabs([(name, render(m)) for name, m in profiles.machines.items()])


def stamp(m: MachineProfiles, commit: str | None = None) -> str:
    man = m.manifest
    return (f'<p class="ks-stamp">Profiled on {html.escape(man.gpu)} ({html.escape(versions_text(man))}), commit '
            f"<code>{html.escape((commit or man.commit)[:8])}</code>, {html.escape(man.date[:10])}, by "
            f"<code>{html.escape(man.command)}</code>.</p>")


def forced_tabs(items: list[tuple[str, str]]) -> str:
    """Content tabs even for one item: the label says what the block is (PTX, SASS, ...)."""
    return "\n\n".join(f'=== "{label}"\n\n{indent(body)}' for label, body in items)


def not_captured(parts: dict[str, str], title: str = "Not captured here") -> str:
    if not parts:
        return ""
    return note("info", title, "\n".join(f"- **{part}**: {why}" for part, why in parts.items()))


def kernel_rows(profiles: ProfileData, machine: str, names: list[str], link: Callable[[str], str]
                ) -> list[list[str]]:
    """One row per kernel launch Nsight Compute measured (a variant's name on its first row only)."""
    rows = []
    for name in names:
        vp = profiles.profile(machine, name)
        if vp is None:
            rows.append([variant_cell(name), "*not profiled*", "", "", "", "", "", ""])
            continue
        cell = f'{variant_cell(name, link(name))}<br><span class="ks-input">{vp.shape} {vp.dtype}</span>'
        if not vp.ncu:  # why: on the variant's page (a long reason would widen the table past the page)
            rows.append([cell, "*no Nsight Compute metrics*", "", "", "", "", "", ""])
            continue
        # a call of many launches (a CUDA graph's copies, say) shows its longest kernel here, the rest on its page
        shown = vp.ncu if len(vp.ncu) <= MANY_LAUNCHES else [max(vp.ncu, key=lambda k: k.duration_us or 0)]
        for i, k in enumerate(shown):
            lead = [cell] if i == 0 else [""]
            rows.append(lead + [f"`{short_kernel(k.name)}`", fmt_us(k.duration_us), fmt_ncu_pct(k.dram_pct),
                                fmt_ncu_pct(k.compute_pct), fmt_occupancy(k),
                                "—" if k.registers_per_thread is None else str(k.registers_per_thread),
                                hints_summary(k.hints)])
        if len(shown) < len(vp.ncu):
            rows.append(["", f"*the longest of {len(vp.ncu)} launches a call; every one on "
                             f"[its page]({link(name)})*", "", "", "", "", "", ""])
    return rows


MANY_LAUNCHES = 4  # past this many launches a call, a variant's tables list its longest kernel and fold the rest


KERNEL_HEADER = ["variant and input", "kernel", "time", "DRAM", "SM", "occupancy", "regs", "hints"]
KERNEL_ALIGN = ["l", "l", "r", "r", "r", "r", "r", "l"]
KERNEL_COLUMNS = ("*time*: the kernel's duration; *DRAM* and *SM*: DRAM and compute (SM) throughput, percent of "
                  "peak; *occupancy*: achieved of theoretical; *regs*: registers per thread; *hints*: the rule "
                  "results Nsight Compute printed, by type.")


# --- one op's page: its section --------------------------------------------------------------------------------------

def op_section(profiles: ProfileData, op: str) -> str:
    head = ("## Profiles\n\nWhat Nsight Compute measured of each variant's kernels (clocks unlocked, "
            f"`--clock-control none`), one row per kernel launch of one call. {KERNEL_COLUMNS} A variant's page "
            "has the "
            "torch.profiler table and its trace, every rule hint and the compiled code; "
            "[all profiles](profiles/index.md) adds the cross-check against the timings, and "
            "[the demos](demos.md) measure what the lecture shows.\n")
    names = [v.name for v in variants_of(op)]

    def body(m: MachineProfiles) -> str:
        rows = kernel_rows(profiles, m.name, names, lambda n: f"profiles/{n}.md")
        return (op_summary(profiles, m.name, names) + "\n\n"
                + f'??? abstract "Every kernel launch of a call, per variant ({len(names)} variants)"\n\n'
                + indent(table(KERNEL_HEADER, rows, KERNEL_ALIGN)))

    return head + "\n" + per_machine(profiles, body)


def op_summary(profiles: ProfileData, machine: str, names: list[str]) -> str:
    """What the op's profiles say at a glance: how many variants have metrics, which launch more than one kernel a
    call, and the range of their longest kernel's DRAM throughput."""
    found = [(n, vp) for n in names if (vp := profiles.profile(machine, n)) is not None and vp.ncu]
    if not found:
        return f"No variant of these {len(names)} has Nsight Compute metrics on this machine yet."
    multi = [f"`{n}` {len(vp.ncu)}" for n, vp in found if len(vp.ncu) > 1]
    main = [(n, max(vp.ncu, key=lambda k: k.duration_us or 0)) for n, vp in found]
    dram = sorted(((k.dram_pct, n) for n, k in main if k.dram_pct is not None))
    text = [f"{len(found)} of {len(names)} variants with Nsight Compute metrics here"
            + (f"; more than one kernel a call: {', '.join(multi)}" if multi else "; each launches one kernel a call")
            + "."]
    if dram:
        (lo, lo_name), (hi, hi_name) = dram[0], dram[-1]
        text.append(f"Their longest kernels' DRAM throughput: from {fmt_ncu_pct(lo)} (`{lo_name}`) to "
                    f"{fmt_ncu_pct(hi)} (`{hi_name}`) of peak.")
    return " ".join(text)


# --- the overview: every kernel, and the cross-check --------------------------------------------------------------

def overview(data: SiteData) -> str:
    intro = (WIDE + "# Profiles\n\n"
             "What `kernelscope profile` captured of each variant on a GPU: the kernels Nsight Compute measured "
             "with the clocks unlocked (`--clock-control none`), one row per kernel launch of one call, at the "
             f"input named in the row. {KERNEL_COLUMNS} Each variant's page has the rest: the torch.profiler table "
             "and its chrome trace, every rule hint as Nsight Compute prints it, and the compiled code. "
             "[The demos](../demos.md) are the lecture's demonstrations, measured.\n")
    return intro + "\n" + per_machine(data.profiles, lambda m: _overview_for(data, m))


def _overview_for(data: SiteData, m: MachineProfiles) -> str:
    names = list(m.variants)
    rows = kernel_rows(data.profiles, m.name, names, lambda n: f"{n}.md")
    missing = [v.name for v in VARIANTS.values() if v.name not in m.variants]
    parts = [stamp(m), table(KERNEL_HEADER, rows, KERNEL_ALIGN)]
    if missing:
        parts.append(f"Not profiled on `{m.name}` ({len(missing)} of the catalog's {len(VARIANTS)} variants): "
                     + ", ".join(f"`{n}`" for n in missing) + ".")
    parts.append(_crosscheck_for(data, m))
    return "\n\n".join(parts)


def crosscheck_rows(data: SiteData) -> list[dict]:
    """:func:`kernelscope.profiling.crosscheck.rows` over this build's folders: what `kernelscope` prints."""
    if data.profiles.empty:
        return []
    measured = [r for r in data.rows if r["status"] == "measured"]  # export.rows without include_failed
    return crosscheck.rows(data.profiles.root, data.results_dir, data.repo,
                           times=crosscheck.warm_times(measured, data.order))


def _crosscheck_for(data: SiteData, m: MachineProfiles) -> str:
    tol, floor = crosscheck.TOLERANCE_PCT, crosscheck.MIN_US
    cases = [c for c in crosscheck_rows(data) if c["machine"] == m.manifest.machine and c["ncu_us"] is not None]
    out = ["## Cross-check: Nsight Compute against the warm timings",
           f"Nsight Compute's kernel time per call (the sum over one call's launches) beside the suite's warm-mode "
           f"median at the same size and dtype (the newest, as the results pages show it). The two should agree "
           f"within {tol:g}% where a call's kernels run {floor:g} µs or more; shorter ones are listed but not "
           "judged: the suite's time also holds the gaps between launches, which Nsight Compute does not count."]
    if not cases:
        out.append("No variant here has Nsight Compute metrics to compare.")
        return "\n\n".join(out)
    judged = [c for c in cases if c["judged"]]
    if judged:
        worst = max(judged, key=lambda c: abs(c["diff_pct"]))
        agree = sum(1 for c in judged if c["within"])
        out.append(f"**{agree} of {len(judged)}** cases of {floor:g} µs or more agree within {tol:g}%; the largest "
                   f"difference is {worst['diff_pct']:+.2f}% (`{worst['variant']}`).")
    else:
        out.append(f"No case here runs {floor:g} µs or more: none is judged.")
    rows = []
    for c in cases:
        diff = "—" if c["diff_pct"] is None else f"{c['diff_pct']:+.2f}%"
        verdict = (f"✓ within {tol:g}%" if c["within"] else "✗ outside") if c["judged"] else (c["why"] or "—")
        rows.append([variant_cell(c["variant"], f"{c['variant']}.md"), c["size"], c["dtype"], str(c["kernels"]),
                     fmt_us(c["ncu_us"]), fmt_us(c["suite_us"]), diff, verdict])
    out.append(table(["variant", "size", "dtype", "launches per call", "ncu per call", "warm median", "difference",
                      "verdict"], rows, ["l", "l", "l", "r", "r", "r", "r", "l"]))
    return "\n\n".join(out)


# --- one variant ---------------------------------------------------------------------------------------------------

def variant_page(profiles: ProfileData, name: str) -> str:
    v = VARIANTS.get(name)
    some = next(m.variants[name] for m in profiles.machines.values() if name in m.variants)
    op = v.op if v else some.op
    about = (f"{v.teaches[0].upper()}{v.teaches[1:]}. " if v else "Not in the catalog at this commit. ")
    head = (WIDE + f"# Profile of {name}\n\n{variant_cell(name)} · {BACKEND_TITLES.get(some.backend, some.backend)} "
            f"· op [{op}](../{op}.md) (its timings). {about}"
            f"[All profiles](index.md) · [the lecture's demos](../demos.md)\n")
    return head + "\n" + tabs([(mname, _variant_for(m, name)) for mname, m in profiles.machines.items()])


def _variant_for(m: MachineProfiles, name: str) -> str:
    vp = m.variants.get(name)
    if vp is None:
        return (f"`{name}` has no profile on `{m.name}` yet: `kernelscope profile --variant {name} --ncu` on that "
                "machine captures one.")
    # commit, rel_err: fields newer writers add (a folder refreshed for one variant mixes commits)
    checked = getattr(vp, "rel_err", None)
    parts = [stamp(m, getattr(vp, "commit", "") or None),
             f"Input: `{vp.shape}`, {vp.dtype}, on {vp.device}"
             + (f"; the check's relative error against the float64 reference on it, before profiling: {checked:.2g}."
                if checked is not None else ".")]
    if vp.errors:
        parts.append(note("warning", "What went wrong while capturing (the rest continued)",
                          "\n".join(f"- **{part}**: {why}" for part, why in vp.errors.items())))
    skipped = not_captured(vp.skipped)
    if skipped:
        parts.append(skipped)
    parts += [_torch_section(m, name), _ncu_section(m, name), _code_section(m, name)]
    return "\n\n".join(parts)


def _link_download(m: MachineProfiles, name: str, rel: str, label: str) -> str:
    path = m.variant_dir(name) / rel
    if not path.is_file():
        raise ProfilesError(f"{path}: listed in profile.json but missing")
    filename = f"{m.name}.{name}.{rel.rsplit('/', 1)[-1]}"
    return f'[{label}](../../{site_path(m.name, name, rel)}){{ download="{filename}" }} ({file_size(path)})'


def _torch_section(m: MachineProfiles, name: str) -> str:
    vp = m.variants[name]
    out = ["### torch.profiler"]
    tp = vp.torch
    if tp is None:
        out.append(f"Not captured: {vp.skipped.get('torch') or vp.errors.get('torch') or 'not run'}.")
        return "\n\n".join(out)
    per_step = []
    if tp.self_cuda_us is not None:
        per_step.append(f"self CUDA time {fmt_us(tp.self_cuda_us)}")
    if tp.self_cpu_us is not None:
        per_step.append(f"self CPU time {fmt_us(tp.self_cpu_us)}")
    out.append(f"The {tp.active_steps} active steps of a wait/warmup/active schedule, each call inside the range "
               f"`{vp.op}:{name}`" + (f"; per step: {', '.join(per_step)}." if per_step else "."))
    if tp.kernels:
        rows = [[str(n), f"{n / tp.active_steps:g}", f"`{k}`"] for k, n in tp.kernels.items()]
        out.append(table(["launches", "per step", "kernel (as the profiler names it)"], rows, ["r", "r", "l"]))
    else:
        out.append("No GPU kernel recorded.")
    ops = ", ".join(f"`{k}` ×{n}" for k, n in tp.ops.items() if k.startswith("aten::"))
    if ops:
        out.append(f"ATen ops in the active steps: {ops}.")
    out.append(fence(m.text(name, tp.table_file), "text",
                     "key_averages() of the active steps, as printed"))
    if tp.trace_file:
        out.append(f"**Chrome trace**: {_link_download(m, name, tp.trace_file, 'download the trace')}. Open it in "
                   "[Perfetto](https://ui.perfetto.dev) (*Open trace file*; it reads the .gz as it is, in the "
                   "browser, uploading nothing) or at `chrome://tracing` (*Load*). Host threads are on top, with "
                   "each `ProfilerStep`, the named range, the `aten::` ops and their `cudaLaunchKernel`; the GPU "
                   "stream is below, with the kernels; flow arrows join each launch to its kernel.")
    return "\n\n".join(out)


NCU_ROWS: list[tuple[str, Callable]] = [
    ("Duration", lambda k: fmt_us(k.duration_us)),
    ("DRAM throughput (% of peak)", lambda k: fmt_ncu_pct(k.dram_pct)),
    ("Memory throughput (busiest unit)", lambda k: fmt_ncu_pct(k.memory_pct)),
    ("Compute (SM) throughput", lambda k: fmt_ncu_pct(k.compute_pct)),
    ("Achieved occupancy", lambda k: fmt_ncu_pct(k.achieved_occupancy_pct)),
    ("Theoretical occupancy", lambda k: fmt_ncu_pct(k.theoretical_occupancy_pct)),
    ("Registers per thread", lambda k: "—" if k.registers_per_thread is None else str(k.registers_per_thread)),
    ("Shared memory per block", lambda k: fmt_bytes(k.shared_bytes_per_block)),
    ("Grid (blocks)", lambda k: fmt_dims(k.grid)),
    ("Block (threads)", lambda k: fmt_dims(k.block)),
    ("Cluster (blocks)", lambda k: str(k.cluster) if k.cluster else "none"),
    ("Waves per SM", lambda k: "—" if k.waves_per_sm is None else f"{k.waves_per_sm:g}"),
    ("SM clock", lambda k: "—" if k.sm_mhz is None else f"{k.sm_mhz:,.0f} MHz"),
]


def _ncu_section(m: MachineProfiles, name: str) -> str:
    vp = m.variants[name]
    out = ["### Nsight Compute"]
    if vp.ncu is None:
        out.append(f"Not run: {vp.skipped.get('ncu') or vp.errors.get('ncu') or 'no reason recorded'}.")
        return "\n\n".join(out)
    if not vp.ncu:
        out.append("Nsight Compute ran but recorded no kernel of this variant.")
        return "\n\n".join(out)
    total = ncu_per_call_us(vp)
    launches = len(vp.ncu)
    line = (f"{launches} kernel launch{'es' if launches > 1 else ''} per call, {fmt_us(total)} of kernel time, "
            "clocks unlocked (`--clock-control none`), each kernel replayed alone to read its counters.")
    if vp.ncu_text_file:
        line += f" Nsight Compute's own printout: {_link_download(m, name, vp.ncu_text_file, 'ncu.txt.gz')}."
    out.append(line)
    detail = []
    header = [""] + [f"{i + 1}. `{short_kernel(k.name)}`" for i, k in enumerate(vp.ncu)]
    rows = [[label, *[fmt(k) for k in vp.ncu]] for label, fmt in NCU_ROWS]
    detail.append(table(header, rows, ["l"] + ["r"] * launches))
    if any(short_kernel(k.name) != k.name for k in vp.ncu):  # the full names, where the table shortened them
        detail.append("\n".join(f"{i + 1}. `{k.name}`" for i, k in enumerate(vp.ncu)))
    for i, k in enumerate(vp.ncu):
        title = f"Rule results of {i + 1}. {short_kernel(k.name)} ({hints_summary(k.hints)})"
        if k.hints:
            detail.append(f"**{title}**, as Nsight Compute prints them (*OPT* an optimization opportunity with its "
                          "estimated speedup, *INF* information):\n\n" + fence(hints_text(k.hints), "text"))
        else:
            detail.append(f"**{title}**: Nsight Compute printed no rule result for this kernel.")
    if launches <= MANY_LAUNCHES:
        return "\n\n".join(out + detail)
    folded = "\n\n".join(detail).replace("\n", "\n    ")
    return "\n\n".join(out) + f'\n\n??? note "Each of the {launches} launches: metrics and rule results"\n\n    {folded}'


def _code_section(m: MachineProfiles, name: str) -> str:
    vp = m.variants[name]
    out = ["### Compiled code"]
    if not vp.code:
        out.append("No compiled code captured for this variant"
                   + (" (see *Not captured here* above)." if vp.skipped else "."))
        return "\n\n".join(out)
    kinds = list(dict.fromkeys([k for k in CODE_KINDS if any(c.kind == k for c in vp.code)]
                               + [c.kind for c in vp.code]))
    items = []
    for kind in kinds:
        blocks = []
        for c in (c for c in vp.code if c.kind == kind):
            path = m.variant_dir(name) / c.file
            if not path.is_file():
                raise ProfilesError(f"{path}: listed in profile.json but missing")
            text = m.text(name, c.file)
            lines = len(text.splitlines())
            title = code_title(c)
            block = fence(text, code_language(c), html.escape(f"{c.file} ({lines} lines)"))
            if lines > LONG_CODE_LINES:
                block = f'??? abstract "{html.escape(title)}: {lines} lines, click to open"\n\n' + indent(block)
            else:
                block = f"**{html.escape(title)}**\n\n" + block
            blocks.append(block)
        items.append((CODE_KINDS.get(kind, (kind, None))[0], "\n\n".join(blocks)))
    out.append(forced_tabs(items))
    return "\n\n".join(out)


# --- the demos -----------------------------------------------------------------------------------------------------

def demos(data: SiteData) -> str:
    intro = ("# The lecture's demos, measured\n\n"
             "What the lecture shows on its slides, captured on our GPUs by `kernelscope profile --demos`: why a "
             "host clock needs a synchronize, which ATen op and kernel each spelling of a square reaches, what "
             "a fixed block size does to a row kernel and to the plot that measures it, and the autograd "
             "profiler in today's spelling. [Timing GPU work](../concepts/timing.md) and "
             "[the profilers](../concepts/profilers.md) explain them; [the profiles](profiles/index.md) have every "
             "variant's kernels.\n")
    profiles = data.profiles
    if profiles.empty or not profiles.has_demos():
        return intro + "\n" + note("warning", "No profiles yet", NO_PROFILES)
    return intro + "\n" + tabs([(name, _demos_for(m)) for name, m in profiles.machines.items()])


def _demos_for(m: MachineProfiles) -> str:
    d = m.demos
    if d is None:
        return f"No demos captured on `{m.name}` yet: `{PROFILE_COMMAND}` there captures them."
    parts = [stamp(m, d.commit), _host_clock(d), _squares(d), _fixed_block(m), _legacy(d)]
    errors = getattr(d, "errors", {})  # added after format 1
    if errors:
        parts.append(note("warning", "Demos that failed here",
                          "\n".join(f"- **{part}**: `{why}`" for part, why in errors.items())))
    skipped = not_captured(d.skipped, "Demos not captured here")
    if skipped:
        parts.append(skipped)
    return "\n\n".join(p for p in parts if p)


def _not_captured(d, part: str) -> str:
    error = getattr(d, "errors", {}).get(part)  # Demos.errors: added after format 1
    if error:
        return f"Failed on this machine: `{error}`."
    why = d.skipped.get(part)
    return f"Not captured on this machine: {why}." if why else "Not captured on this machine."


def host_clock_sentence(d) -> str:
    """What the host-clock demo found, in one sentence (also the concept page's macro)."""
    h = d.host_clock
    ratio = h.events_us / h.host_no_sync_us if h.host_no_sync_us else None
    return (f"timing {h.calls} calls of `{h.variant}` at {h.shape}, a host clock without synchronizing read "
            f"{fmt_us(h.host_no_sync_us)} per call, with a synchronize {fmt_us(h.host_sync_us)}, and CUDA events "
            f"{fmt_us(h.events_us)}" + (f": the unsynchronized reading is {ratio:,.0f}x too short" if ratio else ""))


def _host_clock(d) -> str:
    out = ["## A host clock around asynchronous work"]
    h = d.host_clock
    if h is None:
        return "\n\n".join(out + [_not_captured(d, "host_clock")])
    out.append("A kernel launch returns before the kernel runs, so a host clock read right after the calls "
               "measures the launches. Reading it after `torch.cuda.synchronize()` waits for the GPU; CUDA events "
               "are recorded on the stream itself ([Timing GPU work](../concepts/timing.md)).")
    out.append(table(["clock", f"per call, timing {h.calls} calls of `{h.variant}` at {h.shape}"],
                     [["`time.perf_counter()` around the calls, no synchronize (the wrong number)",
                       fmt_us(h.host_no_sync_us)],
                      ["`time.perf_counter()`, `torch.cuda.synchronize()` before the second reading",
                       fmt_us(h.host_sync_us)],
                      ["CUDA events recorded around the same calls", fmt_us(h.events_us)]], ["l", "r"]))
    out.append(f"Here, {host_clock_sentence(d)}.")
    return "\n\n".join(out)


def _squares(d) -> str:
    out = ["## The three squares: expression, ATen ops, kernel"]
    if not d.squares:
        return "\n\n".join(out + [_not_captured(d, "squares")])
    out.append("Each spelling under the profiler, read from our own trace: the ATen ops it went through, in call "
               "order, and the kernel it launched.")
    rows = [[f"`{s.expression}`", variant_cell(s.variant), " → ".join(f"`{o}`" for o in s.aten_ops) or "—",
             "<br>".join(f"`{k}`" for k in s.kernels) or "—"] for s in d.squares]
    out.append(table(["expression", "variant", "ATen ops", "kernel"], rows, ["l", "l", "l", "l"]))
    kernels = {tuple(s.kernels) for s in d.squares}
    templates = {short_kernel(k) for s in d.squares for k in s.kernels}
    if len(kernels) == 1:
        out.append(f"All {len(d.squares)} launched the same kernel.")
    elif len(templates) == 1:
        out.append(f"They launched {len(kernels)} different kernels, all instances of the template "
                   f"`{templates.pop()}`: what differs is the function each op passes it.")
    else:
        out.append(f"They launched {len(kernels)} different kernels.")
    return "\n\n".join(out)


def fixed_block_points(profiles: ProfileData) -> list[dict]:
    """The fixed-block demo's rows, per machine, as the chart reads them."""
    points = []
    for m in profiles.machines.values():
        for r in (m.demos.fixed_block if m.demos else []):
            pct = 100 * r.reported_gbps / r.copy_gbps if r.copy_gbps else None
            points.append({"machine": m.name, "cols": r.cols, "passed": r.passed,
                           "check": "matches the reference" if r.passed else "wrong",
                           "rel_err": _finite(r.rel_err), "rel_err_text": _err_text(r.rel_err), "time_us": r.time_us,
                           "time": fmt_time(r.time_us * 1e-6), "reported_gbps": r.reported_gbps,
                           "gbps_text": fmt_gbps(r.reported_gbps), "copy_gbps": r.copy_gbps, "pct": pct,
                           "pct_text": fmt_pct(pct)})
    return points


def fixed_block_sentence(d) -> str:
    """Where the fixed-block kernel starts failing and what the plot then reports (also a concept-page macro)."""
    rows = sorted(d.fixed_block, key=lambda r: r.cols)
    passing = [r.cols for r in rows if r.passed]
    failing = [r for r in rows if not r.passed]
    over = [r for r in rows if r.copy_gbps and r.reported_gbps > r.copy_gbps]
    text = (f"it matches the reference up to {max(passing):,} columns" if passing else "it never matches the reference")
    if failing:
        text += f" and is wrong from {failing[0].cols:,} columns on"
    if over:
        top = max(rows, key=lambda r: r.reported_gbps)
        text += (f"; the bandwidth its plot reports passes the measured copy bandwidth "
                 f"({fmt_gbps(over[0].copy_gbps)}) from {over[0].cols:,} columns and reaches "
                 f"{fmt_gbps(top.reported_gbps)} at {top.cols:,}, {top.reported_gbps / top.copy_gbps:.1f}x what "
                 "the memory can do")
    return text


def _fixed_block(m: MachineProfiles) -> str:
    d = m.demos
    out = ["## A fixed BLOCK_SIZE of 1024 per row"]
    if not d.fixed_block:
        return "\n\n".join(out + [_not_captured(d, "fixed_block")])
    out.append("The lecture's Triton row kernel with `BLOCK_SIZE` fixed at 1024 instead of the next power of two "
               "of the row: one program per row, 1024 columns each. Past 1024 columns it squares each row's first "
               "1024 elements and leaves the rest, so it finishes early; the lecture's plot divides all of the "
               "tensor's bytes by that time. The check against the reference is what catches it.")
    out.append(chart(charts.fixed_block(DEMOS_DATA, [m.name], f"BLOCK_SIZE 1024 per row: reported bandwidth by "
                                                              f"width ({m.name})")))
    rows_of = {getattr(r, "rows", 0) for r in d.fixed_block} - {0}
    shape = f" (tensors of {rows_of.pop():,} rows)" if len(rows_of) == 1 else ""
    out.append(f"On `{m.name}`{shape}, {fixed_block_sentence(d)}.")
    rows = []
    for r in sorted(d.fixed_block, key=lambda r: r.cols):
        pct = 100 * r.reported_gbps / r.copy_gbps if r.copy_gbps else None
        rows.append([f"{r.cols:,}", "✓ matches" if r.passed else "✗ wrong", _err_text(r.rel_err),
                     fmt_time(r.time_us * 1e-6), fmt_gbps(r.reported_gbps), fmt_pct(pct)])
    out.append(table(["columns", "check", "relative error", "time", "reported bandwidth", "of copy bandwidth"],
                     rows, ["r", "l", "r", "r", "r", "r"]))
    return "\n\n".join(out)


def _legacy(d) -> str:
    out = ["## The autograd profiler, as torch spells it today"]
    if not d.legacy_autograd_table:
        return "\n\n".join(out + [_not_captured(d, "legacy_autograd")])
    out.append("`torch.autograd.profiler.profile(use_device=\"cuda\")` (the lecture's `use_cuda=True` is "
               "deprecated) around the three squares, its `key_averages()` table as printed:")
    out.append(fence(d.legacy_autograd_table, "text"))
    return "\n\n".join(out)


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _err_text(err: float | None) -> str:
    # NaN: the check poisons the output with NaN first, so NaN means elements the kernel never wrote
    if err is None or math.isnan(err):
        return "NaN (elements never written)"
    return f"{err:.2g}"
