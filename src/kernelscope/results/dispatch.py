"""What a call costs from Python against what it costs the GPU, per variant and backend.

Two stored results answer it, both from the same run: host mode (a Python loop
of calls, one synchronize a sample: per call, the larger of the host's cost of
a call and the GPU's) and warm mode (the GPU's time per call, the host hidden).
At an op's smallest benchmark size the GPU work is a few microseconds, so host
mode there reads the host's cost of a call: the variant's **call cost**. A
backend's **dispatch floor** is the cheapest call cost among its variants; a
variant's GPU time **overtakes** its call cost at the first benchmark size
where warm mode reads at least the call cost. Below that size a Python loop of
calls runs at the host's pace, above it at the GPU's.

Pure functions of export rows (:func:`kernelscope.results.export.rows`), so the
site and tests read the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelscope.catalog import OPS, VARIANTS
from kernelscope.ops import numel, shape_str

BASELINE = "torch"  # the backend every floor is compared with: a PyTorch op's own dispatch


@dataclass(frozen=True)
class CallCost:
    variant: str
    backend: str
    op: str
    size: str  # the op's smallest benchmark size, where host mode reads the call cost
    call_s: float  # host mode at that size
    gpu_s: float | None  # warm mode at that size
    overtakes_at: str | None  # the first size whose warm time is call_s or more (None: not up to the largest)
    gpu_at_overtake_s: float | None  # warm mode there
    host_at_overtake_s: float | None  # host mode there

    @property
    def host_over_gpu(self) -> float | None:
        """How many times the GPU work a call costs at the smallest size."""
        return self.call_s / self.gpu_s if self.gpu_s else None


def _sizes(op: str) -> list[str]:
    return [shape_str(s) for s in sorted(OPS[op].bench_shapes, key=numel)]


def call_costs(rows: list[dict], dtype: str = "float32") -> list[CallCost]:
    """One per variant with a host-mode result at its op's smallest size, in catalog order.

    ``rows``: measured export rows of one machine and run (a site snapshot of
    host mode plus one of warm mode).
    """
    by = {(r["variant"], r["mode"], r["size"]): r["time_s"] for r in rows
          if r.get("status", "measured") == "measured" and r["dtype"] == dtype and r.get("time_s")}
    out = []
    for name, v in VARIANTS.items():
        sizes = _sizes(v.op)
        call = by.get((name, "host", sizes[0]))
        if call is None:
            continue
        over = next((s for s in sizes if (by.get((name, "warm", s)) or 0) >= call), None)
        out.append(CallCost(name, v.backend, v.op, sizes[0], call, by.get((name, "warm", sizes[0])), over,
                            by.get((name, "warm", over)) if over else None,
                            by.get((name, "host", over)) if over else None))
    return out


@dataclass(frozen=True)
class Floor:
    backend: str
    cheapest: CallCost  # the backend's variant with the lowest call cost
    over_baseline: float | None  # its call cost over the baseline backend's floor
    variants: int  # how many of the backend's variants have a call cost


def floors(costs: list[CallCost]) -> list[Floor]:
    """Each backend's dispatch floor, in the order backends first appear in the catalog."""
    by_backend: dict[str, list[CallCost]] = {}
    for c in costs:
        by_backend.setdefault(c.backend, []).append(c)
    base = min((c.call_s for c in by_backend.get(BASELINE, [])), default=None)
    return [Floor(b, min(cs, key=lambda c: c.call_s), (min(c.call_s for c in cs) / base) if base else None, len(cs))
            for b, cs in by_backend.items()]
