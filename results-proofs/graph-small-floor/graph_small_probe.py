"""Graph mode at the smallest size, the suite's way, for every tuned variant beside an empty kernel.

The target: every tuned variant within 1.3x of an empty kernel's graph
node at 64x64 (mean: 4096 elements). At that size a replay is almost all launch
and a kernel's fixed cost, so the launch shape decides: how many SMs share the
few bytes, and how many trips to L2 a kernel makes in a row (a reduction's
fence, ticket and read-back). This probe times, in one process:

* ``torch.cuda._sleep(0)`` replayed (asv's ``Launch.track_graph``): the floor;
* the memory floors: nodes that touch memory and compute nothing, at 64x64
  float32 (torch's ``copy_`` of 16 KiB, a ``fill_`` that only writes) and for a
  single element (one read and one write: one trip to memory and back). What a
  kernel that reads its input and writes its output cannot beat in a graph;
* each tuned variant, and each op's torch variant, at its op's smallest size in
  float32: the suite's own case (``timing.cases.prepare``, checked against the
  float64 reference), captured with ``asv_suite.graph_calls`` calls and replayed
  by ``timing.time_graph``, as ``track_graph`` does.

Each row gives the median per call and its ratio to the floor.

Usage (GPU box): python3 results-proofs/graph-small-floor/graph_small_probe.py [--json FILE]    (about a minute on an H100)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import torch  # noqa: E402

from kernelscope.catalog import OPS, VARIANTS  # noqa: E402
from kernelscope.ops import shape_str  # noqa: E402
from kernelscope.timing import capture_graph, plan_warm, time_graph  # noqa: E402
from kernelscope.asv.suite import GRAPH_SAMPLES, graph_calls  # noqa: E402
from kernelscope.timing.cases import prepare  # noqa: E402

TARGET = 1.3  # a tuned variant's graph node within this of the empty kernel's


def smallest_size(op: str) -> str:
    return shape_str(min(OPS[op].bench_shapes, key=lambda shape: torch.Size(shape).numel()))


def graph_us(fn, calls: int) -> float:
    graph, _ = capture_graph(fn, calls)
    return statistics.median(time_graph(graph, calls, GRAPH_SAMPLES)) * 1e6


def memory_floors() -> list[tuple[str, str, object]]:
    """(name, size, call) of nodes that move memory and compute nothing, on random inputs."""
    src, dst = torch.rand(64, 64, device="cuda"), torch.empty(64, 64, device="cuda")
    one, one_out = torch.rand(1, device="cuda"), torch.empty(1, device="cuda")
    return [("copy_ (torch)", "64x64", lambda: dst.copy_(src)),
            ("fill_ (torch)", "64x64", lambda: dst.fill_(1.5)),
            ("copy_ of one element", "1", lambda: one_out.copy_(one))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows as JSON records to this file")
    opts = parser.parse_args()
    if not torch.cuda.is_available():
        print("graph_small_probe.py measures a GPU: none here", file=sys.stderr)
        return 2
    floor = graph_us(lambda: torch.cuda._sleep(0), 100)
    rows = [{"variant": "empty kernel", "size": "", "graph_us": floor, "ratio": 1.0}]
    print(f"== graph mode at the smallest size ({torch.cuda.get_device_name()}); empty kernel {floor:.3f} us")
    floors = {}
    for name, size, fn in memory_floors():
        t = floors[name] = graph_us(fn, 100)
        print(f"{name:28s} {size:>10s} {t:8.3f} us  {t / floor:5.2f}x  (a memory floor)")
        rows.append({"variant": name, "size": size, "graph_us": t, "ratio": t / floor, "floor": True})
    copy_floor = floors["copy_ (torch)"]
    print(f"-- each variant: its node, / the empty kernel's (target {TARGET}x), / torch's 64x64 copy_")
    names = [v.name for v in VARIANTS.values() if v.tuned or v.name == f"{v.op}-torch"]
    for name in names:
        v = VARIANTS[name]
        size = smallest_size(v.op)
        try:
            case = prepare(v.op, name, size, "float32")
            calls = graph_calls(plan_warm(case.call, case.device).per_call_s)
            t = graph_us(case.call, calls)
        except Exception as exc:  # one variant's failure is its row; the others go on
            print(f"{name:28s} {size:>10s}  failed: {type(exc).__name__}: {exc}")
            rows.append({"variant": name, "size": size, "error": f"{type(exc).__name__}: {exc}"})
            continue
        ratio = t / floor
        mark = "" if not v.tuned else ("  met" if ratio <= TARGET else "  MISS")
        print(f"{name:28s} {size:>10s} {t:8.3f} us  {ratio:5.2f}x  {t / copy_floor:5.2f}x copy_{mark}")
        rows.append({"variant": name, "size": size, "graph_us": t, "ratio": ratio, "calls": calls,
                     "tuned": v.tuned, "ratio_to_copy": t / copy_floor})
    if opts.json:
        Path(opts.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
