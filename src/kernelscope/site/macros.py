"""What a hand-written page may call: numbers from results, code from the repository.

Concept pages are Jinja templates rendered at build time with these
functions, so their numbers come from ``results/`` and their code from the
files the suite runs. A wrong name (a variant, a size, a file, a symbol) fails
the build; a right name without results yet renders a visible "no results
yet" instead of a number.

    {{ results_table(["softmax-manual", "softmax-torch"], sizes=["4096x4096"], modes=["warm", "graph"]) }}
    {{ value("square-torch", "64x64", "graph") }}      a formatted time, for prose
    {{ ratio("softmax-manual", "softmax-torch", "16384x16384") }}   time of the first / time of the second
    {{ ratio("square-torch", "square-torch", "64x64", "warm", "graph") }}  one variant, two modes
    {{ source("src/kernelscope/timing/warm.py", "HeldClock.__call__") }}
    {{ sweep_chart("square", ["square-numba-lecture", "square-numba-coalesced"]) }}
    {{ stamp() }}                                       GPU, software, commit and date of the numbers
    {{ bytes_moved("softmax", "16384x16384") }}         the op's minimum bytes at that size: "2.15 GB"
    {{ stress_table() }}                                 each op's stress inputs and the limits declared on them
    {{ demo_host_clock() }}    the host-clock demo's readings, in a sentence (from profiles/<machine>/demos.json)
    {{ demo_fixed_block() }}   where the fixed-BLOCK_SIZE row kernel fails and what its plot then reports
    {{ profile_link("square-torch") }}                  a link to a variant's profile page ("not profiled yet" without)
    {% if captured("square-triton-row", "ptx") %}...{% endif %}   whether a profile holds that compiled code
    {{ peer_agreement() }}     the suite's clocks against their peer timers, and the gate (evidence/<machine>/peers.json)
    {{ canary_detection() }}   injected slowdowns and what asv continuous flagged (evidence/<machine>/canary.json)
    {{ launch_bound_intervals() }}   how many launch-bound results the newest run sampled per process, how wide
    {{ interval_replay("results/m/c-env.json", "results-proofs/.../c-env.json") }}   two runs of one commit:
                               how often the rerun lands inside the first's per-process intervals, asv's and widened
    {{ dispatch_floor() }}     each backend's cheapest call from Python, and where each variant's GPU time overtakes it
    {{ plan_text("softmax-cuda", "64x262144", "h100") }}   `kernelscope plan`'s output for one call, on a preset GPU
    {{ launch_plans(["softmax-cuda", "softmax-numba"]) }}  each variant's launch at its op's benchmark sizes on
                               the H100 and H200 presets (kernelscope.plan: the launches' own functions)

The demo macros read the machine the concept pages quote (``machine:`` in
mkdocs.yml's kernelscope entry, else the one with most results) when it has
profiles, else the first profiled machine; with none they say so.
"""

from __future__ import annotations

from functools import cached_property

from kernelscope.catalog import OPS, VARIANTS
from kernelscope.ops import numel, parse_shape
from kernelscope.site import charts, plan_pages
from kernelscope.site.data import MODES, SiteData, fmt_gbps, fmt_pct, fmt_time
from kernelscope.site.pages import chart, fmt_interval, stamp as stamp_line, table
from kernelscope.site.canary_pages import detection_section
from kernelscope.site.dispatch_pages import dispatch_section
from kernelscope.site.peer_pages import agreement_summary
from kernelscope.site.profile_pages import fixed_block_sentence, host_clock_sentence
from kernelscope.site.notes import OVER_COPY_MARK, over_copy, over_copy_note
from kernelscope.site.profiles import PROFILE_COMMAND
from kernelscope.site.sources import source as source_ref
from kernelscope.timing.processes import HOST_BOUND_SHARE, LAUNCH_BOUND_PROCESSES, LAUNCH_BOUND_S, sampled_per_process

FIELDS = {
    "time": lambda r: fmt_time(r["time_s"]),
    "interval": fmt_interval,
    "gbps": lambda r: fmt_gbps(r["gbps"]),
    "pct": lambda r: fmt_pct(r["pct_of_peak"]),
    "samples": lambda r: str(r["samples"] or ""),
}
CODE_KINDS = ("ptx", "sass", "ptxas", "inductor")  # the compiled code a profile keeps (CodeArtifact.kind)
HEADERS = {"time": "median time", "interval": "99% interval", "gbps": "bandwidth", "pct": "% of copy BW",
           "samples": "samples"}


class Macros:
    def __init__(self, data: SiteData, machine: str | None = None):
        self.data = data
        self.machine = machine or data.reference_machine

    # -- lookups: a name that does not exist is an error, a result that does not exist yet is not --

    def _variant(self, name: str):
        if name not in VARIANTS:
            raise KeyError(f"unknown variant {name!r} (known: {', '.join(VARIANTS)})")
        return VARIANTS[name]

    def _size(self, op: str, size: str) -> str:
        known = ["x".join(map(str, s)) for s in OPS[op].bench_shapes]
        if size not in known:
            raise KeyError(f"{size!r} is not a benchmark size of {op} (sizes: {', '.join(known)})")
        return size

    def _mode(self, mode: str) -> str:
        if mode not in (*MODES, "first_call"):
            raise KeyError(f"unknown mode {mode!r} (modes: {', '.join(MODES)}, first_call)")
        return mode

    def row(self, variant: str, size: str, mode: str = "warm", dtype: str = "float32") -> dict | None:
        v = self._variant(variant)
        size, mode = self._size(v.op, size), self._mode(mode)
        if self.machine is None:
            return None
        snap = self.data.snapshot(self.machine, op=v.op, mode=mode)
        found = next((r for r in snap.rows if r["variant"] == variant and r["size"] == size and r["dtype"] == dtype
                      and r["status"] == "measured"), None)
        # a newest run that timed part of the op leaves the rest to an older run: a result exists, so it is shown
        return found or self._newest.get((variant, size, mode, dtype))

    @cached_property
    def _newest(self) -> dict[tuple, dict]:
        """(variant, size, mode, dtype) -> its newest measured row on the quoted machine."""
        order = {c: i for i, c in enumerate(self.data.order)}
        found: dict[tuple, dict] = {}
        for r in self.data.rows_on(self.machine) if self.machine else []:
            if r["status"] != "measured":
                continue
            key = (r["variant"], r["size"], r["mode"], r["dtype"])
            if key not in found or order.get(r["commit"], -1) > order.get(found[key]["commit"], -1):
                found[key] = r
        return found

    # -- what pages call --

    def stamp(self, op: str | None = None, mode: str | list[str] = "warm") -> str:
        """Where the numbers on this page come from (several modes: each distinct run once)."""
        if not isinstance(mode, str):
            return "\n".join(dict.fromkeys(self.stamp(op, m) for m in mode))
        if self.machine is None:
            return "<p class=\"ks-stamp\">No results yet.</p>"
        snap = self.data.snapshot(self.machine, **({"op": op} if op else {}), mode=self._mode(mode))
        return stamp_line(snap.run) if snap.run else f'<p class="ks-stamp">No {mode} results on {self.machine} yet.</p>'

    def value(self, variant: str, size: str, mode: str = "warm", field: str = "time") -> str:
        r = self.row(variant, size, mode)
        if field not in FIELDS:
            raise KeyError(f"unknown field {field!r} (fields: {', '.join(FIELDS)})")
        return FIELDS[field](r) if r else "*(no result yet)*"

    def ratio(self, reference: str, variant: str, size: str, mode: str = "warm", variant_mode: str | None = None) -> str:
        """``variant``'s speedup over ``reference``, the site's one convention: the reference's time over the
        variant's (in ``variant_mode``, default the same mode), as '2.31x'; above 1, the variant is faster."""
        a, b = self.row(reference, size, mode), self.row(variant, size, variant_mode or mode)
        return f"{a['time_s'] / b['time_s']:.2f}x" if (a and b) else "*(no result yet)*"

    def results_table(self, variants: list[str], sizes: list[str] | None = None, modes: list[str] = ("warm",),
                      fields: list[str] = ("time", "interval", "gbps", "pct"),
                      method: str = "method.md") -> str:
        """One row per variant, size and mode, with the stamp of the run it came from; a percent of copy over 100
        is marked and explained under the table (``method``: the method page, relative to the calling page)."""
        for f in fields:
            if f not in FIELDS:
                raise KeyError(f"unknown field {f!r} (fields: {', '.join(FIELDS)})")
        rows, stamps, found = [], [], []
        for name in variants:
            v = self._variant(name)
            chosen = sizes or ["x".join(map(str, s)) for s in OPS[v.op].bench_shapes]
            for size in sorted(chosen, key=lambda s: numel(parse_shape(s))):
                for mode in modes:
                    r = self.row(name, size, mode)
                    if r:
                        found.append(r)
                        run = self.data.run(self.machine, r["commit"])
                        if run not in stamps:
                            stamps.append(run)
                    cells = [FIELDS[f](r) + (OVER_COPY_MARK if f == "pct" and over_copy(r) else "")
                             for f in fields] if r else ["*(no result yet)*"] + [""] * (len(fields) - 1)
                    rows.append([f"`{name}`", size, mode, *cells])
        out = table(["variant", "size", "mode", *[HEADERS[f] for f in fields]], rows, ["l", "l", "l"] + ["r"] * len(fields))
        over = over_copy_note(found, f"{method}#percent-of-the-measured-copy-bandwidth") if "pct" in fields else ""
        return out + ("\n\n" + over if over else "") + "\n\n" + (
            "\n".join(stamp_line(s) for s in stamps) if stamps else
            '<p class="ks-stamp">No results yet for these variants.</p>')

    def bytes_moved(self, op: str, size: str, dtype: str = "float32") -> str:
        """The op's bytes model at a size (each input read once, each output written once), in GB."""
        if op not in OPS:
            raise KeyError(f"unknown op {op!r}")
        return f"{OPS[op].bytes_for(parse_shape(self._size(op, size)), dtype) / 1e9:.3g} GB"

    def stress_table(self) -> str:
        """Every op's stress inputs, then the limits variants declare on them (from the ops and the catalog)."""
        rows = [[op.name, f"`{st.name}`", "x".join(map(str, st.shape)), st.what]
                for op in OPS.values() for st in op.stress]
        limits = [f"- `{v.name}`, `{lim.input}` in {', '.join(lim.dtypes)}: {lim.why}"
                  for v in VARIANTS.values() for lim in v.limits]
        return (table(["op", "input", "shape", "what it is"], rows, ["l", "l", "l", "l"])
                + "\n\nDeclared limits:\n\n" + ("\n".join(limits) or "- none"))

    def source(self, path: str, symbol: str | None = None, title: str | None = None) -> str:
        return source_ref(path, symbol).snippet(title=title)

    def sweep_chart(self, op: str, variants: list[str] | None = None, modes: list[str] = MODES,
                    title: str | None = None) -> str:
        """The op page's size sweep, reduced to some variants (the data file is the op page's)."""
        if op not in OPS:
            raise KeyError(f"unknown op {op!r}")
        for name in variants or []:
            if self._variant(name).op != op:
                raise KeyError(f"{name} is a variant of {VARIANTS[name].op}, not {op}")
        if self.machine is None:
            return "*No results yet.*"
        present = self.data.modes(self.machine, op)
        spec = charts.size_sweep(f"data/{op}.json", [m for m in modes if m in present] or ["warm"], [self.machine],
                                 self.data.dtypes(op, self.machine) or ["float32"], title or f"{op}: GB/s by size ({self.machine})")
        if variants:
            spec["transform"].append({"filter": {"field": "variant", "oneOf": list(variants)}})
        return chart(spec)

    # -- profiles: the demos and the variants' profile pages --

    def _demos(self):
        """The demos of the quoted machine when it has them, else of the first profiled machine that has."""
        machines = self.data.profiles.machines
        order = ([machines[self.machine]] if self.machine in machines else []) + list(machines.values())
        return next(((m, m.demos) for m in order if m.demos), (None, None))

    def _no_demos(self) -> str:
        return f"*(no profiles yet: `{PROFILE_COMMAND}` on a GPU box)*"

    def demo_host_clock(self) -> str:
        """'on <GPU>, over 10 calls of `square-torch` at 16384x16384, a host clock without synchronizing read ...'"""
        m, demos = self._demos()
        if demos is None or demos.host_clock is None:
            return self._no_demos()
        return f"on {m.manifest.gpu}, {host_clock_sentence(demos)}"

    def demo_fixed_block(self) -> str:
        """'on <GPU>, it matches the reference up to 1,024 columns and is wrong from 2,048 columns on; ...'"""
        m, demos = self._demos()
        if demos is None or not demos.fixed_block:
            return self._no_demos()
        return f"on {m.manifest.gpu}, {fixed_block_sentence(demos)}"

    def profile_link(self, variant: str, text: str | None = None) -> str:
        """A Markdown link to the variant's profile page, from a page one folder below the site's root."""
        self._variant(variant)
        if variant not in self.data.profiles.variants():
            return f"`{variant}` *(not profiled yet)*"
        return f"[{text or f'`{variant}`'}](../results/profiles/{variant}.md)"

    def captured(self, variant: str, kind: str) -> bool:
        """Whether some profiled machine holds ``variant``'s compiled code of ``kind`` ("ptx", "sass", "ptxas",
        "inductor"): a page says what exists, so its words hold before and after a profiling run."""
        self._variant(variant)
        if kind not in CODE_KINDS:
            raise KeyError(f"unknown code kind {kind!r} (kinds: {', '.join(CODE_KINDS)})")
        return any(c.kind == kind for m in self.data.profiles.machines.values()
                   if variant in m.variants for c in m.variants[variant].code)

    def peer_agreement(self) -> str:
        """The quoted machine's (else the first machine's) peer-timer evidence: agreement per mode, the gate."""
        return agreement_summary(self.data.evidence.pick(self.machine))

    def canary_detection(self) -> str:
        """Every machine's canary: each level's exit code and flags, each slowed size's ratio against its interval."""
        return detection_section(self.data.evidence.canaries)

    def dispatch_floor(self) -> str:
        """The quoted machine's host and warm results: each backend's dispatch floor, each variant's crossover."""
        return dispatch_section(self.data, self.machine)

    def launch_bound_intervals(self) -> str:
        """The quoted machine's newest run with launch-bound results sampled per process: how many, how wide."""
        rows = [r for r in self.data.rows_on(self.machine) if r["status"] == "measured"
                and r["mode"] in ("warm", "cold") and r["ci_low"] is not None and r["samples"]]
        per_process = [r for r in rows if r["launch_bound"] and sampled_per_process(r["samples"])]
        if not per_process:
            return (f"*No launch-bound results sampled per process on `{self.machine}` yet: they come with the "
                    "next `asv run`.*")
        order = {c: i for i, c in enumerate(self.data.order)}
        commit = max({r["commit"] for r in per_process}, key=lambda c: order.get(c, -1))
        mine = [r for r in per_process if r["commit"] == commit]
        others = [r for r in rows if r["commit"] == commit and not r["launch_bound"]]

        def half_width(group):
            widths = sorted((r["ci_high"] - r["ci_low"]) / 2 / r["time_s"] for r in group)
            return f"±{100 * widths[len(widths) // 2]:.1f}%" if widths else "n/a"

        n_proc = sorted({r["samples"] for r in mine})
        from kernelscope.site.notes import commit_line

        return (f"On `{self.machine}` at {commit_line(self.data, self.machine, commit, 60)}: "
                f"**{len(mine)} launch-bound warm and cold results**, each from "
                f"{' or '.join(map(str, n_proc))} processes, one value each; the median half-width of their 99% "
                f"intervals is **{half_width(mine)}** of the median. The {len(others)} warm and cold results above "
                f"{LAUNCH_BOUND_S * 1e6:.0f} µs of the same run, each from one process, read "
                f"**{half_width(others)}**.")

    def interval_replay(self, first: str, rerun: str) -> str:
        """Two stored runs of one commit (paths from the repository's root): per mode, the first run's cases
        sampled per process whose rerun median lands inside asv's interval and inside the widened one."""
        from kernelscope.asv import intervals as asv_intervals

        paths = [self.data.repo / p for p in (first, rerun)]
        for p in paths:
            if not p.is_file():
                raise FileNotFoundError(f"interval_replay: no stored run {p}")
        counts = asv_intervals.replay(*map(str, paths))
        names = {"time_warm": "warm", "track_cold": "cold", "track_host": "host", "time_first_call": "first call"}

        def share(hits, n):
            return f"{hits} of {n} ({100 * hits / n:.1f}%)" if n else "none"

        rows = [[names.get(m, m), str(c["cases"]), share(c["own"], c["cases"]), share(c["widened"], c["cases"])]
                for m, c in sorted(counts.items())]
        total = {k: sum(c[k] for c in counts.values()) for k in ("cases", "own", "widened")}
        rows.append(["**all**", str(total["cases"]), share(total["own"], total["cases"]),
                     share(total["widened"], total["cases"])])
        return table(["mode", "cases sampled per process", "rerun inside asv's interval",
                      "rerun inside the widened interval"], rows)

    # -- launch plans: computed from the variants' own plan functions, on the presets (no GPU, no results) --

    def _planned(self, name: str):
        v = self._variant(name)
        if v.plan is None:
            from kernelscope.plan import no_plan

            raise KeyError(f"{name} has no launch plan ({no_plan(v)})")
        return v

    def plan_text(self, variant: str, size: str, gpu: str = "h100", dtype: str = "float32") -> str:
        """`kernelscope plan VARIANT SIZE DTYPE --gpu GPU`'s output, as a code block."""
        from kernelscope.plan import PRESETS, describe, plan_of

        v = self._planned(variant)
        if gpu not in PRESETS:
            raise KeyError(f"unknown GPU preset {gpu!r} (presets: {', '.join(PRESETS)})")
        p = plan_of(v, parse_shape(self._size(v.op, size)), dtype, gpu)
        dtype_arg = "" if dtype == "float32" else f" {dtype}"
        return f"```text\n$ kernelscope plan {variant} {size}{dtype_arg} --gpu {gpu}\n{describe(p)}\n```"

    def launch_plans(self, variants: list[str], gpus: list[str] = plan_pages.GPUS, dtype: str = "float32") -> str:
        """A row a variant and benchmark size: the strategy, kernel, grid x block and cluster of the call's launches
        on each preset GPU (plan_pages.plan_table)."""
        return plan_pages.plan_table([self._planned(name) for name in variants], tuple(gpus), dtype)

    def namespace(self) -> dict:
        return {"stamp": self.stamp, "value": self.value, "ratio": self.ratio, "results_table": self.results_table,
                "source": self.source, "sweep_chart": self.sweep_chart, "bytes_moved": self.bytes_moved,
                "stress_table": self.stress_table, "machine": self.machine,
                "demo_host_clock": self.demo_host_clock, "demo_fixed_block": self.demo_fixed_block,
                "profile_link": self.profile_link, "has_profiles": not self.data.profiles.empty,
                "captured": self.captured,
                "peer_agreement": self.peer_agreement, "launch_bound_intervals": self.launch_bound_intervals,
                "interval_replay": self.interval_replay,
                "canary_detection": self.canary_detection, "dispatch_floor": self.dispatch_floor,
                "plan_text": self.plan_text, "launch_plans": self.launch_plans,
                "launch_bound_s_us": f"{LAUNCH_BOUND_S * 1e6:g}", "launch_bound_processes": LAUNCH_BOUND_PROCESSES,
                "host_bound_share_pct": f"{HOST_BOUND_SHARE * 100:g}",
                "has_results": not self.data.empty, "ops": list(OPS), "variants": VARIANTS}
