"""Launch plans on the site: which kernel, grid and block a tuned variant's call takes at each benchmark size.

Computed from the variants' own plan functions (``kernelscope.plan``) on the GPU presets, so a page shows the
plans without a GPU or results; the table is what ``kernelscope plan --gpu h100`` / ``--gpu h200`` print.
"""

from __future__ import annotations

from kernelscope.catalog import Variant, variants_of
from kernelscope.site.markdown import indent, table

GPUS = ("h100", "h200")


def _cell(p) -> str:
    parts = []
    for launch in p.plan.launches:
        if launch.grid is None:
            grid = f"≤ {launch.most}"
        else:
            grid = " × ".join(map(str, launch.grid))
            grid = f"({grid})" if len(launch.grid) > 1 else grid
        cluster = f", clusters of {launch.cluster}" if launch.cluster > 1 else ""
        count = f", {launch.count} launches" if launch.count > 1 else ""
        persistent = " (persistent)" if launch.grid is None else ""
        parts.append(f"`{launch.kernel}` {grid} × {launch.block}{persistent}{cluster}{count}")
    return (f"{p.plan.strategy}: " if p.plan.strategy else "") + "; ".join(parts)


def plan_table(variants: list[Variant], gpus: tuple[str, ...] = GPUS, dtype: str = "float32") -> str:
    """For a page of prose: a line saying where the GPUs' plans differ, then the table (:func:`_table`) folded."""
    text, differ = _table(variants, gpus, dtype)
    n = sum(len(v.op_spec.bench_shapes) for v in variants)
    where = ", ".join(f"`{name}` at {k} size{'' if k == 1 else 's'}" for name, k in differ.items())
    gpu_names = " and ".join(g.upper() for g in gpus)
    lead = (f"{len(variants)} variants at their benchmark sizes, {n} calls: the {gpu_names} plans differ for "
            f"{where}." if differ and len(gpus) > 1 else
            f"{len(variants)} variants at their benchmark sizes, {n} calls"
            + (f": the {gpu_names} plans are the same for every one." if len(gpus) > 1 else "."))
    names = ", ".join(f"`{v.name}`" for v in variants)
    return lead + f'\n\n??? abstract "Every call\'s plan: {names} ({n} rows)"\n\n' + indent(text)


def _table(variants: list[Variant], gpus: tuple[str, ...] = GPUS, dtype: str = "float32") -> tuple[str, dict]:
    """A row a variant and benchmark size, one plan column: the strategy, kernel, grid x block and cluster of the
    call's launches, a line a GPU only where the GPUs' plans differ (so the table fits the page); and, per variant,
    how many of its sizes the GPUs' plans differ at."""
    from kernelscope.plan import PRESETS, plan_of

    for gpu in gpus:
        if gpu not in PRESETS:
            raise KeyError(f"unknown GPU preset {gpu!r} (presets: {', '.join(PRESETS)})")
    rows, differ = [], {}
    for v in variants:
        for shape in v.op_spec.bench_shapes:
            cells = [_cell(plan_of(v, shape, dtype, gpu)) for gpu in gpus]
            plan = cells[0] if len(set(cells)) == 1 else "<br>".join(
                f"**{g.upper()}** {c}" for g, c in zip(gpus, cells))
            if len(set(cells)) > 1:
                differ[v.name] = differ.get(v.name, 0) + 1
            rows.append([f"`{v.name}`", "x".join(map(str, shape)), plan])
    names = "; ".join(f"{g.upper()}: {PRESETS[g].name}, {PRESETS[g].summary()}" for g in gpus)
    return (table(["variant", "size", f"plan on {' and '.join(g.upper() for g in gpus)}"], rows, ["l", "l", "l"])
            + f"\n\n<p class=\"ks-stamp\">From <code>kernelscope plan --gpu {' / '.join(gpus)}</code>, {dtype}: "
              "grid × threads a block; a persistent grid as the most blocks it takes; a line a GPU where their "
              f"plans differ. {names}.</p>", differ)


def op_section(op: str) -> str:
    """An op page's launch plans: its tuned variants' tables, one folded block each, or nothing where none plans."""
    planned = [v for v in variants_of(op) if v.plan is not None and v.tuned]
    if not planned:
        return ""
    out = ["## Launch plans\n",
           "The kernel and launch shape each tuned variant's call takes at every benchmark size, on the H100 and "
           "the H200: the numbers above are these launches. `kernelscope plan VARIANT SIZE` prints one call's plan "
           "on this machine's GPU; [which launch a call takes](../concepts/kernels-into-pytorch.md"
           "#which-launch-a-call-takes) explains the strategies.\n"]
    for v in planned:
        out.append(f"??? info \"`{v.name}`: {v.teaches}\"\n\n" + indent(_table([v])[0]))
    return "\n\n".join(out)

