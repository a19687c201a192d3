"""From a result file: track_graph's samples at each op's largest size, float32, per variant:
median, fastest, slowest (us per call) and how many samples read over 3% above the fastest.

    python3 results-proofs/graph-mode-large/graph_samples.py results/nvidia-h100-80gb-hbm3/<commit>-*.json
"""

import itertools
import json
import statistics
import sys

LARGEST = ("'16384x16384'", "'268435456'", "'64x262144'")
data = json.load(open(sys.argv[1]))
col = {c: i for i, c in enumerate(data["result_columns"])}
print(f"{data['commit_hash'][:8]}: {'benchmark':28} {'variant':26} {'size':15} {'median':>8} {'min':>8} {'max':>8}  slow")
total = slow_total = 0
for name, res in sorted(data["results"].items()):
    if not name.endswith("track_graph") or res[col["samples"]] is None:
        continue
    for params, samples in zip(itertools.product(*res[col["params"]]), res[col["samples"]]):
        if len(params) < 2 or params[1] not in LARGEST or not samples:
            continue
        lo, slow = min(samples), sum(s > 1.03 * min(samples) for s in samples)
        total, slow_total = total + len(samples), slow_total + slow
        print(f"{name.removeprefix('benchmarks.'):38} {params[0]:26} {params[1]:15} {statistics.median(samples) * 1e6:8.1f} "
              f"{lo * 1e6:8.1f} {max(samples) * 1e6:8.1f}  {slow} of {len(samples)}")
print(f"all: {slow_total} of {total} samples over 3% above their case's fastest")
