"""The generated results pages, as Markdown, from :class:`~kernelscope.site.data.SiteData`.

Nothing here is committed output: the plugin calls these functions on every
build. Each page says where its numbers came from (GPU, software, commit,
date) and says so plainly when a machine or mode has no results yet.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from kernelscope import backends
from kernelscope.catalog import OPS, VARIANTS, variants_of
from kernelscope.ops import numel, parse_shape, shape_str
from kernelscope.results import compare, history as results_history
from kernelscope.results.export import mostly_low_clock
from kernelscope.results.machine import boxes as machine_boxes, fp32_peak
from kernelscope.site import answer_pages, chart_data, charts, floor_pages, plan_pages, profile_pages
from kernelscope.site.data import (BACKEND_TITLES, KIND_WORDS, MODE_WORDS, MODES, SiteData, day, dtype_order,
                                   fmt_gbps, fmt_pct, fmt_time, in_sweep, largest_shape, variant_kind)
from kernelscope.site.markdown import WIDE, chart, indent, note, table, tabs, variant_cell
from kernelscope.site.notes import OVER_COPY_MARK, over_copy, over_copy_note
from kernelscope.site.sources import SourceRef, module_path, variant_sources
from kernelscope.timing.clocks import THROTTLE_FRACTION
from kernelscope.timing.processes import (HOST_BOUND_SHARE, LAUNCH_BOUND_PROCESSES, LAUNCH_BOUND_S,
                                          launch_bound_result, sampled_per_process)

NO_RESULTS = ("No results are committed yet. Run the suite on a GPU (`asv run --record-samples "
              "--machine NAME HEAD^!`, see the README), commit `results/`, and rebuild the site.")


# --- Markdown helpers ----------------------------------------------------------------------------------------------

def stamp(run) -> str:
    return f'<p class="ks-stamp">Measured on {run.stamp()}.</p>'


def stamps(data: SiteData, machine: str, rows: list[dict]) -> str:
    """A stamp per run the rows came from, newest first, each naming its ops when the rows span several runs:
    a commit's run may hold only part of the suite, and an op's newest numbers are then an older commit's."""
    ops: dict[str, list[str]] = {}  # short hash (rows carry the full one, chart points the short) -> its ops
    for r in rows:
        found = ops.setdefault(r["commit"][:8], [])
        if r["op"] not in found:
            found.append(r["op"])
    full = {r["commit"][:8]: r["commit"] for r in data.rows if r["machine"] == machine}
    runs = sorted((data.run(machine, full[c]) for c in ops), key=lambda run: run.run_at or 0, reverse=True)
    if len(runs) == 1:
        return stamp(runs[0])
    return "\n".join(f'<p class="ks-stamp">Measured on {run.stamp()}: {", ".join(ops[run.short])}.</p>'
                     for run in runs)


def per_machine(data: SiteData, render: Callable[[str], str]) -> str:
    """The page body once per machine: in linked tabs with more than one (a machine switch on every page)."""
    if data.empty:
        return note("warning", "No results yet", NO_RESULTS)
    body = tabs([(m, render(m)) for m in data.machines])
    if len(data.machines) == 1:
        body = (f"Results from one machine, `{data.machines[0]}`; with results from more than one, every "
                "results page gets a machine switch ([Machines](machines.md)).\n\n" + body)
    return body


def fmt_interval(row: dict) -> str:
    """The 99% interval in the median's unit, with as many digits as it takes to tell its ends apart: '[713–715]';
    one-sided, '[under 715]', where asv's lower bound is zero or below (no time is: :func:`ci_low_of`)."""
    lo, hi, t = row.get("ci_low"), row.get("ci_high"), row.get("time_s")
    if lo is None or hi is None or not t:
        return ""
    unit = fmt_time(t).split()[-1]
    scale = {"s": 1, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}[unit]
    if lo <= 0:
        return f"[under {hi / scale:.3g}]"
    for digits in range(3, 7):
        a, b = f"{lo / scale:.{digits}g}", f"{hi / scale:.{digits}g}"
        if a != b:
            break
    return f"[{a}–{b}]"


LAUNCH_BOUND_MARK = "◦"
LOW_CLOCK_MARK = "‡"  # most of a result's samples read the SM clock low: the GPU waited for the host, or throttled
COMPILE_MARK = "†"  # a torch.compile variant: Inductor's compile-time autotuning may choose differently run to run
BOX_MARK = "§"  # a launch-bound case measured on two boxes, which read such cases further apart than one box does
LAUNCH_BOUND_WORDS = (
    f"Hollow points and {LAUNCH_BOUND_MARK} mark launch-bound results: calls of under "
    f"{LAUNCH_BOUND_S * 1e6:.0f} µs (in host mode also calls whose host cost is {HOST_BOUND_SHARE:.0%} of their GPU "
    "time or more), where most of the time is the cost of getting each launch onto the GPU rather than the "
    "kernel's work. That cost varies more from one process to the next than within one, so each such result is "
    f"one value from each of {LAUNCH_BOUND_PROCESSES} processes, and its 99% interval says where a rerun's median "
    "would land: wide, because the cost is. [How it was measured](../concepts/method.md#launch-bound-intervals).")


def sizes_of(op: str, sweep: bool | None = None) -> list[str]:
    shapes = sorted(OPS[op].bench_shapes, key=numel)
    sizes = [shape_str(s) for s in shapes]
    return [s for s in sizes if sweep is None or in_sweep(s) == sweep]


def gate_status(rows: list[dict], variant: str) -> str:
    """What the correctness gate said of a variant in these rows: it runs before every timing."""
    mine = [r for r in rows if r["variant"] == variant]
    failed = sorted({r["size"] for r in mine if r["status"] == "failed"}, key=lambda s: numel(parse_shape(s)))
    passed = {r["size"] for r in mine if r["status"] == "measured"}
    if failed:
        return "✗ failed at " + ", ".join(failed)
    if passed:
        return f"✓ {len(passed)} size{'s' if len(passed) > 1 else ''}"
    return "not run"


def machine_facts(run, results_dir) -> str:
    """A machine's facts from its newest run; the CPU and the copy bandwidth from its boxes (boxes.jsonl): the
    host is a box's, not the machine's, and the copy bandwidth the median of every box's reading."""
    p = run.params
    peak = fp32_peak(p)
    boxes = machine_boxes(results_dir, run.machine)
    cpus = sorted({f"{b.get('cpu') or '?'}, {b.get('num_cpu') or '?'} cores" for b in boxes if b.get("cpu")})
    copies = [b for b in boxes if b.get("copy_gbps")]
    rows = [["GPU", p.get("gpu", run.machine)],
            ["SMs, L2, memory", f"{p.get('gpu_sms', '?')} SMs, {p.get('gpu_l2_mib', '?')} MiB L2, "
                                f"{p.get('gpu_memory_gib', '?')} GiB"],
            ["compute capability", p.get("compute_capability", "?")],
            ["driver, CUDA", f"{p.get('driver', '?')}, CUDA {p.get('cuda', '?')}"],
            ["torch, triton, numba-cuda", f"{p.get('torch', '?')}, {p.get('triton', '?')}, {p.get('numba_cuda', '?')}"],
            ["measured copy bandwidth", fmt_gbps(run.copy_gbps) + " (read + write, device to device"
             + (f"; the median of {len(copies)} readings on its boxes)" if len(copies) > 1 else ")")],
            ["FP32 compute roof", f"{peak[0]:.1f} TFLOP/s ({peak[1]})" if peak else "unknown"],
            ["CPU" + ("s of its boxes" if len(cpus) > 1 else ""), "; ".join(cpus) or "not recorded"],
            ["asv machine name", f"`{run.machine}`"]]
    return table(["", ""], rows, ["l", "l"])


# --- Overview ------------------------------------------------------------------------------------------------------

def overview(data: SiteData) -> str:
    intro = (
        "## Each backend at the largest size\n\n"
        "For every op and every way of getting a kernel into PyTorch, the fastest variant at the op's largest "
        "size, timed **warm** (calls back to back, the launch queue held full, see [Timing](../concepts/timing.md)). "
        "Percent is of the machine's measured device-to-device copy bandwidth, the practical ceiling of a "
        "memory-bound kernel; *speedup vs eager* is the best PyTorch eager variant's time over this one's "
        "(above 1: faster than eager). "
        "Every timed case first matched the float64 reference on fresh random inputs "
        "([the method](../concepts/method.md)); the *gate* column says at how many sizes it did in this run "
        "(✓) or where it did not (✗).\n")
    return (WIDE + "# Overview\n\n" + answer_pages.chooser(data) + "\n" + intro + "\n"
            + per_machine(data, lambda m: _overview_for(data, m)))


def _overview_for(data: SiteData, machine: str) -> str:
    cells = chart_data.overview_best(data, machine)
    measured = [c["row"] for c in cells if c["row"]]
    if not measured:
        return note("warning", f"No warm results on {machine}", "This machine has no warm-mode results yet.")
    rows = []
    for c in cells:
        op_page, backend = f"[{c['op']}]({c['op']}.md)", BACKEND_TITLES[c["backend"]]
        r, eager = c["row"], c["eager"]
        if r is None:
            rows.append([op_page, backend, f"*{c['why']}*", "", "", "", ""])
            continue
        same_run = data.rows_at(machine, r["commit"])
        rows.append([op_page, backend, f"`{r['variant']}`", f"{fmt_time(r['time_s'])} {fmt_interval(r)}",
                     f"{fmt_gbps(r['gbps'])} ({fmt_pct(r['pct_of_peak'])}{OVER_COPY_MARK if over_copy(r) else ''})",
                     f"{eager['time_s'] / r['time_s']:.2f}x" if eager else "—", gate_status(same_run, r["variant"])])
    spec = charts.overview_matrix("data/overview.json", [machine], list(OPS), list(backends.BACKENDS),
                                  f"Best variant per op and backend, % of copy bandwidth ({machine})")
    sizes = ", ".join(f"{op} {largest_shape(op)}" for op in OPS)
    return "\n\n".join([
        stamps(data, machine, measured),
        chart(spec),
        f"Sizes: {sizes}; float32. Hover a cell for its numbers.",
        table(["op", "backend", "best variant", "median time [99% interval]", "bandwidth (% of copy BW)",
               "speedup vs eager", "gate"], rows, ["l", "l", "l", "r", "r", "r", "l"]),
        over_copy_note(measured),
        "### The machine\n\n" + machine_facts(data.latest_run(machine), data.results_dir),
    ])


# --- One page per op -----------------------------------------------------------------------------------------------

def op_page(data: SiteData, op: str) -> str:
    spec = OPS[op]
    head = [WIDE + f"# {op}\n", f"{spec.summary[0].upper()}{spec.summary[1:]}.\n",
            f"Inputs: {spec.input_desc}. Sizes: {', '.join(sizes_of(op))}. How the op is defined (reference, "
            f"bytes, FLOPs, tolerances): `src/kernelscope/ops/{op}.py`, shown at the end of this page.\n"]
    body = per_machine(data, lambda m: _op_results(data, op, m))
    parts = ["\n".join(head) + "\n" + body, plan_pages.op_section(op), _first_calls(data, op),
             profile_pages.op_section(data.profiles, op), _variants_table(data, op), _sources(op)]
    return "\n\n".join(part for part in parts if part)


def _op_results(data: SiteData, op: str, machine: str) -> str:
    modes = data.modes(machine, op)
    if not modes:
        return note("warning", f"No results for {op} on {machine}", "Nothing measured yet for this op here.")
    dtypes = data.dtypes(op, machine) or ["float32"]
    parts = [answer_pages.op_section(data, op, machine), "## Size sweep\n",
             "GB/s against the number of elements, one line per variant, as the lecture's `perf_report` plot but "
             "for every backend; the dashed line is the machine's measured copy bandwidth. The vertical bars are "
             "99% intervals. Switch the timing mode below the chart; hover a point for its exact numbers. "
             f"{LAUNCH_BOUND_WORDS}\n",
             chart(charts.size_sweep(f"data/{op}.json", modes, [machine], dtypes, f"{op}: GB/s by size ({machine})"))]
    timed = {r["variant"] for r in data.rows_on(machine) if r["op"] == op and r["mode"] == "host"
             and r["status"] == "measured"}
    variants = [name for name in VARIANTS if name in timed]  # catalog order; those with host-mode results here
    if variants:
        parts += ["## Where the time goes\n",
                  "One variant at a time: the time per call of a Python loop of calls (host mode), of the GPU with "
                  "the launches queued ahead (warm) and of the GPU replaying a CUDA graph (graph, no launches). "
                  "Where host reads over warm, a loop of calls is **launch-bound on the host**: the kernel waits for "
                  "Python. Where warm reads over graph, it is **launch-bound on the GPU**: each launch's own cost "
                  "outweighs the work. Where the three meet, the kernel is the cost (here, **bandwidth-bound**). "
                  "[What a call costs from Python](../concepts/kernels-into-pytorch.md#what-a-call-costs-from-python) "
                  "compares the backends.\n",
                  chart(charts.regimes(f"data/{op}.json", variants, [machine], dtypes,
                                       f"{op}: time per call by mode ({machine})"))]
    others = sizes_of(op, sweep=False)
    if others:
        sweep = sizes_of(op, sweep=True)
        anchor = min(sweep, key=lambda s: abs(numel(parse_shape(s)) - numel(parse_shape(others[0]))))
        parts += ["## Row shapes\n",
                  f"Rows of other widths at a similar element count, beside the square `{anchor}`: a kernel that "
                  "gives each row to one program has few programs when rows are few and wide.\n",
                  chart(charts.row_shapes(f"data/{op}.json", modes, [machine], dtypes, [anchor] + others,
                                          f"{op}: GB/s by row shape ({machine})"))]
    warm = data.snapshot(machine, op=op, mode="warm")  # the run the page's warm tables show: it judges the targets
    suite = {(r["variant"], r["size"], r["dtype"]): r["pct_of_peak"] for r in warm.rows
             if r.get("pct_of_peak") is not None}
    floor = floor_pages.op_section(data.evidence.floors.get(machine), op, suite, warm.run.commit if warm.run else "")
    if floor:
        parts.append(floor)
    parts += ["## Numbers\n", "Every variant at every size: the median time per call and its 99% interval "
              "(asv's), then bandwidth and percent of the copy bandwidth, per timing mode. A dash: not measured (the "
              "variant does not take that size, or failed).\n",
              '??? abstract "The tables, per mode"\n\n'
              + indent(tabs([(mode, _mode_tables(data, op, machine, mode)) for mode in MODES if mode in modes]))]
    missing = [m for m in MODES if m not in modes]
    if missing:
        parts.append(note("info", "Modes without results here",
                          f"No {', '.join(missing)} results for {op} on `{machine}` yet."))
    return "\n\n".join(parts)


def _mode_tables(data: SiteData, op: str, machine: str, mode: str) -> str:
    snap = data.snapshot(machine, op=op, mode=mode)
    if not snap:
        return f"No {mode}-mode results for {op} on `{machine}` yet."
    sizes = sizes_of(op)
    by = {(r["variant"], r["size"], r["dtype"]): r for r in snap.rows}
    out = [f"*{MODE_WORDS[mode]}.*", stamp(snap.run)]
    for dtype in sorted({r["dtype"] for r in snap.rows}, key=dtype_order):
        names = [v.name for v in variants_of(op) if any(k[0] == v.name and k[2] == dtype for k in by)]
        time_rows, bw_rows = [], []
        for name in names:
            cells_t, cells_b = [], []
            for size in sizes:
                r = by.get((name, size, dtype))
                if r is None or r["status"] != "measured":
                    cells_t.append("failed" if r else "—")
                    cells_b.append("—")
                    continue
                cells_t.append(f"{fmt_time(r['time_s'])} {fmt_interval(r)}" + (LAUNCH_BOUND_MARK if r["launch_bound"] else ""))
                cells_b.append(f"{fmt_gbps(r['gbps']).replace(' GB/s', '')} ({fmt_pct(r['pct_of_peak'])}"
                               f"{OVER_COPY_MARK if over_copy(r) else ''})")
            time_rows.append([variant_cell(name), *cells_t])
            bw_rows.append([variant_cell(name), *cells_b])
        label = f" ({dtype})" if len({k[2] for k in by}) > 1 else ""
        out += [f"**Median time [99% interval]{label}**", table(["variant", *sizes], time_rows),
                f"**GB/s (% of copy bandwidth){label}**", table(["variant", *sizes], bw_rows)]
    over = over_copy_note([r for r in snap.rows if r["status"] == "measured"])
    if over:
        out.append(over)
    if any(r["launch_bound"] for r in snap.rows):
        out.append(f"{LAUNCH_BOUND_MARK} launch-bound: {LAUNCH_BOUND_WORDS}")
    return "\n\n".join(out)


def _first_calls(data: SiteData, op: str) -> str:
    out = ["## First call in a fresh process\n",
           "Importing and compiling: the Triton JIT, torch.compile's trace and code generation, loading the CUDA "
           "extension (built once, then cached on disk). Timed by `FirstCall.time_first_call`, never inside the "
           "numbers above; one column a machine.\n"]
    snaps = [(m, data.snapshot(m, op=op, mode="first_call")) for m in data.machines]
    snaps = [(m, snap) for m, snap in snaps if snap]
    if not snaps:
        return "\n\n".join(out + ["No first-call results yet."])
    cells = {(m, r["variant"]): fmt_time(r["time_s"]) + (f" {fmt_interval(r)}" if fmt_interval(r) else "")
             for m, snap in snaps for r in snap.rows if r["status"] == "measured"}
    rows = [[f"`{v.name}`", v.backend, *[cells.get((m, v.name), "—") for m, _ in snaps]]
            for v in variants_of(op) if any((m, v.name) in cells for m, _ in snaps)]
    machine, snap = snaps[0]
    timed = sorted((r for r in snap.rows if r["status"] == "measured"), key=lambda r: r["time_s"])
    if timed:
        out.append(f"On `{machine}` a fresh process's first call takes from {fmt_time(timed[0]['time_s'])} "
                   f"(`{timed[0]['variant']}`) to {fmt_time(timed[-1]['time_s'])} (`{timed[-1]['variant']}`).")
    out.append(f'??? abstract "Every variant\'s first call ({len(rows)} variants)"\n\n' + indent("\n\n".join([
        *[stamp(s.run) for _, s in snaps],
        table(["variant", "backend", *[f"`{m}`" for m, _ in snaps]], rows, ["l", "l", *["r"] * len(snaps)])])))
    return "\n\n".join(out)


def _variants_table(data: SiteData, op: str) -> str:
    timed: dict[str, set[str]] = {}  # variant -> the dtypes some machine has a timed result in
    for r in data.rows:
        if r["op"] == op and r["mode"] in MODES and r["status"] == "measured":
            timed.setdefault(r["variant"], set()).add(r["dtype"])

    def dtypes_cell(v) -> str:
        mine = sorted(timed.get(v.name, ()), key=dtype_order)
        checked = [d for d in sorted(v.dtypes, key=dtype_order) if d not in mine]
        return "; ".join(([", ".join(mine)] if mine else ["none timed yet"])
                         + ([f"{', '.join(checked)} checked only"] if checked else []))

    rows = [[f"`{v.name}`", BACKEND_TITLES[v.backend], variant_kind(v.name) if variant_kind(v.name) != "other" else "",
             dtypes_cell(v), v.teaches] for v in variants_of(op)]
    limits = [f"- `{v.name}`, stress input `{lim.input}` in {', '.join(lim.dtypes)}: {lim.why}"
              for v in variants_of(op) for lim in v.limits]
    kinds = "; ".join(f"*{k}*: {KIND_WORDS[k]}" for k in ("lecture", "tuned"))
    return "## Variants\n\n" + f"Kind: {kinds}; the rest are studies beside them (a block size, a spelling). " \
        "*Dtypes*: those with a timed result in `results/`; *checked only*: dtypes the variant takes, which the " \
        "correctness check runs it in ([the method](../concepts/method.md)) but the suite has not timed.\n\n" \
        + table(["variant", "backend", "kind", "dtypes", "what it shows"], rows, ["l", "l", "c", "l", "l"]) + (
        "\n\n**Known limits** (stress inputs the check reports instead of failing; "
        "[the method](../concepts/method.md#stress-inputs)):\n\n" + "\n".join(limits) if limits else "")


def _sources(op: str) -> str:
    """The kernels, in tabs per backend (linked: choosing Triton on one page chooses it everywhere)."""
    items = []
    for backend, title in BACKEND_TITLES.items():
        variants = [v for v in variants_of(op) if v.backend == backend]
        if not variants:
            items.append((title, f"No {title} variant of {op} in the catalog yet."))
            continue
        blocks, shown = [], set()
        for v in variants:
            refs = [r for r in variant_sources(v) if (r.path, r.start) not in shown]
            shown.update((r.path, r.start) for r in refs)
            same_file = not refs
            text = f"**`{v.name}`**: {v.teaches}" + (" (in the file above)" if same_file else "")
            blocks.append("\n\n".join([text, *[r.snippet() for r in refs]]))
        items.append((title, "\n\n".join(blocks)))
    definition = SourceRef(module_path(f"kernelscope.ops.{op}")).snippet()
    return ("## Kernel sources\n\nIncluded from the files the suite runs.\n\n" + tabs(items)
            + f"\n\n??? abstract \"How {op} is defined: inputs, reference, bytes, FLOPs, tolerances\"\n\n"
            + indent(definition))


# --- Roofline ------------------------------------------------------------------------------------------------------

def roofline(data: SiteData) -> str:
    intro = (
        WIDE + "# Roofline\n\n"
        "Every variant at its op's largest size (warm, float32), as achieved FLOP/s against arithmetic intensity: the "
        "FLOPs the op needs per byte it must move. Below the ridge point a kernel can go no faster than "
        "bandwidth x intensity, the sloped roof; above it, no faster than the compute peak, the flat one. "
        "All four ops sit far left of the ridge: they are memory-bound, and the distance from a point up to "
        "the sloped roof is the bandwidth left on the table. FLOPs are counted per element as the ops define "
        "them (square 1, mean 1, softmax 5, gelu 9 with tanh as one).\n")
    return intro + "\n" + per_machine(data, lambda m: _roofline_for(data, m))


def _roofline_for(data: SiteData, machine: str) -> str:
    points = [p for p in chart_data.roofline_points(data, machine) if p["kind"] == "point"]
    if not points:
        return note("warning", f"No warm results on {machine}", "Nothing to place under the roofs yet.")
    run = data.latest_run(machine)  # its copy bandwidth and compute peak are the roofs the chart draws
    rows = [[variant_cell(p["variant"]), p["op"], p["size"], p["intensity_text"], p["gflops_text"], p["gbps_text"],
             p["pct_of_roof_text"]] for p in sorted(points, key=lambda p: (p["op"], -p["gflops"]))]
    peak = fp32_peak(run.params)
    ridge = f"{peak[0] * 1e3 / run.copy_gbps:.1f} FLOP/byte" if (peak and run.copy_gbps) else "unknown"
    return "\n\n".join([
        stamps(data, machine, points),
        chart(charts.roofline("data/roofline.json", [machine], f"Roofline ({machine})")),
        f"Ridge point: {ridge}. *Of the roof* is achieved FLOP/s over the roof at that intensity; for these "
        "memory-bound kernels it equals percent of the copy bandwidth. The point's shape is the variant's kind: "
        "circles the lecture's kernels, triangles the tuned ones written for speed beside them, squares the "
        "other studies; each op's column is labelled above its fastest point.",
        table(["variant", "op", "size", "intensity", "achieved", "bandwidth", "of the roof"], rows),
    ])


# --- History, regressions, commits ---------------------------------------------------------------------------------

def needs_results(intro: str):
    """A page that is ``intro`` and then what the decorated function builds from results; with none, a notice."""
    def wrap(body: Callable[[SiteData], list[str]]) -> Callable[[SiteData], str]:
        @functools.wraps(body)
        def page(data: SiteData) -> str:
            if data.empty:
                return intro + "\n" + note("warning", "No results yet", NO_RESULTS)
            return "\n\n".join([intro, *body(data)])
        return page
    return wrap


@needs_results(WIDE + "# History\n\n"
               "Median time per call at each commit that has results, per benchmark; the band is asv's 99% interval. "
               "Pick the size and mode under each chart; click a point to see its commit. A line breaks where the "
               "benchmark's version changed: what it measured changed, so the times are not comparable across "
               "the break (`asv compare` marks those `x`).\n")
def history(data: SiteData) -> list[str]:
    parts = []
    for op in OPS:
        parts.append(f"## {op}\n")
        rendered = []
        for machine in data.machines:
            modes = data.modes(machine, op)
            commits = {r["commit"] for r in data.rows_on(machine) if r["op"] == op}
            if not modes:
                rendered.append((machine, f"No results for {op} on `{machine}` yet."))
                continue
            body = chart(charts.history(f"data/{op}.json", modes, [machine], data.dtypes(op, machine) or ["float32"],
                                        sizes_of(op), f"{op}: time across commits ({machine})"))
            if len(commits) < 2:
                body = note("info", "One commit so far", f"`{machine}` has results for {op} at one commit only.") \
                    + "\n\n" + body
            else:
                body += "\n\n" + tuning_story(data, machine, op)
            rendered.append((machine, body))
        parts.append(tabs(rendered))
    return parts


def tuning_story(data: SiteData, machine: str, op: str, mode: str = "warm", dtype: str = "float32") -> str:
    """The op's tuned variants at its largest size: first and newest time, and the commits that moved each."""
    size = largest_shape(op)
    lines, movers = [], []
    rows = results_history.matching(data.rows, machine=machine, mode=mode, size=size, dtype=dtype)  # once, not a variant
    for v in variants_of(op):
        if variant_kind(v.name) != "tuned":
            continue
        found = results_history.steps(rows, data.order, machine=machine, variant=v.name, mode=mode, size=size,
                                      dtype=dtype)
        if len(found) < 2:
            continue
        first, last = found[0], found[-1]
        moved = [s for s in found if s["ratio"]]
        movers += [s["commit"] for s in moved if s["commit"] not in movers]
        lines.append([variant_cell(v.name), f"{fmt_time(first['time_s'])} at `{first['commit'][:8]}`",
                      f"{fmt_time(last['time_s'])} at `{last['commit'][:8]}`",
                      f"{100 * (last['time_s'] / first['time_s'] - 1):+.1f}%",
                      ", ".join(f"`{s['commit'][:8]}` {1 / s['ratio']:.2f}x" for s in moved) or "none", str(len(found))])
    if not lines:
        return f"No tuned {op} variant has {mode} results at {size} on two commits of `{machine}` yet."
    from kernelscope.site.notes import commit_line

    order = {c: i for i, c in enumerate(data.order)}
    commits = "\n".join(f"- {commit_line(data, machine, c)}" for c in sorted(movers, key=lambda c: order.get(c, -1)))
    return (f"**The tuned variants' story** ({mode}, {dtype}, {size}): each one's first and newest time at this "
            f"benchmark version, and every commit that moved it by more than "
            f"{100 * results_history.STEP:.0f}% (what a same-commit rerun is held to for benchmarks of 20 µs or more: "
            "[the method](../concepts/method.md#launch-bound-intervals)), with its speedup over the previous "
            "commit: the previous time over this one's ([the convention](../concepts/method.md#speedups-one-convention)"
            "; below 1, slower).\n\n"
            + table(["variant", "first", "newest", "change", "moved by", "commits"], lines,
                    ["l", "r", "r", "r", "l", "r"])
            + (f"\n\nThe commits that moved one:\n\n{commits}" if movers else ""))


def _launch_bound(row: dict) -> bool:
    """Whether a compared row is a launch-bound case's, on either side."""
    mode = compare.parse_benchmark(row["benchmark"])["mode"]
    return any(launch_bound_result(mode, t, "gpu") for t in (row["a"], row["b"]) if isinstance(t, float))


@needs_results(WIDE + "# Regressions\n\n"
               "What changed between the newest commit that has results and the newest one before it that measured "
               "any of the same cases, per machine, judged by the rule of "
               "`asv compare`: a change counts when the ratio passes 1.1 (either way) **and** the two sides differ "
               "significantly (Mann-Whitney U on the raw samples, p < 0.002, or non-overlapping 99% intervals "
               "without them). `+` slower, `-` faster, `!` newly failing, `*` fixed, `x` benchmark version "
               "changed (not comparable). Each row gives the command that measures both commits again and "
               "reports the change (`asv continuous`).\n")
def regressions(data: SiteData) -> list[str]:
    parts = []
    for machine in data.machines:
        parts.append(f"## {machine}\n")
        pair = results_history.last_two(data.rows_on(machine), data.order, machine=machine)
        if pair is None:
            parts.append(f"`{machine}` has no two commits that measured the same cases: nothing to compare yet.")
            continue
        a, b = pair
        rows = compare.compare(compare.Run(data.results_dir, a, machine), compare.Run(data.results_dir, b, machine),
                               measured_only=False)
        judged = [r for r in rows if r["ratio"] is not None or r["mark"] in "!*"]
        flagged = [r for r in judged if r["mark"] in "+-!*"]
        changed = [r for r in rows if r["mark"] == "x"]
        ra, rb = data.run(machine, a), data.run(machine, b)
        # A launch-bound case reads further apart on two boxes of one GPU than on one: judged only where one box ran both.
        boxes = [{r["host"] for r in data.rows_at(machine, c) if r.get("host")}
                 for c in (a, b)]
        one_box = len(boxes[0]) == 1 and boxes[0] == boxes[1] and not next(iter(boxes[0])).startswith("unrecorded-")
        between_boxes = [] if one_box else [r for r in flagged if r["mark"] in "+-" and _launch_bound(r)]
        counted = [r for r in flagged if r not in between_boxes]
        from kernelscope.site.notes import commit_line

        parts.append(f"- From {commit_line(data, machine, a)}, measured {day(ra.run_at)}\n"
                     f"- To {commit_line(data, machine, b)}, measured {day(rb.run_at)}\n\n"
                     f"{len(judged)} benchmarks "
                     f"measured at both, **{sum(r['mark'] == '+' for r in counted)} slower**, "
                     f"**{sum(r['mark'] == '-' for r in counted)} faster**, "
                     f"{sum(r['mark'] in '!*' for r in counted)} failure changes"
                     + (f", {len(between_boxes)} launch-bound case{'s' if len(between_boxes) != 1 else ''} apart "
                        f"by what two boxes read ({BOX_MARK})" if between_boxes else "")
                     + (f", {len(changed)} not comparable (version changed)" if changed else "") + ".")
        parts.append(f"The whole comparison: `asv compare {a[:8]} {b[:8]} --machine {machine} --split`")
        if not flagged:
            parts.append("Nothing flagged.")
            continue
        table_rows, commands, one_process_before, low_clock, compiled = [], [], 0, 0, 0
        samples_before = {(r["benchmark"], r["variant"], r["size"], r["dtype"]): r["samples"]
                          for r in data.rows_at(machine, a)}
        mostly_low = {(r["commit"], r["benchmark"], r["variant"], r["size"], r["dtype"])
                      for r in data.rows_at(machine, a) + data.rows_at(machine, b) if mostly_low_clock(r)}
        for r in sorted(flagged, key=lambda r: (r["mark"], -(r["ratio"] or 0))):
            info = compare.parse_benchmark(r["benchmark"])
            ratio = f"{r['ratio']:.2f}" if r["ratio"] else "n/a"
            bound = _launch_bound(r)
            if bound:
                name = r["benchmark"].partition("(")[0]
                n = samples_before.get((name, *info["params"]))  # a warm or cold case: (variant, size, dtype)
                one_process_before += bool(n) and not sampled_per_process(n)
            low = any((c, r["benchmark"].partition("(")[0], *info["params"]) in mostly_low for c in (a, b))
            low_clock += low
            variant = VARIANTS.get(info["params"][0]) if info["params"] else None
            inductor = variant is not None and variant.backend == "torch-compile"
            compiled += inductor
            table_rows.append([r["mark"], f"`{info['class']}.{info['method']}`",
                               ", ".join(info["params"]) + (f" {LAUNCH_BOUND_MARK}" if bound else "")
                               + (f" {LOW_CLOCK_MARK}" if low else "") + (f" {COMPILE_MARK}" if inductor else "")
                               + (f" {BOX_MARK}" if r in between_boxes else ""),
                               fmt_time(r["a"]), fmt_time(r["b"]), ratio])
            regex = r["benchmark"].removeprefix("benchmarks.").replace(".", r"\.").replace("(", r"\(").replace(")", r"\)")
            commands += [f"# {r['mark']} {info['class']}.{info['method']}({', '.join(info['params'])}): {ratio}",
                         f'asv continuous {a[:8]} {b[:8]} --machine {machine} -b "{regex}"']
        parts.append(table(["", "benchmark", "parameters", "before", "after", "after / before (asv's ratio)"], table_rows,
                           ["c", "l", "l", "r", "r", "r"]))
        if one_process_before:
            parts.append(f"{LAUNCH_BOUND_MARK} launch-bound. {one_process_before} of these flags compare a launch-bound "
                         f"result of `{a[:8]}`, sampled in one process before the per-process rule, whose interval is "
                         "too narrow to judge by: such a flag is not evidence of a change. "
                         "[Why](../concepts/method.md#launch-bound-intervals).")
        if between_boxes:
            parts.append(f"{BOX_MARK} {len(between_boxes)} of these flags compare launch-bound results that two "
                         "different boxes measured (each box's id is in its host-mode results; runs from before "
                         "boxes were recorded count as boxes of their own). Boxes with the same GPU read such cases "
                         "further apart than reruns on one box do, so these are not counted as slower or faster: "
                         "`asv continuous` on one box judges them. [Why](../concepts/method.md#launch-bound-intervals).")
        if low_clock:
            parts.append(f"{LOW_CLOCK_MARK} {low_clock} of these flags compare a result most of whose samples read the "
                         f"SM clock under {THROTTLE_FRACTION:.0%} of its maximum (the clock log beside the results): "
                         "the GPU waited for the host there, or throttled, and such samples read slow: such a flag "
                         "is not evidence of a change. Graph mode takes them again since its version 8. "
                         "[Why](../concepts/timing.md#graph-launch-costs-removed).")
        if compiled:
            parts.append(f"{COMPILE_MARK} {compiled} of these flags are of a torch.compile variant. Inductor chose "
                         "its kernel's launch configuration by timing the candidates once, when the run's first "
                         "process compiled it, and two runs may choose differently: such a flag may be that choice, "
                         "not a change of code. `python3 results-proofs/inductor-compile-choice/compile_choice_probe.py "
                         "--variant VARIANT --size SIZE` compiles it several times in fresh caches and prints each "
                         "choice beside its time. [Why](../concepts/kernels-into-pytorch.md#the-four-roads).")
        parts.append("Each row again, measured afresh on both commits (`asv continuous` runs them and reports "
                     "the change by the same rule):\n\n```sh\n" + "\n".join(commands) + "\n```")
    return parts


@needs_results(WIDE + "# Commits with results\n\n"
               "Every commit that has stored results, newest first, a row for each machine that measured it; history "
               "charts link here. *Measured*: how many cases the run holds, and its ops and modes where it did not "
               "time all of them. *Against the previous run*: the cases measured both here and at the machine's "
               "previous commit that measured any of the same, judged by `asv compare`'s rule (a ratio past 1.1 "
               "either way **and** a significant difference, as on [Regressions](regressions.md)): how many ran "
               "slower and faster of how many. `asv compare PREVIOUS HASH --machine MACHINE` lists them; "
               "`kernelscope results --commit HASH` lists a run's results.\n")
def commits(data: SiteData) -> list[str]:
    from kernelscope.site.data import short_subject

    rows, anchored = [], set()
    position = {c: i for i, c in enumerate(data.order)}
    mode_names = {"first_call": "first call"}
    for machine in data.machines:
        runs = data.runs(machine)
        every_mode = [m for m in (*MODES, "first_call") if any(r["mode"] == m for r in data.rows_on(machine))]
        cases = {run.commit: {(r["op"], r["mode"]) for r in data.rows_at(machine, run.commit)} for run in runs}
        for i, run in enumerate(runs):
            measured = data.rows_at(machine, run.commit)
            ops = [op for op in OPS if any(r["op"] == op for r in measured)]
            modes = [m for m in every_mode if any(r["mode"] == m for r in measured)]
            failed = sum(r["status"] == "failed" for r in measured)
            scope = [] if ops == list(OPS) else [", ".join(ops)]
            scope += [] if modes == every_mode else [", ".join(mode_names.get(m, m) for m in modes)]
            what = f"{len(measured):,} cases" + (f": {'; '.join(scope)}" if scope else "") + \
                (f", {failed} failed" if failed else "")
            # the machine's newest earlier run that measured any of the same ops in the same modes
            before = next((b for b in reversed(runs[:i]) if cases[b.commit] & cases[run.commit]), None)
            if before is None:
                moved = "first run of these cases"
            else:
                counts = data.moved(machine, before.commit, run.commit)
                words = [f"{counts['+']} slower", f"{counts['-']} faster"] + \
                    [f"{counts[k]} {w}" for k, w in (("!", "newly failing"), ("*", "fixed")) if counts[k]]
                changed = f"{counts['x']:,} of a changed benchmark version" if counts["x"] else ""
                moved = (f"vs `{before.short}`: {', '.join(words)} of {counts['compared']:,}"
                         + (f"; {changed}" if changed else "")
                         if counts["compared"] else f"vs `{before.short}`: none comparable ({changed or 'none in common'})")
            anchor = f'<span id="{run.short}"></span>' if run.short not in anchored else ""
            anchored.add(run.short)
            subject = short_subject(data.subjects.get(run.commit, "not in this repository's history"), 80)
            rows.append((position.get(run.commit, -1), machine,
                         [f"{anchor}`{run.short}`<br>{day(run.date)}", f"`{machine}`", f"{what}<br>{moved}",
                          subject]))
    rows.sort(key=lambda row: (-row[0], row[1]))
    return [table(["commit, date", "machine", "measured<br>against the previous run", "subject"],
                  [r for *_, r in rows], ["l", "l", "l", "l"])]


# --- Machines ------------------------------------------------------------------------------------------------------

@needs_results(WIDE + "# Machines\n\n"
               "Each machine's facts as `kernelscope machine` recorded them with its results. With results from "
               "two GPUs, each benchmark's speedup from one to the other stands beside the ratio of their measured "
               "copy bandwidths: a memory-bound kernel that uses the bandwidth well scales with it; a launch-bound "
               "one does not.\n")
def machines(data: SiteData) -> list[str]:
    parts = []
    for machine in data.machines:
        run = data.latest_run(machine)
        parts.append(f"## `{machine}`\n\n" + stamp(run) + "\n\n" + machine_facts(run, data.results_dir) + evidence_list(data, machine))
    if len(data.machines) < 2:
        parts.append(note("info", "One machine so far",
                          f"Only `{data.machines[0]}` has results. The comparison appears here when a second "
                          "machine's results are committed under `results/<its machine name>/`."))
        return parts
    base = data.machines[0]
    for other in data.machines[1:]:
        rows = chart_data.machine_pair_rows(data, base, other)
        parts.append(f"## `{other}` against `{base}`\n")
        if not rows:
            parts.append("No benchmark was measured on both.")
            continue
        ratio = rows[0]["bandwidth_ratio_text"]
        modes = [m for m in MODES if any(r["mode"] == m for r in rows)]
        parts.append(f"Copy bandwidth ratio ({other} / {base}): **{ratio}**. Points above the dashed line gained "
                     "more than bandwidth alone would give; points near 1 did not scale (launch-bound, or bound "
                     "by something else).")
        parts.append(chart(charts.machine_ratio(f"data/machines-{other}.json", modes, list(OPS), base, other)))
        summary = []
        for op in OPS:
            for mode in modes:
                cells = [op, mode]
                for size in (sizes_of(op)[0], largest_shape(op)):
                    at = sorted(r["speedup"] for r in rows if r["op"] == op and r["mode"] == mode and r["size"] == size)
                    cells.append(f"{at[len(at) // 2]:.2f}x ({at[0]:.2f}–{at[-1]:.2f}x)" if at else "—")
                summary.append(cells)
        parts.append("Median speedup over the variants measured on both, with its range, at each op's smallest and "
                     "largest size:\n\n" + table(["op", "mode", "smallest size", "largest size"], summary))
        table_rows = [[r["op"], f"`{r['variant']}`", r["mode"], r["size"], r["time_a_text"], r["time_b_text"],
                       r["speedup_text"], r["bandwidth_ratio_text"]] for r in rows]
        parts.append(f'??? abstract "Every benchmark measured on both ({len(rows)})"\n\n'
                     + indent(table(["op", "variant", "mode", "size", f"time on {base}", f"time on {other}",
                                     "speedup", "copy BW ratio"], table_rows)))
    return parts


def evidence_list(data: SiteData, machine: str) -> str:
    """What else was measured on the machine (evidence/<machine>/), each with its commit and the page showing it."""
    ev = data.evidence
    found = []
    if machine in ev.machines:
        st = ev.machines[machine].peers.stamp
        found.append(f"its clocks beside peer timers, `{st.command}` at `{st.commit[:8]}` ({st.date[:10]}): "
                     "[Peer timers](peers.md)")
    if machine in ev.floors:
        fl = ev.floors[machine]
        found.append(f"the wide rows' floors, each plan with free exps, at `{fl['commit'][:8]}` ({fl['date'][:10]}): "
                     "[softmax](softmax.md#floors)")
    if machine in ev.canaries:
        ca = ev.canaries[machine]
        found.append(f"the regression canary, `{ca['command']}` at `{ca['commit'][:8]}` ({ca['date'][:10]}): "
                     "[The method](../concepts/method.md)")
    if not found:
        return ""
    return "\n\nAlso measured on it (`evidence/" + machine + "/`):\n\n" + "\n".join(f"- {f}" for f in found)


PAGES: dict[str, Callable[[SiteData], str]] = {
    "results/index.md": overview,
    **{f"results/{op}.md": (lambda data, op=op: op_page(data, op)) for op in OPS},
    "results/roofline.md": roofline,
    "results/history.md": history,
    "results/regressions.md": regressions,
    "results/machines.md": machines,
    "results/commits.md": commits,
}
NAV_TITLES = {"results/index.md": "Overview", **{f"results/{op}.md": op for op in OPS},
              "results/roofline.md": "Roofline", "results/history.md": "History",
              "results/regressions.md": "Regressions", "results/machines.md": "Machines",
              "results/commits.md": "Commits"}


def data_files(data: SiteData) -> dict[str, object]:
    """Path under the site -> the JSON the charts read."""
    files: dict[str, object] = {f"data/{op}.json": chart_data.op_points(data, op) for op in OPS}
    files["data/overview.json"] = [c for m in data.machines for c in chart_data.overview_cells(data, m)]
    files["data/answers.json"] = answer_pages.records(data)
    files["data/roofline.json"] = [p for m in data.machines for p in chart_data.roofline_points(data, m)]
    for other in data.machines[1:]:
        files[f"data/machines-{other}.json"] = chart_data.machine_pair_rows(data, data.machines[0], other)
    return files
