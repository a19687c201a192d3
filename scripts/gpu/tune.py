"""Shared pieces of the tuning scripts (scripts/gpu/tune_*.py): the suite's warm clock, a table.

A tuning script sweeps one kernel's launch shapes or code versions on the GPU
box and prints, per configuration, the warm-mode time and its share of the
measured copy bandwidth, the same figures the asv suite stores. The bytes are
the op's own (kernelscope.ops): each input read once, each output written once.

    from tune import Table
    table = Table("softmax-cuda", copy_gbps=None)        # None: measure a 1 GiB copy first
    table.add("rows=1 threads=256", fn, x, bytes_moved)   # fn() is one call, checked by the caller
    table.print()

Every script takes --json FILE (one record per row) so the notes file can be
regenerated from what the GPU printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import torch  # noqa: E402

from kernelscope.timing import HeldClock, copy_bandwidth, plan_warm  # noqa: E402


def warm_seconds(fn, samples: int = 15) -> tuple[float, float]:
    """Median and spread (max/min - 1) of warm samples: calls back to back behind a held stream."""
    plan = plan_warm(fn, "cuda")
    clock = HeldClock(plan.hold_s)
    times = sorted(clock.sample(fn, plan.number) / plan.number for _ in range(samples))
    return statistics.median(times), times[-1] / times[0] - 1


def graph_seconds(fn, calls: int = 100, samples: int = 15) -> float:
    """Median seconds per call of ``calls`` calls replayed as one CUDA graph."""
    from kernelscope.timing import capture_graph, time_graph

    graph, _ = capture_graph(fn, calls)
    return statistics.median(time_graph(graph, calls, samples))


def args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", help="write the rows as JSON records to this file")
    parser.add_argument("--quick", action="store_true", help="fewer configurations (a smoke test)")
    return parser.parse_args()


class Table:
    def __init__(self, title: str, copy_gbps: float | None = None):
        self.title = title
        self.copy_gbps = copy_gbps or copy_bandwidth() / 1e9
        self.rows: list[dict] = []
        print(f"== {title} (copy bandwidth {self.copy_gbps:.0f} GB/s, {torch.cuda.get_device_name()})", flush=True)

    def add(self, label: str, fn, nbytes: int, shape: str = "", dtype: str = "float32", graph: bool = False) -> dict:
        fn()
        torch.cuda.synchronize()
        seconds, spread = warm_seconds(fn)
        row = {"title": self.title, "config": label, "shape": shape, "dtype": dtype, "time_us": seconds * 1e6,
               "spread": spread, "gbps": nbytes / seconds / 1e9, "pct_copy": 100 * nbytes / seconds / 1e9 / self.copy_gbps}
        if graph:
            row["graph_us"] = graph_seconds(fn) * 1e6
        self.rows.append(row)
        extra = f"  graph {row['graph_us']:8.2f} us" if graph else ""
        print(f"{shape:>14} {dtype:>8} {label:<40} {row['time_us']:10.2f} us {row['gbps']:8.0f} GB/s "
              f"{row['pct_copy']:6.1f}%{extra}", flush=True)
        return row

    def dump(self, path: str | None) -> None:
        if path:
            old = json.loads(Path(path).read_text()) if Path(path).exists() else []
            Path(path).write_text(json.dumps(old + self.rows, indent=1))
