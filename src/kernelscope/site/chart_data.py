"""The JSON files the charts read, built from :class:`~kernelscope.site.data.SiteData`.

Every number is computed here from stored results and the catalog's models;
values a tooltip shows are formatted once, here, the same way the tables
format them.
"""

from __future__ import annotations

from kernelscope import backends
from kernelscope.catalog import OPS, variants_of
from kernelscope.results import compare
from kernelscope.results.machine import fp32_peak
from kernelscope.site import charts
from kernelscope.site.notes import over_copy
from kernelscope.timing.processes import sampled_per_process
from kernelscope.site.data import (MODES, SiteData, ci_low_of, day, fmt_ci, fmt_gbps, fmt_pct, fmt_time, in_sweep, largest_shape,
                                   short_subject, variant_kind)


# a tooltip's percent over the copy: why a measured ceiling can be passed (notes.over_copy_note says it in full)
OVER_COPY_TIP = " (past the measured copy: reads partly from L2, or a box with a faster copy)"


def _timing_fields(r: dict) -> dict:
    """The fields every timing point carries, raw and formatted."""
    t, lo, hi = r["time_s"], ci_low_of(r), r.get("ci_high")  # no bandwidth bound from a bound below zero
    nbytes = r.get("bytes")
    return {
        "machine": r["machine"], "mode": r["mode"], "op": r["op"], "variant": r["variant"], "backend": r["backend"],
        "size": r["size"], "numel": r["numel"], "dtype": r["dtype"], "commit": r["commit"][:8],
        "time_us": t * 1e6 if t else None,
        "ci_low_us": lo * 1e6 if lo else None, "ci_high_us": hi * 1e6 if hi else None,
        "gbps": r.get("gbps"),
        "gbps_low": nbytes / hi / 1e9 if (nbytes and hi) else None,
        "gbps_high": nbytes / lo / 1e9 if (nbytes and lo) else None,
        "pct": r.get("pct_of_peak"), "copy_gbps": r.get("copy_gbps"), "samples": r.get("samples"),
        "time": fmt_time(t), "ci": fmt_ci(r), "gbps_text": fmt_gbps(r.get("gbps")),
        "pct_text": fmt_pct(r.get("pct_of_peak")) + (OVER_COPY_TIP if over_copy(r) else ""), "version": r.get("version"),
        "variant_kind": variant_kind(r["variant"]),
        "launch_bound": r.get("launch_bound", False), "interval_note": interval_note(r),
    }


def interval_note(r: dict) -> str:
    """Where a result's interval comes from: one process's samples, or one value from each of several processes."""
    n = r.get("samples")
    if not n:
        return ""
    if not r.get("launch_bound"):
        return f"{n} samples in one process"
    if sampled_per_process(n):
        return f"launch-bound: {n} processes, one value each"
    return f"launch-bound, but {n} samples in one process (before per-process sampling): too narrow"


def current_commits(data: SiteData) -> dict[tuple[str, str, str], str]:
    """(machine, op, mode) -> the commit its results pages show (the newest that measured it)."""
    return {(r["machine"], r["op"], r["mode"]): r["commit"] for r in data.current}


def op_points(data: SiteData, op: str) -> list[dict]:
    """Every timed result of ``op`` on every machine and commit; ``current`` marks the results pages' commit."""
    current = current_commits(data)
    order = {c: i for i, c in enumerate(data.order)}
    points = []
    for r in data.rows:
        if r["op"] != op or r["mode"] not in MODES or r["status"] != "measured":
            continue
        points.append({**_timing_fields(r),
                       "current": current.get((r["machine"], op, r["mode"])) == r["commit"],
                       "sweep": in_sweep(r["size"]), "order": order.get(r["commit"], -1),
                       "subject": f"{day(r.get('date'))}: {short_subject(data.subjects.get(r['commit'], ''))}",
                       "href": f"../commits/#{r['commit'][:8]}"})
    return points


def best_by_backend(rows: list[dict]) -> dict[str, dict]:
    """backend -> its fastest measured row among ``rows``."""
    best: dict[str, dict] = {}
    for r in rows:
        if r["status"] == "measured" and (r["backend"] not in best or r["time_s"] < best[r["backend"]]["time_s"]):
            best[r["backend"]] = r
    return best


def overview_best(data: SiteData, machine: str) -> list[dict]:
    """Op x backend at each op's largest size, warm: the best row, the best eager row, or why there is none."""
    cells = []
    for op in OPS:
        size = largest_shape(op)
        snap = data.snapshot(machine, op=op, mode="warm")
        best = best_by_backend([r for r in snap.rows if r["size"] == size and r["dtype"] == "float32"])
        for backend in backends.BACKENDS:
            has_variant = any(v.backend == backend for v in variants_of(op))
            why = "" if backend in best else "not measured at this size" if has_variant else "no variant in the catalog"
            cells.append({"op": op, "backend": backend, "size": size, "row": best.get(backend),
                          "eager": best.get("torch"), "why": why})
    return cells


def overview_cells(data: SiteData, machine: str) -> list[dict]:
    """The overview matrix's chart data."""
    cells = []
    for c in overview_best(data, machine):
        cell = {"machine": machine, "op": c["op"], "backend": c["backend"], "size": c["size"]}
        r, eager = c["row"], c["eager"]
        if r is None:
            cells.append({**cell, "variant": None, "pct": None, "label": "—", "why": c["why"]})
            continue
        speedup = eager["time_s"] / r["time_s"] if eager else None
        cells.append({**_timing_fields(r), **cell, "speedup": speedup,
                      "speedup_text": f"{speedup:.2f}x" if speedup else "—",
                      "label": f"{r['variant'].removeprefix(r['op'] + '-')}\n{fmt_pct(r['pct_of_peak'])}", "why": ""})
    return cells


def roofline_points(data: SiteData, machine: str) -> list[dict]:
    """Every variant at its op's largest size (warm), and the two roofs of ``machine``."""
    points = []
    for op in OPS:
        size = largest_shape(op)
        for r in data.snapshot(machine, op=op, mode="warm").rows:
            if r["size"] != size or r["status"] != "measured" or r["dtype"] != "float32":
                continue
            intensity = r["flops"] / r["bytes"]
            roof = roof_at(r.get("copy_gbps"), fp32_peak(data.run(machine, r["commit"]).params), intensity)
            points.append({**_timing_fields(r), "kind": "point", "intensity": intensity, "gflops": r["gflops"],
                           "intensity_text": f"{intensity:.3g} FLOP/B", "gflops_text": f"{r['gflops']:,.0f} GFLOP/s",
                           "pct_of_roof_text": fmt_pct(100 * r["gflops"] / roof) if roof else "—"})
    run = data.latest_run(machine)
    return points + roof_lines(machine, run.copy_gbps if run else None, fp32_peak(run.params) if run else None)


def roof_at(copy_gbps: float | None, peak: tuple[float, str] | None, intensity: float) -> float | None:
    """The attainable GFLOP/s at ``intensity``: min(bandwidth x intensity, compute peak)."""
    if not copy_gbps:
        return None
    memory = copy_gbps * intensity
    return min(memory, peak[0] * 1e3) if peak else memory


def roof_lines(machine: str, copy_gbps: float | None, peak: tuple[float, str] | None) -> list[dict]:
    if not copy_gbps:
        return []
    lo, hi = charts.INTENSITY_RANGE
    rows = []
    memory_text = f"measured copy bandwidth {copy_gbps:,.0f} GB/s"
    if peak:
        tflops, how = peak
        ridge = tflops * 1e3 / copy_gbps
        compute_text = f"FP32 peak {tflops:.1f} TFLOP/s ({how})"
        rows += [{"machine": machine, "kind": "roof", "roof": "memory", "intensity": lo, "gflops": copy_gbps * lo,
                  "roof_text": memory_text},
                 {"machine": machine, "kind": "roof", "roof": "memory", "intensity": ridge, "gflops": tflops * 1e3,
                  "roof_text": memory_text},
                 {"machine": machine, "kind": "roof", "roof": "compute", "intensity": ridge, "gflops": tflops * 1e3,
                  "roof_text": compute_text},
                 {"machine": machine, "kind": "roof", "roof": "compute", "intensity": hi, "gflops": tflops * 1e3,
                  "roof_text": compute_text},
                 {"machine": machine, "kind": "roof_label", "roof": "compute", "intensity": hi, "gflops": tflops * 1e3,
                  "roof_text": compute_text}]
    else:
        rows += [{"machine": machine, "kind": "roof", "roof": "memory", "intensity": x, "gflops": copy_gbps * x,
                  "roof_text": memory_text} for x in (lo, hi)]
    rows.append({"machine": machine, "kind": "roof_label", "roof": "memory", "intensity": lo * 1.5,
                 "gflops": copy_gbps * lo * 1.5, "roof_text": memory_text})
    return rows


def machine_pair_rows(data: SiteData, machine_a: str, machine_b: str) -> list[dict]:
    """Per benchmark on both machines (each at its current commit): speedup beside the bandwidth ratio."""
    rows = [r for r in data.current if r["status"] == "measured" and r["mode"] in MODES]
    out = []
    for p in compare.machine_ratios(rows, machine_a, machine_b):
        ratio = p["bandwidth_ratio"]
        out.append({**p, "time_a_text": fmt_time(p["time_a"]), "time_b_text": fmt_time(p["time_b"]),
                    "speedup_text": f"{p['speedup']:.2f}x",
                    "bandwidth_ratio_text": f"{ratio:.2f}x" if ratio else "—"})
    return out
