"""The "kernels into PyTorch" page's dispatch floor: what a call costs from Python, per backend and variant.

From one machine's newest host-mode and warm-mode results
(:mod:`kernelscope.results.dispatch`): each backend's cheapest call against a
PyTorch op's, then per op each variant's call cost at the smallest size, its GPU
time there, and the size at which its GPU time overtakes the call cost.
"""

from __future__ import annotations

from kernelscope.results import dispatch
from kernelscope.site.data import BACKEND_TITLES, SiteData, fmt_time
from kernelscope.site.markdown import indent, table, tabs, variant_cell
from kernelscope.site.pages import stamp as stamp_line

NO_HOST = ("*(no host-mode results on `{machine}` yet: `asv run` on a GPU box times every variant's Python "
           "loop of calls as `track_host`)*")


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}x" if value >= 0.95 else f"{value:.2f}x"


def floor_table(floors: list[dispatch.Floor]) -> str:
    rows = [[BACKEND_TITLES.get(f.backend, f.backend), fmt_time(f.cheapest.call_s),
             f"{variant_cell(f.cheapest.variant)} at {f.cheapest.size}",
             _x(1 / f.over_baseline if f.over_baseline else None), str(f.variants)]
            for f in sorted(floors, key=lambda f: f.cheapest.call_s)]
    # a speedup, as everywhere on the site: PyTorch eager's floor / this one's, under 1 where a call costs more
    return table(["backend", "dispatch floor", "its cheapest call",
                  f"speedup vs {BACKEND_TITLES[dispatch.BASELINE]}", "variants"], rows, ["l", "r", "l", "r", "r"])


def op_table(costs: list[dispatch.CallCost]) -> str:
    rows = []
    for c in sorted(costs, key=lambda c: c.call_s):
        over = (f"{c.overtakes_at} (GPU {fmt_time(c.gpu_at_overtake_s)}, loop {fmt_time(c.host_at_overtake_s)})"
                if c.overtakes_at else "not up to the largest size")
        rows.append([variant_cell(c.variant), BACKEND_TITLES.get(c.backend, c.backend), fmt_time(c.call_s),
                     fmt_time(c.gpu_s), _x(c.host_over_gpu), over])
    return table(["variant", "backend", "call cost", "GPU time", "call / GPU", "GPU time overtakes the call at"],
                 rows, ["l", "l", "r", "r", "r", "l"])


def dispatch_section(data: SiteData, machine: str | None) -> str:
    """The floors, then a tab per op; every number from ``machine``'s newest host and warm results."""
    if machine is None:
        return NO_HOST.format(machine="any machine")
    host = data.snapshot(machine, mode="host")
    if not host:
        return NO_HOST.format(machine=machine)
    warm = [r for r in data.rows_at(machine, host.run.commit) if r["mode"] == "warm"]
    costs = dispatch.call_costs(host.rows + warm)
    if not costs:
        return NO_HOST.format(machine=machine)
    ops = list(dict.fromkeys(c.op for c in costs))
    never = [c for c in costs if not c.overtakes_at]
    per_op = ("Per op: each variant's call cost (host mode at the op's smallest size), the GPU time of the same call "
              "(warm mode), and the first size at which the GPU time reaches the call cost; from there on a loop of "
              "calls runs at the GPU's pace.")
    out = [stamp_line(host.run), floor_table(dispatch.floors(costs)),
           f"Of {len(costs)} variants, {len(costs) - len(never)} reach the GPU's pace by their op's largest size"
           + (f"; {len(never)} stay host-bound up to it: {', '.join(f'`{c.variant}`' for c in never)}." if never
              else "."),
           f'??? abstract "Per op: each variant\'s call cost against its GPU time ({len(costs)} variants)"\n\n'
           + indent(per_op + "\n\n" + tabs([(op, op_table([c for c in costs if c.op == op])) for op in ops]))]
    return "\n\n".join(out)
